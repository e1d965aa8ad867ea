// File helpers shared by the readers and writers of sim/ (internal to the library).
//
//   std::string text = read_text_file("g.json");        // InputError if unreadable
//   write_file_atomic("out.json", text);               // temp file + rename: never half a file
//   std::string shown = printable(untrusted);          // one line, control bytes escaped
#pragma once

#include <string>
#include <string_view>

namespace placesim::sim {

/// Whole file as bytes. Throws InputError(path, "", "a readable file ...").
std::string read_text_file(const std::string& path);
/// Writes to "<path>.tmp.<pid>" then renames over `path`, so readers never see a partial file.
/// Throws InputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);
/// At most `max_len` characters of `s`, with control and non-ASCII bytes escaped as \xNN so an
/// error message stays on one line.
std::string printable(std::string_view s, std::size_t max_len = 60);
/// "line L:C" of the 1-based byte offset `byte` in `text` (nlohmann's parse_error::byte).
std::string line_col(const std::string& text, std::size_t byte);

}  // namespace placesim::sim

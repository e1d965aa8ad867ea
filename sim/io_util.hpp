// File helpers shared by the readers and writers of sim/ (internal to the library).
//
//   std::string text = read_text_file("g.json");        // InputError if unreadable
//   write_file_atomic("out.json", text);               // temp file + rename: never half a file
//   std::string shown = printable(untrusted);          // one line, control bytes escaped
//   for (const auto& dir : checkout_paths(compiled_in, "scenarios/clusters", 2)) ...
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace placesim::sim {

/// Whole file as bytes. Throws InputError(path, "", "a readable file ...").
std::string read_text_file(const std::string& path);
/// Writes to "<path>.tmp.<pid>" then renames over `path`, so readers never see a partial file.
/// Throws InputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);
/// Removes "<path>.tmp.<pid>" files left by writers that were killed (SIGKILL) between writing
/// and renaming: those whose process no longer exists.
void remove_stale_temp_files(const std::string& path);
/// Throws InputError(origin, "line L:C", ...) when JSON `text` nests arrays and objects deeper
/// than `max_depth` (strings skipped): recursive walks of a parsed document (dump(), destructors)
/// would otherwise run off the stack on a few megabytes of brackets.
void check_json_nesting(const std::string& text, const std::string& origin, int max_depth = 256);
/// At most `max_len` characters of `s`, with control and non-ASCII bytes escaped as \xNN so an
/// error message stays on one line.
std::string printable(std::string_view s, std::size_t max_len = 60);
/// "line L:C" of the 1-based byte offset `byte` in `text` (nlohmann's parse_error::byte).
std::string line_col(const std::string& text, std::size_t byte);
/// Where a file or folder of the checkout (built-in scenarios, the shipped policy) may be, in
/// search order: `compiled_in` (its absolute path in the checkout that was built, compiled into
/// the caller; skipped when empty), then `relative` in the running binary's folder and in up to
/// `levels_up` folders above it (every folder up to the root, excluded, when negative), then
/// `relative` itself (under the working directory). Installed or moved binaries find their data
/// this way.
std::vector<std::filesystem::path> checkout_paths(const std::string& compiled_in,
                                                  const std::filesystem::path& relative,
                                                  int levels_up = -1);

}  // namespace placesim::sim

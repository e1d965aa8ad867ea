#include "sim/io_util.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "sim/error.hpp"

namespace placesim::sim {

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path, "", "a file, got a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "a readable file (it does not exist or cannot be opened)");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "a readable file (read failed)");
  return ss.str();
}

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "a writable output path");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw InputError(path, "", "a writable output path (write failed)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path, "", "a writable output path (" + ec.message() + ")");
  }
}

std::string printable(std::string_view s, std::size_t max_len) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x20 || u >= 0x7f) {
      std::array<char, 8> buf{};
      std::snprintf(buf.data(), buf.size(), "\\x%02x", u);
      out += buf.data();
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string line_col(const std::string& text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ":" + std::to_string(col);
}

}  // namespace placesim::sim

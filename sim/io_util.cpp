#include "sim/io_util.hpp"

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <signal.h>
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

void remove_stale_temp_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp.";
  if (p.filename().empty()) return;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const long pid = std::stol(pid_text);
    // A writer still running (this process, or a live one) owns its temp file; only a killed
    // writer's leftover (kill -9 between write and rename) is removed.
    if (pid == ::getpid() || pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;
    std::error_code rm;
    fs::remove(it->path(), rm);
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  remove_stale_temp_files(path);
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

void check_json_nesting(const std::string& text, const std::string& origin, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw InputError(origin, line_col(text, i + 1),
                         "JSON nested at most " + std::to_string(max_depth) + " levels deep");
    } else if (c == ']' || c == '}') {
      --depth;
    }
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

std::vector<std::filesystem::path> checkout_paths(const std::string& compiled_in,
                                                  const std::filesystem::path& relative,
                                                  int levels_up) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  if (!compiled_in.empty()) out.emplace_back(compiled_in);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path dir = exe.parent_path();
    for (int up = 0; levels_up < 0 ? !dir.empty() && dir != dir.root_path() : up <= levels_up;
         ++up, dir = dir.parent_path())
      out.push_back(dir / relative);
  }
  out.push_back(relative);
  return out;
}

}  // namespace placesim::sim

#include "tests/common/files.hpp"

#include <fstream>
#include <sstream>
#include <vector>

namespace placesim::test {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::map<std::string, std::string>> csv_rows(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> head;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ',')) fields.push_back(f);
    if (head.empty()) {
      head = std::move(fields);
      continue;
    }
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (std::size_t i = 0; i < head.size() && i < fields.size(); ++i) row[head[i]] = fields[i];
  }
  return rows;
}

}  // namespace placesim::test

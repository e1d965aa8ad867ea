#include "tests/common/files.hpp"

#include <fstream>
#include <sstream>

namespace placesim::test {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace placesim::test

// Small text helpers shared by the calibration readers (internal to the library).
//
//   for (const std::string& tok : split_ws("  0  1.2  3 ")) ...   // {"0", "1.2", "3"}
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace placesim::calibration {

/// The whitespace-separated tokens of `s`.
inline std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

}  // namespace placesim::calibration

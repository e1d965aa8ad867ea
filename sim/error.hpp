// Bad input is reported with a typed exception whose message is one line naming the file, the
// line or key path, and what was expected:
//
//   throw InputError("clusters/x.yaml", "links[3].bandwidth", "a positive bandwidth such as \"12 GB/s\", got \"0 GB/s\"");
//   // what(): clusters/x.yaml: links[3].bandwidth: expected a positive bandwidth such as ...
//
// The CLI catches InputError, prints what() and exits with status 2. Expected simulation
// outcomes (OOM, unreachable device) are values in the Outcome, never exceptions. Bugs are
// asserts. Library code never calls exit().
#pragma once

#include <stdexcept>
#include <string>

namespace placesim::sim {

class InputError : public std::runtime_error {
 public:
  /// `where` is a file path (or "<flag --x>"), `key` a key path ("devices[2].memory") or
  /// "line 12"; `expected` says what was expected and, ideally, what was found.
  InputError(const std::string& where, const std::string& key, const std::string& expected)
      : std::runtime_error(compose(where, key, expected)) {}
  explicit InputError(const std::string& message) : std::runtime_error(message) {}

 private:
  static std::string compose(const std::string& where, const std::string& key,
                             const std::string& expected) {
    std::string s = where;
    if (!key.empty()) s += ": " + key;
    s += ": expected " + expected;
    return s;
  }
};

}  // namespace placesim::sim

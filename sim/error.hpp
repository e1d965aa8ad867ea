// Bad input is reported with a typed exception whose message is one line naming the file, the
// line or key path, and what was expected:
//
//   throw InputError("clusters/x.yaml", "links[3].bandwidth", "a positive bandwidth such as \"12
//   GB/s\", got \"0 GB/s\"");
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
  explicit InputError(const std::string& message) : std::runtime_error(one_line(message)) {}

  /// The longest message kept whole; a longer one (a 50 kB value echoed back) keeps its head and
  /// tail, where the file, the key and the "got ..." part are.
  static constexpr std::size_t kMaxMessage = 1200;

  /// `s` on one line (control bytes, CR and LF escaped as \xNN) and at most about kMaxMessage
  /// characters, so that untrusted text quoted in a message can neither split nor flood it.
  static std::string one_line(const std::string& s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() < kMaxMessage ? s.size() : kMaxMessage);
    for (const char ch : s) {
      const auto u = static_cast<unsigned char>(ch);
      if (u < 0x20 || u == 0x7f) {
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 15];
      } else {
        out += ch;
      }
    }
    if (out.size() > kMaxMessage) {
      const std::size_t head = kMaxMessage * 2 / 3, tail = kMaxMessage / 4;
      out = out.substr(0, head) + " [... " + std::to_string(out.size() - head - tail) +
            " characters ...] " + out.substr(out.size() - tail);
    }
    return out;
  }

 private:
  // The file and the key are cut to 300 characters each first, so that ": expected" always
  // stays in the kept head of a long message (a key of escaped control bytes once pushed it into
  // the cut).
  static std::string clip(const std::string& s) {
    std::string t = one_line(s);
    return t.size() > 300 ? t.substr(0, 300) + "..." : t;
  }
  static std::string compose(const std::string& where, const std::string& key,
                             const std::string& expected) {
    std::string s = clip(where);
    if (!key.empty()) s += ": " + clip(key);
    s += ": expected " + expected;
    return one_line(s);
  }
};

}  // namespace placesim::sim

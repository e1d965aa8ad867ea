// The hand-over from the LibTorch-free `placesim` to `placesim-torch` (tools/CMakeLists.txt).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "policy/place/learned.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

void exec_torch_build() {
  if (policy::learned_methods() != nullptr) return;  // this binary has the RL library itself
  // This process's own path and arguments, from /proc: nothing is kept from main().
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return;
  const std::filesystem::path full = self.parent_path() / "placesim-torch";
  if (access(full.c_str(), X_OK) != 0) return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> args;
  for (std::size_t at = 0; at < cmdline.size();) {
    const std::size_t end = cmdline.find('\0', at);
    args.push_back(cmdline.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (args.empty()) return;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(full.c_str(), argv.data());
  // execv returned: it failed, and the caller goes on with this build's own answer.
}

}  // namespace placesim::tools

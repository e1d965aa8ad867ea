// ONNX import of torchvision models this project does not commit: exported here with Debian's
// /usr/bin/python3 (python3-torchvision) by tests/data/onnx/generate.py, which also prints
// torchvision's own parameter count to compare with. Skipped where that interpreter or
// torchvision is missing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include "models/grouping.hpp"
#include "models/onnx_import.hpp"

namespace placesim::models {
namespace {

bool have_torchvision() {
  return std::filesystem::exists("/usr/bin/python3") &&
         std::system("/usr/bin/python3 -c 'import torchvision, onnx' >/dev/null 2>&1") == 0;
}

// Exports every model in one interpreter run (importing torch dominates); returns each model's
// torchvision parameter count.
std::map<std::string, std::int64_t> export_models(const std::vector<std::string>& models,
                                                  const std::string& dir) {
  std::string cmd = "/usr/bin/python3 " PLACESIM_TEST_DATA "/onnx/generate.py";
  for (const auto& m : models) cmd += " " + m + " " + dir + "placesim_" + m + ".onnx";
  std::map<std::string, std::int64_t> params;
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return params;
  char line[256] = {0};
  while (std::fgets(line, sizeof line, p) != nullptr) {
    const std::string s = line;
    const auto sp = s.find(' ');
    if (sp != std::string::npos) params[s.substr(0, sp)] = std::stoll(s.substr(sp + 1));
  }
  pclose(p);
  return params;
}

TEST(OnnxTorchvision, UnlistedModelsMatchTorchvisionParameterCounts) {
  if (!have_torchvision())
    GTEST_SKIP() << "/usr/bin/python3 with torchvision and onnx not available";
  // A folder of this process's own: two suites running at once (Release and sanitizer builds)
  // must not read each other's half-written exports.
  const std::string dir =
      ::testing::TempDir() + "placesim_onnx_tv_" + std::to_string(::getpid()) + "/";
  std::filesystem::create_directories(dir);
  const std::vector<std::string> models = {"googlenet", "shufflenet_v2_x1_0", "mnasnet1_0"};
  const auto want = export_models(models, dir);
  for (const auto& model : models) {
    SCOPED_TRACE(model);
    ASSERT_TRUE(want.contains(model)) << "export failed";
    const std::string path = dir + "placesim_" + model + ".onnx";
    const sim::Graph g = import_onnx(path, {.training = true});
    EXPECT_EQ(g.metadata.at("parameters"), std::to_string(want.at(model)));
    EXPECT_EQ(g.metadata.count("unknown_ops"), 0u);
    const Grouping gr = group_graph(g, 256);
    EXPECT_LE(gr.size(), 256);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace placesim::models

// Closing the loop on this machine's CPU (issue 15): tools/profile_rig.py measures
// microbenchmarks (a GEMM shape grid, a streaming sweep across the caches, the host side of the
// model's steps at a second batch size) and LeNet-5 training steps with Debian's torch;
// tools/cpu_closed_loop.py calibrates from them (`placesim calibrate`: cache-aware class curves,
// the shape-aware GEMM model, the CPU host model), imports the ONNX graph at the profiled batch,
// simulates it and compares with the measured median step in CPU time (wall-clock times on this
// shared 2-core machine run 2-7x the CPU time under load).
//
// Measured ratios predicted / measured (docs/validation.md, "A physical CPU model"): LeNet-5
// 0.55-0.62 at load 7-11, where the wall time of the profiled ops runs 3-7x their CPU time. The
// bound [0.35, 1.6] leaves a factor 1.6 below the lowest; it fails on a lost op class, a unit
// slip or a host side counted in wall time (x3-7). The calibration must also carry what the loop
// depends on: the memory levels, the CPU host model and the shape-aware GEMM terms.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

}  // namespace

TEST(CpuClosedLoop, LeNet5PredictedFromMicrobenchmarksAndAnotherBatch) {
  if (std::system("/usr/bin/python3 -c 'import torch, onnx' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no python3-torch";
  const std::string src = PLACESIM_SOURCE_DIR, bin = PLACESIM_BINARY;
  const auto dir =
      std::filesystem::temp_directory_path() / ("placesim_rig_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  ASSERT_EQ(
      std::system(("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 " + src +
                   "/tools/profile_rig.py --out " + d +
                   " --quick --steps 5 --batch 32 --host-batch 16 --threads 1 --model lenet5 >" +
                   d + "/rig.log 2>&1")
                      .c_str()),
      0)
      << run("tail -20 " + d + "/rig.log");
  ASSERT_EQ(
      std::system(("/usr/bin/python3 " + src + "/tools/cpu_closed_loop.py --rig " + d +
                   " --placesim " + bin + " --json " + d + "/loop.json >" + d + "/loop.log 2>&1")
                      .c_str()),
      0)
      << run("tail -30 " + d + "/loop.log");
  std::ifstream lf(d + "/loop.json");
  const nlohmann::json loop = nlohmann::json::parse(lf);
  std::ifstream cf(d + "/cal.yaml");
  const std::string cal((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());
  std::cout << run("cat " + d + "/loop.log");
  std::filesystem::remove_all(dir);
  EXPECT_NE(cal.find("    memory:\n      - {name: \"L2\""), std::string::npos)
      << cal.substr(0, 800);
  EXPECT_NE(cal.find("      cpu: true\n"), std::string::npos) << cal.substr(0, 800);
  EXPECT_NE(cal.find("per_matrix:"), std::string::npos);  // bmm's per-matrix BLAS call
  const double ratio = loop["ratio"].get<double>();
  EXPECT_GT(loop["predicted_s"].get<double>(), 0.0);
  EXPECT_LT(ratio, 1.6);
  EXPECT_GT(ratio, 0.35);
}

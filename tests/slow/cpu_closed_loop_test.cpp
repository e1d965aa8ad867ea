// Closing the loop on this machine's CPU (issue 7, item 6): tools/profile_rig.py measures
// microbenchmarks and LeNet-5 training steps with Debian's torch, `placesim calibrate` fits the CPU
// from the microbenchmarks only, `placesim import onnx` + `simulate --calibration` predict the
// step, and the prediction is compared with the measured median step in CPU time (wall-clock
// times on this shared 2-core machine moved 3x between runs; the rig takes each microbenchmark's
// median call, which drops the calls the scheduler preempted).
//
// Measured ratios predicted / measured (docs/validation.md): 0.32-0.80 over 18 runs at load 6-10
// (CPU time; 2.9-4.4 ms predicted; the measured CPU time itself grows with the load, 3.8-10.8 ms).
// The bound [0.18, 1.6] leaves a factor 1.8-2 on each side; a dropped op class, a class fitted on
// the wrong work estimate (pooling was 4x off) or a unit slip moves the ratio outside it.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
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

double parse_step_time_s(const std::string& summary) {
  // "step time: 2.73 ms"
  const auto at = summary.find("step time:");
  if (at == std::string::npos) return -1;
  std::istringstream in(summary.substr(at + 10));
  double v = 0;
  std::string unit;
  in >> v >> unit;
  if (unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  if (unit == "ns") return v * 1e-9;
  return -1;
}

}  // namespace

TEST(CpuClosedLoop, LeNet5PredictedFromMicrobenchmarks) {
  if (std::system("/usr/bin/python3 -c 'import torch, onnx' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no python3-torch";
  const std::string src = PLACESIM_SOURCE_DIR, bin = PLACESIM_BINARY;
  const auto dir =
      std::filesystem::temp_directory_path() / ("placesim_rig_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  ASSERT_EQ(std::system(("/usr/bin/python3 " + src + "/tools/profile_rig.py --out " + d +
                         " --quick --steps 5 --batch 32 --threads 1 --model lenet5 >" + d +
                         "/rig.log 2>&1")
                            .c_str()),
            0)
      << run("tail -20 " + d + "/rig.log");
  std::ifstream mf(d + "/manifest.json");
  const nlohmann::json m = nlohmann::json::parse(mf);
  const auto& model = m["models"][0];
  const double measured = model.contains("median_step_cpu_s")
                              ? model["median_step_cpu_s"].get<double>()
                              : model["median_step_s"].get<double>();
  const double dispatch_us = m["dispatch_overhead_us"]["cpu"].get<double>();
  {
    std::ofstream c(d + "/cpu.yaml");
    c << "name: this-cpu\ndevices:\n  - {name: cpu0, kind: cpu, peak_flops: {f32: 50 GFLOP/s}, "
         "memory_bandwidth: 10 GB/s, "
         "memory_capacity: 16 GiB, worker_threads: 1, launch_overhead: "
      << dispatch_us << " us}\nlinks: []\n";
  }
  const std::string cal = run(bin + " calibrate --profile " + d +
                              "/manifest.json --device-model cpu0 -o " + d + "/cal.yaml");
  ASSERT_NE(cal.find("wrote"), std::string::npos) << cal;
  ASSERT_EQ(std::system((bin + " import onnx " + d + "/model.onnx --training --batch 32 -o " + d +
                         "/g.json >" + d + "/import.log 2>&1")
                            .c_str()),
            0)
      << run("cat " + d + "/import.log");
  const std::string sim = run(bin + " simulate --graph " + d + "/g.json --cluster " + d +
                              "/cpu.yaml --placement single-cpu --calibration " + d + "/cal.yaml");
  const double predicted = parse_step_time_s(sim);
  std::cout << cal << "measured median step (CPU time) " << measured * 1e3 << " ms, predicted "
            << predicted * 1e3 << " ms, dispatch overhead " << dispatch_us << " us/op\n";
  std::filesystem::remove_all(dir);
  ASSERT_GT(predicted, 0.0) << sim;
  EXPECT_LT(predicted / measured, 1.6);
  EXPECT_GT(predicted / measured, 0.18);
}

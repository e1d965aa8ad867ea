// Real data from an NVIDIA H200 lent to this project (2026-11-30, torch 2.11.0+cu130, CUDA 13.0,
// tools/profile_rig.py; tests/data/README.md): the torch 2.11 Kineto dialect, replay of measured
// ResNet-18 training steps, the kernel fit's cross-validated error, and the 1-GPU topology.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "calibration/kernel_fit.hpp"
#include "calibration/topo_import.hpp"
#include "calibration/trace.hpp"
#include "calibration/validate.hpp"

namespace pc = placesim::calibration;
namespace sim = placesim::sim;

namespace {

std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}

const pc::Profile& b64() {
  static const pc::Profile p = pc::read_profile(data("h200_resnet18-224px-b64_train.json.gz"));
  return p;
}

// Counts of one step's events by kind, for events that start inside the step window.
std::map<pc::EventKind, int> kinds_in(const pc::Profile& p, const pc::StepWindow& w) {
  std::map<pc::EventKind, int> n;
  for (const auto& e : p.events)
    if (e.ts_ns >= w.begin_ns && e.ts_ns < w.end_ns) ++n[e.kind];
  return n;
}

}  // namespace

TEST(H200Trace, Torch211DialectStepsAndCounts) {
  const pc::Profile& p = b64();
  EXPECT_EQ(p.dialect, "kineto");
  EXPECT_EQ(p.device_name, "NVIDIA H200");
  const auto steps = pc::profile_steps(p);
  ASSERT_EQ(steps.size(), 5u);
  // The annotations' own durations (us in the file): 19639.572, 17161.463, ...
  EXPECT_EQ(steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(steps[0].end_ns - steps[0].begin_ns, 19639572);
  EXPECT_EQ(steps[4].end_ns - steps[4].begin_ns, 18875130);
  // Every step runs the same 992 framework ops (main and autograd threads); counted in Python
  // from the raw JSON. GPU activity is counted by its launch below.
  for (const auto& w : steps) EXPECT_EQ(kinds_in(p, w)[pc::EventKind::CpuOp], 992) << w.name;
  int kernels = 0, memsets = 0;
  for (const auto& e : p.events) {
    kernels += e.kind == pc::EventKind::Kernel;
    memsets += e.kind == pc::EventKind::Memset;
  }
  EXPECT_EQ(kernels, 1915);
  EXPECT_EQ(memsets, 115);
  EXPECT_TRUE(std::none_of(p.missing.begin(), p.missing.end(), [](const std::string& m) {
    return m.find("ts 0") != std::string::npos;
  }));
}

TEST(H200Trace, ZeroedGpuTimesAreReported) {
  // torch 2.11 wrote every GPU activity at ts 0, dur 0 when a session was exported after a later
  // one.
  const pc::Profile p = pc::read_profile(data("h200_micro_zeroed-gpu-times.json.gz"));
  EXPECT_TRUE(std::any_of(p.missing.begin(), p.missing.end(), [](const std::string& m) {
    return m.find("ts 0 and dur 0") != std::string::npos;
  }));
  EXPECT_TRUE(pc::op_samples_from_profile(p, "H200").empty());
}

TEST(H200Validate, EveryResNet18StepWithinFivePercent) {
  for (const char* f :
       {"h200_resnet18-224px-b64_train.json.gz", "h200_resnet18-64px-b8_train.json.gz"}) {
    const pc::Profile p =
        std::string(f).find("224") != std::string::npos ? b64() : pc::read_profile(data(f));
    const pc::ValidationReport r = pc::validate_profiles({p}, {});
    ASSERT_EQ(r.steps.size(), 5u) << f;
    const bool big = std::string(f).find("224") != std::string::npos;
    for (const auto& s : r.steps) {
      EXPECT_LT(std::abs(s.error), 0.05) << f << " " << s.name << "\n" << pc::validation_to_text(r);
      EXPECT_EQ(s.gpu_ops, big ? 406 : 302) << s.name;  // kernels + memsets launched in the step
    }
  }
}

TEST(H200Calibrate, MicrobenchmarkFitCrossValidation) {
  std::vector<pc::OpSample> samples;
  for (const char* f : {"h200_micro.json.gz", "h200_micro_bwd.json.gz"}) {
    auto s = pc::op_samples_from_profile(pc::read_profile(data(f)), "H200-SXM-141GB");
    samples.insert(samples.end(), s.begin(), s.end());
  }
  ASSERT_GT(samples.size(), 500u);
  const pc::CalibrationFit fit = pc::fit_calibration(samples, "h200");
  // Leave-one-shape-out errors measured on these files (docs/calibration.md): gemm 19.5 %,
  // elementwise 18.2 %, reduction 26.5 %, conv 45.1 %, conv_bwd 57.7 %. Bounds leave a margin.
  const std::map<std::string, double> bound = {{"gemm", 0.25},
                                               {"elementwise", 0.25},
                                               {"reduction", 0.35},
                                               {"conv", 0.55},
                                               {"conv_bwd", 0.70}};
  std::map<std::string, double> seen;
  for (const auto& r : fit.classes) {
    if (r.device != "H200-SXM-141GB") continue;
    seen[r.op_class] = r.cv_error;
    std::cout << "H200 " << r.op_class << ": " << r.signatures << " shapes, CV error "
              << 100.0 * r.cv_error << " %\n";
  }
  for (const auto& [cls, b] : bound) {
    ASSERT_TRUE(seen.contains(cls)) << cls;
    EXPECT_GE(seen[cls], 0.0) << cls;
    EXPECT_LT(seen[cls], b) << cls;
  }
  // The fitted GEMM rate must be a real H200 FP32 figure: above an A100's 19.5 TFLOP/s FP32, below
  // the H200's 67 TFLOP/s FP32 peak (the microbenchmarks run FP32 without TF32).
  for (const auto& r : fit.classes)
    if (r.op_class == "gemm") {
      ASSERT_GT(r.model.flop_rate, 0.0);
      EXPECT_GT(r.model.flop_rate, 19.5e12);
      EXPECT_LT(r.model.flop_rate, 67e12);
    }
}

TEST(H200Topo, OneGpuNvidiaSmiWithAnsiHeader) {
  std::ifstream in(data("h200_nvidia-smi-topo.txt"));
  std::stringstream s;
  s << in.rdbuf();
  ASSERT_NE(s.str().find('\x1b'), std::string::npos);  // the real file's underline escapes
  pc::TopoOptions o;
  o.gpu_model = "H200-SXM-141GB";
  const auto r = pc::import_nvidia_smi_topo(s.str(), "h200_nvidia-smi-topo.txt", o);
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 1u);
  ASSERT_EQ(c.cpus().size(), 1u);
  EXPECT_EQ(c.devices[static_cast<std::size_t>(c.gpus()[0])].name, "gpu0");
  int pcie5 = 0;
  for (const auto& l : c.links)
    if (l.kind == "pcie5") {
      ++pcie5;
      EXPECT_NEAR(l.bandwidth.bytes_per_s, 63e9, 1e6);  // Gen5 x16 per direction
    }
  EXPECT_EQ(pcie5, 1);
}

TEST(H200Calibrate, StridedConvolutionFlopsFromConcreteInputs) {
  // torch >= 2.0 records stride/padding/dilation/groups; ResNet's 7x7/2 stem and 1x1/2 shortcuts
  // were counted 4x under the stride-1 assumption.
  const auto samples = pc::op_samples_from_profile(b64(), "H200-SXM-141GB");
  bool stem = false, shortcut = false;
  for (const auto& s : samples) {
    if (s.signature.op_type != "aten::cudnn_convolution") continue;
    const auto& in = s.signature.input_shapes;
    if (in.size() < 2) continue;
    if (in[0] == std::vector<std::int64_t>{64, 3, 224, 224}) {
      stem = true;
      EXPECT_DOUBLE_EQ(s.work.flops, 2.0 * 64 * 64 * 112 * 112 * 3 * 7 * 7);
    }
    if (in[0] == std::vector<std::int64_t>{64, 64, 56, 56} &&
        in[1] == std::vector<std::int64_t>{128, 64, 1, 1}) {
      shortcut = true;
      EXPECT_DOUBLE_EQ(s.work.flops, 2.0 * 64 * 128 * 28 * 28 * 64);
    }
  }
  EXPECT_TRUE(stem);
  EXPECT_TRUE(shortcut);
  EXPECT_FALSE(
      pc::conv_flops_from_concrete("aten::cudnn_convolution", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {})
          .has_value());
  EXPECT_DOUBLE_EQ(*pc::conv_flops_from_concrete("aten::conv2d", {{1, 4, 8, 8}, {4, 1, 3, 3}, {}},
                                                 {"", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "4"}),
                   2.0 * 1 * 4 * 8 * 8 * 1 * 3 * 3);  // depthwise: groups = channels
}

// Real profiler outputs found in public repositories in 2026-12 (issue 15, h-traces; sources in
// tests/data/README.md, what each did before and after in docs/validation.md "Six traces as they
// occur"): each is read as a user's `calibrate` / `validate` reads it.
#include <algorithm>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

#include "calibration/kernel_fit.hpp"
#include "calibration/trace.hpp"
#include "calibration/validate.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"

namespace pc = placesim::calibration;

namespace {
std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}

// The one-line message require_measured_work throws for `f`, or "" when it accepts the file.
std::string refusal(const std::string& f) {
  try {
    pc::require_measured_work(pc::read_profile(data(f)));
  } catch (const placesim::sim::InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST(RealTraces, A100Sxm80Fp16GemmLinksEveryKernelThroughItsLaunch) {
  // torch 2.x, CUDA 12.8, CUPTI 26: relative timestamps with baseTimeNanoseconds, "Record
  // function id" 0, occupancy queries carrying an ac2g *finish* flow on the CPU thread, 16 GPU
  // processes in the metadata for one GPU in deviceProperties.
  const pc::Profile p = pc::read_profile(data("a100sxm80_gpumodel_fp16-mm.json"));
  EXPECT_EQ(p.device_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(p.links.gpu, 5);
  EXPECT_EQ(p.links.gpu_to_op, 5);
  EXPECT_FALSE(p.ns_timestamps);
  EXPECT_EQ(refusal("a100sxm80_gpumodel_fp16-mm.json"), "");
  const auto s = pc::op_samples_from_profile(p, "");
  ASSERT_EQ(s.size(), 5u);
  for (const auto& x : s) {
    // No "Input type" recorded: the kernel's name states its f16 operands (was f32 before).
    EXPECT_EQ(x.signature.dtype, placesim::sim::Dtype::F16);
    EXPECT_EQ(x.device, "A100-SXM4-80GB");
    EXPECT_EQ(x.signature.op_type, "aten::mm");  // the op that launched it, inside aten::matmul
    EXPECT_NEAR(x.seconds, 15.72e-3, 0.03e-3);   // the five kernels: 15.700 to 15.724 ms
  }
}

TEST(RealTraces, RuntimeOnlyTracesAreRefusedNotReplayedAtZeroError) {
  // Two real traces whose window holds only device queries and a synchronize (2x RTX 3090 and
  // 1x A100-PCIE-40GB): `validate` replayed the calls' span against itself, "+0.00 %".
  for (const char* f :
       {"rtx3090x2_flow-matching_runtime-only.json",
        "a100pcie40_particle-transformer_runtime-only.json", "l20_rlinsight_readme_excerpt.json"}) {
    const std::string m = refusal(f);
    EXPECT_TRUE(has(m, f)) << m;
    EXPECT_TRUE(has(m, "traceEvents: expected a framework op, kernel or copy")) << m;
    EXPECT_FALSE(has(m, "\n")) << m;
  }
  EXPECT_TRUE(has(refusal("rtx3090x2_flow-matching_runtime-only.json"),
                  "(5 runtime calls: cudaGetDeviceCount x2, cudaGetDeviceProperties_v2 x2, "
                  "cudaDeviceSynchronize x1)"));
}

TEST(RealTraces, LaunchesWithoutKernelsAreNotACpuOnlyTrace) {
  // torch 2.1-era inference on 8x A100 80GB PCIe: cudaLaunchKernel / cuLaunchKernel / a
  // cudaMemcpyAsync with ac2g start flows, and no GPU activity (the profiler stopped before the
  // GPU ran them). Read as a CPU-only trace before, its aten::embedding was calibrated as a CPU
  // elementwise op of 600 us.
  const pc::Profile p =
      pc::read_profile(data("a100pcie80x8_zoology_launches-without-kernels_excerpt.json"));
  EXPECT_FALSE(p.has_gpu_activity());
  EXPECT_TRUE(std::any_of(p.missing.begin(), p.missing.end(),
                          [](const std::string& m) { return has(m, "its kernels are missing"); }));
  EXPECT_FALSE(std::any_of(p.missing.begin(), p.missing.end(), [](const std::string& m) {
    return has(m, "memsets): CPU-only trace");
  }));
  const std::string m = refusal("a100pcie80x8_zoology_launches-without-kernels_excerpt.json");
  EXPECT_TRUE(has(m,
                  "the GPU activities (kernels, copies) of its 11 runtime calls that enqueue GPU "
                  "work (cudaLaunchKernel x8, cuLaunchKernel x2, cudaMemcpyAsync x1), got none"))
      << m;
  // A real launch counts; a device query or an occupancy query does not.
  pc::TraceEvent e;
  e.kind = pc::EventKind::Runtime;
  for (const char* n : {"cudaLaunchKernel", "cuLaunchKernel", "hipExtModuleLaunchKernel",
                        "cudaGraphLaunch", "cudaMemcpyAsync", "hipMemsetAsync"}) {
    e.name = n;
    EXPECT_TRUE(pc::enqueues_gpu_work(e)) << n;
  }
  for (const char* n : {"cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaGetDeviceCount",
                        "cudaDeviceSynchronize", "cudaStreamIsCapturing"}) {
    e.name = n;
    EXPECT_FALSE(pc::enqueues_gpu_work(e)) << n;
  }
}

TEST(RealTraces, WindowsAndMacosCpuTracesGiveOneSampleperOutermostOp) {
  // Windows (torch 2.1, Jan 2024: no process_name metadata, "__int64" types, tid != pid) and
  // macOS (torch 2.x, "deviceProperties": [], fractional timestamps, baseTimeNanoseconds after
  // traceEvents, "long long" types): CPU-only, shapes recorded.
  const pc::Profile w = pc::read_profile(data("windows-cpu_dtu-mlops_resnet18-b5_excerpt.json"));
  EXPECT_FALSE(w.has_gpu_activity());
  EXPECT_EQ(refusal("windows-cpu_dtu-mlops_resnet18-b5_excerpt.json"), "");
  const auto ws = pc::op_samples_from_profile(w, "");
  ASSERT_EQ(ws.size(), 4u);  // conv2d, add_ (num_batches_tracked), batch_norm, relu_
  EXPECT_EQ(ws[0].signature.op_type, "aten::conv2d");
  EXPECT_NEAR(ws[0].seconds, 12.257e-3, 1e-9);
  EXPECT_GT(ws[0].work.flops, 0.0);  // the stem convolution's FLOPs from its recorded shapes

  const pc::Profile m = pc::read_profile(data("macos-cpu_unsloth-puzzles_linear-ce_excerpt.json"));
  EXPECT_EQ(m.device_name, "");
  EXPECT_FALSE(m.ns_timestamps);
  EXPECT_EQ(refusal("macos-cpu_unsloth-puzzles_linear-ce_excerpt.json"), "");
  const auto ms = pc::op_samples_from_profile(m, "");
  const auto linear = std::find_if(ms.begin(), ms.end(), [](const pc::OpSample& x) {
    return x.signature.op_type == "aten::linear";
  });
  ASSERT_NE(linear, ms.end());
  EXPECT_NEAR(linear->seconds, 173.790e-6, 1e-9);
}

TEST(RealTraces, KernelNamesGiveTheDtypeOnlyWhereTheyStateOne) {
  using placesim::sim::Dtype;
  const auto d = [](std::vector<std::string> names) { return pc::dtype_from_kernel_names(names); };
  EXPECT_EQ(d({"ampere_fp16_s16816gemm_fp16_128x256_ldg8_f2f_stages_64x3_nn"}), Dtype::F16);
  EXPECT_EQ(d({"turing_h1688gemm_256x128_ldg8_tn"}), Dtype::F16);
  EXPECT_EQ(d({"cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x4_tn_align8"}), Dtype::F16);
  EXPECT_EQ(d({"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"}), Dtype::BF16);
  EXPECT_EQ(d({"void at::native::vectorized_elementwise_kernel<4, "
               "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >"}),
            Dtype::BF16);
  // f32 kernels (SIMT sgemm, TF32 tensor-op s1688gemm) state no half type: the default stays.
  EXPECT_EQ(d({"volta_sgemm_128x32_nt"}), std::nullopt);
  EXPECT_EQ(d({"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"}),
            std::nullopt);
  EXPECT_EQ(d({"ampere_fp16_s16816gemm_fp16_64x64_nn", "ampere_bf16_s16816gemm_bf16_64x64_nn"}),
            std::nullopt);  // the names disagree
  EXPECT_EQ(d({}), std::nullopt);
}

// Two real traces with no CPU events at all (torch 2.x profiler without ProfilerActivity.CPU,
// 2024-04, Tesla V100-PCIE-16GB; issue 15, h-traces2): GPU activities and runtime/driver calls
// only, Triton kernels launched by cuLaunchKernel.
namespace {
const char* kFused = "v100pcie_rmsnorm-triton-fused_cuda-only.json";
const char* kSquare = "v100pcie_rmsnorm-triton-square_cuda-only.json";

bool noted(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const auto& n) { return has(n, part); });
}
}  // namespace

TEST(RealTraces, CudaOnlyV100TracesAreKeyedByKernelName) {
  const pc::Profile f = pc::read_profile(data(kFused));
  const pc::Profile q = pc::read_profile(data(kSquare));
  EXPECT_EQ(f.device_name, "Tesla V100-PCIE-16GB");
  EXPECT_EQ(f.links.gpu, 6);
  EXPECT_EQ(f.links.gpu_to_launch, 6);  // cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync
  EXPECT_EQ(q.links.gpu, 21);
  EXPECT_EQ(q.links.gpu_to_launch, 20);  // the window opens on a kernel launched before it
  EXPECT_TRUE(pc::kernel_keyed(f));
  EXPECT_TRUE(pc::kernel_keyed(q));
  // Said as what it is, not as "record_shapes=False" (the note before).
  EXPECT_TRUE(noted(f.missing, "no framework ops (no cpu_op event: a profiler run with"));
  EXPECT_FALSE(noted(f.missing, "record_shapes=False"));
  const auto s = pc::op_samples_from_profile(q, "V100-PCIe-16GB");
  ASSERT_EQ(s.size(), 21u);
  EXPECT_EQ(std::count_if(
                s.begin(), s.end(),
                [](const auto& x) { return x.signature.op_type == "square_kernel_0d1d2de3de4de"; }),
            2);
}

TEST(RealTraces, KernelKeyedCalibrationIsUsedByValidate) {
  // calibrate on a trace without framework ops writes one entry per kernel name (kept where its
  // calls agree: here the 3 calls of the fp32 multiply, 174/164/165 us) and one per copy size;
  // validate looked its entries up only through framework ops, so every activity kept its
  // measured time ("0 of 20 ... match no op of the trace") even on the trace it came from.
  const pc::Profile q = pc::read_profile(data(kSquare));
  const pc::CalibrationFit fit =
      pc::fit_calibration(pc::op_samples_from_profile(q, "V100-PCIe-16GB"), kSquare);
  auto cal = std::make_shared<placesim::sim::Calibration>(fit.calibration);
  pc::ValidateOptions o;
  o.calibration = cal;
  o.device_model = "V100-PCIe-16GB";
  const pc::ValidationReport r = pc::validate_profiles({q}, o);
  ASSERT_EQ(r.steps.size(), 1u);
  // The 3 multiplies (one of them launched before the window) and the 2 copies of 16 KiB.
  EXPECT_EQ(r.steps[0].calibrated_ops, 5);
  EXPECT_EQ(r.steps[0].name_ops, 3);
  EXPECT_EQ(r.steps[0].fallback_ops, 16);
  EXPECT_FALSE(noted(r.warnings, "took a calibrated time"));
}

TEST(RealTraces, GpuWorkQueuedBeforeTheWindowIsReplayed) {
  // The square trace's window opens on a 174 us multiply launched before it; the next kernel
  // waited for it. Dropped before: 20 of 21 activities replayed, GPU busy 1.902 ms measured and
  // predicted (the 174 us missing from both).
  const pc::ValidationReport r = pc::validate_profiles({pc::read_profile(data(kSquare))}, {});
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].gpu_ops, 21);
  ASSERT_EQ(r.steps[0].ranks.size(), 1u);
  ASSERT_EQ(r.steps[0].ranks[0].devices.size(), 1u);
  EXPECT_NEAR(r.steps[0].ranks[0].devices[0].measured_s, 2.076e-3, 1e-9);
  EXPECT_TRUE(noted(r.notes, "1 GPU activities launched before the trace's window (0.174 ms)"));
  EXPECT_NEAR(r.steps[0].error, 0.0, 0.01);
}

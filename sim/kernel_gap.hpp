#pragma once
// The GPU's own idle between two kernels queued back to back on one stream (the first's drain and
// the front end's dispatch of the next grid), per GPU architecture. Kernel times fitted on Kineto
// durations leave it out; the engine charges it after every kernel-launching op's kernel before
// the next kernel on the same stream may start (docs/engine.md, docs/cost-model.md, "The gap
// between kernels on one stream").
//
// Measured (tools/kernel_gap.py, on fitting traces only; docs/validation.md, "The device-side gap
// between queued kernels on one stream"): for consecutive kernels on one stream whose second
// cudaLaunchKernel returned >= 5 us before the first kernel ended (the host did not cause the
// idle), gap = next start - previous end.
//  - Hopper (cc 9.x), H200 (torch 2.11, CUDA 13): kernel->kernel medians 1.12 us (ResNet-50 AMP
//    NHWC b256, 947 pairs), 1.15 us (b64, 1013), 1.06 us (ResNet-18 224 px b64, 1306), 1.22 us
//    (the kernel rig, 1001). About 10 % of the training pairs overlap (sm90 cuDNN/cuBLAS kernels
//    with programmatic dependent launch); the median leaves them out.
//  - A100 (cc 8.0): 1.46 us, the mean of 86 kernel->kernel pairs of the A100 AlexNet and
//    simple-add Kineto traces (tests/data/calibration/a100_alexnet.json, a100_simple_add.json;
//    whole-microsecond timestamps, hence the mean).
//  - Every other architecture: not measured here, no gap (0).
#include "sim/cluster.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

inline constexpr Duration kKernelGapHopper{1'100};      ///< cc 9.x; H200 traces, median
inline constexpr Duration kKernelGapAmpereA100{1'500};  ///< cc 8.0; A100 traces, mean

/// The gap a GPU of architecture `a` pays between queued kernels on one stream; 0 unmeasured.
[[nodiscard]] inline Duration kernel_gap(const GpuArch& a) {
  if (a.vendor != GpuArch::Vendor::Nvidia) return Duration{0};
  if (a.major == 9) return kKernelGapHopper;
  if (a.nvidia(8, 0)) return kKernelGapAmpereA100;
  return Duration{0};
}

}  // namespace placesim::sim

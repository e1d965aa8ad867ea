#pragma once
// The GPU's own idle between two kernels queued back to back on one stream (the first's drain and
// the front end's dispatch of the next grid), per GPU architecture: the catalog's default of
// DeviceSpec::kernel_gap (sim/catalog.cpp) and of a cluster file's GPU with explicit specs and an
// `arch` (sim/cluster_yaml.cpp). A cluster file's `kernel_gap` and a calibration's measured one
// (`placesim calibrate`, calibration::queued_kernel_gaps) replace it. Kernel times fitted on
// Kineto durations leave it out; the engine charges it after every kernel-launching op's kernel
// before the next kernel on the same stream may start (docs/engine.md, docs/cost-model.md, "The
// gap between kernels on one stream").
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
#include <string_view>

#include "sim/cluster.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

inline constexpr Duration kKernelGapHopper{1'100};      ///< cc 9.x; H200 traces, median
inline constexpr Duration kKernelGapAmpereA100{1'500};  ///< cc 8.0; A100 traces, mean

/// An architecture's default gap and where it comes from (DeviceSpec::kernel_gap_source).
struct KernelGapDefault {
  Duration gap{0};
  std::string_view source;
};

/// The gap a GPU of architecture `a` pays between queued kernels on one stream; 0 unmeasured.
[[nodiscard]] inline KernelGapDefault default_kernel_gap(const GpuArch& a) {
  if (a.vendor == GpuArch::Vendor::Nvidia && a.major == 9)
    return {
        kKernelGapHopper,
        "cc 9.x, measured on H200 Kineto traces (torch 2.11), kernel->kernel medians 1.06-1.22 us "
        "(tools/kernel_gap.py; sim/kernel_gap.hpp)"};
  if (a.nvidia(8, 0))
    return {kKernelGapAmpereA100,
            "cc 8.0, measured on the A100 Kineto traces a100_alexnet, a100_simple_add, mean 1.46 "
            "us of 86 "
            "kernel->kernel pairs (tools/kernel_gap.py; sim/kernel_gap.hpp)"};
  return {Duration{0}, "not measured for this architecture: none (sim/kernel_gap.hpp)"};
}

}  // namespace placesim::sim

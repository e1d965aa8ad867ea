// Kernel times behind one narrow interface. For an op on a device the duration comes from, in
// order:
//   1. the op's measured duration, if the graph gives one;
//   2. the calibration table: an exact entry for (device model, signature key);
//   3. a fitted per-op-class model for the device model and op type (calibration);
//   4. the roofline:  t = max(F / (P_dtype * e_c(F)), B / (BW * e_m(B)))
//      with efficiency curves that fall for small kernels,
//        e_c(F) = e_c_max * F / (F + F_half),   e_m(B) = e_m_max * B / (B + B_half).
// The host-side launch overhead is not part of the kernel time: the engine charges it on the
// launching host thread (DeviceSpec::launch_overhead).
//
//   KernelCostModel km;                                   // roofline only
//   km.set_calibration(load_calibration("cal.yaml"));     // adds 2 and 3
//   Duration t = km.op_time(graph.ops[i], cluster.devices[d].spec);
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

/// Roofline efficiency parameters (defaults and sources in docs/cost-model.md).
struct RooflineParams {
  double compute_eff_max = 0.70;   ///< large GEMM/conv fraction of peak
  double compute_half_flops = 2e8; ///< FLOPs at which compute efficiency is half its max
  double memory_eff_max = 0.80;    ///< STREAM-like fraction of peak bandwidth
  double memory_half_bytes = 2e5;  ///< bytes at which memory efficiency is half its max
  Duration min_kernel{2000};       ///< shortest kernel on a GPU (launch-to-end on device)
  Duration min_cpu_op{1000};       ///< shortest op on a CPU worker
};

/// A fitted per-op-class model: t = a + F / (P * e(F)) + B / (BW_fit), e(F) as the roofline's.
struct OpClassModel {
  double intercept_s = 0.0;
  double flop_rate = 0.0;          ///< effective FLOP/s at large sizes (0 = unused)
  double half_flops = 0.0;
  double byte_rate = 0.0;          ///< effective bytes/s (0 = unused)
  int samples = 0;
  double cv_error = 0.0;           ///< cross-validated mean relative error
  [[nodiscard]] double predict_s(double flops, double bytes) const;
};

/// Calibrated kernel times for one device model.
struct DeviceCalibration {
  std::map<std::string, Duration> exact;            ///< signature key -> measured mean
  std::map<std::string, OpClassModel> by_op_type;   ///< op type -> fitted model
  std::optional<RooflineParams> roofline;           ///< fitted efficiency curve, if any
};

struct Calibration {
  std::string source;                                 ///< file it came from
  std::map<std::string, DeviceCalibration> devices;   ///< device model (or device name) -> data
};

Calibration load_calibration(const std::string& path);      ///< YAML; throws InputError
std::string calibration_to_yaml(const Calibration& c);

class KernelCostModel {
 public:
  KernelCostModel() = default;
  explicit KernelCostModel(RooflineParams p) : roofline_(p) {}
  void set_calibration(std::shared_ptr<const Calibration> c) { calibration_ = std::move(c); }
  [[nodiscard]] const RooflineParams& roofline() const { return roofline_; }

  /// Which rule produced a time (for reports).
  enum class Source { Measured, Exact, Fitted, Roofline };
  struct Estimate {
    Duration time;
    Source source;
  };
  [[nodiscard]] Estimate estimate(const Op& op, const Device& device) const;
  [[nodiscard]] Duration op_time(const Op& op, const Device& device) const {
    return estimate(op, device).time;
  }
  [[nodiscard]] Duration roofline_time(const Op& op, const DeviceSpec& spec) const;

 private:
  RooflineParams roofline_;
  std::shared_ptr<const Calibration> calibration_;
};

}  // namespace placesim::sim

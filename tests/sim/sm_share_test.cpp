// Collectives beside kernels (docs/engine.md, "Collectives beside kernels"): a call's CTAs hold
// SMs and its bytes take device-memory bandwidth from the kernels that run beside it.
#include <gtest/gtest.h>

#include "sim/catalog.hpp"
#include "sim/collective.hpp"
#include "sim/collective_expand.hpp"
#include "sim/simulate.hpp"

#include "sim_fixtures.hpp"

namespace placesim::sim {
namespace {

constexpr std::int64_t kCallBytes = std::int64_t{1} << 30;  // ~6 ms on a DGX A100's NVSwitch
constexpr double kLongUs = 20000;  // the kernel beside the call: longer than the call

CollectiveCall all_reduce() {
  CollectiveCall c;
  c.kind = CollectiveKind::AllReduce;
  c.bytes = Bytes{kCallBytes};
  c.id = "x";
  return c;
}

// On gpu0 of `dgx-a100`: `pre` (500 us, no work to slow: the call's fixed time, ~130 us, passes)
// then `k` (kLongUs, compute-bound with `flops`, memory-bound with `bytes`) then `post` (100 us) on
// the same stream; with `call`, an 8-GPU 1 GiB all-reduce that starts before `k` does. Returns the
// step time.
std::int64_t step(bool call, double flops, std::int64_t bytes) {
  const Cluster c = load_cluster("dgx-a100");
  const std::vector<DeviceId> gpus = c.gpus();
  Graph g;
  std::vector<DeviceId> dev;
  if (call) {
    for (int k = 0; k < 8; ++k) {
      Op r = testing::timed_op("ar" + std::to_string(k), 0, 64);
      r.measured.reset();
      r.collective = all_reduce();
      g.add_op(std::move(r));
      dev.push_back(gpus[k]);
    }
  }
  const OpId pre = g.add_op(testing::timed_op("pre", 500, 64));
  Op k = testing::timed_op("k", kLongUs, 64, {pre});
  k.flops = Flops{flops};
  k.bytes_read = Bytes{bytes};
  const OpId kid = g.add_op(std::move(k));
  g.add_op(testing::timed_op("post", 100, 64, {kid}));
  g.finalize();
  dev.insert(dev.end(), 3, gpus[0]);
  return simulate(c, g, Placement{dev}).step_time.ns;
}

// A compute-bound kernel that starts while the call runs gets (SMs - CTAs) / SMs of the SMs: on a
// DGX A100 (108 SMs) a 1 GiB ring all-reduce runs 24 channels, so the kernel takes 108 / 84 of
// its time; the kernel queued behind it on its stream starts when it ends.
TEST(CollectiveBesideKernels, AComputeBoundKernelLosesTheCallsSMs) {
  const Cluster c = load_cluster("dgx-a100");
  const CollectivePrediction p = predict_collective(c, all_reduce(), c.gpus());
  ASSERT_EQ(p.ctas, 24);
  ASSERT_LT(p.time.ns, kLongUs * 1000);  // the call ends while the kernel runs
  ASSERT_LT(p.fixed.ns, 500'000);        // and moves its bytes before the kernel starts
  const std::int64_t alone = step(false, 1e15, 0);
  const std::int64_t beside = step(true, 1e15, 0);
  const double sms = c.devices[c.gpus()[0]].spec.sm_count;
  ASSERT_EQ(sms, 108);
  const double want = kLongUs * 1000 * (sms / (sms - p.ctas) - 1);
  // The call's launch on gpu0 may come before the kernel's: a few launches of slack.
  const double launch = static_cast<double>(c.devices[c.gpus()[0]].spec.launch_overhead.ns);
  EXPECT_NEAR(static_cast<double>(beside - alone), want, 3 * launch + 2);
}

// A memory-bound kernel shares its GPU's memory bandwidth with the call's bytes: the call moves
// kNcclHbmBytesPerBusByte x 2 (n - 1) / n x 1 GiB over its bandwidth phase on each rank.
TEST(CollectiveBesideKernels, AMemoryBoundKernelSharesTheMemoryBandwidth) {
  const Cluster c = load_cluster("dgx-a100");
  const CollectivePrediction p = predict_collective(c, all_reduce(), c.gpus());
  const double phase_s = static_cast<double>(p.time.ns - p.fixed.ns) * 1e-9;
  const double hbm = kNcclHbmBytesPerBusByte * 2 * 7 / 8.0 * kCallBytes / phase_s;
  const double bw = c.devices[c.gpus()[0]].spec.memory_bandwidth.bytes_per_s;
  ASSERT_GT(hbm, 0.2 * bw);  // a 1 GiB ring takes a visible share of the HBM
  ASSERT_LT(hbm, 0.5 * bw);
  const std::int64_t alone = step(false, 0, std::int64_t{1} << 30);
  const std::int64_t beside = step(true, 0, std::int64_t{1} << 30);
  const double want = kLongUs * 1000 * (bw / (bw - hbm) - 1);
  EXPECT_NEAR(static_cast<double>(beside - alone), want, 0.01 * want);
}

// The stretch is the op's roofline with the SMs and bandwidth left: the larger of the two terms
// sets it, and an op without work (or a GPU without an SM count) is not slowed.
TEST(CollectiveBesideKernels, StretchIsTheRooflineWithWhatTheCallLeaves) {
  const Cluster c = load_cluster("dgx-a100");
  const DeviceSpec s = c.devices[c.gpus()[0]].spec;
  ASSERT_EQ(s.kind, DeviceKind::Gpu);
  Op op;
  EXPECT_EQ(beside_call_stretch(op, s, 24, 1e12), 1.0);
  op.flops = Flops{1e12};
  EXPECT_NEAR(beside_call_stretch(op, s, 24, 1e12), 108.0 / 84, 1e-12);
  EXPECT_NEAR(beside_call_stretch(op, s, 500, 0), 108.0, 1e-12);  // at least one SM is left
  op.flops = Flops{0};
  op.bytes_read = Bytes{std::int64_t{1} << 30};
  const double bw = s.memory_bandwidth.bytes_per_s;
  EXPECT_NEAR(beside_call_stretch(op, s, 24, 0.25 * bw), 4.0 / 3, 1e-12);
  EXPECT_NEAR(beside_call_stretch(op, s, 0, 2 * bw), 2.0, 1e-12);  // two streams share it
  DeviceSpec unknown = s;
  unknown.sm_count = 0;
  EXPECT_EQ(beside_call_stretch(op, unknown, 24, 0.25 * bw), 1.0);
}

}  // namespace
}  // namespace placesim::sim

// Memory of the paper's recurrent workloads on one K80 die, through the simulator (about a
// second per NMT step in Release, so it lives with the slow tests).
#include <gtest/gtest.h>

#include "models/registry.hpp"
#include "sim/simulate.hpp"

namespace placesim::models {
namespace {

// Peak memory of one training step on a single K80 die of the paper's machine, as the simulator
// models it (parameters, optimizer slots, activations freed after their last consumer).
sim::DeviceOutcome single_k80(const sim::Graph& g) {
  const sim::Cluster c =
      sim::load_cluster(PLACESIM_SOURCE_DIR "/scenarios/clusters/paper-4gpu.yaml");
  const sim::Outcome o = sim::simulate(c, g, *sim::builtin_placement("single-gpu", g, c));
  for (const auto& d : o.devices) {
    if (d.ops > 0) return d;
  }
  return {};
}

TEST(WorkloadsMemory, NmtDoesNotFitOneK80DieRnnlmDoes) {
  // nvidia-smi reports 11441 MiB for one K80 die with ECC on (the default on Tesla boards).
  const std::int64_t k80_usable = std::int64_t{11441} << 20;
  // The driver is the per-step softmax weight gradient [hidden, vocab] (40 x 205 MB at the
  // defaults): every decoder step's is computed as soon as the loss is, before they are summed.
  const auto nmt = single_k80(load_graph("nmt"));
  EXPECT_GT(nmt.peak_memory.v, k80_usable);
  EXPECT_TRUE(nmt.oom);
  EXPECT_TRUE(single_k80(load_graph("nmt", "layers=4")).oom);
  const auto rnnlm = single_k80(load_graph("rnnlm"));
  EXPECT_FALSE(rnnlm.oom);
  EXPECT_LT(rnnlm.peak_memory.v, k80_usable);
}

}  // namespace
}  // namespace placesim::models

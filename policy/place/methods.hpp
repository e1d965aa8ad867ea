// Placement methods by name, as `place --method`, `compare --methods` and `simulate --placement`
// accept them: single-cpu, single-gpu, round-robin, random:SEED, expert, scotch, metis, heft,
// m-topo, m-etf, m-sct; with LibTorch also rl (the pre-trained GNN policy, zero-shot) and
// rl:POLICY_FILE.
//
//   auto p = policy::make_placement("heft", graph, cluster);     // throws InputError if unknown
//   for (const auto& name : policy::method_names()) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::policy {

struct MethodOptions {
  sim::KernelCostModel costs;  ///< the cost model methods use for op times
  std::uint64_t seed = 1;      ///< seed of the randomised partitioners (scotch, metis)
};

sim::Placement make_placement(const std::string& method, const sim::Graph& graph,
                              const sim::Cluster& cluster, const MethodOptions& options = {});
/// The baseline names in the order compare prints them.
std::vector<std::string> method_names();

}  // namespace placesim::policy

// The placement methods that learn (the RL agent, policy/rl/), as the LibTorch-free libraries see
// them: make_placement's `rl` / `rl:POLICY` and a sweep's `rl:ITERATIONS[:SEED]`. This library
// only declares the table; the RL library fills it (policy/rl/internal/provider.cpp), and a
// binary without LibTorch links policy/rl/internal/none.cpp instead, whose answer is nullptr.
// `placesim` and `placesim-torch` differ in that link and nothing else (policy/CMakeLists.txt).
//
//   if (const LearnedMethods* rl = learned_methods())
//     placement = rl->place_zero_shot("", graph, cluster, costs);   // the shipped GNN policy
//   else
//     throw sim::InputError(...);                                   // a build without LibTorch
#pragma once

#include <cstdint>
#include <string>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::policy {

struct LearnedMethods {
  /// A trained GNN policy file placing `graph` zero-shot; an empty path: the shipped policy.
  sim::Placement (*place_zero_shot)(const std::string& policy_file, const sim::Graph& graph,
                                    const sim::Cluster& cluster, const sim::KernelCostModel& costs);
  /// A short seq2seq training run (one oracle thread) and its best placement.
  sim::Placement (*train_short)(const sim::Graph& graph, const sim::Cluster& cluster,
                                int iterations, std::uint64_t seed);
};

/// The RL library's methods, or nullptr in a binary linked without it.
const LearnedMethods* learned_methods();

}  // namespace placesim::policy

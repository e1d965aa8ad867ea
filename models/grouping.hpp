// Co-location grouping as in Mirhoseini et al. 2017: an op with its gradient and update ops,
// variables with their readers, tiny ops merged into a neighbour; down to a requested number of
// groups, keeping the group graph acyclic. Groups are unions of the graph's own co-location
// groups, so a placement of groups is a placement of the graph's groups.
//
//   const Grouping gr = models::group_graph(graph, 256);
//   std::vector<sim::DeviceId> dev_of_group = policy_output(gr);
//   sim::Placement p = gr.expand(dev_of_group);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::models {

struct Grouping {
  std::vector<std::string> names;                   ///< group names, in a topological order of the group DAG
  std::vector<std::int32_t> group_of_op;            ///< per op
  std::vector<std::vector<sim::OpId>> ops_of_group; ///< per group, ascending op ids
  std::vector<std::vector<std::int32_t>> succ;      ///< group DAG, sorted, no self edges
  std::vector<std::vector<std::int32_t>> pred;

  // Per-group features for the policy (Mirhoseini et al.: op types, output shapes, adjacency).
  std::vector<std::string> type_vocab;              ///< op types, sorted
  std::vector<std::vector<float>> type_counts;      ///< [group][type_vocab index]
  std::vector<double> output_bytes;                 ///< sum of output tensor bytes
  std::vector<double> flops;
  std::vector<double> persistent_bytes;
  std::vector<std::optional<sim::DeviceKind>> constraint;  ///< device kind all its ops need

  [[nodiscard]] int size() const { return static_cast<int>(names.size()); }
  /// A placement of ops from one device per group.
  [[nodiscard]] sim::Placement expand(const std::vector<sim::DeviceId>& device_of_group) const;
};

/// Groups `g` into at most `max_groups` groups (fewer if co-location forces it to have fewer
/// ops... never more than the graph's own co-location groups). Deterministic.
Grouping group_graph(const sim::Graph& g, int max_groups = 256);

}  // namespace placesim::models

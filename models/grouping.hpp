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

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::models {

struct Grouping {
  std::vector<std::string> names;         ///< group names, in a topological order of the group DAG
  std::vector<std::int32_t> group_of_op;  ///< per op
  std::vector<std::vector<sim::OpId>> ops_of_group;  ///< per group, ascending op ids
  std::vector<std::vector<std::int32_t>> succ;       ///< group DAG, sorted, no self edges
  std::vector<std::vector<std::int32_t>> pred;

  // Per-group features for the policy (Mirhoseini et al.: op types, output shapes, adjacency).
  std::vector<std::string> type_vocab;          ///< op types, sorted
  std::vector<std::vector<float>> type_counts;  ///< [group][type_vocab index]
  std::vector<double> output_bytes;             ///< sum of output tensor bytes
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

/// `gr` with every group split by `part_of_op` (e.g. the devices of a min-cut partitioner's
/// placement): each piece is the ops of one group with one label. Pieces follow their group's
/// place in the sequence, then their first op's topological position; pieces of one group may
/// depend on each other both ways, so the sequence is a topological order of `gr`'s DAG, not
/// necessarily of the pieces'. Every placement of `gr` and the labelling itself are expressible.
Grouping refine_grouping(const Grouping& gr, const sim::Graph& g,
                         const std::vector<std::int32_t>& part_of_op);

/// One device per group from a per-op placement: each group takes the device most of its ops
/// are on (ties: the lowest device id), among the devices its device-kind constraint allows
/// (the first allowed one if none of its ops is on one). How well a grouping can express a
/// placement: simulate `gr.expand(project_placement(gr, p, cluster))` against `p` itself.
std::vector<sim::DeviceId> project_placement(const Grouping& gr, const sim::Placement& p,
                                             const sim::Cluster& cluster);

}  // namespace placesim::models

// The shared vocabulary of the baselines: the graph's own co-location groups (the group graph,
// which is cyclic for training graphs: an op and its gradient share a group, so a forward edge
// between two groups comes back as a backward edge), op-level precedence with tensor bytes for
// the list schedulers, per-(op, device) compute times from the kernel cost model, and the
// conservative per-group memory demand of the memory-aware methods.
//
//   const GroupDag dag = build_group_dag(graph);
//   const OpCosts costs = op_costs(graph, cluster, options.costs);
//   std::vector<sim::DeviceId> dev(dag.size(), gpu0);
//   sim::Placement p = dag.expand(dev);
//
// Internal to policy/: not a public contract.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::policy {

struct GroupEdge {
  std::int32_t group = -1;
  double bytes =
      0.0;  ///< tensor bytes crossing the edge, each tensor counted once per consumer group
};

struct OpEdge {
  sim::OpId op = -1;
  double bytes =
      0.0;  ///< bytes of the producer's tensors this consumer reads (0 for control edges)
};

struct GroupDag {
  /// Groups are numbered by the position of their first op in the graph's topological order.
  std::vector<std::vector<sim::OpId>> ops;  ///< per group, ascending op ids
  std::vector<std::int32_t> group_of_op;
  std::vector<std::vector<GroupEdge>> succ;  ///< sorted by group, no self edges
  std::vector<std::vector<GroupEdge>> pred;
  /// Device kind every op of the group needs (the first constraint met, in op order).
  std::vector<std::optional<sim::DeviceKind>> kind;
  std::vector<double> persistent_bytes;  ///< parameters + optimizer state
  std::vector<double> output_bytes;      ///< every output tensor of the group
  std::vector<double> flops;
  std::vector<std::string> layer;  ///< `layer` of the group's heaviest op
  /// Tensors the group reads from other groups: (producer op, bytes), one entry per tensor.
  std::vector<std::vector<OpEdge>> external_inputs;

  // Op level, for the list schedulers (the op graph is acyclic).
  std::vector<std::vector<OpEdge>> op_pred;  ///< per op, distinct producers, ascending
  std::vector<std::vector<OpEdge>> op_succ;  ///< per op, distinct consumers, ascending

  [[nodiscard]] int size() const { return static_cast<int>(ops.size()); }
  [[nodiscard]] sim::Placement expand(const std::vector<sim::DeviceId>& device_of_group) const;
};

GroupDag build_group_dag(const sim::Graph& g);

struct OpCosts {
  /// time_s[op][device]: kernel time plus the per-op launch overhead, in seconds.
  std::vector<std::vector<double>> time_s;
};
OpCosts op_costs(const sim::Graph& g, const sim::Cluster& c, const sim::KernelCostModel& km);
/// Sum of the op times of each group on each device: [group][device].
std::vector<std::vector<double>> group_times(const GroupDag& dag, const OpCosts& costs);

/// Uncontended time to move `bytes` from `a` to `b`: per route segment, latency + bytes /
/// bottleneck bandwidth. 0 when a == b; a very large value when there is no route.
double comm_time_s(const sim::Cluster& c, sim::DeviceId a, sim::DeviceId b, double bytes);

/// Devices a group may run on: those of its required kind, or every device.
std::vector<sim::DeviceId> allowed_devices(const GroupDag& dag, int group, const sim::Cluster& c);

/// The GPU with the highest F32 peak (lowest index on ties); -1 when the cluster has none.
sim::DeviceId fastest_gpu(const sim::Cluster& c);

/// Where a CPU-only group goes when a method wants it near `gpu`: that GPU's host CPU, or the
/// first CPU.
sim::DeviceId host_for(const sim::Cluster& c, sim::DeviceId gpu);

/// Conservative memory demand of a group on `d`, given the devices already chosen for other
/// groups (-1 = not yet): its parameters, every output it produces, and every tensor it reads
/// from a group that is not known to be on `d` (received copies occupy the destination). The
/// simulator frees activations after their last use, so its peak never exceeds this sum.
/// `activation_share` < 1 counts only that share of the outputs and received tensors: an estimate
/// that is no longer a bound, used by the Baechi methods only with a simulation to confirm it.
double group_memory(const GroupDag& dag, int group, sim::DeviceId d,
                    const std::vector<sim::DeviceId>& device_of_group,
                    double activation_share = 1.0);

}  // namespace placesim::policy

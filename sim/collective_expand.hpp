// Collective rank ops of a graph turned, for one placement, into ops the engine already runs.
//
//   if (has_collectives(g)) {
//     const ExpandedGraph x = expand_collectives(cluster, g, placement);
//     outcome = run(x.cluster, x.graph, placement);   // same op ids, same placement
//     // x.calls[x.call_of_op[op]]: what the engine runs for a rank op's call
//   }
#pragma once

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::sim {

/// One call as the engine runs it: when every rank op has started, `fixed` (latency, fill) passes,
/// then one flow per route moves `bytes[k]` through the step's max-min network; the call (every
/// rank op) ends when its last flow does. `bytes[k]` is the flow's rate alone on the idle fabric
/// times the model's bandwidth phase (time - fixed), so a call alone ends at the predicted time
/// and a call sharing links is slowed by the share it loses (docs/collectives.md).
struct ExpandedCall {
  std::vector<OpId> ops;  ///< its rank ops, in op id order
  Duration fixed;
  std::vector<std::vector<Hop>> routes;
  std::vector<double> bytes;
};

/// Each rank op keeps its inputs and outputs and gets the predicted time of its call
/// (predict_collective over the devices its call's ranks are placed on) as `measured` (what the
/// call takes alone). It runs beside its GPU's other kernels, on an NCCL stream: one more compute
/// stream than the device had, which only collectives use; when the GPU had one stream its other
/// ops are pinned to stream 0, so they keep their order and launch-ahead. A rank op may start
/// only when every rank's inputs are ready: control edges from the producers of the other ranks'
/// inputs (NCCL's kernels wait for their peers). Calls over the same set of GPUs (one process
/// group, one NCCL stream) run in order, one at a time: each rank op also waits for the same GPU's
/// rank op of the group's previous call. Op ids do not change.
struct ExpandedGraph {
  Cluster cluster;
  Graph graph;
  std::vector<ExpandedCall> calls;       ///< in call id order
  std::vector<std::int32_t> call_of_op;  ///< per op: index into `calls`, -1 for other ops
};

/// True when any op of `g` carries a collective call.
bool has_collectives(const Graph& g);
/// Throws InputError naming the op when the ranks of one call disagree (kind, bytes, algorithm),
/// sit on a CPU or share a device, or when a broadcast/reduce root is out of range.
ExpandedGraph expand_collectives(const Cluster& cluster, const Graph& g, const Placement& p,
                                 const std::string& origin = "<graph>");

}  // namespace placesim::sim

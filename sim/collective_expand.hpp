// Collective rank ops of a graph turned, for one placement, into ops the engine already runs.
//
//   if (has_collectives(g)) {
//     const ExpandedGraph x = expand_collectives(cluster, g, placement);
//     outcome = run(x.cluster, x.graph, placement);   // same op ids, same placement
//   }
#pragma once

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::sim {

/// Each rank op keeps its inputs and outputs and gets the predicted time of its call
/// (predict_collective over the devices its call's ranks are placed on) as `measured`. It runs on
/// its GPU's NCCL stream, one more compute stream than the device had; when the GPU had one
/// stream its other ops are pinned to stream 0, so they keep their order and launch-ahead. A rank
/// op may start only when every rank's inputs are ready: control edges from the producers of the
/// other ranks' inputs (NCCL's kernels wait for their peers). Op ids do not change.
struct ExpandedGraph {
  Cluster cluster;
  Graph graph;
};

/// True when any op of `g` carries a collective call.
bool has_collectives(const Graph& g);
/// Throws InputError naming the op when the ranks of one call disagree (kind, bytes, algorithm),
/// sit on a CPU or share a device, or when a broadcast/reduce root is out of range.
ExpandedGraph expand_collectives(const Cluster& cluster, const Graph& g, const Placement& p,
                                 const std::string& origin = "<graph>");

}  // namespace placesim::sim

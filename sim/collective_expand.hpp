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
  /// SMs the call's kernel holds on each rank while it runs (CollectivePrediction::ctas).
  int ctas = 0;
  /// Device-memory bytes per second the call moves on each rank in its bandwidth phase alone:
  /// kNcclHbmBytesPerBusByte x what a rank sends (bus_factor x bytes) / (time - fixed).
  double hbm_bytes_per_s = 0;
};

/// Device-memory (HBM) bytes an NCCL ring step moves on a rank per byte the rank sends: a reduce
/// step (recvReduceSend in src/device/prims_simple.h) reads the chunk received into its buffer
/// and its own input's chunk, and the next rank's chunk is written into its buffer, 2 reads + 1
/// write; a copy step (recvCopySend) reads the received chunk, writes the output and receives
/// the next, also 3. Default 3 B/B; what the issue states ("reads two and writes one").
inline constexpr double kNcclHbmBytesPerBusByte = 3.0;

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

/// How much longer a kernel `op` takes on GPU `s` beside running collectives that hold `ctas` of
/// its SMs and move `hbm_bytes_per_s` through its memory (docs/engine.md, "Collectives beside
/// kernels"): its roofline with the SMs left and the memory bandwidth left,
/// max(Tc x SMs / (SMs - ctas), Tm x BW / (BW - hbm)) / max(Tc, Tm), Tc = flops / peak of its
/// compute dtype, Tm = bytes / BW; the calls keep at most half the bandwidth (two streams share
/// it) and leave at least one SM. 1 for an op without flops or bytes, or without a GPU's counts.
double beside_call_stretch(const Op& op, const DeviceSpec& s, int ctas, double hbm_bytes_per_s);

/// True when any op of `g` carries a collective call.
bool has_collectives(const Graph& g);
/// Throws InputError naming the op when the ranks of one call disagree (kind, bytes, algorithm),
/// sit on a CPU or share a device, or when a broadcast/reduce root is out of range.
ExpandedGraph expand_collectives(const Cluster& cluster, const Graph& g, const Placement& p,
                                 const std::string& origin = "<graph>");

}  // namespace placesim::sim

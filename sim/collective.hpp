// Collectives (NCCL-style all-reduce, all-gather, ...) over a set of GPUs of a cluster: the time
// of one call, predicted as NCCL's tuner predicts it (latency + bytes / algorithm bandwidth for
// every algorithm x protocol, the fastest wins) but with the bandwidth of each algorithm taken
// from the cluster's fabric: the flows of every channel of the algorithm, routed over the
// cluster's links and shared by max-min fairness. docs/collectives.md has the model and sources.
//
//   const Cluster c = load_cluster("dgx-a100");
//   CollectiveCall call{.kind = CollectiveKind::AllReduce, .bytes = Bytes{64 << 20}};
//   const CollectivePrediction p = predict_collective(c, call, c.gpus());
//   std::cout << p.time.seconds() << " s, " << to_string(p.algo) << "/" << to_string(p.proto);
//   double busbw = bus_factor(call.kind, 8) * 64e6 * 1.048576 / p.time.seconds();
//
// In a graph, a collective is one op per rank with `Op::collective` set (docs/formats.md);
// simulate() expands them with expand_collectives() once the placement is known.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/collective_call.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

/// nccl-tests' bus-bandwidth factor: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all
/// (n-1)/n; broadcast, reduce, send/recv 1.
double bus_factor(CollectiveKind k, int n);

struct CollectivePrediction {
  Duration time;
  CollAlgo algo = CollAlgo::Ring;
  CollProto proto = CollProto::Simple;
  double latency_us = 0;  ///< the chosen pair's latency term
  double algbw_gbps = 0;  ///< the chosen pair's algorithm bandwidth (GB/s)
  double fill_us = 0;  ///< the chosen pair's pipeline fill (time = latency + size / algbw + fill)
  /// The part of `time` that moves no bytes (latency, fill, launches, rounded up); the engine
  /// waits it before the call's flows start (time - fixed is the bandwidth phase).
  Duration fixed;
  double fabric_busbw_gbps = 0;  ///< ring bus bandwidth the fabric gives (max-min)
  int channels = 1;
  /// CTAs the chosen pair's kernel runs on each rank, one per channel it uses (NCCL launches one
  /// block per channel: src/enqueue.cc, grid = nChannels): the SMs a call holds while it runs
  /// beside other kernels (docs/engine.md, "Collectives beside kernels"). 0 for one rank.
  int ctas = 0;
  int nodes = 1;
};

/// NCCL's GPU generation, the index of its tuning tables (src/graph/tuning.cc ncclTopoTuneModel:
/// "compCapIndex = minCompCap >= 90 ? HOPPER : minCompCap >= 80 ? AMPERE : VOLTA"): 2 for compute
/// capability 9.0 and up (Hopper, Blackwell), 1 for 8.x (Ampere, Ada), 0 below (Volta, Turing and
/// older). Read from the device's architecture (`DeviceSpec::arch`: the catalog's, or a cluster
/// file's `arch` for explicit specs), never from its model name. A GPU without an NVIDIA compute
/// capability (AMD parts, explicit specs without `arch`) counts as 0 (docs/collectives.md).
int nccl_gpu_generation(const DeviceSpec& s);
/// Blackwell as NCCL's NVLS channel count tells it (src/transport/nvls.cc ncclNvlsInit:
/// "comm->compCap >= 100"): NVIDIA compute capability 10.0 and up; false without one.
bool nccl_blackwell(const DeviceSpec& s);

/// Host time to launch one NCCL kernel (cudaLaunchKernel + NCCL's enqueue), microseconds: what
/// small nccl-tests calls show above NCCL's own latency model (docs/collectives.md).
inline constexpr double kNcclLaunchUs = 2.5;

/// Predicts one call over `ranks` (GPU device ids, at least 1; send/recv: exactly 2, the first
/// sends). `launches` host kernel launches precede it on one thread (nccl-tests -g G: G; 0 in a
/// graph, where the engine charges the op's launch on the host thread). Throws InputError when a
/// rank is not a GPU, appears twice, or a forced algorithm does not apply (NVLS without an
/// NVLink 4 switch, tree for anything but all-reduce).
CollectivePrediction predict_collective(const Cluster& cluster, const CollectiveCall& call,
                                        const std::vector<DeviceId>& ranks, int launches = 0);

/// The routes the call's traffic crosses while it runs, one per flow of its algorithm: each
/// channel's ring edges for ring, tree and NVLS (trees and NVLS cross the same GPU-side links:
/// every rank's port in both directions; between nodes, the channel's own NICs, as the model
/// picks them), every ordered pair for all-to-all, the pair for send/recv. Empty for one rank.
/// The engine runs these as flows of the step's max-min network (docs/collectives.md).
std::vector<std::vector<Hop>> collective_routes(const Cluster& cluster, const CollectiveCall& call,
                                                const std::vector<DeviceId>& ranks);

}  // namespace placesim::sim

// Small clusters and graphs shared by the engine tests. Clusters are YAML text in the format of
// docs/formats.md with explicit device specs, so expected times can be computed by hand.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::sim::testing {

/// cpu0 + n GPUs under one switch, every link `bw` per direction, zero latency unless given.
inline std::string star_cluster_yaml(int gpus, const std::string& bw = "10 GB/s",
                                     const std::string& latency = "0 ns", bool peer = true,
                                     const std::string& gpu_mem = "1 GiB", int streams = 1,
                                     const std::string& sharing = "split_duplex",
                                     int cpu_workers = 1) {
  std::string y = "name: star\ndevices:\n";
  y += "  - {name: cpu0, kind: cpu, peak_flops: {f32: 1 TFLOP/s}, memory_bandwidth: 100 GB/s,"
       " memory_capacity: 64 GiB, worker_threads: " +
       std::to_string(cpu_workers) + ", launch_overhead: 1 us}\n";
  for (int g = 0; g < gpus; ++g)
    y += "  - {name: gpu" + std::to_string(g) +
         ", kind: gpu, host: cpu0, peak_flops: {f32: 10 TFLOP/s}, memory_bandwidth: 900 GB/s,"
         " memory_capacity: " +
         gpu_mem + ", compute_streams: " + std::to_string(streams) +
         ", launch_overhead: 2 us, copy_engines: {h2d: 1, d2h: 1, peer: 1}}\n";
  y += "switches: [sw0]\nlinks:\n";
  y += "  - {between: [cpu0, sw0], bandwidth: " + bw + ", latency: " + latency +
       ", sharing: " + sharing + "}\n";
  for (int g = 0; g < gpus; ++g)
    y += "  - {between: [gpu" + std::to_string(g) + ", sw0], bandwidth: " + bw +
         ", latency: " + latency + ", sharing: " + sharing + "}\n";
  if (peer && gpus > 1) {
    y += "peer_access:\n  groups: [[";
    for (int g = 0; g < gpus; ++g) y += (g ? ", gpu" : "gpu") + std::to_string(g);
    y += "]]\n";
  } else {
    y += "peer_access: none\n";
  }
  return y;
}

inline Cluster star_cluster(int gpus, const std::string& bw = "10 GB/s",
                            const std::string& latency = "0 ns", bool peer = true,
                            const std::string& gpu_mem = "1 GiB", int streams = 1,
                            const std::string& sharing = "split_duplex", int cpu_workers = 1) {
  return parse_cluster_yaml(
      star_cluster_yaml(gpus, bw, latency, peer, gpu_mem, streams, sharing, cpu_workers),
      "<test star>");
}

/// An op with a measured duration (microseconds) and one output of `out_bytes`.
inline Op timed_op(const std::string& name, double us, std::int64_t out_bytes,
                   std::vector<OpId> inputs = {}) {
  Op op;
  op.name = name;
  op.type = "Test";
  op.measured = Duration{static_cast<std::int64_t>(us * 1000)};
  op.outputs.push_back({.bytes = Bytes{out_bytes}});
  for (OpId i : inputs) op.inputs.push_back({i, 0});
  return op;
}

/// A random layered DAG of `n` ops: each op reads 1-3 earlier outputs, has a FLOP count and an
/// output of 4 KiB-4 MiB; every 10th op carries persistent parameters. Deterministic in `seed`.
inline Graph random_graph(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  g.name = "random" + std::to_string(n);
  for (int i = 0; i < n; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = i % 3 == 0 ? "MatMul" : "Add";
    op.flops = Flops{static_cast<double>(1e5 + rng() % 50'000'000)};
    op.bytes_read = Bytes{static_cast<std::int64_t>(4096 + rng() % (1 << 22))};
    op.outputs.push_back({.bytes = Bytes{static_cast<std::int64_t>(4096 + rng() % (1 << 22))}});
    if (i % 10 == 0) op.persistent = Bytes{static_cast<std::int64_t>(rng() % (1 << 20))};
    if (i > 0) {
      const int k = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < k; ++j) {
        // Mostly recent producers, sometimes far back: long-lived activations.
        const int back = 1 + static_cast<int>(rng() % (j == 0 ? 4 : static_cast<std::uint64_t>(i)));
        op.inputs.push_back({std::max(0, i - back), 0});
      }
    }
    g.add_op(std::move(op));
  }
  g.finalize("<random graph>");
  return g;
}

inline Placement random_placement(const Graph& g, const Cluster& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Placement p;
  for (int i = 0; i < g.num_ops(); ++i)
    p.device_of.push_back(
        static_cast<DeviceId>(rng() % static_cast<std::uint64_t>(c.num_devices())));
  return p;
}

}  // namespace placesim::sim::testing

// Parallel training as graph transforms: one replica's training graph (built-in or imported)
// becomes the graph of a data-parallel job, with its placement, ready for simulate().
//
//   const ParallelSpec s = parse_parallel("dp=8", "<flag --parallel>");
//   const ParallelJob job = make_parallel(models::load_graph("resnet50", "batch=256"),
//                                         sim::load_cluster("dgx-a100"), s);
//   const sim::Outcome o = sim::simulate(cluster, job.graph, job.placement);
//   double samples_per_s = job.replicas * 256 / o.step_time.seconds();
//
// Data parallel as PyTorch DDP does it: every replica runs the whole step on its own GPU; the
// gradients are packed into buckets in the order the backward pass produces them (the first
// bucket 1 MiB, the others 25 MiB: DDP's bucket_cap_mb=25 and _DEFAULT_FIRST_BUCKET_BYTES), each
// bucket is all-reduced across the replicas as soon as its last gradient exists (overlapping the
// rest of the backward pass), and each update op waits for the bucket holding its gradient.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::models {

struct ParallelSpec {
  int dp = 1;                                   ///< data-parallel replicas
  int tp = 1;                                   ///< tensor parallel (not implemented: must be 1)
  int pp = 1;                                   ///< pipeline parallel (not implemented: must be 1)
  std::int64_t bucket_bytes = 25LL << 20;       ///< DDP bucket_cap_mb = 25
  std::int64_t first_bucket_bytes = 1LL << 20;  ///< DDP's first (smallest) bucket
  auto operator<=>(const ParallelSpec&) const = default;
};

/// Parses "dp=8", "dp=all", "dp=8,tp=1,pp=1", "dp=4,bucket=50MiB,first_bucket=25MiB". Throws
/// InputError naming `origin` for an unknown key, a value below 1, or tp/pp above 1 (not
/// implemented).
ParallelSpec parse_parallel(const std::string& text, const std::string& origin);
std::string to_string(const ParallelSpec& s);  ///< "dp=8"

struct ParallelJob {
  sim::Graph graph;
  sim::Placement placement;  ///< replica k on the k-th GPU of the cluster
  int replicas = 1;
  int buckets = 0;                  ///< gradient buckets (all-reduce calls)
  std::int64_t gradient_bytes = 0;  ///< per replica
};

/// Replicates `g` `s.dp` times (ops renamed "dp<k>/<name>") onto the first dp GPUs of `c` (ops
/// that must run on a CPU go to that GPU's host CPU) and adds the bucketed gradient all-reduce.
/// Gradients are the inputs of update-phase ops produced by backward-phase ops. Throws InputError
/// when the cluster has fewer GPUs than dp or the graph has no gradients to exchange (dp > 1).
ParallelJob make_parallel(const sim::Graph& g, const sim::Cluster& c, const ParallelSpec& s);

/// The per-replica batch from a graph's metadata ("options": "batch=256,..."), or 0 if absent.
std::int64_t graph_batch(const sim::Graph& g);

}  // namespace placesim::models

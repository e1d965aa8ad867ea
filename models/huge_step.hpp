// A generator of huge training steps, streamed op by op into a sim::StepGraphBuilder (never a
// Graph): a GPT-style transformer trained dp x tp x pp (Megatron-LM layout) on the first
// dp*tp*pp GPUs of a cluster, with its collectives written out as the point-to-point ring steps
// NCCL runs and 1F1B pipeline order as control edges. docs/performance.md ("Huge steps").
//
//   const sim::Cluster c = sim::load_cluster("2x-dgx-a100");
//   const ParallelSpec par = parse_parallel("dp=2,tp=4,pp=2,mb=64", "<flag --parallel>");
//   HugeStep h = build_gpt_huge(c, "layers=48,hidden=4096", par, sim::KernelCostModel{});
//   const sim::Outcome o = sim::simulate(h.step, h.placement);     // h.ops ops, ~100 B per op
#pragma once

#include <cstdint>
#include <string>

#include "models/parallel.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"

namespace placesim::models {

/// The transformer's shape (GPT-3 175B by default: Brown et al. 2020, Table 2.1) and one
/// micro-batch of `batch` sequences of `seq` tokens, in `precision` (mixed: bf16/f16 compute,
/// F32 master weights and Adam state, 16 bytes per parameter resident).
struct HugeGptShape {
  int layers = 96;
  std::int64_t hidden = 12288;
  std::int64_t seq = 2048;
  std::int64_t batch = 1;
  std::int64_t vocab = 51200;
  sim::Dtype half = sim::Dtype::BF16;
};

/// Parses "layers=96,hidden=12288,seq=2048,batch=1,vocab=51200,precision=bf16" (every key
/// optional). Throws InputError naming `origin` for an unknown key or a bad value.
HugeGptShape parse_gpt_huge(const std::string& text, const std::string& origin);

struct HugeStep {
  sim::StepGraph step;
  sim::Placement placement;
  std::int64_t ops = 0;
  std::int64_t input_edges = 0;
  std::int64_t ring_ops = 0;  ///< ops of the all-reduce rings (tp and dp)
  int gpus = 0;
};

/// Builds one training step. tp ranks of a layer are consecutive GPUs (inside a node on the
/// built-in clusters), then dp replicas, then pipeline stages: GPU tp_rank + tp * (dp_rank + dp *
/// stage) of the cluster's GPUs, as make_parallel places them. Throws InputError when the cluster
/// has fewer GPUs than dp*tp*pp, pp exceeds the layers, or the step would pass 2^31 ops.
/// `threads`: oneTBB threads pricing the ops (0 = the default); the step is the same on any count.
HugeStep build_gpt_huge(const sim::Cluster& cluster, const HugeGptShape& shape,
                        const ParallelSpec& par, const sim::KernelCostModel& costs,
                        int threads = 0);
struct HugeRun {
  HugeStep h;
  sim::Outcome outcome;
  bool overlapped = false;  ///< simulated while generated (sim::simulate_while_building)
  double build_s = 0.0;     ///< wall seconds until built, when overlapped (not deterministic)
};

/// build_gpt_huge, then sim::simulate, in one: with options.threads != 1 the step is simulated
/// while it is generated (sim::simulate_while_building; the generator declares a watermark
/// after each task), with the outcome of simulate(build_gpt_huge(...)) bit for bit.
HugeRun simulate_gpt_huge(const sim::Cluster& cluster, const HugeGptShape& shape,
                          const ParallelSpec& par, const sim::KernelCostModel& costs,
                          const sim::SimOptions& options);

/// Ops build_gpt_huge would emit (without building): to size a run before paying for it.
std::int64_t gpt_huge_ops(const HugeGptShape& shape, const ParallelSpec& par);

}  // namespace placesim::models

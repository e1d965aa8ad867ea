// Parallel training as graph transforms: one replica's training graph (built-in or imported)
// becomes the graph of a dp x tp x pp job, with its placement, ready for simulate().
//
//   const ParallelSpec s = parse_parallel("dp=2,tp=2,pp=2,mb=8", "<flag --parallel>");
//   const ParallelJob job = make_parallel(models::load_graph("gpt", "batch=4"),
//                                         sim::load_cluster("dgx-a100"), s);
//   const sim::Outcome o = sim::simulate(cluster, job.graph, job.placement);
//   double samples_per_s = job.samples_per_step / o.step_time.seconds();
//
// Data parallel as PyTorch DDP does it: gradients are packed into buckets in the order the
// backward pass produces them (the first 1 MiB, the others 25 MiB: DDP's bucket_cap_mb=25 and
// _DEFAULT_FIRST_BUCKET_BYTES), each bucket is all-reduced across the replicas as soon as its last
// gradient exists, and each update op waits for the bucket holding its gradient.
// Tensor parallel as Megatron-LM does it (Shoeybi et al. 2019) on transformer graphs: column- then
// row-parallel linear pairs (found in the graph, models/parallel_tp.cpp), vocab-parallel token
// embedding and LM head, an all-reduce after each row-parallel linear (forward) and after each
// column-parallel input gradient (backward). Pipeline parallel: layers in pp contiguous stages
// balanced by compute, `mb` micro-batches per step, send/recv between stages, the 1F1B schedule
// (Narayanan et al. 2021) as control edges. docs/parallel.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::models {

/// apex.parallel.DistributedDataParallel's default message_size: "Minimum number of elements in a
/// communication bucket" (NVIDIA/apex apex/parallel/distributed.py, `message_size=10000000`).
inline constexpr std::int64_t kApexMessageSize = 10'000'000;

struct ParallelSpec {
  int dp = 1;              ///< data-parallel replicas
  int tp = 1;              ///< tensor-parallel ranks (Megatron-style)
  int pp = 1;              ///< pipeline stages
  int mb = 1;              ///< micro-batches per step (1F1B)
  bool recompute = false;  ///< full activation recomputation of every layer (Megatron's)
  std::int64_t bucket_bytes = 25LL << 20;       ///< DDP bucket_cap_mb = 25
  std::int64_t first_bucket_bytes = 1LL << 20;  ///< DDP's first (smallest) bucket
  /// DDP's gradient_as_bucket_view: the gradients are views of the buckets, so the reduced
  /// buckets are not copied back into param.grad (default False, as in torch DDP).
  bool bucket_view = false;
  /// The framework's gradient exchange: the kernels it runs around each bucket's all-reduce
  /// (docs/parallel.md, "The framework's kernels around the all-reduce"). Torch: PyTorch DDP's
  /// per-gradient scale into the bucket and copy back (reducer.cpp); Horovod: batched copies into
  /// and out of its fusion buffer (BatchedD2DMemcpy, up to 160 tensors a kernel); Contiguous:
  /// Megatron-LM's DistributedDataParallel, gradients already in one contiguous buffer, one
  /// in-place scale of each bucket and no copy.
  /// Flat: NVIDIA DeepLearningExamples BERT's --allreduce_post_accumulation: after the backward
  /// pass, one multi_tensor_scale of every F32 gradient into one flat F16 buffer
  /// (--allreduce_post_accumulation_fp16), one all-reduce of it, one multi_tensor_scale back.
  /// Apex: apex.parallel.DistributedDataParallel: buckets of at least apex_message_size elements
  /// in the order the backward pass makes the gradients, each flattened into one buffer by one cat
  /// kernel, all-reduced, averaged in place (mul_ by gradient_predivide_factor / world size) and
  /// copied back by multi_tensor_scale launches (bucket=, first_bucket= do not apply).
  enum class Ddp { Torch, Horovod, Contiguous, Flat, Apex };
  Ddp ddp = Ddp::Torch;
  /// ddp=apex only: DistributedDataParallel's message_size, in elements (apex_message_size=N;
  /// default kApexMessageSize, apex's own; DeepLearningExamples' run_squad.py passes 250000000).
  std::int64_t apex_message_size = kApexMessageSize;
  /// ddp=apex only: gradient_predivide_factor = world size (apex_predivide=true, run_squad.py's
  /// `gradient_predivide_factor=get_world_size()`): one more in-place mul_ of each flat bucket,
  /// by 1/world size, before its all-reduce (apex's default factor 1.0 runs none).
  bool apex_predivide = false;
  /// Gradient accumulation in the framework's training loop (docs/parallel.md, "Gradient
  /// accumulation"): `accumulate` micro-batches of forward and backward per optimizer step, each
  /// adding its gradients into F32 accumulated gradients, then one gradient exchange and one
  /// update. The step is simulated as one accumulating micro-batch (no exchange, no update) and
  /// the last one (with them): step = (accumulate - 1) x the first + the second.
  int accumulate = 1;
  /// Input pipeline on the host CPU (off by default; docs/parallel.md; the graph options
  /// input=pil and input=pil_autoaugment set both from kPilConvnetsUs / kPilAutoaugmentUs):
  /// worker processes per replica (PyTorch DataLoader num_workers, DeepLearningExamples'
  /// `workers`) and CPU time one worker spends on one sample (decode + augmentation), in us.
  int loader_workers = 0;
  std::int64_t loader_us = 0;
  auto operator<=>(const ParallelSpec&) const = default;
};

/// CPU time, in us, one DataLoader worker spends per training image in NVIDIA ConvNets' PyTorch
/// input pipeline (PIL/libjpeg-turbo decode + convert("RGB"), RandomResizedCrop(224), flip,
/// fast_collate's uint8 copy), measured on one Zen 2 core (AMD EPYC family 23 model 49, the core of
/// DGX A100's EPYC 7742) by tools/input_pipeline_rate.py: 342.0 img/s of CPU time on real photos
/// of ImageNet-like size (docs/validation.md, "The input pipeline on the host CPUs"). The graph
/// option input=pil,input_workers=W (models/registry.hpp) makes make_parallel add W loader workers
/// per replica at this cost, as loader_workers=W,loader_us=2924 would.
inline constexpr std::int64_t kPilConvnetsUs = 2924;

/// CPU time, in us, one DataLoader worker spends per training image in the same loader as
/// EfficientNet runs it (ConvNets configs.yml @ 0fadac23: `augmentation: autoaugment`,
/// `interpolation: bicubic`): the same decode, RandomResizedCrop(224) bicubic, flip, then ConvNets'
/// own AutoaugmentImageNetPolicy (image_classification/autoaugment.py @ 82422354: one of 25 PIL
/// sub-policies per image), then the uint8 collate. 4199 = kPilConvnetsUs x 1.436, the median
/// ratio of the two pipelines' CPU time per image in 20 back-to-back pairs of 100 images on the
/// same Zen 2 core (quartiles 1.388-1.472), `taskset -c 1 /usr/bin/python3
/// tools/input_pipeline_rate.py --images 400 --repeats 5` (docs/validation.md, "EfficientNet's
/// AutoAugment loader"). Graph option input=pil_autoaugment,input_workers=W.
inline constexpr std::int64_t kPilAutoaugmentUs = 4199;

/// Throws InputError(origin, key) when `g` asks for an input pipeline (graph option input=pil):
/// only make_parallel adds it, so a run without --parallel would silently leave it out.
void refuse_input_without_parallel(const sim::Graph& g, const std::string& origin,
                                   const std::string& key);

/// Parses "dp=8", "dp=all", "dp=2,tp=2,pp=2,mb=8", "dp=4,bucket=50MiB,first_bucket=25MiB",
/// "tp=8,pp=2,mb=48,recompute=full", "dp=8,loader_workers=16,loader_us=6000", "dp=8,ddp=horovod",
/// "dp=8,accumulate=128,ddp=flat", "dp=8,ddp=apex", "dp=8,ddp=apex,apex_message_size=250000000,
/// apex_predivide=true".
/// Throws InputError naming `origin` for an unknown key or a value below 1, and for
/// apex_message_size / apex_predivide without ddp=apex.
ParallelSpec parse_parallel(const std::string& text, const std::string& origin);
std::string to_string(const ParallelSpec& s);  ///< "dp=8", "dp=2,tp=2,pp=2,mb=8"

struct ParallelJob {
  sim::Graph graph;
  sim::Placement placement;         ///< rank tp_rank + tp * (dp_rank + dp * stage) on that GPU
  ParallelSpec spec;                ///< as resolved (dp=all replaced by the count)
  int replicas = 1;                 ///< data-parallel replicas (dp)
  int buckets = 0;                  ///< gradient buckets (all-reduce calls) of one device
  std::int64_t gradient_bytes = 0;  ///< per replica (all tp ranks and stages together)
  int tp_pairs = 0;                 ///< column/row-parallel linear pairs found (tp > 1)
  int tp_allreduces = 0;            ///< tensor-parallel all-reduce calls per micro-batch
  std::vector<int> stage_layers;    ///< per stage: layer blocks it holds
  std::vector<double> stage_flops;  ///< per stage: forward + backward FLOPs of one micro-batch
  /// Per device of the job: the bytes resident all step (weights and optimizer state).
  std::vector<std::int64_t> persistent_bytes;
  /// accumulate > 1: one accumulating micro-batch of one data-parallel replica (its tp ranks):
  /// forward, backward and the accumulation adds, no exchange and no update. The replicas do not
  /// meet between their exchanges, so each runs these micro-batches as one replica alone does.
  sim::Graph accumulating;
  sim::Placement accumulating_placement;
  /// The 1F1B bubble if stages were equal and communication free: (pp-1)/(mb+pp-1).
  [[nodiscard]] double analytic_bubble() const {
    return static_cast<double>(spec.pp - 1) / static_cast<double>(spec.mb + spec.pp - 1);
  }
};

/// Builds the dp x tp x pp job of `g` on the first dp*tp*pp GPUs of `c` (ops that must run on a CPU
/// go to that GPU's host CPU). Ops are renamed "[d<k>/][t<k>/][p<k>/][mb<k>/]<name>". Gradients are
/// the inputs of update-phase ops produced by backward-phase ops. Throws InputError when the
/// cluster has too few GPUs, the graph has no gradients to exchange (dp > 1), tp > 1 on a graph
/// without transformer linear pairs, or pp above the graph's layer blocks.
ParallelJob make_parallel(const sim::Graph& g, const sim::Cluster& c, const ParallelSpec& s);

/// The per-replica batch from a graph's metadata ("options": "batch=256,..."), or 0 if absent.
std::int64_t graph_batch(const sim::Graph& g);
/// An integer option from a graph's "options" metadata ("heads=12"), or 0 if absent.
std::int64_t graph_option(const sim::Graph& g, const std::string& key);

/// Tensor-parallel shard of one replica (models/parallel_tp.cpp): the graph one tp rank runs,
/// with all-reduce rank ops whose call ids start "tp/". Exposed for tests.
struct TpShard {
  sim::Graph graph;
  int pairs = 0;       ///< column/row-parallel pairs
  int allreduces = 0;  ///< all-reduce ops added
};
TpShard shard_tensor_parallel(const sim::Graph& g, int tp, const std::string& origin);

/// Pipeline stage of every op of `g` (models/parallel_pp.cpp): forward ops by layer block (the
/// layer path up to its first numbered component, "gpt/h3"), contiguous blocks per stage chosen to
/// minimise the most expensive stage (forward + backward FLOPs); backward ops with their forward
/// op's group; -1 for variables, constants and inputs (copied to every stage that reads them).
struct StagePlan {
  std::vector<int> stage;  ///< per op
  std::vector<int> blocks_per_stage;
  std::vector<double> flops_per_stage;
};
StagePlan plan_stages(const sim::Graph& g, int pp, const std::string& origin);

/// Full activation recomputation (Megatron's --recompute-granularity full, Chen et al. 2016):
/// every numbered layer block's forward ops are copied into the backward pass ("recompute/<op>",
/// phase backward), its backward ops read the copies, and the copies start when the gradient
/// reaches the block, so only each block's input stays live between the passes.
sim::Graph recompute_layers(const sim::Graph& g, const std::string& origin);

}  // namespace placesim::models

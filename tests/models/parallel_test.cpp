// Data-parallel graph transform (models/parallel.hpp).
#include "models/parallel.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>

#include "models/registry.hpp"
#include "sim/collective.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace pm = placesim::models;
namespace sim = placesim::sim;

TEST(Parallel, ParsesLayouts) {
  const pm::ParallelSpec s = pm::parse_parallel("dp=8", "<t>");
  EXPECT_EQ(s.dp, 8);
  EXPECT_EQ(s.bucket_bytes, 25LL << 20);
  EXPECT_EQ(pm::parse_parallel("dp=2,bucket=50MiB", "<t>").bucket_bytes, 50LL << 20);
  EXPECT_THROW(pm::parse_parallel("dp=0", "<t>"), sim::InputError);
  const pm::ParallelSpec p = pm::parse_parallel("dp=2,tp=2,pp=4,mb=8", "<t>");
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.pp, 4);
  EXPECT_EQ(p.mb, 8);
  EXPECT_EQ(pm::to_string(p), "dp=2,tp=2,pp=4,mb=8");
  EXPECT_THROW(pm::parse_parallel("dp=2,mb=0", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("tp=two", "<t>"), sim::InputError);
  EXPECT_TRUE(pm::parse_parallel("tp=2,recompute=full", "<t>").recompute);
  EXPECT_THROW(pm::parse_parallel("tp=2,recompute=some", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("xp=2", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("", "<t>"), sim::InputError);
}

namespace {

// Gradients of a training graph: backward-made inputs of its update ops, each counted once.
int gradients(const sim::Graph& g) {
  std::set<std::pair<sim::OpId, std::int32_t>> seen;
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Update)
      for (const sim::TensorRef& t : op.inputs)
        if (g.ops[t.op].phase == sim::Phase::Backward) seen.insert({t.op, t.output});
  return static_cast<int>(seen.size());
}

}  // namespace

// ResNet-50: every replica's gradients (its parameters, f32) go through the buckets once, the
// first bucket is DDP's 1 MiB one, the others at most 25 MiB (or one gradient larger than that).
TEST(Parallel, DataParallelBucketsEveryGradientOnce) {
  const sim::Graph g = pm::load_graph("resnet50", "batch=32");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel("dp=4", "<t>"));
  EXPECT_EQ(job.replicas, 4);
  // Per replica: the graph, one all-reduce per bucket, and DDP's scale into the bucket and copy
  // back to param.grad of each gradient (DdpScalesIntoBucketsAndCopiesBack below).
  EXPECT_EQ(job.graph.num_ops(), 4 * (g.num_ops() + job.buckets + 2 * gradients(g)));
  const double params = std::stod(g.metadata.at("parameters"));
  EXPECT_NEAR(static_cast<double>(job.gradient_bytes), 4.0 * params, 0.01 * 4.0 * params);
  std::int64_t total = 0;
  int calls = 0;
  for (const sim::Op& op : job.graph.ops) {
    if (!op.collective || op.name.rfind("dp0/", 0) != 0) continue;
    ++calls;
    total += op.collective->bytes.v;
  }
  EXPECT_EQ(calls, job.buckets);
  EXPECT_EQ(total, job.gradient_bytes);
  EXPECT_GE(job.buckets, static_cast<int>(job.gradient_bytes / (25LL << 20)));
  // Replica k runs on the k-th GPU.
  const auto gpus = c.gpus();
  EXPECT_EQ(job.placement.device_of.front(), gpus[0]);
  EXPECT_EQ(job.placement.device_of.back(), gpus[3]);
  // A data-parallel step is no faster than one replica alone and its all-reduce overlaps the
  // backward pass: the step is shorter than one replica, plus DDP's kernels (the GPU's extra busy
  // time and the host's launch of each), plus every bucket's all-reduce in a row.
  const sim::Outcome one =
      sim::simulate(c, g, pm::make_parallel(g, c, pm::parse_parallel("dp=1", "<t>")).placement);
  const sim::Outcome four = sim::simulate(c, job.graph, job.placement);
  EXPECT_GE(four.step_time, one.step_time);
  const auto g0 = static_cast<std::size_t>(gpus[0]);
  EXPECT_GT(four.devices[g0].busy, one.devices[g0].busy);
  sim::Duration serial =
      one.step_time + (four.devices[g0].busy - one.devices[g0].busy) +
      sim::Duration::from_ns(c.devices[g0].spec.launch_overhead.ns * 2 * gradients(g));
  for (const sim::Op& op : job.graph.ops)
    if (op.collective && op.name.rfind("dp0/", 0) == 0)
      serial +=
          sim::predict_collective(c, *op.collective, {gpus[0], gpus[1], gpus[2], gpus[3]}).time;
  EXPECT_LT(four.step_time, serial);
  EXPECT_FALSE(four.oom);
}

// DDP's optimizer step follows backward(), which returns once every bucket is reduced: every update
// op waits for every bucket of its replica, so the last bucket's all-reduce is exposed (the step
// is longer than one replica's by at least that call). NVIDIA DeepLearningExamples' ResNet-50
// (PyTorch/Classification/ConvNets/resnet50v1.5/README.md @ 291f0d02) on 8 GPUs: DGX A100 TF32
// 7248 img/s, DGX-1 V100 16GB FP32 2855 img/s, both NCHW (ConvNets' default memory format; its
// configs.yml sets nhwc only for AMP), with the options of their rows in
// tests/data/published_throughput.csv; the simulated throughput is within 10 % of both
// (docs/validation.md).
TEST(Parallel, OptimizerStepWaitsForEveryBucketAndMatchesPublishedThroughput) {
  struct Case {
    const char* cluster;
    const char* opts;
    double batch, published;
  };
  for (const Case& k :
       {Case{"dgx-a100",
             "batch=256,layout=nchw,input=pil,input_workers=16,optimizer_impl=per_param", 256,
             7248},
        Case{"dgx1-v100", "batch=112,layout=nchw,optimizer_impl=per_param", 112, 2855}}) {
    const sim::Graph g = pm::load_graph("resnet50", k.opts);
    const sim::Cluster c = sim::load_cluster(k.cluster);
    const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel("dp=8", "<t>"));
    sim::OpId last = -1;  // dp0's last bucket
    for (sim::OpId o = 0; o < job.graph.num_ops(); ++o)
      if (job.graph.ops[o].collective && job.graph.ops[o].name.rfind("dp0/", 0) == 0) last = o;
    ASSERT_GE(last, 0);
    int updates = 0;
    for (const sim::Op& op : job.graph.ops) {
      if (op.phase != sim::Phase::Update || op.name.rfind("dp0/", 0) != 0) continue;
      ++updates;
      EXPECT_NE(std::find(op.control_inputs.begin(), op.control_inputs.end(), last),
                op.control_inputs.end())
          << op.name;
    }
    EXPECT_GT(updates, 0);
    const pm::ParallelJob single = pm::make_parallel(g, c, pm::parse_parallel("dp=1", "<t>"));
    const sim::Outcome one = sim::simulate(c, single.graph, single.placement);
    const sim::Outcome eight = sim::simulate(c, job.graph, job.placement);
    const sim::Duration last_call =
        sim::predict_collective(c, *job.graph.ops[last].collective, c.gpus()).time;
    EXPECT_GE(eight.step_time.ns, one.step_time.ns + last_call.ns) << k.cluster;
    const double throughput = 8 * k.batch / eight.step_time.seconds();
    EXPECT_NEAR(throughput / k.published, 1.0, 0.10) << k.cluster << ": " << throughput;
  }
}

// The input pipeline (loader_workers, loader_us): one CPU op per worker on the replica's host CPU,
// prefetching the next step's samples while this one runs, one thread each; the socket's threads
// (EPYC 7742: 128) are shared when more workers than that run on it.
TEST(Parallel, LoaderWorkersRunOnTheHostCpuAndShareItsThreads) {
  const pm::ParallelSpec s = pm::parse_parallel("dp=8,loader_workers=16,loader_us=6000", "<t>");
  EXPECT_EQ(s.loader_workers, 16);
  EXPECT_EQ(s.loader_us, 6000);
  EXPECT_EQ(pm::to_string(s), "dp=8,loader_workers=16,loader_us=6000");
  EXPECT_THROW(pm::parse_parallel("dp=8,loader_workers=16", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("dp=8,loader_us=6000", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("dp=8,loader_workers=4,loader_us=0", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("dp=8,loader_workers=4,loader_us=6ms", "<t>"), sim::InputError);

  const sim::Graph g = pm::load_graph("resnet50", "batch=64");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  auto run = [&](const std::string& spec) {
    const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel(spec, "<t>"));
    return std::make_pair(job, sim::simulate(c, job.graph, job.placement).step_time.ns);
  };
  const auto [plain, plain_ns] = run("dp=2");
  // 100 us per sample: the loaders hide behind the step, which does not change.
  const auto [hidden, hidden_ns] = run("dp=2,loader_workers=4,loader_us=100");
  int loaders = 0;
  for (sim::OpId o = 0; o < hidden.graph.num_ops(); ++o) {
    const sim::Op& op = hidden.graph.ops[o];
    if (op.type != "DataLoader") continue;
    ++loaders;
    EXPECT_EQ(c.devices[hidden.placement.device_of[o]].spec.kind, sim::DeviceKind::Cpu) << op.name;
    EXPECT_TRUE(op.inputs.empty() && op.control_inputs.empty()) << op.name;
  }
  EXPECT_EQ(loaders, 8);
  EXPECT_EQ(pm::to_string(hidden.spec), "dp=2,loader_workers=4,loader_us=100");
  EXPECT_NEAR(static_cast<double>(hidden_ns), static_cast<double>(plain_ns), 1e-3 * plain_ns);
  // 1 s per sample, 64 workers per replica: one sample each, 1 s alone. Two replicas on cpu0 (128
  // workers on 128 threads) take 1 s; four (256 workers) share the socket and take 2 s.
  const std::int64_t two = run("dp=2,loader_workers=64,loader_us=1000000").second;
  const std::int64_t four = run("dp=4,loader_workers=64,loader_us=1000000").second;
  EXPECT_NEAR(two * 1e-9, 1.0, 1e-3);
  EXPECT_NEAR(four * 1e-9, 2.0, 2e-3);
  sim::Graph unsized = g;  // no batch option: nothing says how many samples to load
  unsized.metadata.erase("options");
  EXPECT_THROW(pm::make_parallel(unsized, c,
                                 pm::parse_parallel("dp=2,loader_workers=2,loader_us=10", "<t>")),
               sim::InputError);
}

namespace {

// resnet50 under `graph_opt` made parallel by `par` on `c`: the job and its simulated step (ns).
std::pair<pm::ParallelJob, std::int64_t> resnet50_step(const sim::Cluster& c,
                                                       const std::string& graph_opt,
                                                       const std::string& par) {
  const pm::ParallelJob job =
      pm::make_parallel(pm::load_graph("resnet50", graph_opt), c, pm::parse_parallel(par, "<t>"));
  return {job, sim::simulate(c, job.graph, job.placement).step_time.ns};
}

}  // namespace

// The graph option input=pil,input_workers=W (NVIDIA ConvNets' PyTorch DataLoader): W loader
// workers per replica at the measured per-image CPU time of the PIL pipeline (kPilConvnetsUs,
// tools/input_pipeline_rate.py). A prefetching loader overlaps the GPU step, so the step is
// max(GPU step, images per worker x per-image time); input=synthetic (the default) adds nothing.
TEST(Parallel, PilInputPipelineCapsTheStepAtTheMeasuredPerCoreRate) {
  const auto step = [c = sim::load_cluster("dgx-a100")](const std::string& graph_opt,
                                                        const std::string& par) {
    return resnet50_step(c, graph_opt, par);
  };
  const auto [plain, plain_ns] = step("batch=64", "dp=2");
  EXPECT_EQ(step("batch=64,input=synthetic", "dp=2").second, plain_ns);
  // 16 workers per replica, 4 images each: 11.7 ms of loading hides behind the GPU step.
  const auto [pil, pil_ns] = step("batch=64,input=pil,input_workers=16", "dp=2");
  EXPECT_EQ(pil.spec.loader_workers, 16);
  EXPECT_EQ(pil.spec.loader_us, pm::kPilConvnetsUs);
  int loaders = 0;
  for (const sim::Op& op : pil.graph.ops) loaders += op.type == "DataLoader" ? 1 : 0;
  EXPECT_EQ(loaders, 32);
  EXPECT_LT(4 * pm::kPilConvnetsUs * 1000, plain_ns);
  EXPECT_NEAR(static_cast<double>(pil_ns), static_cast<double>(plain_ns), 1e-3 * plain_ns);
  // One worker per replica: 64 images x 2.924 ms = 187.1 ms, longer than the GPU step: the
  // loader is the step (1 GPU's input rate = 1e6 / 2924 = 342 img/s).
  const std::int64_t one = step("batch=64,input=pil,input_workers=1", "dp=2").second;
  EXPECT_GT(64 * pm::kPilConvnetsUs * 1000, plain_ns);
  EXPECT_NEAR(one * 1e-9, 64 * pm::kPilConvnetsUs * 1e-6, 1e-3);
  // Bad values: one-line InputErrors.
  for (const char* bad : {"batch=8,input=dali", "batch=8,input=pil", "batch=8,input_workers=4",
                          "batch=8,input=pil,input_workers=0", "batch=8,input=pil,input_workers=x",
                          "batch=8,input=synthetic,input_workers=2"})
    EXPECT_THROW(pm::load_graph("resnet50", bad), sim::InputError) << bad;
  EXPECT_THROW(step("batch=8,input=pil,input_workers=2", "dp=2,loader_workers=2,loader_us=10"),
               sim::InputError);
  // Only make_parallel adds the loader: simulate/place/compare/sweep without --parallel refuse it.
  EXPECT_THROW(pm::refuse_input_without_parallel(
                   pm::load_graph("resnet50", "batch=8,input=pil,input_workers=2"), "<t>", "input"),
               sim::InputError);
  EXPECT_NO_THROW(pm::refuse_input_without_parallel(
      pm::load_graph("resnet50", "batch=8,input=synthetic"), "<t>", "input"));
}

// input=pil_autoaugment (EfficientNet's ConvNets loader: bicubic RandomResizedCrop and ConvNets'
// AutoaugmentImageNetPolicy after the same decode) prices a worker's image at kPilAutoaugmentUs,
// the plain figure times the ratio tools/input_pipeline_rate.py measures between the two
// pipelines in one run; dp=1 carries it on one GPU.
TEST(Parallel, AutoaugmentInputPipelineCostsMoreThanThePlainOne) {
  const auto step = [c = sim::load_cluster("dgx-a100")](const std::string& graph_opt,
                                                        const std::string& par) {
    return resnet50_step(c, graph_opt, par);
  };
  EXPECT_GT(pm::kPilAutoaugmentUs, pm::kPilConvnetsUs * 13 / 10);
  EXPECT_LT(pm::kPilAutoaugmentUs, pm::kPilConvnetsUs * 17 / 10);
  const auto [aa, aa_ns] = step("batch=64,input=pil_autoaugment,input_workers=1", "dp=1");
  EXPECT_EQ(aa.spec.loader_workers, 1);
  EXPECT_EQ(aa.spec.loader_us, pm::kPilAutoaugmentUs);
  // One worker: the loader is the step, 64 images at the AutoAugment worker's time.
  EXPECT_NEAR(aa_ns * 1e-9, 64 * pm::kPilAutoaugmentUs * 1e-6, 1e-3);
  const std::int64_t plain = step("batch=64,input=pil,input_workers=1", "dp=1").second;
  EXPECT_GT(aa_ns, plain);
  for (const char* bad :
       {"batch=8,input=pil_autoaugment", "batch=8,input=autoaugment,input_workers=2",
        "batch=8,input=pil_autoaugment,input_workers=0"})
    EXPECT_THROW(pm::load_graph("resnet50", bad), sim::InputError) << bad;
  EXPECT_THROW(
      step("batch=8,input=pil_autoaugment,input_workers=2", "dp=2,loader_workers=2,loader_us=10"),
      sim::InputError);
}

TEST(Parallel, Refusals) {
  const sim::Graph g = pm::load_graph("resnet50", "batch=8");
  EXPECT_THROW(
      pm::make_parallel(g, sim::load_cluster("dgx-a100"), pm::parse_parallel("dp=16", "<t>")),
      sim::InputError);
}

namespace {

// A small GPT: 4 blocks of hidden 64, 4 heads, sequence 32, vocabulary 512.
sim::Graph small_gpt(int layers = 4) {
  return pm::load_graph("gpt", "batch=2,layers=" + std::to_string(layers) +
                                   ",hidden=64,heads=4,seq=32,vocab=512,positions=32");
}

const sim::Op& op_named(const sim::Graph& g, const std::string& name) {
  const sim::OpId o = g.op_index(name);
  EXPECT_GE(o, 0) << name;
  return g.ops[o >= 0 ? o : 0];
}

}  // namespace

// Megatron's layout: in each block the attention (QKV -> output projection) and the MLP (fc ->
// fc_proj) are column/row pairs; the split matmuls carry 1/tp of the FLOPs and weights, the norms
// stay whole; an all-reduce follows each row-parallel matmul, the token embedding and (backward)
// each column-parallel matmul's input gradient and the LM head's.
TEST(Parallel, TensorParallelSplitsMegatronPairs) {
  const sim::Graph g = small_gpt();
  const pm::TpShard s = pm::shard_tensor_parallel(g, 4, "<t>");
  EXPECT_EQ(s.pairs, 8);
  // Per block 2 forward + 2 backward; embedding, loss statistics, LM head input gradient.
  EXPECT_EQ(s.allreduces, 4 * 4 + 3);
  for (const std::string n :
       {"gpt/h0/attn/c_attn/MatMul", "gpt/h0/attn/c_proj/MatMul", "gpt/h3/mlp/c_fc/MatMul",
        "gpt/h3/mlp/c_proj/MatMul", "gpt/h1/attn/scores", "gpt/h1/attn/softmax", "gpt/head/lm_head",
        "gradients/gpt/h2/mlp/c_fc/MatMul_grad/MatMul_1"})
    EXPECT_DOUBLE_EQ(op_named(s.graph, n).flops.v * 4, op_named(g, n).flops.v) << n;
  for (const std::string n : {"gpt/h0/attn/ln_1", "gpt/h0/attn/residual", "gpt/head/ln_f"})
    EXPECT_DOUBLE_EQ(op_named(s.graph, n).flops.v, op_named(g, n).flops.v) << n;
  EXPECT_EQ(op_named(s.graph, "gpt/h0/mlp/c_fc/w").persistent.v * 4,
            op_named(g, "gpt/h0/mlp/c_fc/w").persistent.v);
  EXPECT_EQ(op_named(s.graph, "gpt/embedding/wte").persistent.v * 4,
            op_named(g, "gpt/embedding/wte").persistent.v);
  EXPECT_EQ(op_named(s.graph, "gpt/h0/mlp/c_proj/b").persistent.v,
            op_named(g, "gpt/h0/mlp/c_proj/b").persistent.v);  // added after the all-reduce
  // Forward: the row-parallel output's bias add reads the all-reduce, which reads the matmul.
  const sim::OpId ar = s.graph.op_index("tp/allreduce/gpt/h1/attn/c_proj/MatMul:0");
  ASSERT_GE(ar, 0);
  EXPECT_EQ(s.graph.ops[ar].inputs.at(0).op, s.graph.op_index("gpt/h1/attn/c_proj/MatMul"));
  EXPECT_EQ(s.graph.ops[ar].collective->bytes,
            op_named(g, "gpt/h1/attn/c_proj/MatMul").outputs[0].bytes);
  EXPECT_EQ(op_named(s.graph, "gpt/h1/attn/c_proj/BiasAdd").inputs.at(0).op, ar);
  // Backward: the QKV projection's input gradient (whole size) is all-reduced before the norm's
  // gradient reads it.
  const std::string dx = "gradients/gpt/h1/attn/c_attn/MatMul_grad/MatMul_0";
  const sim::OpId bar = s.graph.op_index("tp/allreduce/" + dx + ":0");
  ASSERT_GE(bar, 0);
  EXPECT_EQ(s.graph.ops[bar].phase, sim::Phase::Backward);
  EXPECT_EQ(op_named(s.graph, dx).outputs[0].bytes, op_named(g, dx).outputs[0].bytes);
  EXPECT_GE(s.graph.op_index("tp/allreduce/gpt/embedding/tok_lookup:0"), 0);

  // FLOPs are conserved across the tp ranks of a job: the split ops' copies add up.
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel("tp=4", "<t>"));
  double split = 0.0;
  for (const sim::Op& op : job.graph.ops)
    if (op.name.ends_with("/gpt/h2/mlp/c_fc/MatMul")) split += op.flops.v;
  EXPECT_DOUBLE_EQ(split, op_named(g, "gpt/h2/mlp/c_fc/MatMul").flops.v);
  // Weights and optimizer state per GPU: the split ones divided, so well under half of it all.
  std::int64_t whole = 0;
  for (const sim::Op& op : g.ops) whole += op.persistent.v;
  for (std::int64_t b : job.persistent_bytes) EXPECT_LT(b, whole / 3);
  const sim::Outcome o = sim::simulate(c, job.graph, job.placement);
  EXPECT_FALSE(o.oom);
  EXPECT_GT(o.step_time.ns, 0);
}

// With the biases in the GEMMs' epilogues (`bias_epilogue=true`: one MatMul with the bias as a
// third input) the same pairs are found, and a column's bias is split with its columns.
TEST(Parallel, TensorParallelSplitsEpilogueBiases) {
  const sim::Graph g =
      pm::load_graph("gpt",
                     "batch=2,layers=4,hidden=64,heads=4,seq=32,vocab=512,positions=32,"
                     "bias_epilogue=true,attention=flash");
  const pm::TpShard s = pm::shard_tensor_parallel(g, 4, "<t>");
  EXPECT_EQ(s.pairs, 8);
  for (const std::string n : {"gpt/h0/attn/c_attn/b", "gpt/h2/mlp/c_fc/b"})
    EXPECT_EQ(op_named(s.graph, n).persistent.v * 4, op_named(g, n).persistent.v) << n;
  EXPECT_EQ(op_named(s.graph, "gpt/h0/mlp/c_proj/b").persistent.v,
            op_named(g, "gpt/h0/mlp/c_proj/b").persistent.v);
  for (const std::string n : {"gpt/h0/attn/c_attn/MatMul", "gpt/h1/attn/flash_attention"})
    EXPECT_DOUBLE_EQ(op_named(s.graph, n).flops.v * 4, op_named(g, n).flops.v) << n;
}
TEST(Parallel, TensorParallelRefusesOtherGraphs) {
  const sim::Graph g = pm::load_graph("resnet50", "batch=8");
  EXPECT_THROW(pm::shard_tensor_parallel(g, 2, "<t>"), sim::InputError);
}

// Stages: contiguous layer blocks balanced by compute; activations go forward and their
// gradients back through send/recv once per micro-batch; the tied embedding's gradient once per
// step; every stage runs 1F1B.
TEST(Parallel, PipelineStagesSendRecvAndOneFOneB) {
  const sim::Graph g = small_gpt();
  const pm::StagePlan plan = pm::plan_stages(g, 2, "<t>");
  ASSERT_EQ(plan.blocks_per_stage.size(), 2u);
  EXPECT_EQ(plan.blocks_per_stage[0] + plan.blocks_per_stage[1], 6);  // embedding, 4 blocks, head
  EXPECT_EQ(plan.stage[g.op_index("gpt/embedding/tok_lookup")], 0);
  EXPECT_EQ(plan.stage[g.op_index("gpt/head/lm_head")], 1);
  EXPECT_EQ(plan.stage[g.op_index("gradients/gpt/head/lm_head_grad/MatMul_0")], 1);
  EXPECT_LT(std::max(plan.flops_per_stage[0], plan.flops_per_stage[1]),
            0.75 * (plan.flops_per_stage[0] + plan.flops_per_stage[1]));

  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const int mb = 4;
  const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel("pp=2,mb=4", "<t>"));
  int sends = 0, recvs = 0;
  for (const sim::Op& op : job.graph.ops) {
    sends += op.type == "Send";
    recvs += op.type == "Recv";
    if (op.type == "Send") EXPECT_EQ(op.collective->kind, sim::CollectiveKind::SendRecv);
  }
  EXPECT_EQ(sends, 2 * mb + 1);
  EXPECT_EQ(recvs, sends);
  // 1F1B on stage 0 of 2 with 4 micro-batches: F0 F1 B0 F2 B1 F3 B2 B3. The forward of
  // micro-batch 2 waits for the end of backward 0; on stage 1 (F0 B0 F1 B1 ...) forward 1 waits
  // for backward 0.
  auto waits_for = [&](const std::string& op, const std::string& prefix) {
    for (sim::OpId c : op_named(job.graph, op).control_inputs)
      if (job.graph.ops[c].name.starts_with(prefix)) return true;
    return false;
  };
  EXPECT_TRUE(waits_for("pp0/mb2/input/ids", "pp0/mb0/gradients/"));
  EXPECT_FALSE(waits_for("pp0/mb1/input/ids", "pp0/mb0/gradients/"));
  EXPECT_TRUE(waits_for("pp0/mb1/input/ids", "pp0/mb0/gpt/"));
  EXPECT_TRUE(waits_for("pp1/mb1/input/labels", "pp1/mb0/gradients/"));
  // The update reads the last micro-batch's gradient, which summed the earlier ones.
  const sim::Op& u = op_named(job.graph, "pp0/update/gpt/h0/mlp/c_fc/w");
  EXPECT_TRUE(job.graph.ops[u.inputs.at(1).op].name.starts_with("pp0/mb3/"));
  // Each stage holds its own weights; the tied embedding on both ends.
  EXPECT_GE(job.graph.op_index("pp0/gpt/embedding/wte"), 0);
  EXPECT_GE(job.graph.op_index("pp1/gpt/embedding/wte"), 0);
  EXPECT_LT(job.graph.op_index("pp1/gpt/h0/attn/c_attn/w"), 0);
  // Memory per device: each stage's weights and optimizer state, together all of them plus the
  // second copies of the embedding and of the attention mask (a constant every stage's layers
  // read).
  std::int64_t whole = 0, wte = 0, mask = 0;
  for (const sim::Op& op : g.ops) whole += op.persistent.v;
  wte = op_named(g, "gpt/embedding/wte").persistent.v;
  mask = op_named(g, "input/attention_mask").persistent.v;
  ASSERT_EQ(job.persistent_bytes.size(), 2u);
  EXPECT_LT(job.persistent_bytes[0], whole);
  EXPECT_LT(job.persistent_bytes[1], whole);
  EXPECT_EQ(job.persistent_bytes[0] + job.persistent_bytes[1], whole + wte + mask);
  // The pipeline beats one GPU running the same micro-batches, and pays a bubble.
  const pm::ParallelJob one = pm::make_parallel(g, c, pm::parse_parallel("mb=4", "<t>"));
  const sim::Outcome t1 = sim::simulate(c, one.graph, one.placement);
  const sim::Outcome t2 = sim::simulate(c, job.graph, job.placement);
  EXPECT_LT(t2.step_time, t1.step_time);
  EXPECT_GT(t2.step_time.ns, t1.step_time.ns / 2);
  EXPECT_DOUBLE_EQ(job.analytic_bubble(), 1.0 / 5.0);
  EXPECT_THROW(pm::make_parallel(small_gpt(2), c, pm::parse_parallel("pp=5", "<t>")),
               sim::InputError);  // 4 blocks
}

// dp x tp x pp: Megatron's rank order (tp innermost, then dp, then the stage), gradient buckets
// all-reduced among the replicas of one (tp rank, stage).
TEST(Parallel, ProductPlacesRanksAsMegatron) {
  const sim::Graph g = small_gpt();
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job =
      pm::make_parallel(g, c, pm::parse_parallel("dp=2,tp=2,pp=2,mb=2", "<t>"));
  const auto gpus = c.gpus();
  auto device_of = [&](const std::string& n) {
    const sim::OpId o = job.graph.op_index(n);
    EXPECT_GE(o, 0) << n;
    return job.placement.device_of[o >= 0 ? o : 0];
  };
  EXPECT_EQ(device_of("dp0/tp0/pp0/mb0/gpt/embedding/tok_lookup"), gpus[0]);
  EXPECT_EQ(device_of("dp0/tp1/pp0/mb0/gpt/embedding/tok_lookup"), gpus[1]);
  EXPECT_EQ(device_of("dp1/tp0/pp0/mb1/gpt/embedding/tok_lookup"), gpus[2]);
  EXPECT_EQ(device_of("dp1/tp1/pp1/mb1/gpt/head/lm_head"), gpus[7]);
  std::map<std::string, int> ranks;  // call id -> rank ops
  for (const sim::Op& op : job.graph.ops)
    if (op.collective) ++ranks[op.collective->id];
  for (const auto& [id, n] : ranks) {
    if (id.starts_with("ddp/")) EXPECT_EQ(n, 2) << id;  // dp
    if (id.starts_with("tp/")) EXPECT_EQ(n, 2) << id;   // tp
    if (id.starts_with("pp/")) EXPECT_EQ(n, 2) << id;   // send, recv
  }
  EXPECT_GT(job.buckets, 0);
  const sim::Outcome o = sim::simulate(c, job.graph, job.placement);
  EXPECT_FALSE(o.oom);
  EXPECT_THROW(pm::make_parallel(g, c, pm::parse_parallel("dp=2,tp=4,pp=2", "<t>")),
               sim::InputError);  // 16 GPUs on 8
}

// Full recomputation: each layer's forward ops again in the backward pass, read by that layer's
// gradient ops and started when the gradient reaches the layer; the step holds fewer activations
// and computes more.
TEST(Parallel, RecomputationCopiesLayersIntoTheBackwardPass) {
  const sim::Graph g = small_gpt();
  const sim::Graph r = pm::recompute_layers(g, "<t>");
  int forward_in_blocks = 0;
  for (const sim::Op& op : g.ops)
    forward_in_blocks += op.phase == sim::Phase::Forward && op.layer.starts_with("gpt/h") &&
                         !op.layer.starts_with("gpt/head");
  EXPECT_EQ(r.num_ops(), g.num_ops() + forward_in_blocks);
  const sim::Op& c = op_named(r, "recompute/gpt/h1/attn/c_attn/MatMul");
  EXPECT_EQ(c.phase, sim::Phase::Backward);
  EXPECT_EQ(c.flops, op_named(g, "gpt/h1/attn/c_attn/MatMul").flops);
  EXPECT_TRUE(r.ops[c.inputs.at(0).op].name.starts_with("recompute/gpt/h1/attn/ln_1"));
  // The weight gradient reads the recomputed input, not the forward pass's.
  const sim::Op& dw = op_named(r, "gradients/gpt/h1/attn/c_attn/MatMul_grad/MatMul_1");
  bool reads_copy = false;
  for (const sim::TensorRef& t : dw.inputs)
    reads_copy = reads_copy || r.ops[t.op].name.starts_with("recompute/");
  EXPECT_TRUE(reads_copy);
  // The layer's first recomputed op waits for a gradient op of a later layer (its co-location
  // group: the forward op it differentiates).
  const sim::Op& entry = op_named(r, "recompute/gpt/h1/attn/ln_1");
  ASSERT_FALSE(entry.control_inputs.empty());
  for (sim::OpId i : entry.control_inputs) {
    EXPECT_EQ(r.ops[i].phase, sim::Phase::Backward);
    EXPECT_TRUE(r.group_of(i).starts_with("gpt/h2/")) << r.ops[i].name;
  }
  const sim::Cluster cl = sim::load_cluster("dgx-a100");
  const sim::Graph big = pm::load_graph("gpt", "batch=8,layers=4,hidden=256,heads=4,seq=256");
  const pm::ParallelJob plain = pm::make_parallel(big, cl, pm::parse_parallel("tp=2", "<t>"));
  const pm::ParallelJob rc =
      pm::make_parallel(big, cl, pm::parse_parallel("tp=2,recompute=full", "<t>"));
  const sim::Outcome a = sim::simulate(cl, plain.graph, plain.placement);
  const sim::Outcome b = sim::simulate(cl, rc.graph, rc.placement);
  EXPECT_GT(b.step_time, a.step_time);
  auto peak = [&](const sim::Outcome& o) {
    for (const sim::DeviceOutcome& d : o.devices)
      if (d.name == "gpu0") return d.peak_memory.v;
    return std::int64_t{0};
  };
  EXPECT_GT(peak(b), 0);
  EXPECT_LT(peak(b), peak(a));
}

// The bubble appears in the simulated step: the slowest stage's GPU idles (pp-1)/(mb+pp-1) of the
// step when stages are balanced; 1F1B keeps at most pp micro-batches' activations on the first
// stage, so doubling the micro-batches does not raise its peak memory (all-forward-first would).
TEST(Parallel, PipelineBubbleAndInFlightMemoryFollowOneFOneB) {
  const sim::Graph g =
      pm::load_graph("gpt", "batch=2,layers=8,hidden=512,heads=8,seq=512,vocab=512,positions=512");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  auto run = [&](const std::string& layout, double* idle, std::int64_t* peak0) {
    const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel(layout, "<t>"));
    const sim::Outcome o = sim::simulate(c, job.graph, job.placement);
    // The bubble is the idle besides the GPU's own gap after each queued kernel (the A100's,
    // DeviceSpec::kernel_gap), which the analytic bubble leaves out: that share is removed.
    double busiest = 0.0, gap_share = 0.0;
    for (const sim::DeviceOutcome& d : o.devices) {
      if (d.utilization > busiest) {
        busiest = d.utilization;
        const sim::Duration gap = c.devices[c.device_index(d.name)].spec.kernel_gap;
        gap_share = static_cast<double>(d.ops * gap.ns) / static_cast<double>(o.step_time.ns);
      }
      if (d.name == "gpu0") *peak0 = d.peak_memory.v;
    }
    *idle = 1.0 - busiest - gap_share;
    return job.analytic_bubble();
  };
  double idle8 = 0.0, idle16 = 0.0;
  std::int64_t peak8 = 0, peak16 = 0;
  const double bubble8 = run("pp=4,mb=8", &idle8, &peak8);
  const double bubble16 = run("pp=4,mb=16", &idle16, &peak16);
  EXPECT_NEAR(idle8, bubble8, 0.03);
  EXPECT_NEAR(idle16, bubble16, 0.03);
  EXPECT_LT(idle16, idle8);
  EXPECT_GT(peak8, 0);
  EXPECT_LT(static_cast<double>(peak16), 1.1 * static_cast<double>(peak8));
}

// An imported transformer (torch.nn.TransformerEncoder exported to ONNX: Transpose->MatMul and
// Gemm linears, decomposed layer norms, shape arithmetic): the same pairs are found, 2 per layer,
// and it pipelines; an imported CNN is refused.
TEST(Parallel, ImportedOnnxTransformerIsSplit) {
  const std::string dir = PLACESIM_TEST_DATA "/onnx/";
  const sim::Graph g = pm::load_graph(dir + "transformer_encoder_params.onnx", "training");
  const pm::TpShard s = pm::shard_tensor_parallel(g, 2, "<t>");
  EXPECT_EQ(s.pairs, 4);
  // Per layer: attention out_proj and linear2 forward, in_proj and linear1 input gradients;
  // the embedding (forward) and the head's input gradient.
  EXPECT_EQ(s.allreduces, 2 * 4 + 2);
  EXPECT_GE(s.graph.op_index("tp/allreduce//encoder/layers.1/self_attn/Gemm:0"), 0);
  EXPECT_DOUBLE_EQ(op_named(s.graph, "/encoder/layers.1/linear1/MatMul").flops.v * 2,
                   op_named(g, "/encoder/layers.1/linear1/MatMul").flops.v);
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job =
      pm::make_parallel(g, c, pm::parse_parallel("dp=2,tp=2,pp=2,mb=2", "<t>"));
  EXPECT_FALSE(sim::simulate(c, job.graph, job.placement).oom);
  EXPECT_THROW(pm::make_parallel(pm::load_graph(dir + "resnet18.onnx", "training"), c,
                                 pm::parse_parallel("tp=2", "<t>")),
               sim::InputError);
}

// Separate query, key and value linears (GPT-NeoX/LLaMA-style code): Megatron all-reduces their
// summed input gradient once, as one fused QKV linear's; before the weight gradients.
TEST(Parallel, SeparateQkvInputGradientsAreAllReducedOnce) {
  const std::string dir = PLACESIM_TEST_DATA "/onnx/";
  const sim::Graph g = pm::load_graph(dir + "gpt_separate_qkv.onnx", "training");
  const pm::TpShard s = pm::shard_tensor_parallel(g, 2, "<t>");
  EXPECT_EQ(s.pairs, 4);
  // Per layer: out and fc2 forward, the fused q/k/v and fc1 input gradients; embedding and head.
  EXPECT_EQ(s.allreduces, 4 * 2 + 2);
  const sim::OpId root = s.graph.op_index("gradients//blocks/blocks.1/ln1/Add_1_0/acc_2");
  ASSERT_GE(root, 0);
  const sim::OpId ar =
      s.graph.op_index("tp/allreduce/gradients//blocks/blocks.1/ln1/Add_1_0/acc_2:0");
  ASSERT_GE(ar, 0);
  for (const char* l : {"q", "k", "v"}) {
    const std::string dx = std::string("gradients//blocks/blocks.1/") + l + "/MatMul_grad/MatMul_0";
    EXPECT_LT(s.graph.op_index("tp/allreduce/" + dx + ":0"), 0) << l;
    const sim::Op& dw =
        op_named(s.graph, std::string("gradients//blocks/blocks.1/") + l + "/MatMul_grad/MatMul_1");
    EXPECT_NE(std::find(dw.control_inputs.begin(), dw.control_inputs.end(), root),
              dw.control_inputs.end())
        << l;
  }
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel("tp=2", "<t>"));
  EXPECT_FALSE(sim::simulate(c, job.graph, job.placement).oom);
}

// Mixed precision: matmuls on the BF16 peak, activations half size, 14 bytes a parameter resident
// (BF16 weights, F32 master copy and Adam's two F32 moments) against F32's 12.
TEST(Parallel, MixedPrecisionHalvesActivationsAndKeepsMasterWeights) {
  const sim::Graph f = small_gpt();
  const sim::Graph h = pm::load_graph(
      "gpt", "batch=2,layers=4,hidden=64,heads=4,seq=32,vocab=512,positions=32,precision=bf16");
  EXPECT_EQ(h.metadata.at("precision"), "bf16");
  const std::string mm = "gpt/h0/mlp/c_fc/MatMul";
  EXPECT_EQ(op_named(h, mm).dtype, sim::Dtype::BF16);
  EXPECT_EQ(op_named(h, mm).outputs[0].bytes.v * 2, op_named(f, mm).outputs[0].bytes.v);
  EXPECT_EQ(op_named(h, mm).flops, op_named(f, mm).flops);
  // (Constants, here the attention mask, stay F32 and are not parameters.)
  std::int64_t pf = 0, ph = 0;
  for (const sim::Op& op : f.ops) pf += op.type == "Const" ? 0 : op.persistent.v;
  for (const sim::Op& op : h.ops) ph += op.type == "Const" ? 0 : op.persistent.v;
  EXPECT_EQ(ph * 12, pf * 14);
  EXPECT_THROW(pm::load_graph("gpt", "precision=f8"), sim::InputError);
}

// torch.cuda.amp (autocast + GradScaler, as NVIDIA's ConvNets and Lambda's runs use it) keeps the
// parameters F32, so param.grad and DDP's all-reduce are F32 (GradScaler refuses F16 gradients):
// grads=f32 keeps the weight gradients at 4 bytes a parameter, as F32 training has them, while the
// activations stay half. Without it (Megatron-LM's half gradients) the all-reduce is half that.
TEST(Parallel, AutocastGradientsStayF32ForTheAllReduce) {
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto grads = [&](const sim::Graph& g) {
    return pm::make_parallel(g, c, pm::parse_parallel("dp=2", "<t>")).gradient_bytes;
  };
  const sim::Graph f = pm::load_graph("resnet50", "batch=8");
  const sim::Graph h = pm::load_graph("resnet50", "batch=8,precision=f16");
  const sim::Graph a = pm::load_graph("resnet50", "batch=8,precision=f16,grads=f32");
  EXPECT_EQ(a.metadata.at("grads"), "f32");
  EXPECT_EQ(h.metadata.count("grads"), 0U);
  EXPECT_EQ(grads(h) * 2, grads(f));
  EXPECT_EQ(grads(a), grads(f));
  EXPECT_EQ(grads(pm::load_graph("resnet50", "batch=8,precision=f16,grads=half")), grads(h));
  // Activations stay half: the first convolution's output is half of F32's in both.
  const auto conv = std::find_if(f.ops.begin(), f.ops.end(), [](const sim::Op& op) {
    return op.phase == sim::Phase::Forward && op.type == "Conv2D";
  });
  ASSERT_NE(conv, f.ops.end());
  EXPECT_EQ(op_named(a, conv->name).outputs[0].bytes.v * 2, conv->outputs[0].bytes.v);
  EXPECT_EQ(op_named(a, conv->name).dtype, sim::Dtype::F16);
  EXPECT_THROW(pm::load_graph("resnet50", "batch=8,grads=f32"), sim::InputError);
  EXPECT_THROW(pm::load_graph("resnet50", "batch=8,precision=f32,grads=f32"), sim::InputError);
  EXPECT_THROW(pm::load_graph("resnet50", "batch=8,precision=f16,grads=f8"), sim::InputError);
}

namespace {

// Rank 0's data-parallel kernels whose names start "dp0/ddp/<what>": how many and the bytes they
// read (each writes as many as it reads).
std::pair<std::int64_t, std::int64_t> ddp_kernels(const pm::ParallelJob& j,
                                                  const std::string& what) {
  std::int64_t ops = 0, bytes = 0;
  for (const sim::Op& op : j.graph.ops)
    if (op.name.rfind("dp0/ddp/" + what, 0) == 0) {
      ++ops;
      bytes += op.bytes_read.v;
      EXPECT_EQ(op.bytes_written, op.bytes_read) << op.name;
    }
  return {ops, bytes};
}

}  // namespace

// DDP's own kernels (torch/csrc/distributed/c10d/reducer.cpp, docs/parallel.md "Data parallel"):
// each gradient is scaled by 1/world into its bucket view before the bucket's all-reduce, and,
// unless gradient_as_bucket_view (bucket_view=true), copied back to param.grad after it, before the
// optimizer. Both read and write every gradient once on the compute stream: the step grows by at
// least the copies' memory time, which bucket_view=true removes.
TEST(Parallel, DdpScalesIntoBucketsAndCopiesBack) {
  EXPECT_FALSE(pm::parse_parallel("dp=2", "<t>").bucket_view);
  EXPECT_TRUE(pm::parse_parallel("dp=2,bucket_view=true", "<t>").bucket_view);
  EXPECT_EQ(pm::to_string(pm::parse_parallel("dp=2,bucket_view=true", "<t>")),
            "dp=2,bucket_view=true");
  EXPECT_THROW(pm::parse_parallel("dp=2,bucket_view=yes", "<t>"), sim::InputError);
  const sim::Graph g = pm::load_graph("resnet50", "batch=32");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob copy = pm::make_parallel(g, c, pm::parse_parallel("dp=2", "<t>"));
  const pm::ParallelJob view =
      pm::make_parallel(g, c, pm::parse_parallel("dp=2,bucket_view=true", "<t>"));
  const int n = gradients(g);
  EXPECT_EQ(ddp_kernels(copy, "scale_into_bucket"),
            std::pair(std::int64_t{n}, copy.gradient_bytes));
  EXPECT_EQ(ddp_kernels(copy, "copy_bucket"), std::pair(std::int64_t{n}, copy.gradient_bytes));
  EXPECT_EQ(ddp_kernels(view, "scale_into_bucket"),
            std::pair(std::int64_t{n}, view.gradient_bytes));
  EXPECT_EQ(ddp_kernels(view, "copy_bucket").first, 0);
  // Every all-reduce waits for its bucket's scale ops; every copy back reads its bucket.
  for (const sim::Op& op : copy.graph.ops) {
    if (op.collective && op.name.rfind("dp0/", 0) == 0) {
      int scales = 0;
      for (sim::OpId x : op.control_inputs)
        scales += copy.graph.ops[x].name.rfind("dp0/ddp/scale_into_bucket", 0) == 0;
      EXPECT_EQ(static_cast<std::size_t>(scales), op.inputs.size()) << op.name;
    }
    if (op.name.rfind("dp0/ddp/copy_bucket", 0) == 0) {
      ASSERT_EQ(op.inputs.size(), 1U);
      EXPECT_TRUE(copy.graph.ops[op.inputs[0].op].collective.has_value()) << op.name;
    }
  }
  const sim::Outcome with_copies = sim::simulate(c, copy.graph, copy.placement);
  const sim::Outcome views = sim::simulate(c, view.graph, view.placement);
  const double hbm = c.devices[c.gpus()[0]].spec.memory_bandwidth.bytes_per_s;
  const double copies_s = 2.0 * static_cast<double>(copy.gradient_bytes) / hbm;
  EXPECT_GE(with_copies.step_time.seconds() - views.step_time.seconds(), copies_s);
}

// The framework's gradient exchange (ddp=torch|horovod|contiguous, docs/parallel.md "The
// framework's kernels around the all-reduce"): torch launches a kernel per gradient each way,
// Horovod batched copies of up to 160 tensors into and out of its fusion buffer
// (BatchedD2DMemcpy), Megatron-LM's contiguous buffer one in-place scale per bucket and no copy.
// Each moves every gradient's bytes the same number of times as its source does; fewer kernels
// pay fewer per-kernel minimums and launches, so both steps are shorter than torch's.
TEST(Parallel, DdpFrameworksRunTheirOwnKernelsAroundTheAllReduce) {
  EXPECT_EQ(pm::parse_parallel("dp=2", "<t>").ddp, pm::ParallelSpec::Ddp::Torch);
  EXPECT_EQ(pm::parse_parallel("dp=2,ddp=torch", "<t>").ddp, pm::ParallelSpec::Ddp::Torch);
  EXPECT_EQ(pm::to_string(pm::parse_parallel("dp=2,ddp=horovod", "<t>")), "dp=2,ddp=horovod");
  EXPECT_EQ(pm::to_string(pm::parse_parallel("dp=2,ddp=contiguous", "<t>")), "dp=2,ddp=contiguous");
  EXPECT_THROW(pm::parse_parallel("dp=2,ddp=mxnet", "<t>"), sim::InputError);
  const sim::Graph g = pm::load_graph("resnet50", "batch=32");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto job = [&](const std::string& spec) {
    return pm::make_parallel(g, c, pm::parse_parallel(spec, "<t>"));
  };
  const pm::ParallelJob torch = job("dp=2"), hvd = job("dp=2,ddp=horovod"),
                        meg = job("dp=2,ddp=contiguous");
  const int n = gradients(g);
  ASSERT_GT(n, 100);
  ASSERT_EQ(hvd.gradient_bytes, torch.gradient_bytes);
  // Horovod: per bucket of k > 1 gradients ceil(k / 160) kernels each way; a lone gradient none.
  std::int64_t batched = 0, fused_bytes = 0;
  for (const sim::Op& op : hvd.graph.ops)
    if (op.collective && op.name.rfind("dp0/ddp/allreduce", 0) == 0 && op.inputs.size() > 1) {
      batched += (static_cast<std::int64_t>(op.inputs.size()) + 159) / 160;
      fused_bytes += op.outputs[0].bytes.v;
    }
  EXPECT_GT(batched, 0);
  EXPECT_LT(batched, n / 10);
  EXPECT_EQ(ddp_kernels(hvd, "memcpy_in_fusion_buffer"), std::pair(batched, fused_bytes));
  EXPECT_EQ(ddp_kernels(hvd, "memcpy_out_fusion_buffer"), std::pair(batched, fused_bytes));
  EXPECT_EQ(ddp_kernels(hvd, "scale_into_bucket").first, 0);
  EXPECT_EQ(ddp_kernels(hvd, "copy_bucket").first, 0);
  // Megatron: one scale of each bucket, nothing copied back.
  EXPECT_EQ(ddp_kernels(meg, "scale_bucket"),
            std::pair(std::int64_t{meg.buckets}, meg.gradient_bytes));
  EXPECT_EQ(ddp_kernels(meg, "copy_bucket").first + ddp_kernels(meg, "memcpy").first, 0);
  // Every Horovod copy out reads its bucket's all-reduce and nothing waits on the backward's end.
  for (const sim::Op& op : hvd.graph.ops)
    if (op.name.rfind("dp0/ddp/memcpy_out", 0) == 0) {
      ASSERT_EQ(op.inputs.size(), 1U);
      EXPECT_TRUE(hvd.graph.ops[op.inputs[0].op].collective.has_value()) << op.name;
      EXPECT_TRUE(op.control_inputs.empty()) << op.name;
    }
  const double t = sim::simulate(c, torch.graph, torch.placement).step_time.seconds();
  const double h = sim::simulate(c, hvd.graph, hvd.placement).step_time.seconds();
  const double m = sim::simulate(c, meg.graph, meg.placement).step_time.seconds();
  EXPECT_LT(h, t);
  EXPECT_LT(m, t);
}

// apex.parallel.DistributedDataParallel (ddp=apex, DeepLearningExamples GNMT's exchange): buckets
// that close on the gradient reaching 1e7 elements (message_size), in backward order; one cat per
// bucket of several gradients before its all-reduce, then an in-place average of the bucket and
// multi_tensor_scale launches copying it back; every update waits for its bucket's last launch.
// On the code before, ddp=apex is refused.
TEST(Parallel, ApexDdpShipsBucketsAtMessageSizeAndCopiesBackByMultiTensorScale) {
  const pm::ParallelSpec s = pm::parse_parallel("dp=2,ddp=apex", "<t>");
  EXPECT_EQ(s.ddp, pm::ParallelSpec::Ddp::Apex);
  EXPECT_EQ(pm::to_string(s), "dp=2,ddp=apex");
  const sim::Graph g = pm::load_graph(
      "nmt", "layers=4,hidden=1024,src_len=8,tgt_len=8,vocab=32320,batch=8,optimizer=adam");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob apex = pm::make_parallel(g, c, s);
  const pm::ParallelJob torch = pm::make_parallel(g, c, pm::parse_parallel("dp=2", "<t>"));
  ASSERT_EQ(apex.gradient_bytes, torch.gradient_bytes);
  ASSERT_GT(apex.buckets, 2);
  std::int64_t flatten_bytes = 0, several = 0;
  for (const sim::Op& op : apex.graph.ops) {
    if (!op.collective || op.name.rfind("dp0/", 0) != 0) continue;
    std::int64_t elements = 0, last = 0;
    for (const sim::TensorRef& t : op.inputs) {
      const sim::TensorOut& x = apex.graph.ops[t.op].outputs[t.output];
      last = x.bytes.v / sim::dtype_size(x.dtype);
      elements += last;
    }
    // Every bucket but the last reached message_size only with its last gradient.
    if (op.name != "dp0/ddp/allreduce_bucket" + std::to_string(apex.buckets - 1)) {
      EXPECT_GE(elements, pm::kApexMessageSize) << op.name;
      EXPECT_LT(elements - last, pm::kApexMessageSize) << op.name;
    }
    if (op.inputs.size() > 1) {
      ++several;
      flatten_bytes += op.outputs[0].bytes.v;
    }
  }
  EXPECT_EQ(ddp_kernels(apex, "flatten_bucket"), std::pair(several, flatten_bytes));
  EXPECT_EQ(ddp_kernels(apex, "average_bucket"),
            std::pair(std::int64_t{apex.buckets}, apex.gradient_bytes));
  EXPECT_EQ(ddp_kernels(apex, "unflatten_bucket").second, apex.gradient_bytes);
  EXPECT_EQ(ddp_kernels(apex, "scale_into_bucket").first + ddp_kernels(apex, "copy_bucket").first,
            0);
  // Each update waits for an unflatten launch of its bucket, none for the backward's end.
  for (const sim::Op& op : apex.graph.ops)
    if (op.phase == sim::Phase::Update && op.name.rfind("dp0/", 0) == 0) {
      int waits = 0;
      for (const sim::OpId x : op.control_inputs)
        waits += apex.graph.ops[x].name.rfind("dp0/ddp/unflatten_bucket", 0) == 0;
      EXPECT_GT(waits, 0) << op.name;
    }
  const double a = sim::simulate(c, apex.graph, apex.placement).step_time.seconds();
  EXPECT_GT(a, 0.0);
  EXPECT_EQ(a, sim::simulate(c, apex.graph, apex.placement).step_time.seconds());
}

// apex DDP away from its defaults: `DDP(model, message_size=250000000,
// gradient_predivide_factor=get_world_size())` (jeonsworld/ViT-pytorch @ 07c406bf train.py) as
// apex_message_size=250000000,apex_predivide=true. apex ships a bucket when the gradient that
// reaches 250M elements is in it, so BERT-base's ~110M gradients go in one bucket at the end of the
// backward pass and BERT-large's ~335M in two, the first closing on the gradient past 250M; the
// predivide is one in-place mul_ of each flat bucket before its all-reduce. On the code before,
// apex_message_size is refused (and at apex's default 1e7 BERT-large has 26 buckets).
TEST(Parallel, ApexMessageSizeShipsOneOrTwoBertBucketsAndPredivides) {
  const pm::ParallelSpec s =
      pm::parse_parallel("dp=2,ddp=apex,apex_message_size=250000000,apex_predivide=true", "<t>");
  EXPECT_EQ(s.apex_message_size, 250'000'000);
  EXPECT_TRUE(s.apex_predivide);
  EXPECT_EQ(pm::to_string(s), "dp=2,ddp=apex,apex_message_size=250000000,apex_predivide=true");
  EXPECT_EQ(pm::parse_parallel("dp=2,ddp=apex", "<t>").apex_message_size, pm::kApexMessageSize);
  for (const char* bad :
       {"dp=2,apex_message_size=250000000", "dp=2,ddp=torch,apex_predivide=true",
        "dp=2,ddp=apex,apex_message_size=0", "dp=2,ddp=apex,apex_message_size=2e8",
        "dp=2,ddp=apex,apex_message_size=1000000000001", "dp=2,ddp=apex,apex_predivide=yes"})
    EXPECT_THROW(pm::parse_parallel(bad, "<t>"), sim::InputError) << bad;
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const std::string bert = "heads=16,vocab=30522,positions=512,seq=32,masked=1,batch=2";
  const sim::Graph large = pm::load_graph("gpt", "layers=24,hidden=1024," + bert);
  const sim::Graph base = pm::load_graph("gpt", "layers=12,hidden=768," + bert);
  const pm::ParallelJob l = pm::make_parallel(large, c, s);
  const pm::ParallelJob b = pm::make_parallel(base, c, s);
  const pm::ParallelJob l7 =
      pm::make_parallel(large, c, pm::parse_parallel("dp=2,ddp=apex", "<t>"));
  EXPECT_EQ(b.buckets, 1);
  EXPECT_EQ(l.buckets, 2);
  EXPECT_GT(l7.buckets, 20);
  // BERT-large's first bucket reached 250M elements only with its last gradient.
  const sim::Op& first = op_named(l.graph, "dp0/ddp/allreduce_bucket0");
  std::int64_t elements = 0, last = 0;
  for (const sim::TensorRef& t : first.inputs) {
    const sim::TensorOut& x = l.graph.ops[t.op].outputs[t.output];
    last = x.bytes.v / sim::dtype_size(x.dtype);
    elements += last;
  }
  EXPECT_GE(elements, 250'000'000);
  EXPECT_LT(elements - last, 250'000'000);
  EXPECT_GT(elements, l.gradient_bytes / 4 * 2 / 3);  // most of the model: little left to overlap
  // One predivide per bucket over the whole bucket, which each all-reduce waits for.
  EXPECT_EQ(ddp_kernels(l, "predivide_bucket"), std::pair(std::int64_t{2}, l.gradient_bytes));
  EXPECT_EQ(ddp_kernels(b, "predivide_bucket"), std::pair(std::int64_t{1}, b.gradient_bytes));
  EXPECT_EQ(ddp_kernels(l7, "predivide_bucket").first, 0);
  for (const sim::Op& op : l.graph.ops)
    if (op.collective && op.name.rfind("dp0/", 0) == 0) {
      ASSERT_EQ(op.control_inputs.size(), 1U) << op.name;
      EXPECT_EQ(l.graph.ops[op.control_inputs[0]].name.rfind("dp0/ddp/predivide_bucket", 0), 0U);
    }
}

// Gradient accumulation (accumulate=K, docs/parallel.md "Gradient accumulation") with NVIDIA
// BERT's flat exchange (ddp=flat, --allreduce_post_accumulation): the accumulating micro-batch has
// forward and backward, one F32 accumulation add per gradient and neither an exchange nor an
// update; the last micro-batch has the adds, then one multi_tensor_scale into a flat F16 buffer,
// one all-reduce of 2 bytes a parameter, one scale back, and the update waits for it.
TEST(Parallel, AccumulationAddsEveryGradientAndExchangesOnceFlat) {
  const pm::ParallelSpec s = pm::parse_parallel("dp=2,accumulate=8,ddp=flat", "<t>");
  EXPECT_EQ(s.accumulate, 8);
  EXPECT_EQ(s.ddp, pm::ParallelSpec::Ddp::Flat);
  EXPECT_EQ(pm::to_string(s), "dp=2,ddp=flat,accumulate=8");
  EXPECT_EQ(pm::parse_parallel("dp=2", "<t>").accumulate, 1);
  EXPECT_THROW(pm::parse_parallel("dp=2,accumulate=0", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("pp=2,mb=4,accumulate=2", "<t>"), sim::InputError);
  const sim::Graph g = pm::load_graph(
      "gpt",
      "layers=2,hidden=64,heads=2,seq=32,vocab=512,positions=32,batch=2,optimizer=lamb,"
      "optimizer_impl=fused,precision=f16");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job = pm::make_parallel(g, c, s);
  const int n = gradients(g);
  ASSERT_GT(n, 10);
  // Elements and half bytes of the gradients (precision=f16: F16 weight gradients).
  std::int64_t elems = 0;
  std::set<std::pair<sim::OpId, std::int32_t>> seen;
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Update)
      for (const sim::TensorRef& t : op.inputs)
        if (g.ops[t.op].phase == sim::Phase::Backward && seen.insert({t.op, t.output}).second) {
          const sim::TensorOut& x = g.ops[t.op].outputs[t.output];
          ASSERT_EQ(x.dtype, sim::Dtype::F16);
          elems += x.bytes.v / 2;
        }
  // The accumulating micro-batch: one replica, an add per gradient (F16 + F32 read, F32 written).
  int adds = 0, updates = 0, collectives = 0;
  std::int64_t read = 0, written = 0;
  for (const sim::Op& op : job.accumulating.ops) {
    updates += op.phase == sim::Phase::Update;
    collectives += op.collective.has_value();
    if (op.name.rfind("accumulate/", 0) != 0) continue;
    ++adds;
    read += op.bytes_read.v;
    written += op.bytes_written.v;
  }
  EXPECT_EQ(adds, n);
  EXPECT_EQ(updates, 0);
  EXPECT_EQ(collectives, 0);
  EXPECT_EQ(read, 6 * elems);
  EXPECT_EQ(written, 4 * elems);
  // The last micro-batch of replica 0: the adds, one flat all-reduce, the two scales.
  int flat = 0, rank_adds = 0;
  sim::OpId back = -1;
  for (sim::OpId o = 0; o < job.graph.num_ops(); ++o) {
    const sim::Op& op = job.graph.ops[o];
    if (op.name.rfind("dp0/", 0) != 0) continue;
    rank_adds += op.name.rfind("dp0/accumulate/", 0) == 0;
    if (op.collective && op.collective->kind == sim::CollectiveKind::AllReduce) {
      ++flat;
      EXPECT_EQ(op.collective->bytes.v, 2 * elems);
      ASSERT_EQ(op.control_inputs.size(), 1U);
      const sim::Op& into = job.graph.ops[op.control_inputs[0]];
      EXPECT_EQ(into.name, "dp0/ddp/scale_into_flat");
      EXPECT_EQ(into.bytes_read.v, 4 * elems);
      EXPECT_EQ(into.bytes_written.v, 2 * elems);
      EXPECT_EQ(static_cast<int>(into.control_inputs.size()), n);  // after every add
    }
    if (op.name == "dp0/ddp/scale_from_flat") back = o;
  }
  EXPECT_EQ(flat, 1);
  EXPECT_EQ(rank_adds, n);
  ASSERT_GE(back, 0);
  // Every first-pass launch of the optimizer (the global gradient norm) waits for the scale back.
  int waiting = 0;
  for (const sim::Op& op : job.graph.ops)
    if (op.name.rfind("dp0/update/0_", 0) == 0)
      waiting += std::find(op.control_inputs.begin(), op.control_inputs.end(), back) !=
                 op.control_inputs.end();
  EXPECT_GT(waiting, 0);
  // The accumulating micro-batch is the last one without the exchange and the update.
  const double micro =
      sim::simulate(c, job.accumulating, job.accumulating_placement).step_time.seconds();
  const double last = sim::simulate(c, job.graph, job.placement).step_time.seconds();
  EXPECT_GT(micro, 0.0);
  EXPECT_LT(micro, last);
}

// The placement baselines on small hand-built graphs and clusters, where the right answer can be
// worked out by hand, and on small configurations of every built-in workload.
#include "policy/place/baselines.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <set>
#include <string>

#include "models/registry.hpp"
#include "policy/place/group_dag.hpp"
#include "policy/place/methods.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {
namespace {

using sim::Bytes;
using sim::DeviceId;
using sim::Duration;
using sim::Graph;
using sim::Op;
using sim::OpId;

// cpu0 + GPUs under one PCIe switch. `fast` names a GPU with twice the others' peak.
sim::Cluster star(int gpus, const std::string& gpu_mem = "1 GiB", const std::string& bw = "10 GB/s",
                  int fast = -1) {
  std::string y = "name: star\ndevices:\n";
  y += "  - {name: cpu0, kind: cpu, peak_flops: {f32: 1 TFLOP/s}, memory_bandwidth: 100 GB/s,"
       " memory_capacity: 64 GiB, worker_threads: 1, launch_overhead: 1 us}\n";
  for (int g = 0; g < gpus; ++g)
    y += "  - {name: gpu" + std::to_string(g) +
         ", kind: gpu, host: cpu0, peak_flops: {f32: " + (g == fast ? "20" : "10") +
         " TFLOP/s}, memory_bandwidth: 900 GB/s, memory_capacity: " + gpu_mem +
         ", launch_overhead: 2 us}\n";
  y +=
      "switches: [sw0]\nlinks:\n  - {between: [cpu0, sw0], bandwidth: " + bw + ", latency: 1 us}\n";
  for (int g = 0; g < gpus; ++g)
    y += "  - {between: [gpu" + std::to_string(g) + ", sw0], bandwidth: " + bw +
         ", latency: 1 us}\n";
  if (gpus > 1) {
    y += "peer_access:\n  groups: [[";
    for (int g = 0; g < gpus; ++g) y += (g ? ", gpu" : "gpu") + std::to_string(g);
    y += "]]\n";
  }
  return sim::parse_cluster_yaml(y, "<test star>");
}

Op timed(const std::string& name, double us, std::int64_t out_bytes,
         std::vector<OpId> inputs = {}) {
  Op op;
  op.name = name;
  op.type = "Test";
  op.measured = Duration{static_cast<std::int64_t>(us * 1000)};
  op.outputs.push_back({.bytes = Bytes{out_bytes}});
  for (const OpId i : inputs) op.inputs.push_back({i, 0});
  return op;
}

// A two-layer "training step": forward f0 -> f1 -> loss, backward b1 -> b0, each backward op
// co-located with its forward op (so the group graph has the cycle f0 <-> f1).
Graph training_chain() {
  Graph g;
  g.name = "chain";
  const OpId f0 = g.add_op(timed("f0", 100, 1 << 20));
  const OpId f1 = g.add_op(timed("f1", 100, 1 << 20, {f0}));
  const OpId loss = g.add_op(timed("loss", 10, 1024, {f1}));
  const OpId b1 = g.add_op(timed("b1", 200, 1 << 20, {loss, f0}));
  g.add_op(timed("b0", 200, 1024, {b1}));
  g.ops[0].group = "L0";
  g.ops[4].group = "L0";
  g.ops[1].group = "L1";
  g.ops[3].group = "L1";
  g.finalize();
  return g;
}

// Two independent heavy branches joined at the end: worth two GPUs when copies are cheap.
Graph two_branches(double us = 5000, std::int64_t bytes = 4096) {
  Graph g;
  g.name = "branches";
  const OpId in = g.add_op(timed("in", 1, bytes));
  OpId a = in, b = in;
  for (int i = 0; i < 4; ++i) {
    a = g.add_op(timed("a" + std::to_string(i), us, bytes, {a}));
    b = g.add_op(timed("b" + std::to_string(i), us, bytes, {b}));
  }
  g.add_op(timed("join", 1, bytes, {a, b}));
  g.finalize();
  return g;
}

std::vector<std::string> all_methods() {
  return {"single-cpu", "single-gpu", "round-robin", "random:7", "expert", "scotch",
          "metis",      "heft",       "m-topo",      "m-etf",    "m-sct"};
}

// Every op has a device, co-location groups are whole, device-kind constraints hold.
void expect_valid(const sim::Placement& p, const Graph& g, const sim::Cluster& c,
                  const std::string& m) {
  ASSERT_EQ(p.device_of.size(), static_cast<std::size_t>(g.num_ops())) << m;
  std::map<std::string, DeviceId> group_device;
  for (int op = 0; op < g.num_ops(); ++op) {
    const DeviceId d = p.device_of[static_cast<std::size_t>(op)];
    ASSERT_GE(d, 0) << m;
    ASSERT_LT(d, c.num_devices()) << m;
    const auto& k = g.ops[static_cast<std::size_t>(op)].device_kind;
    if (k) EXPECT_EQ(c.devices[static_cast<std::size_t>(d)].spec.kind, *k) << m << " op " << op;
    const auto [it, inserted] = group_device.emplace(g.group_of(op), d);
    if (!inserted) EXPECT_EQ(it->second, d) << m << ": group " << g.group_of(op) << " split";
  }
}

TEST(GroupDag, KeepsCyclicCoLocationGroupsAndCountsEachTensorOncePerGroup) {
  const Graph g = training_chain();
  const GroupDag dag = build_group_dag(g);
  ASSERT_EQ(dag.size(), 3);  // L0, L1, loss
  EXPECT_EQ(dag.group_of_op[0], 0);
  EXPECT_EQ(dag.group_of_op[4], 0);
  EXPECT_EQ(dag.group_of_op[1], 1);
  // L0 -> L1 carries f0's output once although f1 and b1 (both in L1) read it.
  ASSERT_FALSE(dag.succ[0].empty());
  EXPECT_EQ(dag.succ[0][0].group, 1);
  EXPECT_DOUBLE_EQ(dag.succ[0][0].bytes, static_cast<double>(1 << 20));
  // ... and the backward edge L1 -> L0 exists: the group graph is cyclic.
  const bool back = std::any_of(dag.succ[1].begin(), dag.succ[1].end(),
                                [](const GroupEdge& e) { return e.group == 0; });
  EXPECT_TRUE(back);
  const sim::Placement p = dag.expand({2, 1, 0});
  EXPECT_EQ(p.device_of, (std::vector<DeviceId>{2, 1, 0, 1, 2}));
}

TEST(Methods, EveryMethodGivesAValidDeterministicPlacementThatSimulates) {
  Graph g = training_chain();
  const sim::Cluster c = star(2);
  for (const std::string& m : all_methods()) {
    const sim::Placement p = make_placement(m, g, c);
    expect_valid(p, g, c, m);
    EXPECT_EQ(p, make_placement(m, g, c)) << m << " is not deterministic";
    const sim::Outcome o = sim::simulate(c, g, p);
    EXPECT_FALSE(o.oom) << m;
    EXPECT_GT(o.step_time.ns, 0) << m;
  }
}

TEST(Methods, CpuOnlyOpsGoToACpuUnderEveryMethod) {
  Graph g = two_branches();
  g.ops[3].device_kind = sim::DeviceKind::Cpu;  // "b0"
  g.finalize();
  const sim::Cluster c = star(2);
  for (const std::string& m : all_methods()) expect_valid(make_placement(m, g, c), g, c, m);
}

TEST(Methods, UnknownNameIsAnInputError) {
  const Graph g = training_chain();
  EXPECT_THROW(make_placement("simulated-annealing", g, star(2)), sim::InputError);
  const auto names = method_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "m-sct"), names.end());
}

TEST(Methods, SingleGpuTakesTheFastestGpu) {
  const Graph g = training_chain();
  const sim::Cluster c = star(3, "1 GiB", "10 GB/s", 2);
  const sim::Placement p = make_placement("single-gpu", g, c);
  for (const DeviceId d : p.device_of)
    EXPECT_EQ(c.devices[static_cast<std::size_t>(d)].name, "gpu2");
}

TEST(Methods, RoundRobinDealsGroupsInTopologicalOrder) {
  const Graph g = two_branches();
  const sim::Cluster c = star(2);
  const sim::Placement p = make_placement("round-robin", g, c);
  // Kahn order by lowest id: in, a0, b0, a1, b1, ...: alternating gpu0, gpu1.
  const DeviceId gpu0 = c.device_index("gpu0"), gpu1 = c.device_index("gpu1");
  EXPECT_EQ(p.device_of[static_cast<std::size_t>(g.op_index("in"))], gpu0);
  EXPECT_EQ(p.device_of[static_cast<std::size_t>(g.op_index("a0"))], gpu1);
  EXPECT_EQ(p.device_of[static_cast<std::size_t>(g.op_index("b0"))], gpu0);
}

TEST(Heft, SplitsIndependentBranchesWhenCopiesAreCheap) {
  const Graph g = two_branches(5000, 4096);
  const sim::Cluster c = star(2);
  const sim::Placement p = make_placement("heft", g, c);
  EXPECT_NE(p.device_of[static_cast<std::size_t>(g.op_index("a3"))],
            p.device_of[static_cast<std::size_t>(g.op_index("b3"))]);
  const double single = sim::simulate(c, g, make_placement("single-gpu", g, c)).step_time.seconds();
  EXPECT_LT(sim::simulate(c, g, p).step_time.seconds(), 0.7 * single);
}

TEST(Heft, KeepsAChainTogetherWhenCopiesAreExpensive) {
  // 100 MB tensors over 1 GB/s: a copy costs 100 ms, the ops 0.1 ms.
  const Graph g = two_branches(100, 100'000'000);
  const sim::Cluster c = star(2, "4 GiB", "1 GB/s");
  const sim::Placement p = make_placement("heft", g, c);
  std::set<DeviceId> used(p.device_of.begin(), p.device_of.end());
  EXPECT_EQ(used.size(), 1u);
}

TEST(Partitioners, BalanceTwoBranchesOverTwoGpus) {
  const Graph g = two_branches();
  const sim::Cluster c = star(2);
  for (const std::string m : {"scotch", "metis"}) {
    const sim::Placement p = make_placement(m, g, c);
    std::map<DeviceId, int> ops_on;
    for (const DeviceId d : p.device_of) ++ops_on[d];
    EXPECT_EQ(ops_on.size(), 2u) << m;
    for (const auto& [d, k] : ops_on) EXPECT_GE(k, 3) << m;
  }
}

TEST(Partitioners, SameSeedSamePlacementOnAGraphLargeEnoughToReachTheLibraries) {
  // Scotch's default context is multi-threaded and not reproducible; ours must be.
  const Graph g = models::load_graph("nmt", "src_len=4,tgt_len=4,hidden=128,vocab=500,batch=8");
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  for (const std::string m : {"scotch", "metis"}) {
    const sim::Placement first = make_placement(m, g, c);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(first, make_placement(m, g, c)) << m;
    std::set<DeviceId> used(first.device_of.begin(), first.device_of.end());
    EXPECT_GE(used.size(), 4u) << m;
  }
}

// Ops with large parameters on GPUs that hold only a few of them each: the memory-aware methods
// spread them; a group larger than any GPU goes to the CPU.
Graph heavy_parameters(int n, std::int64_t each, std::int64_t giant = 0) {
  Graph g;
  g.name = "params";
  OpId prev = g.add_op(timed("in", 10, 1024));
  for (int i = 0; i < n; ++i) {
    Op op = timed("w" + std::to_string(i), 100, 1024, {prev});
    op.persistent = Bytes{each};
    prev = g.add_op(std::move(op));
  }
  if (giant > 0) {
    Op op = timed("giant", 100, 1024, {prev});
    op.persistent = Bytes{giant};
    g.add_op(std::move(op));
  }
  g.finalize();
  return g;
}

TEST(Baechi, MemoryConstrainedMethodsNeverOomWhenTheGraphFitsAcrossGpus) {
  // 8 x 200 MiB of parameters on 4 GPUs of 512 MiB: no GPU holds more than 2.
  const Graph g = heavy_parameters(8, 200LL << 20);
  const sim::Cluster c = star(4, "512 MiB");
  ASSERT_TRUE(sim::simulate(c, g, make_placement("single-gpu", g, c)).oom);
  for (const std::string m : {"m-topo", "m-etf", "m-sct"}) {
    const sim::Placement p = make_placement(m, g, c);
    const sim::Outcome o = sim::simulate(c, g, p);
    EXPECT_FALSE(o.oom) << m;
    std::set<DeviceId> used(p.device_of.begin(), p.device_of.end());
    EXPECT_GE(used.size(), 4u) << m;
  }
}

TEST(Baechi, AGroupNoGpuCanHoldGoesToTheHostCpu) {
  const Graph g = heavy_parameters(2, 1LL << 20, 2LL << 30);
  const sim::Cluster c = star(2, "1 GiB");
  for (const std::string m : {"m-topo", "m-etf", "m-sct"}) {
    const sim::Placement p = make_placement(m, g, c);
    EXPECT_EQ(c.devices[static_cast<std::size_t>(
                            p.device_of[static_cast<std::size_t>(g.op_index("giant"))])]
                  .name,
              "cpu0")
        << m;
    EXPECT_FALSE(sim::simulate(c, g, p).oom) << m;
  }
}

TEST(Baechi, NoOomOnRandomGraphsThatFitAcrossTheDevices) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    Graph g;
    g.name = "random";
    std::int64_t total = 0;
    for (int i = 0; i < 60; ++i) {
      std::vector<OpId> ins;
      for (int k = 0; k < 2 && i > 0; ++k)
        ins.push_back(static_cast<OpId>(rng() % static_cast<std::uint64_t>(i)));
      std::sort(ins.begin(), ins.end());
      ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
      const auto out = static_cast<std::int64_t>((1 + rng() % 8) << 20);
      Op op = timed("op" + std::to_string(i), 10 + static_cast<double>(rng() % 500), out, ins);
      if (i % 5 == 0) op.persistent = Bytes{static_cast<std::int64_t>((rng() % 64) << 20)};
      if (i % 7 == 3) op.group = "shared" + std::to_string(i % 3);
      total += out + op.persistent.v;
      g.add_op(std::move(op));
    }
    g.finalize();
    // GPUs that together hold about 1.5x the conservative demand, each well under all of it.
    const sim::Cluster c = star(4, std::to_string(total * 3 / 8 / (1 << 20)) + " MiB");
    const GroupDag dag = build_group_dag(g);
    for (const std::string m : {"m-topo", "m-etf", "m-sct"}) {
      const sim::Placement p = make_placement(m, g, c);
      expect_valid(p, g, c, m);
      EXPECT_FALSE(sim::simulate(c, g, p).oom) << m << " seed " << seed;
      // Baechi's own accounting (every activation counted) is a bound without any simulation.
      const sim::Placement bound = dag.expand(place_baechi_unchecked(m, dag, g, c, {}, 1.0));
      expect_valid(bound, g, c, m);
      EXPECT_FALSE(sim::simulate(c, g, bound).oom) << m << " (conservative) seed " << seed;
    }
  }
}

// A recurrent model as the rnnlm builder lays it out (layer paths, metadata "builder").
Graph tiny_rnnlm() {
  Graph g;
  g.name = "rnnlm";
  g.metadata["builder"] = "rnnlm";
  const OpId e = g.add_op(timed("emb", 10, 4096));
  g.ops[static_cast<std::size_t>(e)].layer = "rnnlm/embedding";
  OpId prev = e;
  for (int l = 0; l < 2; ++l)
    for (int t = 0; t < 3; ++t) {
      prev = g.add_op(timed("l" + std::to_string(l) + "t" + std::to_string(t), 100, 4096, {prev}));
      g.ops[static_cast<std::size_t>(prev)].layer = "rnnlm/lstm_" + std::to_string(l);
      g.ops[static_cast<std::size_t>(prev)].flops = sim::Flops{1e6};
    }
  const OpId s = g.add_op(timed("softmax", 50, 4096, {prev}));
  g.ops[static_cast<std::size_t>(s)].layer = "rnnlm/softmax";
  g.finalize();
  return g;
}

TEST(Expert, OneLstmLayerPerGpuEmbeddingFirstSoftmaxLast) {
  const Graph g = tiny_rnnlm();
  const sim::Cluster c = star(4);
  const sim::Placement p = make_placement("expert", g, c);
  const auto dev = [&](const std::string& op) {
    return c
        .devices[static_cast<std::size_t>(p.device_of[static_cast<std::size_t>(g.op_index(op))])]
        .name;
  };
  EXPECT_EQ(dev("emb"), "gpu0");
  EXPECT_EQ(dev("l0t0"), "gpu0");
  EXPECT_EQ(dev("l0t2"), "gpu0");
  EXPECT_EQ(dev("l1t0"), "gpu1");
  EXPECT_EQ(dev("softmax"), "gpu3");
}

TEST(Expert, ConvolutionalModelsStayOnTheFastestGpu) {
  Graph g = two_branches();
  g.metadata["builder"] = "inception_v3";
  const sim::Cluster c = star(3, "1 GiB", "10 GB/s", 1);
  for (const DeviceId d : make_placement("expert", g, c).device_of)
    EXPECT_EQ(c.devices[static_cast<std::size_t>(d)].name, "gpu1");
}

TEST(Expert, OtherGraphsSplitLayersIntoContiguousBlocksOfEqualFlops) {
  Graph g;
  g.name = "mlp";
  OpId prev = g.add_op(timed("in", 1, 1024));
  for (int l = 0; l < 4; ++l) {
    prev = g.add_op(timed("fc" + std::to_string(l), 100, 1024, {prev}));
    g.ops[static_cast<std::size_t>(prev)].layer = "mlp/fc" + std::to_string(l);
    g.ops[static_cast<std::size_t>(prev)].flops = sim::Flops{1e9};
  }
  g.finalize();
  const sim::Cluster c = star(2);
  const sim::Placement p = make_placement("expert", g, c);
  const auto dev = [&](const std::string& op) {
    return p.device_of[static_cast<std::size_t>(g.op_index(op))];
  };
  EXPECT_EQ(dev("fc0"), dev("fc1"));
  EXPECT_EQ(dev("fc2"), dev("fc3"));
  EXPECT_NE(dev("fc1"), dev("fc2"));
}

// Small configurations of every built-in workload on the paper's machines and a DGX-1: every
// method gives a valid placement; the memory-aware ones never run out of memory.
class BuiltinWorkloads : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(BuiltinWorkloads, EveryMethodGivesAValidPlacement) {
  static const std::map<std::string, std::string> small = {
      {"rnnlm", "steps=3,hidden=128,vocab=500,batch=8"},
      {"nmt", "src_len=3,tgt_len=3,hidden=128,vocab=500,batch=8"},
      {"inception_v3", "batch=1,image_size=75"},
      {"resnet50", "batch=1,image_size=64"},
      {"gpt", "layers=2,hidden=64,heads=2,seq=32,positions=32,vocab=500,batch=1"},
  };
  const auto& [workload, cluster] = GetParam();
  const sim::Cluster c = sim::load_cluster(cluster);
  const Graph g = models::load_graph(workload, small.at(workload));
  for (const std::string& m : all_methods()) {
    const std::string what = m + " on " + workload + " / " + cluster;
    const sim::Placement p = make_placement(m, g, c);
    expect_valid(p, g, c, what);
    const sim::Outcome o = sim::simulate(c, g, p);
    if (m.rfind("m-", 0) == 0) EXPECT_FALSE(o.oom) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPairs, BuiltinWorkloads,
    ::testing::Combine(::testing::Values("rnnlm", "nmt", "inception_v3", "resnet50", "gpt"),
                       ::testing::Values("paper-2gpu", "paper-4gpu", "dgx1-v100")),
    [](const auto& info) {
      std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace placesim::policy

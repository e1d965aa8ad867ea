// Grouping invariants on the built-in workloads and on hand-made graphs whose co-location groups
// would make the group graph cyclic.
#include "models/grouping.hpp"

#include <gtest/gtest.h>
#include <map>
#include <set>

#include "models/registry.hpp"
#include "sim/error.hpp"

namespace placesim::models {
namespace {

void check_invariants(const sim::Graph& g, const Grouping& gr, int max_groups) {
  const int m = gr.size();
  ASSERT_GE(m, 1);
  EXPECT_LE(m, max_groups);
  ASSERT_EQ(static_cast<int>(gr.group_of_op.size()), g.num_ops());
  // Every op in exactly one group.
  std::vector<int> seen(static_cast<std::size_t>(g.num_ops()), 0);
  for (int k = 0; k < m; ++k) {
    const auto& ops = gr.ops_of_group[static_cast<std::size_t>(k)];
    EXPECT_FALSE(ops.empty());
    EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
    for (const sim::OpId v : ops) {
      ++seen[static_cast<std::size_t>(v)];
      EXPECT_EQ(gr.group_of_op[static_cast<std::size_t>(v)], k);
    }
  }
  for (const int s : seen) EXPECT_EQ(s, 1);
  // Co-location honoured.
  std::map<std::string, std::int32_t> colo;
  for (sim::OpId v = 0; v < g.num_ops(); ++v) {
    const auto [it, fresh] =
        colo.emplace(g.group_of(v), gr.group_of_op[static_cast<std::size_t>(v)]);
    EXPECT_EQ(it->second, gr.group_of_op[static_cast<std::size_t>(v)])
        << g.ops[static_cast<std::size_t>(v)].name;
  }
  // Names unique; DAG sorted, symmetric, without self edges, and numbered topologically (every
  // edge goes to a higher index), hence acyclic.
  EXPECT_EQ(std::set<std::string>(gr.names.begin(), gr.names.end()).size(), gr.names.size());
  for (int k = 0; k < m; ++k) {
    const auto& s = gr.succ[static_cast<std::size_t>(k)];
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    for (const std::int32_t w : s) {
      EXPECT_GT(w, k);
      const auto& p = gr.pred[static_cast<std::size_t>(w)];
      EXPECT_TRUE(std::binary_search(p.begin(), p.end(), k));
    }
  }
  // Every forward data-flow edge between groups is in the DAG.
  for (sim::OpId v = 0; v < g.num_ops(); ++v) {
    const auto& op = g.ops[static_cast<std::size_t>(v)];
    if (op.phase == sim::Phase::Backward || op.phase == sim::Phase::Update) continue;
    const auto gv = gr.group_of_op[static_cast<std::size_t>(v)];
    for (const auto& in : op.inputs) {
      const auto gu = gr.group_of_op[static_cast<std::size_t>(in.op)];
      if (gu != gv) {
        const auto& s = gr.succ[static_cast<std::size_t>(gu)];
        EXPECT_TRUE(std::binary_search(s.begin(), s.end(), gv));
      }
    }
  }
  // Features add up to the graph's totals.
  double flops = 0, persistent = 0, out = 0, flops_g = 0, persistent_g = 0, out_g = 0, count = 0;
  for (const auto& op : g.ops) {
    flops += op.flops.v;
    persistent += static_cast<double>(op.persistent.v);
    for (const auto& t : op.outputs) out += static_cast<double>(t.bytes.v);
  }
  for (int k = 0; k < m; ++k) {
    flops_g += gr.flops[static_cast<std::size_t>(k)];
    persistent_g += gr.persistent_bytes[static_cast<std::size_t>(k)];
    out_g += gr.output_bytes[static_cast<std::size_t>(k)];
    for (const float c : gr.type_counts[static_cast<std::size_t>(k)]) count += c;
  }
  EXPECT_NEAR(flops_g, flops, 1e-9 * flops + 1);
  EXPECT_EQ(persistent_g, persistent);
  EXPECT_EQ(out_g, out);
  EXPECT_EQ(count, g.num_ops());
  EXPECT_TRUE(std::is_sorted(gr.type_vocab.begin(), gr.type_vocab.end()));
}

TEST(Grouping, BuiltinWorkloadsKeepInvariants) {
  for (const auto& [name, opts] : std::map<std::string, std::string>{
           {"rnnlm", "steps=4,hidden=32,vocab=50"},
           {"nmt", "src_len=3,tgt_len=3,hidden=32,vocab=50"},
           {"gpt", "layers=2,hidden=64,heads=4,seq=8,vocab=100,batch=1"},
           {"resnet50", "batch=1,image_size=32"},
           {"inception_v3", "batch=1,image_size=75"}}) {
    SCOPED_TRACE(name);
    const sim::Graph g = load_graph(name, opts);
    for (const int max_groups : {1, 7, 64, 256}) {
      SCOPED_TRACE(max_groups);
      check_invariants(g, group_graph(g, max_groups), max_groups);
    }
  }
}

TEST(Grouping, ReachesTheRequestedCountAndIsDeterministic) {
  const sim::Graph g = load_graph("inception_v3", "batch=1,image_size=75");
  const Grouping a = group_graph(g, 256);
  EXPECT_EQ(a.size(), 256);
  const Grouping b = group_graph(g, 256);
  EXPECT_EQ(a.group_of_op, b.group_of_op);
  EXPECT_EQ(a.names, b.names);
}

TEST(Grouping, VariableUpdateAndGradientsStayTogether) {
  const sim::Graph g = load_graph("rnnlm", "steps=3,hidden=16,vocab=20,batch=2");
  const Grouping gr = group_graph(g, 256);
  const auto group = [&](const std::string& name) {
    const sim::OpId v = g.op_index(name);
    EXPECT_GE(v, 0) << name;
    return gr.group_of_op[static_cast<std::size_t>(v)];
  };
  EXPECT_EQ(group("rnnlm/lstm_0/kernel"), group("update/rnnlm/lstm_0/kernel"));
  EXPECT_EQ(group("rnnlm/lstm_1/t2/MatMul"),
            group("gradients/rnnlm/lstm_1/t2/MatMul_grad/MatMul_0"));
}

TEST(Grouping, CyclicCoLocationGroupsAreMerged) {
  // a -> b -> c -> d with {a, d} colocated: the quotient {a,d} <-> b, c is cyclic, so a, b, c, d
  // must end up together; e hangs off d.
  sim::Graph g;
  g.name = "cyclic";
  auto add = [&](const std::string& name, std::vector<sim::OpId> in, const std::string& group) {
    sim::Op op{.name = name, .type = "Op", .flops = sim::Flops{1e6}};
    for (const auto i : in) op.inputs.push_back({i, 0});
    op.outputs = {{.bytes = sim::Bytes{1024}}};
    op.group = group;
    return g.add_op(std::move(op));
  };
  const auto a = add("a", {}, "ad");
  const auto b = add("b", {a}, "");
  const auto c = add("c", {b}, "");
  const auto d = add("d", {c}, "ad");
  const auto e = add("e", {d}, "");
  g.finalize();
  const Grouping gr = group_graph(g, 256);
  check_invariants(g, gr, 256);
  EXPECT_EQ(gr.group_of_op[static_cast<std::size_t>(a)],
            gr.group_of_op[static_cast<std::size_t>(b)]);
  EXPECT_EQ(gr.group_of_op[static_cast<std::size_t>(a)],
            gr.group_of_op[static_cast<std::size_t>(c)]);
  EXPECT_EQ(gr.group_of_op[static_cast<std::size_t>(a)],
            gr.group_of_op[static_cast<std::size_t>(d)]);
  (void)e;
}

TEST(Grouping, ExpandGivesOneDevicePerOp) {
  const sim::Graph g = load_graph("resnet50", "batch=1,image_size=32");
  const Grouping gr = group_graph(g, 4);
  std::vector<sim::DeviceId> dev;
  for (int k = 0; k < gr.size(); ++k) dev.push_back(k % 2);
  const sim::Placement p = gr.expand(dev);
  ASSERT_EQ(static_cast<int>(p.device_of.size()), g.num_ops());
  for (sim::OpId v = 0; v < g.num_ops(); ++v) {
    EXPECT_EQ(p.device_of[static_cast<std::size_t>(v)],
              gr.group_of_op[static_cast<std::size_t>(v)] % 2);
  }
  EXPECT_THROW(gr.expand({0}), sim::InputError);
  EXPECT_THROW(group_graph(g, 0), sim::InputError);
}

}  // namespace
}  // namespace placesim::models

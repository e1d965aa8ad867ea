#include "sim/graph.hpp"

#include <filesystem>
#include <gtest/gtest.h>

#include "sim/error.hpp"

namespace placesim::sim {
namespace {

Graph diamond() {
  Graph g;
  g.name = "diamond";
  const OpId x =
      g.add_op({.name = "x", .type = "Placeholder", .outputs = {{.bytes = Bytes{4096}}}});
  Op a{.name = "a", .type = "MatMul", .flops = Flops{2e6}};
  a.inputs = {{x, 0}};
  a.outputs = {{.bytes = Bytes{1024}},
               {.name = "a_aux", .bytes = Bytes{8}, .shape = {2}, .dtype = Dtype::F32}};
  a.persistent = Bytes{1 << 20};
  a.group = "layer1";
  a.signature = Signature{"aten::mm", {{64, 512}, {512, 1024}}, Dtype::F16};
  const OpId ia = g.add_op(std::move(a));
  Op b{.name = "aten::relu", .type = "Relu", .flops = Flops{1e3}};
  b.inputs = {{x, 0}};
  b.outputs = {{.bytes = Bytes{1024}}};
  b.group = "layer1";
  b.device_kind = DeviceKind::Cpu;
  const OpId ib = g.add_op(std::move(b));
  Op c{.name = "c", .type = "Add", .flops = Flops{5e2}, .phase = Phase::Backward};
  c.inputs = {{ia, 1}, {ib, 0}};
  c.control_inputs = {x};
  c.measured = Duration{1234};
  c.stream = 1;
  c.layer = "head/add";
  g.add_op(std::move(c));
  g.finalize();
  return g;
}

TEST(Graph, FinalizeBuildsTopoOrderAndConsumers) {
  const Graph g = diamond();
  EXPECT_EQ(g.topo_order, (std::vector<OpId>{0, 1, 2, 3}));
  EXPECT_EQ(g.consumers_of[0], (std::vector<OpId>{1, 2, 3}));
  EXPECT_EQ(g.op_index("aten::relu"), 2);
  EXPECT_EQ(g.group_of(3), "c");
  EXPECT_EQ(g.group_of(1), "layer1");
}

TEST(Graph, JsonRoundTripKeepsEverything) {
  const Graph g = diamond();
  const Graph h = parse_graph_json(graph_to_json(g), "roundtrip.json");
  ASSERT_EQ(h.num_ops(), g.num_ops());
  EXPECT_EQ(h.name, g.name);
  for (OpId i = 0; i < g.num_ops(); ++i) {
    const Op& a = g.ops[i];
    const Op& b = h.ops[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.flops, b.flops);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.control_inputs, b.control_inputs);
    EXPECT_EQ(a.persistent, b.persistent);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.device_kind, b.device_kind);
    EXPECT_EQ(a.phase, b.phase);
    EXPECT_EQ(a.signature, b.signature);
    EXPECT_EQ(a.measured, b.measured);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.layer, b.layer);
    EXPECT_EQ(a.leading_dims, b.leading_dims);
    EXPECT_EQ(a.dropout, b.dropout);
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (std::size_t k = 0; k < a.outputs.size(); ++k) {
      EXPECT_EQ(a.outputs[k].bytes, b.outputs[k].bytes);
      EXPECT_EQ(a.outputs[k].name, b.outputs[k].name);
      EXPECT_EQ(a.outputs[k].shape, b.outputs[k].shape);
    }
  }
  EXPECT_EQ(graph_to_json(h), graph_to_json(g));
}

TEST(Graph, LeadingDimensionsRoundTripAndBadOnesAreRefused) {
  // A trace's GEMM operand leading dimensions (import et) survive the graph JSON; zero is refused.
  Graph g = diamond();
  g.ops[1].leading_dims = {50257, 768};
  const Graph h = parse_graph_json(graph_to_json(g), "ld.json");
  EXPECT_EQ(h.ops[1].leading_dims, (std::vector<std::int64_t>{50257, 768}));
  EXPECT_TRUE(h.ops[0].leading_dims.empty());
  try {
    parse_graph_json(R"({"ops": [{"name": "mm", "leading_dims": [768, 0]}]})", "bad.json");
    FAIL() << "a zero leading dimension was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0] (\"mm\").leading_dims[1]"), std::string::npos)
        << e.what();
  }
}

TEST(Graph, HostBeforeRoundTripsAndBadOnesAreRefused) {
  // The framework's host time before an op's launch (optimizer_impl's per-tensor Python) survives
  // the graph JSON; a negative one or a non-duration is refused with its key.
  Graph g = diamond();
  g.ops[3].host_before = Duration{6'500};
  const Graph h = parse_graph_json(graph_to_json(g), "hb.json");
  EXPECT_EQ(h.ops[3].host_before, Duration{6'500});
  EXPECT_EQ(h.ops[1].host_before, Duration{0});
  for (const char* bad : {R"({"ops": [{"name": "u", "host_before": 12}]})",
                          R"({"ops": [{"name": "u", "host_before": "-3 us"}]})"}) {
    try {
      parse_graph_json(bad, "bad.json");
      FAIL() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("host_before"), std::string::npos) << e.what();
    }
  }
}

TEST(Graph, AttentionDropoutRoundTripsAndBadOnesAreRefused) {
  // A fused attention op's in-kernel dropout probability survives the graph JSON; an op without
  // one writes no key; a probability outside [0, 1] or not a number is refused, naming the op.
  Graph g = diamond();
  g.ops[1].dropout = 0.1;
  const std::string text = graph_to_json(g);
  const Graph h = parse_graph_json(text, "drop.json");
  EXPECT_EQ(h.ops[1].dropout, 0.1);
  EXPECT_EQ(h.ops[0].dropout, 0.0);
  EXPECT_EQ(graph_to_json(h), text);
  EXPECT_EQ(text.find("\"dropout\""), text.rfind("\"dropout\""));  // one op carries it
  for (const char* bad : {"1.5", "-0.1", "\"0.1\""}) {
    try {
      parse_graph_json(std::string(R"({"ops": [{"name": "attn", "dropout": )") + bad + "}]}",
                       "bad.json");
      FAIL() << "dropout " << bad << " was accepted";
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("bad.json"), std::string::npos) << m;
      EXPECT_NE(m.find("ops[0] (\"attn\").dropout"), std::string::npos) << m;
      EXPECT_NE(m.find("a dropout probability from 0 to 1"), std::string::npos) << m;
    }
  }
}

TEST(Graph, WriteIsAtomicAndReadable) {
  const auto path = std::filesystem::temp_directory_path() / "placesim_graph_test.json";
  write_graph_json(diamond(), path.string());
  EXPECT_EQ(read_graph_json(path.string()).num_ops(), 4);
  std::filesystem::remove(path);
}

std::string error_of(const std::string& text) {
  try {
    parse_graph_json(text, "g.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Graph, CycleIsRejectedNamingAnOpOnIt) {
  const std::string m =
      error_of(R"({"ops":[{"name":"s","outputs":[4]},{"name":"a","inputs":["s","b"],"outputs":[4]},
                                           {"name":"b","inputs":["a"],"outputs":[4]}]})");
  EXPECT_NE(m.find("cycle"), std::string::npos) << m;
  EXPECT_NE(m.find("\"a\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"b\""), std::string::npos) << m;
}

TEST(Graph, MissingProducerAndDuplicateNamesAreRejected) {
  std::string m = error_of(R"({"ops":[{"name":"a","inputs":["nope"]}]})");
  EXPECT_NE(m.find("g.json: ops[0] (\"a\").inputs[0]"), std::string::npos) << m;
  EXPECT_NE(m.find("nope"), std::string::npos) << m;
  m = error_of(R"({"ops":[{"name":"a"},{"name":"a"}]})");
  EXPECT_NE(m.find("unique"), std::string::npos) << m;
  m = error_of(R"({"ops":[{"name":"a","outputs":[8]},{"name":"b","inputs":["a:3"]}]})");
  EXPECT_NE(m.find("output index"), std::string::npos) << m;
}

TEST(Graph, SyntaxErrorsGiveLineAndColumn) {
  const std::string m = error_of("{\n \"ops\": [\n  {\"name\": \"a\",}\n ]\n}");
  EXPECT_NE(m.find("g.json: line 3:"), std::string::npos) << m;
}

TEST(Graph, WrongTypesNameTheKey) {
  const std::string m = error_of(R"({"ops":[{"name":"a","flops":"many"}]})");
  EXPECT_NE(m.find("ops[0] (\"a\").flops"), std::string::npos) << m;
  EXPECT_NE(error_of(R"({"ops":[{"name":"a","flops":-1}]})").find("non-negative"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"ops":[{"name":"a","outputs":[{"bytes":"3 parsecs"}]}]})").find("unknown unit"),
      std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("an object"), std::string::npos);
}

TEST(Graph, StatsCountPhasesAndCriticalPath) {
  const GraphStats s = graph_stats(diamond());
  EXPECT_EQ(s.ops, 4);
  EXPECT_EQ(s.forward_ops, 3);
  EXPECT_EQ(s.backward_ops, 1);
  EXPECT_EQ(s.groups, 3);
  EXPECT_EQ(s.longest_path_ops, 3);
  EXPECT_DOUBLE_EQ(s.critical_path_flops.v, 2e6 + 5e2);
  EXPECT_EQ(s.persistent_bytes.v, 1 << 20);
}

TEST(Graph, LargeChainLoadsAndWrites) {
  Graph g;
  g.name = "chain";
  constexpr int kOps = 20000;
  for (int i = 0; i < kOps; ++i) {
    Op op{.name = "op" + std::to_string(i), .type = "Add", .flops = Flops{1e3}};
    if (i > 0) op.inputs = {{i - 1, 0}};
    op.outputs = {{.bytes = Bytes{256}}};
    g.add_op(std::move(op));
  }
  g.finalize();
  const Graph h = parse_graph_json(graph_to_json(g), "chain.json");
  EXPECT_EQ(h.num_ops(), kOps);
  EXPECT_EQ(graph_stats(h).longest_path_ops, kOps);
}

}  // namespace
}  // namespace placesim::sim

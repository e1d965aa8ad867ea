#include "sim/placement.hpp"

#include <gtest/gtest.h>

#include "sim/error.hpp"

namespace placesim::sim {
namespace {

Graph small_graph() {
  Graph g;
  g.name = "small";
  const OpId in =
      g.add_op({.name = "input", .type = "Placeholder", .outputs = {{.bytes = Bytes{64}}}});
  g.ops[in].device_kind = DeviceKind::Cpu;
  Op a{.name = "l1/mm", .type = "MatMul", .flops = Flops{1e6}};
  a.inputs = {{in, 0}};
  a.outputs = {{.bytes = Bytes{64}}};
  a.group = "l1";
  const OpId ia = g.add_op(std::move(a));
  Op b{.name = "l1/relu", .type = "Relu"};
  b.inputs = {{ia, 0}};
  b.outputs = {{.bytes = Bytes{64}}};
  b.group = "l1";
  const OpId ib = g.add_op(std::move(b));
  Op c{.name = "l2/mm", .type = "MatMul", .flops = Flops{1e6}};
  c.inputs = {{ib, 0}};
  c.group = "l2";
  g.add_op(std::move(c));
  g.finalize();
  return g;
}

std::string error_of(const PlacementFile& f, const Graph& g, const Cluster& c) {
  try {
    resolve_placement(f, g, c, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Placement, ResolvesGroupsOpsAndDefault) {
  const Cluster c = load_cluster("paper-4gpu");
  const Graph g = small_graph();
  PlacementFile f;
  f.groups = {{"l1", "gpu1"}, {"l2", "gpu2"}};
  f.default_device = "cpu0";
  const Placement p = resolve_placement(f, g, c, "p.json");
  EXPECT_EQ(p.device_of, (std::vector<DeviceId>{0, 2, 2, 3}));
}

TEST(Placement, JsonRoundTripAndFileForm) {
  const Cluster c = load_cluster("paper-4gpu");
  const Graph g = small_graph();
  const Placement p{{0, 1, 1, 4}};
  PlacementMetadata md;
  md.method = "test";
  md.seed = 7;
  md.predicted_step_time_s = 0.25;
  const PlacementFile f = to_placement_file(p, g, c, md);
  EXPECT_EQ(f.groups.at("l1"), "gpu0");
  const PlacementFile back = parse_placement_json(placement_to_json(f), "p.json");
  EXPECT_EQ(back.groups, f.groups);
  EXPECT_EQ(back.metadata.seed, std::optional<std::uint64_t>(7));
  EXPECT_EQ(back.metadata.method, "test");
  EXPECT_EQ(resolve_placement(back, g, c, "p.json"), p);
}

TEST(Placement, RejectsMissingOpDeviceSplitGroupAndKindViolation) {
  const Cluster c = load_cluster("paper-4gpu");
  const Graph g = small_graph();
  PlacementFile f;
  f.default_device = "gpu0";
  f.ops = {{"nope", "gpu0"}};
  EXPECT_NE(error_of(f, g, c).find("p.json: ops.nope"), std::string::npos);
  f.ops = {{"l2/mm", "gpu9"}};
  EXPECT_NE(error_of(f, g, c).find("gpu9"), std::string::npos);
  f.ops = {{"l1/relu", "gpu1"}, {"input", "cpu0"}};
  EXPECT_NE(error_of(f, g, c).find("co-location group \"l1\""), std::string::npos)
      << error_of(f, g, c);
  f.ops = {};
  EXPECT_NE(error_of(f, g, c).find("device_kind"), std::string::npos) << error_of(f, g, c);
  PlacementFile none;
  none.groups = {{"l1", "gpu0"}};
  EXPECT_NE(error_of(none, g, c).find("default_device"), std::string::npos);
}

TEST(Placement, BuiltinsHonourKindConstraintsAndAreDeterministic) {
  const Cluster c = load_cluster("paper-4gpu");
  const Graph g = small_graph();
  const auto gpu = builtin_placement("single-gpu", g, c);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->device_of, (std::vector<DeviceId>{0, 1, 1, 1}));
  const auto cpu = builtin_placement("single-cpu", g, c);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->device_of, (std::vector<DeviceId>{0, 0, 0, 0}));
  const auto r1 = builtin_placement("random:42", g, c);
  const auto r2 = builtin_placement("random:42", g, c);
  ASSERT_TRUE(r1);
  EXPECT_EQ(*r1, *r2);
  EXPECT_EQ(r1->device_of[0], 0);                 // CPU-only op
  EXPECT_EQ(r1->device_of[1], r1->device_of[2]);  // one group, one device
  bool differs = false;
  for (int s = 0; s < 20 && !differs; ++s) {
    differs = builtin_placement("random:" + std::to_string(s), g, c)->device_of != r1->device_of;
  }
  EXPECT_TRUE(differs);
  EXPECT_THROW(builtin_placement("random:x", g, c), InputError);
  EXPECT_THROW(builtin_placement("best", g, c), InputError);
}

TEST(Placement, JsonErrorsNameFileAndKey) {
  try {
    parse_placement_json(R"({"groups": {"a": 3}})", "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: groups.a"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_placement_json("{\"groups\": ", "p.json"), InputError);
  EXPECT_THROW(parse_placement_json("", "p.json"), InputError);
  EXPECT_THROW(parse_placement_json(R"({"grups": {}})", "p.json"), InputError);
}

}  // namespace
}  // namespace placesim::sim

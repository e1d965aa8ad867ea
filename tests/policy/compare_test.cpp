// compare_methods() and its table, CSV and JSON forms.
#include "policy/place/compare.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {
namespace {

sim::Graph small_graph() {
  sim::Graph g;
  g.name = "small";
  sim::OpId prev = -1;
  for (int i = 0; i < 6; ++i) {
    sim::Op op;
    op.name = "op" + std::to_string(i);
    op.type = "Test";
    op.measured = sim::Duration{100'000};
    op.outputs.push_back({.bytes = sim::Bytes{1 << 16}});
    op.persistent = sim::Bytes{1 << 20};
    if (prev >= 0) op.inputs.push_back({prev, 0});
    prev = g.add_op(std::move(op));
  }
  g.finalize();
  return g;
}

TEST(Compare, OneRowPerMethodWithSpeedupOverSingleGpuAndExtraRowsAppended) {
  const sim::Graph g = small_graph();
  const sim::Cluster c = sim::load_cluster("paper-2gpu");
  const sim::Placement p = *sim::builtin_placement("single-gpu", g, c);
  std::vector<CompareRow> extra = {evaluate_row("rl", g, c, p, {}, 12.5)};
  const auto rows =
      compare_methods(g, c, {"single-gpu", "round-robin", "no-such-method"}, {}, extra);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].method, "single-gpu");
  ASSERT_TRUE(rows[0].speedup.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].speedup, 1.0);
  EXPECT_EQ(rows[0].devices_used, 1);
  EXPECT_GT(rows[0].step_time_s, 0.0);
  EXPECT_EQ(rows[0].peak_memory.v > 0, true);
  EXPECT_EQ(rows[0].fullest_device, "gpu0");
  EXPECT_EQ(rows[1].devices_used, 2);
  EXPECT_FALSE(rows[2].error.empty());
  EXPECT_FALSE(rows[2].speedup.has_value());
  EXPECT_EQ(rows[3].method, "rl");
  EXPECT_DOUBLE_EQ(rows[3].method_wall_s, 12.5);
  ASSERT_TRUE(rows[3].speedup.has_value());
  EXPECT_DOUBLE_EQ(*rows[3].speedup, 1.0);

  const std::string table = format_compare_table(rows);
  EXPECT_NE(table.find("round-robin"), std::string::npos);
  EXPECT_NE(table.find("1.00x"), std::string::npos);
  EXPECT_NE(table.find("error:"), std::string::npos);

  const std::string csv = compare_to_csv(rows);
  EXPECT_EQ(csv.rfind("method,step_time_s,oom,", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);

  const auto j = nlohmann::json::parse(compare_to_json(rows));
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[1]["method"], "round-robin");
  EXPECT_TRUE(j[2].contains("error"));
  EXPECT_DOUBLE_EQ(j[0]["speedup_vs_single_gpu"].get<double>(), 1.0);
}

TEST(Compare, SpeedupIsComputedWithoutASingleGpuRowAndAbsentWhenSingleGpuRunsOutOfMemory) {
  sim::Graph g = small_graph();
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  auto rows = compare_methods(g, c, {"round-robin"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].speedup.has_value());
  // 6 x 4 GiB of parameters: one 12 GiB GPU cannot hold them, four can.
  for (auto& op : g.ops) op.persistent = sim::Bytes{4LL << 30};
  g.finalize();
  rows = compare_methods(g, c, {"single-gpu", "m-topo"});
  EXPECT_TRUE(rows[0].oom);
  EXPECT_FALSE(rows[1].oom);
  EXPECT_FALSE(rows[1].speedup.has_value());
}

}  // namespace
}  // namespace placesim::policy

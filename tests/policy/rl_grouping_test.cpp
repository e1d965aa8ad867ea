// The groupings the RL policy places, on a real workload: projecting a per-op placement onto
// groups (how the grouping's ceiling is measured) and the Scotch-refined grouping, which must
// express the Scotch baseline's placement exactly while staying within the group budget.
#ifdef PLACESIM_WITH_TORCH
#include <gtest/gtest.h>
#include <set>
#include <utility>

#include "models/grouping.hpp"
#include "models/registry.hpp"
#include "policy/place/methods.hpp"
#include "policy/rl/rl.hpp"
#include "sim/error.hpp"

namespace placesim::policy {
namespace {

const sim::Graph& small_rnnlm() {
  static const sim::Graph g = models::load_graph("rnnlm", "steps=4,layers=2,hidden=256,batch=16");
  return g;
}

TEST(RlGrouping, ProjectionOntoColocationGroupsIsExact) {
  const sim::Graph& g = small_rnnlm();
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  const sim::Placement scotch = make_placement("scotch", g, c);
  // As many groups as co-location groups: nothing is merged, so the projection is the placement
  // (the baselines place whole co-location groups).
  const models::Grouping fine = models::group_graph(g, 1 << 20);
  EXPECT_EQ(fine.expand(models::project_placement(fine, scotch, c)).device_of, scotch.device_of);
}

TEST(RlGrouping, ProjectionIsAMajorityVoteWithinTheAllowedDevices) {
  const sim::Graph& g = small_rnnlm();
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  const models::Grouping gr = models::group_graph(g, 6);
  sim::Placement p;
  p.device_of.assign(static_cast<size_t>(g.num_ops()), 1);
  // Group 0: all but one op on device 2, that one on device 3.
  const auto& ops0 = gr.ops_of_group[0];
  ASSERT_GE(ops0.size(), 2u);
  for (auto op : ops0) p.device_of[static_cast<size_t>(op)] = 2;
  p.device_of[static_cast<size_t>(ops0.back())] = 3;
  const auto dev = models::project_placement(gr, p, c);
  ASSERT_EQ(static_cast<int>(dev.size()), gr.size());
  for (int i = 0; i < gr.size(); ++i) {
    const auto& kind = gr.constraint[static_cast<size_t>(i)];
    if (kind) {
      EXPECT_EQ(c.devices[static_cast<size_t>(dev[static_cast<size_t>(i)])].spec.kind, *kind) << i;
    } else {
      EXPECT_EQ(dev[static_cast<size_t>(i)], i == 0 ? 2 : 1) << i;
    }
  }
  sim::Placement short_one;
  short_one.device_of.assign(3, 0);
  EXPECT_THROW(models::project_placement(gr, short_one, c), sim::InputError);
}

TEST(RlGrouping, RefinedGroupsSplitEachGroupByLabel) {
  const sim::Graph& g = small_rnnlm();
  const models::Grouping gr = models::group_graph(g, 5);
  std::vector<std::int32_t> label(static_cast<size_t>(g.num_ops()));
  for (size_t v = 0; v < label.size(); ++v) label[v] = static_cast<std::int32_t>(v % 2);
  const models::Grouping r = models::refine_grouping(gr, g, label);
  // Every piece lies in one group and carries one label; every (group, label) pair is one piece.
  std::set<std::pair<std::int32_t, std::int32_t>> pairs;
  for (size_t v = 0; v < label.size(); ++v) pairs.emplace(gr.group_of_op[v], label[v]);
  EXPECT_EQ(r.size(), static_cast<int>(pairs.size()));
  for (const auto& ops : r.ops_of_group) {
    ASSERT_FALSE(ops.empty());
    for (auto op : ops) {
      EXPECT_EQ(gr.group_of_op[static_cast<size_t>(op)],
                gr.group_of_op[static_cast<size_t>(ops[0])]);
      EXPECT_EQ(label[static_cast<size_t>(op)], label[static_cast<size_t>(ops[0])]);
    }
  }
  // Pieces keep their group's order in the sequence.
  for (int i = 1; i < r.size(); ++i)
    EXPECT_LE(gr.group_of_op[static_cast<size_t>(r.ops_of_group[static_cast<size_t>(i - 1)][0])],
              gr.group_of_op[static_cast<size_t>(r.ops_of_group[static_cast<size_t>(i)][0])]);
  EXPECT_EQ(r.type_counts.size(), static_cast<size_t>(r.size()));
  EXPECT_THROW(models::refine_grouping(gr, g, std::vector<std::int32_t>(3, 0)), sim::InputError);
}

TEST(RlGrouping, ScotchGrouperExpressesScotchWithinTheBudget) {
  const sim::Graph& g = small_rnnlm();
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  const sim::Placement scotch = make_placement("scotch", g, c);
  TrainConfig cfg;
  cfg.grouper = Grouper::Scotch;
  cfg.max_groups = 12;
  const models::Grouping gr = policy_grouping(g, c, cfg);
  EXPECT_LE(gr.size(), 12);
  EXPECT_GE(gr.size(), 2);
  EXPECT_EQ(gr.expand(models::project_placement(gr, scotch, c)).device_of, scotch.device_of);
  // The plain grouping of the same budget is what it was.
  cfg.grouper = Grouper::GroupGraph;
  EXPECT_EQ(policy_grouping(g, c, cfg).group_of_op, models::group_graph(g, 12).group_of_op);
}

}  // namespace
}  // namespace placesim::policy
#endif  // PLACESIM_WITH_TORCH

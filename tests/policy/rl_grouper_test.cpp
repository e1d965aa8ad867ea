// The Hierarchical Planner's grouper + placer against a synthetic reward (no simulator): it
// learns, and the same seed gives the same run.
#ifdef PLACESIM_WITH_TORCH
#include <gtest/gtest.h>

#include "policy/rl/rl.hpp"
#include "sim/error.hpp"

namespace placesim::policy {
namespace {

// 12 ops of 3 kinds (one-hot) with their position; op i of kind i % 3 belongs on device i % 3.
OpProblem kinds_problem() {
  OpProblem p;
  p.num_devices = 3;
  for (int i = 0; i < 12; ++i)
    p.features.push_back({static_cast<float>(i % 3 == 0), static_cast<float>(i % 3 == 1),
                          static_cast<float>(i % 3 == 2), static_cast<float>(i) / 11.0f});
  return p;
}

// Step time = 1 + number of ops away from their kind's device.
RewardFn kind_reward() {
  return [](const std::vector<DevicesOfGroups>& ps) {
    std::vector<Evaluation> out;
    for (const auto& p : ps) {
      double t = 1.0;
      for (size_t i = 0; i < p.size(); ++i) t += p[i] != static_cast<int>(i % 3) ? 1.0 : 0.0;
      out.push_back({.step_time_s = t});
    }
    return out;
  };
}

RlOptions opts(std::uint64_t seed) {
  return RlOptions{.hidden = 24, .samples = 8, .seed = seed, .learning_rate = 1e-2};
}

TEST(RlGrouper, LearnsToGroupOpsByKindAndPlaceThem) {
  RlOptions o = opts(2);
  o.learning_rate = 3e-3;
  HierarchicalTrainer t(kinds_problem(), 3, o, kind_reward(), 1.0);
  for (int i = 0; i < 120; ++i) t.step();
  const auto& h = t.history();
  // A random placement has 8 of 12 ops wrong on average (step 9); by now the policy has found the
  // perfect one (every op on its kind's device, step 1) and samples mostly near it.
  EXPECT_GT(h.front().mean_step_s, 7.0);
  EXPECT_LT(h.back().mean_step_s, 3.0);
  EXPECT_EQ(t.best_step_s(), 1.0);
  ASSERT_EQ(t.best().size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(t.best()[i], static_cast<int>(i % 3));
}

TEST(RlGrouper, SameSeedSameRun) {
  HierarchicalTrainer a(kinds_problem(), 4, opts(5), kind_reward(), 1.0);
  HierarchicalTrainer b(kinds_problem(), 4, opts(5), kind_reward(), 1.0);
  HierarchicalTrainer c(kinds_problem(), 4, opts(6), kind_reward(), 1.0);
  for (int i = 0; i < 5; ++i) {
    const auto sa = a.step(), sb = b.step(), sc = c.step();
    EXPECT_EQ(sa.mean_reward, sb.mean_reward);
    EXPECT_EQ(sa.entropy, sb.entropy);
    (void)sc;
  }
  EXPECT_EQ(a.best(), b.best());
  EXPECT_NE(a.history().front().mean_reward, c.history().front().mean_reward);
}

TEST(RlGrouper, ConstrainedOpsStayOnAllowedDevices) {
  OpProblem p = kinds_problem();
  p.allowed.assign(12, std::vector<bool>(3, true));
  p.allowed[4] = {false, false, true};
  HierarchicalTrainer t(p, 3, opts(3), kind_reward(), 1.0);
  t.step();
  EXPECT_EQ(t.best()[4], 2);
  EXPECT_THROW(HierarchicalTrainer(OpProblem{.num_devices = 2}, 3, opts(1), kind_reward(), 1.0),
               sim::InputError);
}

TEST(RlGrouper, CoLocatedOpsShareTheirLeadersDevice) {
  // Ops 0, 4 and 8 form one co-location group (an op and its gradient ops), though the reward
  // wants each of them on another device (kinds 0, 1, 2): whatever groups the grouper samples,
  // every sampled placement keeps them on op 0's device, as a placement file must (the learned
  // grouper's placements failed `simulate` when a gradient op landed apart).
  OpProblem p = kinds_problem();
  p.leader.resize(12);
  for (int i = 0; i < 12; ++i) p.leader[static_cast<size_t>(i)] = i;
  p.leader[4] = p.leader[8] = 0;
  std::vector<DevicesOfGroups> seen;
  const RewardFn reward = [&](const std::vector<DevicesOfGroups>& ps) {
    seen.insert(seen.end(), ps.begin(), ps.end());
    return kind_reward()(ps);
  };
  HierarchicalTrainer t(p, 4, opts(7), reward, 1.0);
  for (int i = 0; i < 5; ++i) t.step();
  ASSERT_FALSE(seen.empty());
  for (const auto& d : seen) {
    EXPECT_EQ(d[4], d[0]);
    EXPECT_EQ(d[8], d[0]);
  }
  EXPECT_EQ(t.best()[4], t.best()[0]);
}

}  // namespace
}  // namespace placesim::policy
#endif  // PLACESIM_WITH_TORCH

// The RL trainer against synthetic rewards (fast, no simulator): it learns, it is deterministic,
// a resumed run equals an uninterrupted one, masks hold, bad checkpoints are input errors.
#ifdef PLACESIM_WITH_TORCH
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "policy/rl/rl.hpp"
#include "sim/error.hpp"

#include "tests/common/rewards.hpp"

namespace placesim::policy {
namespace {

PolicyProblem chain_problem(int groups, int devices) {
  PolicyProblem p;
  p.num_devices = devices;
  for (int i = 0; i < groups; ++i)
    p.features.push_back({static_cast<float>(i % 3 == 0), static_cast<float>(i % 3 == 1),
                          static_cast<float>(i) / static_cast<float>(groups), 0.5f});
  return p;
}

using placesim::test::prefer_device;

// A load-balancing reward with OOM: step time = max device load + 0.1 per cut edge; a device
// with more than 60% of the groups runs out of memory.
RewardFn balance(int devices) {
  return [devices](const std::vector<DevicesOfGroups>& ps) {
    std::vector<Evaluation> out;
    for (const auto& p : ps) {
      std::vector<double> load(static_cast<size_t>(devices), 0.0);
      double cut = 0.0;
      for (size_t i = 0; i < p.size(); ++i) {
        load[static_cast<size_t>(p[i])] += 1.0 + static_cast<double>(i % 3) * 0.5;
        if (i > 0 && p[i] != p[i - 1]) cut += 0.1;
      }
      std::vector<int> count(static_cast<size_t>(devices), 0);
      for (auto d : p) ++count[static_cast<size_t>(d)];
      Evaluation e{.step_time_s = *std::max_element(load.begin(), load.end()) + cut};
      const int most = *std::max_element(count.begin(), count.end());
      if (most > static_cast<int>(0.6 * static_cast<double>(p.size()))) {
        e.oom = true;
        e.overflow = most / (0.6 * static_cast<double>(p.size())) - 1.0;
      }
      out.push_back(e);
    }
    return out;
  };
}

RlOptions small(std::uint64_t seed) {
  return RlOptions{.hidden = 24, .samples = 8, .seed = seed, .learning_rate = 1e-2};
}

// The encoder's and decoder's recurrence has its backward written out (policy/rl_lstm.hpp): its
// outputs and every gradient must agree with LibTorch's own LSTM. A wrong sign or a swapped gate
// in the backward gives errors of order 1; float rounding over 9-40 steps stays below 1e-4.
TEST(LstmRecurrence, MatchesLibTorchsLstmForwardAndBackward) {
  EXPECT_LT(lstm_recurrence_max_error(1, 1, 4, 1), 1e-5);
  EXPECT_LT(lstm_recurrence_max_error(9, 3, 8, 2), 1e-5);
  EXPECT_LT(lstm_recurrence_max_error(40, 16, 32, 3), 1e-4);
}

TEST(RlTrainer, LearnsASinglePreferredDevice) {
  Trainer t(chain_problem(8, 3), small(3), prefer_device(2), 1.0);
  for (int i = 0; i < 30; ++i) t.step();
  const DevicesOfGroups g = t.greedy();
  EXPECT_EQ(g, DevicesOfGroups(8, 2));
  EXPECT_DOUBLE_EQ(t.best_step_s(), 1.0);
  EXPECT_LT(t.history().back().entropy, t.history().front().entropy);
}

TEST(RlTrainer, SameSeedSameRunOtherSeedOtherSamples) {
  Trainer a(chain_problem(12, 3), small(7), balance(3), 10.0);
  Trainer b(chain_problem(12, 3), small(7), balance(3), 10.0);
  Trainer c(chain_problem(12, 3), small(8), balance(3), 10.0);
  for (int i = 0; i < 5; ++i) {
    const auto sa = a.step(), sb = b.step();
    c.step();
    EXPECT_EQ(sa.mean_reward, sb.mean_reward);
    EXPECT_EQ(sa.entropy, sb.entropy);
  }
  EXPECT_EQ(a.best(), b.best());
  EXPECT_EQ(a.sample(4), b.sample(4));
  EXPECT_NE(a.sample(4), c.sample(4));
}

TEST(RlTrainer, ResumedRunEqualsUninterruptedRun) {
  const auto dir = std::filesystem::temp_directory_path() / "placesim_rl_resume_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "checkpoint.pt").string();
  Trainer whole(chain_problem(12, 3), small(11), balance(3), 10.0);
  for (int i = 0; i < 6; ++i) whole.step();
  {
    Trainer first(chain_problem(12, 3), small(11), balance(3), 10.0);
    for (int i = 0; i < 3; ++i) first.step();
    first.save(path);
  }
  // The seed must match (the checkpoint checks it: per-sample RNG streams derive from it); the
  // fresh trainer's own weights are discarded for the checkpoint's.
  Trainer resumed(chain_problem(12, 3), small(11), balance(3), 10.0);
  resumed.load(path);
  EXPECT_EQ(resumed.iteration(), 3);
  for (int i = 0; i < 3; ++i) resumed.step();
  ASSERT_EQ(resumed.history().size(), whole.history().size());
  for (size_t i = 0; i < whole.history().size(); ++i) {
    EXPECT_EQ(resumed.history()[i].iteration, whole.history()[i].iteration);
    EXPECT_EQ(resumed.history()[i].mean_reward, whole.history()[i].mean_reward) << i;
    EXPECT_EQ(resumed.history()[i].entropy, whole.history()[i].entropy) << i;
    EXPECT_EQ(resumed.history()[i].baseline, whole.history()[i].baseline) << i;
  }
  EXPECT_EQ(resumed.best(), whole.best());
  EXPECT_EQ(resumed.best_step_s(), whole.best_step_s());
  EXPECT_EQ(resumed.greedy(), whole.greedy());
  EXPECT_EQ(resumed.sample(3), whole.sample(3));
  std::filesystem::remove_all(dir);
}

TEST(RlTrainer, MaskedDevicesAreNeverSampled) {
  PolicyProblem p = chain_problem(8, 4);
  p.allowed.assign(8, std::vector<bool>(4, true));
  for (int d = 1; d < 4; ++d) p.allowed[0][d] = false;  // group 0: device 0 only
  p.allowed[5] = {false, true, false, true};            // group 5: devices 1 or 3
  Trainer t(p, small(5), prefer_device(2), 1.0);
  for (int i = 0; i < 3; ++i) t.step();
  for (const auto& s : t.sample(64)) {
    EXPECT_EQ(s[0], 0);
    EXPECT_TRUE(s[5] == 1 || s[5] == 3) << s[5];
  }
  const auto g = t.greedy();
  EXPECT_EQ(g[0], 0);
  EXPECT_TRUE(g[5] == 1 || g[5] == 3);
}

TEST(RlTrainer, OomPenaltyIsDocumentedScale) {
  // Every placement is 50% over memory: reward = -sqrt(oom_penalty × reference × 1.5).
  RewardFn all_oom = [](const std::vector<DevicesOfGroups>& ps) {
    return std::vector<Evaluation>(ps.size(),
                                   Evaluation{.step_time_s = 0.1, .oom = true, .overflow = 0.5});
  };
  Trainer t(chain_problem(6, 3), small(2), all_oom, 10.0);
  const auto st = t.step();
  EXPECT_EQ(st.oom_fraction, 1.0);
  EXPECT_NEAR(st.mean_reward, -std::sqrt(3.0 * 10.0 * 1.5), 1e-12);
  EXPECT_TRUE(t.best().empty());
  EXPECT_EQ(st.best_step_s, 0.0);
}

TEST(RlTrainer, AdditiveAttentionTrainsToo) {
  RlOptions o = small(4);
  o.attention = AttentionScore::Additive;
  Trainer t(chain_problem(6, 2), o, prefer_device(0), 1.0);
  for (int i = 0; i < 30; ++i) t.step();
  EXPECT_EQ(t.greedy(), DevicesOfGroups(6, 0));
}

TEST(RlTrainer, BadCheckpointsAreInputErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "placesim_rl_badckpt_test";
  std::filesystem::create_directories(dir);
  Trainer t(chain_problem(5, 2), small(1), prefer_device(0), 1.0);
  EXPECT_THROW(t.load((dir / "missing.pt").string()), sim::InputError);
  const std::string junk = (dir / "junk.pt").string();
  std::ofstream(junk) << "not a checkpoint";
  EXPECT_THROW(t.load(junk), sim::InputError);
  Trainer other(chain_problem(7, 2), small(1), prefer_device(0), 1.0);
  const std::string p = (dir / "other.pt").string();
  other.save(p);
  try {
    t.load(p);
    FAIL() << "a checkpoint for 7 groups loaded into a 5-group trainer";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("7 groups"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A chain x -> a -> b -> c -> d with a's and b's gradient ops co-located with them.
sim::Graph small_graph() {
  sim::Graph g;
  g.name = "chain";
  auto add = [&g](const std::string& name, const std::string& type, std::vector<sim::OpId> in,
                  const std::string& group = "") {
    sim::Op op{.name = name, .type = type, .flops = sim::Flops{1e6}};
    for (auto i : in) op.inputs.push_back({i, 0});
    op.outputs = {{.bytes = sim::Bytes{4096}}};
    op.group = group;
    return g.add_op(std::move(op));
  };
  const auto x = add("x", "Placeholder", {});
  const auto a = add("a", "MatMul", {x}, "A");
  const auto b = add("b", "MatMul", {a}, "B");
  const auto c = add("c", "Relu", {b});
  const auto d = add("d", "Loss", {c});
  const auto gb = add("grad_b", "MatMulGrad", {d, b}, "B");
  add("grad_a", "MatMulGrad", {gb, a}, "A");
  g.finalize("chain");
  return g;
}

TEST(RlGrouping, ColocationGroupsCutIntoContiguousChunks) {
  const sim::Graph g = small_graph();
  const models::Grouping all = colocation_grouping(g, 100);
  EXPECT_EQ(all.size(), 5);                           // x, A, B, c, d
  EXPECT_EQ(all.group_of_op[1], all.group_of_op[6]);  // a with grad_a
  EXPECT_EQ(all.group_of_op[2], all.group_of_op[5]);  // b with grad_b
  const models::Grouping two = colocation_grouping(g, 2);
  ASSERT_EQ(two.size(), 2);
  for (int op = 0; op < g.num_ops(); ++op) EXPECT_GE(two.group_of_op[static_cast<size_t>(op)], 0);
  EXPECT_EQ(two.group_of_op[0], 0);
  EXPECT_EQ(two.group_of_op[4], 1);
  sim::Cluster c;
  c.devices.resize(3);
  const PolicyProblem p = make_problem(two, c);
  EXPECT_EQ(p.num_devices, 3);
  ASSERT_EQ(p.num_groups(), 2);
  EXPECT_EQ(p.features[0].size(), p.features[1].size());
  EXPECT_TRUE(p.allowed.empty());
  EXPECT_THROW(colocation_grouping(g, 0), sim::InputError);
}

// One mask for groups (make_problem) and ops (make_op_problem): a constrained item may use only
// the devices of its kind, and a kind the cluster lacks is an input error naming the item.
TEST(AllowedDevices, FollowDeviceKindsAndNameWhatCannotBePlaced) {
  sim::Cluster c;
  c.name = "two";
  c.devices.resize(3);
  c.devices[0].spec.kind = sim::DeviceKind::Cpu;
  c.devices[1].spec.kind = sim::DeviceKind::Gpu;
  c.devices[2].spec.kind = sim::DeviceKind::Gpu;
  EXPECT_TRUE(allowed_devices(c, {std::nullopt, std::nullopt}, {"group a", "group b"}).empty());
  const auto m = allowed_devices(c, {std::nullopt, sim::DeviceKind::Cpu}, {"group a", "group b"});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], (std::vector<bool>{true, true, true}));
  EXPECT_EQ(m[1], (std::vector<bool>{true, false, false}));
  c.devices.erase(c.devices.begin());
  try {
    (void)allowed_devices(c, {sim::DeviceKind::Cpu}, {"op embed"});
    ADD_FAILURE() << "a CPU op on a GPU-only cluster was accepted";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a CPU device for op embed"), std::string::npos)
        << e.what();
  }
}

TEST(RlTrainer, ResumeWithOtherOptionsNamesTheFlag) {
  const auto dir = std::filesystem::temp_directory_path() / "placesim_rl_options_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "checkpoint.pt").string();
  {
    Trainer t(chain_problem(6, 3), small(3), prefer_device(1), 1.0);
    t.step();
    t.save(path);
  }
  auto expect_flag = [&](RlOptions o, const std::string& flag) {
    Trainer t(chain_problem(6, 3), o, prefer_device(1), 1.0);
    try {
      t.load(path);
      FAIL() << "resumed with another " << flag;
    } catch (const sim::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(flag), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  RlOptions lr = small(3);
  lr.learning_rate = 2e-2;
  expect_flag(lr, "--lr");
  RlOptions samples = small(3);
  samples.samples = 4;
  expect_flag(samples, "--samples");
  expect_flag(small(4), "--seed");
  RlOptions entropy = small(3);
  entropy.entropy_weight = 0.5;
  expect_flag(entropy, "--entropy");
  RlOptions temperature = small(3);
  temperature.temperature = 2.0;
  expect_flag(temperature, "--temperature");
  Trainer same(chain_problem(6, 3), small(3), prefer_device(1), 1.0);
  EXPECT_NO_THROW(same.load(path));
  std::filesystem::remove_all(dir);
}

// Trained on two problems of different lengths, the policy places a third, unseen length.
TEST(RlTrainer, OnePolicyForSeveralProblemsPlacesAnUnseenOne) {
  const auto dir = std::filesystem::temp_directory_path() / "placesim_rl_multi_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "checkpoint.pt").string();
  {
    Trainer t(chain_problem(8, 3), small(6), prefer_device(2), 1.0);
    for (int i = 0; i < 40; ++i) {
      if (i % 2 == 1)
        t.set_problem(chain_problem(5, 3), prefer_device(2), 1.0);
      else if (i > 0)
        t.set_problem(chain_problem(8, 3), prefer_device(2), 1.0);
      t.step();
    }
    EXPECT_EQ(t.history().size(), 40u);
    t.save(path);
  }
  Trainer fresh(chain_problem(11, 3), small(9), prefer_device(2), 1.0);
  EXPECT_NE(fresh.greedy(), DevicesOfGroups(11, 2));
  fresh.load_weights(path);
  EXPECT_EQ(fresh.greedy(), DevicesOfGroups(11, 2));
  EXPECT_EQ(fresh.iteration(), 0);
  // Another device count or feature width is an input error.
  Trainer other(chain_problem(5, 4), small(9), prefer_device(2), 1.0);
  EXPECT_THROW(other.load_weights(path), sim::InputError);
  EXPECT_THROW(fresh.set_problem(chain_problem(5, 4), prefer_device(2), 1.0), sim::InputError);
  std::filesystem::remove_all(dir);
}

TEST(RlGrouping, SharedVocabularyGivesOneFeatureWidth) {
  const sim::Graph g = small_graph();
  const models::Grouping gr = colocation_grouping(g, 100);
  sim::Cluster c;
  c.devices.resize(2);
  const PolicyProblem own = make_problem(gr, c);
  // A vocabulary with types the graph lacks and without "Relu" and "Placeholder": those two share
  // the extra last column.
  const std::vector<std::string> vocab{"Conv2D", "Loss", "MatMul", "MatMulGrad", "Softmax"};
  const PolicyProblem shared = make_problem(gr, c, vocab);
  EXPECT_EQ(shared.vocab, vocab);
  ASSERT_EQ(shared.features[0].size(),
            own.features[0].size() - gr.type_vocab.size() + vocab.size() + 1);
  EXPECT_EQ(shared.features[0][vocab.size()], 1.0f);  // x: Placeholder -> "other"
  EXPECT_EQ(shared.features[0][2], 0.0f);
  EXPECT_EQ(shared.features[1][2], 0.5f);  // A: MatMul + MatMulGrad
  EXPECT_EQ(shared.features[1][3], 0.5f);
  EXPECT_THROW(make_problem(gr, c, {"b", "a"}), sim::InputError);
}

TEST(RlTrainer, RejectsBadOptions) {
  EXPECT_THROW(Trainer(chain_problem(3, 2), RlOptions{.samples = 0}, prefer_device(0), 1.0),
               sim::InputError);
  EXPECT_THROW(Trainer(PolicyProblem{.num_devices = 2}, RlOptions{}, prefer_device(0), 1.0),
               sim::InputError);
}

}  // namespace
}  // namespace placesim::policy
#endif  // PLACESIM_WITH_TORCH

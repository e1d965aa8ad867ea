// The GNN placement policy (policy/rl_gnn.hpp): it learns a synthetic reward with PPO and with
// REINFORCE, a seed reproduces a run bit for bit, one policy file places problems of other sizes
// (groups, devices), and damaged or foreign policy files are input errors.
#ifdef PLACESIM_WITH_TORCH
#include "policy/rl/rl_gnn.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>

#include "models/registry.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/simulate.hpp"

#include "tests/common/rewards.hpp"

namespace placesim::policy {
namespace {

// A chain of `groups` groups on `devices` identical devices (index features tell them apart).
GnnProblem chain_problem(int groups, int devices) {
  GnnProblem p;
  for (int i = 0; i < groups; ++i) {
    std::vector<float> f(static_cast<size_t>(gnn_group_features()), 0.0f);
    f[static_cast<size_t>(i % 3)] = 1.0f;
    f[18] = static_cast<float>(i) / static_cast<float>(std::max(1, groups - 1));
    p.groups.push_back(f);
    p.pred.push_back(i > 0 ? std::vector<std::int32_t>{i - 1} : std::vector<std::int32_t>{});
    p.succ.push_back(i + 1 < groups ? std::vector<std::int32_t>{i + 1}
                                    : std::vector<std::int32_t>{});
  }
  for (int d = 0; d < devices; ++d) {
    std::vector<float> f(static_cast<size_t>(gnn_device_features()), 0.5f);
    f[10] = static_cast<float>(d) / static_cast<float>(std::max(1, devices - 1));
    p.devices.push_back(f);
  }
  return p;
}

using placesim::test::prefer_device;

GnnOptions small(PolicyUpdate update) {
  GnnOptions o;
  o.hidden = 16;
  o.rounds = 2;
  o.samples = 8;
  o.seed = 3;
  o.learning_rate = 1e-2;
  o.update = update;
  return o;
}

TEST(GnnPolicy, PpoAndReinforceLearnASyntheticReward) {
  for (PolicyUpdate u : {PolicyUpdate::Ppo, PolicyUpdate::Reinforce}) {
    GnnTrainer t(chain_problem(10, 4), small(u), prefer_device(2), 1.0);
    const double first = t.step().mean_step_s;
    // PPO takes ppo_epochs (4) gradient steps per batch, REINFORCE one.
    for (int i = 0; i < (u == PolicyUpdate::Ppo ? 60 : 240); ++i) t.step();
    const IterationStats last = t.step();
    const char* name = u == PolicyUpdate::Ppo ? "ppo" : "reinforce";
    EXPECT_LT(last.mean_step_s, first) << name;
    int on_target = 0;
    std::string greedy;
    for (auto d : t.greedy()) {
      on_target += d == 2;
      greedy += std::to_string(d);
    }
    EXPECT_GE(on_target, 8) << name << ": greedy " << greedy << ", mean step " << first << " -> "
                            << last.mean_step_s << ", entropy " << last.entropy;
  }
}

TEST(GnnPolicy, SameSeedSameBits) {
  auto run = [] {
    GnnTrainer t(chain_problem(12, 3), small(PolicyUpdate::Ppo), prefer_device(1), 1.0);
    for (int i = 0; i < 8; ++i) t.step();
    return std::make_pair(t.history(), t.greedy());
  };
  const auto [h1, g1] = run();
  const auto [h2, g2] = run();
  ASSERT_EQ(h1.size(), h2.size());
  for (size_t i = 0; i < h1.size(); ++i) {
    EXPECT_EQ(h1[i].mean_reward, h2[i].mean_reward);
    EXPECT_EQ(h1[i].entropy, h2[i].entropy);
    EXPECT_EQ(h1[i].best_step_s, h2[i].best_step_s);
  }
  EXPECT_EQ(g1, g2);
}

TEST(GnnPolicy, OnePolicyFilePlacesOtherSizesAndRespectsMasks) {
  const auto dir = std::filesystem::temp_directory_path() / "placesim_gnn_test_sizes";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "p.ckpt").string();
  GnnTrainer t(chain_problem(10, 4), small(PolicyUpdate::Ppo), prefer_device(0), 1.0);
  for (int i = 0; i < 5; ++i) t.step();
  t.save_policy(path, "unit test");
  const auto [opts, how] = read_gnn_policy_header(path);
  EXPECT_EQ(opts.hidden, 16);
  EXPECT_EQ(opts.rounds, 2);
  EXPECT_EQ(how, "unit test");
  // 37 groups on 8 devices, groups 0..4 allowed only on device 7.
  GnnProblem other = chain_problem(37, 8);
  other.allowed.assign(37, std::vector<bool>(8, true));
  for (int i = 0; i < 5; ++i)
    for (int d = 0; d < 7; ++d)
      other.allowed[static_cast<size_t>(i)][static_cast<size_t>(d)] = false;
  GnnTrainer u(other, small(PolicyUpdate::Ppo), prefer_device(3), 1.0);
  u.load_policy(path);
  const DevicesOfGroups g = u.greedy();
  ASSERT_EQ(g.size(), 37u);
  for (int i = 0; i < 37; ++i) {
    EXPECT_GE(g[static_cast<size_t>(i)], 0);
    EXPECT_LT(g[static_cast<size_t>(i)], 8);
    if (i < 5) EXPECT_EQ(g[static_cast<size_t>(i)], 7);
  }
  for (int i = 0; i < 3; ++i) u.step();  // and it trains there (fine-tuning)
  std::filesystem::remove_all(dir);
}

TEST(GnnPolicy, DamagedOrForeignPolicyFilesAreInputErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "placesim_gnn_test_bad";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.ckpt").string();
  GnnTrainer t(chain_problem(6, 2), small(PolicyUpdate::Ppo), prefer_device(0), 1.0);
  t.save_policy(good, "x");
  const std::string bytes = sim::read_text_file(good);
  auto write = [&](const std::string& name, const std::string& content) {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  };
  std::string flipped = bytes;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x20);
  for (const std::string& bad :
       {(dir / "missing.ckpt").string(), write("cut.ckpt", bytes.substr(0, bytes.size() / 2)),
        write("flip.ckpt", flipped), write("text.ckpt", "hello\n")}) {
    EXPECT_THROW(read_gnn_policy_header(bad), sim::InputError) << bad;
    GnnTrainer u(chain_problem(6, 2), small(PolicyUpdate::Ppo), prefer_device(0), 1.0);
    EXPECT_THROW(u.load_policy(bad), sim::InputError) << bad;
  }
  // Another width: refused, not loaded into a network of another shape.
  GnnOptions wide = small(PolicyUpdate::Ppo);
  wide.hidden = 32;
  GnnTrainer w(chain_problem(6, 2), wide, prefer_device(0), 1.0);
  EXPECT_THROW(w.load_policy(good), sim::InputError);
  std::filesystem::remove_all(dir);
}

TEST(GnnPolicy, FeaturesOfARealGraphAndClusterAndZeroShotPlacement) {
  const sim::Graph g = models::load_graph("rnnlm", "steps=3,hidden=128,vocab=500,batch=8");
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  TrainConfig cfg;
  const models::Grouping gr = policy_grouping(g, c, cfg);
  const GnnProblem p = make_gnn_problem(gr, c);
  ASSERT_EQ(p.num_groups(), gr.size());
  ASSERT_EQ(p.num_devices(), c.num_devices());
  for (const auto& f : p.groups) ASSERT_EQ(static_cast<int>(f.size()), gnn_group_features());
  for (const auto& f : p.devices) ASSERT_EQ(static_cast<int>(f.size()), gnn_device_features());
  EXPECT_NE(p.devices[1], p.devices[2]);  // identical GPUs, told apart by their index
  // A policy file places the graph (greedy, no training): one device per op.
  const auto dir = std::filesystem::temp_directory_path() / "placesim_gnn_test_place";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "p.ckpt").string();
  GnnTrainer t(p, small(PolicyUpdate::Ppo), prefer_device(1), 1.0);
  t.save_policy(path, "x");
  const sim::Placement a = place_with_gnn(path, g, c, {});
  const sim::Placement b = place_with_gnn(path, g, c, {});
  ASSERT_EQ(static_cast<int>(a.device_of.size()), g.num_ops());
  EXPECT_EQ(a.device_of, b.device_of);
  std::filesystem::remove_all(dir);
}

// Test-time search (place --method rl): never worse than any candidate it scored, the step time it
// reports is the simulator's for the placement it returns, a budget of 0 keeps the best candidate,
// and the result does not depend on the thread count.
TEST(GnnPolicy, TestTimeSearchKeepsTheBestCandidateAndImprovesIt) {
  const sim::Graph g = models::load_graph("rnnlm", "steps=3,hidden=128,vocab=500,batch=8");
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  TrainConfig cfg;
  const models::Grouping gr = policy_grouping(g, c, cfg);
  const auto dir = std::filesystem::temp_directory_path() / "placesim_gnn_test_search";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "p.ckpt").string();
  GnnTrainer t(make_gnn_problem(gr, c), small(PolicyUpdate::Ppo), prefer_device(1), 1.0);
  t.save_policy(path, "x");

  GnnPlaceOptions none;
  none.samples = 0;
  none.search_evaluations = 0;
  none.op_evaluations = 0;
  const GnnPlacement plain = place_with_gnn_search(path, g, c, {}, none);
  ASSERT_GT(plain.greedy_s, 0.0);
  EXPECT_EQ(plain.sampled_s, 0.0);  // no samples drawn
  const double best_candidate =
      plain.hint_s > 0 ? std::min(plain.greedy_s, plain.hint_s) : plain.greedy_s;
  EXPECT_EQ(plain.final_s, best_candidate);

  GnnPlaceOptions o;
  o.samples = 8;
  o.search_evaluations = 60;
  o.op_evaluations = 40;
  o.sim_threads = 1;
  const GnnPlacement a = place_with_gnn_search(path, g, c, {}, o);
  o.sim_threads = 2;
  const GnnPlacement b = place_with_gnn_search(path, g, c, {}, o);
  EXPECT_EQ(a.placement.device_of, b.placement.device_of);
  EXPECT_EQ(a.final_s, b.final_s);
  EXPECT_LE(a.final_s, best_candidate);
  EXPECT_LE(a.final_s, a.sampled_s);
  EXPECT_GT(a.sampled_s, 0.0);
  // 1 reference (single-GPU) + greedy + hints + 8 samples + at most 60 moves per start + 40.
  EXPECT_LE(a.evaluations, 1 + 1 + kGnnHints + 8 + 3 * 60 + 40);
  EXPECT_GT(a.evaluations, 1 + 1 + 8);  // the searches ran
  sim::SimOptions so;
  so.record_critical_path = false;
  const sim::BatchOracle oracle(c, g, so);
  EXPECT_EQ(oracle.evaluate(a.placement).step_time.seconds(), a.final_s);
  // The op-level moves keep every co-location group on one device.
  std::map<std::string, sim::DeviceId> device_of_group;
  for (int o = 0; o < g.num_ops(); ++o) {
    const auto d = a.placement.device_of[static_cast<size_t>(o)];
    EXPECT_EQ(device_of_group.emplace(g.group_of(o), d).first->second, d) << g.group_of(o);
  }
  // place_with_gnn is the search with its defaults.
  GnnPlaceOptions d;
  EXPECT_EQ(place_with_gnn(path, g, c, {}).device_of,
            place_with_gnn_search(path, g, c, {}, d).placement.device_of);
  // A deadline already past (train --minutes at the end of its budget): the candidates are
  // drawn and priced, but no move is simulated; the result is the best candidate.
  o.deadline = std::chrono::steady_clock::now();
  const GnnPlacement late = place_with_gnn_search(path, g, c, {}, o);
  EXPECT_EQ(late.evaluations, 1 + 1 + kGnnHints + 8);
  EXPECT_LE(late.final_s, best_candidate);
  EXPECT_GE(late.final_s, a.final_s);
  d.samples = -1;
  EXPECT_THROW(place_with_gnn_search(path, g, c, {}, d), sim::InputError);
  std::filesystem::remove_all(dir);
}

// `train --policy gnn --pretrained P` ends with the test-time search from the fine-tuned policy,
// seeded with training's best: the final placement is never worse than the best placement seen in
// training or the search before training (the zero-shot placement), its step time is the
// simulator's, and a fixed seed and counts give the same bits on
// any thread count. Without the search the result is training's best, as before.
TEST(GnnPolicy, FineTuneEndsWithTheSearchAndNeverLosesTrainingsBest) {
  ::unsetenv("PLACESIM_RL_SEARCH");  // the first search is place --method rl's defaults
  const sim::Graph g = models::load_graph("rnnlm", "steps=3,hidden=128,vocab=500,batch=8");
  const sim::Cluster c = sim::load_cluster("paper-4gpu");
  TrainConfig cfg;
  const auto dir = std::filesystem::temp_directory_path() / "placesim_gnn_test_finetune";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "p.ckpt").string();
  {
    GnnTrainer t(make_gnn_problem(policy_grouping(g, c, cfg), c), small(PolicyUpdate::Ppo),
                 prefer_device(1), 1.0);
    t.save_policy(path, "x");
  }
  cfg.pretrained = path;
  cfg.iterations = 3;
  GnnOptions opt = small(PolicyUpdate::Ppo);
  GnnPlaceOptions search;
  search.samples = 8;
  search.search_evaluations = 40;
  search.starts = 2;
  search.op_evaluations = 40;
  cfg.sim_threads = 1;
  const TrainResult plain = train_gnn(g, c, cfg, opt);
  const TrainResult a = train_gnn(g, c, cfg, opt, search);
  cfg.sim_threads = 2;
  const TrainResult b = train_gnn(g, c, cfg, opt, search);
  EXPECT_EQ(plain.search_evaluations, 0);
  EXPECT_EQ(plain.trained_step_s, 0.0);
  ASSERT_GT(a.search_evaluations, 0);
  // The same training (same seed, same iterations) before the search.
  EXPECT_EQ(a.trained_step_s, plain.best_step_s);
  EXPECT_LE(a.best_step_s, a.trained_step_s);
  for (const auto& st : a.history)
    EXPECT_LE(a.best_step_s, st.min_step_s > 0 ? st.min_step_s : 1e9);
  // Two searches: place --method rl's from the policy before training, then `search` from the
  // trained one with 2 seeds (training's best, the first search's result).
  EXPECT_LE(a.search_evaluations, gnn_search_max_evaluations(GnnPlaceOptions{}, 0) +
                                      gnn_search_max_evaluations(search, 2));
  // Never worse than place --method rl (the zero-shot search) with the same policy file.
  EXPECT_LE(a.best_step_s, place_with_gnn_search(path, g, c, {}, GnnPlaceOptions{}).final_s);
  EXPECT_EQ(a.best.device_of, b.best.device_of);
  EXPECT_EQ(a.best_step_s, b.best_step_s);
  EXPECT_EQ(a.evaluations, b.evaluations);
  sim::SimOptions so;
  so.record_critical_path = false;
  const sim::BatchOracle oracle(c, g, so);
  EXPECT_EQ(oracle.evaluate(a.best).step_time.seconds(), a.best_step_s);
  EXPECT_THROW(parse_gnn_search("1,2,3", "<flag --search>"), sim::InputError);
  std::filesystem::remove_all(dir);
}

// PLACESIM_RL_SEARCH sizes the search; anything but four non-negative integers is an input error.
TEST(GnnPolicy, SearchSizeFromTheEnvironment) {
  ::unsetenv("PLACESIM_RL_SEARCH");
  EXPECT_EQ(gnn_place_options_from_env().samples, GnnPlaceOptions{}.samples);
  ::setenv("PLACESIM_RL_SEARCH", "0,0,1,0", 1);
  const GnnPlaceOptions o = gnn_place_options_from_env();
  EXPECT_EQ(o.samples, 0);
  EXPECT_EQ(o.search_evaluations, 0);
  EXPECT_EQ(o.starts, 1);
  EXPECT_EQ(o.op_evaluations, 0);
  for (const char* bad : {"1,2,3", "1,2,3,4,5", "1,2,0,4", "-1,2,3,4", "a,b,c,d", "1,2,3,4x"}) {
    ::setenv("PLACESIM_RL_SEARCH", bad, 1);
    EXPECT_THROW(gnn_place_options_from_env(), sim::InputError) << bad;
  }
  ::unsetenv("PLACESIM_RL_SEARCH");
}

}  // namespace
}  // namespace placesim::policy
#endif

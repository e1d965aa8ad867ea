// Data-parallel training (policy/comm/shards.hpp): shard plans, per-sample seeds, fixed-order
// sums, and a trainer split over two "ranks" (threads exchanging through a Comm) that ends
// with the single process's bits. The real 2-rank mpirun run is tests/cli/train_mpi_test.sh.
#include <cmath>
#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <string>
#include <thread>
#include <vector>

#include "policy/comm/shards.hpp"
#include "policy/comm/thread_comm.hpp"
#include "policy/sweep/sweep.hpp"
#include "sim/error.hpp"
#ifdef PLACESIM_WITH_TORCH
#include "policy/rl/rl.hpp"
#endif

namespace placesim::policy {
namespace {

// Runs fn(comm) on `ranks` threads and returns their results in rank order.
template <typename T>
std::vector<T> on_ranks(int ranks, const std::function<T(const Comm&)>& fn) {
  ThreadComm::Shared hub(ranks);
  std::vector<ThreadComm> comms;
  for (int r = 0; r < ranks; ++r) comms.emplace_back(hub, r);
  std::vector<T> out(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back(
        [&, r] { out[static_cast<size_t>(r)] = fn(comms[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
  return out;
}

TEST(ShardPlan, SplitsSamplesIntoContiguousShardsAndShardsEvenlyOverRanks) {
  const ShardPlan one(10, 4, 0, 1);
  EXPECT_EQ(one.first_shard(), 0);
  EXPECT_EQ(one.end_shard(), 4);
  EXPECT_EQ(one.samples_of(0), (std::pair<int, int>{0, 2}));
  EXPECT_EQ(one.samples_of(1), (std::pair<int, int>{2, 5}));
  EXPECT_EQ(one.samples_of(3), (std::pair<int, int>{7, 10}));
  const ShardPlan second(10, 4, 1, 2);
  EXPECT_EQ(second.first_shard(), 2);
  EXPECT_EQ(second.end_shard(), 4);
  EXPECT_EQ(second.first_sample(), 5);
  EXPECT_EQ(second.end_sample(), 10);
  EXPECT_THROW(ShardPlan(10, 3, 0, 2), sim::InputError);  // 2 ranks, 3 shards
  EXPECT_THROW(ShardPlan(4, 8, 0, 1), sim::InputError);   // more shards than samples
  EXPECT_THROW(ShardPlan(4, 0, 0, 1), sim::InputError);
  try {
    (void)ShardPlan(16, 3, 0, 2);
    FAIL();
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--shards"), std::string::npos) << e.what();
  }
}

TEST(SampleSeed, DependsOnSeedIterationAndSampleOnly) {
  EXPECT_EQ(sample_seed(1, 2, 3), sample_seed(1, 2, 3));
  EXPECT_NE(sample_seed(1, 2, 3), sample_seed(1, 2, 4));
  EXPECT_NE(sample_seed(1, 2, 3), sample_seed(1, 3, 3));
  EXPECT_NE(sample_seed(1, 2, 3), sample_seed(2, 2, 3));
  EXPECT_NE(sample_seed(0, 0, 1), sample_seed(0, 1, 0));  // not symmetric in its arguments
}

// Values whose float sum depends on the grouping: in column 0, ((a + b) + c) + d = 1 while
// (a + b) + (c + d) = 0, as 1e8 + 1 rounds to 1e8 in float.
std::vector<std::vector<float>> awkward_shards() {
  return {{1e8f, 1.0f}, {1.0f, 3.0f}, {-1e8f, 1e-8f}, {1.0f, -3.0f}};
}

TEST(SumShards, OneProcessAddsShardsLeftToRight) {
  const auto s = awkward_shards();
  const std::vector<float> sum = sum_shards_fixed_order(nullptr, s);
  ASSERT_EQ(sum.size(), 2u);
  EXPECT_EQ(sum[0], ((s[0][0] + s[1][0]) + s[2][0]) + s[3][0]);
  EXPECT_EQ(sum[1], ((s[0][1] + s[1][1]) + s[2][1]) + s[3][1]);
  EXPECT_NE(((s[0][0] + s[1][0]) + s[2][0]) + s[3][0], (s[0][0] + s[1][0]) + (s[2][0] + s[3][0]));
}

TEST(SumShards, TwoRanksGiveTheSameBitsOnEveryRank) {
  const auto s = awkward_shards();
  const std::vector<float> single = sum_shards_fixed_order(nullptr, s);
  const auto per_rank = on_ranks<std::vector<float>>(2, [&](const Comm& comm) {
    const ShardPlan plan(8, 4, comm.rank(), comm.size());
    std::vector<std::vector<float>> mine(s.begin() + plan.first_shard(),
                                         s.begin() + plan.end_shard());
    return sum_shards_fixed_order(&comm, mine);
  });
  for (const auto& r : per_rank) {
    ASSERT_EQ(r.size(), single.size());
    EXPECT_EQ(std::memcmp(r.data(), single.data(), r.size() * sizeof(float)), 0);
  }
}

// The reduce-scatter cuts the vector into one chunk per rank; lengths that the rank count does
// not divide, and vectors shorter than the rank count (the entropy's single number), leave
// uneven and empty chunks, which must still give one process's bits.
TEST(SumShards, AnyRankCountAndLengthGiveTheSingleProcessBits) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{1000}}) {
    std::vector<std::vector<float>> s(4, std::vector<float>(n));
    for (std::size_t sh = 0; sh < 4; ++sh)
      for (std::size_t i = 0; i < n; ++i)  // magnitudes 1e-3..1e7: the order of addition shows
        s[sh][i] = static_cast<float>((sh % 2 ? -1.0 : 1.0) *
                                      std::pow(10.0, static_cast<double>((i + 3 * sh) % 11) - 3.0) *
                                      (1.0 + 0.1234567 * static_cast<double>(i)));
    const std::vector<float> single = sum_shards_fixed_order(nullptr, s);
    for (const int ranks : {2, 4}) {
      const auto per_rank = on_ranks<std::vector<float>>(ranks, [&](const Comm& comm) {
        const ShardPlan plan(8, 4, comm.rank(), comm.size());
        std::vector<std::vector<float>> mine(s.begin() + plan.first_shard(),
                                             s.begin() + plan.end_shard());
        return sum_shards_fixed_order(&comm, mine);
      });
      for (const auto& r : per_rank) {
        ASSERT_EQ(r.size(), n) << ranks << " ranks";
        EXPECT_EQ(std::memcmp(r.data(), single.data(), n * sizeof(float)), 0)
            << n << " elements, " << ranks << " ranks";
      }
    }
  }
}

TEST(Alltoall, PartRGoesToRankR) {
  const auto got = on_ranks<std::vector<std::string>>(3, [](const Comm& comm) {
    std::vector<std::string> to_each;
    for (int q = 0; q < comm.size(); ++q)
      to_each.push_back(std::to_string(comm.rank()) + ">" + std::to_string(q));
    return comm.alltoall(to_each);
  });
  for (int q = 0; q < 3; ++q)
    EXPECT_EQ(got[static_cast<size_t>(q)],
              (std::vector<std::string>{"0>" + std::to_string(q), "1>" + std::to_string(q),
                                        "2>" + std::to_string(q)}));
}

TEST(Allgather, EveryRankGetsEveryPartInRankOrder) {
  const auto got = on_ranks<std::vector<std::string>>(3, [](const Comm& comm) {
    return allgather(&comm, std::string(static_cast<size_t>(comm.rank()), 'x') + "|");
  });
  const std::vector<std::string> want{"|", "x|", "xx|"};
  for (const auto& g : got) EXPECT_EQ(g, want);
  EXPECT_EQ(rank0_decides(nullptr, true), true);
}

#ifdef PLACESIM_WITH_TORCH

PolicyProblem small_problem() {
  PolicyProblem p;
  p.num_devices = 3;
  for (int i = 0; i < 10; ++i)
    p.features.push_back({static_cast<float>(i % 2), static_cast<float>(i) / 10.0f, 0.25f});
  return p;
}

// Step time = 1 + groups off device (group % 3) + a little per device change.
std::vector<Evaluation> score(const std::vector<DevicesOfGroups>& ps) {
  std::vector<Evaluation> out;
  for (const auto& p : ps) {
    double t = 1.0;
    for (size_t i = 0; i < p.size(); ++i) {
      t += p[i] != static_cast<int>(i % 3) ? 1.0 : 0.0;
      if (i > 0 && p[i] != p[i - 1]) t += 0.05;
    }
    out.push_back({.step_time_s = t, .oom = t > 9.5, .overflow = t > 9.5 ? 0.5 : 0.0});
  }
  return out;
}

struct RunResult {
  std::vector<IterationStats> history;
  DevicesOfGroups best, greedy;
  int scored = 0;  // placements this rank's reward function saw
};

RunResult run(Trainer& t, int iterations, const int& scored) {
  for (int i = 0; i < iterations; ++i) t.step();
  return {t.history(), t.best(), t.greedy(), scored};
}

RlOptions options() {
  return RlOptions{.hidden = 16,
                   .samples = 8,
                   .seed = 11,
                   .learning_rate = 2e-2,
                   .entropy_weight = 0.01,
                   .shards = 4};
}

TEST(DataParallelTrainer, TwoRanksEndWithTheSingleProcessBits) {
  constexpr int kIterations = 4;
  int scored_single = 0;
  Trainer single(
      small_problem(), options(),
      [&](const auto& ps) {
        scored_single += static_cast<int>(ps.size());
        return score(ps);
      },
      2.0);
  const RunResult want = run(single, kIterations, scored_single);

  // The trainers are built here, one after the other: the weights come from torch's global RNG.
  ThreadComm::Shared hub(2);
  ThreadComm c0(hub, 0), c1(hub, 1);
  int scored[2] = {0, 0};
  auto make = [&](const ThreadComm& c, int& counter) {
    return std::make_unique<Trainer>(
        small_problem(), options(),
        [&counter](const auto& ps) {
          counter += static_cast<int>(ps.size());
          return score(ps);
        },
        2.0, &c);
  };
  auto t0 = make(c0, scored[0]);
  auto t1 = make(c1, scored[1]);
  RunResult got[2];
  std::thread th([&] { got[1] = run(*t1, kIterations, scored[1]); });
  got[0] = run(*t0, kIterations, scored[0]);
  th.join();

  for (const RunResult& g : got) {
    EXPECT_EQ(g.scored, 8 / 2 * kIterations);  // each rank scored only its half
    ASSERT_EQ(g.history.size(), want.history.size());
    for (size_t i = 0; i < want.history.size(); ++i) {
      const IterationStats &a = want.history[i], &b = g.history[i];
      EXPECT_EQ(a.best_step_s, b.best_step_s) << "iteration " << i + 1;
      EXPECT_EQ(a.mean_step_s, b.mean_step_s) << "iteration " << i + 1;
      EXPECT_EQ(a.oom_fraction, b.oom_fraction) << "iteration " << i + 1;
      EXPECT_EQ(a.mean_reward, b.mean_reward) << "iteration " << i + 1;
      EXPECT_EQ(a.baseline, b.baseline) << "iteration " << i + 1;
      EXPECT_EQ(a.entropy, b.entropy) << "iteration " << i + 1;
    }
    EXPECT_EQ(g.best, want.best);
    EXPECT_EQ(g.greedy, want.greedy);
  }
  EXPECT_EQ(scored_single, 8 * kIterations);
}

TEST(DataParallelTrainer, ShardsThatTheRanksCannotSplitAreInputErrors) {
  ThreadComm::Shared hub(2);
  ThreadComm c0(hub, 0);
  RlOptions o = options();
  o.shards = 3;
  EXPECT_THROW(Trainer(small_problem(), o, score, 1.0, &c0), sim::InputError);
  o.shards = 9;  // more than the 8 samples
  EXPECT_THROW(Trainer(small_problem(), o, score, 1.0), sim::InputError);
}

#endif  // PLACESIM_WITH_TORCH

}  // namespace
}  // namespace placesim::policy

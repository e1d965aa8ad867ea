// The max-min solver and the flow network against hand-computed cases. Every solver in this test
// binary checks its invariants after each solve (maxmin.hpp), so each case here, and every
// simulation of tests/sim, also runs the check.
#include "sim/maxmin.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

#include "sim/network.hpp"

namespace placesim::sim {

/// Reaches into the solver to corrupt its state, so the tests can see the check fail.
struct MaxMinSolverTestAccess {
  static double& value(MaxMinSolver& s, int v) { return s.vars_[v].value; }
  static std::vector<int>& vars_of(MaxMinSolver& s, int c) { return s.cons_[c].vars; }
  static int& weighted(MaxMinSolver& s, int c) { return s.cons_[c].weighted; }
};

namespace {

// Before main(): the default of every solver this binary creates, whatever the environment says.
[[maybe_unused]] const bool kChecksOn = (MaxMinSolver::set_check_invariants_default(true), true);

int add(MaxMinSolver& s, double bound, std::vector<int> cons) {
  return s.add_variable(bound, cons);
}

TEST(MaxMin, OneSharedLinkSplitsEvenly) {
  MaxMinSolver s;
  const int l = s.add_constraint(10.0);
  const int a = add(s, kUnbounded, {l});
  const int b = add(s, kUnbounded, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 5.0);
  EXPECT_DOUBLE_EQ(s.value(b), 5.0);
  EXPECT_DOUBLE_EQ(s.usage(l), 10.0);
}

TEST(MaxMin, MultiHopBottleneckLeavesRestToOthers) {
  // Flow a crosses A (10) and B (4); flow b only A. a is limited by B to 4, b takes the 6 left.
  MaxMinSolver s;
  const int A = s.add_constraint(10.0), B = s.add_constraint(4.0);
  const int a = add(s, kUnbounded, {A, B});
  const int b = add(s, kUnbounded, {A});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 4.0);
  EXPECT_DOUBLE_EQ(s.value(b), 6.0);
}

TEST(MaxMin, ClassicParkingLot) {
  // Long flow over L1 and L2 (capacity 1 each), one short flow on each: every flow gets 1/2.
  MaxMinSolver s;
  const int l1 = s.add_constraint(1.0), l2 = s.add_constraint(1.0);
  const int lng = add(s, kUnbounded, {l1, l2});
  const int s1 = add(s, kUnbounded, {l1});
  const int s2 = add(s, kUnbounded, {l2});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(lng), 0.5);
  EXPECT_DOUBLE_EQ(s.value(s1), 0.5);
  EXPECT_DOUBLE_EQ(s.value(s2), 0.5);
}

TEST(MaxMin, UnequalCapacitiesTwoLevels) {
  // L1 = 3 shared by x, y, z; L2 = 1 carries z and w. Level 1: L2 share 0.5 -> z = w = 0.5;
  // then L1 has 2.5 for x and y -> 1.25 each.
  MaxMinSolver s;
  const int l1 = s.add_constraint(3.0), l2 = s.add_constraint(1.0);
  const int x = add(s, kUnbounded, {l1});
  const int y = add(s, kUnbounded, {l1});
  const int z = add(s, kUnbounded, {l1, l2});
  const int w = add(s, kUnbounded, {l2});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(z), 0.5);
  EXPECT_DOUBLE_EQ(s.value(w), 0.5);
  EXPECT_DOUBLE_EQ(s.value(x), 1.25);
  EXPECT_DOUBLE_EQ(s.value(y), 1.25);
}

TEST(MaxMin, BoundedVariableGivesSlackToOthers) {
  MaxMinSolver s;
  const int l = s.add_constraint(10.0);
  const int a = add(s, 2.0, {l});
  const int b = add(s, kUnbounded, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 2.0);
  EXPECT_DOUBLE_EQ(s.value(b), 8.0);
}

TEST(MaxMin, UnconstrainedVariables) {
  MaxMinSolver s;
  const int a = add(s, kUnbounded, {});
  const int b = add(s, 3.0, {});
  s.solve();
  EXPECT_EQ(s.value(a), kUnbounded);
  EXPECT_DOUBLE_EQ(s.value(b), 3.0);
}

TEST(MaxMin, JoinAndLeaveRecomputeOnlyTheTouchedComponent) {
  MaxMinSolver s;
  const int l1 = s.add_constraint(10.0), l2 = s.add_constraint(6.0);
  const int a = add(s, kUnbounded, {l1});
  const int other = add(s, kUnbounded, {l2});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 10.0);
  EXPECT_DOUBLE_EQ(s.value(other), 6.0);

  const int b = add(s, kUnbounded, {l1});
  const auto pending = s.pending_component();
  EXPECT_EQ(std::vector<int>(pending.begin(), pending.end()), (std::vector<int>{a, b}));
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 5.0);
  EXPECT_DOUBLE_EQ(s.value(b), 5.0);
  const auto changed = s.last_changed();
  EXPECT_EQ(std::find(changed.begin(), changed.end(), other), changed.end());

  s.remove_variable(a);
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(b), 10.0);
  EXPECT_EQ(s.num_live_variables(), 2);
  // Removed ids are reused lowest first.
  EXPECT_EQ(add(s, kUnbounded, {l2}), a);
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(other), 3.0);
  EXPECT_DOUBLE_EQ(s.value(b), 10.0);
}

TEST(MaxMin, NothingToSolveIsANoOp) {
  MaxMinSolver s;
  s.add_constraint(1.0);
  EXPECT_FALSE(s.solve());
}

TEST(MaxMin, RemovalThatKeepsEveryRateSkipsTheSolve) {
  // a and b share L1 (capacity 10); c crosses L1 and L2 (capacity 2), bottlenecked on L2 at 1
  // with d. a and b get 4.5 each on L1. Removing d: c crosses L2 where it is bottlenecked, so a
  // re-solve is needed. Removing a would free room on L1 for b: re-solve. A flow alone on L3
  // ends: nothing else changes, no solve.
  MaxMinSolver s;
  const int l1 = s.add_constraint(10.0), l2 = s.add_constraint(2.0), l3 = s.add_constraint(5.0);
  const int a = add(s, kUnbounded, {l1});
  add(s, kUnbounded, {l1});
  const int c = add(s, kUnbounded, {l1, l2});
  const int d = add(s, kUnbounded, {l2});
  const int e = add(s, kUnbounded, {l3});
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 4.5);
  EXPECT_DOUBLE_EQ(s.value(c), 1.0);
  s.remove_variable(e);
  EXPECT_EQ(s.removals_without_solve(), 1);
  EXPECT_FALSE(s.solve());
  // A flow on L1 only, whose neighbours there (a, b: L1 itself; c: L2) include ones bottlenecked
  // on L1: a re-solve.
  s.remove_variable(a);
  EXPECT_EQ(s.removals_without_solve(), 1);
  EXPECT_TRUE(s.solve());
  EXPECT_DOUBLE_EQ(s.value(c), 1.0);
  // Now b takes 9 on L1 and c stays at 1 on L2. Removing d (on L2 with c, whose bottleneck is
  // L2): a re-solve, and c rises to 2.
  s.remove_variable(d);
  EXPECT_TRUE(s.solve());
  EXPECT_DOUBLE_EQ(s.value(c), 2.0);
}

TEST(MaxMin, AdditionThatChangesNoOtherRateIsSetAlone) {
  // c crosses L1 (capacity 10) and L2 (capacity 2): alone in an empty system it is set alone at
  // 2. d on L2, c's bottleneck: a re-solve, both at 1. A flow b on L1 alone: c is bottlenecked
  // elsewhere, so b takes the room left on L1 (9), is the largest there, and nothing is
  // re-solved: the next solve reports b only.
  MaxMinSolver s;
  const int l1 = s.add_constraint(10.0), l2 = s.add_constraint(2.0);
  const int c = add(s, kUnbounded, {l1, l2});
  EXPECT_EQ(s.additions_without_solve(), 1);
  const int d = add(s, kUnbounded, {l2});
  EXPECT_EQ(s.additions_without_solve(), 1);
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(c), 1.0);
  EXPECT_DOUBLE_EQ(s.value(d), 1.0);
  const int b = add(s, kUnbounded, {l1});
  EXPECT_EQ(s.additions_without_solve(), 2);
  EXPECT_TRUE(s.solve());
  EXPECT_EQ(std::vector<int>(s.last_changed().begin(), s.last_changed().end()),
            std::vector<int>{b});
  EXPECT_DOUBLE_EQ(s.value(b), 9.0);
  EXPECT_DOUBLE_EQ(s.value(c), 1.0);
  // A second flow on L1, where b is bottlenecked now: a re-solve splits L1's room.
  const int e = add(s, kUnbounded, {l1});
  EXPECT_EQ(s.additions_without_solve(), 2);
  EXPECT_TRUE(s.solve());
  EXPECT_DOUBLE_EQ(s.value(b), 4.5);
  EXPECT_DOUBLE_EQ(s.value(e), 4.5);
  // A flow with a bound below the room on a constraint nobody is bottlenecked on is held by its
  // bound, alone.
  const int l3 = s.add_constraint(5.0);
  const int f = add(s, 3.0, {l3});
  EXPECT_EQ(s.additions_without_solve(), 3);
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(f), 3.0);
  // Turned off: every addition re-solves.
  MaxMinSolver off;
  off.set_skip_neutral_removals(false);
  const int m = off.add_constraint(4.0);
  add(off, kUnbounded, {m});
  off.solve();
  EXPECT_EQ(off.additions_without_solve(), 0);
}

TEST(MaxMin, SkippedRemovalsGiveTheRatesOfAFullSolve) {
  // Random joins and leaves on a PCIe-like tree (up and down links of 6 hosts, every flow over
  // one up and one down link) and on random constraint sets; one solver skips the removals that
  // keep every rate, sets alone the additions that change no other rate and re-fills only the
  // variables at or above the lowest rate a change can move; the other re-solves whole
  // components at each. The rates must agree to rounding after every step (both are max-min; the
  // skip keeps rates from a solve that still had the removed flow), and the invariant check (on in
  // this binary) verifies each skip.
  std::mt19937_64 rng(23);
  std::int64_t skipped = 0, alone = 0, partial = 0;
  for (int round = 0; round < 20; ++round) {
    MaxMinSolver fast, full;
    full.set_skip_neutral_removals(false);
    const bool tree = round % 2 == 0;
    const int nc = tree ? 12 : 2 + static_cast<int>(rng() % 8);
    for (int c = 0; c < nc; ++c) {
      const double cap = 1e9 * (1.0 + static_cast<double>(rng() % 9));
      fast.add_constraint(cap);
      full.add_constraint(cap);
    }
    std::vector<int> live;
    for (int step = 0; step < 200; ++step) {
      if (live.size() > 3 && rng() % 2 == 0) {
        const std::size_t i = rng() % live.size();
        fast.remove_variable(live[i]);
        full.remove_variable(live[i]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        std::vector<int> vc;
        if (tree) {
          const int up = static_cast<int>(rng() % 6);
          const int down = static_cast<int>((up + 1 + rng() % 5) % 6);
          vc = {up, 6 + down};
        } else {
          for (int j = 1 + static_cast<int>(rng() % 3); j > 0; --j) {
            const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(nc));
            if (std::find(vc.begin(), vc.end(), c) == vc.end()) vc.push_back(c);
          }
        }
        const double b = rng() % 6 == 0 ? 1e8 * static_cast<double>(1 + rng() % 30) : kUnbounded;
        const double w = !tree && round % 4 == 1 ? 1.0 + static_cast<double>(rng() % 3) : 1.0;
        const int v = fast.add_variable(b, vc, w);
        ASSERT_EQ(full.add_variable(b, vc, w), v);
        live.push_back(v);
      }
      // Every third round batches three changes per solve (starts and ends at one instant).
      if (round % 3 == 2 && step % 3 != 2) continue;
      fast.solve();
      full.solve();
      for (int v : live)
        EXPECT_NEAR(fast.value(v), full.value(v), 1e-9 * full.value(v))
            << "round " << round << " step " << step << " variable " << v;
    }
    skipped += fast.removals_without_solve();
    alone += fast.additions_without_solve();
    partial += fast.partial_solves();
    EXPECT_EQ(full.partial_solves(), 0);
    EXPECT_EQ(full.removals_without_solve(), 0);
    EXPECT_EQ(full.additions_without_solve(), 0);
  }
  EXPECT_GT(skipped, 50);  // the skips are exercised, not only allowed
  EXPECT_GT(alone, 50);
  EXPECT_GT(partial, 500);
}

// ---------------------------------------------------------------------------------------------
// The invariant check catches a corrupted state.

/// The message of the MaxMinInvariantError that `f` throws; "" if it throws none.
template <class F>
std::string violation(F&& f) {
  try {
    f();
  } catch (const MaxMinInvariantError& e) {
    return e.what();
  }
  return "";
}

TEST(MaxMinCheck, OnInThisBinaryAndQuietOnAValidState) {
  MaxMinSolver s;
  EXPECT_TRUE(s.check_invariants_enabled());
  const int l1 = s.add_constraint(1.0), l2 = s.add_constraint(1.0);
  add(s, kUnbounded, {l1, l2});
  add(s, kUnbounded, {l1});
  add(s, 0.25, {l2});
  add(s, kUnbounded, {});
  s.solve();
  EXPECT_EQ(violation([&] { s.check_invariants(); }), "");
}

TEST(MaxMinCheck, CatchesOverCapacity) {
  MaxMinSolver s;
  const int l = s.add_constraint(10.0);
  const int a = add(s, kUnbounded, {l});
  add(s, kUnbounded, {l});
  s.solve();
  MaxMinSolverTestAccess::value(s, a) = 6.0;
  EXPECT_NE(violation([&] { s.check_invariants(); }).find("constraint 0 carries 11 > capacity 10"),
            std::string::npos);
}

TEST(MaxMinCheck, CatchesARateThatIsNotMaxMinFair) {
  // Parking lot: each flow 0.5. Lowering a short flow leaves its link unsaturated.
  MaxMinSolver s;
  const int l1 = s.add_constraint(1.0), l2 = s.add_constraint(1.0);
  add(s, kUnbounded, {l1, l2});
  const int s1 = add(s, kUnbounded, {l1});
  add(s, kUnbounded, {l2});
  s.solve();
  MaxMinSolverTestAccess::value(s, s1) = 0.4;
  EXPECT_NE(violation([&] { s.check_invariants(); }).find("not max-min fair"), std::string::npos);
  MaxMinSolverTestAccess::value(s, s1) = 0.0;
  EXPECT_NE(violation([&] { s.check_invariants(); }).find("no positive rate"), std::string::npos);
}

TEST(MaxMinCheck, CatchesUnequalRatesOfIdenticalFlows) {
  // Within every tolerance of feasibility and optimality, but not the same bits.
  MaxMinSolver s;
  const int l = s.add_constraint(10.0);
  add(s, kUnbounded, {l});
  const int b = add(s, kUnbounded, {l});
  s.solve();
  MaxMinSolverTestAccess::value(s, b) = 5.0 * (1.0 + 1e-12);
  EXPECT_NE(violation([&] { s.check_invariants(); }).find("share constraints, bound and weight"),
            std::string::npos);
}

TEST(MaxMinCheck, CatchesBrokenBookkeepingAtTheNextSolve) {
  MaxMinSolver s;
  const int l1 = s.add_constraint(10.0), l2 = s.add_constraint(10.0);
  add(s, kUnbounded, {l1, l2});
  add(s, kUnbounded, {l1});
  s.solve();
  MaxMinSolverTestAccess::vars_of(s, l2).clear();  // l2 forgets the flow that crosses it
  add(s, kUnbounded, {l1});
  EXPECT_NE(violation([&] { s.solve(); }).find("which does not list it"), std::string::npos);

  MaxMinSolver t;
  const int c = t.add_constraint(10.0);
  add(t, kUnbounded, {c});
  t.solve();
  MaxMinSolverTestAccess::weighted(t, c) = 1;
  EXPECT_NE(violation([&] { t.check_invariants(); }).find("weighted variables"), std::string::npos);
  // Switched off, a solve does not check.
  t.set_check_invariants(false);
  add(t, kUnbounded, {c});
  EXPECT_EQ(violation([&] { t.solve(); }), "");
}

// ---------------------------------------------------------------------------------------------
// Flow network: completion times with sharing policies, in nanoseconds.

Cluster one_link(SharingPolicy p, double bw = 10e9) {
  Cluster c;
  c.links.push_back(Link{"l", 0, 1, Bandwidth{bw}, Duration{0}, p, "test"});
  c.links.push_back(
      Link{"m", 1, 2, Bandwidth{bw / 2}, Duration{0}, SharingPolicy::SplitDuplex, "test"});
  return c;
}

struct Done {
  std::int32_t tag;
  SimTime t;
};

std::vector<Done> drain(FlowNetwork& net) {
  std::vector<Done> out;
  for (SimTime t = net.next_completion(); t != kNever; t = net.next_completion()) {
    net.advance(t);
    for (std::int32_t tag : net.completed()) out.push_back({tag, t});
  }
  return out;
}

/// The plain progressive filling of maxmin.hpp over every live variable at once (no components,
/// no incremental state, no active sets): the reference for the incremental solver.
std::vector<double> reference_rates(const std::vector<double>& cap,
                                    const std::vector<std::vector<int>>& cons,
                                    const std::vector<double>& bound,
                                    const std::vector<double>& weight,
                                    const std::vector<bool>& live) {
  const std::size_t n = cons.size();
  std::vector<double> x(n, 0.0), rem = cap, unfixed(cap.size(), 0.0);
  std::vector<int> count(cap.size(), 0);
  std::vector<bool> fixed(n, true);
  for (std::size_t v = 0; v < n; ++v) {
    if (!live[v]) continue;
    fixed[v] = false;
    for (int c : cons[v]) {
      unfixed[c] += 1.0 / weight[v];
      ++count[c];
    }
  }
  while (true) {
    double share = kUnbounded;
    bool any = false;
    for (std::size_t c = 0; c < cap.size(); ++c)
      if (count[c] > 0) share = std::min(share, std::max(rem[c], 0.0) / unfixed[c]);
    for (std::size_t v = 0; v < n; ++v)
      if (!fixed[v]) {
        any = true;
        share = std::min(share, bound[v] * weight[v]);
      }
    if (!any) break;
    const double limit = share * (1.0 + MaxMinSolver::kRelEps);
    std::vector<bool> sat(cap.size());
    for (std::size_t c = 0; c < cap.size(); ++c)
      sat[c] = count[c] > 0 && std::max(rem[c], 0.0) / unfixed[c] <= limit;
    for (std::size_t v = 0; v < n; ++v) {
      if (fixed[v]) continue;
      bool hit = bound[v] * weight[v] <= limit;
      for (int c : cons[v]) hit = hit || sat[c];
      if (!hit) continue;
      x[v] = std::min(share / weight[v], bound[v]);
      fixed[v] = true;
      for (int c : cons[v]) {
        rem[c] -= x[v];
        unfixed[c] -= 1.0 / weight[v];
        --count[c];
      }
    }
  }
  return x;
}

TEST(MaxMin, IncrementalMatchesFullRecomputeOnRandomJoinsAndLeaves) {
  // Random constraints; variables over 0-3 of them, some bounded, some weighted, joining and
  // leaving in random order. After every step the incremental solver (touched components only,
  // shrinking active sets) must give a full recompute's rates, to rounding: within a component
  // both fix variables in different orders, so sums may differ in the last bits.
  std::mt19937_64 rng(5);
  for (int round = 0; round < 30; ++round) {
    MaxMinSolver s;
    std::vector<double> cap;
    const int nc = 1 + static_cast<int>(rng() % 8);
    for (int c = 0; c < nc; ++c) {
      cap.push_back(1.0 + static_cast<double>(rng() % 20));
      s.add_constraint(cap.back());
    }
    const bool weighted = round % 3 == 2;
    std::vector<std::vector<int>> cons;
    std::vector<double> bound, weight;
    std::vector<bool> live;
    for (int step = 0; step < 60; ++step) {
      const bool leave = step > 5 && rng() % 3 == 0;
      std::vector<int> alive;
      for (std::size_t v = 0; v < live.size(); ++v)
        if (live[v]) alive.push_back(static_cast<int>(v));
      if (leave && !alive.empty()) {
        const int v = alive[rng() % alive.size()];
        s.remove_variable(v);
        live[v] = false;
      } else {
        std::vector<int> vc;
        const int k = static_cast<int>(rng() % 4);
        for (int j = 0; j < k; ++j) {
          const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(nc));
          if (std::find(vc.begin(), vc.end(), c) == vc.end()) vc.push_back(c);
        }
        const double b = rng() % 4 == 0 ? 0.5 + static_cast<double>(rng() % 10) : kUnbounded;
        const double w = weighted ? 1.0 + static_cast<double>(rng() % 5) : 1.0;
        const int v = s.add_variable(b, vc, w);
        if (static_cast<std::size_t>(v) >= cons.size()) {
          cons.resize(v + 1);
          bound.resize(v + 1);
          weight.resize(v + 1);
          live.resize(v + 1);
        }
        cons[v] = vc;
        bound[v] = b;
        weight[v] = w;
        live[v] = true;
      }
      s.solve();
      const auto ref = reference_rates(cap, cons, bound, weight, live);
      for (std::size_t v = 0; v < live.size(); ++v) {
        if (!live[v]) continue;
        if (ref[v] == kUnbounded) {
          EXPECT_EQ(s.value(static_cast<int>(v)), kUnbounded);
        } else {
          EXPECT_NEAR(s.value(static_cast<int>(v)), ref[v], 1e-9 * std::max(1.0, ref[v]))
              << "round " << round << " step " << step << " variable " << v;
        }
      }
    }
  }
}

TEST(MaxMin, UnweightedLargeComponentIsBitIdenticalToPlainFilling) {
  // Unweighted components of more than 8 variables take the fill that visits only saturated
  // constraints (maxmin.cpp); it must give the plain filling's bits exactly. Every variable
  // crosses constraint 0, so there is one component and the reference fills exactly it.
  // The no-re-solve additions and removals keep rates from an earlier solve or set one alone
  // (max-min all the same, to rounding): off here, where the fill itself is compared.
  std::mt19937_64 rng(11);
  for (int round = 0; round < 40; ++round) {
    MaxMinSolver s;
    s.set_skip_neutral_removals(false);
    std::vector<double> cap;
    const int nc = 2 + static_cast<int>(rng() % 12);
    for (int c = 0; c < nc; ++c) {
      // Irrational-looking capacities so that levels rarely tie exactly.
      cap.push_back(1e9 * (1.0 + static_cast<double>(rng() % 1000) / 7.0));
      s.add_constraint(cap.back());
    }
    std::vector<std::vector<int>> cons;
    std::vector<double> bound, weight;
    std::vector<bool> live;
    for (int step = 0; step < 80; ++step) {
      std::vector<int> alive;
      for (std::size_t v = 0; v < live.size(); ++v)
        if (live[v]) alive.push_back(static_cast<int>(v));
      if (alive.size() > 12 && rng() % 3 == 0) {
        const int v = alive[rng() % alive.size()];
        s.remove_variable(v);
        live[v] = false;
      } else {
        std::vector<int> vc{0};
        for (int j = static_cast<int>(rng() % 4); j > 0; --j) {
          const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(nc));
          if (std::find(vc.begin(), vc.end(), c) == vc.end()) vc.push_back(c);
        }
        const double b = rng() % 5 == 0 ? 1e7 * static_cast<double>(1 + rng() % 50) : kUnbounded;
        const int v = s.add_variable(b, vc);
        if (static_cast<std::size_t>(v) >= cons.size()) {
          cons.resize(v + 1);
          bound.resize(v + 1);
          weight.resize(v + 1, 1.0);
          live.resize(v + 1);
        }
        cons[v] = vc;
        bound[v] = b;
        live[v] = true;
      }
      s.solve();
      const auto ref = reference_rates(cap, cons, bound, weight, live);
      for (std::size_t v = 0; v < live.size(); ++v)
        if (live[v])
          EXPECT_EQ(s.value(static_cast<int>(v)), ref[v])
              << "round " << round << " step " << step << " variable " << v;
    }
  }
}

TEST(FlowNetwork, OppositeDirectionsSharedVsSplitDuplex) {
  const Hop fwd{0, true}, bwd{0, false};
  {
    const Cluster c = one_link(SharingPolicy::Shared);
    FlowNetwork net(c);
    net.start(0, {&fwd, 1}, 1e9, 1);
    net.start(0, {&bwd, 1}, 1e9, 2);
    const auto d = drain(net);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].t, 200'000'000);  // 1 GB at 5 GB/s each
    EXPECT_EQ(d[1].t, 200'000'000);
  }
  {
    const Cluster c = one_link(SharingPolicy::SplitDuplex);
    FlowNetwork net(c);
    net.start(0, {&fwd, 1}, 1e9, 1);
    net.start(0, {&bwd, 1}, 1e9, 2);
    const auto d = drain(net);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].t, 100'000'000);  // each direction has its own 10 GB/s
    EXPECT_EQ(d[1].t, 100'000'000);
  }
}

TEST(FlowNetwork, SameDirectionSplitDuplexShares) {
  const Cluster c = one_link(SharingPolicy::SplitDuplex);
  const Hop fwd{0, true};
  FlowNetwork net(c);
  net.start(0, {&fwd, 1}, 1e9, 1);
  net.start(0, {&fwd, 1}, 1e9, 2);
  const auto d = drain(net);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].t, 200'000'000);
  EXPECT_EQ(net.link_bytes()[0], 2e9);
  EXPECT_EQ(net.link_busy()[0], 200'000'000);
}

TEST(FlowNetwork, FatPipeDoesNotContendButCapsEachFlow) {
  const Cluster c = one_link(SharingPolicy::FatPipe);
  const Hop fwd{0, true};
  FlowNetwork net(c);
  net.start(0, {&fwd, 1}, 1e9, 1);
  net.start(0, {&fwd, 1}, 1e9, 2);
  const auto d = drain(net);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].t, 100'000'000);
  EXPECT_EQ(d[1].t, 100'000'000);
}

TEST(FlowNetwork, FatPipeThenSplitDuplexHop) {
  // The fat pipe caps at 10 GB/s, the second hop (5 GB/s) is shared by two flows: 2.5 GB/s each.
  const Cluster c = one_link(SharingPolicy::FatPipe);
  const Hop path[2] = {{0, true}, {1, true}};
  FlowNetwork net(c);
  net.start(0, path, 1e9, 1);
  net.start(0, path, 1e9, 2);
  EXPECT_DOUBLE_EQ(net.rate_of_tag(1), 2.5e9);
  const auto d = drain(net);
  EXPECT_EQ(d[1].t, 400'000'000);
}

TEST(FlowNetwork, FlowsJoiningAndLeaving) {
  // A: 1 GB from t=0; B: 0.5 GB from t=0 -> both at 5 GB/s, B ends at 0.1 s with A half done;
  // A alone then takes 0.05 s more -> 0.15 s. C joins at 0.12 s with 0.1 GB: A has 0.3 GB left,
  // both at 5 GB/s -> C ends at 0.14 s, A has 0.2 GB left -> alone at 10 GB/s -> 0.16 s.
  const Cluster c = one_link(SharingPolicy::SplitDuplex);
  const Hop fwd{0, true};
  FlowNetwork net(c);
  net.start(0, {&fwd, 1}, 1e9, 1);
  net.start(0, {&fwd, 1}, 0.5e9, 2);
  SimTime t = net.next_completion();
  EXPECT_EQ(t, 100'000'000);
  net.advance(t);
  ASSERT_EQ(net.completed().size(), 1u);
  EXPECT_EQ(net.completed()[0], 2);
  EXPECT_EQ(net.next_completion(), 150'000'000);
  // C joins at 0.12 s (the engine would process an event there before A's completion).
  net.start(120'000'000, {&fwd, 1}, 0.1e9, 3);
  t = net.next_completion();
  EXPECT_EQ(t, 140'000'000);
  net.advance(t);
  EXPECT_EQ(net.completed()[0], 3);
  EXPECT_EQ(net.next_completion(), 160'000'000);
}

TEST(MaxMinWeighted, RatesAreProportionalToOneOverWeight) {
  // SimGrid's sharing penalty: on a saturated constraint rates go as 1 / weight.
  MaxMinSolver s;
  const int c = s.add_constraint(12.0);
  const int a = s.add_variable(kUnbounded, std::span<const int>(&c, 1), 1.0);
  const int b = s.add_variable(kUnbounded, std::span<const int>(&c, 1), 3.0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.value(a), 9.0);
  EXPECT_DOUBLE_EQ(s.value(b), 3.0);
  // A bound caps a light variable; the rest goes to the other.
  MaxMinSolver t;
  const int d = t.add_constraint(12.0);
  const int x = t.add_variable(2.0, std::span<const int>(&d, 1), 1.0);
  const int y = t.add_variable(kUnbounded, std::span<const int>(&d, 1), 2.0);
  t.solve();
  EXPECT_DOUBLE_EQ(t.value(x), 2.0);
  EXPECT_DOUBLE_EQ(t.value(y), 10.0);
  // Equal weights other than 1 give the unweighted shares.
  MaxMinSolver u;
  const int e = u.add_constraint(10.0);
  const int p = u.add_variable(kUnbounded, std::span<const int>(&e, 1), 7.0);
  const int q = u.add_variable(kUnbounded, std::span<const int>(&e, 1), 7.0);
  u.solve();
  EXPECT_DOUBLE_EQ(u.value(p), 5.0);
  EXPECT_DOUBLE_EQ(u.value(q), 5.0);
}

}  // namespace
}  // namespace placesim::sim

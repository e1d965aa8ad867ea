// CpuShare: ops on one CPU share the socket by max-min fairness, each capped at its share.
#include "sim/cpu_share.hpp"

#include <gtest/gtest.h>

namespace placesim::sim {
namespace {

// Every solver here checks its invariants after each solve (maxmin.hpp): a wrong rate fails the
// test even where the completion times happen to agree.
[[maybe_unused]] const bool kChecksOn = (MaxMinSolver::set_check_invariants_default(true), true);

/// Runs the model alone until it has nothing left; returns (tag, completion time) in order.
std::vector<std::pair<int, SimTime>> drain(CpuShare& m) {
  std::vector<std::pair<int, SimTime>> out;
  for (SimTime t = m.next_completion(); t != kNever; t = m.next_completion()) {
    m.advance(t);
    for (int tag : m.completed()) out.emplace_back(tag, t);
  }
  return out;
}

TEST(CpuShare, AloneAnOpRunsAtItsCap) {
  CpuShare m(2);
  m.start(0, 1, 1000.0, 1.0, 7);
  EXPECT_DOUBLE_EQ(m.share_of_tag(7), 1.0);
  EXPECT_EQ(drain(m), (std::vector<std::pair<int, SimTime>>{{7, 1000}}));
  m.start(0, 1, 1000.0, 0.25, 8);  // a quarter of the socket: four times as long
  EXPECT_EQ(drain(m), (std::vector<std::pair<int, SimTime>>{{8, 4000}}));
}

TEST(CpuShare, ConcurrentOpsSplitTheSocketAndSpeedUpWhenOneLeaves) {
  CpuShare m(1);
  m.start(0, 0, 1000.0, 1.0, 1);
  m.start(0, 0, 3000.0, 1.0, 2);
  EXPECT_DOUBLE_EQ(m.share_of_tag(1), 0.5);
  // Op 1 ends at 2000 (1000 of work at half rate); op 2 has 2000 left and runs alone: 4000.
  EXPECT_EQ(drain(m), (std::vector<std::pair<int, SimTime>>{{1, 2000}, {2, 4000}}));
}

TEST(CpuShare, CapsLeaveRoomForOthersAndProcessorsAreIndependent) {
  CpuShare m(2);
  m.start(0, 0, 1000.0, 0.25, 1);  // capped at 0.25
  m.start(0, 0, 1500.0, 1.0, 2);   // gets the other 0.75
  m.start(0, 1, 1000.0, 1.0, 3);   // another socket: unaffected
  EXPECT_DOUBLE_EQ(m.share_of_tag(1), 0.25);
  EXPECT_DOUBLE_EQ(m.share_of_tag(2), 0.75);
  EXPECT_DOUBLE_EQ(m.share_of_tag(3), 1.0);
  EXPECT_EQ(drain(m), (std::vector<std::pair<int, SimTime>>{{3, 1000}, {2, 2000}, {1, 4000}}));
}

TEST(CpuShare, AJoiningOpSlowsTheRunningOne) {
  CpuShare m(1);
  m.start(0, 0, 1000.0, 1.0, 1);
  ASSERT_EQ(m.next_completion(), 1000);
  m.advance(400);  // nothing completes; 600 left
  EXPECT_TRUE(m.completed().empty());
  m.start(400, 0, 300.0, 1.0, 2);  // both at 0.5: op 2 ends at 1000, op 1 has 300 left then
  EXPECT_EQ(drain(m), (std::vector<std::pair<int, SimTime>>{{2, 1000}, {1, 1300}}));
  m.reset();
  EXPECT_EQ(m.active(), 0);
  EXPECT_EQ(m.next_completion(), kNever);
}

}  // namespace
}  // namespace placesim::sim

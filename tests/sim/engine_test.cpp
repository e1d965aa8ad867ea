// The event queue and the Engine's interleaving of events with resource-model completions.
#include "sim/engine.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>
#include <tuple>
#include <vector>

namespace placesim::sim {
namespace {

TEST(EventQueue, OrdersByTimeThenPriorityThenKindThenIndex) {
  EventQueue q;
  q.push(10, Priority::KernelStart, 0, 1);
  q.push(5, Priority::Start, 0, 2);
  q.push(10, Priority::KernelEnd, 0, 3);
  q.push(10, Priority::KernelStart, 0, 4);
  q.push(10, Priority::KernelEnd, 0, 5);
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.pop().index);
  EXPECT_EQ(order, (std::vector<int>{2, 3, 5, 1, 4}));
}

// The same-instant order is a property of the events, not of when they were pushed: any
// insertion order of one set of events pops in one order (what a partitioned run relies on).
TEST(EventQueue, SameInstantOrderDoesNotDependOnInsertionOrder) {
  std::vector<std::tuple<SimTime, int, int, int>> evs;  // (time, priority, kind, index)
  for (int i = 0; i < 60; ++i) evs.emplace_back(i % 3, i % 2 == 0 ? 1 : 3, i % 4, 59 - i);
  evs.emplace_back(1, 1, 0, -7);  // a negative index sorts after every non-negative one
  std::vector<std::tuple<SimTime, int, int, int>> want;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(evs.begin(), evs.end(), rng);
    EventQueue q;
    for (const auto& [t, p, k, i] : evs) q.push(t, static_cast<Priority>(p), k, i);
    std::vector<std::tuple<SimTime, int, int, int>> got;
    while (!q.empty()) {
      const Event e = q.pop();
      got.emplace_back(e.time, static_cast<int>(e.priority()), e.kind, e.index);
    }
    if (round == 0) want = got;
    EXPECT_EQ(got, want) << "round " << round;
  }
  // Within (time 1, priority 1, kind 0): indices ascending as unsigned, so -7 comes last.
  std::vector<int> idx;
  for (const auto& [t, p, k, i] : want)
    if (t == 1 && p == 1 && k == 0) idx.push_back(i);
  ASSERT_FALSE(idx.empty());
  EXPECT_EQ(idx.back(), -7);
  EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end() - 1));
}

TEST(EventQueue, MatchesASortOnRandomInput) {
  std::mt19937_64 rng(42);
  EventQueue q;
  std::vector<std::tuple<SimTime, int, int>> ref;
  for (int i = 0; i < 5000; ++i) {
    const SimTime t = static_cast<SimTime>(rng() % 100);
    const int p = static_cast<int>(rng() % 6);
    q.push(t, static_cast<Priority>(p), 0, i);
    ref.emplace_back(t, p, i);
  }
  std::sort(ref.begin(), ref.end());
  for (const auto& [t, p, i] : ref) {
    const Event e = q.pop();
    ASSERT_EQ(e.time, t);
    ASSERT_EQ(static_cast<int>(e.priority()), p);
    ASSERT_EQ(e.index, i);
  }
  EXPECT_TRUE(q.empty());
}

/// A model with completions at fixed times.
class Ticks final : public ResourceModel {
 public:
  explicit Ticks(std::vector<SimTime> t) : times_(std::move(t)) {}
  SimTime next_completion() override { return next_ < times_.size() ? times_[next_] : kNever; }
  void advance(SimTime t) override {
    while (next_ < times_.size() && times_[next_] <= t) ++next_;
  }

 private:
  std::vector<SimTime> times_;
  std::size_t next_ = 0;
};

struct Recorder {
  std::vector<std::pair<SimTime, int>> seen;  // (time, index or -1 for the model)
  void on_event(Engine& e, const Event& ev) {
    seen.emplace_back(e.now(), ev.index);
    if (ev.index == 1) e.schedule(e.now() + 3, Priority::KernelEnd, 0, 9);
  }
  void on_resource(Engine& e, int /*model*/) { seen.emplace_back(e.now(), -1); }
};

TEST(Engine, ModelCompletionsComeBeforeEventsAtTheSameTime) {
  Engine e;
  Ticks ticks({4, 7});
  e.add_model(&ticks);
  e.schedule(4, Priority::KernelEnd, 0, 1);
  e.schedule(2, Priority::KernelEnd, 0, 2);
  Recorder r;
  e.run(r);
  const std::vector<std::pair<SimTime, int>> expected{{2, 2}, {4, -1}, {4, 1}, {7, -1}, {7, 9}};
  EXPECT_EQ(r.seen, expected);
  EXPECT_EQ(e.events_processed(), 5);
  EXPECT_EQ(e.now(), 7);
}

TEST(Engine, StopEndsTheRun) {
  struct Stopper {
    int n = 0;
    void on_event(Engine& e, const Event&) {
      if (++n == 2) e.stop();
    }
    void on_resource(Engine&, int) {}
  };
  Engine e;
  for (int i = 0; i < 5; ++i) e.schedule(i, Priority::Start, 0, i);
  Stopper s;
  e.run(s);
  EXPECT_EQ(s.n, 2);
  EXPECT_EQ(e.now(), 1);
}

}  // namespace
}  // namespace placesim::sim

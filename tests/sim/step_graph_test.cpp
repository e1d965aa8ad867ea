// StepGraph / StepGraphBuilder: the compact simulation graph, built from a Graph or op by op,
// simulates exactly as simulate() on the Graph (docs/engine.md, "Memory").
#include <atomic>
#include <gtest/gtest.h>
#include <random>
#include <span>
#include <stdexcept>
#include <tbb/task_arena.h>
#include <thread>
#include <type_traits>

#include "sim/error.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/sim_fixtures.hpp"

namespace placesim::sim {
namespace {

/// The graph's ops fed to a builder (valid when every input names an earlier op).
StepGraph streamed(const Cluster& c, const Graph& g) {
  StepGraphBuilder b(c);
  b.reserve(g.ops.size(), 0);
  for (const Op& op : g.ops) b.add_op(op);
  return std::move(b).finish();
}

/// `names`: compare critical-path names too (a streamed step names ops "op<id>").
void expect_same(const Outcome& a, const Outcome& b, bool names = true) {
  EXPECT_EQ(a.step_time.ns, b.step_time.ns);
  EXPECT_EQ(a.oom, b.oom);
  EXPECT_EQ(a.transfers, b.transfers);
  EXPECT_EQ(a.transferred.v, b.transferred.v);
  EXPECT_EQ(a.events, b.events);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].busy.ns, b.devices[d].busy.ns) << d;
    EXPECT_EQ(a.devices[d].peak_memory.v, b.devices[d].peak_memory.v) << d;
    EXPECT_EQ(a.devices[d].ops, b.devices[d].ops) << d;
  }
  ASSERT_EQ(a.critical_path.size(), b.critical_path.size());
  for (std::size_t i = 0; i < a.critical_path.size(); ++i) {
    EXPECT_EQ(a.critical_path[i].kind, b.critical_path[i].kind) << i;
    if (names) EXPECT_EQ(a.critical_path[i].name, b.critical_path[i].name) << i;
    EXPECT_EQ(a.critical_path[i].device, b.critical_path[i].device) << i;
    EXPECT_EQ(a.critical_path[i].start, b.critical_path[i].start) << i;
    EXPECT_EQ(a.critical_path[i].end, b.critical_path[i].end) << i;
  }
}

// A StepGraph borrows its cluster and graph, a builder its cluster: temporaries would dangle.
static_assert(std::is_constructible_v<StepGraph, const Cluster&, const Graph&>);
static_assert(!std::is_constructible_v<StepGraph, Cluster&&, const Graph&>);
static_assert(!std::is_constructible_v<StepGraph, const Cluster&, Graph&&>);
static_assert(!std::is_constructible_v<StepGraph, Cluster&&, Graph&&>);
static_assert(!std::is_constructible_v<StepGraph, Cluster, Graph>);
static_assert(std::is_constructible_v<StepGraphBuilder, const Cluster&>);
static_assert(!std::is_constructible_v<StepGraphBuilder, Cluster&&>);

TEST(StepGraph, StreamedRandomGraphSimulatesLikeTheGraph) {
  // Heavy contention (every op on a random device of 8 GPUs + CPU), critical path recorded:
  // random_graph names ops "op<id>", as a streamed step does, so the paths compare by name too.
  const Cluster c = testing::star_cluster(8, "12 GB/s", "1 us");
  const Graph g = testing::random_graph(3000, 11);
  const Placement p = testing::random_placement(g, c, 5);
  const Outcome ref = simulate(c, g, p);
  ASSERT_GT(ref.transfers, 1000);
  ASSERT_FALSE(ref.critical_path.empty());
  expect_same(ref, simulate(streamed(c, g), p));
  expect_same(ref, simulate(StepGraph(c, g), p));
  SimOptions no_path;
  no_path.record_critical_path = false;
  const Outcome bare = simulate(streamed(c, g), p, no_path);
  EXPECT_EQ(bare.step_time.ns, ref.step_time.ns);
  EXPECT_TRUE(bare.critical_path.empty());
}

TEST(StepGraph, DevicesOfOneModelCostingDifferentlySplitIntoTheirOwnClass) {
  // A calibration keyed by device name makes gpu1's kernels slower than its twins' from some op
  // on (tiny ops floor at min_kernel on both) and gives gpu2 per-op host times: the builder's
  // classes must split exactly where the costs part.
  const Cluster c = testing::star_cluster(4, "12 GB/s", "1 us");
  auto cal = std::make_shared<Calibration>();
  cal->devices["gpu1"].roofline = RooflineParams{.compute_eff_max = 0.3, .memory_eff_max = 0.4};
  HostCalibration host;
  host.per_phase = {{"forward", Duration{7000}}};
  host.per_step = Duration{20000};
  for (const Device& d : c.devices)  // the per-op model applies where the launch cost is its own
    if (d.name == "gpu2") host.launch_overhead = d.spec.launch_overhead;
  cal->devices["gpu2"].host = host;
  KernelCostModel costs;
  costs.set_calibration(cal);
  const Graph g = testing::random_graph(1500, 3);
  const Placement p = testing::random_placement(g, c, 9);
  StepGraphBuilder b(c, costs);
  for (const Op& op : g.ops) b.add_op(op);
  const StepGraph step = std::move(b).finish();
  const Outcome ref = simulate(c, g, p, {}, costs);
  expect_same(ref, simulate(step, p));
  // The calibration matters here: without it the step differs.
  EXPECT_NE(ref.step_time.ns, simulate(c, g, p).step_time.ns);
  // 4 kernel-time classes (CPU, gpu0 + gpu3, gpu1, gpu2) and host times for each, against 2
  // classes and none without the calibration: 6 more arrays of 8 B per op.
  StepGraphBuilder plain(c);
  for (const Op& op : g.ops) plain.add_op(op);
  EXPECT_EQ(step.memory_bytes() - std::move(plain).finish().memory_bytes(), 6U * 1500 * 8);
}

/// The calibration of the test above: gpu1 slower from some op on, gpu2 with per-op host times.
KernelCostModel split_costs(const Cluster& c) {
  auto cal = std::make_shared<Calibration>();
  cal->devices["gpu1"].roofline = RooflineParams{.compute_eff_max = 0.3, .memory_eff_max = 0.4};
  HostCalibration host;
  host.per_phase = {{"forward", Duration{7000}}};
  for (const Device& d : c.devices)
    if (d.name == "gpu2") host.launch_overhead = d.spec.launch_overhead;
  cal->devices["gpu2"].host = host;
  KernelCostModel costs;
  costs.set_calibration(cal);
  return costs;
}

TEST(StepGraph, BatchedParallelPricingOnAnyThreadCountIsBitIdentical) {
  // add_ops prices a batch in parallel: on 1, 2 and 4 threads the step must be the one add_op
  // builds op by op, with and without device classes that split mid-graph.
  const Cluster c = testing::star_cluster(8, "12 GB/s", "1 us");
  const Graph g = testing::random_graph(5000, 21);
  const Placement p = testing::random_placement(g, c, 4);
  for (const KernelCostModel& costs : {KernelCostModel{}, split_costs(c)}) {
    const Outcome ref = simulate(c, g, p, {}, costs);
    ASSERT_GT(ref.transfers, 2000);  // heavy contention on the star's links
    for (int threads : {1, 2, 4}) {
      tbb::task_arena arena(threads);
      StepGraphBuilder b(c, costs);
      arena.execute([&] {
        // Uneven batches, one of them a single op.
        const std::span<const Op> all(g.ops);
        b.add_ops(all.subspan(0, 1));
        b.add_ops(all.subspan(1, 2999));
        b.add_ops(all.subspan(3000));
      });
      const StepGraph step = std::move(b).finish();
      SimOptions o;
      o.threads = threads;
      expect_same(ref, simulate(step, p, o));
      expect_same(ref, simulate(c, g, p, o, costs));
    }
  }
}

TEST(StepGraph, PricingOnAnotherThreadWhileFilingIsBitIdentical) {
  // The huge-step pipeline (models/huge_step.cpp): one thread prices batch i + 1 (price_ops)
  // while this one files batch i (add_priced_ops). Same step as add_op one by one; prices of
  // another batch's size are refused.
  const Cluster c = testing::star_cluster(8, "12 GB/s", "1 us");
  const Graph g = testing::random_graph(5000, 23);
  const Placement p = testing::random_placement(g, c, 5);
  for (const KernelCostModel& costs : {KernelCostModel{}, split_costs(c)}) {
    const Outcome ref = simulate(c, g, p, {}, costs);
    StepGraphBuilder b(c, costs);
    const std::span<const Op> all(g.ops);
    const std::size_t cuts[] = {0, 1, 1700, 3400, all.size()};
    std::vector<StepGraphBuilder::PricedOps> priced(4);
    std::atomic<int> ready{0};
    std::thread pricer([&] {
      for (std::size_t i = 0; i < 4; ++i) {
        b.price_ops(all.subspan(cuts[i], cuts[i + 1] - cuts[i]), priced[i]);
        ready.store(static_cast<int>(i) + 1, std::memory_order_release);
      }
    });
    for (std::size_t i = 0; i < 4; ++i) {
      while (ready.load(std::memory_order_acquire) <= static_cast<int>(i))
        std::this_thread::yield();
      b.add_priced_ops(all.subspan(cuts[i], cuts[i + 1] - cuts[i]), priced[i]);
    }
    pricer.join();
    EXPECT_THROW(b.add_priced_ops(all.subspan(0, 2), priced[0]), std::invalid_argument);
    const StepGraph step = std::move(b).finish();
    expect_same(ref, simulate(step, p));
  }
}

TEST(StepGraph, ParallelPricingOfAGraphMatchesOnAnyThreadCount) {
  // simulate(cluster, graph) prices the graph's ops in parallel (Prepared): several graphs and
  // clusters, light and heavy contention, the same outcome on 1, 2 and 4 threads.
  for (int gpus : {2, 8}) {
    const Cluster c = testing::star_cluster(gpus, gpus == 2 ? "40 GB/s" : "6 GB/s", "2 us");
    for (std::uint64_t seed : {1, 2, 3}) {
      const Graph g = testing::random_graph(2000 + 500 * static_cast<int>(seed), seed);
      const Placement p = testing::random_placement(g, c, seed + 10);
      SimOptions one;
      one.threads = 1;
      const Outcome ref = simulate(c, g, p, one);
      for (int threads : {2, 4}) {
        SimOptions o;
        o.threads = threads;
        expect_same(ref, simulate(c, g, p, o));
      }
    }
  }
}

TEST(StepGraph, ControlEdgesPinsAndOutputsMatchTheGraph) {
  const Cluster c = testing::star_cluster(2, "10 GB/s", "2 us", true, "1 GiB", /*streams=*/2);
  Graph g;
  g.name = "ctl";
  g.add_op(testing::timed_op("a", 5, 1 << 20));
  Op b = testing::timed_op("b", 7, 1 << 18, {0});
  b.outputs.push_back({.bytes = Bytes{4096}});
  b.stream = 1;
  g.add_op(std::move(b));
  Op d = testing::timed_op("d", 3, 1 << 16, {0});
  d.control_inputs = {1, 1, 0};
  d.persistent = Bytes{1 << 20};
  g.add_op(std::move(d));
  Op e = testing::timed_op("e", 2, 64);
  e.inputs = {{1, 1}, {1, 0}, {2, 0}, {1, 1}};
  e.phase = Phase::Update;
  g.add_op(std::move(e));
  g.finalize("<test>");
  for (const auto& devs : {std::vector<DeviceId>{1, 2, 1, 0}, std::vector<DeviceId>{1, 1, 1, 1},
                           std::vector<DeviceId>{2, 1, 0, 2}}) {
    const Placement p{devs};
    expect_same(simulate(c, g, p), simulate(streamed(c, g), p), /*names=*/false);
  }
}

TEST(StepGraph, BuilderRejectsForwardReferencesAndCollectives) {
  const Cluster c = testing::star_cluster(2);
  StepGraphBuilder b(c);
  b.add_op(testing::timed_op("a", 1, 64));
  EXPECT_THROW(b.add_op(testing::timed_op("b", 1, 64, {1})), InputError);  // itself
  Op bad_output = testing::timed_op("c", 1, 64);
  bad_output.inputs = {{0, 1}};  // op 0 has one output
  EXPECT_THROW(b.add_op(bad_output), InputError);
  Op bad_control = testing::timed_op("d", 1, 64);
  bad_control.control_inputs = {5};
  EXPECT_THROW(b.add_op(bad_control), InputError);
  Op coll = testing::timed_op("e", 1, 64);
  coll.collective = CollectiveCall{.bytes = Bytes{1024}, .id = "ar0"};
  EXPECT_THROW(b.add_op(coll), InputError);
  EXPECT_EQ(b.add_op(testing::timed_op("f", 1, 64, {0})), 1);  // the builder is still usable
  const StepGraph s = std::move(b).finish();
  EXPECT_EQ(s.num_ops(), 2);
  EXPECT_GT(s.memory_bytes(), 0U);
  EXPECT_THROW(simulate(s, Placement{{0}}), InputError);  // one device per op
}

// ---------------------------------------------------------------------------------------------
// simulate_while_building: the event loop runs while the builder files ops below a watermark.

/// A generator's step: op i reads 1-3 of the ops in [i - window_i, i) (window 1-64), sometimes
/// with a control input there too; the first 4 ops are sources; every 10th op holds persistent
/// memory; `wm[i]`: the watermark declared before op i (the least op that op i or a later one
/// reads). Devices: random over the cluster.
struct WindowedStep {
  std::vector<Op> ops;
  std::vector<OpId> wm;
  std::vector<DeviceId> dev;
};

WindowedStep windowed_step(int n, int devices, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  WindowedStep w;
  for (int i = 0; i < n; ++i) {
    Op op;
    op.type = i % 3 == 0 ? "MatMul" : "Add";
    op.flops = Flops{static_cast<double>(1e5 + rng() % 50'000'000)};
    op.bytes_read = Bytes{static_cast<std::int64_t>(4096 + rng() % (1 << 22))};
    op.outputs.push_back({.bytes = Bytes{static_cast<std::int64_t>(4096 + rng() % (1 << 22))}});
    if (i % 10 == 0) op.persistent = Bytes{static_cast<std::int64_t>(rng() % (1 << 21))};
    if (i >= 4) {
      const int window = 1 + static_cast<int>(rng() % 64);
      const int k = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < k; ++j)
        op.inputs.push_back({std::max(0, i - 1 - static_cast<int>(rng() % window)), 0});
      if (rng() % 4 == 0)
        op.control_inputs.push_back(std::max(0, i - 1 - static_cast<int>(rng() % window)));
    }
    w.dev.push_back(static_cast<DeviceId>(rng() % static_cast<std::uint64_t>(devices)));
    w.ops.push_back(std::move(op));
  }
  w.wm.assign(n + 1, n);
  for (int i = n - 1; i >= 0; --i) {
    OpId least = w.wm[i + 1];
    for (const TensorRef& r : w.ops[i].inputs) least = std::min(least, r.op);
    for (OpId c : w.ops[i].control_inputs) least = std::min(least, c);
    w.wm[i] = std::min<OpId>(least, i);
  }
  return w;
}

std::string json_of(const Outcome& o) {
  const std::string j = outcome_to_json(o, -1);
  return j.substr(0, j.find("sim_wall"));
}

TEST(StreamedSimulation, RandomWindowedStepIsTheSequentialOneOnAnyThreadCount) {
  // Small GPU memories so that several devices run out (the OOM order and peaks are settled at
  // the end from the loop's peaks), heavy contention, critical path recorded.
  for (const std::string mem : {"1 GiB", "40 MiB"}) {
    const Cluster c = testing::star_cluster(8, "12 GB/s", "1 us", true, mem);
    const WindowedStep w = windowed_step(4000, c.num_devices(), 7);
    StepGraphBuilder plain(c);
    for (const Op& op : w.ops) plain.add_op(op);
    const StepGraph step = std::move(plain).finish();
    const Outcome ref = simulate(step, Placement{w.dev});
    ASSERT_GT(ref.transfers, 1000);
    ASSERT_FALSE(ref.critical_path.empty());
    if (mem == "40 MiB") ASSERT_GE(ref.oom_devices.size(), 2U);
    for (int threads : {1, 2, 4}) {
      Placement p;
      p.device_of.reserve(w.ops.size());
      // A second builder, not streamed, answers consumers_so_far by searching every input.
      StepGraphBuilder check(c);
      int checked = 0;
      const auto build = [&](StepGraphBuilder& b) {
        OpId declared = 0;
        for (std::size_t i = 0; i < w.ops.size(); ++i) {
          if (i % 50 == 0 && w.wm[i] > declared) {
            b.set_watermark(w.wm[i], i >= 4);
            for (OpId o = declared; o < w.wm[i]; ++o, ++checked)
              ASSERT_EQ(b.consumers_so_far(o), check.consumers_so_far(o)) << o;
            declared = w.wm[i];
          }
          p.device_of.push_back(w.dev[i]);
          b.add_op(w.ops[i]);
          check.add_op(w.ops[i]);
        }
      };
      SimOptions o;
      o.threads = threads;
      const StepSize size{static_cast<std::int64_t>(w.ops.size()),
                          static_cast<std::int64_t>(w.ops.size()),
                          static_cast<std::int64_t>(3 * w.ops.size())};
      const BuiltStep r = simulate_while_building(c, {}, size, p, build, o);
      EXPECT_EQ(r.overlapped, threads > 1) << threads;
      EXPECT_GT(checked, 3000);
      EXPECT_EQ(json_of(r.outcome), json_of(ref)) << mem << " threads " << threads;
      EXPECT_EQ(json_of(simulate(r.step, p)), json_of(ref));  // the step it built
    }
  }
}

TEST(StreamedSimulation, WhatCannotOverlapFallsBackToTheSequentialRun) {
  const Cluster c = testing::star_cluster(4, "12 GB/s", "1 us", true, "40 MiB");
  const WindowedStep w = windowed_step(1500, c.num_devices(), 3);
  StepGraphBuilder plain(c);
  for (const Op& op : w.ops) plain.add_op(op);
  const StepGraph step = std::move(plain).finish();
  const auto run = [&](std::int64_t declared_ops, bool stop) {
    Placement p;
    p.device_of.reserve(w.ops.size());
    SimOptions o;
    o.threads = 2;
    o.stop_at_first_oom = stop;
    const auto build = [&](StepGraphBuilder& b) {
      for (std::size_t i = 0; i < w.ops.size(); ++i) {
        if (i % 50 == 0) b.set_watermark(w.wm[i], i >= 4);
        p.device_of.push_back(w.dev[i]);
        b.add_op(w.ops[i]);
      }
    };
    const StepSize size{declared_ops, declared_ops, 3 * declared_ops};
    BuiltStep r = simulate_while_building(c, {}, size, p, build, o);
    SimOptions seq;
    seq.stop_at_first_oom = stop;
    EXPECT_EQ(json_of(r.outcome), json_of(simulate(step, Placement{w.dev}, seq)));
    return r.overlapped;
  };
  EXPECT_TRUE(run(1500, false));
  EXPECT_FALSE(run(1500, true));   // an OOM stop needs all persistent memory at t = 0
  EXPECT_FALSE(run(1000, false));  // more ops than declared: the loop's arrays are too small
  EXPECT_FALSE(run(700, false));
}

TEST(StreamedSimulation, AWatermarkTooEarlyIsAnInputError) {
  const Cluster c = testing::star_cluster(2);
  StepGraphBuilder b(c);
  for (int i = 0; i < 6; ++i)
    b.add_op(testing::timed_op("a", 1, 64, i ? std::vector<OpId>{i - 1} : std::vector<OpId>{}));
  EXPECT_THROW(b.set_watermark(7, false), InputError);  // beyond the ops filed
  b.set_watermark(3, true);
  EXPECT_THROW(b.set_watermark(2, false), InputError);  // a watermark never goes back
  EXPECT_THROW(b.add_op(testing::timed_op("b", 1, 64, {2})), InputError);  // reads below it
  Op ctl = testing::timed_op("c", 1, 64, {5});
  ctl.control_inputs = {1};
  EXPECT_THROW(b.add_op(ctl), InputError);                            // a control input below it
  EXPECT_THROW(b.add_op(testing::timed_op("d", 1, 64)), InputError);  // a source after the last
  EXPECT_EQ(b.add_op(testing::timed_op("e", 1, 64, {3, 5})), 6);

  // Through simulate_while_building the generator's error surfaces, on any thread count.
  const WindowedStep w = windowed_step(800, c.num_devices(), 5);
  for (int threads : {1, 2}) {
    Placement p;
    p.device_of.reserve(w.ops.size());
    SimOptions o;
    o.threads = threads;
    const auto build = [&](StepGraphBuilder& sb) {
      for (std::size_t i = 0; i < w.ops.size(); ++i) {
        if (i == 400) sb.set_watermark(static_cast<OpId>(i), true);  // too early by the window
        p.device_of.push_back(w.dev[i]);
        sb.add_op(w.ops[i]);
      }
    };
    const StepSize size{800, 800, 2400};
    EXPECT_THROW(simulate_while_building(c, {}, size, p, build, o), InputError) << threads;
  }
}

}  // namespace
}  // namespace placesim::sim

// simulate(): hand-computed steps, memory and OOM, properties on random graphs, determinism of the
// batch oracle across thread counts.
#include "sim/simulate.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <tbb/task_arena.h>

#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/trace.hpp"

#include "tests/sim/sim_fixtures.hpp"

namespace placesim::sim {
namespace {

using testing::random_graph;
using testing::random_placement;
using testing::star_cluster;
using testing::star_cluster_yaml;
using testing::timed_op;

constexpr std::int64_t kUs = 1000;

Graph graph_of(std::vector<Op> ops) {
  Graph g;
  g.name = "hand";
  for (Op& o : ops) g.add_op(std::move(o));
  g.finalize();
  return g;
}

Placement on(const Cluster& c, std::vector<std::string> devices) {
  Placement p;
  for (const auto& d : devices) p.device_of.push_back(c.device_index(d));
  return p;
}

TEST(Simulate, ChainOnOneGpuLaunchesAhead) {
  // launch a [0,2] -> a [2,12]; b is launchable once a is enqueued (same stream): launch
  // [2,4], waits for the stream -> [12,22]; c: launch [4,6], runs [22,32].
  const Cluster c = star_cluster(2);
  const Graph g = graph_of(
      {timed_op("a", 10, 1000), timed_op("b", 10, 1000, {0}), timed_op("c", 10, 1000, {1})});
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu0", "gpu0"}));
  EXPECT_EQ(o.step_time.ns, 32 * kUs);
  EXPECT_EQ(o.transfers, 0);
  EXPECT_EQ(o.devices[1].busy.ns, 30 * kUs);
  EXPECT_EQ(o.devices[1].ops, 3);
  ASSERT_EQ(o.critical_path.size(), 4u);
  EXPECT_EQ(o.critical_path[0].kind, PathItem::Kind::Launch);
  EXPECT_EQ(o.critical_path[0].name, "a");
  EXPECT_EQ(o.critical_path[1].name, "a");
  EXPECT_EQ(o.critical_path[3].name, "c");
  EXPECT_EQ(o.critical_path[3].end, 32 * kUs);
}

TEST(Simulate, PeerCopyBetweenGpus) {
  // a on gpu0 [2,12]; 1 MB over gpu0-sw0-gpu1 at 10 GB/s = 100 us -> [12,112]; b launch
  // [112,114], runs [114,124].
  const Cluster c = star_cluster(2);
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0})});
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu1"}));
  EXPECT_EQ(o.step_time.ns, 124 * kUs);
  EXPECT_EQ(o.transfers, 1);
  EXPECT_EQ(o.transferred.v, 1'000'000);
  const auto link = [&](const std::string& n) {
    return *std::find_if(o.links.begin(), o.links.end(),
                         [&](const LinkOutcome& l) { return l.name == n; });
  };
  EXPECT_EQ(link("gpu0-sw0").bytes.v, 1'000'000);
  EXPECT_EQ(link("gpu0-sw0").busy.ns, 100 * kUs);
  EXPECT_EQ(link("cpu0-sw0").bytes.v, 0);
  ASSERT_GE(o.critical_path.size(), 3u);
  const PathItem& copy = o.critical_path[o.critical_path.size() - 3];
  EXPECT_EQ(copy.kind, PathItem::Kind::Copy);
  EXPECT_EQ(copy.start, 12 * kUs);
  EXPECT_EQ(copy.end, 112 * kUs);
  // Received copy lives on gpu1 from the copy start to b's end.
  EXPECT_EQ(o.devices[2].peak_memory.v, 1'000'000 + 8);
}

TEST(Simulate, LatencyAddsToTheCopy) {
  const Cluster c = star_cluster(2, "10 GB/s", "1 us");
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0})});
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu1"}));
  EXPECT_EQ(o.step_time.ns, 126 * kUs);  // two hops of 1 us
}

TEST(Simulate, WithoutPeerAccessCopiesAreStagedThroughHostMemory) {
  const Cluster c = star_cluster(2, "10 GB/s", "0 ns", /*peer=*/false);
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0})});
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu1"}));
  EXPECT_EQ(o.step_time.ns, 224 * kUs);  // two copies of 100 us
  EXPECT_EQ(o.transfers, 2);
  EXPECT_EQ(o.transferred.v, 2'000'000);
  EXPECT_EQ(o.devices[0].peak_memory.v, 1'000'000);  // the staging buffer on cpu0
}

TEST(Simulate, ContentionOnTheHostLinkAndCpuWorkers) {
  // Two GPUs each send 1 MB to cpu0 at t=12 us over cpu0-sw0 (same direction): 5 GB/s each,
  // both arrive at 212 us. One CPU worker, dispatch 1 us + 10 us per op: [212,223], [223,234].
  const Cluster c = star_cluster(2);
  const Graph g = graph_of({timed_op("a0", 10, 1'000'000), timed_op("a1", 10, 1'000'000),
                            timed_op("c0", 10, 8, {0}), timed_op("c1", 10, 8, {1})});
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu1", "cpu0", "cpu0"}));
  EXPECT_EQ(o.step_time.ns, 234 * kUs);
  EXPECT_EQ(o.devices[0].busy.ns, 22 * kUs);

  // Two CPU workers run both at once, but they share the socket: each op gets half of it, so
  // both end at 213 + 20 us (before the socket was shared they ended at 223 us, as if the CPU
  // had two sockets).
  const Cluster c2 = star_cluster(2, "10 GB/s", "0 ns", true, "1 GiB", 1, "split_duplex", 2);
  EXPECT_EQ(simulate(c2, g, on(c2, {"gpu0", "gpu1", "cpu0", "cpu0"})).step_time.ns, 233 * kUs);
}

namespace {
/// The star cluster with `extra` spliced into cpu0's (or every GPU's) inline map.
Cluster star_with(const std::string& cpu_extra, const std::string& gpu_extra, int gpus = 2,
                  int cpu_workers = 1, const std::string& gpu_mem = "1 GiB") {
  std::string y =
      star_cluster_yaml(gpus, "10 GB/s", "0 ns", true, gpu_mem, 1, "split_duplex", cpu_workers);
  const auto splice = [&](const std::string& key, const std::string& extra) {
    if (extra.empty()) return;
    for (std::size_t at = y.find(key); at != std::string::npos; at = y.find(key, at + 1)) {
      // The last '}' of the line closes the device map.
      const std::size_t close = y.rfind('}', y.find('\n', at));
      y.insert(close, ", " + extra);
    }
  };
  splice("launch_overhead: 1 us", cpu_extra);
  splice("launch_overhead: 2 us", gpu_extra);
  return parse_cluster_yaml(y, "<test star>");
}
}  // namespace

TEST(Simulate, CpuOpsShareTheSocket) {
  // Eight independent 100 us ops (work at the whole socket) on a CPU with eight workers: the
  // socket does 800 us of work, so the step takes 1 us dispatch + 800 us, not 101 us.
  std::vector<Op> ops;
  for (int i = 0; i < 8; ++i) ops.push_back(timed_op("c" + std::to_string(i), 100, 8));
  const Graph g = graph_of(ops);
  const Cluster c = star_cluster(1, "10 GB/s", "0 ns", true, "1 GiB", 1, "split_duplex", 8);
  const Outcome o = simulate(c, g, on(c, std::vector<std::string>(8, "cpu0")));
  EXPECT_EQ(o.step_time.ns, 801 * kUs);
  EXPECT_EQ(o.devices[0].busy.ns, 801 * kUs);

  // With one worker the ops run one after another: the same total plus one dispatch per op.
  const Cluster c1 = star_cluster(1);
  EXPECT_EQ(simulate(c1, g, on(c1, std::vector<std::string>(8, "cpu0"))).step_time.ns, 808 * kUs);

  // An op may use only intra_op_threads / worker_threads of the socket: alone, 4 of 8 threads
  // take twice the time; two such ops fill the socket and end together.
  const Graph one = graph_of({timed_op("c0", 100, 8)});
  const Cluster half = star_with("intra_op_threads: 4", "", 1, 8);
  EXPECT_EQ(simulate(half, one, on(half, {"cpu0"})).step_time.ns, 201 * kUs);
  const Graph two = graph_of({timed_op("c0", 100, 8), timed_op("c1", 100, 8)});
  EXPECT_EQ(simulate(half, two, on(half, {"cpu0", "cpu0"})).step_time.ns, 201 * kUs);
}

TEST(Simulate, ReservedMemoryCountsTowardsOutOfMemory) {
  // a (1 MB out) -> b on gpu0 with 2 MiB of memory: fits alone, not with 1.5 MiB reserved.
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0})});
  const Cluster plain = star_with("", "", 1, 1, "2 MiB");
  const Outcome fits = simulate(plain, g, on(plain, {"gpu0", "gpu0"}));
  EXPECT_FALSE(fits.oom);
  EXPECT_EQ(fits.devices[1].reserved_memory.v, 0);

  const Cluster reserved = star_with("", "reserved_memory: 1536 KiB", 1, 1, "2 MiB");
  ASSERT_EQ(reserved.devices[1].spec.reserved_memory.v, 1536 * 1024);
  const Outcome o = simulate(reserved, g, on(reserved, {"gpu0", "gpu0"}));
  EXPECT_TRUE(o.oom);
  ASSERT_EQ(o.oom_devices.size(), 1u);
  EXPECT_EQ(o.oom_devices[0].device_name, "gpu0");
  EXPECT_EQ(o.oom_devices[0].needed.v, 1'000'008 + 1536 * 1024);  // tensors + reserved
  EXPECT_EQ(o.oom_devices[0].capacity.v, 2 << 20);
  EXPECT_EQ(o.oom_devices[0].reserved.v, 1536 * 1024);
  EXPECT_EQ(o.devices[1].peak_memory.v, 1'000'008);  // tensors only
  EXPECT_EQ(o.devices[1].memory_capacity.v, 2 << 20);
  EXPECT_EQ(o.devices[1].reserved_memory.v, 1536 * 1024);
  const auto j = nlohmann::json::parse(outcome_to_json(o));
  EXPECT_EQ(j["devices"][1]["reserved_memory_bytes"], 1536 * 1024);
  EXPECT_EQ(j["oom_devices"][0]["reserved_bytes"], 1536 * 1024);
}

TEST(Simulate, CopiesPayHostIssueAndDmaSetup) {
  // PeerCopyBetweenGpus with a 5 us cudaMemcpyAsync on gpu0's launch thread and 3 us of DMA setup:
  // a ends at 12 us, issue [12, 17], setup [17, 20], bytes [20, 120], b launched [120, 122],
  // runs [122, 132].
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0})});
  const Cluster c = star_with("", "copy_issue_overhead: 5 us, dma_setup_latency: 3 us");
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu1"}));
  EXPECT_EQ(o.step_time.ns, 132 * kUs);
  bool issue_on_path = false;
  for (const PathItem& p : o.critical_path) {
    if (p.kind != PathItem::Kind::Issue) continue;
    issue_on_path = true;
    EXPECT_EQ(p.start, 12 * kUs);
    EXPECT_EQ(p.end, 17 * kUs);
    EXPECT_EQ(p.device, c.device_index("gpu0"));
  }
  EXPECT_TRUE(issue_on_path);

  // The issue occupies gpu0's launch thread: x (after a by a control edge, 200 us on gpu0) is
  // ready at 12 us but launches after the issue, [17, 19], and runs [19, 219].
  std::vector<Op> ops = {timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0}),
                         timed_op("x", 200, 8)};
  ops[2].control_inputs.push_back(0);
  const Graph g2 = graph_of(ops);
  EXPECT_EQ(simulate(c, g2, on(c, {"gpu0", "gpu1", "gpu0"})).step_time.ns, 219 * kUs);
  const Cluster free_copies = star_with("", "");
  EXPECT_EQ(simulate(free_copies, g2, on(free_copies, {"gpu0", "gpu1", "gpu0"})).step_time.ns,
            214 * kUs);
}

TEST(Simulate, QueuedKernelsOnOneStreamPayTheDeviceGap) {
  // ChainOnOneGpuLaunchesAhead on a Hopper part (arch 9.0, kernel gap 1.1 us): b and c are queued
  // (launched at 4 and 6 us) long before a and b end, yet each waits 1.1 us after its
  // predecessor's kernel: a [2,12], b [13.1,23.1], c [24.2,34.2]. The last kernel's gap is idle
  // nobody waits for. An A100 (8.0) pays 1.5 us; an unmeasured part (8.6) nothing.
  const Graph g = graph_of(
      {timed_op("a", 10, 1000), timed_op("b", 10, 1000, {0}), timed_op("c", 10, 1000, {1})});
  const Cluster hopper = star_with("", "arch: \"9.0\"");
  const Outcome o = simulate(hopper, g, on(hopper, {"gpu0", "gpu0", "gpu0"}));
  EXPECT_EQ(o.step_time.ns, 34'200);
  EXPECT_EQ(o.devices[1].busy.ns, 30 * kUs);  // the gap is idle, not kernel time
  const Cluster a100 = star_with("", "arch: \"8.0\"");
  EXPECT_EQ(simulate(a100, g, on(a100, {"gpu0", "gpu0", "gpu0"})).step_time.ns, 35 * kUs);
  const Cluster ampere86 = star_with("", "arch: \"8.6\"");
  EXPECT_EQ(simulate(ampere86, g, on(ampere86, {"gpu0", "gpu0", "gpu0"})).step_time.ns, 32 * kUs);
  // A 1 us kernel then a 10 us one, launches 2 us each: k1 [2,3]; k2's launch ends at 4 and the
  // gap at 4.1 (Hopper), so k2 runs [4.1,14.1]; on the 8.6 part the launch decides, [4,14].
  const Graph short_first = graph_of({timed_op("k1", 1, 8), timed_op("k2", 10, 8, {0})});
  EXPECT_EQ(simulate(hopper, short_first, on(hopper, {"gpu0", "gpu0"})).step_time.ns, 14'100);
  EXPECT_EQ(simulate(ampere86, short_first, on(ampere86, {"gpu0", "gpu0"})).step_time.ns, 14 * kUs);
}

TEST(Simulate, ClusterFileKernelGapReplacesTheArchitecturesDefault) {
  // The chain above on the Hopper part with the cluster's own kernel_gap: 0 gives the timing
  // before the gap existed (a [2,12], b [12,22], c [22,32]); 3 us delays b and c by 3 us each.
  const Graph g = graph_of(
      {timed_op("a", 10, 1000), timed_op("b", 10, 1000, {0}), timed_op("c", 10, 1000, {1})});
  const Cluster none = star_with("", "arch: \"9.0\", kernel_gap: 0 us");
  EXPECT_EQ(simulate(none, g, on(none, {"gpu0", "gpu0", "gpu0"})).step_time.ns, 32 * kUs);
  const Cluster slow = star_with("", "arch: \"9.0\", kernel_gap: 3 us");
  EXPECT_EQ(simulate(slow, g, on(slow, {"gpu0", "gpu0", "gpu0"})).step_time.ns, 38 * kUs);
  // A calibration's measured gap replaces the default, not a value the cluster file chose.
  Calibration cal;
  cal.source = "trace.json";
  cal.devices["gpu0"].kernel_gap = Duration{2'000};
  cal.devices["gpu1"].kernel_gap = Duration{2'000};
  Cluster hopper = star_with("", "arch: \"9.0\"");
  EXPECT_EQ(apply_kernel_gap_calibration(hopper, cal).size(), 2u);
  EXPECT_EQ(hopper.devices[1].spec.kernel_gap.ns, 2'000);
  EXPECT_EQ(simulate(hopper, g, on(hopper, {"gpu0", "gpu0", "gpu0"})).step_time.ns, 36 * kUs);
  Cluster kept = slow;
  const std::vector<std::string> lines = apply_kernel_gap_calibration(kept, cal);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("kept"), std::string::npos) << lines[0];
  EXPECT_EQ(kept.devices[1].spec.kernel_gap.ns, 3'000);
}

TEST(Simulate, SharedLinkCountsBothDirections) {
  // gpu0 -> gpu1 and gpu1 -> gpu0 at the same time: split duplex links carry both at 10 GB/s;
  // shared links halve them.
  const Graph g = graph_of({timed_op("a0", 10, 1'000'000), timed_op("a1", 10, 1'000'000),
                            timed_op("b0", 10, 8, {1}), timed_op("b1", 10, 8, {0})});
  const Cluster split = star_cluster(2);
  const Cluster shared = star_cluster(2, "10 GB/s", "0 ns", true, "1 GiB", 1, "shared");
  const auto p = on(split, {"gpu0", "gpu1", "gpu0", "gpu1"});
  // Both a's run [2,12]; the b's are launched after 100 us (split) or 200 us (shared) of copy.
  EXPECT_EQ(simulate(split, g, p).step_time.ns, 124 * kUs);
  EXPECT_EQ(simulate(shared, g, p).step_time.ns, 224 * kUs);
}

TEST(Simulate, TwoStreamsOverlapIndependentKernels) {
  const Graph g = graph_of({timed_op("a", 10, 8), timed_op("b", 10, 8)});
  const Cluster one = star_cluster(1);
  const Cluster two = star_cluster(1, "10 GB/s", "0 ns", true, "1 GiB", 2);
  EXPECT_EQ(simulate(one, g, on(one, {"gpu0", "gpu0"})).step_time.ns, 22 * kUs);
  EXPECT_EQ(simulate(two, g, on(two, {"gpu0", "gpu0"})).step_time.ns, 14 * kUs);
}

TEST(Simulate, MemoryPeakAndOutOfMemory) {
  // gpu0: 100 B persistent; a's 1000 B from a's start; b's 500 B from b's start at 12 us, when a
  // has ended but its output is still read: peak 1600 B.
  Op a = timed_op("a", 10, 1000);
  a.persistent = Bytes{100};
  const Graph g = graph_of({a, timed_op("b", 10, 500, {0})});
  const Cluster big = star_cluster(1);
  const Outcome ok = simulate(big, g, on(big, {"gpu0", "gpu0"}));
  EXPECT_FALSE(ok.oom);
  EXPECT_EQ(ok.devices[1].peak_memory.v, 1600);

  const Cluster small = star_cluster(1, "10 GB/s", "0 ns", true, "1500 B");
  const Outcome o = simulate(small, g, on(small, {"gpu0", "gpu0"}));
  EXPECT_TRUE(o.oom);
  ASSERT_EQ(o.oom_devices.size(), 1u);
  EXPECT_EQ(o.oom_devices[0].device_name, "gpu0");
  EXPECT_EQ(o.oom_devices[0].needed.v, 1600);
  EXPECT_EQ(o.oom_devices[0].capacity.v, 1500);
  EXPECT_EQ(o.step_time.ns, 22 * kUs);  // the step still completes

  SimOptions stop;
  stop.stop_at_first_oom = true;
  const Outcome s = simulate(small, g, on(small, {"gpu0", "gpu0"}), stop);
  EXPECT_TRUE(s.oom);
  EXPECT_EQ(s.step_time.ns, 12 * kUs);  // stopped at b's allocation
}

TEST(Simulate, ControlEdgesOrderWithoutCopies) {
  Op b = timed_op("b", 10, 1'000'000);
  b.control_inputs = {0};
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), b});
  const Cluster c = star_cluster(2);
  const Outcome o = simulate(c, g, on(c, {"gpu0", "gpu1"}));
  EXPECT_EQ(o.transfers, 0);
  EXPECT_EQ(o.step_time.ns, 24 * kUs);  // b launched at 12 after a ends, runs [14,24]
}

TEST(Simulate, BadPlacementIsInputError) {
  const Cluster c = star_cluster(1);
  const Graph g = graph_of({timed_op("a", 10, 8)});
  EXPECT_THROW(simulate(c, g, Placement{}), InputError);
  EXPECT_THROW(simulate(c, g, Placement{{7}}), InputError);
  Op gpu_only = timed_op("x", 1, 8);
  gpu_only.device_kind = DeviceKind::Gpu;
  const Graph h = graph_of({gpu_only});
  EXPECT_THROW(simulate(c, h, on(c, {"cpu0"})), InputError);
}

TEST(Simulate, TraceHasTracksForStreamsEnginesAndLinks) {
  const Cluster c = star_cluster(2);
  const Graph g = graph_of({timed_op("a", 10, 1'000'000), timed_op("b", 10, 8, {0})});
  TraceSink trace(c);
  trace.describe(g);
  SimOptions opt;
  opt.trace = &trace;
  simulate(c, g, on(c, {"gpu0", "gpu1"}), opt);
  const auto j = nlohmann::json::parse(trace.to_json());
  int kernels = 0, launches = 0, copies = 0, ac2g = 0, deps = 0, memory = 0, async = 0;
  std::set<std::string> link_counters;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "kernel") {
      ++kernels;
      EXPECT_EQ(e["args"]["op type"], "Test");
      EXPECT_TRUE(e["args"].contains("correlation"));
    }
    if (e["ph"] == "X" && e["cat"] == "cuda_runtime" && e["name"] == "cudaLaunchKernel") ++launches;
    if (e["ph"] == "X" && e["cat"] == "gpu_memcpy") {
      ++copies;
      EXPECT_EQ(e["args"]["bytes"], 1'000'000);
      EXPECT_EQ(e["args"]["producer"], "a");
      EXPECT_NE(e["args"]["route"], "");
    }
    if (e["ph"] == "s" && e["cat"] == "ac2g") ++ac2g;
    if (e["ph"] == "s" && e["cat"] == "dep") ++deps;
    if (e["ph"] == "C" && e["name"] == "memory") ++memory;
    if (e["ph"] == "C" && e["name"] != "memory") link_counters.insert(e["name"]);
    if (e["ph"] == "b" || e["ph"] == "e") ++async;
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(ac2g, 3);  // two kernels and the copy (its issue costs 0 ns here)
  EXPECT_EQ(deps, 2);  // a -> copy -> b
  EXPECT_GT(memory, 0);
  EXPECT_EQ(link_counters.size(), 2u);  // two links on the route, one counter track each
  EXPECT_EQ(async, 0);
}

// ---------------------------------------------------------------------------------------------
// Properties on random graphs and placements.

std::int64_t longest_kernel_path(const Graph& g, const Cluster& c, const Placement& p) {
  KernelCostModel km;
  std::vector<std::int64_t> finish(g.num_ops(), 0);
  std::int64_t best = 0;
  for (OpId o : g.topo_order) {
    std::int64_t start = 0;
    for (const TensorRef& r : g.ops[o].inputs) start = std::max(start, finish[r.op]);
    finish[o] = start + km.op_time(g.ops[o], c.devices[p.device_of[o]]).ns;
    best = std::max(best, finish[o]);
  }
  return best;
}

class Properties : public ::testing::TestWithParam<int> {};

TEST_P(Properties, BoundsConservationAndPathConsistency) {
  const int seed = GetParam();
  const Cluster c = star_cluster(3, "12 GB/s", "1 us", seed % 2 == 0);
  const Graph g = random_graph(300, seed);
  const Placement p = random_placement(g, c, seed * 7 + 1);
  const Outcome o = simulate(c, g, p);
  ASSERT_FALSE(o.unreachable);

  // Step time bounds.
  EXPECT_GE(o.step_time.ns, longest_kernel_path(g, c, p));
  KernelCostModel km;
  std::vector<std::int64_t> work(c.num_devices(), 0);
  for (int i = 0; i < g.num_ops(); ++i) {
    const Device& d = c.devices[p.device_of[i]];
    work[p.device_of[i]] += km.op_time(g.ops[i], d).ns +
                            (d.spec.kind == DeviceKind::Cpu ? d.spec.launch_overhead.ns : 0);
  }
  for (int d = 0; d < c.num_devices(); ++d) {
    EXPECT_GE(o.step_time.ns, work[d]) << c.devices[d].name;
    EXPECT_LE(o.devices[d].busy.ns, o.step_time.ns);
  }

  // Bytes conserved: every (tensor, remote device) pair is copied once per route segment, and
  // each link carries the bytes of the segments crossing it.
  std::int64_t expect_bytes = 0, expect_transfers = 0;
  std::vector<std::int64_t> link_bytes(c.links.size(), 0);
  for (int i = 0; i < g.num_ops(); ++i) {
    std::vector<DeviceId> dsts;
    for (OpId k : g.consumers_of[i])
      if (p.device_of[k] != p.device_of[i]) dsts.push_back(p.device_of[k]);
    std::sort(dsts.begin(), dsts.end());
    dsts.erase(std::unique(dsts.begin(), dsts.end()), dsts.end());
    for (DeviceId d : dsts) {
      for (const RouteSegment& s : c.route(p.device_of[i], d).segments) {
        ++expect_transfers;
        expect_bytes += g.ops[i].outputs[0].bytes.v;
        for (const Hop& h : s.hops) link_bytes[h.link] += g.ops[i].outputs[0].bytes.v;
      }
    }
  }
  EXPECT_EQ(o.transfers, expect_transfers);
  EXPECT_EQ(o.transferred.v, expect_bytes);
  for (std::size_t l = 0; l < c.links.size(); ++l)
    EXPECT_EQ(o.links[l].bytes.v, link_bytes[l]) << c.links[l].name;

  // The critical path is a chain in time ending at the step time.
  ASSERT_FALSE(o.critical_path.empty());
  EXPECT_EQ(o.critical_path.back().end, o.step_time.ns);
  for (std::size_t i = 1; i < o.critical_path.size(); ++i)
    EXPECT_GE(o.critical_path[i].start, o.critical_path[i - 1].end);
  EXPECT_EQ(o.critical_path.front().start, 0);
}

TEST_P(Properties, SwappingIdenticalGpusChangesNothing) {
  const int seed = GetParam();
  const Cluster c = star_cluster(2, "12 GB/s", "1 us");
  const Graph g = random_graph(200, seed + 100);
  const Placement p = random_placement(g, c, seed);
  Placement q = p;
  for (DeviceId& d : q.device_of) d = d == 1 ? 2 : d == 2 ? 1 : d;
  const Outcome a = simulate(c, g, p), b = simulate(c, g, q);
  EXPECT_EQ(a.step_time, b.step_time);
  EXPECT_EQ(a.transfers, b.transfers);
  EXPECT_EQ(a.transferred, b.transferred);
  EXPECT_EQ(a.devices[0].peak_memory, b.devices[0].peak_memory);
  EXPECT_EQ(a.devices[1].peak_memory, b.devices[2].peak_memory);
  EXPECT_EQ(a.devices[1].busy, b.devices[2].busy);
  EXPECT_EQ(a.devices[2].busy, b.devices[1].busy);
}

INSTANTIATE_TEST_SUITE_P(Seeds, Properties, ::testing::Values(1, 2, 3, 4, 5, 6));

TEST(Simulate, EveryBuiltinClusterRunsARandomPlacementConsistently) {
  // Real topologies: NVLink meshes, NVSwitch, PCIe trees, two nodes over InfiniBand (staged and
  // cross-node routes). Same checks as above, on each.
  const Graph g = random_graph(150, 77);
  for (const std::string& name : builtin_cluster_names()) {
    SCOPED_TRACE(name);
    const Cluster c = load_cluster(name);
    const Placement p = random_placement(g, c, 5);
    const Outcome o = simulate(c, g, p);
    EXPECT_FALSE(o.unreachable);
    EXPECT_GE(o.step_time.ns, longest_kernel_path(g, c, p));
    std::int64_t carried = 0, expect = 0;
    for (const LinkOutcome& l : o.links) carried += l.bytes.v;
    for (int i = 0; i < g.num_ops(); ++i) {
      std::vector<DeviceId> dsts;
      for (OpId k : g.consumers_of[i])
        if (p.device_of[k] != p.device_of[i]) dsts.push_back(p.device_of[k]);
      std::sort(dsts.begin(), dsts.end());
      dsts.erase(std::unique(dsts.begin(), dsts.end()), dsts.end());
      for (DeviceId d : dsts)
        for (const RouteSegment& s : c.route(p.device_of[i], d).segments)
          expect += g.ops[i].outputs[0].bytes.v * static_cast<std::int64_t>(s.hops.size());
    }
    EXPECT_EQ(carried, expect);
    ASSERT_FALSE(o.critical_path.empty());
    EXPECT_EQ(o.critical_path.back().end, o.step_time.ns);
  }
}

std::string without_wall(Outcome o) {
  o.sim_wall_s = 0.0;
  return outcome_to_json(o);
}

TEST(BatchOracle, BitIdenticalToSerialOnAnyThreadCount) {
  const Cluster c = star_cluster(3, "12 GB/s", "1 us", false);
  const Graph g = random_graph(400, 9);
  std::vector<Placement> ps;
  for (int i = 0; i < 12; ++i) ps.push_back(random_placement(g, c, 1000 + i));
  BatchOracle oracle(c, g);
  const auto one = oracle.evaluate(ps, 1);
  const auto two = oracle.evaluate(ps, 2);
  const auto dflt = oracle.evaluate(ps);
  ASSERT_EQ(one.size(), ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const std::string serial = without_wall(simulate(c, g, ps[i]));
    EXPECT_EQ(without_wall(one[i]), serial) << i;
    EXPECT_EQ(without_wall(two[i]), serial) << i;
    EXPECT_EQ(without_wall(dflt[i]), serial) << i;
  }
}

TEST(OutcomeJson, HasTheDocumentedKeys) {
  const Cluster c = star_cluster(1);
  const Graph g = graph_of({timed_op("a", 10, 8)});
  const auto j = nlohmann::json::parse(outcome_to_json(simulate(c, g, on(c, {"gpu0"}))));
  for (const char* k : {"step_time_s", "oom", "devices", "links", "transfers", "events",
                        "critical_path", "sim_wall_s"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k :
       {"name", "busy_s", "utilization", "peak_memory_bytes", "memory_capacity_bytes", "oom"})
    EXPECT_TRUE(j["devices"][0].contains(k)) << k;
  for (const char* k : {"name", "bytes", "busy_s"}) EXPECT_TRUE(j["links"][0].contains(k)) << k;
  EXPECT_DOUBLE_EQ(j["step_time_s"].get<double>(), 12e-6);
}

}  // namespace
}  // namespace placesim::sim

namespace placesim::sim {
namespace {

TEST(OutcomeJson, CriticalPathRenderedInChunksIsTheWholeDumpByteForByte) {
  // outcome_to_json renders a long critical path in parallel chunks and splices it in: it must
  // be what nlohmann's dump() of the whole document writes, for every indent and thread count.
  const Cluster c = testing::star_cluster(4, "12 GB/s", "1 us");
  const Graph g = testing::random_graph(300, 5);
  Outcome o = simulate(c, g, testing::random_placement(g, c, 3));
  ASSERT_FALSE(o.critical_path.empty());
  const std::vector<PathItem> real = o.critical_path;
  for (int i = 0; i < 9000; ++i) {  // three chunks of 4,096 and a partial one
    PathItem p = real[static_cast<std::size_t>(i) % real.size()];
    p.kind = static_cast<PathItem::Kind>(i % 4);
    if (i % 7 == 0) p.name += " \"quoted\" \\ tab\t é";  // escapes and UTF-8
    p.start += i;
    p.end += 3 * i + 1;
    o.critical_path.push_back(p);
  }
  nlohmann::json ref = nlohmann::json::parse(outcome_to_json(o));
  nlohmann::json path = nlohmann::json::array();
  for (const PathItem& p : o.critical_path) {
    const char* kind = p.kind == PathItem::Kind::Op      ? "op"
                       : p.kind == PathItem::Kind::Copy  ? "copy"
                       : p.kind == PathItem::Kind::Issue ? "issue"
                                                         : "launch";
    path.push_back({{"kind", kind},
                    {"name", p.name},
                    {"device", p.device},
                    {"start_s", static_cast<double>(p.start) * 1e-9},
                    {"end_s", static_cast<double>(p.end) * 1e-9}});
  }
  ref["critical_path"] = path;  // the reference document, built whole
  for (int threads : {1, 2, 4}) {
    tbb::task_arena arena(threads);
    for (int indent : {-1, 0, 2, 4})
      EXPECT_EQ(arena.execute([&] { return outcome_to_json(o, indent); }), ref.dump(indent))
          << "indent " << indent << ", threads " << threads;
  }
  o.critical_path.clear();
  ref["critical_path"] = nlohmann::json::array();
  EXPECT_EQ(outcome_to_json(o, 2), ref.dump(2));
}

}  // namespace
}  // namespace placesim::sim

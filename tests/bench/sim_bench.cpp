// Engine throughput: ops simulated per second on synthetic graphs with cross-device traffic and
// link contention, and placements per second of the batch oracle on 1 and 2 threads.
// Figures and the command that produced them: docs/performance.md.
#include <benchmark/benchmark.h>
#include <map>
#include <memory>
#include <random>

#include "sim/simulate.hpp"

#include "tests/sim/sim_fixtures.hpp"

namespace {

using namespace placesim::sim;

/// The synthetic workload: random_graph (each op reads 1-3 earlier outputs, some far back) on
/// cpu0 + 4 GPUs behind one PCIe switch. Ops go to GPUs in contiguous blocks (a pipeline-like
/// placement) with every 8th op on a random device, so about a third of the edges cross devices
/// and copies contend on the shared switch links and copy engines.
struct Workload {
  Cluster cluster;
  Graph graph;
  Placement placement;
  std::unique_ptr<BatchOracle> oracle;
};

Placement blocky(const Graph& g, const Cluster& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Placement p;
  const int n = g.num_ops(), gpus = c.num_devices() - 1;
  for (int i = 0; i < n; ++i) {
    DeviceId d = 1 + static_cast<DeviceId>(static_cast<std::int64_t>(i) * gpus / n);
    if (i % 8 == 0) d = static_cast<DeviceId>(rng() % static_cast<std::uint64_t>(c.num_devices()));
    p.device_of.push_back(d);
  }
  return p;
}

/// The light workload (4 GPUs, blocky placement) or, with `heavy`, heavy contention: the same
/// graph on cpu0 + 8 GPUs behind one 12 GB/s switch, every op on a random device, so 8 of 9 edges
/// cross devices and tens of copies share the switch links at once (all in one max-min
/// component).
Workload& workload(int n, bool heavy = false) {
  static std::map<std::pair<int, bool>, std::unique_ptr<Workload>> cache;  // built once per size
  auto& w = cache[{n, heavy}];
  if (!w) {
    w = std::make_unique<Workload>();
    w->cluster = testing::star_cluster(heavy ? 8 : 4, "12 GB/s", "1 us");
    w->graph = testing::random_graph(n, 2026);
    w->placement = heavy ? testing::random_placement(w->graph, w->cluster, 7)
                         : blocky(w->graph, w->cluster, 7);
    SimOptions o;
    o.record_critical_path = false;
    w->oracle = std::make_unique<BatchOracle>(w->cluster, w->graph, o);
  }
  return *w;
}

void BM_SimulateStep(benchmark::State& state) {
  Workload& w = workload(static_cast<int>(state.range(0)));
  std::int64_t transfers = 0, events = 0;
  for (auto _ : state) {
    const Outcome o = w.oracle->evaluate(w.placement);
    transfers = o.transfers;
    events = o.events;
    benchmark::DoNotOptimize(o.step_time);
  }
  state.SetItemsProcessed(state.iterations() * w.graph.num_ops());
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["events"] = static_cast<double>(events);
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(w.graph.num_ops()),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimulateStep)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

/// Heavy contention (see workload()); step_ns must not change with an optimisation.
void BM_SimulateStepHeavy(benchmark::State& state) {
  Workload& w = workload(static_cast<int>(state.range(0)), /*heavy=*/true);
  std::int64_t transfers = 0, events = 0;
  SimTime step = 0;
  for (auto _ : state) {
    const Outcome o = w.oracle->evaluate(w.placement);
    transfers = o.transfers;
    events = o.events;
    step = o.step_time.ns;
    benchmark::DoNotOptimize(o.step_time);
  }
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["events"] = static_cast<double>(events);
  state.counters["step_ns"] = static_cast<double>(step);
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(w.graph.num_ops()),
                                                   benchmark::Counter::kIsIterationInvariantRate);
  state.counters["activities_per_s"] =
      benchmark::Counter(static_cast<double>(w.graph.num_ops() + transfers),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimulateStepHeavy)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);

/// simulate() from scratch, including the per-graph precomputation the oracle shares.
void BM_SimulateWithPrecompute(benchmark::State& state) {
  Workload& w = workload(static_cast<int>(state.range(0)));
  SimOptions o;
  o.record_critical_path = false;
  for (auto _ : state)
    benchmark::DoNotOptimize(simulate(w.cluster, w.graph, w.placement, o).step_time);
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(w.graph.num_ops()),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimulateWithPrecompute)->Arg(10000)->Unit(benchmark::kMillisecond);

/// The batch oracle on a 1k-op graph: 64 different placements per batch, 1 or 2 threads.
void BM_BatchOracle(benchmark::State& state) {
  Workload& w = workload(1000);
  static const std::vector<Placement> batch = [&] {
    std::vector<Placement> ps;
    for (int i = 0; i < 64; ++i) ps.push_back(blocky(w.graph, w.cluster, 100 + i));
    return ps;
  }();
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(w.oracle->evaluate(batch, threads).size());
  state.counters["placements_per_s"] = benchmark::Counter(
      static_cast<double>(batch.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BatchOracle)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

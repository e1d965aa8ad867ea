// Building and grouping large training graphs (RNNLM unrolled: ~84 ops per step at 2 layers).
// Figures in docs/workloads.md.
#include <benchmark/benchmark.h>

#include "models/grouping.hpp"
#include "models/registry.hpp"

namespace {

void BM_BuildRnnlm(benchmark::State& state) {
  const std::string opts = "hidden=256,vocab=1000,steps=" + std::to_string(state.range(0));
  int ops = 0;
  for (auto _ : state) {
    const auto g = placesim::models::load_graph("rnnlm", opts);
    ops = g.num_ops();
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops"] = ops;
  state.SetItemsProcessed(state.iterations() * ops);
}
BENCHMARK(BM_BuildRnnlm)->Arg(120)->Arg(1200)->Unit(benchmark::kMillisecond);

void BM_GroupRnnlm(benchmark::State& state) {
  const auto g = placesim::models::load_graph(
      "rnnlm", "hidden=256,vocab=1000,steps=" + std::to_string(state.range(0)));
  for (auto _ : state) {
    const auto gr = placesim::models::group_graph(g, 256);
    benchmark::DoNotOptimize(gr.size());
  }
  state.counters["ops"] = g.num_ops();
  state.SetItemsProcessed(state.iterations() * g.num_ops());
}
BENCHMARK(BM_GroupRnnlm)->Arg(120)->Arg(1200)->Unit(benchmark::kMillisecond);

void BM_BuildNmtDefault(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(placesim::models::load_graph("nmt", "").num_ops());
}
BENCHMARK(BM_BuildNmtDefault)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

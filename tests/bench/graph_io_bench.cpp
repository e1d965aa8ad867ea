// Reading and writing large graph JSON files (docs/performance.md): a chain-with-skips graph of
// N ops, each with one output and two inputs, as builders of unrolled RNNs produce.
#include <benchmark/benchmark.h>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"

namespace {

using namespace placesim::sim;

Graph make_graph(int n) {
  Graph g;
  g.name = "bench";
  for (int i = 0; i < n; ++i) {
    Op op{.name = "layer" + std::to_string(i % 97) + "/op" + std::to_string(i),
          .type = "MatMul",
          .flops = Flops{1e6 + i},
          .bytes_read = Bytes{4096},
          .bytes_written = Bytes{2048}};
    if (i > 0) op.inputs.push_back({i - 1, 0});
    if (i > 10) op.inputs.push_back({i - 10, 0});
    op.outputs = {{.bytes = Bytes{2048}}};
    op.group =
        std::to_string(i / 50).insert(0, 1, 'g');  // "g" + to_string: GCC 12 false -Wrestrict
    g.add_op(std::move(op));
  }
  g.finalize();
  return g;
}

void BM_GraphToJson(benchmark::State& state) {
  const Graph g = make_graph(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(graph_to_json(g));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GraphToJson)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_ParseGraphJson(benchmark::State& state) {
  const std::string text = graph_to_json(make_graph(static_cast<int>(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(parse_graph_json(text, "bench.json"));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ParseGraphJson)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_LoadCluster(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_cluster("2x-dgx-a100"));
}
BENCHMARK(BM_LoadCluster)->Unit(benchmark::kMillisecond);

}  // namespace
BENCHMARK_MAIN();

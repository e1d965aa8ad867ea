// Whether Boost.Graph (already linked) should replace the hand-written graph algorithms of
// sim/graph.cpp (issue 19): Kahn's algorithm lowest id first (Graph::finalize's topological order)
// against boost::topological_sort (plus building its adjacency_list), and graph_stats' critical
// path DP against boost::dag_shortest_paths on negated weights, best of 20 runs each.
//   build/placesim build-graph --graph rnnlm --graph-opt layers=8,steps=400 -o /tmp/rnnlm_big.json
//   build/tests/graph_algo_bench /tmp/rnnlm_big.json
// Figures: docs/performance.md. Not a Google Benchmark: it compares two answers as well as times.
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dag_shortest_paths.hpp>
#include <boost/graph/topological_sort.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "sim/graph.hpp"

namespace sim = placesim::sim;
using Clock = std::chrono::steady_clock;

template <class F>
double best_ms(F f, int reps) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: graph_algo_bench GRAPH.json...\n");
    return 2;
  }
  for (int a = 1; a < argc; ++a) {
    sim::Graph g = sim::read_graph_json(argv[a]);
    const std::size_t n = g.ops.size();
    // The Kahn part of finalize alone (lowest id first), as finalize runs it.
    std::vector<sim::OpId> order;
    const double kahn = best_ms(
        [&] {
          std::vector<std::int32_t> indeg(n, 0);
          for (std::size_t u = 0; u < n; ++u)
            for (sim::OpId v : g.consumers_of[u]) ++indeg[static_cast<std::size_t>(v)];
          order.clear();
          order.reserve(n);
          std::priority_queue<sim::OpId, std::vector<sim::OpId>, std::greater<>> ready;
          for (std::size_t i = 0; i < n; ++i)
            if (indeg[i] == 0) ready.push(static_cast<sim::OpId>(i));
          while (!ready.empty()) {
            const sim::OpId u = ready.top();
            ready.pop();
            order.push_back(u);
            for (sim::OpId v : g.consumers_of[static_cast<std::size_t>(u)])
              if (--indeg[static_cast<std::size_t>(v)] == 0) ready.push(v);
          }
        },
        20);
    using BG = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                     boost::property<boost::edge_weight_t, double>>;
    std::vector<std::size_t> border;
    std::optional<BG> bg;  // emplaced: adjacency_list copy-assignment trips GCC 12 warnings
    const double build = best_ms(
        [&] {
          bg.emplace(n);
          for (std::size_t u = 0; u < n; ++u)
            for (sim::OpId v : g.consumers_of[u])
              boost::add_edge(u, static_cast<std::size_t>(v), *bg);
        },
        20);
    const double btopo = best_ms(
        [&] {
          border.clear();
          border.reserve(n);
          boost::topological_sort(*bg, std::back_inserter(border));
        },
        20);
    std::reverse(border.begin(), border.end());
    std::size_t same = 0;
    for (std::size_t i = 0; i < n; ++i) same += static_cast<std::size_t>(order[i]) == border[i];
    // Critical path by FLOPs: graph_stats' DP over the order vs dag_shortest_paths on negated
    // vertex weights moved onto edges (Boost's DAG longest path idiom).
    double dp_best = 0;
    const double dp = best_ms(
        [&] {
          std::vector<double> heavy(n, 0.0);
          dp_best = 0;
          for (std::size_t k = 0; k < n; ++k) {
            const auto u = static_cast<std::size_t>(g.topo_order[k]);
            heavy[u] += g.ops[u].flops.v;
            dp_best = std::max(dp_best, heavy[u]);
            for (sim::OpId v : g.consumers_of[u])
              heavy[static_cast<std::size_t>(v)] =
                  std::max(heavy[static_cast<std::size_t>(v)], heavy[u]);
          }
        },
        20);
    // Super source s = n with edges s->u weight -flops[u], u->v weight -flops[v].
    using BW = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                     boost::property<boost::edge_weight_t, double>>;
    BW bw(n + 1);
    for (std::size_t u = 0; u < n; ++u) {
      boost::add_edge(n, u, -g.ops[u].flops.v, bw);
      for (sim::OpId v : g.consumers_of[u])
        boost::add_edge(u, static_cast<std::size_t>(v), -g.ops[static_cast<std::size_t>(v)].flops.v,
                        bw);
    }
    std::vector<double> dist(n + 1);
    double bg_best = 0;
    const double bdp = best_ms(
        [&] {
          boost::dag_shortest_paths(bw, n, boost::distance_map(dist.data()));
          bg_best = 0;
          for (std::size_t u = 0; u < n; ++u) bg_best = std::max(bg_best, -dist[u]);
        },
        20);
    std::printf(
        "%s: %zu ops | Kahn (lowest id first) %.2f ms | Boost topological_sort %.2f ms (+ %.2f ms "
        "adjacency_list build) = %.2fx, same order at %zu of %zu positions | critical-path DP %.2f "
        "ms | Boost dag_shortest_paths %.2f ms = %.2fx, same value %s\n",
        argv[a], n, kahn, btopo, build, (btopo + build) / kahn, same, n, dp, bdp, bdp / dp,
        dp_best == bg_best ? "yes" : "NO");
  }
}

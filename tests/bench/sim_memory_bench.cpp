// Memory of one heavy-contention simulate() by stage, in bytes per op from the process's resident
// set (/proc/self/status), and the wall time of each stage. Linux only. Figures and the command:
// docs/performance.md ([mem]).
//
// Graph mode: the Graph (with its placement), the BatchOracle (which borrows the graph: its
// compact precomputation only), and one step at its peak.
//
//   build/tests/sim_memory_bench 1000000
//   -> ops=1000000 graph_B_per_op=688 oracle_B_per_op=101 step_peak_B_per_op=67 ...
//
// Streamed mode: the same random graph generated op by op into a StepGraphBuilder, never held
// as a Graph (how a huge step is simulated), then one step. Same step_ns as graph mode.
//
//   build/tests/sim_memory_bench 10000000 --streamed
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "sim/simulate.hpp"

#include "tests/sim/sim_fixtures.hpp"

namespace {

using namespace placesim::sim;

/// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 if absent.
long status_kb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// testing::random_graph(n, seed) op by op into a builder: the same ops (same random stream),
/// without names kept.
StepGraph streamed_random_graph(const Cluster& c, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  StepGraphBuilder b(c);
  b.reserve(static_cast<std::size_t>(n), 2 * static_cast<std::size_t>(n));
  Op op;
  for (int i = 0; i < n; ++i) {
    op.type = i % 3 == 0 ? "MatMul" : "Add";
    op.flops = Flops{static_cast<double>(1e5 + rng() % 50'000'000)};
    op.bytes_read = Bytes{static_cast<std::int64_t>(4096 + rng() % (1 << 22))};
    op.outputs.assign(1, {.bytes = Bytes{static_cast<std::int64_t>(4096 + rng() % (1 << 22))}});
    op.persistent = Bytes{i % 10 == 0 ? static_cast<std::int64_t>(rng() % (1 << 20)) : 0};
    op.inputs.clear();
    if (i > 0) {
      const int k = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < k; ++j) {
        const int back = 1 + static_cast<int>(rng() % (j == 0 ? 4 : static_cast<std::uint64_t>(i)));
        op.inputs.push_back({std::max(0, i - back), 0});
      }
    }
    b.add_op(op);
  }
  return std::move(b).finish();
}

/// testing::random_placement without the graph.
Placement random_placement(int n, const Cluster& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Placement p;
  p.device_of.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    p.device_of.push_back(
        static_cast<DeviceId>(rng() % static_cast<std::uint64_t>(c.num_devices())));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 0;
  const bool streamed = argc > 2 && std::strcmp(argv[2], "--streamed") == 0;
  if (n <= 0 || (argc > 2 && !streamed)) {
    std::fprintf(stderr, "usage: sim_memory_bench OPS [--streamed]\n");
    return 2;
  }
  const auto per_op = [n](long kb) { return static_cast<double>(kb) * 1024.0 / n; };
  const long r0 = status_kb("VmRSS");
  // The workload of sim_bench's BM_SimulateStepHeavy.
  const Cluster c = testing::star_cluster(8, "12 GB/s", "1 us");
  SimOptions o;
  o.record_critical_path = false;
  auto t0 = std::chrono::steady_clock::now();
  if (streamed) {
    const StepGraph step = streamed_random_graph(c, n, 2026);
    const Placement p = random_placement(n, c, 7);
    const double build_s = seconds_since(t0);
    const long r1 = status_kb("VmRSS");
    t0 = std::chrono::steady_clock::now();
    const Outcome out = simulate(step, p, o);
    const double step_s = seconds_since(t0);
    const long r2 = status_kb("VmHWM");
    std::printf(
        "ops=%d streamed step_graph_B_per_op=%.0f (arrays %.0f) step_peak_B_per_op=%.0f "
        "hwm_MB=%.0f build_s=%.2f step_s=%.2f transfers=%lld events=%lld step_ns=%lld\n",
        n, per_op(r1 - r0), static_cast<double>(step.memory_bytes()) / n, per_op(r2 - r1),
        static_cast<double>(r2) / 1024.0, build_s, step_s, static_cast<long long>(out.transfers),
        static_cast<long long>(out.events), static_cast<long long>(out.step_time.ns));
    return 0;
  }
  const Graph g = testing::random_graph(n, 2026);
  const Placement p = testing::random_placement(g, c, 7);
  const double graph_s = seconds_since(t0);
  const long r1 = status_kb("VmRSS");
  t0 = std::chrono::steady_clock::now();
  const BatchOracle oracle(c, g, o);
  const double oracle_s = seconds_since(t0);
  const long r2 = status_kb("VmRSS");
  t0 = std::chrono::steady_clock::now();
  const Outcome out = oracle.evaluate(p);
  const double step_s = seconds_since(t0);
  const long r3 = status_kb("VmHWM");
  std::printf(
      "ops=%d graph_B_per_op=%.0f oracle_B_per_op=%.0f step_peak_B_per_op=%.0f hwm_MB=%.0f "
      "graph_s=%.2f oracle_s=%.2f step_s=%.2f transfers=%lld events=%lld step_ns=%lld\n",
      n, per_op(r1 - r0), per_op(r2 - r1), per_op(r3 - r2), static_cast<double>(r3) / 1024.0,
      graph_s, oracle_s, step_s, static_cast<long long>(out.transfers),
      static_cast<long long>(out.events), static_cast<long long>(out.step_time.ns));
  return 0;
}

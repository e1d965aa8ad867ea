// Memory of one heavy-contention simulate() by stage: the graph (with its placement), the
// BatchOracle (its copy of the graph and the per-graph precomputation), and one step at its peak,
// in bytes per op from the process's resident set (/proc/self/status). Linux only. Figures and
// the command: docs/performance.md ([mem]).
//
//   build/tests/sim_memory_bench 1000000
//   -> ops=1000000 graph_B_per_op=688 oracle_B_per_op=787 step_peak_B_per_op=386 ...
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sim/simulate.hpp"

#include "tests/sim/sim_fixtures.hpp"

namespace {

/// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 if absent.
long status_kb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace placesim::sim;
  const int n = argc > 1 ? std::atoi(argv[1]) : 0;
  if (n <= 0) {
    std::fprintf(stderr, "usage: sim_memory_bench OPS\n");
    return 2;
  }
  const long r0 = status_kb("VmRSS");
  // The workload of sim_bench's BM_SimulateStepHeavy.
  const Cluster c = testing::star_cluster(8, "12 GB/s", "1 us");
  const Graph g = testing::random_graph(n, 2026);
  const Placement p = testing::random_placement(g, c, 7);
  const long r1 = status_kb("VmRSS");
  SimOptions o;
  o.record_critical_path = false;
  const BatchOracle oracle(c, g, o);
  const long r2 = status_kb("VmRSS");
  const Outcome out = oracle.evaluate(p);
  const long r3 = status_kb("VmHWM");
  const auto per_op = [n](long kb) { return static_cast<double>(kb) * 1024.0 / n; };
  std::printf(
      "ops=%d graph_B_per_op=%.0f oracle_B_per_op=%.0f step_peak_B_per_op=%.0f hwm_MB=%.0f "
      "transfers=%lld step_ns=%lld\n",
      n, per_op(r1 - r0), per_op(r2 - r1), per_op(r3 - r2), static_cast<double>(r3) / 1024.0,
      static_cast<long long>(out.transfers), static_cast<long long>(out.step_time.ns));
  return 0;
}

// scotch and metis: the paper's graph-partitioning baselines (Mirhoseini et al. 2017 §4.2: the
// Scotch static mapper and a METIS-style min-cut). The group graph, undirected, with vertex
// weights = compute time on the fastest GPU and edge weights = tensor bytes, is cut into one part
// per GPU with balanced compute and a small cut. Neither knows about memory or about the order
// in which ops run, which is why both do badly on chains such as an unrolled LSTM.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "policy/place/baselines.hpp"

extern "C" {
#include <metis.h>
// scotch.h needs FILE and int types declared first.
#include <cstdio>
#include <scotch.h>
}

namespace placesim::policy {
namespace {

/// Undirected weighted graph over the groups that may run on a GPU (CSR, 0-based).
struct PartGraph {
  std::vector<int> vertex_group;  ///< part-graph vertex -> group
  std::vector<std::int64_t> xadj{0};
  std::vector<std::int64_t> adjncy;
  std::vector<std::int64_t> vwgt;
  std::vector<std::int64_t> adjwgt;
};

// Integer weights scaled so that each total stays far below 2^31 (both libraries use 32-bit
// integers here); every vertex and edge keeps a weight of at least 1.
std::vector<std::int64_t> scale_weights(const std::vector<double>& w, double budget) {
  double total = 0.0;
  for (const double x : w) total += x;
  const double scale = total > 0 ? budget / total : 1.0;
  std::vector<std::int64_t> out(w.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    out[i] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(w[i] * scale)));
  return out;
}

PartGraph part_graph(const GroupDag& dag, const std::vector<std::vector<double>>& times,
                     sim::DeviceId ref) {
  PartGraph pg;
  std::vector<int> vertex_of(static_cast<std::size_t>(dag.size()), -1);
  for (int gi = 0; gi < dag.size(); ++gi)
    if (dag.kind[static_cast<std::size_t>(gi)] != sim::DeviceKind::Cpu) {
      vertex_of[static_cast<std::size_t>(gi)] = static_cast<int>(pg.vertex_group.size());
      pg.vertex_group.push_back(gi);
    }
  std::vector<std::map<int, double>> adj(pg.vertex_group.size());
  for (int gi = 0; gi < dag.size(); ++gi) {
    const int a = vertex_of[static_cast<std::size_t>(gi)];
    if (a < 0) continue;
    for (const GroupEdge& e : dag.succ[static_cast<std::size_t>(gi)]) {
      const int b = vertex_of[static_cast<std::size_t>(e.group)];
      if (b < 0) continue;
      adj[static_cast<std::size_t>(a)][b] += e.bytes;
      adj[static_cast<std::size_t>(b)][a] += e.bytes;
    }
  }
  std::vector<double> vw, ew;
  for (std::size_t v = 0; v < pg.vertex_group.size(); ++v) {
    vw.push_back(
        times[static_cast<std::size_t>(pg.vertex_group[v])][static_cast<std::size_t>(ref)]);
    for (const auto& [b, bytes] : adj[v]) {
      pg.adjncy.push_back(b);
      ew.push_back(bytes);
    }
    pg.xadj.push_back(static_cast<std::int64_t>(pg.adjncy.size()));
  }
  pg.vwgt = scale_weights(vw, 1e8);
  // Symmetric pairs get identical doubles, hence identical integers: both libraries require it.
  pg.adjwgt = scale_weights(ew, 1e8);
  return pg;
}

// METIS prints warnings ("too many parts", "cannot bisect a graph with 0 vertices") with printf
// on stdout, where they would corrupt `compare --json`. Standard output is pointed at /dev/null
// for the duration of the call (callers serialise on a mutex; other threads' stdout writes in
// that window would be lost, which is why it is scoped to the one library call).
class SilenceStdout {
 public:
  SilenceStdout() {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
    if (null_fd >= 0) ::close(null_fd);
  }
  ~SilenceStdout() {
    std::fflush(stdout);
    if (saved_ >= 0) {
      ::dup2(saved_, STDOUT_FILENO);
      ::close(saved_);
    }
  }
  SilenceStdout(const SilenceStdout&) = delete;
  SilenceStdout& operator=(const SilenceStdout&) = delete;

 private:
  int saved_ = -1;
};

std::mutex& library_mutex() {
  static std::mutex m;
  return m;
}

template <typename Int>
std::vector<Int> narrow(const std::vector<std::int64_t>& v) {
  return std::vector<Int>(v.begin(), v.end());
}

GroupPlacement assemble(const GroupDag& dag, const sim::Cluster& c, const PartGraph& pg,
                        const std::vector<int>& part, const std::vector<sim::DeviceId>& devs) {
  GroupPlacement out(static_cast<std::size_t>(dag.size()), -1);
  for (std::size_t v = 0; v < pg.vertex_group.size(); ++v)
    out[static_cast<std::size_t>(pg.vertex_group[v])] = devs[static_cast<std::size_t>(part[v])];
  // CPU-only groups go to the host CPU of the device of a neighbour, else of the first GPU.
  for (int gi = 0; gi < dag.size(); ++gi) {
    if (out[static_cast<std::size_t>(gi)] >= 0) continue;
    sim::DeviceId near = devs.front();
    for (const GroupEdge& e : dag.pred[static_cast<std::size_t>(gi)])
      if (out[static_cast<std::size_t>(e.group)] >= 0) {
        near = out[static_cast<std::size_t>(e.group)];
        break;
      }
    out[static_cast<std::size_t>(gi)] = respect_kind(dag, gi, c, near);
  }
  return out;
}

enum class Partitioner { Scotch, Metis };

GroupPlacement partition(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                         const MethodOptions& o, Partitioner which) {
  const auto devs = compute_devices(c);
  const auto times = group_times(dag, op_costs(g, c, o.costs));
  const PartGraph pg = part_graph(dag, times, devs.front());
  const int nv = static_cast<int>(pg.vertex_group.size());
  const int nparts = static_cast<int>(devs.size());
  std::vector<int> part(static_cast<std::size_t>(nv), 0);
  if (nparts > 1 && nv > nparts) {
    if (which == Partitioner::Metis) {
      auto xadj = narrow<idx_t>(pg.xadj), adjncy = narrow<idx_t>(pg.adjncy);
      auto vwgt = narrow<idx_t>(pg.vwgt), adjwgt = narrow<idx_t>(pg.adjwgt);
      idx_t n = nv, ncon = 1, np = nparts, objval = 0;
      std::vector<idx_t> p(static_cast<std::size_t>(nv), 0);
      idx_t options[METIS_NOPTIONS];
      METIS_SetDefaultOptions(options);
      options[METIS_OPTION_SEED] = static_cast<idx_t>(o.seed);
      options[METIS_OPTION_NUMBERING] = 0;
      // k-way coarsens to about 30 vertices per part, too coarse for small group graphs; those
      // go to recursive bisection.
      const bool small = nv < 64 * nparts;
      const auto partitioner = small ? METIS_PartGraphRecursive : METIS_PartGraphKway;
      const std::lock_guard<std::mutex> lock(library_mutex());
      const SilenceStdout quiet;
      const int rc = partitioner(&n, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                                 adjwgt.data(), &np, nullptr, nullptr, options, &objval, p.data());
      if (rc != METIS_OK)
        throw std::runtime_error("METIS partitioning failed with status " + std::to_string(rc));
      part.assign(p.begin(), p.end());
    } else {
      auto xadj = narrow<SCOTCH_Num>(pg.xadj), adjncy = narrow<SCOTCH_Num>(pg.adjncy);
      auto vwgt = narrow<SCOTCH_Num>(pg.vwgt), adjwgt = narrow<SCOTCH_Num>(pg.adjwgt);
      std::vector<SCOTCH_Num> p(static_cast<std::size_t>(nv), 0);
      // Debian's libscotch is built with threads, and its default context partitions with
      // several of them and a process-wide random generator: not reproducible. A context of
      // our own, single-threaded and deterministic, with its own seeded generator, is.
      const std::lock_guard<std::mutex> lock(library_mutex());
      SCOTCH_Context context;
      SCOTCH_Graph graph;
      SCOTCH_Graph bound;
      SCOTCH_Strat strat;
      if (SCOTCH_contextInit(&context) != 0) throw std::runtime_error("SCOTCH_contextInit failed");
      int rc = SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1);
      if (rc == 0) rc = SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1);
      if (rc == 0) rc = SCOTCH_contextRandomClone(&context);
      if (rc == 0) SCOTCH_contextRandomSeed(&context, static_cast<SCOTCH_Num>(o.seed));
      if (rc == 0) rc = SCOTCH_contextThreadSpawn(&context, 1, nullptr);
      SCOTCH_graphInit(&graph);
      SCOTCH_stratInit(&strat);
      bool bound_ok = false;
      if (rc == 0)
        rc =
            SCOTCH_graphBuild(&graph, 0, nv, xadj.data(), nullptr, vwgt.data(), nullptr,
                              static_cast<SCOTCH_Num>(adjncy.size()), adjncy.data(), adjwgt.data());
      if (rc == 0) {
        rc = SCOTCH_contextBindGraph(&context, &graph, &bound);
        bound_ok = rc == 0;
      }
      if (rc == 0) rc = SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATQUALITY, nparts, 0.05);
      if (rc == 0) rc = SCOTCH_graphPart(&bound, nparts, &strat, p.data());
      SCOTCH_stratExit(&strat);
      if (bound_ok) SCOTCH_graphExit(&bound);
      SCOTCH_graphExit(&graph);
      SCOTCH_contextExit(&context);
      if (rc != 0)
        throw std::runtime_error("Scotch partitioning failed with status " + std::to_string(rc));
      part.assign(p.begin(), p.end());
    }
  } else {
    for (int v = 0; v < nv; ++v) part[static_cast<std::size_t>(v)] = v % nparts;
  }
  return assemble(dag, c, pg, part, devs);
}

}  // namespace

GroupPlacement place_scotch(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                            const MethodOptions& o) {
  return partition(dag, g, c, o, Partitioner::Scotch);
}

GroupPlacement place_metis(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                           const MethodOptions& o) {
  return partition(dag, g, c, o, Partitioner::Metis);
}

}  // namespace placesim::policy

// The race against SimGrid: one random DAG with link contention, simulated by SimGrid 3.32 (s4u
// activities with dependencies, CM02 max-min as in tests/sim/simgrid_crosscheck.cpp) or by
// placesim's engine (Engine + FlowNetwork + CpuShare, the objects simulate() runs on), in one
// process per run so that each is timed as a whole process. tools/race_simgrid.sh runs both and
// compares; docs/performance.md has the figures.
//
//   race_dag         --sim placesim --activities 16000 --seed 1
//   race_dag_simgrid --sim simgrid  --activities 16000 --seed 1
// (two binaries from this file: race_dag does not link SimGrid, whose loading alone costs about
// 0.2 s of process time here, so that each side's process time is its own).
//   -> one line: sim=... activities=... tasks=... comms=... makespan_s=... build_s=... run_s=...
//      startup_cpu_s=... build_cpu_s=... run_cpu_s=... (the process's CPU time before main's work,
//      generating the DAG, simulating it) ... max_rss_kb=... (the process's peak resident set)
//
// The DAG: tasks on 8 hosts (1 TFLOP/s each, one core, so tasks ready together on one host share
// it by max-min: CpuShare with cap 1). Task i reads 1-3 tasks among the 64 before it, runs 1e6-1e8
// FLOPs (1-100 us) and sends 4 KiB-4 MiB to each consumer on another host. Hosts hang off one
// switch by 12 GB/s split-duplex links (a PCIe tree), zero latency (CM02 is then plain max-min):
// a transfer crosses its source's up-link and its destination's down-link, so the transfers of
// the whole DAG contend in one max-min component. Activities = tasks + transfers; generation
// stops when their count reaches --activities. --extra-bytes adds B bytes to every transfer: the
// makespan of such a DAG is chaotic (1 byte more per transfer moves it by ~1% at 4k activities,
// in both simulators), so two simulators agree exactly only on small DAGs (docs/performance.md).
// --extra-flops F adds F FLOPs to every task; a fraction of a FLOP is a perturbation far below
// either simulator's resolution (1e-6 FLOP is 1e-18 s), which still moves SimGrid's makespan.
// Two shapes take the chaos away, to show what is left is rounding: --chain 1 (task i reads task
// i - 1 only, so nothing ever runs concurrently) and --quantize 1 (FLOPs a multiple of 1,000 and
// bytes of 12: every task and lone transfer takes a whole number of ns, which placesim's integer
// clock then represents exactly). --resolve-every-end 1 turns off the solver's no-re-solve
// removals (maxmin.hpp), for A/B runs; ends_without_solve counts them.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <random>
#include <string>
#include <sys/resource.h>
#include <time.h>
#include <vector>

#ifdef PLACESIM_RACE_SIMGRID
#include <simgrid/s4u.hpp>
#endif

#include "sim/cluster.hpp"
#include "sim/cpu_share.hpp"
#include "sim/engine.hpp"
#include "sim/network.hpp"

namespace {

using namespace placesim::sim;

constexpr int kHosts = 8;
constexpr double kSpeed = 1e12;  // flop/s per host
constexpr double kLinkBw = 12e9;
constexpr std::uint64_t kWindow = 64;  // a task reads tasks among the kWindow before it

struct Dag {
  struct Task {  // 32 bytes, no padding
    double flops = 0;
    double bytes = 0;  // what each producer on another host sends it, as one transfer
    std::int32_t host = 0;
    std::int32_t first_out = 0, num_out = 0;  // edges to consumers, CSR
    std::int32_t num_in = 0;
  };
  std::vector<Task> tasks;
  // Edge k (producer p -> consumer c, CSR by producer) is a transfer of tasks[c].bytes when the
  // two hosts differ, a plain dependency otherwise: 4 bytes an edge.
  std::vector<std::int32_t> edges;  // consumer
  std::int64_t comms = 0;
  /// Edge k of producer p: a transfer (its bytes) or 0 (a dependency on the same host).
  [[nodiscard]] double bytes(std::int32_t p, std::int32_t k) const {
    const Task& c = tasks[edges[k]];
    return c.host != tasks[p].host ? c.bytes : 0.0;
  }
};

struct Shape {
  double extra_bytes = 0;  // added to every transfer
  double extra_flops = 0;  // added to every task (may be a fraction of a FLOP: a perturbation)
  bool chain = false;      // task i reads task i - 1 only: nothing ever runs concurrently
  bool quantize = false;   // whole ns alone: FLOPs a multiple of 1,000, bytes of 12
};

Dag make_dag(std::int64_t activities, std::uint64_t seed, const Shape& shape) {
  std::mt19937_64 rng(seed);
  Dag d;
  struct Raw {
    std::int32_t from, to;
  };
  std::vector<Raw> raw;  // edges in generation order; bucketed by producer below
  // Room for the largest case up front (a task is an activity; an edge a transfer or a same-host
  // dependency, 2 per task on average): growing by doubling copies and touches fresh pages, which
  // cost ~10 us each on this VM. Pages reserved and never written cost nothing.
  d.tasks.reserve(static_cast<std::size_t>(activities));
  raw.reserve(static_cast<std::size_t>(activities) * 3 / 2);
  std::int32_t preds[3];
  while (static_cast<std::int64_t>(d.tasks.size()) + d.comms < activities) {
    const auto i = static_cast<std::int32_t>(d.tasks.size());
    Dag::Task t;
    t.host = static_cast<int>(rng() % kHosts);
    t.flops = 1e6 + static_cast<double>(rng() % 99'000'000) + shape.extra_flops;
    double bytes = 4096.0 + static_cast<double>(rng() % (4u << 20)) + shape.extra_bytes;
    if (shape.quantize) {
      // 1 ns = 1,000 FLOPs at 1 TFLOP/s, 12 bytes at 12 GB/s.
      t.flops = 1000.0 * std::floor(t.flops / 1000.0);
      bytes = 12.0 * std::floor(bytes / 12.0);
    }
    int n = 0;
    if (i > 0 && shape.chain) {
      preds[n++] = i - 1;
    } else if (i > 0) {
      const int k = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < k; ++j) {
        const auto back =
            1 + static_cast<std::int32_t>(rng() % std::min<std::uint64_t>(kWindow, i));
        const std::int32_t p = i - back;
        bool dup = false;
        for (int q = 0; q < n; ++q) dup = dup || preds[q] == p;
        if (!dup) preds[n++] = p;
      }
    }
    for (int q = 0; q < n; ++q) {
      const bool cross = d.tasks[preds[q]].host != t.host;
      raw.push_back({preds[q], i});
      d.comms += cross ? 1 : 0;
      ++t.num_in;
    }
    t.bytes = bytes;
    d.tasks.push_back(t);
  }
  // CSR by producer, each producer's edges in generation order (a stable counting sort: first_out
  // starts at the end of each range and moves down as raw is walked backwards).
  for (const Raw& r : raw) ++d.tasks[r.from].num_out;
  std::int32_t at = 0;
  for (Dag::Task& t : d.tasks) {
    at += t.num_out;
    t.first_out = at;
  }
  d.edges.resize(raw.size());
  for (auto r = raw.rbegin(); r != raw.rend(); ++r) d.edges[--d.tasks[r->from].first_out] = r->to;
  return d;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The process's CPU time so far (user + sys, s): on a shared machine the phases' wall times
/// count the minutes other jobs hold the core, their CPU times do not.
double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// placesim: tasks are CpuShare work on their host, transfers FlowNetwork flows; the handler
/// releases consumers as SimGrid's activity dependencies do.
/// kept / alone: ends / starts that needed no re-solve, [0] the transfers', [1] the tasks'.
/// ends: when not null, filled with each task's end (ns, by task) then each edge's (by edge; 0
/// for edges without a transfer).
double run_placesim(const Dag& d, bool skip_neutral, std::int64_t kept[2], std::int64_t alone[2],
                    std::vector<double>* ends) {
  Cluster c;
  for (int h = 0; h < kHosts; ++h)
    c.links.push_back(Link{"h" + std::to_string(h), 0, 1, Bandwidth{kLinkBw}, Duration{0},
                           SharingPolicy::SplitDuplex, "pcie"});
  FlowNetwork net(c);
  CpuShare cpus(kHosts);
  net.set_skip_neutral_removals(skip_neutral);
  cpus.set_skip_neutral_removals(skip_neutral);
  struct Driver {
    const Dag* d;
    FlowNetwork* net;
    CpuShare* cpus;
    std::vector<std::int32_t> waiting;  // unfinished inputs per task
    std::vector<Hop> hops = std::vector<Hop>(2);
    std::vector<double>* ends = nullptr;
    void start_task(Engine& e, std::int32_t t) {
      cpus->start(e.now(), d->tasks[t].host, d->tasks[t].flops / kSpeed * 1e9, 1.0, t);
    }
    void input_done(Engine& e, std::int32_t t) {
      if (--waiting[t] == 0) start_task(e, t);
    }
    void on_event(Engine& e, const Event& ev) { start_task(e, ev.index); }
    void on_resource(Engine& e, int model) {
      if (model == 1) {  // network: edge index as tag
        for (std::int32_t edge : net->completed()) {
          if (ends) (*ends)[d->tasks.size() + static_cast<std::size_t>(edge)] = e.now() * 1e-9;
          input_done(e, d->edges[edge]);
        }
        return;
      }
      for (std::int32_t t : cpus->completed()) {
        if (ends) (*ends)[static_cast<std::size_t>(t)] = e.now() * 1e-9;
        const Dag::Task& task = d->tasks[t];
        for (std::int32_t k = task.first_out; k < task.first_out + task.num_out; ++k) {
          const std::int32_t to = d->edges[k];
          const Dag::Task& consumer = d->tasks[to];
          if (consumer.host == task.host) {
            input_done(e, to);
            continue;
          }
          hops[0] = {task.host, true};
          hops[1] = {consumer.host, false};
          net->start(e.now(), hops, consumer.bytes, k);
        }
      }
    }
  } drv{&d, &net, &cpus, {}};
  drv.ends = ends;
  if (ends) ends->assign(d.tasks.size() + d.edges.size(), 0.0);
  drv.waiting.reserve(d.tasks.size());
  Engine e;
  e.add_model(&cpus);
  e.add_model(&net);
  for (std::size_t i = 0; i < d.tasks.size(); ++i) {
    drv.waiting.push_back(d.tasks[i].num_in);
    if (d.tasks[i].num_in == 0) e.schedule(0, Priority::Start, 0, static_cast<std::int32_t>(i));
  }
  e.run(drv);
  kept[0] = net.removals_without_solve();
  kept[1] = cpus.removals_without_solve();
  alone[0] = net.additions_without_solve();
  alone[1] = cpus.additions_without_solve();
  return static_cast<double>(e.now()) * 1e-9;
}

#ifdef PLACESIM_RACE_SIMGRID
double run_simgrid(const Dag& d, std::vector<std::string> args, std::vector<double>* ends) {
  namespace s4u = simgrid::s4u;
  // The race's settings go first, so that --sg-cfg options (in args already) come after them:
  // SimGrid applies --cfg options in order.
  const std::vector<std::string> base{
      "--cfg=network/model:CM02",           "--cfg=network/latency-factor:1.0",
      "--cfg=network/bandwidth-factor:1.0", "--cfg=network/weight-S:0.0",
      "--cfg=network/crosstraffic:0",       "--log=root.thres:critical"};
  args.insert(args.begin() + 1, base.begin(), base.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  s4u::Engine engine(&argc, argv.data());
  auto* zone = s4u::create_full_zone("zone");
  std::vector<s4u::Host*> hosts;
  std::vector<s4u::Link*> links;
  for (int h = 0; h < kHosts; ++h) {
    hosts.push_back(zone->create_host("h" + std::to_string(h), kSpeed));
    links.push_back(zone->create_split_duplex_link("l" + std::to_string(h), kLinkBw)->seal());
  }
  for (int a = 0; a < kHosts; ++a)
    for (int b = 0; b < kHosts; ++b)
      if (a != b)
        zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                        {{links[a], s4u::LinkInRoute::Direction::UP},
                         {links[b], s4u::LinkInRoute::Direction::DOWN}},
                        false);
  zone->seal();
  std::vector<s4u::ExecPtr> execs;
  execs.reserve(d.tasks.size());
  for (const Dag::Task& t : d.tasks)
    execs.push_back(s4u::Exec::init()->set_flops_amount(t.flops)->set_host(hosts[t.host]));
  std::vector<s4u::CommPtr> comms;
  comms.reserve(static_cast<std::size_t>(d.comms));
  for (std::size_t i = 0; i < d.tasks.size(); ++i) {
    const Dag::Task& t = d.tasks[i];
    for (std::int32_t k = t.first_out; k < t.first_out + t.num_out; ++k) {
      const std::int32_t to = d.edges[k];
      const double bytes = d.bytes(static_cast<std::int32_t>(i), k);
      if (bytes == 0.0) {
        execs[i]->add_successor(execs[to]);
        continue;
      }
      auto comm = s4u::Comm::sendto_init(hosts[t.host], hosts[d.tasks[to].host])
                      ->set_payload_size(static_cast<std::uint64_t>(bytes));
      execs[i]->add_successor(comm);
      comm->add_successor(execs[to]);
      comms.push_back(comm);
    }
  }
  for (auto& c : comms) c->vetoable_start();
  for (auto& x : execs) x->vetoable_start();
  engine.run();
  if (ends) {
    ends->assign(d.tasks.size() + d.edges.size(), 0.0);
    for (std::size_t i = 0; i < d.tasks.size(); ++i) (*ends)[i] = execs[i]->get_finish_time();
    std::size_t c = 0;
    for (std::int32_t i = 0; i < static_cast<std::int32_t>(d.tasks.size()); ++i)
      for (std::int32_t k = d.tasks[i].first_out; k < d.tasks[i].first_out + d.tasks[i].num_out;
           ++k)
        if (d.bytes(i, k) != 0.0) (*ends)[d.tasks.size() + k] = comms[c++]->get_finish_time();
  }
  return s4u::Engine::get_clock();
}
#endif

/// One line per activity: "t<task>" or "e<edge>", then its end time in s (17 digits); edges
/// without a transfer are left out. For tools/race_diverge.py.
bool write_ends(const char* path, const Dag& d, const std::vector<double>& ends) {
  std::FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "race_dag: cannot write %s\n", path);
    return false;
  }
  for (std::size_t i = 0; i < d.tasks.size(); ++i) std::fprintf(f, "t%zu %.17g\n", i, ends[i]);
  // By edge number (the producers' ranges are consecutive, so this is k = 0, 1, ...).
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(d.tasks.size()); ++i)
    for (std::int32_t k = d.tasks[i].first_out; k < d.tasks[i].first_out + d.tasks[i].num_out; ++k)
      if (d.bytes(i, k) != 0.0) std::fprintf(f, "e%d %.17g\n", k, ends[d.tasks.size() + k]);
  return std::fclose(f) == 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: race_dag --sim placesim|simgrid --activities N [--seed S] [--extra-bytes B] "
               "[--extra-flops F]"
               " [--chain 0|1] [--quantize 0|1] [--resolve-every-end 0|1] [--sg-cfg KEY:VALUE]..."
               " [--ends FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // As the placesim command line does (tools/main.cpp): keep freed memory in the process rather
  // than mapping and faulting in fresh pages for every large block.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::string sim;
  std::vector<std::string> sg_args{argv[0]};  // SimGrid's command line (--sg-cfg adds to it)
  const char* ends_file = nullptr;
  std::int64_t activities = 0;
  std::uint64_t seed = 1;
  Shape shape;
  bool skip_neutral = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sim") == 0) {
      sim = argv[i + 1];
    } else if (std::strcmp(argv[i], "--activities") == 0) {
      activities = std::atoll(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--extra-bytes") == 0) {
      shape.extra_bytes = std::atof(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--extra-flops") == 0) {
      shape.extra_flops = std::atof(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--chain") == 0) {
      shape.chain = std::strcmp(argv[i + 1], "1") == 0;
    } else if (std::strcmp(argv[i], "--quantize") == 0) {
      shape.quantize = std::strcmp(argv[i + 1], "1") == 0;
    } else if (std::strcmp(argv[i], "--resolve-every-end") == 0) {
      skip_neutral = std::strcmp(argv[i + 1], "1") != 0;
    } else if (std::strcmp(argv[i], "--ends") == 0) {
      ends_file = argv[i + 1];
    } else if (std::strcmp(argv[i], "--sg-cfg") == 0) {
      sg_args.push_back(std::string("--cfg=") + argv[i + 1]);  // after the race's own settings
    } else if (std::strcmp(argv[i], "--seed") == 0) {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      return usage();
    }
  }
  if (activities <= 0 || (sim != "placesim" && sim != "simgrid")) return usage();
  const double cpu0 = process_cpu_s();  // start-up: everything before main's work
  const auto t0 = std::chrono::steady_clock::now();
  const Dag d = make_dag(activities, seed, shape);
  const double build_s = seconds_since(t0);
  const double cpu1 = process_cpu_s();
  const auto t1 = std::chrono::steady_clock::now();
  double makespan = 0;
  std::vector<double> ends;        // --ends: every activity's end time
  std::int64_t kept[2] = {0, 0};   // ends that needed no re-solve (placesim): transfers, tasks
  std::int64_t alone[2] = {0, 0};  // starts that needed no re-solve (placesim)
  if (sim == "placesim") {
    makespan = run_placesim(d, skip_neutral, kept, alone, ends_file ? &ends : nullptr);
  } else {
#ifdef PLACESIM_RACE_SIMGRID
    makespan = run_simgrid(d, sg_args, ends_file ? &ends : nullptr);
#else
    std::fprintf(stderr, "race_dag: built without SimGrid (race_dag_simgrid has it)\n");
    return 2;
#endif
  }
  const double run_s = seconds_since(t1);
  const double cpu2 = process_cpu_s();
  if (ends_file && !write_ends(ends_file, d, ends)) return 2;
  // The process's own peak resident set (kB, what /usr/bin/time's %M reads): the race script
  // then times the process alone, without a /usr/bin/time wrapper's fork and start-up.
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf(
      "sim=%s activities=%lld tasks=%zu comms=%lld makespan_s=%.12f build_s=%.4f run_s=%.4f "
      "startup_cpu_s=%.5f build_cpu_s=%.5f run_cpu_s=%.5f "
      "ends_without_solve=%lld+%lld starts_without_solve=%lld+%lld max_rss_kb=%ld\n",
      sim.c_str(), static_cast<long long>(d.tasks.size()) + static_cast<long long>(d.comms),
      d.tasks.size(), static_cast<long long>(d.comms), makespan, build_s, run_s, cpu0, cpu1 - cpu0,
      cpu2 - cpu1, static_cast<long long>(kept[0]), static_cast<long long>(kept[1]),
      static_cast<long long>(alone[0]), static_cast<long long>(alone[1]), ru.ru_maxrss);
  return 0;
}

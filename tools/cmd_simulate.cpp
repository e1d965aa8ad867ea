// `placesim simulate`: one placed training step through the engine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <tbb/task_arena.h>
#include <thread>
#include <tuple>
#include <utility>

#include "models/chakra.hpp"
#include "models/huge_step.hpp"
#include "models/nccl_p2p.hpp"
#include "models/parallel.hpp"
#include "models/registry.hpp"
#include "models/seq_dist.hpp"
#include "policy/place/methods.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {

struct SimulateArgs {
  std::string graph, graph_opt, cluster, placement, calibration, trace, report, chakra_out, pricing,
      parallel;
  bool json = false;
  bool stop_at_oom = false;
  int threads = -1;  // not given: default_threads(); 0: oneTBB's default (all cores)
};

// The output named by its flag: sim::write_file_atomic's temp file + rename, its error re-said
// with the flag (a user passed a path, not a file of theirs).
void write_atomic(const std::string& path, const std::string& text, const std::string& flag) {
  try {
    sim::write_file_atomic(path, text);
  } catch (const sim::InputError&) {
    throw sim::InputError("<flag " + flag + ">", "", "a writable path, got \"" + path + "\"");
  }
}

void print_summary(const sim::Outcome& o, const sim::Cluster& c) {
  std::printf("step time: %s%s%s\n", sim::format_duration(o.step_time).c_str(),
              o.oom ? "  (OUT OF MEMORY)" : "", o.unreachable ? "  (UNREACHABLE DEVICE)" : "");
  for (const sim::OomInfo& x : o.oom_devices)
    std::printf("  OOM on %s: needs %s, has %s\n", x.device_name.c_str(),
                sim::format_bytes(x.needed).c_str(), sim::format_bytes(x.capacity).c_str());
  std::printf("%-12s %6s %12s %6s %22s\n", "device", "ops", "busy", "util", "peak memory");
  for (const sim::DeviceOutcome& d : o.devices)
    std::printf("%-12s %6d %12s %5.1f%% %10s / %-10s%s\n", d.name.c_str(), d.ops,
                sim::format_duration(d.busy).c_str(), 100.0 * d.utilization,
                sim::format_bytes(d.peak_memory).c_str(),
                sim::format_bytes(d.memory_capacity).c_str(), d.oom ? " OOM" : "");
  std::vector<std::size_t> order(o.links.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return o.links[a].busy > o.links[b].busy; });
  std::printf("transfers: %lld (%s)   events: %lld   simulated in %.3f ms\n",
              static_cast<long long>(o.transfers), sim::format_bytes(o.transferred).c_str(),
              static_cast<long long>(o.events), o.sim_wall_s * 1e3);
  int shown = 0;
  for (std::size_t i : order) {
    if (o.links[i].bytes.v == 0 || shown == 5) break;
    if (shown++ == 0) std::printf("busiest links:\n");
    std::printf("  %-24s %12s busy  %s\n", o.links[i].name.c_str(),
                sim::format_duration(o.links[i].busy).c_str(),
                sim::format_bytes(o.links[i].bytes).c_str());
  }
  std::printf("critical path: %zu items", o.critical_path.size());
  if (!o.critical_path.empty())
    std::printf(" (%s ... %s)", o.critical_path.front().name.c_str(),
                o.critical_path.back().name.c_str());
  std::printf("\n");
  (void)c;
}

// The job's layout, its memory per GPU, the pipeline's idle time against 1F1B's analytic bubble,
// and the throughput: a step advances every data-parallel replica by mb micro-batches of `batch`.
void print_parallel(const models::ParallelJob& job, const sim::Outcome& o, const sim::Cluster& c,
                    std::int64_t batch) {
  const models::ParallelSpec& s = job.spec;
  std::printf("parallel: dp=%d tp=%d pp=%d mb=%d on %d GPUs", s.dp, s.tp, s.pp, s.mb,
              s.dp * s.tp * s.pp);
  if (s.tp > 1)
    std::printf("; tp: %d linear pairs, %d all-reduces per micro-batch", job.tp_pairs,
                job.tp_allreduces);
  std::printf("\n");
  if (s.pp > 1) {
    for (std::size_t st = 0; st < job.stage_layers.size(); ++st)
      std::printf("  stage %zu: %d layer blocks, %.3g GFLOP per micro-batch\n", st,
                  job.stage_layers[st], job.stage_flops[st] / 1e9);
  }
  const std::vector<sim::DeviceId> gpus = c.gpus();
  std::int64_t most = 0;
  double idle = 0.0, least_idle = 1.0;
  int counted = 0;
  for (std::size_t r = 0; r < job.persistent_bytes.size(); ++r) {
    most = std::max(most, job.persistent_bytes[r]);
    for (const sim::DeviceOutcome& d : o.devices)
      if (d.name == c.devices[gpus[r]].name) {
        idle += 1.0 - d.utilization;
        least_idle = std::min(least_idle, 1.0 - d.utilization);
        ++counted;
      }
  }
  std::printf("weights + optimizer state: %s per GPU (most loaded)\n",
              sim::format_bytes(sim::Bytes{most}).c_str());
  // The busiest GPU is the slowest stage's: its idle time is the bubble the step pays; the
  // mean adds the other stages' wait for it (imbalance).
  if (s.pp > 1 && counted > 0)
    std::printf(
        "pipeline: busiest GPU idle %.1f%% of the step, mean %.1f%%; 1F1B bubble "
        "(pp-1)/(mb+pp-1) = %.1f%%\n",
        100.0 * least_idle, 100.0 * idle / counted, 100.0 * job.analytic_bubble());
  const std::int64_t per_step = static_cast<std::int64_t>(s.dp) * s.mb * s.accumulate * batch;
  if (batch > 0 && s.accumulate > 1)
    std::printf(
        "throughput: %.1f samples/s (%d replicas x %d accumulated micro-batches x batch %lld / "
        "step)\n",
        static_cast<double>(per_step) / o.step_time.seconds(), s.dp, s.accumulate,
        static_cast<long long>(batch));
  else if (batch > 0 && s.mb == 1)
    std::printf("throughput: %.1f samples/s (%d replicas x batch %lld / step)\n",
                static_cast<double>(per_step) / o.step_time.seconds(), s.dp,
                static_cast<long long>(batch));
  else if (batch > 0)
    std::printf("throughput: %.1f samples/s (%d replicas x %d micro-batches x batch %lld / step)\n",
                static_cast<double>(per_step) / o.step_time.seconds(), s.dp, s.mb,
                static_cast<long long>(batch));
  else
    std::printf("throughput: %.3f steps/s x %d replicas (batch not in the graph's metadata)\n",
                1.0 / o.step_time.seconds(), s.dp);
}

}  // namespace

sim::Placement placement_arg(const std::string& arg, const sim::Graph& graph,
                             const sim::Cluster& cluster, const sim::KernelCostModel& costs) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec))
    return sim::resolve_placement(sim::read_placement_json(arg), graph, cluster, arg);
  policy::MethodOptions mo;
  mo.costs = costs;
  return policy::make_placement(arg, graph, cluster, mo);
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// --graph gpt-huge: the step is generated op by op into a StepGraph (never a Graph: ~700 bytes
// per op more), so only what needs no Graph is offered.
void run_gpt_huge(const SimulateArgs& a, const sim::Cluster& cluster,
                  const sim::KernelCostModel& costs) {
  if (a.parallel.empty())
    throw sim::InputError("<flag --parallel>", "",
                          "dp=..,tp=..,pp=..,mb=.. for --graph gpt-huge, got none");
  for (const auto& [flag, value] : {std::pair{"--placement", &a.placement},
                                    {"--trace", &a.trace},
                                    {"--chakra-out", &a.chakra_out},
                                    {"--pricing", &a.pricing}})
    if (!value->empty())
      throw sim::InputError(std::string("<flag ") + flag + ">", "",
                            "no " + std::string(flag) +
                                " with --graph gpt-huge (a streamed step keeps no op names), "
                                "got \"" +
                                *value + "\"");
  const models::HugeGptShape shape = models::parse_gpt_huge(a.graph_opt, "<flag --graph-opt>");
  const models::ParallelSpec par = models::parse_parallel(a.parallel, "<flag --parallel>");
  sim::SimOptions opt;
  opt.stop_at_first_oom = a.stop_at_oom;
  opt.threads = a.threads;
  // The critical path of a huge step (10^6 items, "op<id>" names) costs ~75 B per op of
  // per-item times while simulating: kept only for the JSON that prints it.
  opt.record_critical_path = a.json || !a.report.empty();
  // On more than one thread the step is simulated while it is generated (docs/engine.md,
  // "Parallel engine"); on one, built and then simulated.
  const auto t0 = std::chrono::steady_clock::now();
  const models::HugeRun run = models::simulate_gpt_huge(cluster, shape, par, costs, opt);
  const double total_s = seconds_since(t0);
  const models::HugeStep& h = run.h;
  const sim::Outcome& o = run.outcome;
  const double build_s = run.overlapped ? run.build_s : total_s - o.sim_wall_s;
  // The JSON of a huge step's critical path (10^5 items) is a tenth of a run: only when asked.
  // Its critical path is rendered in parallel: on --threads' arena, like the rest of the run.
  const auto to_json = [&] { return sim::outcome_to_json(o); };
  const std::string json = !a.json && a.report.empty() ? ""
                           : a.threads > 0             ? tbb::task_arena(a.threads).execute(to_json)
                                                       : to_json();
  if (!a.report.empty()) write_atomic(a.report, json + "\n", "--report");
  if (a.json) {
    std::cout << json << "\n";
  } else {
    print_summary(o, cluster);
    std::printf(
        "gpt-huge: %lld ops (%lld in all-reduce rings), %lld input edges on %d GPUs; step graph "
        "%.0f B/op; built in %.2f s, simulated in %.2f s%s\n",
        static_cast<long long>(h.ops), static_cast<long long>(h.ring_ops),
        static_cast<long long>(h.input_edges), h.gpus,
        static_cast<double>(h.step.memory_bytes()) / static_cast<double>(h.ops), build_s,
        o.sim_wall_s, run.overlapped ? " (overlapped: simulated while built)" : "");
  }
}

/// --threads when not given: all cores for --graph gpt-huge, whose loop runs beside the build
/// (1.4-1.8x on 2 cores, docs/performance.md [stream]), except on one hardware thread, where the
/// overlap would only interleave builder and loop on one core; for a step of a Graph 1 on a machine
/// with at most 2 hardware threads, where a second thread was measured to buy nothing (only
/// building and the report run in parallel there; docs/engine.md, "Parallel engine"), else all
/// cores.
int default_threads(const std::string& graph) {
  const unsigned hw = std::thread::hardware_concurrency();
  if (graph == "gpt-huge") return hw == 1 ? 1 : 0;
  return hw != 0 && hw <= 2 ? 1 : 0;
}

struct Placed {
  sim::Graph graph;
  sim::Placement placement;
  std::optional<models::ParallelJob> job;
};

// The graph on the cluster: --parallel's replicas (each on its own GPU) or --placement's method.
Placed place_graph(const SimulateArgs& a, sim::Graph graph, const sim::Cluster& cluster,
                   const sim::KernelCostModel& costs) {
  Placed p;
  if (a.parallel.empty()) models::refuse_input_without_parallel(graph, "--graph-opt", "input");
  if (!a.parallel.empty()) {
    // Each replica on its own GPU (models/parallel.hpp); a placement method would fight that.
    if (!a.placement.empty() && a.placement != "single-gpu")
      throw sim::InputError(
          "<flag --placement>", "",
          "no placement with --parallel (each replica runs on its own GPU), got \"" + a.placement +
              "\"");
    p.job = models::make_parallel(graph, cluster,
                                  models::parse_parallel(a.parallel, "<flag --parallel>"));
    p.graph = std::move(p.job->graph);
    p.placement = std::move(p.job->placement);
  } else if (a.placement.empty()) {
    throw sim::InputError("<flag --placement>", "",
                          "a placement file or method (or --parallel), got none");
  } else {
    p.placement = placement_arg(a.placement, graph, cluster, costs);
    p.graph = std::move(graph);
  }
  // An op the framework refuses where it is placed (an fp8 matmul on a GPU without FP8 tensor
  // cores), named in the graph's file (sim::check_runnable).
  for (std::size_t o = 0; o < p.graph.ops.size() && o < p.placement.device_of.size(); ++o) {
    const sim::DeviceId d = p.placement.device_of[o];
    if (d >= 0 && d < static_cast<sim::DeviceId>(cluster.devices.size()))
      sim::check_runnable(p.graph.ops[o], cluster.devices[d].spec, cluster.devices[d].name,
                          a.graph);
  }
  return p;
}

// --parallel ...,accumulate=K (models/parallel.hpp): the step is K-1 accumulating micro-batches
// (forward, backward, the accumulation adds; no exchange, no update) and the last micro-batch
// (with the exchange and the update), each simulated once. Exact for micro-batches that run back
// to back on one stream, as a framework's loop does (the next micro-batch's forward starts after
// this one's last kernel): the engine's step of one is the time it adds to the step.
struct Accumulated {
  int k = 1;
  double micro_s = 0.0;  // one accumulating micro-batch
  double last_s = 0.0;   // the last micro-batch, exchange and update
};

// Simulates the job's accumulating micro-batch and sets the outcome's step time to the whole
// step's; nullopt when the job does not accumulate.
std::optional<Accumulated> accumulate_step(sim::Outcome& o, const Placed& p,
                                           const sim::Cluster& cluster, sim::SimOptions opt,
                                           const sim::KernelCostModel& costs) {
  if (!p.job || p.job->spec.accumulate <= 1) return std::nullopt;
  opt.trace = nullptr;  // the trace shows the last micro-batch
  const sim::Outcome m =
      sim::simulate(cluster, p.job->accumulating, p.job->accumulating_placement, opt, costs);
  Accumulated a;
  a.k = p.job->spec.accumulate;
  a.micro_s = m.step_time.seconds();
  a.last_s = o.step_time.seconds();
  o.step_time = sim::Duration{o.step_time.ns + (a.k - 1) * m.step_time.ns};
  o.oom = o.oom || m.oom;
  return a;
}

void print_accumulate(const Accumulated& a) {
  std::printf("accumulate: %d micro-batches a step: %d x %s accumulating + %s last\n", a.k, a.k - 1,
              sim::format_duration(sim::Duration::from_seconds_ceil(a.micro_s)).c_str(),
              sim::format_duration(sim::Duration::from_seconds_ceil(a.last_s)).c_str());
}

nlohmann::json accumulate_json(const Accumulated& a) {
  return {{"micro_batches", a.k},
          {"accumulating_micro_batch_s", a.micro_s},
          {"last_micro_batch_s", a.last_s}};
}

// --graph gpt --graph-opt seq_dist=FILE,...: one step per padded length of a binned loader
// (models/seq_dist.hpp), and the step time expected over them; the throughput a run of many
// steps reports is batch / that expectation.
void run_seq_dist(const SimulateArgs& a, const sim::Cluster& cluster,
                  const sim::KernelCostModel& costs, models::SeqDistOptions sd) {
  if (a.graph != "gpt")
    throw sim::InputError(
        "<flag --graph-opt>", "seq_dist",
        "--graph gpt (the built-in graph whose seq is a length), got --graph \"" + a.graph + "\"");
  for (const auto& [flag, value] :
       {std::pair{"--trace", &a.trace}, {"--chakra-out", &a.chakra_out}, {"--pricing", &a.pricing}})
    if (!value->empty())
      throw sim::InputError(std::string("<flag ") + flag + ">", "",
                            "no " + std::string(flag) +
                                " with seq_dist (a step per padded length), got \"" + *value +
                                "\"");
  int accumulate = 1;
  const std::int64_t own_draws = sd.loader.draws;
  if (!a.parallel.empty()) {
    const models::ParallelSpec s = models::parse_parallel(a.parallel, "<flag --parallel>");
    if (s.pp > 1 || s.mb > 1)
      throw sim::InputError("<flag --parallel>", "",
                            "pp=1 and mb=1 with seq_dist (a step is one micro-batch of one "
                            "length), got \"" +
                                a.parallel + "\"");
    // Every rank draws the same bin; the step waits for the rank with the longest sequence.
    const auto gpus = static_cast<std::int64_t>(cluster.gpus().size());
    sd.loader.draws *= s.dp > 0 ? s.dp : std::max<std::int64_t>(1, gpus / (s.tp * s.pp));
    accumulate = s.accumulate;
  }
  const models::SeqHistogram h = models::read_seq_histogram(sd.file, sd.seq);
  sim::SimOptions opt;
  opt.stop_at_first_oom = a.stop_at_oom;
  opt.threads = a.threads;
  bool oom = false;
  // The expected step over the padded lengths of `d`'s draws: the placed step's, or (accumulating)
  // the job's accumulating micro-batch's; and a row per length.
  const auto over_lengths = [&](const models::SeqDistOptions& d, bool accumulating) {
    std::pair<double, nlohmann::json> e{0.0, nlohmann::json::array()};
    for (const models::PaddedLength& l : models::padded_lengths(h, d.loader)) {
      const std::string opts = models::options_at(d, l.seq);
      const Placed p = place_graph(a, models::load_graph("gpt", opts), cluster, costs);
      const sim::Outcome o = accumulating
                                 ? sim::simulate(cluster, p.job->accumulating,
                                                 p.job->accumulating_placement, opt, costs)
                                 : sim::simulate(cluster, p.graph, p.placement, opt, costs);
      e.first += l.weight * o.step_time.seconds();
      oom = oom || o.oom;
      e.second.push_back({{"seq", l.seq},
                          {"weight", l.weight},
                          {"step_time_s", o.step_time.seconds()},
                          {"oom", o.oom},
                          {"graph_opt", opts}});
    }
    return e;
  };
  auto [expected, rows] = over_lengths(sd, false);
  // accumulate=K: the replicas meet only at the exchange after the last micro-batch (its step
  // above waits for the longest of all ranks' sequences); each accumulating micro-batch draws its
  // own bin on its own rank, so its expectation is over the rank's own draws. The spread of a
  // rank's sum of K-1 draws around K-1 times their mean (a relative sqrt(K-1)) is neglected.
  double micro = 0.0;
  nlohmann::json micro_rows = nlohmann::json::array();
  if (accumulate > 1) {
    models::SeqDistOptions own = sd;
    own.loader.draws = own_draws;
    std::tie(micro, micro_rows) = over_lengths(own, true);
  }
  const double last = expected;
  expected += (accumulate - 1) * micro;
  nlohmann::json j = {{"step_time_s", expected},
                      {"oom", oom},
                      {"seq_dist",
                       {{"file", sd.file},
                        {"seq_bin", sd.loader.bin},
                        {"seq_align", sd.loader.align},
                        {"draws", sd.loader.draws},
                        {"lengths", rows}}}};
  if (accumulate > 1) {
    j["accumulate"] = accumulate_json({accumulate, micro, last});
    j["accumulate"]["accumulating_draws"] = own_draws;
    j["accumulate"]["accumulating_lengths"] = micro_rows;
  }
  if (!a.report.empty()) write_atomic(a.report, j.dump(2) + "\n", "--report");
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%-6s %8s %12s\n", "seq", "weight", "step time");
  for (const auto& r : rows)
    std::printf("%-6lld %8.4f %12s%s\n", r["seq"].get<long long>(), r["weight"].get<double>(),
                sim::format_duration(sim::Duration::from_seconds_ceil(r["step_time_s"])).c_str(),
                r["oom"].get<bool>() ? "  (OUT OF MEMORY)" : "");
  std::printf(
      "expected step time: %s over %zu padded lengths (bins of %lld, longest of %lld "
      "sequences)%s\n",
      sim::format_duration(sim::Duration::from_seconds_ceil(expected)).c_str(), rows.size(),
      static_cast<long long>(sd.loader.bin), static_cast<long long>(sd.loader.draws),
      oom ? "  (OUT OF MEMORY at some length)" : "");
  if (accumulate > 1) print_accumulate({accumulate, micro, last});
  std::printf("throughput: %.1f sequences/s\n",
              static_cast<double>(sd.loader.draws) * accumulate / expected);
}

void run_simulate(const SimulateArgs& given) {
  SimulateArgs a = given;
  sim::Cluster cluster = sim::load_cluster(a.cluster);
  // p2p=off in --parallel: NCCL_P2P_DISABLE=1, the job's collectives through host memory.
  if (!models::take_p2p(a.parallel, "<flag --parallel>")) models::disable_peer_access(cluster);
  if (a.graph == "gpt-huge") {
    sim::KernelCostModel costs;
    if (!a.calibration.empty()) {
      std::vector<std::string> notes;
      costs.set_calibration(sim::use_calibration(a.calibration, cluster, notes));
      for (const std::string& n : notes) note(n);
    }
    run_gpt_huge(a, cluster, costs);
    return;
  }
  sim::KernelCostModel costs;
  if (!a.calibration.empty()) {
    // The calibration's measured host cost becomes its GPUs' launch overhead (docs/cost-model.md).
    std::vector<std::string> notes;
    costs.set_calibration(sim::use_calibration(a.calibration, cluster, notes));
    for (const std::string& n : notes) note(n);
  }
  if (auto sd = models::take_seq_dist(a.graph_opt)) {
    run_seq_dist(a, cluster, costs, *sd);
    return;
  }
  sim::Graph graph = models::load_graph(a.graph, a.graph_opt);
  const std::int64_t batch = models::graph_batch(graph);
  Placed p = place_graph(a, std::move(graph), cluster, costs);

  sim::SimOptions opt;
  opt.stop_at_first_oom = a.stop_at_oom;
  opt.threads = a.threads;
  std::unique_ptr<sim::TraceSink> trace;
  if (!a.trace.empty()) {
    trace = std::make_unique<sim::TraceSink>(cluster);
    trace->describe(p.graph, &costs);
    opt.trace = trace.get();
  }
  sim::Outcome o = sim::simulate(cluster, p.graph, p.placement, opt, costs);
  const std::optional<Accumulated> acc = accumulate_step(o, p, cluster, opt, costs);
  if (trace) trace->write(a.trace);
  if (!a.chakra_out.empty()) {
    const auto files = models::export_chakra(p.graph, cluster, p.placement, costs, a.chakra_out);
    if (!quiet())
      std::cerr << "wrote " << files.size() << " Chakra ET files into " << a.chakra_out << "\n";
  }
  std::string json = sim::outcome_to_json(o);
  if (acc) {
    nlohmann::json j = nlohmann::json::parse(json);
    j["accumulate"] = accumulate_json(*acc);
    json = j.dump(2);
  }
  // Which rule of the cost model's fall-back chain priced each op (docs/cost-model.md).
  if (!a.pricing.empty())
    write_atomic(a.pricing,
                 sim::pricing_to_json(p.graph, cluster, p.placement.device_of, costs) + "\n",
                 "--pricing");
  if (!a.report.empty()) write_atomic(a.report, json + "\n", "--report");
  if (a.json)
    std::cout << json << "\n";
  else
    print_summary(o, cluster);
  if (!a.json && acc) print_accumulate(*acc);
  if (!a.json && p.job && o.step_time.ns > 0) print_parallel(*p.job, o, cluster, batch);
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training step of a placed graph");
  cmd->add_option("--graph", args->graph,
                  "graph JSON file, ONNX file, Chakra ET (.et), built-in workload name, or "
                  "gpt-huge (a streamed dp x tp x pp GPT step of millions of ops, with --parallel; "
                  "docs/performance.md)")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", args->graph_opt, "options of a built-in workload (key=value,...)");
  cmd->add_option("--cluster", args->cluster, "cluster YAML file or built-in scenario name")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--placement", args->placement,
                  "placement JSON file, or a method: single-gpu, single-cpu, random:SEED, ... "
                  "(required unless --parallel)")
      ->check(not_a_directory());
  cmd->add_option("--parallel", args->parallel,
                  "parallel job: dp=N,tp=T,pp=P,mb=M (data, Megatron tensor and 1F1B pipeline "
                  "parallelism; the graph's batch is one micro-batch; docs/parallel.md)");
  cmd->add_option("--calibration", args->calibration, "calibration YAML (docs/cost-model.md)")
      ->check(input_file());
  cmd->add_option("--trace", args->trace, "write a Chrome-trace JSON timeline (open in Perfetto)");
  cmd->add_option("--report", args->report, "write the outcome as JSON to this file");
  cmd->add_option(
      "--chakra-out", args->chakra_out,
      "write the placed step as Chakra ETs into this folder, one per device (ASTRA-sim)");
  cmd->add_option(
      "--pricing", args->pricing,
      "write per op the cost-model rule that priced it (exact, class-curve, roofline) as JSON");
  cmd->add_option(
         "--threads", args->threads,
         "threads of the parallel engine for one step (0 = all cores; 1 = sequential; default: all "
         "for --graph gpt-huge; else 1 on a machine with at most 2 cores, else all; "
         "results are bit-identical on any count; docs/engine.md)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--json", args->json, "print the outcome as JSON instead of a summary");
  cmd->add_flag("--stop-at-oom", args->stop_at_oom, "stop at the first allocation over capacity");
  cmd->callback([args] {
    if (args->threads < 0) args->threads = default_threads(args->graph);
    run_simulate(*args);
  });
}

}  // namespace placesim::tools

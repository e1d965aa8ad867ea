// `placesim simulate`: one placed training step through the engine.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>

#include "models/chakra.hpp"
#include "models/parallel.hpp"
#include "models/registry.hpp"
#include "policy/methods.hpp"
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

void run_simulate(const SimulateArgs& a) {
  sim::Cluster cluster = sim::load_cluster(a.cluster);
  sim::Graph graph = models::load_graph(a.graph, a.graph_opt);
  const std::int64_t batch = models::graph_batch(graph);
  sim::KernelCostModel costs;
  if (!a.calibration.empty()) {
    // The calibration's measured host cost becomes its GPUs' launch overhead (docs/cost-model.md).
    std::vector<std::string> notes;
    costs.set_calibration(sim::use_calibration(a.calibration, cluster, notes));
    for (const std::string& n : notes) note(n);
  }

  sim::Placement placement;
  int replicas = 1;
  if (!a.parallel.empty()) {
    // Each replica on its own GPU (models/parallel.hpp); a placement method would fight that.
    if (!a.placement.empty() && a.placement != "single-gpu")
      throw sim::InputError(
          "<flag --placement>", "",
          "no placement with --parallel (each replica runs on its own GPU), got \"" + a.placement +
              "\"");
    models::ParallelJob job = models::make_parallel(
        graph, cluster, models::parse_parallel(a.parallel, "<flag --parallel>"));
    graph = std::move(job.graph);
    placement = std::move(job.placement);
    replicas = job.replicas;
  } else if (a.placement.empty()) {
    throw sim::InputError("<flag --placement>", "",
                          "a placement file or method (or --parallel), got none");
  } else {
    placement = placement_arg(a.placement, graph, cluster, costs);
  }

  sim::SimOptions opt;
  opt.stop_at_first_oom = a.stop_at_oom;
  std::unique_ptr<sim::TraceSink> trace;
  if (!a.trace.empty()) {
    trace = std::make_unique<sim::TraceSink>(cluster);
    trace->describe(graph, &costs);
    opt.trace = trace.get();
  }
  const sim::Outcome o = sim::simulate(cluster, graph, placement, opt, costs);
  if (trace) trace->write(a.trace);
  if (!a.chakra_out.empty()) {
    const auto files = models::export_chakra(graph, cluster, placement, costs, a.chakra_out);
    if (!quiet())
      std::cerr << "wrote " << files.size() << " Chakra ET files into " << a.chakra_out << "\n";
  }
  const std::string json = sim::outcome_to_json(o);
  // Which rule of the cost model's fall-back chain priced each op (docs/cost-model.md).
  if (!a.pricing.empty())
    write_atomic(a.pricing, sim::pricing_to_json(graph, cluster, placement.device_of, costs) + "\n",
                 "--pricing");
  if (!a.report.empty()) write_atomic(a.report, json + "\n", "--report");
  if (a.json)
    std::cout << json << "\n";
  else
    print_summary(o, cluster);
  if (!a.json && !a.parallel.empty() && o.step_time.ns > 0) {
    // A step advances every data-parallel replica by its batch.
    if (batch > 0)
      std::printf("throughput: %.1f samples/s (%d replicas x batch %lld / step)\n",
                  static_cast<double>(replicas * batch) / o.step_time.seconds(), replicas,
                  static_cast<long long>(batch));
    else
      std::printf("throughput: %.3f steps/s x %d replicas (batch not in the graph's metadata)\n",
                  1.0 / o.step_time.seconds(), replicas);
  }
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training step of a placed graph");
  cmd->add_option("--graph", args->graph,
                  "graph JSON file, ONNX file, Chakra ET (.et) or built-in workload name")
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
                  "data-parallel job: dp=N replicas, one per GPU, DDP-bucketed gradient all-reduce "
                  "(docs/collectives.md)");
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
  cmd->add_flag("--json", args->json, "print the outcome as JSON instead of a summary");
  cmd->add_flag("--stop-at-oom", args->stop_at_oom, "stop at the first allocation over capacity");
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace placesim::tools

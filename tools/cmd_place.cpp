// `placesim place` (one method, a placement file) and `placesim compare` (every method, a table).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/parallel.hpp"
#include "models/registry.hpp"
#include "policy/place/compare.hpp"
#include "policy/place/learned.hpp"
#include "policy/place/methods.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/simulate.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {
namespace {

struct Common {
  std::string graph, graph_opt, cluster, calibration;
  std::uint64_t seed = 1;
};

void add_common(CLI::App* cmd, Common& c) {
  cmd->add_option("--graph", c.graph,
                  "built-in workload (rnnlm, nmt, inception_v3, ...) or graph file")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", c.graph_opt, "workload options, k=v,k=v (e.g. batch=64,layers=2)");
  cmd->add_option("--cluster", c.cluster,
                  "built-in cluster (paper-2gpu, paper-4gpu, ...) or YAML file")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--calibration", c.calibration, "calibration YAML for the kernel cost model")
      ->check(input_file());
  cmd->add_option("--seed", c.seed, "seed of the randomised partitioners (scotch, metis)");
}

// --calibration also sets the launch overhead of the GPUs it measured the host side of.
policy::MethodOptions method_options(const Common& c, sim::Cluster& cluster) {
  policy::MethodOptions o;
  o.seed = c.seed;
  if (!c.calibration.empty()) {
    std::vector<std::string> notes;
    o.costs.set_calibration(sim::use_calibration(c.calibration, cluster, notes));
    for (const std::string& n : notes) note(n);
  }
  return o;
}

std::vector<std::string> split_methods(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  if (out.empty())
    throw sim::InputError("<flag --methods>", "",
                          "a comma-separated list of methods, got \"" + text + "\"");
  return out;
}

// `rl` and `rl:POLICY` run the GNN policy (LibTorch): the LibTorch-free front hands the whole
// command to placesim-torch first (tools/torch_exec.cpp).
bool is_rl_method(const std::string& m) {
  return m == "rl" || m.rfind("rl:", 0) == 0;
}

// compare's default rows: the baselines, and the pre-trained policy where LibTorch is built in.
std::vector<std::string> default_methods() {
  std::vector<std::string> names = policy::method_names();
  if (policy::learned_methods() != nullptr) names.push_back("rl");
  return names;
}

bool is_method_name(const std::string& m) {
  if (is_rl_method(m)) return true;
  for (const std::string& n : policy::method_names())
    if (m == n) return true;
  if (m.rfind("random:", 0) == 0 && m.size() > 7)
    return m.find_first_not_of("0123456789", 7) == std::string::npos;
  return false;
}

/// compare --methods: method names run as usual; a path to a placement JSON (from `place`,
/// `train`, or written by hand) is simulated as it is, in a row named after the file. Anything
/// else is a usage error (exit 2), not an error row: a misspelt method is the caller's mistake.
std::vector<policy::CompareRow> compare_rows(const std::vector<std::string>& names,
                                             const sim::Graph& g, const sim::Cluster& c,
                                             const policy::MethodOptions& mo) {
  std::vector<std::string> methods;
  std::vector<policy::CompareRow> files;
  for (const std::string& m : names) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(m, ec)) {
      const sim::Placement p = sim::resolve_placement(sim::read_placement_json(m), g, c, m);
      files.push_back(policy::evaluate_row(m, g, c, p, mo, 0.0));
    } else if (is_method_name(m)) {
      methods.push_back(m);
    } else {
      throw sim::InputError(
          "<flag --methods>", "",
          "a method (" +
              [] {
                std::string s;
                for (const std::string& n : policy::method_names())
                  s += (s.empty() ? "" : ", ") + n;
                return s;
              }() +
              ", random:SEED, rl, rl:POLICY) or a placement JSON file, got \"" + m + "\"");
    }
  }
  return policy::compare_methods(g, c, methods, mo, std::move(files));
}

}  // namespace

void register_place(CLI::App& app) {
  auto place_opts = std::make_shared<Common>();
  auto method = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto place_json = std::make_shared<bool>(false);
  CLI::App* place =
      app.add_subcommand("place", "place a graph with one method and write the placement file");
  add_common(place, *place_opts);
  place
      ->add_option("--method", *method,
                   "single-cpu, single-gpu, round-robin, random:SEED, expert, scotch, metis, heft, "
                   "m-topo, m-etf, m-sct, rl (the pre-trained GNN policy, zero-shot; needs "
                   "LibTorch), rl:POLICY_FILE")
      ->required();
  place->add_option("-o,--output", *output, "placement JSON to write")->required();
  place->add_flag("--json", *place_json, "print the result as JSON instead of a line");
  place->callback([place_opts, method, output, place_json] {
    if (is_rl_method(*method)) exec_torch_build();
    const sim::Graph g = models::load_graph(place_opts->graph, place_opts->graph_opt);
    models::refuse_input_without_parallel(g, "--graph-opt", "input");
    sim::Cluster c = sim::load_cluster(place_opts->cluster);
    const policy::MethodOptions mo = method_options(*place_opts, c);
    const auto t0 = std::chrono::steady_clock::now();
    const sim::Placement p = policy::make_placement(*method, g, c, mo);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sim::SimOptions so;
    so.record_critical_path = false;
    const sim::Outcome o = sim::simulate(c, g, p, so, mo.costs);
    sim::PlacementMetadata md;
    md.method = *method;
    md.graph = g.name;
    md.cluster = c.name;
    md.predicted_step_time_s = o.step_time.seconds();
    if (*method == "scotch" || *method == "metis") md.seed = place_opts->seed;
    if (method->rfind("random:", 0) == 0) {
      // make_placement accepted the spelling, so this is digits; keep the file valid regardless.
      try {
        md.seed = std::stoull(method->substr(7));
      } catch (const std::exception&) {
        md.seed.reset();
      }
    }
    if (is_rl_method(*method)) md.extra["policy"] = *method == "rl" ? "default" : method->substr(3);
    if (!place_opts->graph_opt.empty()) md.extra["graph_options"] = place_opts->graph_opt;
    md.extra["oom"] = o.oom ? "true" : "false";
    md.extra["method_wall_s"] = std::to_string(wall);
    sim::write_placement_json(sim::to_placement_file(p, g, c, md), *output);
    if (*place_json) {
      nlohmann::ordered_json j = {
          {"method", *method}, {"graph", g.name},
          {"cluster", c.name}, {"predicted_step_time_s", o.step_time.seconds()},
          {"oom", o.oom},      {"method_wall_s", wall},
          {"output", *output}};
      std::cout << j.dump(1) << "\n";
      return;
    }
    std::cout << *method << ": predicted step time " << o.step_time.seconds() << " s"
              << (o.oom ? " (OOM on " + o.oom_devices.front().device_name + ")" : std::string())
              << ", placement written to " << *output << "\n";
  });

  auto cmp_opts = std::make_shared<Common>();
  auto methods = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto csv = std::make_shared<std::string>();
  CLI::App* compare = app.add_subcommand(
      "compare", "run every placement method on one graph and cluster, side by side");
  add_common(compare, *cmp_opts);
  compare->add_option("--methods", *methods,
                      "comma-separated methods and placement JSON files, e.g. expert,best.json "
                      "(default: all baselines, and rl where LibTorch is built)");
  compare->add_flag("--json", *json, "print the rows as JSON instead of a table");
  compare->add_option("--csv", *csv, "also write the rows as CSV to this file");
  compare->callback([cmp_opts, methods, json, csv] {
    const std::vector<std::string> names =
        methods->empty() ? default_methods() : split_methods(*methods);
    // The default rows include rl where placesim-torch is built; so does any rl row asked for.
    if (methods->empty() || std::any_of(names.begin(), names.end(), is_rl_method))
      exec_torch_build();
    for (const std::string& m : names)
      if (!is_method_name(m) && std::filesystem::is_directory(m))
        throw sim::InputError("<flag --methods>", "",
                              "a method or a placement JSON file, got the directory \"" + m + "\"");
    const sim::Graph g = models::load_graph(cmp_opts->graph, cmp_opts->graph_opt);
    models::refuse_input_without_parallel(g, "--graph-opt", "input");
    sim::Cluster c = sim::load_cluster(cmp_opts->cluster);
    const policy::MethodOptions mo = method_options(*cmp_opts, c);
    const auto rows = compare_rows(names, g, c, mo);
    if (!csv->empty()) sim::write_file_atomic(*csv, policy::compare_to_csv(rows));
    if (*json) {
      std::cout << policy::compare_to_json(rows);
    } else {
      std::cout << "graph " << g.name << " (" << g.num_ops() << " ops) on cluster " << c.name
                << "\n"
                << policy::format_compare_table(rows);
    }
  });
}

}  // namespace placesim::tools

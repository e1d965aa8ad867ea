// `placesim import chakra FILE.et... -o graph.json` and `placesim export chakra ... -o DIR`:
// Chakra execution traces (models/chakra.hpp) in and out.
//
//   placesim import chakra trace.0.et -o graph.json
//   placesim export chakra --graph nmt --cluster paper-4gpu --placement expert -o et/
//   placesim import chakra et/*.et -o back.json --placement-out back_placement.json
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/chakra.hpp"
#include "models/registry.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

void register_import_chakra(CLI::App& import_cmd) {
  struct Args {
    std::vector<std::string> files;
    std::string out, placement_out;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      import_cmd.add_subcommand("chakra",
                                "Import Chakra execution traces (.et, MLCommons/ASTRA-sim) as a "
                                "graph JSON (docs/formats.md)");
  cmd->add_option("files", a->files,
                  "Chakra ET file(s); several ranks of one job are merged into one graph")
      ->required()
      ->check(input_file());
  cmd->add_option("-o,--output", a->out, "graph JSON file to write")->required();
  cmd->add_option(
      "--placement-out", a->placement_out,
      "also write the placement the files name (ETs written by `placesim export chakra`)");
  cmd->add_flag("--json", a->json, "print the import's statistics as JSON instead of a line");
  cmd->callback([a] {
    for (const std::string& f : a->files)
      if (!models::is_chakra_path(f))
        throw sim::InputError(f, "", "a Chakra execution trace named *.et or *.et.gz");
    const models::ChakraImport in = models::import_chakra(a->files);
    if (!a->placement_out.empty() && !in.placement)
      throw sim::InputError("<flag --placement-out>", "",
                            "ET files that name their device (written by `placesim export "
                            "chakra`), got files without");
    sim::write_graph_json(in.graph, a->out);
    if (in.placement) {
      if (!a->placement_out.empty()) sim::write_placement_json(*in.placement, a->placement_out);
    }
    for (const std::string& n : in.notes) note(n);
    if (a->json) {
      nlohmann::ordered_json j = {{"graph", in.graph.name},
                                  {"ops", in.graph.num_ops()},
                                  {"data_edges", in.data_edges},
                                  {"control_edges", in.control_edges},
                                  {"comm_nodes", in.comm_nodes},
                                  {"matched_send_recv", in.matched_send_recv},
                                  {"collectives", in.collectives},
                                  {"missing_deps", in.missing_deps},
                                  {"dropped_backward_deps", in.backward_deps},
                                  {"output", a->out}};
      if (!a->placement_out.empty()) j["placement"] = a->placement_out;
      std::cout << j.dump(1) << "\n";
      return;
    }
    std::cout << in.graph.name << ": " << in.graph.num_ops() << " ops, " << in.data_edges
              << " data and " << in.control_edges << " control edges, " << in.comm_nodes
              << " communication nodes (" << in.matched_send_recv << " send/recv pairs joined), "
              << in.collectives << " collective rank ops -> " << a->out
              << (a->placement_out.empty() ? "" : ", placement -> " + a->placement_out) << "\n";
  });
}

void register_export(CLI::App& app) {
  CLI::App* exp = app.add_subcommand("export", "Export a placed step to other tools' formats");
  exp->require_subcommand(1);
  struct Args {
    std::string graph, graph_opt, cluster, placement, calibration, out;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = exp->add_subcommand(
      "chakra",
      "Write a placed step as Chakra ETs, one file per device (ASTRA-sim's workload input)");
  cmd->add_option("--graph", a->graph, "graph JSON/ONNX/ET file or built-in workload name")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", a->graph_opt, "options of a built-in workload (key=value,...)");
  cmd->add_option("--cluster", a->cluster, "cluster YAML file or built-in scenario name")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--placement", a->placement,
                  "placement JSON file or a method (single-gpu, expert, ...)")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--calibration", a->calibration, "calibration YAML pricing the ops")
      ->check(input_file());
  cmd->add_option("-o,--output", a->out, "folder to write <graph>.<rank>.et into")->required();
  cmd->add_flag("--json", a->json, "print the files written as JSON");
  cmd->callback([a] {
    sim::Cluster cluster = sim::load_cluster(a->cluster);
    const sim::Graph graph = models::load_graph(a->graph, a->graph_opt);
    sim::KernelCostModel costs;
    if (!a->calibration.empty()) {
      std::vector<std::string> notes;
      costs.set_calibration(sim::use_calibration(a->calibration, cluster, notes));
      for (const std::string& n : notes) note(n);
    }
    const sim::Placement p = placement_arg(a->placement, graph, cluster, costs);
    const std::vector<std::string> files = models::export_chakra(graph, cluster, p, costs, a->out);
    if (a->json) {
      std::cout << nlohmann::json({{"files", files}}).dump(1) << "\n";
      return;
    }
    for (const std::string& f : files) std::cout << f << "\n";
  });
}

}  // namespace placesim::tools

// `placesim build-graph --graph NAME [--graph-opt k=v,...] -o graph.json`: writes a built-in
// workload (or re-writes a .json / imports an .onnx graph) as a graph file, atomically.
#include <iostream>
#include <string>

#include "models/registry.hpp"
#include "sim/graph.hpp"
#include "sim/units.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

void register_build_graph(CLI::App& app) {
  struct Args {
    std::string graph, options, out;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "build-graph", "Write a training-step graph (built-in workload, .json or .onnx) as JSON");
  std::string names;
  for (const auto& n : models::builtin_graph_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--graph", args->graph,
                  "built-in workload (" + names + ") or a .json/.onnx/.et file")
      ->required()
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", args->options,
                  "comma-separated key=value options, e.g. layers=4,batch=128 (docs/workloads.md)");
  cmd->add_option("-o,--output", args->out, "graph JSON file to write")->required();
  cmd->add_flag("--json", args->json, "print the graph's statistics as JSON instead of a line");
  cmd->callback([args] {
    const sim::Graph g = models::load_graph(args->graph, args->options);
    sim::write_graph_json(g, args->out);
    const sim::GraphStats s = sim::graph_stats(g);
    if (args->json) {
      std::cout << graph_stats_json(g, s, args->out) << "\n";
      return;
    }
    std::cout << g.name << ": " << s.ops << " ops (" << s.forward_ops << " forward, "
              << s.backward_ops << " backward, " << s.update_ops << " update), " << s.flops.v / 1e9
              << " GFLOP, " << sim::format_bytes(s.persistent_bytes) << " persistent";
    if (const auto it = g.metadata.find("parameters"); it != g.metadata.end()) {
      std::cout << ", " << it->second << " parameters";
    }
    std::cout << " -> " << args->out << "\n";
  });
}

}  // namespace placesim::tools

// `placesim import`: `import onnx MODEL.onnx -o graph.json [--training] [--batch N]` here;
// `import topo` is registered by cmd_import_topo.cpp.
#include <iostream>
#include <string>

#include "models/onnx_import.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "sim/units.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

void register_import(CLI::App& app) {
  CLI::App* import_cmd =
      app.add_subcommand("import", "Import models and topologies from other tools");
  import_cmd->require_subcommand(1);

  struct Args {
    std::string model, out, optimizer = "sgd";
    bool training = false, json = false;
    std::int64_t batch = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* onnx = import_cmd->add_subcommand(
      "onnx", "Import an ONNX model as a graph JSON (docs/workloads.md)");
  onnx->add_option("model", args->model, "ONNX model file (.onnx)")
      ->required()
      ->check(input_file());
  onnx->add_option("-o,--output", args->out, "graph JSON file to write")->required();
  onnx->add_flag("--training", args->training,
                 "add backward and optimizer-update ops (one training step)");
  onnx->add_option("--batch", args->batch,
                   "batch size for the model's data inputs (default: the model's)");
  onnx->add_option("--optimizer", args->optimizer,
                   "sgd, momentum, adam or rmsprop (with --training)");
  onnx->add_flag("--json", args->json, "print the graph's statistics as JSON instead of a line");
  onnx->callback([args] {
    models::OnnxImportOptions o;
    o.training = args->training;
    if (args->batch < 0)
      throw sim::InputError("<flag --batch>", "",
                            "a non-negative batch size, got " + std::to_string(args->batch));
    o.batch = args->batch;
    const auto opt = models::parse_optimizer(args->optimizer);
    if (!opt)
      throw sim::InputError("<flag --optimizer>", "",
                            "sgd, momentum, adam or rmsprop, got \"" + args->optimizer + "\"");
    o.optimizer = *opt;
    const sim::Graph g = models::import_onnx(args->model, o);
    sim::write_graph_json(g, args->out);
    const sim::GraphStats s = sim::graph_stats(g);
    if (args->json) {
      std::cout << graph_stats_json(g, s, args->out) << "\n";
      return;
    }
    std::cout << g.name << ": " << s.ops << " ops (" << s.forward_ops << " forward, "
              << s.backward_ops << " backward, " << s.update_ops << " update), " << s.flops.v / 1e9
              << " GFLOP, " << g.metadata.at("parameters") << " parameters";
    if (const auto it = g.metadata.find("unknown_ops"); it != g.metadata.end()) {
      std::cout << ", unknown ops (elementwise estimate): " << it->second;
    }
    std::cout << " -> " << args->out << "\n";
  });

  register_import_topo(*import_cmd);
  register_import_chakra(*import_cmd);
}

}  // namespace placesim::tools

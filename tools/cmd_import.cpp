// `placesim import`: `import onnx MODEL.onnx -o graph.json [--training] [--batch N]` and
// `import et TRACE.json [--kineto KINETO.json] -o graph.json` here; `import topo` is registered
// by cmd_import_topo.cpp, `import chakra` by cmd_chakra.cpp.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/pytorch_et.hpp"
#include "models/onnx_import.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "sim/units.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {

void register_import_et(CLI::App& import_cmd) {
  struct Args {
    std::string trace, kineto, out;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = import_cmd.add_subcommand(
      "et",
      "Import a PyTorch Execution Trace (ExecutionGraphObserver / ExecutionTraceObserver JSON), "
      "timed by its Kineto trace, as a graph JSON (docs/formats.md)");
  cmd->add_option("trace", a->trace, "execution trace (.json or .json.gz)")
      ->required()
      ->check(input_file());
  cmd->add_option("--kineto", a->kineto,
                  "the profiler (Kineto / Chrome) trace of the same step: measured op times")
      ->check(input_file());
  cmd->add_option("-o,--output", a->out, "graph JSON file to write")->required();
  cmd->add_flag("--json", a->json, "print the import's statistics as JSON instead of a line");
  cmd->callback([a] {
    const calibration::EtImport in = calibration::import_pytorch_et(a->trace, a->kineto);
    sim::write_graph_json(in.graph, a->out);
    for (const std::string& n : in.notes) note(n);
    const sim::GraphStats s = sim::graph_stats(in.graph);
    if (a->json) {
      nlohmann::ordered_json j = {{"graph", in.graph.name},
                                  {"schema", in.schema},
                                  {"nodes", in.nodes},
                                  {"ops", in.ops},
                                  {"nested_operators", in.nested},
                                  {"outside_step", in.outside_step},
                                  {"other_thread_ops", in.other_threads},
                                  {"forward_ops", in.forward_ops},
                                  {"backward_ops", in.backward_ops},
                                  {"update_ops", in.update_ops},
                                  {"data_edges", in.data_edges},
                                  {"control_edges", in.control_edges},
                                  {"flops", s.flops.v},
                                  {"persistent_bytes", s.persistent_bytes.v},
                                  {"kineto_link", in.link_method},
                                  {"linked_ops", in.linked},
                                  {"gpu_timed_ops", in.gpu_timed},
                                  {"measured_ops_ns", in.measured_ops_ns},
                                  {"measured_step_ns", in.measured_step_ns},
                                  {"output", a->out}};
      std::cout << j.dump(1) << "\n";
      return;
    }
    std::cout << in.graph.name << ": " << in.ops << " ops (" << in.forward_ops << " forward, "
              << in.backward_ops << " backward, " << in.update_ops << " update) from " << in.nodes
              << " nodes, " << in.data_edges << " data and " << in.control_edges
              << " control edges, " << s.flops.v / 1e9 << " GFLOP";
    if (!a->kineto.empty()) {
      std::cout << "; " << in.linked << " ops timed by the Kineto trace (" << in.link_method
                << "), " << static_cast<double>(in.measured_ops_ns) / 1e6 << " ms of op time";
      if (in.measured_step_ns > 0)
        std::cout << " in a " << static_cast<double>(in.measured_step_ns) / 1e6 << " ms step";
    }
    std::cout << " -> " << a->out << "\n";
  });
}

}  // namespace

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
  register_import_et(*import_cmd);
}

}  // namespace placesim::tools

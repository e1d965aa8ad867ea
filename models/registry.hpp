// Finding a graph by what the user typed: a built-in workload name with options, or a file.
//
//   sim::Graph g = models::load_graph("nmt", "layers=4,batch=128");  // built-in builder
//   sim::Graph h = models::load_graph("graphs/mine.json", "");        // JSON graph file
//   sim::Graph m = models::load_graph("resnet18.onnx", "training");   // ONNX import
//
// Option syntax: comma-separated key=value pairs; an unknown key or a malformed value throws
// sim::InputError naming "--graph-opt" and the key, with the accepted keys.
#pragma once

#include <string>
#include <vector>

#include "sim/graph.hpp"

namespace placesim::models {

sim::Graph load_graph(const std::string& name_or_path, const std::string& options = "");
/// Built-in workload names, sorted ("gpt", "inception_v3", "nmt", "resnet50", "rnnlm").
std::vector<std::string> builtin_graph_names();

}  // namespace placesim::models

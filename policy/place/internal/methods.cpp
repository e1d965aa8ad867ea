// Dispatch from a method name to its implementation (see methods.hpp for the accepted names).
#include "policy/place/methods.hpp"

#include <filesystem>
#include <functional>
#include <map>

#include "policy/place/baselines.hpp"
#include "policy/place/group_dag.hpp"
#include "policy/place/learned.hpp"
#include "sim/error.hpp"

namespace placesim::policy {
namespace {

using GroupMethod = std::function<GroupPlacement(const GroupDag&, const sim::Graph&,
                                                 const sim::Cluster&, const MethodOptions&)>;

const std::map<std::string, GroupMethod>& group_methods() {
  static const std::map<std::string, GroupMethod> methods = {
      {"round-robin", [](const GroupDag& d, const sim::Graph&, const sim::Cluster& c,
                         const MethodOptions&) { return place_round_robin(d, c); }},
      {"expert", place_expert},
      {"scotch", place_scotch},
      {"metis", place_metis},
      {"heft", place_heft},
      {"m-topo", place_m_topo},
      {"m-etf", place_m_etf},
      {"m-sct", place_m_sct},
  };
  return methods;
}

}  // namespace

std::vector<std::string> method_names() {
  return {"single-cpu", "single-gpu", "round-robin", "random:1", "expert", "scotch",
          "metis",      "heft",       "m-topo",      "m-etf",    "m-sct"};
}

sim::Placement make_placement(const std::string& method, const sim::Graph& graph,
                              const sim::Cluster& cluster, const MethodOptions& options) {
  if (cluster.num_devices() == 0)
    throw sim::InputError(cluster.source_file, "devices", "at least one device, got none");
  const auto it = group_methods().find(method);
  if (it != group_methods().end()) {
    const GroupDag dag = build_group_dag(graph);
    return dag.expand(it->second(dag, graph, cluster, options));
  }
  if (method == "rl" || method.rfind("rl:", 0) == 0) {
    // The pre-trained GNN policy placing this graph zero-shot (policy/rl_gnn.hpp); rl:PATH names
    // another policy file.
    const std::string path = method == "rl" ? std::string() : method.substr(3);
    if (const LearnedMethods* rl = learned_methods())
      return rl->place_zero_shot(path, graph, cluster, options.costs);
    throw sim::InputError(
        "<flag --method>", method,
        "a build with LibTorch (placesim-torch) for the rl method, got one without");
  }
  if (method == "single-cpu" || method == "single-gpu" || method.rfind("random:", 0) == 0) {
    if (auto p = sim::builtin_placement(method, graph, cluster)) return *p;
    // A known method that this cluster cannot serve: say what the cluster lacks.
    const bool gpu = method == "single-gpu";
    throw sim::InputError(
        cluster.source_file.empty() ? cluster.name : cluster.source_file, "devices",
        std::string(gpu                      ? "a GPU"
                    : method == "single-cpu" ? "a CPU"
                                             : "a device") +
            " for placement method " + method +
            " (and one of each kind the graph's device_kind constraints ask for), "
            "got none in cluster " +
            cluster.name);
  }
  // A path that names no file: the user meant a placement file, not a method.
  if (method.find('/') != std::string::npos || method.ends_with(".json")) {
    std::error_code ec;
    throw sim::InputError(method, "",
                          std::filesystem::is_directory(method, ec)
                              ? "a placement JSON file, got a directory"
                              : "a readable placement JSON file (it does not exist)");
  }
  throw sim::InputError("<flag --method>", "",
                        "one of single-cpu, single-gpu, round-robin, random:SEED, expert, "
                        "scotch, metis, heft, m-topo, m-etf, m-sct, rl, rl:POLICY, got \"" +
                            method + "\"");
}

}  // namespace placesim::policy

// Dispatch from a method name to its implementation (see methods.hpp for the accepted names).
#include "policy/methods.hpp"

#include "sim/error.hpp"

namespace placesim::policy {

std::vector<std::string> method_names() {
  return {"single-cpu", "single-gpu", "round-robin", "random:1", "expert", "scotch",
          "metis",      "heft",       "m-topo",      "m-etf",    "m-sct"};
}

sim::Placement make_placement(const std::string& method, const sim::Graph& graph,
                              const sim::Cluster& cluster, const MethodOptions& /*options*/) {
  if (auto p = sim::builtin_placement(method, graph, cluster)) return *p;
  throw sim::InputError("<flag --method>", "",
                        "one of single-cpu, single-gpu, round-robin, random:SEED, expert, "
                        "scotch, metis, heft, m-topo, m-etf, m-sct, got \"" + method + "\"");
}

}  // namespace placesim::policy

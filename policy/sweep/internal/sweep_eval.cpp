// The real sweep evaluator: cluster transformation, placement and simulation of one point.
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "models/nccl_p2p.hpp"
#include "models/parallel.hpp"
#include "models/registry.hpp"
#include "policy/place/learned.hpp"
#include "policy/place/methods.hpp"
#include "policy/sweep/sweep.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

struct SimulationEvaluator::Impl {
  SweepSpec spec;
  sim::Cluster base;
  std::vector<sim::Graph> graphs;
  mutable std::mutex mutex;
  /// Clusters per axis-value key: every method and workload of a grid point shares one.
  mutable std::map<std::string, std::shared_ptr<const sim::Cluster>> clusters;

  std::shared_ptr<const sim::Cluster> cluster_for(const SweepPoint& p) const {
    std::string key;
    for (const auto& [a, v] : p.axis_values) key += a + "=" + v + "\n";
    // A workload's p2p=off (NCCL_P2P_DISABLE=1) runs on its own copy without peer access.
    const bool p2p = spec.workloads.at(p.workload).p2p;
    if (!p2p) key += "p2p=off\n";
    {
      const std::lock_guard lock(mutex);
      if (auto it = clusters.find(key); it != clusters.end()) return it->second;
    }
    // Built outside the lock; two threads building the same key build equal clusters.
    sim::Cluster built = apply_axes(spec.base, base, p.axis_values, spec.origin);
    if (!p2p) models::disable_peer_access(built);
    auto c = std::make_shared<const sim::Cluster>(std::move(built));
    const std::lock_guard lock(mutex);
    return clusters.emplace(key, std::move(c)).first->second;
  }
};

namespace {

sim::InputError InputErrorFor(const std::string& origin, const std::string& key,
                              const std::string& name) {
  return sim::InputError(
      origin, key,
      "rl:ITERATIONS or rl:ITERATIONS:SEED with a positive iteration budget, got \"" + name + "\"");
}

PointResult summarize(const sim::Outcome& o) {
  PointResult r;
  r.step_time = o.step_time;
  r.oom = o.oom;
  r.unreachable = o.unreachable;
  for (const auto& d : o.devices) {
    if (r.peak_memory_device.empty() || d.peak_memory > r.peak_memory) {
      r.peak_memory = d.peak_memory;
      r.peak_memory_device = d.name;
    }
    if (r.busiest_device.empty() || d.utilization > r.busiest_utilization) {
      r.busiest_utilization = d.utilization;
      r.busiest_device = d.name;
    }
  }
  sim::Duration best{-1};
  for (const auto& l : o.links) {
    if (l.busy.ns <= 0 || l.busy <= best) continue;
    best = l.busy;
    r.most_loaded_link = l.name;
    r.most_loaded_link_bytes = l.bytes;
    r.most_loaded_link_busy =
        o.step_time.ns > 0 ? static_cast<double>(l.busy.ns) / static_cast<double>(o.step_time.ns)
                           : 0.0;
  }
  return r;
}

struct RlBudget {
  int iterations = 0;
  std::uint64_t seed = 1;
};

/// "rl:ITERATIONS" or "rl:ITERATIONS:SEED"; nullopt for any other method name.
std::optional<RlBudget> parse_rl(const std::string& name, const std::string& origin,
                                 const std::string& key) {
  if (name != "rl" && name.rfind("rl:", 0) != 0) return std::nullopt;
  RlBudget b;
  const std::string rest = name.size() > 3 ? name.substr(3) : "";
  const auto colon = rest.find(':');
  try {
    std::size_t used = 0;
    b.iterations = std::stoi(rest.substr(0, colon), &used);
    if (used != rest.substr(0, colon).size() || b.iterations <= 0) throw std::invalid_argument("");
    if (colon != std::string::npos) {
      const std::string seed = rest.substr(colon + 1);
      b.seed = std::stoull(seed, &used);
      if (used != seed.size()) throw std::invalid_argument("");
    }
  } catch (const std::exception&) {
    throw InputErrorFor(origin, key, name);
  }
  return b;
}

/// Orders outcomes: runnable before OOM/unreachable, then by step time.
auto rank_of(const PointResult& r) {
  return std::make_tuple(r.unreachable, r.oom, r.step_time.ns);
}

}  // namespace

bool uses_rl(const SweepSpec& spec) {
  for (std::size_t m = 0; m < spec.methods.size(); ++m)
    for (const std::string& c : spec.methods[m].candidates)
      if (parse_rl(c, spec.origin, "methods[" + std::to_string(m) + "]")) return true;
  return false;
}

SimulationEvaluator::SimulationEvaluator(const SweepSpec& spec) : impl_(std::make_unique<Impl>()) {
  impl_->spec = spec;
  for (std::size_t m = 0; m < spec.methods.size(); ++m)
    for (const std::string& c : spec.methods[m].candidates)
      if (parse_rl(c, spec.origin, "methods[" + std::to_string(m) + "]") &&
          learned_methods() == nullptr)
        throw sim::InputError(spec.origin, "methods[" + std::to_string(m) + "]",
                              "a baseline: \"" + c +
                                  "\" needs placesim built with LibTorch "
                                  "(PLACESIM_WITH_TORCH=ON)");
  impl_->base = make_base_cluster(spec.base, spec.origin);
  for (std::size_t i = 0; i < spec.workloads.size(); ++i) {
    const SweepWorkload& w = spec.workloads[i];
    try {
      impl_->graphs.push_back(models::load_graph(w.graph, w.options));
      if (w.parallel.empty())
        models::refuse_input_without_parallel(impl_->graphs.back(), spec.origin,
                                              "workloads[" + std::to_string(i) + "].options");
    } catch (const sim::InputError& e) {
      // load_graph speaks of the command line's flags; here the spec's key is at fault.
      const std::string what = e.what();
      const bool opt = what.rfind("--graph-opt", 0) == 0;
      if (!opt && what.rfind("--graph", 0) != 0) throw;
      throw sim::InputError(spec.origin,
                            "workloads[" + std::to_string(i) + "]." + (opt ? "options" : "graph"),
                            "a workload placesim can build (" + what + ")");
    }
  }
}

SimulationEvaluator::~SimulationEvaluator() = default;

double SimulationEvaluator::cost_hint(const SweepPoint& p) const {
  const double ops = static_cast<double>(impl_->graphs.at(p.workload).ops.size());
  const double devices = static_cast<double>(impl_->cluster_for(p)->devices.size());
  double candidates = 0.0;
  for (const std::string& name : impl_->spec.methods.at(p.method).candidates) {
    const auto rl = parse_rl(name, impl_->spec.origin, "methods");
    candidates += rl ? 16.0 * rl->iterations : 1.0;
  }
  return ops * devices * candidates;
}

PointResult SimulationEvaluator::operator()(const SweepPoint& p) const {
  const auto cluster = impl_->cluster_for(p);
  const sim::Graph& graph = impl_->graphs.at(p.workload);
  const SweepMethod& method = impl_->spec.methods.at(p.method);
  sim::SimOptions opts;
  opts.record_critical_path = false;
  std::optional<PointResult> best;
  std::string last_error;
  for (const std::string& name : method.candidates) {
    PointResult r;
    try {
      sim::Placement placement;
      if (const auto rl = parse_rl(name, impl_->spec.origin, "methods")) {
        // A short training run per point (the constructor made sure the RL library is linked).
        placement = learned_methods()->train_short(graph, *cluster, rl->iterations, rl->seed);
      } else if (const std::string& par = impl_->spec.workloads.at(p.workload).parallel;
                 !par.empty()) {
        // A data-parallel job places itself: replica k on the k-th GPU (its p2p=off is in the
        // cluster, cluster_for).
        const models::ParallelJob job =
            models::make_parallel(graph, *cluster, models::parse_parallel(par, impl_->spec.origin));
        r = summarize(sim::simulate(*cluster, job.graph, job.placement, opts));
        if (method.candidates.size() > 1) r.chosen = name;
        best = std::move(r);
        break;
      } else {
        placement = make_placement(name, graph, *cluster);
      }
      r = summarize(sim::simulate(*cluster, graph, placement, opts));
    } catch (const sim::InputError& e) {
      // One candidate that cannot place this graph does not sink a best-of.
      if (method.candidates.size() == 1) throw;
      last_error = name + ": " + e.what();
      continue;
    }
    if (method.candidates.size() > 1) r.chosen = name;
    if (!best || rank_of(r) < rank_of(*best)) best = std::move(r);
  }
  if (!best) throw sim::InputError("every candidate failed; last: " + last_error);
  return *best;
}

}  // namespace placesim::policy

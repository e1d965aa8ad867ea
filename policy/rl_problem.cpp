// Per-group features for the policy (Mirhoseini et al. 2017, section 2: "op type", "output
// shapes", "adjacency information"), from models::Grouping.
#include <algorithm>
#include <cmath>

#include "policy/rl.hpp"
#include "sim/error.hpp"

namespace placesim::policy {

namespace {
// log1p of a size, scaled by the largest in the graph so that features stay in [0, 1] whatever
// the workload's scale.
std::vector<float> log_scaled(const std::vector<double>& v) {
  std::vector<float> out(v.size(), 0.0f);
  double top = 0.0;
  for (double x : v) top = std::max(top, std::log1p(std::max(0.0, x)));
  if (top <= 0.0) return out;
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = static_cast<float>(std::log1p(std::max(0.0, v[i])) / top);
  return out;
}

float mean_position(const std::vector<std::int32_t>& ids, int groups) {
  if (ids.empty()) return -1.0f;
  double s = 0.0;
  for (auto id : ids) s += id;
  return static_cast<float>(s / static_cast<double>(ids.size()) / std::max(1, groups - 1));
}
}  // namespace

PolicyProblem make_problem(const models::Grouping& gr, const sim::Cluster& cluster) {
  const int g = gr.size();
  if (g == 0) throw sim::InputError("<graph>", "ops", "at least one op to place, got none");
  PolicyProblem p;
  p.num_devices = cluster.num_devices();
  const auto out_bytes = log_scaled(gr.output_bytes);
  const auto flops = log_scaled(gr.flops);
  const auto params = log_scaled(gr.persistent_bytes);
  std::vector<double> ops(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i) ops[static_cast<size_t>(i)] = static_cast<double>(gr.ops_of_group[static_cast<size_t>(i)].size());
  const auto op_count = log_scaled(ops);
  p.features.resize(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i) {
    const auto ui = static_cast<size_t>(i);
    std::vector<float>& f = p.features[ui];
    // Op-type counts as shares of the group, so a 500-op group and a 5-op one of the same kind
    // look alike; the op count itself is a separate feature.
    double total = 0.0;
    if (ui < gr.type_counts.size())
      for (float c : gr.type_counts[ui]) total += c;
    for (size_t t = 0; t < gr.type_vocab.size(); ++t) {
      const float c = ui < gr.type_counts.size() && t < gr.type_counts[ui].size() ? gr.type_counts[ui][t] : 0.0f;
      f.push_back(total > 0 ? static_cast<float>(c / total) : 0.0f);
    }
    f.push_back(op_count[ui]);
    f.push_back(ui < out_bytes.size() ? out_bytes[ui] : 0.0f);
    f.push_back(ui < flops.size() ? flops[ui] : 0.0f);
    f.push_back(ui < params.size() ? params[ui] : 0.0f);
    const auto& pred = ui < gr.pred.size() ? gr.pred[ui] : std::vector<std::int32_t>{};
    const auto& succ = ui < gr.succ.size() ? gr.succ[ui] : std::vector<std::int32_t>{};
    f.push_back(static_cast<float>(std::log1p(static_cast<double>(pred.size())) / 4.0));
    f.push_back(static_cast<float>(std::log1p(static_cast<double>(succ.size())) / 4.0));
    f.push_back(static_cast<float>(i) / static_cast<float>(std::max(1, g - 1)));
    f.push_back(mean_position(pred, g));
    f.push_back(mean_position(succ, g));
  }
  bool any_constraint = false;
  for (const auto& c : gr.constraint) any_constraint = any_constraint || c.has_value();
  if (any_constraint) {
    p.allowed.assign(static_cast<size_t>(g), std::vector<bool>(static_cast<size_t>(p.num_devices), true));
    for (int i = 0; i < g && i < static_cast<int>(gr.constraint.size()); ++i) {
      const auto& c = gr.constraint[static_cast<size_t>(i)];
      if (!c) continue;
      bool any = false;
      for (int d = 0; d < p.num_devices; ++d) {
        const bool ok = cluster.devices[static_cast<size_t>(d)].spec.kind == *c;
        p.allowed[static_cast<size_t>(i)][static_cast<size_t>(d)] = ok;
        any = any || ok;
      }
      if (!any)
        throw sim::InputError("<cluster " + cluster.name + ">", "devices",
                              std::string(*c == sim::DeviceKind::Cpu ? "a CPU" : "a GPU") + " device for group " +
                                  gr.names[static_cast<size_t>(i)] + ", got none");
    }
  }
  return p;
}

}  // namespace placesim::policy

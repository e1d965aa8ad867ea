// Per-group features for the policy (Mirhoseini et al. 2017, section 2: "op type", "output
// shapes", "adjacency information"), from models::Grouping.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "policy/rl/rl.hpp"
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

namespace {
PolicyProblem build_problem(const models::Grouping& gr, const sim::Cluster& cluster,
                            const std::vector<std::string>* vocab) {
  const int g = gr.size();
  if (g == 0) throw sim::InputError("<graph>", "ops", "at least one op to place, got none");
  PolicyProblem p;
  p.num_devices = cluster.num_devices();
  const auto out_bytes = log_scaled(gr.output_bytes);
  const auto flops = log_scaled(gr.flops);
  const auto params = log_scaled(gr.persistent_bytes);
  std::vector<double> ops(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i)
    ops[static_cast<size_t>(i)] =
        static_cast<double>(gr.ops_of_group[static_cast<size_t>(i)].size());
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
    std::vector<float> counts;
    if (vocab == nullptr) {
      for (size_t t = 0; t < gr.type_vocab.size(); ++t)
        counts.push_back(ui < gr.type_counts.size() && t < gr.type_counts[ui].size()
                             ? gr.type_counts[ui][t]
                             : 0.0f);
    } else {
      // Types the vocabulary lacks share its last column.
      counts.assign(vocab->size() + 1, 0.0f);
      for (size_t t = 0;
           t < gr.type_vocab.size() && ui < gr.type_counts.size() && t < gr.type_counts[ui].size();
           ++t) {
        const auto it = std::lower_bound(vocab->begin(), vocab->end(), gr.type_vocab[t]);
        const size_t col = it != vocab->end() && *it == gr.type_vocab[t]
                               ? static_cast<size_t>(it - vocab->begin())
                               : vocab->size();
        counts[col] += gr.type_counts[ui][t];
      }
    }
    for (float c : counts) f.push_back(total > 0 ? static_cast<float>(c / total) : 0.0f);
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
  std::vector<std::optional<sim::DeviceKind>> kinds(static_cast<size_t>(g));
  std::vector<std::string> names(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i) {
    const auto ui = static_cast<size_t>(i);
    if (ui < gr.constraint.size()) kinds[ui] = gr.constraint[ui];
    names[ui] = "group " + (ui < gr.names.size() ? gr.names[ui] : std::to_string(i));
  }
  p.allowed = allowed_devices(cluster, kinds, names);
  if (vocab != nullptr) p.vocab = *vocab;
  return p;
}
}  // namespace

std::vector<std::vector<bool>> allowed_devices(
    const sim::Cluster& cluster, const std::vector<std::optional<sim::DeviceKind>>& kinds,
    const std::vector<std::string>& names) {
  std::vector<std::vector<bool>> allowed;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (!kinds[i]) continue;
    if (allowed.empty())
      allowed.assign(kinds.size(), std::vector<bool>(cluster.devices.size(), true));
    bool any = false;
    for (size_t d = 0; d < cluster.devices.size(); ++d) {
      const bool ok = cluster.devices[d].spec.kind == *kinds[i];
      allowed[i][d] = ok;
      any = any || ok;
    }
    if (!any)
      throw sim::InputError("<cluster " + cluster.name + ">", "devices",
                            std::string(*kinds[i] == sim::DeviceKind::Cpu ? "a CPU" : "a GPU") +
                                " device for " + names.at(i) + ", got none");
  }
  return allowed;
}

PolicyProblem make_problem(const models::Grouping& gr, const sim::Cluster& cluster) {
  return build_problem(gr, cluster, nullptr);
}

PolicyProblem make_problem(const models::Grouping& gr, const sim::Cluster& cluster,
                           const std::vector<std::string>& vocab) {
  if (!std::is_sorted(vocab.begin(), vocab.end()))
    throw sim::InputError("<op-type vocabulary>", "", "op types in sorted order");
  return build_problem(gr, cluster, &vocab);
}

}  // namespace placesim::policy

namespace placesim::policy {

models::Grouping colocation_grouping(const sim::Graph& g, int max_groups) {
  if (max_groups < 1)
    throw sim::InputError("<flag --groups>", "",
                          "a positive number of groups, got " + std::to_string(max_groups));
  models::Grouping gr;
  const int n = g.num_ops();
  // The graph's own co-location groups, in the order their first op appears topologically.
  std::map<std::string, int> colo;
  std::vector<int> colo_of(static_cast<size_t>(n), -1);
  std::vector<int> colo_size;
  for (sim::OpId op : g.topo_order) {
    auto [it, fresh] = colo.emplace(g.group_of(op), static_cast<int>(colo_size.size()));
    if (fresh) colo_size.push_back(0);
    colo_of[static_cast<size_t>(op)] = it->second;
    ++colo_size[static_cast<size_t>(it->second)];
  }
  // Contiguous runs of that order, cut so each holds about the same number of ops.
  const int m = static_cast<int>(colo_size.size());
  const int target = std::min(max_groups, m);
  std::vector<int> chunk_of(static_cast<size_t>(m), 0);
  {
    int chunk = 0;
    std::int64_t done = 0;
    for (int i = 0; i < m; ++i) {
      // Leave at least one co-location group for every chunk still to come.
      const bool must_cut = m - i <= target - chunk - 1;
      const bool full = done >= static_cast<std::int64_t>(n) * (chunk + 1) / target;
      if (i > 0 && chunk < target - 1 && (full || must_cut)) ++chunk;
      chunk_of[static_cast<size_t>(i)] = chunk;
      done += colo_size[static_cast<size_t>(i)];
    }
    gr.names.resize(static_cast<size_t>(chunk + 1));
  }
  const int groups = static_cast<int>(gr.names.size());
  gr.ops_of_group.resize(static_cast<size_t>(groups));
  gr.group_of_op.resize(static_cast<size_t>(n));
  for (int op = 0; op < n; ++op) {
    const int grp = chunk_of[static_cast<size_t>(colo_of[static_cast<size_t>(op)])];
    gr.group_of_op[static_cast<size_t>(op)] = grp;
    gr.ops_of_group[static_cast<size_t>(grp)].push_back(op);
  }
  std::map<std::string, int> vocab;
  for (const auto& op : g.ops) vocab.emplace(op.type, 0);
  int v = 0;
  for (auto& [type, index] : vocab) {
    index = v++;
    gr.type_vocab.push_back(type);
  }
  gr.type_counts.assign(static_cast<size_t>(groups), std::vector<float>(vocab.size(), 0.0f));
  gr.output_bytes.assign(static_cast<size_t>(groups), 0.0);
  gr.flops.assign(static_cast<size_t>(groups), 0.0);
  gr.persistent_bytes.assign(static_cast<size_t>(groups), 0.0);
  gr.constraint.assign(static_cast<size_t>(groups), std::nullopt);
  std::vector<std::set<std::int32_t>> succ(static_cast<size_t>(groups)),
      pred(static_cast<size_t>(groups));
  for (int op = 0; op < n; ++op) {
    const sim::Op& o = g.ops[static_cast<size_t>(op)];
    const auto grp = static_cast<size_t>(gr.group_of_op[static_cast<size_t>(op)]);
    gr.type_counts[grp][static_cast<size_t>(vocab[o.type])] += 1.0f;
    for (const auto& t : o.outputs) gr.output_bytes[grp] += static_cast<double>(t.bytes.v);
    gr.flops[grp] += o.flops.v;
    gr.persistent_bytes[grp] += static_cast<double>(o.persistent.v);
    if (o.device_kind) gr.constraint[grp] = o.device_kind;
    for (sim::OpId c : g.consumers_of[static_cast<size_t>(op)]) {
      const auto cg = gr.group_of_op[static_cast<size_t>(c)];
      if (cg != static_cast<std::int32_t>(grp)) {
        succ[grp].insert(cg);
        pred[static_cast<size_t>(cg)].insert(static_cast<std::int32_t>(grp));
      }
    }
  }
  for (int i = 0; i < groups; ++i) {
    gr.names[static_cast<size_t>(i)] = "chunk" + std::to_string(i);
    gr.succ.emplace_back(succ[static_cast<size_t>(i)].begin(), succ[static_cast<size_t>(i)].end());
    gr.pred.emplace_back(pred[static_cast<size_t>(i)].begin(), pred[static_cast<size_t>(i)].end());
  }
  return gr;
}

}  // namespace placesim::policy

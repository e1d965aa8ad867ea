#include "policy/place/group_dag.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace placesim::policy {
sim::Placement GroupDag::expand(const std::vector<sim::DeviceId>& device_of_group) const {
  sim::Placement p;
  p.device_of.resize(group_of_op.size(), -1);
  for (std::size_t op = 0; op < group_of_op.size(); ++op)
    p.device_of[op] = device_of_group[static_cast<std::size_t>(group_of_op[op])];
  return p;
}

GroupDag build_group_dag(const sim::Graph& g) {
  const int n_ops = g.num_ops();
  GroupDag dag;
  dag.group_of_op.assign(static_cast<std::size_t>(n_ops), -1);
  std::map<std::string, int> id_of;
  for (const sim::OpId op : g.topo_order) {
    const auto [it, inserted] = id_of.emplace(g.group_of(op), static_cast<int>(id_of.size()));
    dag.group_of_op[static_cast<std::size_t>(op)] = it->second;
  }
  const auto n = id_of.size();
  dag.ops.assign(n, {});
  for (int op = 0; op < n_ops; ++op)
    dag.ops[static_cast<std::size_t>(dag.group_of_op[static_cast<std::size_t>(op)])].push_back(op);
  dag.kind.assign(n, std::nullopt);
  dag.persistent_bytes.assign(n, 0.0);
  dag.output_bytes.assign(n, 0.0);
  dag.flops.assign(n, 0.0);
  dag.layer.assign(n, "");
  for (std::size_t gi = 0; gi < n; ++gi) {
    double heaviest = -1.0;
    for (const sim::OpId op : dag.ops[gi]) {
      const sim::Op& o = g.ops[static_cast<std::size_t>(op)];
      if (!dag.kind[gi] && o.device_kind) dag.kind[gi] = o.device_kind;
      dag.persistent_bytes[gi] += static_cast<double>(o.persistent.v);
      for (const sim::TensorOut& t : o.outputs)
        dag.output_bytes[gi] += static_cast<double>(t.bytes.v);
      dag.flops[gi] += o.flops.v;
      if (!o.layer.empty() && o.flops.v > heaviest) {
        heaviest = o.flops.v;
        dag.layer[gi] = o.layer;
      }
    }
  }
  const auto tensor_bytes = [&](const sim::TensorRef& t) {
    const sim::Op& p = g.ops[static_cast<std::size_t>(t.op)];
    return t.output >= 0 && static_cast<std::size_t>(t.output) < p.outputs.size()
               ? static_cast<double>(p.outputs[static_cast<std::size_t>(t.output)].bytes.v)
               : 0.0;
  };
  // Op edges: bytes per (producer, consumer), each distinct tensor once.
  dag.op_pred.assign(static_cast<std::size_t>(n_ops), {});
  dag.op_succ.assign(static_cast<std::size_t>(n_ops), {});
  std::vector<std::tuple<int, int, int>> uses;  // (producer op, output, consumer group)
  std::vector<std::pair<int, int>> control;     // (producer group, consumer group)
  for (int op = 0; op < n_ops; ++op) {
    const sim::Op& o = g.ops[static_cast<std::size_t>(op)];
    std::vector<sim::TensorRef> ins = o.inputs;
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    std::map<int, double> by_producer;
    for (const sim::TensorRef& in : ins) by_producer[in.op] += tensor_bytes(in);
    for (const sim::OpId c : o.control_inputs) by_producer.try_emplace(c, 0.0);
    for (const auto& [p, b] : by_producer) {
      dag.op_pred[static_cast<std::size_t>(op)].push_back({p, b});
      dag.op_succ[static_cast<std::size_t>(p)].push_back({op, b});
    }
    const int to = dag.group_of_op[static_cast<std::size_t>(op)];
    for (const sim::TensorRef& in : ins)
      if (dag.group_of_op[static_cast<std::size_t>(in.op)] != to)
        uses.emplace_back(in.op, in.output, to);
    for (const sim::OpId c : o.control_inputs)
      if (dag.group_of_op[static_cast<std::size_t>(c)] != to)
        control.emplace_back(dag.group_of_op[static_cast<std::size_t>(c)], to);
  }
  for (auto& s : dag.op_succ)
    std::sort(s.begin(), s.end(), [](const OpEdge& a, const OpEdge& b) { return a.op < b.op; });
  // Group edges: a tensor is copied once per consumer device, so once per consumer group.
  std::sort(uses.begin(), uses.end());
  uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
  dag.external_inputs.assign(n, {});
  std::map<std::pair<int, int>, double> edge_bytes;
  for (const auto& [prod, out, to] : uses) {
    const double b = tensor_bytes({prod, out});
    edge_bytes[{dag.group_of_op[static_cast<std::size_t>(prod)], to}] += b;
    dag.external_inputs[static_cast<std::size_t>(to)].push_back({prod, b});
  }
  for (const auto& e : control) edge_bytes.try_emplace(e, 0.0);
  dag.succ.assign(n, {});
  dag.pred.assign(n, {});
  for (const auto& [e, b] : edge_bytes) {
    dag.succ[static_cast<std::size_t>(e.first)].push_back({e.second, b});
    dag.pred[static_cast<std::size_t>(e.second)].push_back({e.first, b});
  }
  for (auto& p : dag.pred)
    std::sort(p.begin(), p.end(),
              [](const GroupEdge& a, const GroupEdge& b) { return a.group < b.group; });
  return dag;
}

OpCosts op_costs(const sim::Graph& g, const sim::Cluster& c, const sim::KernelCostModel& km) {
  const int nd = c.num_devices();
  OpCosts out;
  out.time_s.assign(static_cast<std::size_t>(g.num_ops()),
                    std::vector<double>(static_cast<std::size_t>(nd), 0.0));
  // Devices of one catalog model have the same op times; compute them once per model.
  std::map<std::string, int> first_of_model;
  for (int d = 0; d < nd; ++d) {
    const sim::Device& dev = c.devices[static_cast<std::size_t>(d)];
    if (dev.spec.model != "custom" && !dev.spec.model.empty()) {
      const std::string key = to_string(dev.spec.kind) + "/" + dev.spec.model + "/" +
                              std::to_string(dev.spec.launch_overhead.ns);
      const auto [it, inserted] = first_of_model.emplace(key, d);
      if (!inserted) {
        for (auto& row : out.time_s)
          row[static_cast<std::size_t>(d)] = row[static_cast<std::size_t>(it->second)];
        continue;
      }
    }
    const double launch = dev.spec.launch_overhead.seconds();
    for (int op = 0; op < g.num_ops(); ++op)
      out.time_s[static_cast<std::size_t>(op)][static_cast<std::size_t>(d)] =
          km.op_time(g.ops[static_cast<std::size_t>(op)], dev).seconds() + launch;
  }
  return out;
}

std::vector<std::vector<double>> group_times(const GroupDag& dag, const OpCosts& costs) {
  std::vector<std::vector<double>> out(static_cast<std::size_t>(dag.size()));
  for (int gi = 0; gi < dag.size(); ++gi) {
    auto& row = out[static_cast<std::size_t>(gi)];
    for (const sim::OpId op : dag.ops[static_cast<std::size_t>(gi)]) {
      const auto& t = costs.time_s[static_cast<std::size_t>(op)];
      if (row.empty()) row.assign(t.size(), 0.0);
      for (std::size_t d = 0; d < t.size(); ++d) row[d] += t[d];
    }
  }
  return out;
}

double comm_time_s(const sim::Cluster& c, sim::DeviceId a, sim::DeviceId b, double bytes) {
  if (a == b) return 0.0;
  const sim::Route& r = c.route(a, b);
  if (r.empty()) return 1e6;
  double t = 0.0;
  for (const sim::RouteSegment& s : r.segments) {
    t += s.latency.seconds();
    if (bytes > 0 && s.bottleneck.bytes_per_s > 0) t += bytes / s.bottleneck.bytes_per_s;
  }
  return t;
}

std::vector<sim::DeviceId> allowed_devices(const GroupDag& dag, int group, const sim::Cluster& c) {
  std::vector<sim::DeviceId> out;
  const auto& k = dag.kind[static_cast<std::size_t>(group)];
  for (int d = 0; d < c.num_devices(); ++d)
    if (!k || c.devices[static_cast<std::size_t>(d)].spec.kind == *k) out.push_back(d);
  return out;
}

sim::DeviceId fastest_gpu(const sim::Cluster& c) {
  sim::DeviceId best = -1;
  double best_peak = -1.0;
  for (const sim::DeviceId d : c.gpus()) {
    const double peak = c.devices[static_cast<std::size_t>(d)].spec.peak_for(sim::Dtype::F32).per_s;
    if (peak > best_peak) {
      best_peak = peak;
      best = d;
    }
  }
  return best;
}

sim::DeviceId host_for(const sim::Cluster& c, sim::DeviceId gpu) {
  if (gpu >= 0) {
    const sim::DeviceId h = c.devices[static_cast<std::size_t>(gpu)].host;
    if (h >= 0 && c.devices[static_cast<std::size_t>(h)].spec.kind == sim::DeviceKind::Cpu)
      return h;
  }
  const auto cpus = c.cpus();
  return cpus.empty() ? -1 : cpus.front();
}

double group_memory(const GroupDag& dag, int group, sim::DeviceId d,
                    const std::vector<sim::DeviceId>& device_of_group, double activation_share) {
  const auto gi = static_cast<std::size_t>(group);
  double activations = dag.output_bytes[gi];
  for (const OpEdge& e : dag.external_inputs[gi])
    if (device_of_group[static_cast<std::size_t>(
            dag.group_of_op[static_cast<std::size_t>(e.op)])] != d)
      activations += e.bytes;
  return dag.persistent_bytes[gi] + activation_share * activations;
}

}  // namespace placesim::policy

// expand_collectives(): a graph's collective rank ops, once placed, as ops the engine runs.
#include "sim/collective_expand.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "sim/collective.hpp"
#include "sim/error.hpp"
#include "sim/network.hpp"

namespace placesim::sim {

namespace {

// The call's routes and the rate of each on the idle fabric, as the engine's network shares it
// (all of the call's flows at once, no other traffic).
struct Footprint {
  std::vector<std::vector<Hop>> routes;
  std::vector<double> rates;  // bytes/s
};

Footprint footprint(const Cluster& c, const CollectiveCall& call,
                    const std::vector<DeviceId>& ranks) {
  Footprint f;
  f.routes = collective_routes(c, call, ranks);
  FlowNetwork net(c);
  for (std::size_t k = 0; k < f.routes.size(); ++k)
    net.start(0, f.routes[k], 1.0, static_cast<std::int32_t>(k));
  for (std::size_t k = 0; k < f.routes.size(); ++k)
    f.rates.push_back(net.rate_of_tag(static_cast<std::int32_t>(k)));
  return f;
}

// Flows of the same algorithm family over the same ranks cross the same routes.
int route_family(CollectiveKind k) {
  return k == CollectiveKind::AllToAll ? 1 : k == CollectiveKind::SendRecv ? 2 : 0;
}

// NCCL runs the calls of one communicator in order, one at a time, on its stream: on every GPU a
// call's kernel starts only after the previous call's kernel of that communicator has ended
// (ProcessGroupNCCL enqueues every collective of a process group on the group's one NCCL stream).
// A process group here is the set of GPUs a call's ranks are placed on. Calls are ordered as the
// ranks issue them, by their first rank op in a topological order of the expanded graph; each
// rank op of a call gets a control edge from the same GPU's rank op of the group's previous call,
// only where that edge runs forward in the order (so it can never close a cycle; ranks that
// disagree on the order would hang NCCL, and are left to overlap here).
void serialise_process_groups(ExpandedGraph& x, const Placement& p, const std::string& origin) {
  if (x.calls.size() < 2) return;
  x.graph.finalize(origin);
  std::vector<std::int64_t> pos(x.graph.ops.size(), 0);
  for (std::size_t i = 0; i < x.graph.topo_order.size(); ++i)
    pos[x.graph.topo_order[i]] = static_cast<std::int64_t>(i);
  std::map<std::vector<DeviceId>, std::vector<std::pair<std::int64_t, std::size_t>>> groups;
  for (std::size_t c = 0; c < x.calls.size(); ++c) {
    std::vector<DeviceId> devs;
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (OpId o : x.calls[c].ops) {
      devs.push_back(p.device_of[o]);
      first = std::min(first, pos[o]);
    }
    std::sort(devs.begin(), devs.end());
    groups[devs].emplace_back(first, c);
  }
  for (auto& [devs, calls] : groups) {
    std::sort(calls.begin(), calls.end());
    for (std::size_t i = 1; i < calls.size(); ++i) {
      std::map<DeviceId, OpId> prev;  // the previous call's rank op on each GPU
      for (OpId q : x.calls[calls[i - 1].second].ops) prev.emplace(p.device_of[q], q);
      for (OpId o : x.calls[calls[i].second].ops) {
        const OpId q = prev.at(p.device_of[o]);  // same GPU set: every GPU has one
        std::vector<OpId>& ctl = x.graph.ops[o].control_inputs;
        if (pos[q] < pos[o] && std::find(ctl.begin(), ctl.end(), q) == ctl.end()) ctl.push_back(q);
      }
    }
  }
}

}  // namespace

double beside_call_stretch(const Op& op, const DeviceSpec& s, int ctas, double hbm_bytes_per_s) {
  const double peak = s.peak_for(op.dtype).per_s, bw = s.memory_bandwidth.bytes_per_s;
  if (!(peak > 0) || !(bw > 0) || s.sm_count <= 0) return 1.0;
  const double tc = op.flops.v / peak;
  const double tm = static_cast<double>(op.bytes_read.v + op.bytes_written.v) / bw;
  const double t = std::max(tc, tm);
  if (!(t > 0)) return 1.0;
  const int sms = s.sm_count, held = std::clamp(ctas, 0, sms - 1);
  const double sm_left = static_cast<double>(sms - held) / sms;
  const double bw_left = std::max(bw - std::max(0.0, hbm_bytes_per_s), bw / 2) / bw;
  return std::max(tc / sm_left, tm / bw_left) / t;
}

bool has_collectives(const Graph& g) {
  return std::any_of(g.ops.begin(), g.ops.end(),
                     [](const Op& o) { return o.collective.has_value(); });
}

ExpandedGraph expand_collectives(const Cluster& cluster, const Graph& g, const Placement& p,
                                 const std::string& origin) {
  ExpandedGraph x{cluster, g};
  // The placement is checked against the expanded graph (same ops) by the caller; only what
  // indexing here needs is checked first.
  if (p.device_of.size() != g.ops.size())
    throw InputError("<placement>", "",
                     "one device per op (" + std::to_string(g.ops.size()) + " ops), got " +
                         std::to_string(p.device_of.size()));
  for (std::size_t o = 0; o < g.ops.size(); ++o)
    if (p.device_of[o] < 0 || p.device_of[o] >= cluster.num_devices())
      throw InputError("<placement>", "op \"" + g.ops[o].name + "\"",
                       "a device index in [0, " + std::to_string(cluster.num_devices()) +
                           "), got " + std::to_string(p.device_of[o]));
  std::map<std::string, std::vector<OpId>> calls;  // id -> rank ops, in op id order
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (!g.ops[o].collective) continue;
    if (g.ops[o].collective->id.empty())
      throw InputError(origin,
                       "ops[" + std::to_string(o) + "] (\"" + g.ops[o].name + "\").collective.id",
                       "a call id shared by the ranks of one call, got none");
    calls[g.ops[o].collective->id].push_back(o);
  }
  std::set<DeviceId> nccl_devices;
  std::map<std::pair<int, std::vector<DeviceId>>, Footprint> footprints;
  x.call_of_op.assign(g.ops.size(), -1);
  for (const auto& [id, ops] : calls) {
    const CollectiveCall& first = *g.ops[ops.front()].collective;
    std::vector<DeviceId> ranks;
    for (OpId o : ops) {
      const CollectiveCall& c = *g.ops[o].collective;
      const std::string where =
          "ops[" + std::to_string(o) + "] (\"" + g.ops[o].name + "\").collective";
      if (c.kind != first.kind || c.bytes != first.bytes || c.algo != first.algo ||
          c.proto != first.proto || c.root != first.root)
        throw InputError(origin, where,
                         "the kind, bytes, root, algo and proto of the other ranks of call \"" +
                             id + "\" (op " + g.ops[ops.front()].name + ")");
      const DeviceId d = p.device_of[o];
      if (cluster.devices[d].spec.kind != DeviceKind::Gpu)
        throw InputError(origin, where, "a rank placed on a GPU, got " + cluster.devices[d].name);
      if (std::find(ranks.begin(), ranks.end(), d) != ranks.end())
        throw InputError(
            origin, where,
            "one rank per GPU in call \"" + id + "\", got two on " + cluster.devices[d].name);
      ranks.push_back(d);
    }
    if ((first.kind == CollectiveKind::Broadcast || first.kind == CollectiveKind::Reduce) &&
        first.root >= static_cast<int>(ranks.size()))
      throw InputError(origin, "ops[" + std::to_string(ops.front()) + "].collective.root",
                       "a rank index below " + std::to_string(ranks.size()) + ", got " +
                           std::to_string(first.root));
    const CollectivePrediction pred = predict_collective(cluster, first, ranks);
    auto fp = footprints.find({route_family(first.kind), ranks});
    if (fp == footprints.end())
      fp =
          footprints
              .emplace(std::pair{route_family(first.kind), ranks}, footprint(cluster, first, ranks))
              .first;
    ExpandedCall run{ops, pred.fixed, {}, {}};
    const double phase_s = static_cast<double>(pred.time.ns - pred.fixed.ns) * 1e-9;
    run.ctas = pred.ctas;
    if (phase_s > 0)
      run.hbm_bytes_per_s = kNcclHbmBytesPerBusByte *
                            bus_factor(first.kind, static_cast<int>(ranks.size())) *
                            static_cast<double>(first.bytes.v) / phase_s;
    for (std::size_t k = 0; k < fp->second.routes.size() && phase_s > 0; ++k) {
      const double r = fp->second.rates[k];
      if (!(r > 0) || r == kUnbounded) continue;  // a route without links moves nothing
      run.routes.push_back(fp->second.routes[k]);
      run.bytes.push_back(r * phase_s);
    }
    if (run.routes.empty()) run.fixed = pred.time;  // nothing to share: the call is its time
    for (OpId o : ops) x.call_of_op[o] = static_cast<std::int32_t>(x.calls.size());
    x.calls.push_back(std::move(run));
    // Every rank waits for the inputs of every rank (NCCL's kernels progress together).
    std::set<OpId> ready;
    for (OpId o : ops) {
      for (const TensorRef& t : g.ops[o].inputs) ready.insert(t.op);
      for (OpId c : g.ops[o].control_inputs) ready.insert(c);
    }
    for (OpId o : ops) {
      Op& op = x.graph.ops[o];
      op.measured = pred.time;
      std::set<OpId> have(op.control_inputs.begin(), op.control_inputs.end());
      for (const TensorRef& t : op.inputs) have.insert(t.op);
      for (OpId r : ready)
        if (r != o && !have.contains(r)) op.control_inputs.push_back(r);
      nccl_devices.insert(p.device_of[o]);
    }
  }
  serialise_process_groups(x, p, origin);
  // One more stream per GPU that runs collectives: NCCL's communication stream.
  for (DeviceId d : nccl_devices) {
    DeviceSpec& s = x.cluster.devices[d].spec;
    const int orig = std::max(1, s.compute_streams);
    s.compute_streams = orig + 1;
    for (OpId o = 0; o < g.num_ops(); ++o) {
      if (p.device_of[o] != d) continue;
      Op& op = x.graph.ops[o];
      // Rank ops take no stream slot: the engine runs each call as it progresses, beside the
      // GPU's kernels and the other calls (sim/simulate.cpp), on the NCCL stream `orig`.
      if (op.collective)
        op.stream.reset();
      else if (orig == 1 && !op.stream)
        op.stream = 0;
    }
  }
  x.graph.finalize(origin);
  return x;
}

}  // namespace placesim::sim

// Pipeline stages of a training graph (models/parallel.hpp, plan_stages): contiguous layer blocks
// per stage, balanced by compute with the linear-partition dynamic programme.
#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/parallel.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

// "gpt/h3/attn" -> "gpt/h3"; "/transformer/h.3/mlp/c_fc" -> "/transformer/h.3"; a path without a
// numbered component is its own block ("gpt/embedding", "gpt/head").
std::string block_of(const std::string& layer) {
  std::size_t begin = 0;
  while (begin <= layer.size()) {
    std::size_t end = layer.find('/', begin);
    if (end == std::string::npos) end = layer.size();
    for (std::size_t i = begin; i < end; ++i)
      if (std::isdigit(static_cast<unsigned char>(layer[i]))) return layer.substr(0, end);
    begin = end + 1;
  }
  return layer;
}

// Splits costs[0..n) into k contiguous non-empty parts minimising the largest part's sum;
// returns the part of each item.
std::vector<int> linear_partition(const std::vector<double>& cost, int k) {
  const int n = static_cast<int>(cost.size());
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[j][i]: the smallest largest part of items [0, i) in j parts; cut[j][i]: where part j
  // starts.
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(k + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0.0;
  for (int j = 1; j <= k; ++j)
    for (int i = j; i <= n; ++i)
      for (int s = j - 1; s < i; ++s) {
        const double v = std::max(best[j - 1][s], prefix[i] - prefix[s]);
        if (v < best[j][i]) best[j][i] = v, cut[j][i] = s;  // first (lowest) cut on ties
      }
  std::vector<int> part(n, 0);
  int i = n;
  for (int j = k; j >= 1; --j) {
    const int s = cut[j][i];
    for (int x = s; x < i; ++x) part[x] = j - 1;
    i = s;
  }
  return part;
}

}  // namespace

StagePlan plan_stages(const sim::Graph& g, int pp, const std::string& origin) {
  const int n = g.num_ops();
  StagePlan plan;
  plan.stage.assign(n, -1);
  // Forward ops' blocks in the order the forward pass reaches them.
  std::map<std::string, int> block_index;
  std::vector<int> block_of_op(n, -1);
  for (sim::OpId o : g.topo_order) {
    // Constants (an ONNX export's Constant nodes) join their readers' stage, below.
    if (g.ops[o].phase != sim::Phase::Forward || g.ops[o].inputs.empty()) continue;
    const std::string b = block_of(g.ops[o].layer);
    const auto [it, added] = block_index.emplace(b, static_cast<int>(block_index.size()));
    block_of_op[o] = it->second;
  }
  const int blocks = static_cast<int>(block_index.size());
  if (blocks < pp)
    throw sim::InputError(origin, "pp",
                          "at most the " + std::to_string(blocks) + " layer blocks of graph " +
                              g.name + ", got " + std::to_string(pp));
  // A block's cost: its forward ops and their gradient ops (same co-location group).
  std::map<std::string, int> fwd_of_group;
  for (sim::OpId o = 0; o < n; ++o)
    if (block_of_op[o] >= 0) fwd_of_group.emplace(g.group_of(o), o);
  std::vector<int> owner(n, -1);  // the forward op whose stage an op takes
  for (sim::OpId o = 0; o < n; ++o) {
    if (block_of_op[o] >= 0) {
      owner[o] = o;
    } else if (g.ops[o].phase == sim::Phase::Backward) {
      const auto it = fwd_of_group.find(g.group_of(o));
      if (it != fwd_of_group.end()) owner[o] = it->second;
    }
  }
  // Backward ops outside any forward op's group (and collectives added after their producer):
  // with the producer of their first input, in topological order.
  for (sim::OpId o : g.topo_order)
    if (owner[o] < 0 && g.ops[o].phase == sim::Phase::Backward && !g.ops[o].inputs.empty())
      owner[o] = owner[g.ops[o].inputs.front().op];
  // Ops still without one (a backward op fed by nothing): with their first consumer's.
  const std::vector<sim::OpId>& topo = g.topo_order;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it)
    if (owner[*it] < 0 && g.ops[*it].phase == sim::Phase::Backward)
      for (sim::OpId c : g.consumers_of[*it])
        if (owner[c] >= 0) {
          owner[*it] = owner[c];
          break;
        }
  std::vector<double> cost(blocks, 0.0);
  for (sim::OpId o = 0; o < n; ++o)
    if (owner[o] >= 0) cost[block_of_op[owner[o]]] += g.ops[o].flops.v;
  const std::vector<int> part = linear_partition(cost, pp);
  plan.blocks_per_stage.assign(pp, 0);
  plan.flops_per_stage.assign(pp, 0.0);
  for (int b = 0; b < blocks; ++b) {
    ++plan.blocks_per_stage[part[b]];
    plan.flops_per_stage[part[b]] += cost[b];
  }
  for (sim::OpId o = 0; o < n; ++o)
    if (owner[o] >= 0) plan.stage[o] = part[block_of_op[owner[o]]];
  for (sim::OpId o = 0; o < n; ++o) {
    if (g.ops[o].phase != sim::Phase::Forward || !g.ops[o].inputs.empty()) continue;
    for (sim::OpId c : g.consumers_of[o])
      if (plan.stage[c] >= 0 && (plan.stage[o] < 0 || plan.stage[c] < plan.stage[o]))
        plan.stage[o] = plan.stage[c];
    if (plan.stage[o] < 0) plan.stage[o] = 0;
  }
  // Updates: with the producer of their gradient.
  for (sim::OpId o = 0; o < n; ++o) {
    const sim::Op& op = g.ops[o];
    if (op.phase != sim::Phase::Update) continue;
    for (const sim::TensorRef& t : op.inputs)
      if (plan.stage[t.op] >= 0) plan.stage[o] = plan.stage[t.op];
    if (plan.stage[o] < 0)
      throw sim::InputError(origin, op.name, "an update op fed by a backward op, got none");
  }
  // The forward pass must flow from earlier to later stages only.
  for (sim::OpId o = 0; o < n; ++o) {
    if (g.ops[o].phase != sim::Phase::Forward) continue;
    for (const sim::TensorRef& t : g.ops[o].inputs)
      if (plan.stage[t.op] > plan.stage[o])
        throw sim::InputError(origin, "pp",
                              "a graph whose layers form a chain (op " + g.ops[o].name + " reads " +
                                  g.ops[t.op].name + " of a later stage), got " + g.name);
  }
  return plan;
}

}  // namespace placesim::models

namespace placesim::models {

sim::Graph recompute_layers(const sim::Graph& g, const std::string& origin) {
  const int n = g.num_ops();
  sim::Graph out = g;
  // Forward ops of each numbered block (a transformer layer), in graph order.
  std::map<std::string, std::vector<sim::OpId>> blocks;
  std::map<std::string, std::string> block_of_group;
  for (sim::OpId o = 0; o < n; ++o) {
    if (g.ops[o].phase != sim::Phase::Forward) continue;
    const std::string b = block_of(g.ops[o].layer);
    if (b == g.ops[o].layer && b.find_first_of("0123456789") == std::string::npos) continue;
    blocks[b].push_back(o);
    block_of_group.emplace(g.group_of(o), b);
  }
  for (const auto& [b, fwd] : blocks) {
    std::map<sim::OpId, sim::OpId> copy;  // forward op -> its recomputation
    for (sim::OpId f : fwd) {
      sim::Op c = g.ops[f];
      c.name = "recompute/" + c.name;
      c.phase = sim::Phase::Backward;
      c.persistent = sim::Bytes{0};
      c.control_inputs.clear();
      if (c.collective) c.collective->id += "/recompute";
      for (sim::TensorRef& t : c.inputs)
        if (const auto it = copy.find(t.op); it != copy.end()) t.op = it->second;
      copy[f] = out.add_op(std::move(c));
    }
    // The block's backward ops read the recomputed tensors; the recomputation starts when the
    // gradient reaches the block (its backward ops' inputs made by backward ops of later blocks).
    std::set<sim::OpId> incoming;
    for (sim::OpId o = 0; o < n; ++o) {
      const sim::Op& op = g.ops[o];
      if (op.phase != sim::Phase::Backward) continue;
      const auto own = block_of_group.find(g.group_of(o));
      if (own == block_of_group.end() || own->second != b) continue;
      for (sim::TensorRef& t : out.ops[o].inputs)
        if (const auto it = copy.find(t.op); it != copy.end()) t.op = it->second;
      for (const sim::TensorRef& t : op.inputs) {
        if (g.ops[t.op].phase != sim::Phase::Backward) continue;
        const auto from = block_of_group.find(g.group_of(t.op));
        if (from == block_of_group.end() || from->second != b) incoming.insert(t.op);
      }
    }
    for (const auto& [f, c] : copy) {
      bool entry = true;
      for (const sim::TensorRef& t : out.ops[c].inputs) entry = entry && !copy.contains(t.op);
      (void)f;
      if (!entry) continue;
      for (sim::OpId i : incoming) out.ops[c].control_inputs.push_back(i);
    }
  }
  out.finalize(origin);
  return out;
}

}  // namespace placesim::models

// Grouping in four steps, each a union of the previous step's groups:
//  1. the graph's own co-location groups (op + gradient ops, variable + update op);
//  2. strongly connected components of the group graph merged, so it is a DAG;
//  3. tiny groups merged into a neighbour: a source (a variable, an input) into its earliest
//     consumer group, a group with a single producer group into that producer;
//  4. contiguous runs of a topological order merged down to max_groups, balanced by work.
// Every merge in 3 and 4 is one that cannot create a cycle: contracting a node with its unique
// predecessor, a source with its topologically first successor, or a contiguous run of a
// topological order.
//
// The group DAG is the quotient of the *structural* edges: every edge except those into a
// backward or update op. With an op colocated with its gradient, each forward edge A -> B comes
// back as a backward edge B -> A, so the quotient of all edges of a training graph is cyclic by
// construction (the paper's groups are not a DAG either); the forward data flow, which is what
// orders the groups for the policy, is.
#include "models/grouping.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <string_view>
#include <tuple>
#include <utility>

#include "sim/error.hpp"

namespace placesim::models {

namespace {

bool structural(const sim::Op& consumer) {
  return consumer.phase != sim::Phase::Backward && consumer.phase != sim::Phase::Update;
}

struct UnionFind {
  std::vector<std::int32_t> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::int32_t find(std::int32_t x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      auto& p = parent[static_cast<std::size_t>(x)];
      p = parent[static_cast<std::size_t>(p)];
      x = p;
    }
    return x;
  }
  /// Makes `into` the representative.
  void merge(std::int32_t x, std::int32_t into) {
    x = find(x);
    into = find(into);
    if (x != into) parent[static_cast<std::size_t>(x)] = into;
  }
};

// Quotient adjacency (sorted, unique, no self edges) of op-level structural edges under `label`.
struct Quotient {
  std::vector<std::vector<std::int32_t>> succ, pred;
};

Quotient quotient(const sim::Graph& g, const std::vector<std::int32_t>& label, std::int32_t n) {
  Quotient q;
  q.succ.resize(static_cast<std::size_t>(n));
  q.pred.resize(static_cast<std::size_t>(n));
  for (sim::OpId v = 0; v < g.num_ops(); ++v) {
    const sim::Op& op = g.ops[static_cast<std::size_t>(v)];
    if (!structural(op)) continue;
    const std::int32_t lv = label[static_cast<std::size_t>(v)];
    auto edge = [&](sim::OpId u) {
      const std::int32_t lu = label[static_cast<std::size_t>(u)];
      if (lu != lv) {
        q.succ[static_cast<std::size_t>(lu)].push_back(lv);
        q.pred[static_cast<std::size_t>(lv)].push_back(lu);
      }
    };
    for (const auto& in : op.inputs) edge(in.op);
    for (const sim::OpId c : op.control_inputs) edge(c);
  }
  for (auto* adj : {&q.succ, &q.pred}) {
    for (auto& l : *adj) {
      std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
    }
  }
  return q;
}

// Tarjan's strongly connected components, iteratively. Returns the component of each node.
std::vector<std::int32_t> scc(const std::vector<std::vector<std::int32_t>>& succ,
                              std::int32_t& count) {
  const auto n = static_cast<std::int32_t>(succ.size());
  std::vector<std::int32_t> index(static_cast<std::size_t>(n), -1),
      low(static_cast<std::size_t>(n), 0), comp(static_cast<std::size_t>(n), -1);
  std::vector<char> on_stack(static_cast<std::size_t>(n), 0);
  std::vector<std::int32_t> stack;
  std::vector<std::pair<std::int32_t, std::size_t>> call;
  std::int32_t next = 0;
  count = 0;
  for (std::int32_t root = 0; root < n; ++root) {
    if (index[static_cast<std::size_t>(root)] >= 0) continue;
    call.push_back({root, 0});
    while (!call.empty()) {
      auto& [v, i] = call.back();
      const auto vs = static_cast<std::size_t>(v);
      if (i == 0 && index[vs] < 0) {
        index[vs] = low[vs] = next++;
        stack.push_back(v);
        on_stack[vs] = 1;
      }
      if (i < succ[vs].size()) {
        const std::int32_t w = succ[vs][i++];
        const auto ws = static_cast<std::size_t>(w);
        if (index[ws] < 0) {
          call.push_back({w, 0});
        } else if (on_stack[ws]) {
          low[vs] = std::min(low[vs], index[ws]);
        }
        continue;
      }
      if (low[vs] == index[vs]) {
        std::int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[static_cast<std::size_t>(w)] = 0;
          comp[static_cast<std::size_t>(w)] = count;
        } while (w != v);
        ++count;
      }
      const std::int32_t done = v;
      call.pop_back();
      if (!call.empty()) {
        const auto ps = static_cast<std::size_t>(call.back().first);
        low[ps] = std::min(low[ps], low[static_cast<std::size_t>(done)]);
      }
    }
  }
  return comp;
}

// Kahn's algorithm, smallest key first (deterministic). Returns the order.
std::vector<std::int32_t> topo(const Quotient& q, const std::vector<std::int64_t>& key) {
  const std::size_t n = q.succ.size();
  std::vector<std::int32_t> indeg(n, 0);
  for (const auto& l : q.succ) {
    for (const std::int32_t w : l) ++indeg[static_cast<std::size_t>(w)];
  }
  using Item = std::pair<std::int64_t, std::int32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (std::size_t v = 0; v < n; ++v) {
    if (indeg[v] == 0) ready.push({key[v], static_cast<std::int32_t>(v)});
  }
  std::vector<std::int32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const std::int32_t v = ready.top().second;
    ready.pop();
    order.push_back(v);
    for (const std::int32_t w : q.succ[static_cast<std::size_t>(v)]) {
      if (--indeg[static_cast<std::size_t>(w)] == 0)
        ready.push({key[static_cast<std::size_t>(w)], w});
    }
  }
  assert(order.size() == n);
  return order;
}

// Relabels ops by union-find representatives, numbering groups by their first op in the graph's
// topological order. Returns the number of groups.
std::int32_t relabel(const sim::Graph& g, UnionFind& uf, std::vector<std::int32_t>& label) {
  std::map<std::int32_t, std::int32_t> number;
  std::vector<std::int32_t> out(label.size());
  for (const sim::OpId v : g.topo_order) {
    const std::int32_t r = uf.find(label[static_cast<std::size_t>(v)]);
    const auto [it, fresh] = number.emplace(r, static_cast<std::int32_t>(number.size()));
    out[static_cast<std::size_t>(v)] = it->second;
  }
  label = std::move(out);
  return static_cast<std::int32_t>(number.size());
}

// The Grouping of ops labelled 0..m-1 (labels in sequence order): adjacency and features.
Grouping finish_grouping(const sim::Graph& g, std::vector<std::int32_t> label, std::int32_t m) {
  const int n = g.num_ops();
  Grouping gr;
  const Quotient q = quotient(g, label, m);
  gr.group_of_op = label;
  gr.succ = q.succ;
  gr.pred = q.pred;
  gr.ops_of_group.resize(static_cast<std::size_t>(m));
  for (int v = 0; v < n; ++v)
    gr.ops_of_group[static_cast<std::size_t>(label[static_cast<std::size_t>(v)])].push_back(v);

  std::map<std::string, std::int32_t> vocab;
  for (const auto& op : g.ops) vocab.emplace(op.type, 0);
  for (auto& [type, index] : vocab) {
    index = static_cast<std::int32_t>(gr.type_vocab.size());
    gr.type_vocab.push_back(type);
  }
  const auto ms = static_cast<std::size_t>(m);
  gr.type_counts.assign(ms, std::vector<float>(vocab.size(), 0.0f));
  gr.output_bytes.assign(ms, 0.0);
  gr.flops.assign(ms, 0.0);
  gr.persistent_bytes.assign(ms, 0.0);
  gr.constraint.assign(ms, std::nullopt);
  gr.names.resize(ms);
  for (std::size_t k = 0; k < ms; ++k) {
    const auto& ops = gr.ops_of_group[k];
    // Named after its heaviest co-location group, so a reader recognises it.
    sim::OpId heavy = ops.front();
    for (const sim::OpId v : ops) {
      const auto& op = g.ops[static_cast<std::size_t>(v)];
      gr.type_counts[k][static_cast<std::size_t>(vocab.at(op.type))] += 1.0f;
      for (const auto& t : op.outputs) gr.output_bytes[k] += static_cast<double>(t.bytes.v);
      gr.flops[k] += op.flops.v;
      gr.persistent_bytes[k] += static_cast<double>(op.persistent.v);
      if (op.device_kind && !gr.constraint[k]) gr.constraint[k] = op.device_kind;
      if (op.flops.v > g.ops[static_cast<std::size_t>(heavy)].flops.v) heavy = v;
    }
    // Appended piecewise: GCC 12 flags the chained operator+ temporaries with a false -Wrestrict.
    std::string name = "g";
    name += std::to_string(k);
    name += ':';
    name += g.group_of(heavy);
    gr.names[k] = std::move(name);
  }
  return gr;
}

}  // namespace

sim::Placement Grouping::expand(const std::vector<sim::DeviceId>& device_of_group) const {
  if (device_of_group.size() != names.size()) {
    throw sim::InputError("<grouping>", "devices",
                          std::to_string(names.size()) + " devices (one per group), got " +
                              std::to_string(device_of_group.size()));
  }
  sim::Placement p;
  p.device_of.reserve(group_of_op.size());
  for (const std::int32_t grp : group_of_op)
    p.device_of.push_back(device_of_group[static_cast<std::size_t>(grp)]);
  return p;
}

namespace {

// The group label of every op while group_graph merges groups stage by stage.
class GroupLabels {
 public:
  explicit GroupLabels(const sim::Graph& g)
      : g_(g), n_(g.num_ops()), topo_pos_(static_cast<std::size_t>(n_)) {
    for (int i = 0; i < n_; ++i)
      topo_pos_[static_cast<std::size_t>(g.topo_order[static_cast<std::size_t>(i)])] = i;
    for (const auto& op : g.ops) total_flops_ += op.flops.v;
  }

  // 1. Co-location groups.
  void colocate() {
    label_.assign(static_cast<std::size_t>(n_), 0);
    std::map<std::string_view, std::int32_t> colo;
    for (const sim::OpId v : g_.topo_order) {
      const auto [it, fresh] = colo.emplace(g_.group_of(v), m_);
      if (fresh) ++m_;
      label_[static_cast<std::size_t>(v)] = it->second;
    }
  }

  // 2. Strongly connected components of the structural quotient.
  void merge_cycles() {
    const Quotient q = quotient(g_, label_, m_);
    std::int32_t comps = 0;
    const auto comp = scc(q.succ, comps);
    if (comps < m_) {
      UnionFind uf(static_cast<std::size_t>(m_));
      std::vector<std::int32_t> first(static_cast<std::size_t>(comps), -1);
      for (std::int32_t v = 0; v < m_; ++v) {
        auto& f = first[static_cast<std::size_t>(comp[static_cast<std::size_t>(v)])];
        if (f < 0) f = v;
        uf.merge(v, f);
      }
      m_ = relabel(g_, uf, label_);
    }
  }

  // 3. Tiny groups into a neighbour.
  void merge_tiny(int max_groups) {
    const Quotient q = quotient(g_, label_, m_);
    const auto key = group_key();
    const auto w = weights();
    double total_w = 0;
    for (const double x : w) total_w += x;
    const double tiny = total_w / (8.0 * max_groups);
    std::vector<std::int32_t> order = topo(q, key);
    std::vector<std::int64_t> pos(static_cast<std::size_t>(m_));
    for (std::size_t i = 0; i < order.size(); ++i)
      pos[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
    UnionFind uf(static_cast<std::size_t>(m_));
    // Groups with no structural edge at all (e.g. a backward-only group) and sources join their
    // earliest successor; a source never becomes anyone's successor, so these merges stay valid.
    for (const std::int32_t v : order) {
      const auto vs = static_cast<std::size_t>(v);
      if (!q.pred[vs].empty() || w[vs] >= tiny || q.succ[vs].empty()) continue;
      const std::int32_t first =
          *std::min_element(q.succ[vs].begin(), q.succ[vs].end(), [&](auto a, auto b) {
            return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)];
          });
      uf.merge(v, first);
    }
    // Then single-producer tiny groups into their producer, in topological order.
    std::vector<double> merged_w = w;
    for (const std::int32_t v : order) {
      const auto vs = static_cast<std::size_t>(v);
      if (uf.find(v) != v || q.pred[vs].empty() || merged_w[vs] >= tiny) continue;
      std::int32_t only = -1;
      bool single = true;
      for (const std::int32_t p : q.pred[vs]) {
        const std::int32_t r = uf.find(p);
        if (only < 0) {
          only = r;
        } else if (r != only) {
          single = false;
          break;
        }
      }
      if (!single || only == v) continue;
      merged_w[static_cast<std::size_t>(only)] += merged_w[vs];
      uf.merge(v, only);
    }
    for (auto& l : label_) l = uf.find(l);
    m_ = relabel(g_, uf, label_);
  }

  // 4. Contiguous runs of a topological order, at most max_groups of them.
  void contiguous_runs(int max_groups) {
    const Quotient q = quotient(g_, label_, m_);
    const auto order = topo(q, group_key());
    const auto w = weights();
    double total_w = 0;
    for (const double x : w) total_w += x;
    const std::int32_t target = std::min<std::int32_t>(max_groups, m_);
    UnionFind uf(static_cast<std::size_t>(m_));
    std::int32_t run = 0, run_head = order.empty() ? 0 : order[0];
    double done = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::int32_t v = order[i];
      const auto left = static_cast<std::int32_t>(order.size() - i);
      // Cut when this run holds its share of the work, or when every remaining group must
      // become a run of its own to reach the target.
      const bool full = done >= total_w * (run + 1) / target;
      const bool must = left <= target - run - 1;
      if (i > 0 && run < target - 1 && (full || must)) {
        ++run;
        run_head = v;
      }
      uf.merge(v, run_head);
      done += w[static_cast<std::size_t>(v)];
    }
    for (auto& l : label_) l = uf.find(l);
    m_ = relabel(g_, uf, label_);
  }

  // Final groups, numbered in a topological order of their DAG.
  Grouping finish() {
    const Quotient q0 = quotient(g_, label_, m_);
    const auto order = topo(q0, group_key());
    std::vector<std::int32_t> rank(static_cast<std::size_t>(m_));
    for (std::size_t i = 0; i < order.size(); ++i)
      rank[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
    for (auto& l : label_) l = rank[static_cast<std::size_t>(l)];
    return finish_grouping(g_, std::move(label_), m_);
  }

 private:
  // Per group: position of its first op in the topological order.
  [[nodiscard]] std::vector<std::int64_t> group_key() const {
    std::vector<std::int64_t> key(static_cast<std::size_t>(m_),
                                  std::numeric_limits<std::int64_t>::max());
    for (int v = 0; v < n_; ++v) {
      auto& k = key[static_cast<std::size_t>(label_[static_cast<std::size_t>(v)])];
      k = std::min(k, topo_pos_[static_cast<std::size_t>(v)]);
    }
    return key;
  }
  // Per group: its work. Half ops, half FLOPs: a group of many launch-bound small ops is as real
  // as one big GEMM.
  [[nodiscard]] std::vector<double> weights() const {
    std::vector<double> w(static_cast<std::size_t>(m_), 0.0);
    for (int v = 0; v < n_; ++v) {
      const auto& op = g_.ops[static_cast<std::size_t>(v)];
      w[static_cast<std::size_t>(label_[static_cast<std::size_t>(v)])] +=
          1.0 + (total_flops_ > 0 ? op.flops.v / total_flops_ * n_ : 0.0);
    }
    return w;
  }

  const sim::Graph& g_;
  int n_;
  std::vector<std::int64_t> topo_pos_;
  double total_flops_ = 0;
  std::vector<std::int32_t> label_;
  std::int32_t m_ = 0;  // number of groups
};

}  // namespace

Grouping group_graph(const sim::Graph& g, int max_groups) {
  if (max_groups < 1) {
    throw sim::InputError("<grouping>", "max_groups",
                          "a positive number of groups, got " + std::to_string(max_groups));
  }
  if (static_cast<int>(g.topo_order.size()) != g.num_ops()) {
    throw sim::InputError("<grouping>", g.name, "a finalized graph");
  }
  GroupLabels labels(g);
  labels.colocate();
  labels.merge_cycles();
  labels.merge_tiny(max_groups);
  labels.contiguous_runs(max_groups);
  return labels.finish();
}

std::vector<sim::DeviceId> project_placement(const Grouping& gr, const sim::Placement& p,
                                             const sim::Cluster& cluster) {
  if (p.device_of.size() != gr.group_of_op.size())
    throw sim::InputError("<placement>", "ops",
                          std::to_string(gr.group_of_op.size()) +
                              " ops like the grouped graph, got " +
                              std::to_string(p.device_of.size()));
  const auto devices = static_cast<std::size_t>(cluster.num_devices());
  std::vector<sim::DeviceId> out(static_cast<std::size_t>(gr.size()), 0);
  for (std::size_t grp = 0; grp < out.size(); ++grp) {
    std::vector<std::int64_t> votes(devices, 0);
    for (const sim::OpId op : gr.ops_of_group[grp]) {
      const sim::DeviceId d = p.device_of[static_cast<std::size_t>(op)];
      if (d >= 0 && static_cast<std::size_t>(d) < devices) ++votes[static_cast<std::size_t>(d)];
    }
    const auto& kind = grp < gr.constraint.size() ? gr.constraint[grp] : std::nullopt;
    std::int64_t best = -1;
    for (std::size_t d = 0; d < devices; ++d) {
      if (kind && cluster.devices[d].spec.kind != *kind) continue;
      if (votes[d] > best) {
        best = votes[d];
        out[grp] = static_cast<sim::DeviceId>(d);
      }
    }
  }
  return out;
}

Grouping refine_grouping(const Grouping& gr, const sim::Graph& g,
                         const std::vector<std::int32_t>& part_of_op) {
  const int n = g.num_ops();
  if (static_cast<int>(part_of_op.size()) != n || static_cast<int>(gr.group_of_op.size()) != n)
    throw sim::InputError("<grouping>", "part_of_op",
                          std::to_string(n) + " part labels and a grouping of this graph, got " +
                              std::to_string(part_of_op.size()) + " labels for a grouping of " +
                              std::to_string(gr.group_of_op.size()) + " ops");
  std::vector<std::int64_t> position(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < g.topo_order.size(); ++i)
    position[static_cast<std::size_t>(g.topo_order[i])] = static_cast<std::int64_t>(i);
  // Pieces keep their group's place in the sequence; within a group, the piece whose first op
  // comes first in the topological order comes first.
  std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> first;
  for (int v = 0; v < n; ++v) {
    const auto key = std::make_pair(gr.group_of_op[static_cast<std::size_t>(v)],
                                    part_of_op[static_cast<std::size_t>(v)]);
    const auto [it, fresh] = first.emplace(key, position[static_cast<std::size_t>(v)]);
    if (!fresh) it->second = std::min(it->second, position[static_cast<std::size_t>(v)]);
  }
  std::vector<std::tuple<std::int32_t, std::int64_t, std::int32_t>> pieces;
  pieces.reserve(first.size());
  for (const auto& [key, pos] : first) pieces.emplace_back(key.first, pos, key.second);
  std::sort(pieces.begin(), pieces.end());
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> id;
  for (const auto& [grp, pos, part] : pieces)
    id.emplace(std::make_pair(grp, part), static_cast<std::int32_t>(id.size()));
  std::vector<std::int32_t> label(static_cast<std::size_t>(n));
  for (int v = 0; v < n; ++v)
    label[static_cast<std::size_t>(v)] = id.at(
        {gr.group_of_op[static_cast<std::size_t>(v)], part_of_op[static_cast<std::size_t>(v)]});
  return finish_grouping(g, std::move(label), static_cast<std::int32_t>(id.size()));
}

}  // namespace placesim::models

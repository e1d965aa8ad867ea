// Megatron-style tensor parallelism as a graph transform (models/parallel.hpp,
// shard_tensor_parallel). The pattern is found in the graph, not in names: a row-parallel linear
// is a weight matmul whose data input comes, through ops without weights (bias adds aside), from
// column-parallel weight matmuls; nothing in between is a normalisation, an embedding look-up or
// an input, and no tensor of the region is read outside it. In a transformer block these are the
// attention (QKV projection ... output projection) and the MLP (fc1, activation, fc2).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "models/parallel.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

// Tensors below this size are shapes, scalars and masks' metadata, not activations.
constexpr std::int64_t kSmallTensor = 1024;
constexpr std::size_t kMaxRegion = 512;

bool is_variable(const sim::Graph& g, sim::OpId o) {
  const sim::Op& op = g.ops[o];
  if (!op.inputs.empty() || op.phase != sim::Phase::Other) return false;
  if (op.type == "VariableV2") return true;
  for (sim::OpId c : g.consumers_of[o])
    if (g.ops[c].phase == sim::Phase::Update) return true;
  return false;
}

struct Linear {
  int weight = -1;      // input index of the weight
  int data = -1;        // input index of the activation
  sim::OpId var = -1;   // the weight variable
  sim::OpId view = -1;  // a transpose/reshape between the variable and the matmul (ONNX), or -1
};

// The 2-D variable a tensor is, directly or through a view (Transpose, Reshape: what an ONNX
// export puts between a Linear's weight and its MatMul); -1 otherwise. Sets `view`.
sim::OpId weight_of(const sim::Graph& g, const std::vector<char>& var, sim::TensorRef t,
                    sim::OpId* view) {
  *view = -1;
  auto two_d = [&](sim::TensorRef r) { return g.ops[r.op].outputs[r.output].shape.size() == 2; };
  if (var[t.op]) return two_d(t) ? t.op : -1;
  const sim::Op& op = g.ops[t.op];
  if (op.phase != sim::Phase::Forward || op.flops.v > 0 ||
      (op.type != "Transpose" && op.type != "Reshape" && op.type != "Identity"))
    return -1;
  sim::OpId found = -1;
  for (const sim::TensorRef& in : op.inputs) {
    if (g.ops[in.op].outputs[in.output].bytes.v < kSmallTensor) continue;  // a shape
    if (found >= 0 || !var[in.op] || !two_d(in)) return -1;
    found = in.op;
  }
  if (found >= 0) *view = t.op;
  return found;
}

// A forward weight matmul: a matmul-kind op (MatMul, Gemm) whose first two inputs are one 2-D
// weight (or its view) and one activation.
std::optional<Linear> linear_of(const sim::Graph& g, const std::vector<char>& var, sim::OpId o) {
  const sim::Op& op = g.ops[o];
  if (op.phase != sim::Phase::Forward || op.inputs.size() < 2 ||
      sim::math_kind_of(op.type) != sim::MathKind::Matmul)
    return std::nullopt;
  Linear l;
  for (int i = 0; i < 2; ++i) {
    sim::OpId view = -1;
    const sim::OpId w = weight_of(g, var, op.inputs[i], &view);
    if (w >= 0 && l.weight < 0) {
      l.weight = i;
      l.var = w;
      l.view = view;
    } else {
      l.data = i;
    }
  }
  if (l.weight < 0 || l.data < 0) return std::nullopt;
  return l;
}

struct Pair {
  sim::OpId row = -1;
  std::set<sim::OpId> cols, region, vars;  // vars: weights/biases of the columns and region
};

// Walks back from a row-parallel candidate's activation; nullopt when the pattern does not hold.
std::optional<Pair> find_pair(const sim::Graph& g, const std::vector<char>& var,
                              const std::vector<std::optional<Linear>>& lin, sim::OpId row) {
  Pair p;
  p.row = row;
  std::vector<sim::OpId> stack{g.ops[row].inputs[lin[row]->data].op};
  while (!stack.empty()) {
    const sim::OpId o = stack.back();
    stack.pop_back();
    if (p.region.contains(o) || p.cols.contains(o) || p.vars.contains(o)) continue;
    const sim::Op& op = g.ops[o];
    if (lin[o]) {
      p.cols.insert(o);
      continue;
    }
    if (var[o]) {
      p.vars.insert(o);
      continue;
    }
    if (op.phase != sim::Phase::Forward) {
      if (op.type == "Placeholder") return std::nullopt;  // the input reached: no column linear
      continue;                                           // a constant (mask, scale)
    }
    if (op.type.find("Norm") != std::string::npos || op.type.find("Gather") != std::string::npos)
      return std::nullopt;
    // Weights inside the region only as a column's bias (an add whose other input is the
    // column's matmul): a decomposed norm's scale and shift end the pattern.
    bool has_var = false, after_linear = false;
    for (const sim::TensorRef& t : op.inputs) {
      has_var = has_var || var[t.op];
      after_linear = after_linear || lin[t.op].has_value();
    }
    if (has_var && !after_linear) return std::nullopt;
    p.region.insert(o);
    if (p.region.size() > kMaxRegion) return std::nullopt;
    for (const sim::TensorRef& t : op.inputs)
      if (g.ops[t.op].outputs[t.output].bytes.v >= kSmallTensor) stack.push_back(t.op);
  }
  if (p.cols.empty()) return std::nullopt;
  // Closed: what the columns and the region compute is read only inside (forward), but for
  // shape computations (ops whose outputs are all small).
  auto closed = [&](sim::OpId o) {
    for (sim::OpId c : g.consumers_of[o]) {
      if (g.ops[c].phase != sim::Phase::Forward || c == row || p.region.contains(c)) continue;
      std::int64_t out = 0;
      for (const sim::TensorOut& t : g.ops[c].outputs) out = std::max(out, t.bytes.v);
      if (out >= kSmallTensor) return false;
    }
    return true;
  };
  for (sim::OpId o : p.cols)
    if (!closed(o)) return std::nullopt;
  for (sim::OpId o : p.region)
    if (!closed(o)) return std::nullopt;
  for (sim::OpId c : p.cols) {
    p.vars.insert(lin[c]->var);
    // A column's bias as its GEMM's epilogue (a third, 1-D input: the `gpt` graph's
    // bias_epilogue) is split with its output columns, as a separate bias add's would be.
    for (const sim::TensorRef& t : g.ops[c].inputs)
      if (var[t.op] && g.ops[t.op].outputs[t.output].shape.size() == 1) p.vars.insert(t.op);
  }
  p.vars.insert(lin[row]->var);
  return p;
}

// How one forward op is split: its FLOPs by tp; its outputs by tp except `full_outputs` (partial
// sums as large as the unsplit tensor); the gradient of input `full_grad_input` (a replicated
// activation) stays whole in the backward and is all-reduced there.
struct Split {
  std::set<int> full_outputs;
  int full_grad_input = -1;
  bool allreduce_output = false;     // all-reduce output 0 in the forward (row-parallel, embedding)
  std::int64_t allreduce_bytes = 0;  // when set: a small all-reduce of this size (vocab softmax)
  bool vocab = false;  // vocab-parallel: Megatron pads the vocabulary to a multiple of tp
};

struct Plan {
  std::map<sim::OpId, Split> fwd;
  std::set<sim::OpId> vars;
  int pairs = 0;
};

// Vocab-parallel token embedding and LM head (Megatron's VocabParallelEmbedding and the
// column-parallel output layer with vocab-parallel cross entropy).
void plan_vocab(const sim::Graph& g, const std::vector<char>& var,
                const std::vector<std::optional<Linear>>& lin, int tp, Plan& plan) {
  sim::OpId emb = -1;
  std::int64_t rows = 0;
  for (sim::OpId o = 0; o < g.num_ops(); ++o) {
    const sim::Op& op = g.ops[o];
    if (op.phase != sim::Phase::Forward || op.type.find("Gather") == std::string::npos) continue;
    if (op.inputs.empty() || !var[op.inputs[0].op]) continue;
    const auto& shape = g.ops[op.inputs[0].op].outputs[op.inputs[0].output].shape;
    if (shape.size() == 2 && shape[0] > rows) rows = shape[0], emb = o;
  }
  if (emb < 0 || rows < tp) return;
  const sim::OpId table = g.ops[emb].inputs[0].op;
  plan.fwd[emb] = Split{.full_outputs = {0}, .allreduce_output = true};
  plan.vars.insert(table);
  for (sim::OpId o = 0; o < g.num_ops(); ++o) {
    if (!lin[o] || plan.fwd.contains(o)) continue;
    const sim::OpId w = lin[o]->var;
    const auto& out = g.ops[o].outputs[0].shape;
    const bool tied = w == table;
    if (!tied && (out.empty() || out.back() != rows)) continue;
    plan.fwd[o] = Split{.full_grad_input = lin[o]->data, .vocab = true};
    if (lin[o]->view >= 0) plan.fwd[lin[o]->view] = Split{};
    plan.vars.insert(w);
    // The loss over the split logits: each consumer computes on its slice; the softmax's max,
    // sum and target logit are all-reduced ([rows] floats each: three calls in Megatron, one
    // of the same total size here).
    for (sim::OpId c : g.consumers_of[o]) {
      if (g.ops[c].phase != sim::Phase::Forward) continue;
      Split s;
      std::int64_t n = 0;
      for (std::size_t i = 0; i < g.ops[c].outputs.size(); ++i)
        if (g.ops[c].outputs[i].shape != out) {
          s.full_outputs.insert(static_cast<int>(i));
          n = std::max<std::int64_t>(n, g.ops[c].outputs[i].bytes.v);
        }
      s.allreduce_bytes = 3 * n;
      plan.fwd[c] = s;
    }
  }
}

Plan plan_tp(const sim::Graph& g, int tp) {
  const int n = g.num_ops();
  std::vector<char> var(n);
  std::vector<std::optional<Linear>> lin(n);
  for (sim::OpId o = 0; o < n; ++o) var[o] = static_cast<char>(is_variable(g, o));
  for (sim::OpId o = 0; o < n; ++o) lin[o] = linear_of(g, var, o);
  Plan plan;
  std::set<sim::OpId> claimed;
  for (sim::OpId o = 0; o < n; ++o) {
    if (!lin[o]) continue;
    const auto p = find_pair(g, var, lin, o);
    if (!p) continue;
    bool overlap = claimed.contains(o);
    for (sim::OpId r : p->region) overlap = overlap || claimed.contains(r);
    for (sim::OpId c : p->cols) overlap = overlap || claimed.contains(c);
    if (overlap) continue;
    ++plan.pairs;
    claimed.insert(o);
    plan.fwd[o] = Split{.full_outputs = {0}, .allreduce_output = true};
    for (sim::OpId c : p->cols) {
      claimed.insert(c);
      plan.fwd[c] = Split{.full_grad_input = lin[c]->data};
      if (lin[c]->view >= 0) plan.fwd[lin[c]->view] = Split{};
    }
    if (lin[o]->view >= 0) plan.fwd[lin[o]->view] = Split{};
    for (sim::OpId r : p->region) {
      claimed.insert(r);
      plan.fwd[r] = Split{};
    }
    plan.vars.insert(p->vars.begin(), p->vars.end());
  }
  if (plan.pairs > 0) plan_vocab(g, var, lin, tp, plan);
  return plan;
}

std::int64_t div_up(std::int64_t v, int tp) {
  return (v + tp - 1) / tp;
}

// Scales an op's kernel traffic with its tensors (the builder's traffic is their sum).
void rescale_traffic(sim::Op& op, std::int64_t in_before, std::int64_t in_after,
                     std::int64_t out_before, std::int64_t out_after) {
  if (in_before > 0)
    op.bytes_read.v =
        static_cast<std::int64_t>(static_cast<double>(op.bytes_read.v) *
                                  static_cast<double>(in_after) / static_cast<double>(in_before));
  if (out_before > 0)
    op.bytes_written.v =
        static_cast<std::int64_t>(static_cast<double>(op.bytes_written.v) *
                                  static_cast<double>(out_after) / static_cast<double>(out_before));
}

sim::OpId add_allreduce(sim::Graph& g, sim::TensorRef t, std::int64_t bytes,
                        const std::string& what) {
  const sim::Op& src = g.ops[t.op];
  sim::Op ar;
  ar.name = "tp/allreduce/" + src.name + ":" + std::to_string(t.output) + what;
  ar.type = "AllReduce";
  ar.phase = src.phase;
  ar.layer = src.layer;
  ar.group = src.group.empty() ? src.name : src.group;
  ar.inputs = {t};
  sim::TensorOut out = src.outputs[t.output];
  out.name.clear();
  if (bytes > 0) {
    out.bytes = sim::Bytes{bytes};
    out.shape.clear();
  }
  ar.outputs = {out};
  sim::CollectiveCall call;
  call.kind = sim::CollectiveKind::AllReduce;
  call.bytes = out.bytes;
  call.id = ar.name;
  ar.collective = call;
  return g.add_op(std::move(ar));
}

// The sum of `grads` when the builder accumulates exactly them (a chain or tree of Add/AddN
// whose leaves are `grads` and nothing else); nullopt otherwise.
std::optional<sim::TensorRef> accumulated_sum(const sim::Graph& s,
                                              const std::vector<sim::TensorRef>& grads) {
  std::set<sim::TensorRef> open(grads.begin(), grads.end());
  for (const sim::Op& op : s.ops)  // a gradient read by anything but a sum is needed alone
    for (const sim::TensorRef& t : op.inputs)
      if (open.contains(t) && op.type != "Add" && op.type != "AddN") return std::nullopt;
  for (bool grew = true; grew && open.size() > 1;) {
    grew = false;
    for (sim::OpId c = 0; c < s.num_ops() && !grew; ++c) {
      const sim::Op& op = s.ops[c];
      if ((op.type != "Add" && op.type != "AddN") || op.inputs.size() < 2) continue;
      if (!std::all_of(op.inputs.begin(), op.inputs.end(),
                       [&](const sim::TensorRef& t) { return open.contains(t); }))
        continue;
      for (const sim::TensorRef& t : op.inputs) open.erase(t);
      open.insert({c, 0});
      grew = true;
    }
  }
  if (open.size() != 1) return std::nullopt;
  return *open.begin();
}

// Megatron launches a column-parallel linear's input-gradient all-reduce before its weight-gradient
// GEMM (the asynchronous tensor-parallel all-reduce overlaps the two): the other backward ops of
// the fused linears (their weight gradients) wait for the summed input gradient `root`, unless
// they feed it.
void all_reduce_before_weight_grads(sim::Graph& s, const std::vector<sim::TensorRef>& grads,
                                    sim::OpId root) {
  std::vector<char> feeds(s.ops.size(), 0);
  std::vector<sim::OpId> stack{root};
  while (!stack.empty()) {
    const sim::OpId o = stack.back();
    stack.pop_back();
    if (feeds[o]) continue;
    feeds[o] = 1;
    for (const sim::TensorRef& t : s.ops[o].inputs) stack.push_back(t.op);
    for (sim::OpId c : s.ops[o].control_inputs) stack.push_back(c);
  }
  std::set<std::string> groups;
  for (const sim::TensorRef& t : grads)
    groups.insert(s.ops[t.op].group.empty() ? s.ops[t.op].name : s.ops[t.op].group);
  for (sim::OpId c = 0; c < s.num_ops(); ++c) {
    const sim::Op& op = s.ops[c];
    if (feeds[c] || op.phase != sim::Phase::Backward) continue;
    if (groups.contains(op.group.empty() ? op.name : op.group))
      s.ops[c].control_inputs.push_back(root);
  }
}

// Megatron's fused QKV: the input gradients of several column-parallel linears reading one
// activation (separate query, key and value linears) are partial sums on each rank; Megatron
// computes them as one fused linear's and all-reduces their sum once. Where the builder sums
// exactly them (an Add/AddN chain with no other term), that sum is the tensor to all-reduce, once;
// otherwise (a residual's gradient in the same sum, a gradient read by another op) each gradient
// keeps its own all-reduce. Returns the tensors to all-reduce, in the map's order.
std::vector<sim::TensorRef> fuse_column_gradients(
    sim::Graph& s, const std::map<sim::TensorRef, std::vector<sim::TensorRef>>& by_input) {
  std::vector<sim::TensorRef> out;
  for (const auto& [x, grads] : by_input) {
    const std::optional<sim::TensorRef> acc =
        grads.size() > 1 ? accumulated_sum(s, grads) : std::nullopt;
    if (!acc) {
      out.insert(out.end(), grads.begin(), grads.end());
      continue;
    }
    all_reduce_before_weight_grads(s, grads, acc->op);
    out.push_back(*acc);
  }
  return out;
}

// Points every reader of `t` (but `except`) at output 0 of `to`.
void rewire(sim::Graph& g, sim::TensorRef t, sim::OpId to, sim::OpId except) {
  for (sim::OpId c = 0; c < g.num_ops(); ++c) {
    if (c == except) continue;
    for (sim::TensorRef& in : g.ops[c].inputs)
      if (in == t) in = {to, 0};
  }
}

// Shrinks the tensors marked in `shrink`, divides the split ops' FLOPs and resident bytes, and
// rescales every touched op's traffic (s is a copy of g).
void apply_split(const sim::Graph& g, const Plan& plan,
                 const std::vector<std::vector<char>>& shrink, const std::vector<char>& split_op,
                 int tp, sim::Graph& s) {
  const int n = g.num_ops();
  for (sim::OpId o = 0; o < n; ++o) {
    sim::Op& op = s.ops[o];
    std::int64_t in_b = 0, in_a = 0, out_b = 0, out_a = 0;
    for (const sim::TensorRef& t : g.ops[o].inputs) {
      const std::int64_t b = g.ops[t.op].outputs[t.output].bytes.v;
      in_b += b;
      in_a += shrink[t.op][t.output] ? div_up(b, tp) : b;
    }
    for (std::size_t i = 0; i < op.outputs.size(); ++i) {
      out_b += op.outputs[i].bytes.v;
      if (shrink[o][i]) op.outputs[i].bytes.v = div_up(op.outputs[i].bytes.v, tp);
      out_a += op.outputs[i].bytes.v;
    }
    if (split_op[o] || plan.vars.contains(o)) {
      op.flops = sim::Flops{op.flops.v / tp};
      op.persistent.v = div_up(op.persistent.v, tp);
    }
    if (op.phase == sim::Phase::Update && split_op[o]) {
      op.bytes_read.v = div_up(op.bytes_read.v, tp);
      op.bytes_written.v = div_up(op.bytes_written.v, tp);
    } else if (in_a != in_b || out_a != out_b) {
      rescale_traffic(op, in_b, in_a, out_b, out_a);
    }
    // Its recorded shapes are the unsplit ones: no exact calibrated look-up applies.
    if (in_a != in_b || out_a != out_b || split_op[o]) op.signature.reset();
  }
}

}  // namespace

TpShard shard_tensor_parallel(const sim::Graph& g, int tp, const std::string& origin) {
  TpShard out;
  out.graph = g;
  if (tp <= 1) return out;
  const Plan plan = plan_tp(g, tp);
  if (plan.pairs == 0)
    throw sim::InputError(origin, "tp",
                          "a transformer graph (column- then row-parallel linear pairs, as the "
                          "built-in gpt; docs/parallel.md) for tensor parallelism, got " +
                              g.name + " with none");
  // Megatron splits whole columns and whole attention heads.
  for (const auto& [o, split] : plan.fwd) {
    if (split.full_grad_input < 0 || split.vocab) continue;  // a column-parallel linear
    const auto& shape = g.ops[o].outputs[0].shape;
    if (!shape.empty() && shape.back() % tp != 0)
      throw sim::InputError(origin, "tp",
                            "a divisor of the " + std::to_string(shape.back()) + " columns of " +
                                g.ops[o].name + ", got " + std::to_string(tp));
  }
  if (const std::int64_t heads = graph_option(g, "heads"); heads > 0 && heads % tp != 0)
    throw sim::InputError(origin, "tp",
                          "a divisor of the graph's " + std::to_string(heads) +
                              " attention heads, got " + std::to_string(tp));
  sim::Graph& s = out.graph;
  const int n = g.num_ops();
  // Which output tensors shrink: outputs of split forward ops (but their full ones), variables
  // split, and gradients of split ops except those of a replicated input (shape match).
  std::vector<std::vector<char>> shrink(n);
  for (sim::OpId o = 0; o < n; ++o) shrink[o].assign(g.ops[o].outputs.size(), 0);
  std::map<std::string, sim::OpId> group_fwd;
  for (const auto& [o, split] : plan.fwd) {
    group_fwd[g.group_of(o)] = o;
    for (std::size_t i = 0; i < g.ops[o].outputs.size(); ++i)
      shrink[o][i] = static_cast<char>(!split.full_outputs.contains(static_cast<int>(i)));
  }
  for (sim::OpId v : plan.vars) shrink[v][0] = 1;
  // Input gradients to all-reduce, by the replicated activation they are the gradient of.
  std::map<sim::TensorRef, std::vector<sim::TensorRef>> bwd_allreduce;
  std::vector<char> split_op(n);
  for (sim::OpId o = 0; o < n; ++o) {
    const sim::Op& op = g.ops[o];
    if (plan.fwd.contains(o)) split_op[o] = 1;
    if (op.phase == sim::Phase::Update) {
      for (const sim::TensorRef& t : op.inputs)
        if (plan.vars.contains(t.op)) split_op[o] = 1;
      continue;
    }
    if (op.phase != sim::Phase::Backward) continue;
    const auto it = group_fwd.find(g.group_of(o));
    if (it == group_fwd.end()) continue;
    split_op[o] = 1;
    const Split& split = plan.fwd.at(it->second);
    std::vector<std::int64_t> full_shape;
    sim::TensorRef x{};
    if (split.full_grad_input >= 0) {
      x = g.ops[it->second].inputs[split.full_grad_input];
      full_shape = g.ops[x.op].outputs[x.output].shape;
    }
    // A sum of gradients (the builder's accumulation of a tensor read twice) adds an
    // all-reduced input gradient to a whole one: whole, and not all-reduced again.
    const bool sum = op.type == "Add" || op.type == "AddN";
    for (std::size_t i = 0; i < op.outputs.size(); ++i) {
      const bool full = !full_shape.empty() && op.outputs[i].shape == full_shape;
      shrink[o][i] = static_cast<char>(!full);
      if (full && !sum) bwd_allreduce[x].push_back({o, static_cast<int>(i)});
    }
  }
  apply_split(g, plan, shrink, split_op, tp, s);
  // Forward all-reduces after row-parallel linears and the embedding; the vocab-parallel loss's
  // small all-reduce; backward all-reduces of replicated activations' gradients.
  for (const auto& [o, split] : plan.fwd) {
    if (split.allreduce_output) {
      const sim::OpId ar = add_allreduce(s, {o, 0}, 0, "");
      rewire(s, {o, 0}, ar, ar);
      ++out.allreduces;
    } else if (split.allreduce_bytes > 0) {
      // Runs beside the loss; the loss's readers wait for it (control edges).
      const sim::OpId ar = add_allreduce(s, {o, *split.full_outputs.begin()}, split.allreduce_bytes,
                                         "/softmax_stats");
      for (sim::OpId c : g.consumers_of[o]) s.ops[c].control_inputs.push_back(ar);
      ++out.allreduces;
    }
  }
  for (const sim::TensorRef& t : fuse_column_gradients(s, bwd_allreduce)) {
    const sim::OpId ar = add_allreduce(s, t, 0, "");
    rewire(s, t, ar, ar);
    ++out.allreduces;
  }
  out.pairs = plan.pairs;
  out.graph.metadata["tp"] = std::to_string(tp);
  out.graph.finalize(origin);
  return out;
}

}  // namespace placesim::models

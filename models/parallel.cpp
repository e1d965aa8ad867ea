// Parallel training graph transforms (models/parallel.hpp).
#include "models/parallel.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "models/optimizer_impl.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

std::int64_t parse_size_value(const std::string& v, const std::string& origin,
                              const std::string& key) {
  try {
    return sim::parse_bytes(v).v;
  } catch (const sim::InputError&) {
    throw sim::InputError(origin, key, "a size such as 25MiB, got \"" + v + "\"");
  }
}

/// Largest apex_message_size accepted, in elements (10^12: far above any model's parameters; a
/// bound so that a typo is refused rather than read as "one bucket").
constexpr std::int64_t kMaxApexMessageSize = 1'000'000'000'000;

/// `v` as a whole number; 0 when it is not one.
std::int64_t whole_number(const std::string& v) {
  try {
    std::size_t pos = 0;
    const std::int64_t n = std::stoll(v, &pos);
    return pos == v.size() ? n : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

/// The ddp=apex keys: apex_message_size=N (elements) and apex_predivide=true|false. Returns false
/// when `k` is neither.
bool parse_apex_key(const std::string& k, const std::string& v, const std::string& origin,
                    ParallelSpec& s) {
  if (k == "apex_predivide") {
    if (v != "true" && v != "false")
      throw sim::InputError(origin, k, "true or false, got \"" + v + "\"");
    s.apex_predivide = v == "true";
    return true;
  }
  if (k != "apex_message_size") return false;
  const std::int64_t n = whole_number(v);
  if (n < 1 || n > kMaxApexMessageSize)
    throw sim::InputError(origin, k,
                          "a whole number of elements from 1 to 10^12, got \"" + v + "\"");
  s.apex_message_size = n;
  return true;
}

/// Tensors one of Horovod's BatchedD2DMemcpy kernels copies (horovod/horovod :
/// horovod/common/ops/cuda/cuda_kernels.h, BATCHED_D2D_CAPACITY 160).
constexpr std::size_t kHorovodBatchedD2D = 160;

}  // namespace

ParallelSpec parse_parallel(const std::string& text, const std::string& origin) {
  ParallelSpec s;
  std::stringstream ss(text);
  std::string item;
  bool any = false;
  std::string apex_key;  // an apex_* key given, refused without ddp=apex
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw sim::InputError(
          origin, item, "key=value (dp=8, tp=2, pp=4, mb=8, bucket=25MiB), got \"" + item + "\"");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    any = true;
    if (k == "bucket" || k == "first_bucket") {
      const std::int64_t b = parse_size_value(v, origin, k);
      if (b < 1) throw sim::InputError(origin, k, "a positive size, got \"" + v + "\"");
      (k == "bucket" ? s.bucket_bytes : s.first_bucket_bytes) = b;
      continue;
    }
    if (parse_apex_key(k, v, origin, s)) {
      apex_key = k;
      continue;
    }
    if (k == "bucket_view") {  // DDP's gradient_as_bucket_view
      if (v != "true" && v != "false")
        throw sim::InputError(origin, k, "true or false, got \"" + v + "\"");
      s.bucket_view = v == "true";
      continue;
    }
    if (k == "ddp") {  // the framework's gradient exchange
      if (v == "torch")
        s.ddp = ParallelSpec::Ddp::Torch;
      else if (v == "horovod")
        s.ddp = ParallelSpec::Ddp::Horovod;
      else if (v == "contiguous")
        s.ddp = ParallelSpec::Ddp::Contiguous;
      else if (v == "flat")
        s.ddp = ParallelSpec::Ddp::Flat;
      else if (v == "apex")
        s.ddp = ParallelSpec::Ddp::Apex;
      else
        throw sim::InputError(origin, k,
                              "torch, horovod, contiguous, flat or apex, got \"" + v + "\"");
      continue;
    }
    if (k == "recompute") {
      if (v != "full" && v != "none")
        throw sim::InputError(origin, k, "full or none, got \"" + v + "\"");
      s.recompute = v == "full";
      continue;
    }
    if (k == "dp" && v == "all") {  // every GPU of the cluster (sweeps vary the GPU count)
      s.dp = 0;
      continue;
    }
    const std::int64_t whole = whole_number(v);
    if (k == "loader_us") {
      if (whole < 1 || whole > 1'000'000)
        throw sim::InputError(
            origin, k, "a whole number of microseconds from 1 to 1000000, got \"" + v + "\"");
      s.loader_us = whole;
      continue;
    }
    const int n = whole >= 1 && whole <= 65536 ? static_cast<int>(whole) : 0;
    if (n < 1) throw sim::InputError(origin, k, "a whole number from 1, got \"" + v + "\"");
    if (k == "dp")
      s.dp = n;
    else if (k == "tp")
      s.tp = n;
    else if (k == "pp")
      s.pp = n;
    else if (k == "mb")
      s.mb = n;
    else if (k == "loader_workers")
      s.loader_workers = n;
    else if (k == "accumulate")
      s.accumulate = n;
    else
      throw sim::InputError(origin, k,
                            "one of dp, tp, pp, mb, accumulate, recompute, bucket, first_bucket, "
                            "bucket_view, ddp, apex_message_size, apex_predivide, "
                            "loader_workers, loader_us, got \"" +
                                k + "\"");
  }
  if (s.accumulate > 1 && (s.pp > 1 || s.mb > 1))
    throw sim::InputError(origin, "accumulate",
                          "pp=1 and mb=1 beside accumulate (the framework's loop over whole "
                          "micro-batches; mb is Megatron's in-graph accumulation), got \"" +
                              text + "\"");
  if (!apex_key.empty() && s.ddp != ParallelSpec::Ddp::Apex)
    throw sim::InputError(
        origin, apex_key,
        "ddp=apex beside it (apex.parallel.DistributedDataParallel's), got \"" + text + "\"");
  if ((s.loader_workers > 0) != (s.loader_us > 0))
    throw sim::InputError(origin, s.loader_us > 0 ? "loader_workers" : "loader_us",
                          "loader_workers and loader_us together, got only one of them");
  if (!any)
    throw sim::InputError(origin, "", "a parallel layout such as dp=8, got \"" + text + "\"");
  return s;
}

std::string to_string(const ParallelSpec& s) {
  std::string out = "dp=" + (s.dp == 0 ? std::string("all") : std::to_string(s.dp));
  if (s.tp != 1) out += ",tp=" + std::to_string(s.tp);
  if (s.pp != 1) out += ",pp=" + std::to_string(s.pp);
  if (s.mb != 1) out += ",mb=" + std::to_string(s.mb);
  if (s.recompute) out += ",recompute=full";
  if (s.bucket_view) out += ",bucket_view=true";
  if (s.ddp == ParallelSpec::Ddp::Horovod) out += ",ddp=horovod";
  if (s.ddp == ParallelSpec::Ddp::Contiguous) out += ",ddp=contiguous";
  if (s.ddp == ParallelSpec::Ddp::Flat) out += ",ddp=flat";
  if (s.ddp == ParallelSpec::Ddp::Apex) out += ",ddp=apex";
  if (s.apex_message_size != kApexMessageSize)
    out += ",apex_message_size=" + std::to_string(s.apex_message_size);
  if (s.apex_predivide) out += ",apex_predivide=true";
  if (s.accumulate != 1) out += ",accumulate=" + std::to_string(s.accumulate);
  if (s.loader_workers > 0)
    out += ",loader_workers=" + std::to_string(s.loader_workers) +
           ",loader_us=" + std::to_string(s.loader_us);
  return out;
}

std::int64_t graph_option(const sim::Graph& g, const std::string& key) {
  const auto it = g.metadata.find("options");
  if (it == g.metadata.end()) return 0;
  std::stringstream ss(it->second);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item.rfind(key + "=", 0) == 0) {
      try {
        return std::stoll(item.substr(key.size() + 1));
      } catch (const std::exception&) {
        return 0;
      }
    }
  return 0;
}

std::int64_t graph_batch(const sim::Graph& g) {
  return graph_option(g, "batch");
}

namespace {

// How a template op is copied: once per device (weights, constants), once per micro-batch
// (inputs, forward and backward ops), once per device after the last micro-batch (updates).
enum class Kind { Static, Data, Step, Update };

struct Template {
  const sim::Graph* g = nullptr;
  int pp = 1, mb = 1;
  std::vector<Kind> kind;
  std::vector<int> stage;                  // Step and Update ops
  std::vector<std::vector<char>> used_on;  // Static and Data ops: per stage
  std::vector<char> wgrad;  // backward ops whose outputs are (partial) weight gradients
  std::vector<char> accum;  // weight gradients summed over micro-batches (read by the next one)
};

Template classify(const sim::Graph& g, const StagePlan& plan, int pp, int mb) {
  const int n = g.num_ops();
  Template t;
  t.g = &g;
  t.pp = pp;
  t.mb = mb;
  t.kind.resize(n);
  t.stage.assign(n, 0);
  t.used_on.assign(n, std::vector<char>(pp, 0));
  t.wgrad.assign(n, 0);
  t.accum.assign(n, 0);
  for (sim::OpId o = 0; o < n; ++o) {
    const sim::Op& op = g.ops[o];
    if (op.inputs.empty() && op.control_inputs.empty() && op.phase == sim::Phase::Other)
      t.kind[o] = op.persistent.v > 0 || op.type == "VariableV2" ? Kind::Static : Kind::Data;
    else
      t.kind[o] = op.phase == sim::Phase::Update ? Kind::Update : Kind::Step;
    if (t.kind[o] == Kind::Step || t.kind[o] == Kind::Update)
      t.stage[o] = plan.stage.empty() ? 0 : plan.stage[o];
  }
  // Ops the stage plan left out (phase Other with inputs): with their producers, else consumers.
  for (sim::OpId o : g.topo_order)
    if (t.kind[o] == Kind::Step && t.stage[o] < 0)
      for (const sim::TensorRef& r : g.ops[o].inputs)
        if (t.kind[r.op] == Kind::Step && t.stage[r.op] >= 0) t.stage[o] = t.stage[r.op];
  for (auto it = g.topo_order.rbegin(); it != g.topo_order.rend(); ++it) {
    if (t.kind[*it] != Kind::Step || t.stage[*it] >= 0) continue;
    t.stage[*it] = 0;
    for (sim::OpId c : g.consumers_of[*it])
      if (t.kind[c] == Kind::Step && t.stage[c] >= 0) t.stage[*it] = t.stage[c];
  }
  for (sim::OpId o = 0; o < n; ++o) {
    if (t.kind[o] != Kind::Static && t.kind[o] != Kind::Data) continue;
    for (sim::OpId c : g.consumers_of[o])
      if (t.kind[c] == Kind::Step || t.kind[c] == Kind::Update) t.used_on[o][t.stage[c]] = 1;
    if (std::find(t.used_on[o].begin(), t.used_on[o].end(), 1) == t.used_on[o].end())
      t.used_on[o][0] = 1;
  }
  for (auto it = g.topo_order.rbegin(); it != g.topo_order.rend(); ++it) {
    const sim::OpId o = *it;
    if (t.kind[o] != Kind::Step || g.ops[o].phase != sim::Phase::Backward) continue;
    if (g.ops[o].collective || g.consumers_of[o].empty()) continue;
    // A weight gradient feeds updates, or sums (Add/AddN) that are weight gradients themselves;
    // an activation gradient feeds other gradient ops.
    bool only = true, feeds_update = false, crosses = false;
    for (sim::OpId c : g.consumers_of[o]) {
      const bool sum = g.ops[c].type == "Add" || g.ops[c].type == "AddN";
      only = only && (t.kind[c] == Kind::Update || (t.wgrad[c] && sum));
      feeds_update = feeds_update || t.kind[c] == Kind::Update;
      crosses = crosses || t.stage[c] != t.stage[o];
    }
    t.wgrad[o] = static_cast<char>(only);
    t.accum[o] = static_cast<char>(only && (feeds_update || crosses));
  }
  return t;
}

// The 1F1B order of one stage (Narayanan et al. 2021, PipeDream-Flush): pp-1-s warm-up forwards,
// then one forward and one backward in turn, then the remaining backwards. Entries are
// (is_backward, micro-batch).
std::vector<std::pair<bool, int>> one_f_one_b(int stage, int pp, int mb) {
  const int warm = std::min(pp - 1 - stage, mb);
  std::vector<std::pair<bool, int>> seq;
  seq.reserve(2 * static_cast<std::size_t>(std::max(mb, 0)));  // mb forwards, mb backwards
  for (int k = 0; k < warm; ++k) seq.emplace_back(false, k);
  for (int i = 0; i + warm < mb; ++i) {
    seq.emplace_back(false, warm + i);
    seq.emplace_back(true, i);
  }
  for (int i = mb - warm; i < mb; ++i) seq.emplace_back(true, i);
  return seq;
}

class JobBuilder {
 public:
  JobBuilder(const Template& t, const sim::Cluster& c, const ParallelSpec& s,
             const std::vector<sim::DeviceId>& gpus, bool accumulating = false)
      : t_(t), g_(*t.g), c_(c), s_(s), gpus_(gpus), accumulating_(accumulating) {
    ranks_ = s.dp * s.tp * s.pp;
    id_.assign(ranks_, std::vector<sim::OpId>(static_cast<std::size_t>(g_.num_ops()) * s.mb, -1));
  }

  ParallelJob build(const std::string& origin);

 private:
  int rank(int d, int tt, int st) const { return tt + s_.tp * (d + s_.dp * st); }
  int dp_of(int r) const { return (r / s_.tp) % s_.dp; }
  int tp_of(int r) const { return r % s_.tp; }
  int pp_of(int r) const { return r / (s_.tp * s_.dp); }
  sim::OpId& id(int r, sim::OpId o, int k) {
    return id_[r][static_cast<std::size_t>(o) * s_.mb + k];
  }
  std::string prefix(int r) const {
    std::string p;
    if (s_.dp > 1) p += "dp" + std::to_string(dp_of(r)) + "/";
    if (s_.tp > 1) p += "tp" + std::to_string(tp_of(r)) + "/";
    if (s_.pp > 1) p += "pp" + std::to_string(pp_of(r)) + "/";
    return p;
  }
  std::string mb_prefix(int k) const { return s_.mb > 1 ? "mb" + std::to_string(k) + "/" : ""; }
  sim::DeviceId device(int r, const sim::Op& op) const {
    const sim::DeviceId gpu = gpus_[r];
    const bool cpu = op.device_kind && *op.device_kind == sim::DeviceKind::Cpu;
    return cpu ? c_.devices[gpu].host : gpu;
  }
  sim::OpId add(sim::Op op, sim::DeviceId dev) {
    job_.placement.device_of.push_back(dev);
    return job_.graph.add_op(std::move(op));
  }
  void copy_ops();
  std::optional<sim::TensorRef> resolve(int r, sim::OpId o, int k, sim::TensorRef in);
  sim::OpId recv(int src, int dst, sim::TensorRef in, int k);
  void connect();
  std::vector<sim::TensorRef> gradients(int st) const;
  void accumulate_grads();
  std::vector<sim::OpId> accumulated(int r, const std::vector<sim::TensorRef>& grads) const;
  sim::Op flat_pass(int r, const std::vector<sim::TensorRef>& grads, const std::string& what,
                    std::int64_t read_per_elem, std::int64_t write_per_elem) const;
  void buckets();
  sim::Op ddp_pass(int r, const std::vector<sim::TensorRef>& ts, const std::string& type,
                   const std::string& what) const;
  std::vector<std::vector<sim::TensorRef>> kernels(const std::vector<sim::TensorRef>& grads) const;
  std::vector<sim::OpId> scale_into_bucket(int r, std::size_t b,
                                           const std::vector<sim::TensorRef>& grads);
  std::map<sim::TensorRef, sim::OpId> copy_bucket_to_grad(
      int r, const std::vector<std::vector<sim::TensorRef>>& bucket,
      const std::vector<sim::OpId>& allreduce);
  std::map<sim::TensorRef, sim::OpId> apex_unflatten(
      int r, const std::vector<std::vector<sim::TensorRef>>& bucket,
      const std::vector<sim::OpId>& allreduce);
  void schedule();
  void loaders();

 public:
  std::int64_t samples = 0;  ///< per replica and micro-batch (the graph's batch)

 private:
  const Template& t_;
  const sim::Graph& g_;
  const sim::Cluster& c_;
  const ParallelSpec& s_;
  const std::vector<sim::DeviceId>& gpus_;
  const bool accumulating_;  // an accumulating micro-batch: no exchange, no update
  std::vector<std::map<sim::TensorRef, sim::OpId>> acc_;  // per rank: gradient -> its add
  int ranks_ = 0;
  std::vector<std::vector<sim::OpId>> id_;
  std::map<std::tuple<int, sim::OpId, int, int>, sim::OpId> recv_;  // (dst, op, output, mb)
  ParallelJob job_;
};

void JobBuilder::copy_ops() {
  for (int r = 0; r < ranks_; ++r) {
    const int st = pp_of(r);
    for (sim::OpId o = 0; o < g_.num_ops(); ++o) {
      const sim::Op& op = g_.ops[o];
      const Kind kind = t_.kind[o];
      const bool here =
          kind == Kind::Static || kind == Kind::Data ? t_.used_on[o][st] != 0 : t_.stage[o] == st;
      if (!here || (accumulating_ && kind == Kind::Update)) continue;
      const int copies = kind == Kind::Data || kind == Kind::Step ? s_.mb : 1;
      for (int k = 0; k < copies; ++k) {
        sim::Op x = op;
        const std::string pre = prefix(r) + (copies > 1 ? mb_prefix(k) : "");
        x.name = pre + op.name;
        if (!x.group.empty()) x.group = pre + x.group;
        x.inputs.clear();
        x.control_inputs.clear();
        if (x.collective)
          x.collective->id += "/dp" + std::to_string(dp_of(r)) + "/pp" + std::to_string(st) +
                              "/mb" + std::to_string(k);
        id(r, o, k) = add(std::move(x), device(r, op));
      }
    }
  }
}

sim::OpId JobBuilder::recv(int src, int dst, sim::TensorRef in, int k) {
  const auto key = std::make_tuple(dst, in.op, in.output, k);
  if (const auto it = recv_.find(key); it != recv_.end()) return it->second;
  const sim::Op& p = g_.ops[in.op];
  const sim::TensorOut& tensor = p.outputs[in.output];
  const std::string what = p.name + ":" + std::to_string(in.output);
  sim::CollectiveCall call;
  call.kind = sim::CollectiveKind::SendRecv;
  call.bytes = tensor.bytes;
  call.id = "pp/" + what + "/dp" + std::to_string(dp_of(src)) + "/tp" + std::to_string(tp_of(src)) +
            "/mb" + std::to_string(k) + "/pp" + std::to_string(pp_of(src)) + "-" +
            std::to_string(pp_of(dst));
  // The sender is the call's first rank: its op comes first.
  sim::Op send;
  send.name =
      prefix(src) + mb_prefix(k) + "pp/send/" + what + "/to_pp" + std::to_string(pp_of(dst));
  send.type = "Send";
  send.phase = p.phase;
  send.layer = p.layer;
  send.inputs = {{id(src, in.op, k), in.output}};
  send.collective = call;
  add(std::move(send), gpus_[src]);
  sim::Op rv;
  rv.name = prefix(dst) + mb_prefix(k) + "pp/recv/" + what;
  rv.type = "Recv";
  rv.phase = p.phase;
  rv.layer = p.layer;
  sim::TensorOut out = tensor;
  out.name.clear();
  rv.outputs = {out};
  rv.collective = call;
  const sim::OpId r = add(std::move(rv), gpus_[dst]);
  recv_[key] = r;
  return r;
}

// Where copy k of op `o` on rank r reads template tensor `in`: the same micro-batch's copy on its
// stage, a received copy from another stage, the device's weights; weight gradients from another
// stage arrive once per step, summed over the micro-batches (nullopt for the earlier ones).
std::optional<sim::TensorRef> JobBuilder::resolve(int r, sim::OpId o, int k, sim::TensorRef in) {
  const Kind kp = t_.kind[in.op];
  if (kp == Kind::Static) return sim::TensorRef{id(r, in.op, 0), in.output};
  if (kp == Kind::Data) return sim::TensorRef{id(r, in.op, k), in.output};
  if (kp == Kind::Update) {  // none in an accumulating micro-batch
    if (id(r, in.op, 0) < 0) return std::nullopt;
    return sim::TensorRef{id(r, in.op, 0), in.output};
  }
  const int kk = t_.kind[o] == Kind::Update ? s_.mb - 1 : k;
  const int st = pp_of(r);
  if (t_.stage[in.op] == st) return sim::TensorRef{id(r, in.op, kk), in.output};
  if (t_.wgrad[in.op] && kk != s_.mb - 1) return std::nullopt;
  const int src = rank(dp_of(r), tp_of(r), t_.stage[in.op]);
  return sim::TensorRef{recv(src, r, in, kk), 0};
}

void JobBuilder::connect() {
  for (int r = 0; r < ranks_; ++r)
    for (sim::OpId o = 0; o < g_.num_ops(); ++o)
      for (int k = 0; k < s_.mb; ++k) {
        const sim::OpId x = id(r, o, k);
        if (x < 0) continue;
        std::vector<sim::TensorRef> ins;
        for (const sim::TensorRef& in : g_.ops[o].inputs)
          if (const auto ref = resolve(r, o, k, in)) ins.push_back(*ref);
        // Gradient accumulation fused into the weight-gradient kernel (Megatron's main_grad):
        // micro-batch k adds into what micro-batch k-1 left.
        if (t_.accum[o] && k > 0)
          for (std::size_t i = 0; i < g_.ops[o].outputs.size(); ++i)
            ins.push_back({id(r, o, k - 1), static_cast<std::int32_t>(i)});
        std::vector<sim::OpId> ctl;
        for (sim::OpId c : g_.ops[o].control_inputs) {
          const int kc = t_.kind[c] == Kind::Step || t_.kind[c] == Kind::Data ? k : 0;
          if (id(r, c, kc) >= 0) {
            ctl.push_back(id(r, c, kc));
          } else if (t_.kind[c] == Kind::Step && !g_.ops[c].outputs.empty()) {
            // Made on another stage: wait for its first output's arrival.
            const int src = rank(dp_of(r), tp_of(r), t_.stage[c]);
            ctl.push_back(recv(src, r, {c, 0}, k));
          }
        }
        job_.graph.ops[x].inputs = std::move(ins);
        job_.graph.ops[x].control_inputs = std::move(ctl);
      }
}

// The weight gradients of stage st: inputs of its updates made by backward ops, in the order the
// backward pass makes them, each once.
std::vector<sim::TensorRef> JobBuilder::gradients(int st) const {
  const int n = g_.num_ops();
  std::vector<int> topo_rank(n);
  for (int i = 0; i < n; ++i) topo_rank[g_.topo_order[i]] = i;
  std::set<sim::TensorRef> seen;
  std::vector<sim::TensorRef> grads;
  for (sim::OpId o = 0; o < n; ++o) {
    if (t_.kind[o] != Kind::Update || t_.stage[o] != st) continue;
    for (const sim::TensorRef& t : g_.ops[o].inputs)
      if (g_.ops[t.op].phase == sim::Phase::Backward && seen.insert(t).second) grads.push_back(t);
  }
  std::stable_sort(grads.begin(), grads.end(), [&](sim::TensorRef a, sim::TensorRef b) {
    return topo_rank[a.op] < topo_rank[b.op];
  });
  return grads;
}

// Elements of a template tensor.
std::int64_t numel_of(const sim::Graph& g, sim::TensorRef t) {
  const sim::TensorOut& x = g.ops[t.op].outputs[t.output];
  return x.bytes.v / std::max<std::int64_t>(1, sim::dtype_size(x.dtype));
}

// Gradient accumulation (ParallelSpec::accumulate > 1): each micro-batch adds every weight
// gradient into its F32 accumulated gradient, one elementwise kernel per parameter reading the
// micro-batch's gradient (its type) and the accumulated F32 one and writing the latter. Fp32:
// PyTorch autograd's AccumulateGrad, variable_grad += new_grad in place (pytorch/pytorch
// torch/csrc/autograd/functions/accumulate_grad.h); AMP: apex amp O2's master gradients,
// unscale_with_stashed (multi_tensor_axpby: F32 master += F16 model gradient x 1/scale, after
// which the F16 gradients are set to None; apex/amp/_process_optimizer.py,
// post_backward_with_master_weights). The accumulated gradients live all step (persistent, 4
// bytes a parameter). The exchange and the updates wait for them.
void JobBuilder::accumulate_grads() {
  acc_.assign(ranks_, {});
  if (s_.accumulate <= 1) return;
  for (int r = 0; r < ranks_; ++r)
    for (const sim::TensorRef& t : gradients(pp_of(r))) {
      const std::int64_t n = numel_of(g_, t);
      sim::Op op;
      op.name = prefix(r) + "accumulate/" + g_.ops[t.op].name + ":" + std::to_string(t.output);
      op.type = "Add";
      op.phase = sim::Phase::Backward;
      op.layer = "accumulate";
      op.dtype = sim::Dtype::F32;
      op.inputs = {{id(r, t.op, s_.mb - 1), t.output}};
      op.bytes_read = g_.ops[t.op].outputs[t.output].bytes + sim::Bytes{4 * n};
      op.bytes_written = sim::Bytes{4 * n};
      op.persistent = sim::Bytes{4 * n};
      acc_[r][t] = add(std::move(op), gpus_[r]);
    }
  if (accumulating_) return;
  for (int r = 0; r < ranks_; ++r)
    for (sim::OpId o = 0; o < g_.num_ops(); ++o) {
      if (t_.kind[o] != Kind::Update || id(r, o, 0) < 0) continue;
      const std::vector<sim::OpId> a = accumulated(r, g_.ops[o].inputs);
      std::vector<sim::OpId>& ctl = job_.graph.ops[id(r, o, 0)].control_inputs;
      ctl.insert(ctl.end(), a.begin(), a.end());
    }
}

// Rank r's accumulation adds of those of `ts` that are accumulated gradients.
std::vector<sim::OpId> JobBuilder::accumulated(int r, const std::vector<sim::TensorRef>& ts) const {
  std::vector<sim::OpId> out;
  if (acc_.empty()) return out;
  for (const sim::TensorRef& t : ts)
    if (const auto it = acc_[r].find(t); it != acc_[r].end()) out.push_back(it->second);
  return out;
}

// One of ddp=flat's multi_tensor_scale passes over all of rank r's gradients (NVIDIA
// DeepLearningExamples PyTorch/LanguageModeling/BERT/run_pretraining.py @ e5428044,
// take_optimizer_step with --allreduce_post_accumulation: amp_C.multi_tensor_scale of the F32
// master gradients into views of one flat buffer, F16 with --allreduce_post_accumulation_fp16,
// pre-divided by world size x accumulation steps; torch.distributed.all_reduce of the buffer;
// multi_tensor_scale back into the F32 gradients by 1/loss_scale). `read_per_elem` and
// `write_per_elem` bytes per gradient element; priced by its bytes as the other DDP passes.
sim::Op JobBuilder::flat_pass(int r, const std::vector<sim::TensorRef>& grads,
                              const std::string& what, std::int64_t read_per_elem,
                              std::int64_t write_per_elem) const {
  sim::Op op;
  op.name = prefix(r) + "ddp/" + what;
  op.type = "Mul";
  op.phase = sim::Phase::Backward;
  op.layer = "ddp";
  op.dtype = sim::Dtype::F32;
  for (const sim::TensorRef& t : grads) {
    const std::int64_t n = numel_of(g_, t);
    op.bytes_read += sim::Bytes{n * read_per_elem};
    op.bytes_written += sim::Bytes{n * write_per_elem};
  }
  return op;
}

// The framework's own kernels around each bucket's all-reduce, on the rank's compute stream
// (ParallelSpec::ddp).
// torch: PyTorch DDP (pytorch/pytorch @ ad78a7b3 : torch/csrc/distributed/c10d/reducer.cpp).
// mark_variable_ready_dense, in the autograd hook of each parameter: the gradient is written into
// its bucket view divided by the world size (copy_grad_to_bucket: at::mul_out(bucket_view, grad,
// 1 / div_factor_)), or, when the gradient already is the bucket view
// (gradient_as_bucket_view=True), divided in place (bucket_view.div_): one read and one write of
// the gradient either way, before the bucket can be all-reduced; one kernel per parameter. horovod:
// Horovod's fusion buffer (horovod/horovod: horovod/common/ops/gpu_operations.cc,
// MemcpyInFusionBuffer / MemcpyOutFusionBuffer; cuda/cuda_kernels.h, BATCHED_D2D_CAPACITY 160):
// when a fused response holds more than one tensor, the tensors are copied into the fusion buffer
// by BatchedD2DMemcpy kernels of up to 160 tensors each (one read and write of every gradient); a
// single tensor is all-reduced in place. MXNet's DistributedOptimizer averages through the
// optimizer's rescale_grad (horovod/mxnet/__init__.py), so no scale kernel.
// contiguous: Megatron-LM's DistributedDataParallel (NVIDIA/Megatron-LM : megatron/core/
// distributed/param_and_grad_buffer.py, start_grad_sync): the gradients live in one contiguous
// buffer, and each bucket is scaled in place (grad_data *= gradient_scaling_factor), one kernel
// over the bucket, before its all-reduce.
// apex: apex.parallel.DistributedDataParallel (NVIDIA/apex apex/parallel/distributed.py,
// allreduce_bucket), called when a bucket's last gradient exists: `flatten(bucket)` on the
// compute stream, apex_C.flatten = torch::utils::flatten_dense_tensors, one at::cat kernel over
// the bucket's gradients (a bucket of one gradient is a view of it: no kernel).
// The op type and name of each framework's kernel above: torch scales (Mul) each gradient into
// its bucket, horovod copies them into the fusion buffer, contiguous scales the bucket in place,
// apex concatenates them.
struct BucketInKernel {
  const char* type;
  const char* name;  // the op's name, before the bucket's index
};
BucketInKernel bucket_in_kernel(ParallelSpec::Ddp ddp) {
  switch (ddp) {
    case ParallelSpec::Ddp::Torch:
      return {"Mul", "scale_into_bucket"};
    case ParallelSpec::Ddp::Horovod:
      return {"Copy", "memcpy_in_fusion_buffer"};
    case ParallelSpec::Ddp::Contiguous:
      return {"Mul", "scale_bucket"};
    case ParallelSpec::Ddp::Flat:  // one pass into the flat buffer (flat_pass), not per bucket
      return {"Mul", "scale_into_flat"};
    case ParallelSpec::Ddp::Apex:
      return {"Copy", "flatten_bucket"};
  }
  return {"Mul", "scale_into_bucket"};
}

// Returns the ops of bucket `b` on rank r that its all-reduce waits for.
std::vector<sim::OpId> JobBuilder::scale_into_bucket(int r, std::size_t b,
                                                     const std::vector<sim::TensorRef>& grads) {
  std::vector<sim::OpId> out;
  if (s_.ddp == ParallelSpec::Ddp::Flat) {  // F32 gradients -> the flat F16 buffer
    sim::Op op = flat_pass(r, grads, "scale_into_flat", 4, 2);
    for (const sim::TensorRef& t : grads) op.inputs.push_back({id(r, t.op, s_.mb - 1), t.output});
    op.control_inputs = accumulated(r, grads);
    out.push_back(add(std::move(op), gpus_[r]));
    return out;
  }
  const std::string tag = std::to_string(b);
  const BucketInKernel in = bucket_in_kernel(s_.ddp);
  for (const std::vector<sim::TensorRef>& k : kernels(grads)) {
    sim::Op op = ddp_pass(r, k, in.type, in.name + tag);
    for (const sim::TensorRef& t : k) op.inputs.push_back({id(r, t.op, s_.mb - 1), t.output});
    op.control_inputs = accumulated(r, k);
    out.push_back(add(std::move(op), gpus_[r]));
  }
  if (s_.ddp == ParallelSpec::Ddp::Apex && s_.apex_predivide) {
    // allreduce_bucket: `if self.gradient_predivide_factor != 1.0:
    // tensor_to_allreduce.mul_(1./self.gradient_predivide_factor)`, one in-place kernel over the
    // flat bucket (the gradient itself for a bucket of one) after the cat, before the all-reduce.
    sim::Op op = ddp_pass(r, grads, "Mul", "predivide_bucket" + tag);
    for (const sim::TensorRef& t : grads) op.inputs.push_back({id(r, t.op, s_.mb - 1), t.output});
    op.control_inputs = out.empty() ? accumulated(r, grads) : out;
    out = {add(std::move(op), gpus_[r])};
  }
  return out;
}

// The kernels that move the gradients of one bucket, each a list of the gradients it reads and
// writes: torch one per gradient; horovod one per 160 gradients (BATCHED_D2D_CAPACITY), none for
// a bucket of one gradient (all-reduced in place); contiguous one for the whole bucket; apex one
// cat for the whole bucket, none for a bucket of one gradient (flattened as a view).
std::vector<std::vector<sim::TensorRef>> JobBuilder::kernels(
    const std::vector<sim::TensorRef>& grads) const {
  std::vector<std::vector<sim::TensorRef>> out;
  const std::size_t per = s_.ddp == ParallelSpec::Ddp::Torch     ? 1
                          : s_.ddp == ParallelSpec::Ddp::Horovod ? kHorovodBatchedD2D
                                                                 : grads.size();
  const bool in_place = s_.ddp == ParallelSpec::Ddp::Horovod || s_.ddp == ParallelSpec::Ddp::Apex;
  if (in_place && grads.size() < 2) return out;
  for (std::size_t i = 0; i < grads.size(); i += per)
    out.emplace_back(grads.begin() + static_cast<std::ptrdiff_t>(i),
                     grads.begin() + static_cast<std::ptrdiff_t>(std::min(grads.size(), i + per)));
  return out;
}

// One of the framework's kernels on rank r's compute stream: one read and one write of the
// gradients ts. One multiply per 4-8 bytes moved is memory-bound on every GPU, so no FLOPs are
// given (the roofline's compute term carries a GEMM's efficiency ramp, compute_half_flops, which a
// streaming kernel does not have): both are priced by their bytes.
sim::Op JobBuilder::ddp_pass(int r, const std::vector<sim::TensorRef>& ts, const std::string& type,
                             const std::string& what) const {
  sim::Op op;
  const sim::TensorRef t = ts.front();
  op.name = prefix(r) + "ddp/" + what + "/" + g_.ops[t.op].name + ":" + std::to_string(t.output);
  op.type = type;
  op.phase = sim::Phase::Backward;
  op.layer = "ddp";
  op.dtype = g_.ops[t.op].outputs[t.output].dtype;
  for (const sim::TensorRef& x : ts) {
    op.bytes_read += g_.ops[x.op].outputs[x.output].bytes;
    op.bytes_written += g_.ops[x.op].outputs[x.output].bytes;
  }
  return op;
}

// After each bucket's all-reduce. torch: finalize_backward (the autograd engine's final callback,
// after the backward pass) waits for each bucket's all-reduce and runs finalize_bucket_dense,
// which without gradient_as_bucket_view (DDP's default, False) copies the reduced bucket back into
// every param.grad (copy_bucket_to_grad: grad.copy_(bucket_view)): one more read and write per
// gradient on the compute stream, after its bucket's all-reduce and after the last gradient of the
// step exists, before optimizer.step(). With bucket_view=true (gradient_as_bucket_view=True) the
// gradients are the bucket views and nothing is copied back. horovod: MemcpyOutFusionBuffer as
// soon as the fused all-reduce is done, batched as the copies in. contiguous: nothing (the
// optimizer reads the buffer). Returns rank r's copy op of each gradient.
std::map<sim::TensorRef, sim::OpId> JobBuilder::copy_bucket_to_grad(
    int r, const std::vector<std::vector<sim::TensorRef>>& bucket,
    const std::vector<sim::OpId>& allreduce) {
  std::map<sim::TensorRef, sim::OpId> out;
  if (s_.ddp == ParallelSpec::Ddp::Flat && !bucket.empty()) {  // the flat buffer -> F32 gradients
    std::vector<sim::TensorRef> all;
    for (const auto& b : bucket) all.insert(all.end(), b.begin(), b.end());
    sim::Op op = flat_pass(r, all, "scale_from_flat", 2, 4);
    op.inputs = {{allreduce.back(), 0}};
    const sim::OpId x = add(std::move(op), gpus_[r]);
    for (const sim::TensorRef& t : all) out[t] = x;
    return out;
  }
  if (s_.ddp == ParallelSpec::Ddp::Apex) return apex_unflatten(r, bucket, allreduce);
  if (s_.ddp == ParallelSpec::Ddp::Contiguous || bucket.empty()) return out;
  if (s_.ddp == ParallelSpec::Ddp::Torch && s_.bucket_view) return out;
  // The end of the backward pass as DDP sees it: the last bucket's gradients have been scaled in.
  const std::vector<sim::OpId> last_in = s_.ddp == ParallelSpec::Ddp::Torch
                                             ? job_.graph.ops[allreduce.back()].control_inputs
                                             : std::vector<sim::OpId>{};
  for (std::size_t b = 0; b < bucket.size(); ++b)
    for (const std::vector<sim::TensorRef>& k : kernels(bucket[b])) {
      sim::Op op = ddp_pass(
          r, k, "Copy",
          (s_.ddp == ParallelSpec::Ddp::Torch ? "copy_bucket" + std::to_string(b) + "_to_grad"
                                              : "memcpy_out_fusion_buffer" + std::to_string(b)));
      op.inputs = {{allreduce[b], 0}};
      op.control_inputs = last_in;
      const sim::OpId x = add(std::move(op), gpus_[r]);
      for (const sim::TensorRef& t : k) out[t] = x;
    }
  return out;
}

// apex's kernels after each bucket's all-reduce, on its bucket stream as soon as that all-reduce
// ends (allreduce_bucket): `tensor_to_allreduce.mul_(gradient_predivide_factor / world_size)`,
// one kernel over the flat bucket (gradient_average=True), then `multi_tensor_applier(
// multi_tensor_scale, _overflow_buf, [unflatten(tensor, bucket), bucket], 1.0)`: the reduced
// bucket copied into the gradients by multi-tensor launches of two lists (retain_allreduce_buffers
// False). The main stream waits for the bucket stream at the end of the backward pass
// (overlapping_backward_epilogue), so the updates wait for every bucket's last launch. Returns
// rank r's last launch of each gradient's bucket.
std::map<sim::TensorRef, sim::OpId> JobBuilder::apex_unflatten(
    int r, const std::vector<std::vector<sim::TensorRef>>& bucket,
    const std::vector<sim::OpId>& allreduce) {
  std::map<sim::TensorRef, sim::OpId> out;
  for (std::size_t b = 0; b < bucket.size(); ++b) {
    const std::string tag = std::to_string(b);
    sim::Op avg = ddp_pass(r, bucket[b], "Mul", "average_bucket" + tag);
    avg.inputs = {{allreduce[b], 0}};
    avg.outputs = {sim::TensorOut{}};  // in place: the kernels after it read its end
    sim::OpId prev = add(std::move(avg), gpus_[r]);
    std::vector<std::int64_t> numels;
    for (const sim::TensorRef& t : bucket[b]) numels.push_back(numel_of(g_, t));
    const auto parts = multi_tensor_parts(numels, 2);
    for (std::size_t j = 0; j < parts.size(); ++j) {
      std::vector<sim::TensorRef> ts;
      std::int64_t by = 0;
      for (const auto& [i, e] : parts[j]) {
        ts.push_back(bucket[b][i]);
        by += e * sim::dtype_size(g_.ops[bucket[b][i].op].outputs[bucket[b][i].output].dtype);
      }
      sim::Op k = ddp_pass(r, {ts.front()}, "Copy",
                           "unflatten_bucket" + tag + "_launch" + std::to_string(j));
      k.bytes_read = sim::Bytes{by};
      k.bytes_written = sim::Bytes{by};
      k.inputs = {{prev, 0}};
      k.outputs = {sim::TensorOut{}};
      prev = add(std::move(k), gpus_[r]);
    }
    for (const sim::TensorRef& t : bucket[b]) out[t] = prev;
  }
  return out;
}

// DDP's bucketed all-reduce of every stage's gradients across the data-parallel replicas.
void JobBuilder::buckets() {
  if (accumulating_) return;
  const int n = g_.num_ops();
  const bool flat = s_.ddp == ParallelSpec::Ddp::Flat;
  const bool apex = s_.ddp == ParallelSpec::Ddp::Apex;
  for (int st = 0; st < s_.pp; ++st) {
    const std::vector<sim::TensorRef> grads = gradients(st);
    std::vector<std::vector<sim::TensorRef>> bucket;
    std::vector<std::int64_t> size;
    std::int64_t numel = 0;  // apex: elements in the open bucket
    for (const sim::TensorRef& t : grads) {
      // flat: one F16 buffer of every gradient (2 bytes an element whatever their type).
      const std::int64_t b = flat ? 2 * numel_of(g_, t) : g_.ops[t.op].outputs[t.output].bytes.v;
      const std::int64_t cap = flat                 ? std::numeric_limits<std::int64_t>::max()
                               : bucket.size() <= 1 ? (bucket.empty() ? 0 : s_.first_bucket_bytes)
                                                    : s_.bucket_bytes;
      // apex ships a bucket once the gradient that reaches message_size elements is in it
      // (create_hooks: `if self.tmp_numels[current_type] >= self.message_size`).
      const bool full = !bucket.empty() && (apex ? numel >= s_.apex_message_size
                                                 : size.back() + b > cap && size.back() > 0);
      if (bucket.empty() || full) {
        numel = 0;
        bucket.emplace_back();
        size.push_back(0);
      }
      bucket.back().push_back(t);
      size.back() += b;
      numel += numel_of(g_, t);
      job_.gradient_bytes += g_.ops[t.op].outputs[t.output].bytes.v * s_.tp;
    }
    if (st == 0) job_.buckets = s_.dp > 1 ? static_cast<int>(bucket.size()) : 0;
    if (s_.dp == 1) continue;
    for (int d = 0; d < s_.dp; ++d)
      for (int tt = 0; tt < s_.tp; ++tt) {
        const int r = rank(d, tt, st);
        std::vector<sim::OpId> ops(bucket.size());
        for (std::size_t b = 0; b < bucket.size(); ++b) {
          sim::Op ar;
          ar.name = prefix(r) +
                    (flat ? "ddp/allreduce_flat" : "ddp/allreduce_bucket" + std::to_string(b));
          ar.type = "AllReduce";
          ar.phase = sim::Phase::Backward;
          ar.layer = "ddp";
          for (const sim::TensorRef& t : bucket[b])
            ar.inputs.push_back({id(r, t.op, s_.mb - 1), t.output});
          sim::TensorOut flat;  // the bucket's flat gradient buffer, reduced in place
          flat.bytes = sim::Bytes{size[b]};
          ar.outputs = {flat};
          sim::CollectiveCall call;
          call.kind = sim::CollectiveKind::AllReduce;
          call.bytes = flat.bytes;
          call.id = "ddp/bucket" + std::to_string(b) +
                    (s_.tp > 1 ? "/tp" + std::to_string(tt) : "") +
                    (s_.pp > 1 ? "/pp" + std::to_string(st) : "");
          ar.collective = call;
          ar.control_inputs = scale_into_bucket(r, b, bucket[b]);
          ops[b] = add(std::move(ar), gpus_[r]);
        }
        const std::map<sim::TensorRef, sim::OpId> copies = copy_bucket_to_grad(r, bucket, ops);
        // Every update waits for every bucket's all-reduce: DDP's backward() returns only once
        // the reducer has waited for all buckets (finalize_backward), and optimizer.step() runs
        // after it, so no parameter is updated while a bucket is still being reduced. The last
        // bucket's all-reduce (the first layers' gradients) is then exposed before the step.
        for (sim::OpId o = 0; o < n; ++o) {
          if (t_.kind[o] != Kind::Update || t_.stage[o] != st) continue;
          sim::Op& u = job_.graph.ops[id(r, o, 0)];
          for (const sim::OpId b : ops)
            if (std::find(u.control_inputs.begin(), u.control_inputs.end(), b) ==
                u.control_inputs.end())
              u.control_inputs.push_back(b);
          // ... and reads its gradients once they are copied back (the copies run in bucket
          // order on the compute stream before the optimizer's kernels).
          for (const sim::TensorRef& t : g_.ops[o].inputs)
            if (const auto c = copies.find(t); c != copies.end())
              u.control_inputs.push_back(c->second);
        }
      }
  }
}

// The 1F1B schedule as control edges: every op that ends a forward or backward pass of one
// micro-batch on a stage comes before every op that starts the next pass in the stage's order.
// Sends and receives stay outside (they progress as the peers allow, as NCCL's p2p does).
void JobBuilder::schedule() {
  if (s_.pp == 1 && s_.mb == 1) return;
  const int n = g_.num_ops();
  for (int st = 0; st < s_.pp; ++st) {
    std::vector<char> in_f(n, 0), in_b(n, 0);
    for (sim::OpId o = 0; o < n; ++o) {
      if (t_.kind[o] == Kind::Data && t_.used_on[o][st]) in_f[o] = 1;
      if (t_.kind[o] != Kind::Step || t_.stage[o] != st) continue;
      (g_.ops[o].phase == sim::Phase::Backward ? in_b : in_f)[o] = 1;
    }
    auto ends = [&](const std::vector<char>& in, bool entry) {
      std::vector<sim::OpId> out;
      for (sim::OpId o = 0; o < n; ++o) {
        if (!in[o]) continue;
        bool inner = false;
        if (entry) {
          for (const sim::TensorRef& t : g_.ops[o].inputs) inner = inner || in[t.op];
          for (sim::OpId c : g_.ops[o].control_inputs) inner = inner || in[c];
        } else {
          for (sim::OpId c : g_.consumers_of[o]) inner = inner || in[c];
        }
        if (!inner) out.push_back(o);
      }
      return out;
    };
    const std::vector<sim::OpId> f_entry = ends(in_f, true), f_exit = ends(in_f, false);
    const std::vector<sim::OpId> b_entry = ends(in_b, true), b_exit = ends(in_b, false);
    const auto seq = one_f_one_b(st, s_.pp, s_.mb);
    for (int d = 0; d < s_.dp; ++d)
      for (int tt = 0; tt < s_.tp; ++tt) {
        const int r = rank(d, tt, st);
        for (std::size_t i = 1; i < seq.size(); ++i) {
          const auto [pb, pk] = seq[i - 1];
          const auto [nb, nk] = seq[i];
          for (sim::OpId e : nb ? b_entry : f_entry) {
            std::vector<sim::OpId>& ctl = job_.graph.ops[id(r, e, nk)].control_inputs;
            for (sim::OpId x : pb ? b_exit : f_exit) ctl.push_back(id(r, x, pk));
          }
        }
      }
  }
}

// The input pipeline of each replica, as PyTorch's DataLoader runs it: `loader_workers` worker
// processes on the host CPU of the replica's first GPU, each decoding and augmenting its share of
// the next step's samples while this step runs (prefetch: no edge to the step's ops). Each worker
// is one CPU op of type "DataLoader", which sim/simulate.cpp (kLoaderType) runs on one thread, at
// most 1/worker_threads of the socket: its work at the whole socket is (its samples x loader_us)
// / worker_threads, so it takes samples x loader_us alone, and workers beyond the socket's threads
// share it (sim/cpu_share.hpp). The step ends when the last of them does: step = max(GPU step,
// slowest worker).
void JobBuilder::loaders() {
  if (s_.loader_workers <= 0) return;
  const std::int64_t images = samples * s_.mb;
  for (int r = 0; r < ranks_; ++r) {
    if (pp_of(r) != 0 || tp_of(r) != 0) continue;  // the first stage's first tp rank loads
    const sim::DeviceId host = c_.devices[gpus_[r]].host;
    const std::int64_t threads = std::max(1, c_.devices[host].spec.worker_threads);
    for (int w = 0; w < s_.loader_workers; ++w) {
      const std::int64_t mine =
          images / s_.loader_workers + (w < images % s_.loader_workers ? 1 : 0);
      if (mine == 0) continue;
      sim::Op op;
      op.name = prefix(r) + "input/loader" + std::to_string(w);
      op.type = "DataLoader";
      op.device_kind = sim::DeviceKind::Cpu;
      op.measured = sim::Duration{mine * s_.loader_us * 1000 / threads};
      op.layer = "input";
      add(std::move(op), host);
    }
  }
}

ParallelJob JobBuilder::build(const std::string& origin) {
  copy_ops();
  connect();
  accumulate_grads();
  buckets();
  schedule();
  loaders();
  job_.spec = s_;
  job_.replicas = s_.dp;
  job_.persistent_bytes.assign(ranks_, 0);
  for (std::size_t o = 0; o < job_.graph.ops.size(); ++o) {
    const auto it = std::find(gpus_.begin(), gpus_.end(), job_.placement.device_of[o]);
    if (it != gpus_.end() && it - gpus_.begin() < ranks_)
      job_.persistent_bytes[it - gpus_.begin()] += job_.graph.ops[o].persistent.v;
  }
  job_.graph.finalize(origin);
  return std::move(job_);
}

// The graph option input=pil|pil_autoaugment,input_workers=W (metadata "input", "input_workers",
// set by models/registry.cpp): W loader workers per replica at the measured per-image CPU time of
// ConvNets' PIL pipeline, plain (kPilConvnetsUs) or EfficientNet's AutoAugment one
// (kPilAutoaugmentUs). A --parallel loader beside it would be a second, conflicting pipeline.
void apply_input_option(const sim::Graph& g, ParallelSpec& s, const std::string& origin) {
  const auto it = g.metadata.find("input");
  if (it == g.metadata.end() || it->second == "synthetic") return;
  if (it->second != "pil" && it->second != "pil_autoaugment")
    throw sim::InputError(origin, "input",
                          "synthetic, pil or pil_autoaugment, got \"" + it->second + "\"");
  if (s.loader_workers > 0)
    throw sim::InputError(
        origin, "loader_workers",
        "either --graph-opt input=" + it->second + " or loader_workers/loader_us, got both");
  const auto w = g.metadata.find("input_workers");
  int n = 0;
  try {
    n = w == g.metadata.end() ? 0 : std::stoi(w->second);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n < 1)
    throw sim::InputError(origin, "input_workers",
                          "a whole number from 1 beside input=" + it->second);
  s.loader_workers = n;
  s.loader_us = it->second == "pil" ? kPilConvnetsUs : kPilAutoaugmentUs;
}

}  // namespace

void refuse_input_without_parallel(const sim::Graph& g, const std::string& origin,
                                   const std::string& key) {
  const auto it = g.metadata.find("input");
  if (it == g.metadata.end() || it->second == "synthetic") return;
  throw sim::InputError(origin, key,
                        "--parallel (dp=1 for one GPU; the data-parallel transform adds the "
                        "loader) beside input=" +
                            it->second + ", got none");
}

ParallelJob make_parallel(const sim::Graph& g, const sim::Cluster& c, const ParallelSpec& spec) {
  const std::string origin = "<parallel " + to_string(spec) + ">";
  const std::vector<sim::DeviceId> gpus = c.gpus();
  ParallelSpec s = spec;
  apply_input_option(g, s, origin);
  const int model = s.tp * s.pp;
  if (s.dp == 0) s.dp = std::max(1, static_cast<int>(gpus.size()) / model);
  if (static_cast<std::int64_t>(gpus.size()) < static_cast<std::int64_t>(s.dp) * model)
    throw sim::InputError(origin, s.tp * s.pp > 1 ? "dp*tp*pp" : "dp",
                          "at most the " + std::to_string(gpus.size()) + " GPUs of cluster " +
                              c.name + ", got " + std::to_string(s.dp * model));
  bool has_grads = false;
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Update)
      for (const sim::TensorRef& t : op.inputs)
        has_grads = has_grads || g.ops[t.op].phase == sim::Phase::Backward;
  if (!has_grads && (s.dp > 1 || s.pp > 1 || s.mb > 1))
    throw sim::InputError(origin, g.name,
                          "a training graph with update ops fed by backward ops (gradients "
                          "to all-reduce), got none");
  TpShard shard = shard_tensor_parallel(g, s.tp, origin);
  if (s.recompute) shard.graph = recompute_layers(shard.graph, origin);
  StagePlan plan;
  if (s.pp > 1) {
    plan = plan_stages(shard.graph, s.pp, origin);
  } else {
    plan.stage.assign(shard.graph.num_ops(), 0);
    plan.blocks_per_stage = {1};
    double f = 0.0;
    for (const sim::Op& op : shard.graph.ops)
      if (op.phase == sim::Phase::Forward || op.phase == sim::Phase::Backward) f += op.flops.v;
    plan.flops_per_stage = {f};
  }
  // Every op is copied per micro-batch and per GPU: bound the job before building it.
  static constexpr std::int64_t kMaxJobOps = 20'000'000;
  const std::int64_t job_ops = static_cast<std::int64_t>(shard.graph.num_ops()) * s.mb * s.dp *
                               s.tp;  // pp splits the ops, it does not copy them
  if (job_ops > kMaxJobOps)
    throw sim::InputError(origin, "mb",
                          "a job of at most " + std::to_string(kMaxJobOps) +
                              " ops (ops x mb x dp x tp), got " + std::to_string(job_ops));
  const Template t = classify(shard.graph, plan, s.pp, s.mb);
  JobBuilder b(t, c, s, gpus);
  b.samples = graph_batch(g);
  if (s.loader_workers > 0 && b.samples < 1)
    throw sim::InputError(origin, "loader_workers",
                          "a graph with a batch option (samples to load), got none in " + g.name);
  if (s.accumulate > 1 && s.loader_workers > 0)
    throw sim::InputError(origin, "accumulate",
                          "no input pipeline (loader_workers, input=pil) beside accumulate (the "
                          "step is composed from two micro-batches), got one");
  ParallelJob job = b.build(origin);
  if (s.accumulate > 1) {
    ParallelSpec one = s;  // one replica: its tp ranks, no exchange, no update
    one.dp = 1;
    JobBuilder acc(t, c, one, gpus, true);
    ParallelJob a = acc.build(origin + " accumulating micro-batch");
    job.accumulating = std::move(a.graph);
    job.accumulating.name = g.name + "@" + to_string(s) + "/accumulating";
    job.accumulating_placement = std::move(a.placement);
  }
  job.graph.name = g.name + "@" + to_string(s);
  job.graph.metadata = g.metadata;
  job.graph.metadata["parallel"] = to_string(s);
  job.tp_pairs = shard.pairs;
  job.tp_allreduces = shard.allreduces;
  job.stage_layers = plan.blocks_per_stage;
  job.stage_flops = plan.flops_per_stage;
  return job;
}

}  // namespace placesim::models

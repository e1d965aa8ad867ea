// build_gpt_huge: a GPT training step of tens of millions of ops, streamed into a StepGraphBuilder.
// Per layer and tensor-parallel rank, Megatron-LM's ops (Shoeybi et al. 2019, Fig. 3): LayerNorm,
// the column-parallel QKV projection, attention (fused, flash-style: no s x s score tensor kept),
// the row-parallel output projection and its all-reduce, LayerNorm, the MLP's column- and
// row-parallel linears around GeLU and their all-reduce; backward mirrors it (2x the matmul FLOPs,
// an all-reduce after each column-parallel input gradient). All-reduces are ring all-reduces as
// NCCL runs them: a pack, n-1 reduce-scatter steps and n-1 all-gather steps per rank, each step an
// op whose input is its ring neighbour's previous chunk (so the engine moves each chunk over the
// real links, sharing them by max-min). Gradients are all-reduced across the dp replicas per layer
// after the last micro-batch's backward, then each layer's Adam update runs.
#include "models/huge_step.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <tbb/concurrent_queue.h>
#include <tbb/task_arena.h>
#include <thread>
#include <tuple>
#include <vector>

#include "models/workloads.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

using sim::OpId;
using sim::Phase;

/// One (micro-batch, stage) pass: forward or backward.
struct Task {
  bool forward;
  int mb;
};

/// The 1F1B order of stage s (Narayanan et al. 2021): pp-s-1 warm-up forwards, then one forward
/// and one backward in turn, then the remaining backwards.
std::vector<Task> one_f_one_b(int s, int pp, int mb) {
  const int warm = std::min(pp - s - 1, mb);
  std::vector<Task> t;
  for (int m = 0; m < warm; ++m) t.push_back({true, m});
  for (int m = warm; m < mb; ++m) {
    t.push_back({true, m});
    t.push_back({false, m - warm});
  }
  for (int m = mb - warm; m < mb; ++m) t.push_back({false, m});
  return t;
}

class Generator {
 public:
  Generator(const sim::Cluster& c, const HugeGptShape& g, const ParallelSpec& p,
            sim::StepGraphBuilder* b)
      : g_(g), p_(p), b_(b), e_(sim::dtype_size(g.half)) {
    act_ = g.batch * g.seq * g.hidden * e_;
    for (int s = 0; s < p.pp; ++s) first_layer_.push_back(s * g.layers / p.pp);
    first_layer_.push_back(g.layers);
    const std::vector<sim::DeviceId> gpus = c.gpus();
    if (static_cast<std::int64_t>(gpus.size()) >= static_cast<std::int64_t>(p.dp) * p.tp * p.pp) {
      for (int i = 0; i < p.dp * p.tp * p.pp; ++i) gpu_.push_back(gpus[i]);
    } else {  // counting only
      gpu_.assign(static_cast<std::size_t>(p.dp) * p.tp * p.pp, 0);
    }
  }

  /// Emits the whole step in a topological order: tasks of the stages as their cross-stage
  /// inputs exist, then each stage's gradient all-reduces and updates after its last backward.
  void run();
  void flush();
  /// Where full batches go instead of the builder: it swaps in an empty batch.
  std::function<void(std::vector<sim::Op>&, std::size_t)> sink_;
  std::int64_t ops = 0, edges = 0, ring_ops = 0;
  sim::Placement placement;
  /// Files into `b` (after construction: sim::simulate_while_building makes the builder).
  void attach(sim::StepGraphBuilder* b) { b_ = b; }
  /// Declare a watermark to the builder after each task (a streamed run reads it).
  bool declare_ = false;

 private:
  [[nodiscard]] int dev(int r, int t, int s) const { return gpu_[t + p_.tp * (r + p_.dp * s)]; }
  OpId emit(int dev, const char* type, double flops, std::int64_t read, std::int64_t out,
            std::initializer_list<OpId> in, Phase ph, OpId ctl = -1, std::int64_t persist = 0);
  /// Ring all-reduce of `bytes` over `devs`, rank i starting from src[i]; the result per rank.
  std::vector<OpId> all_reduce(const std::vector<int>& devs, const std::vector<OpId>& src,
                               std::int64_t bytes, Phase ph);
  std::vector<OpId> tp_all_reduce(int r, int s, const std::vector<OpId>& src, Phase ph);
  void forward(int m, int s, int r);
  void backward(int m, int s, int r);
  void gradients(int s);
  void run_task(const Task& t, int s);
  /// The oldest op a future op can still read: every op a later emit() reads is in the maps
  /// below (activations saved for backward, stage outputs, each stage's last op, gradients) or
  /// emitted later, so between tasks the watermark is the least op they hold.
  [[nodiscard]] OpId oldest_ref() const;
  void declare();

  const HugeGptShape g_;
  const ParallelSpec p_;
  sim::StepGraphBuilder* b_;  // null: count only
  const std::int64_t e_;      // bytes per half element
  std::int64_t act_ = 0;      // bytes of one layer's activation (batch x seq x hidden)
  std::vector<int> first_layer_;
  std::vector<int> gpu_;
  // Ops go to the builder in batches, which it prices in parallel (StepGraphBuilder::add_ops);
  // each Op is reused, so its vectors and strings keep their capacity.
  static constexpr std::size_t kBatch = 4096;
  std::vector<sim::Op> batch_;
  std::size_t nb_ = 0;
  // Per (mb, stage, replica): the forward ops each layer's backward reads, per tp rank.
  std::map<std::tuple<int, int, int>, std::vector<OpId>> saved_;
  // Per (mb, stage, replica): the stage's output per tp rank (activation or input gradient).
  std::map<std::tuple<int, int, int>, std::vector<OpId>> fwd_out_, bwd_out_;
  std::map<std::tuple<int, int, int>, OpId> last_;  // per (replica, tp, stage): last task's end
  // Per (stage, replica, tp): per parameter group, the op after which its gradient is complete.
  std::map<std::tuple<int, int, int>, std::vector<std::pair<OpId, std::int64_t>>> grads_;
};

OpId Generator::emit(int dev, const char* type, double flops, std::int64_t read, std::int64_t out,
                     std::initializer_list<OpId> in, Phase ph, OpId ctl, std::int64_t persist) {
  const OpId id = static_cast<OpId>(ops);
  if (ops >= std::numeric_limits<std::int32_t>::max() - 1)
    throw sim::InputError("<graph gpt-huge>", "", "fewer than 2^31 ops, got more");
  ++ops;
  edges += static_cast<std::int64_t>(in.size());
  if (!b_) return id;
  if (batch_.empty()) batch_.resize(kBatch);
  sim::Op& op_ = batch_[nb_++];
  op_.type = type;
  op_.flops = sim::Flops{flops};
  op_.bytes_read = sim::Bytes{read};
  op_.dtype = ph == Phase::Update ? sim::Dtype::F32 : g_.half;
  op_.outputs.assign(1, {.bytes = sim::Bytes{out}});
  op_.inputs.clear();
  for (OpId i : in)
    if (i >= 0) op_.inputs.push_back({i, 0});
  op_.control_inputs.clear();
  if (ctl >= 0) op_.control_inputs.push_back(ctl);
  op_.phase = ph;
  op_.persistent = sim::Bytes{persist};
  placement.device_of.push_back(dev);
  if (nb_ == batch_.size()) flush();
  return id;
}

void Generator::flush() {
  if (sink_) {
    sink_(batch_, nb_);  // hands the batch over and gets an empty one back (a pipeline)
  } else {
    b_->add_ops(std::span<const sim::Op>(batch_.data(), nb_));
  }
  nb_ = 0;
}

std::vector<OpId> Generator::all_reduce(const std::vector<int>& devs, const std::vector<OpId>& src,
                                        std::int64_t bytes, Phase ph) {
  const int n = static_cast<int>(devs.size());
  if (n == 1) return src;
  const std::int64_t chunk = (bytes + n - 1) / n;
  const double elems = static_cast<double>(chunk / e_);
  std::vector<OpId> cur(n), next(n);
  for (int i = 0; i < n; ++i) cur[i] = emit(devs[i], "Pack", 0, chunk, chunk, {src[i]}, ph);
  // Step k: rank i adds (reduce-scatter) or keeps (all-gather) the chunk rank i-1 sent at k-1.
  for (int k = 1; k <= 2 * (n - 1); ++k) {
    const bool reduce = k < n;
    for (int i = 0; i < n; ++i)
      next[i] =
          emit(devs[i], reduce ? "Add" : "Identity", reduce ? elems : 0, reduce ? 2 * chunk : chunk,
               k == 2 * (n - 1) ? bytes : chunk, {cur[i], cur[(i + n - 1) % n]}, ph);
    cur.swap(next);
  }
  ring_ops += static_cast<std::int64_t>(n) * (2 * n - 1);
  return cur;
}

std::vector<OpId> Generator::tp_all_reduce(int r, int s, const std::vector<OpId>& src, Phase ph) {
  std::vector<int> devs(p_.tp);
  for (int t = 0; t < p_.tp; ++t) devs[t] = dev(r, t, s);
  return all_reduce(devs, src, act_, ph);
}

void Generator::forward(int m, int s, int r) {
  const int T = p_.tp;
  const double A = static_cast<double>(g_.batch * g_.seq * g_.hidden), h = g_.hidden;
  const std::int64_t a = act_, w = g_.hidden * g_.hidden * e_ / T;
  std::vector<OpId> x(T), y(T), ar(T), f4(T), f5(T);
  auto& saved = saved_[{m, s, r}];
  for (int t = 0; t < T; ++t) {
    const OpId ctl = last_.contains({r, t, s}) ? last_[{r, t, s}] : -1;
    x[t] = s == 0 ? emit(dev(r, t, s), "Gather", 0, a, a, {}, Phase::Forward, ctl)
                  : emit(dev(r, t, s), "Identity", 0, a, a, {fwd_out_[{m, s - 1, r}][t]},
                         Phase::Forward, ctl);
  }
  if (s > 0) fwd_out_.erase({m, s - 1, r});
  for (int l = first_layer_[s]; l < first_layer_[s + 1]; ++l) {
    for (int t = 0; t < T; ++t) {
      const int d = dev(r, t, s);
      const OpId f1 = emit(d, "LayerNorm", 5 * A, a, a, {x[t]}, Phase::Forward);
      const OpId f2 = emit(d, "MatMul", 6 * A * h / T, a + 3 * w, 3 * a / T, {f1}, Phase::Forward);
      const OpId f3 = emit(d, "Attention", 4.0 * g_.batch * g_.seq * g_.seq * h / T, 3 * a / T,
                           a / T, {f2}, Phase::Forward);
      f4[t] = emit(d, "MatMul", 2 * A * h / T, a / T + w, a, {f3}, Phase::Forward);
      saved.insert(saved.end(), {x[t], f1, f2, f3});
    }
    ar = tp_all_reduce(r, s, f4, Phase::Forward);
    for (int t = 0; t < T; ++t) {
      const int d = dev(r, t, s);
      f5[t] = emit(d, "LayerNorm", 6 * A, 2 * a, a, {ar[t], x[t]}, Phase::Forward);
      const OpId f6 =
          emit(d, "MatMul", 8 * A * h / T, a + 4 * w, 4 * a / T, {f5[t]}, Phase::Forward);
      const OpId f7 = emit(d, "Gelu", 8 * A / T, 4 * a / T, 4 * a / T, {f6}, Phase::Forward);
      f4[t] = emit(d, "MatMul", 8 * A * h / T, 4 * a / T + 4 * w, a, {f7}, Phase::Forward);
      saved.insert(saved.end(), {f5[t], f6, f7});
    }
    ar = tp_all_reduce(r, s, f4, Phase::Forward);
    for (int t = 0; t < T; ++t)
      y[t] = emit(dev(r, t, s), "Add", A, 2 * a, a, {ar[t], f5[t]}, Phase::Forward);
    x.swap(y);
  }
  if (s == p_.pp - 1) {  // the vocab-parallel LM head and the loss
    const std::int64_t logits = g_.batch * g_.seq * g_.vocab * e_ / T;
    for (int t = 0; t < T; ++t) {
      const int d = dev(r, t, s);
      const OpId head = emit(d, "MatMul", 2 * A * g_.vocab / T, a + g_.vocab * g_.hidden * e_ / T,
                             logits, {x[t]}, Phase::Forward);
      x[t] = emit(d, "CrossEntropy", 5.0 * g_.batch * g_.seq * g_.vocab / T, logits, logits, {head},
                  Phase::Forward);
      saved.push_back(head);
    }
  }
  for (int t = 0; t < T; ++t) last_[{r, t, s}] = x[t];
  fwd_out_[{m, s, r}] = x;
}

void Generator::backward(int m, int s, int r) {
  const int T = p_.tp, per_layer = 7;
  const double A = static_cast<double>(g_.batch * g_.seq * g_.hidden), h = g_.hidden;
  const std::int64_t a = act_, w = g_.hidden * g_.hidden * e_ / T;
  auto& saved = saved_[{m, s, r}];
  const bool last = s == p_.pp - 1, grads = m == p_.mb - 1;
  std::vector<OpId> gr(T), b3(T), b4(T), b7(T), ar(T);
  for (int t = 0; t < T; ++t) {
    const int d = dev(r, t, s);
    const OpId ctl = last_[{r, t, s}];
    if (last) {  // the loss's gradient through the head (its input gradient is all-reduced)
      const OpId head = saved[saved.size() - T + t];
      const std::int64_t logits = g_.batch * g_.seq * g_.vocab * e_ / T;
      const OpId ce = emit(d, "CrossEntropyGrad", 2.0 * g_.batch * g_.seq * g_.vocab / T, logits,
                           logits, {fwd_out_[{m, s, r}][t]}, Phase::Backward, ctl);
      gr[t] = emit(d, "MatMul", 4 * A * g_.vocab / T, logits + g_.vocab * g_.hidden * e_ / T, a,
                   {ce, head}, Phase::Backward);
      if (grads) grads_[{s, r, t}].emplace_back(gr[t], g_.vocab * g_.hidden / T);
    } else {
      gr[t] = emit(d, "Identity", 0, a, a, {bwd_out_[{m, s + 1, r}][t]}, Phase::Backward, ctl);
    }
  }
  if (last) gr = tp_all_reduce(r, s, gr, Phase::Backward);
  if (last) fwd_out_.erase({m, s, r});
  if (!last) bwd_out_.erase({m, s + 1, r});
  const int layers = first_layer_[s + 1] - first_layer_[s];
  for (int l = layers - 1; l >= 0; --l) {
    // Saved layout per layer: T x {x, f1, f2, f3}, then T x {f5, f6, f7}.
    const std::size_t base = static_cast<std::size_t>(l) * T * per_layer;
    auto sv = [&](int t, int k) {
      return k < 4 ? saved[base + static_cast<std::size_t>(t) * 4 + k]
                   : saved[base + static_cast<std::size_t>(T) * 4 + t * 3 + (k - 4)];
    };
    for (int t = 0; t < T; ++t) {
      const int d = dev(r, t, s);
      const OpId b1 = emit(d, "MatMul", 16 * A * h / T, a + 4 * w + 4 * a / T, 4 * a / T,
                           {gr[t], sv(t, 6)}, Phase::Backward);
      const OpId b2 =
          emit(d, "GeluGrad", 8 * A / T, 8 * a / T, 4 * a / T, {b1, sv(t, 5)}, Phase::Backward);
      b3[t] = emit(d, "MatMul", 16 * A * h / T, 4 * a / T + 4 * w + a, a, {b2, sv(t, 4)},
                   Phase::Backward);
    }
    ar = tp_all_reduce(r, s, b3, Phase::Backward);
    for (int t = 0; t < T; ++t) {
      const int d = dev(r, t, s);
      b4[t] = emit(d, "LayerNormGrad", 8 * A, 3 * a, a, {ar[t], gr[t], sv(t, 4)}, Phase::Backward);
      const OpId b5 = emit(d, "MatMul", 4 * A * h / T, a + w + a / T, a / T, {b4[t], sv(t, 3)},
                           Phase::Backward);
      const OpId b6 = emit(d, "AttentionGrad", 8.0 * g_.batch * g_.seq * g_.seq * h / T, 4 * a / T,
                           3 * a / T, {b5, sv(t, 2)}, Phase::Backward);
      b7[t] = emit(d, "MatMul", 12 * A * h / T, 3 * a / T + 3 * w + a, a, {b6, sv(t, 1)},
                   Phase::Backward);
      if (grads) grads_[{s, r, t}].emplace_back(b7[t], 12 * g_.hidden * g_.hidden / T);
    }
    ar = tp_all_reduce(r, s, b7, Phase::Backward);
    for (int t = 0; t < T; ++t)
      gr[t] = emit(dev(r, t, s), "LayerNormGrad", 8 * A, 3 * a, a, {ar[t], b4[t], sv(t, 0)},
                   Phase::Backward);
  }
  if (s == 0)
    for (int t = 0; t < T; ++t) {
      gr[t] = emit(dev(r, t, s), "EmbeddingGrad", A, 2 * a, 0, {gr[t]}, Phase::Backward);
      if (grads) grads_[{s, r, t}].emplace_back(gr[t], g_.vocab * g_.hidden / T);
    }
  saved_.erase({m, s, r});
  for (int t = 0; t < T; ++t) last_[{r, t, s}] = gr[t];
  if (s > 0) bwd_out_[{m, s, r}] = gr;
}

// Per parameter group (layer, embedding, head), in the order backward completed them: the
// gradient all-reduced over the dp replicas, then its Adam update holding the group's weights,
// master copy and state resident (16 bytes per parameter, mixed precision).
void Generator::gradients(int s) {
  for (int t = 0; t < p_.tp; ++t) {
    const std::size_t groups = grads_[{s, 0, t}].size();
    for (std::size_t k = 0; k < groups; ++k) {
      std::vector<int> devs(p_.dp);
      std::vector<OpId> src(p_.dp);
      const std::int64_t params = grads_[{s, 0, t}][k].second;
      for (int r = 0; r < p_.dp; ++r) {
        devs[r] = dev(r, t, s);
        src[r] = grads_[{s, r, t}][k].first;
      }
      const std::vector<OpId> red = all_reduce(devs, src, params * e_, Phase::Backward);
      for (int r = 0; r < p_.dp; ++r)
        emit(devs[r], "ApplyAdam", 10.0 * static_cast<double>(params), 16 * params, 0, {red[r]},
             Phase::Update, -1, 16 * params);
    }
    for (int r = 0; r < p_.dp; ++r) grads_.erase({s, r, t});
  }
}

void Generator::run_task(const Task& t, int s) {
  for (int r = 0; r < p_.dp; ++r) {
    if (t.forward)
      forward(t.mb, s, r);
    else
      backward(t.mb, s, r);
  }
}

OpId Generator::oldest_ref() const {
  auto w = static_cast<OpId>(ops);
  for (const auto* m : {&saved_, &fwd_out_, &bwd_out_})
    for (const auto& [k, v] : *m)
      for (OpId o : v) w = std::min(w, o);
  for (const auto& [k, o] : last_) w = std::min(w, o);
  for (const auto& [k, v] : grads_)
    for (const auto& [o, params] : v) w = std::min(w, o);
  return w;
}

void Generator::declare() {
  if (!declare_ || !b_) return;
  flush();  // the promise holds from the next op filed on
  // Sources (stage 0's first forward: no input, no control input) are done once every replica
  // and tp rank of stage 0 has run a task.
  bool sources_done = true;
  for (int r = 0; r < p_.dp && sources_done; ++r)
    for (int t = 0; t < p_.tp && sources_done; ++t) sources_done = last_.contains({r, t, 0});
  b_->set_watermark(oldest_ref(), sources_done);
}

void Generator::run() {
  const int pp = p_.pp, mb = p_.mb;
  std::vector<std::vector<Task>> order(pp);
  for (int s = 0; s < pp; ++s) order[s] = one_f_one_b(s, pp, mb);
  std::vector<std::size_t> pos(pp, 0);
  std::vector<char> fdone(static_cast<std::size_t>(pp) * mb, 0), bdone(fdone.size(), 0);
  std::size_t left = 0;
  for (const auto& o : order) left += o.size();
  while (left > 0) {
    bool progress = false;
    for (int s = 0; s < pp; ++s)
      while (pos[s] < order[s].size()) {
        const Task t = order[s][pos[s]];
        const std::size_t i = static_cast<std::size_t>(t.mb) * pp + s;
        const bool ready = t.forward ? (s == 0 || fdone[i - 1]) : (s == pp - 1 || bdone[i + 1]);
        if (!ready) break;
        run_task(t, s);
        (t.forward ? fdone : bdone)[i] = 1;
        ++pos[s];
        --left;
        progress = true;
        if (pos[s] == order[s].size()) gradients(s);
        declare();
      }
    if (!progress)
      throw sim::InputError("<graph gpt-huge>", "", "a 1F1B order without deadlock, got one");
  }
}

}  // namespace

HugeGptShape parse_gpt_huge(const std::string& text, const std::string& origin) {
  GraphOptions o(text, origin);
  o.accept({"layers", "hidden", "seq", "batch", "vocab", "precision"});
  constexpr std::int64_t kMax = std::int64_t{1} << 20;
  HugeGptShape g;
  g.layers = static_cast<int>(o.get_int("layers", g.layers, 1, kMax));
  g.hidden = o.get_int("hidden", g.hidden, 1, kMax);
  g.seq = o.get_int("seq", g.seq, 1, kMax);
  g.batch = o.get_int("batch", g.batch, 1, kMax);
  g.vocab = o.get_int("vocab", g.vocab, 1, kMax);
  g.half = o.get_choice("precision", "bf16", {"bf16", "f16"}) == "bf16" ? sim::Dtype::BF16
                                                                        : sim::Dtype::F16;
  return g;
}

namespace {
void check_spec(const HugeGptShape& g, const ParallelSpec& p, int gpus) {
  const std::string where = "<flag --parallel>";
  if (p.dp < 1 || p.tp < 1 || p.pp < 1 || p.mb < 1)
    throw sim::InputError(where, "",
                          "dp, tp, pp and mb of at least 1 (no dp=all), got " + to_string(p));
  if (static_cast<std::int64_t>(p.dp) * p.tp * p.pp > gpus)
    throw sim::InputError(
        where, "", "at most " + std::to_string(gpus) + " GPUs (dp*tp*pp), got " + to_string(p));
  if (p.pp > g.layers)
    throw sim::InputError(
        where, "pp",
        "at most the layers (" + std::to_string(g.layers) + "), got " + std::to_string(p.pp));
  if (g.hidden % p.tp != 0)
    throw sim::InputError(
        where, "tp",
        "a divisor of hidden (" + std::to_string(g.hidden) + "), got " + std::to_string(p.tp));
}
}  // namespace

namespace {
/// With more than one thread, generating and pricing the ops (a thread of its own, pricing on
/// this arena) and filing them into the builder (this thread) overlap: batches go through a
/// bounded queue in order, so the step is the one a single thread builds. Pricing is on the
/// producer's side because filing is sequential and generation alone is the smaller half: on 2
/// cores the two sides are then about even (docs/engine.md, "Parallel engine").
void generate_pipelined(Generator& gen, sim::StepGraphBuilder& b) {
  struct Batch {
    std::vector<sim::Op> ops;
    std::size_t n = 0;
    sim::StepGraphBuilder::PricedOps priced;
  };
  constexpr int kSlots = 4;
  std::vector<Batch> slots(kSlots);
  tbb::concurrent_bounded_queue<Batch*> full, empty;
  for (Batch& x : slots) empty.push(&x);
  // The producer prices on the threads the filing one leaves: on 2 threads inline (a parallel
  // loop there only woke a worker per batch for nothing, ~14 % more CPU on the 10 M-op step).
  tbb::task_arena arena(std::max(1, tbb::this_task_arena::max_concurrency() - 1));
  gen.sink_ = [&](std::vector<sim::Op>& batch, std::size_t n) {
    Batch* x = nullptr;
    empty.pop(x);
    x->ops.swap(batch);
    x->n = n;
    batch.resize(x->ops.size());  // the swapped-in batch keeps its Ops' capacity
    arena.execute([&] { b.price_ops(std::span<const sim::Op>(x->ops.data(), x->n), x->priced); });
    full.push(x);
  };
  std::exception_ptr error;
  std::thread producer([&] {
    try {
      gen.run();
      gen.flush();
    } catch (...) {
      error = std::current_exception();
    }
    full.push(nullptr);
  });
  std::exception_ptr filing;
  for (;;) {
    Batch* x = nullptr;
    full.pop(x);
    if (!x) break;
    if (!filing) {
      try {
        b.add_priced_ops(std::span<const sim::Op>(x->ops.data(), x->n), x->priced);
      } catch (...) {
        filing = std::current_exception();  // drain the queue so the producer can finish
      }
    }
    empty.push(x);
  }
  producer.join();
  if (error) std::rethrow_exception(error);
  if (filing) std::rethrow_exception(filing);
}
}  // namespace

HugeRun simulate_gpt_huge(const sim::Cluster& cluster, const HugeGptShape& shape,
                          const ParallelSpec& par, const sim::KernelCostModel& costs,
                          const sim::SimOptions& options) {
  if (options.threads == 1) {  // as before: build, then simulate
    HugeStep h = build_gpt_huge(cluster, shape, par, costs, 1);
    sim::Outcome o = sim::simulate(h.step, h.placement, options);
    return HugeRun{std::move(h), std::move(o), false, 0.0};
  }
  check_spec(shape, par, static_cast<int>(cluster.gpus().size()));
  Generator count(sim::Cluster{}, shape, par, nullptr);
  count.run();
  Generator gen(cluster, shape, par, nullptr);
  gen.placement.device_of.reserve(static_cast<std::size_t>(count.ops));
  gen.declare_ = true;
  const sim::StepSize size{count.ops, count.ops, count.edges};  // one output per op
  sim::BuiltStep r = sim::simulate_while_building(
      cluster, costs, size, gen.placement,
      [&](sim::StepGraphBuilder& b) {
        gen.attach(&b);
        gen.run();
        gen.flush();
      },
      options);
  HugeStep h{std::move(r.step), std::move(gen.placement), gen.ops, gen.edges,
             gen.ring_ops,      par.dp * par.tp * par.pp};
  return HugeRun{std::move(h), std::move(r.outcome), r.overlapped, r.build_s};
}

std::int64_t gpt_huge_ops(const HugeGptShape& shape, const ParallelSpec& par) {
  check_spec(shape, par, std::numeric_limits<int>::max());
  Generator gen(sim::Cluster{}, shape, par, nullptr);
  gen.run();
  return gen.ops;
}

HugeStep build_gpt_huge(const sim::Cluster& cluster, const HugeGptShape& shape,
                        const ParallelSpec& par, const sim::KernelCostModel& costs, int threads) {
  if (threads > 0) {
    tbb::task_arena arena(threads);
    return arena.execute([&] { return build_gpt_huge(cluster, shape, par, costs, 0); });
  }
  check_spec(shape, par, static_cast<int>(cluster.gpus().size()));
  const std::int64_t n = gpt_huge_ops(shape, par);
  sim::StepGraphBuilder b(cluster, costs);
  b.reserve(static_cast<std::size_t>(n), 2 * static_cast<std::size_t>(n));
  Generator gen(cluster, shape, par, &b);
  gen.placement.device_of.reserve(static_cast<std::size_t>(n));
  if (tbb::this_task_arena::max_concurrency() > 1) {
    generate_pipelined(gen, b);
  } else {
    gen.run();
    gen.flush();
  }
  return HugeStep{std::move(b).finish(), std::move(gen.placement), gen.ops, gen.edges,
                  gen.ring_ops,          par.dp * par.tp * par.pp};
}

}  // namespace placesim::models

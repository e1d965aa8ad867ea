// The optimizer step as a framework runs it (--graph-opt optimizer_impl=...): the kernels each
// parameter's update launches and the bytes they move. Sources in docs/cost-model.md,
// "Optimizer kernels".
#include "models/optimizer_impl.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/error.hpp"

namespace placesim::models {

namespace {

// One elementwise kernel of an update: how many tensor lists a multi-tensor launch of it
// carries (its depth), whether its scalars are a per-tensor list, and the parameter-sized
// tensors it reads and writes (F32, 4 bytes an element).
struct KernelStep {
  std::string_view name;  // the aten op (per parameter; foreach: aten::_foreach_<name>)
  int depth;
  bool scalar_list;
  int reads;
  int writes;
};

// PyTorch 2.x torch/optim (weight_decay=0, dampening=0, nesterov/amsgrad/centered off): the
// per-parameter loops (_single_tensor_*) launch these kernels in this order for each parameter,
// the foreach ones (_multi_tensor_*) the same list as torch._foreach_* over all parameters.
// sgd.py: param.add_(grad, alpha=-lr) | _foreach_add_(params, grads).
constexpr std::array kSgd{KernelStep{"add_", 2, false, 2, 1}};
// sgd.py with momentum: buf.mul_(momentum); buf.add_(grad); param.add_(buf, alpha=-lr)
// (the A100 ResNet-50 trace: _foreach_mul_ on one list, then two _foreach_add_ on two).
constexpr std::array kMomentum{KernelStep{"mul_", 1, false, 1, 1},
                               KernelStep{"add_", 2, false, 2, 1},
                               KernelStep{"add_", 2, false, 2, 1}};
// adam.py: exp_avg.lerp_(grad); exp_avg_sq.mul_(beta2); exp_avg_sq.addcmul_(grad, grad);
// denom = exp_avg_sq.sqrt(); denom.div_(bias_correction2_sqrt) (a scalar list in foreach);
// denom.add_(eps); param.addcdiv_(exp_avg, denom, step_size) (a scalar list in foreach).
// addcmul_ reads grad twice through two operands of one kernel: counted once.
constexpr std::array kAdam{
    KernelStep{"lerp_", 2, false, 2, 1},    KernelStep{"mul_", 1, false, 1, 1},
    KernelStep{"addcmul_", 3, false, 2, 1}, KernelStep{"sqrt", 2, false, 1, 1},
    KernelStep{"div_", 1, true, 1, 1},      KernelStep{"add_", 1, false, 1, 1},
    KernelStep{"addcdiv_", 3, true, 3, 1}};
// rmsprop.py with momentum: square_avg.mul_(alpha); square_avg.addcmul_(grad, grad);
// avg = square_avg.sqrt(); avg.add_(eps); buf.mul_(momentum); buf.addcdiv_(grad, avg);
// param.add_(buf, alpha=-lr).
constexpr std::array kRmsProp{
    KernelStep{"mul_", 1, false, 1, 1}, KernelStep{"addcmul_", 3, false, 2, 1},
    KernelStep{"sqrt", 2, false, 1, 1}, KernelStep{"add_", 1, false, 1, 1},
    KernelStep{"mul_", 1, false, 1, 1}, KernelStep{"addcdiv_", 3, false, 3, 1},
    KernelStep{"add_", 2, false, 2, 1}};

// apex FusedLAMB (apex/optimizers/fused_lamb.py, step(); csrc/multi_tensor_lamb.cu @ 06a83ce7,
// multi_tensor_lamb_cuda), the optimizer of NVIDIA's BERT pre-training: the global gradient norm
// for clipping (multi_tensor_l2norm over all gradients), then per parameter group the per-tensor
// parameter norms (multi_tensor_l2norm, per_tensor), stage 1 (LAMBStage1Functor over g, p, m, v:
// the clipped gradient into m and v, the update term written over g), the per-tensor update norms
// (multi_tensor_l2norm over g) and stage 2 (LAMBStage2Functor over g, p: p -= lr * trust ratio *
// update). Five passes, 9 reads and 4 writes of a parameter-sized F32 tensor (fused Adam: 4 and 3).
// The norms' reductions write one float per tensor or chunk: no parameter-sized writes.
constexpr std::array kLamb{
    KernelStep{"l2norm_grad", 1, false, 1, 0}, KernelStep{"l2norm_param", 1, false, 1, 0},
    KernelStep{"lamb_stage1", 4, false, 4, 3}, KernelStep{"l2norm_update", 1, false, 1, 0},
    KernelStep{"lamb_stage2", 2, false, 2, 1}};

// BertAdam (NVIDIA/DeepLearningExamples @ 2a520dd5: PyTorch/LanguageModeling/BERT/optimization.py,
// BertAdam.step), run_squad.py's optimizer without --fp16: once a step apex multi_tensor_l2norm
// over grad_list (which holds the parameters p, not their gradients) and .item() on it (a host
// sync, kBertAdamNorm); then a Python loop launching per parameter, one eager op a kernel:
// `if global_grad_norm > max_grad_norm: p = p * max_grad_norm / global_grad_norm` (max_grad_norm
// 1.0; the norm of BERT's parameters is far above 1, its LayerNorm weights alone ~1 each, so it
// runs every step: mul, div, out of place); next_m.mul_(beta1).add_(1 - beta1, grad);
// next_v.mul_(beta2).addcmul_(1 - beta2, grad, grad); update = next_m / (next_v.sqrt() + e)
// (sqrt, add, div); `if weight_decay > 0: update += weight_decay * p.data` (mul, add_: the two
// kernels at kBertAdamDecay); update_with_lr = lr * update (mul); p.data.add_(-update_with_lr)
// (neg, add_). 14 kernels a decayed parameter, 12 one in run_squad.py's no_decay group
// ('bias', 'LayerNorm.bias', 'LayerNorm.weight': BERT's 1-D parameters, weight_decay 0.0).
constexpr std::array kBertAdam{
    KernelStep{"mul", 1, false, 1, 1},  KernelStep{"div", 1, false, 1, 1},
    KernelStep{"mul_", 1, false, 1, 1}, KernelStep{"add_", 2, false, 2, 1},
    KernelStep{"mul_", 1, false, 1, 1}, KernelStep{"addcmul_", 3, false, 2, 1},
    KernelStep{"sqrt", 1, false, 1, 1}, KernelStep{"add", 1, false, 1, 1},
    KernelStep{"div", 2, false, 2, 1},  KernelStep{"mul", 1, false, 1, 1},
    KernelStep{"add_", 2, false, 2, 1}, KernelStep{"mul", 1, false, 1, 1},
    KernelStep{"neg", 1, false, 1, 1},  KernelStep{"add_", 2, false, 2, 1}};
constexpr std::size_t kBertAdamDecay = 9;  // kBertAdam[9], [10]: the weight decay's mul, add_
constexpr KernelStep kBertAdamNorm{"l2norm", 1, false, 1, 0};

// pytorch aten/src/ATen/native/cuda/MultiTensorApply.cuh (4 KB kernel-argument variant; apex
// csrc/multi_tensor_apply.cuh has the same tensor and block limits, and its Python side passes
// chunk_size 2048 * 32): elements per chunk (one thread block each), and per depth the most
// tensors and chunks one launch carries.
constexpr std::int64_t kChunkSize = 65536;
constexpr std::array<int, 5> kMaxTensors{110, 64, 48, 36, 30};
constexpr std::array<int, 5> kMaxTensorsScalarList{96, 64, 48, 36, 30};
constexpr int kMaxBlocks = 320;

struct UpdateKind {
  std::string_view type;
  int slots;
  const KernelStep* steps;
  std::size_t n;
};
constexpr std::array kKinds{UpdateKind{"ApplyGradientDescent", 0, kSgd.data(), kSgd.size()},
                            UpdateKind{"ApplyMomentum", 1, kMomentum.data(), kMomentum.size()},
                            UpdateKind{"ApplyAdam", 2, kAdam.data(), kAdam.size()},
                            UpdateKind{"ApplyRMSProp", 2, kRmsProp.data(), kRmsProp.size()},
                            UpdateKind{"ApplyLamb", 2, kLamb.data(), kLamb.size()},
                            UpdateKind{"ApplyBertAdam", 2, kBertAdam.data(), kBertAdam.size()}};

const UpdateKind* kind_of(std::string_view type) {
  for (const UpdateKind& k : kKinds)
    if (k.type == type) return &k;
  return nullptr;
}

}  // namespace

std::optional<OptimizerImpl> parse_optimizer_impl(std::string_view s) {
  if (s == "apply") return OptimizerImpl::Apply;
  if (s == "per_param") return OptimizerImpl::PerParam;
  if (s == "foreach") return OptimizerImpl::Foreach;
  if (s == "fused") return OptimizerImpl::Fused;
  return std::nullopt;
}

namespace {

// One multi-tensor launch: the chunks [first, last] of tensor `tensor` ... as (tensor, elements).
struct Launch {
  std::vector<std::pair<std::size_t, std::int64_t>> parts;  // tensor index, elements it carries
};

// multi_tensor_apply's loop (MultiTensorApply.cuh): chunks are added tensor by tensor; a launch
// goes when the tensor list is full at a tensor's last chunk, the block list is full, or the
// last chunk is reached. A tensor cut mid-way carries on into the next launch.
std::vector<Launch> launches_of(const std::vector<std::int64_t>& numels, int depth,
                                bool scalar_list) {
  const int d = std::clamp(depth, 1, 5) - 1;
  const int max_tensors = scalar_list ? kMaxTensorsScalarList[static_cast<std::size_t>(d)]
                                      : kMaxTensors[static_cast<std::size_t>(d)];
  std::size_t last = numels.size();
  for (std::size_t t = 0; t < numels.size(); ++t)
    if (numels[t] > 0) last = t;
  std::vector<Launch> out;
  Launch cur;
  int tensors = 0, blocks = 0;
  for (std::size_t t = 0; t < numels.size(); ++t) {
    if (numels[t] <= 0) continue;
    ++tensors;
    const std::int64_t chunks = (numels[t] + kChunkSize - 1) / kChunkSize;
    for (std::int64_t c = 0; c < chunks; ++c) {
      ++blocks;
      const std::int64_t elems = std::min(kChunkSize, numels[t] - c * kChunkSize);
      if (!cur.parts.empty() && cur.parts.back().first == t)
        cur.parts.back().second += elems;
      else
        cur.parts.emplace_back(t, elems);
      const bool tensors_full = tensors == max_tensors && c == chunks - 1;
      const bool blocks_full = blocks == kMaxBlocks;
      const bool last_chunk = t == last && c == chunks - 1;
      if (tensors_full || blocks_full || last_chunk) {
        out.push_back(std::move(cur));
        cur = Launch{};
        blocks = 0;
        tensors = c == chunks - 1 ? 0 : 1;
      }
    }
  }
  return out;
}

// F32 optimizer state and master weights: 4 bytes an element.
constexpr std::int64_t kStateBytes = 4;

// The optimizer step's host time per parameter tensor besides its kernels' launches (the engine
// charges launch_overhead per launch apart): torch.optim's Python (Optimizer.step's hooks,
// _init_group's loop over the parameters and their state, grouping by device and dtype) and the
// per-tensor work of the foreach and fused calls. Measured without the profiler's own cost on
// torch 2.11 on the H200 rig's Xeon, on the session-24 traces (none of them a held-out row):
// ResNet-50 AMP NHWC b256 and b64 (foreach SGD with momentum and weight decay, 161 tensors, 13
// launches) and GPT-2 124M SDPA b8 (fused AdamW, 137 tensors, 11 launches): the median of their
// 10 Optimizer.step spans, (span - 5.2 or 2.3 us per recorded op - 6 us per launch) / tensors,
// is 6.5 us (5.7-15.8). `tools/optimizer_host.py TRACE --params N` prints each span. The
// per-parameter loops (_single_tensor_*) cost about the same per tensor besides their ops'
// dispatch (torch 1.13 on CPU tensors, tools/optim_host_rig.py). docs/cost-model.md, "The
// optimizer step's host time".
constexpr sim::Duration kHostPerTensor{6'500};

// One optimizer kernel as an Update op like the update `like` it replaces: its type names the
// aten op (per parameter), the foreach op, or `fused_type`; its bytes are `elems` F32 elements
// per tensor it reads and writes.
sim::Op kernel_op(const sim::Op& like, std::string name, const KernelStep& s, std::int64_t elems,
                  bool per_param, const std::string& fused_type) {
  sim::Op k;
  k.name = std::move(name);
  k.type = per_param            ? "aten::" + std::string(s.name)
           : fused_type.empty() ? "aten::_foreach_" + std::string(s.name)
                                : fused_type;
  k.phase = sim::Phase::Update;
  k.layer = like.layer;
  k.group = like.group;
  k.dtype = sim::Dtype::F32;
  // An elementwise kernel: a FLOP or two an element, memory-bound.
  k.flops = sim::Flops{static_cast<double>(elems) * s.reads};
  k.bytes_read = sim::Bytes{elems * kStateBytes * s.reads};
  k.bytes_written = sim::Bytes{elems * kStateBytes * s.writes};
  return k;
}

// Per parameter, its kernels (steps_of[i]) in order on the stream; the first holds its state
// (and master copy) resident and, when `gate` is an op (a host sync), is launched after it ends;
// each reads the parameter and gradient tensors of the update it replaces.
void emit_per_param(std::vector<sim::Op>& ops, const std::vector<sim::Op>& old,
                    const std::vector<std::int64_t>& numel,
                    const std::vector<std::vector<KernelStep>>& steps_of, sim::OpId gate) {
  for (std::size_t i = 0; i < old.size(); ++i) {
    const std::vector<KernelStep>& steps = steps_of[i];
    sim::OpId prev = gate;
    for (std::size_t s = 0; s < steps.size(); ++s) {
      sim::Op k = kernel_op(
          old[i], old[i].name + "/" + std::to_string(s) + "_" + std::string(steps[s].name),
          steps[s], numel[i], true, "");
      k.inputs = old[i].inputs;
      k.control_inputs = old[i].control_inputs;
      if (prev >= 0) k.control_inputs.push_back(prev);
      if (s == 0) {
        k.persistent = old[i].persistent;
        k.host_before = kHostPerTensor;  // the loop's Python for this parameter
      }
      ops.push_back(std::move(k));
      prev = static_cast<sim::OpId>(ops.size() - 1);
    }
  }
}

// Foreach / fused: each list op's launches in turn; a launch reads the tensors of its chunks and
// waits for the previous list op's launches (one stream).
void emit_multi_tensor(std::vector<sim::Op>& ops, const std::vector<sim::Op>& old,
                       const std::vector<std::int64_t>& numel, const std::vector<KernelStep>& steps,
                       const std::string& fused_type) {
  const auto add_once = [](auto& list, const auto& v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  std::vector<sim::OpId> before;
  std::vector<char> held(old.size(), 0);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const std::vector<Launch> ls = launches_of(numel, steps[s].depth, steps[s].scalar_list);
    std::vector<sim::OpId> these;
    for (std::size_t j = 0; j < ls.size(); ++j) {
      std::int64_t elems = 0;
      for (const auto& [t, e] : ls[j].parts) elems += e;
      sim::Op k = kernel_op(old[ls[j].parts.back().first],
                            "update/" + std::to_string(s) + "_" + std::string(steps[s].name) +
                                "/launch" + std::to_string(j),
                            steps[s], elems, false, fused_type);
      for (const auto& [t, e] : ls[j].parts) {
        for (const sim::TensorRef& r : old[t].inputs) add_once(k.inputs, r);
        for (const sim::OpId c : old[t].control_inputs) add_once(k.control_inputs, c);
        if (!held[t]) {
          k.persistent.v += old[t].persistent.v;
          // The step's host work per tensor comes before the first list op's launches: each
          // carries that of the tensors it is the first to hold (N tensors' worth in all).
          k.host_before = k.host_before + kHostPerTensor;
        }
        held[t] = 1;
      }
      for (const sim::OpId b : before) k.control_inputs.push_back(b);
      ops.push_back(std::move(k));
      these.push_back(static_cast<sim::OpId>(ops.size() - 1));
    }
    before = std::move(these);
  }
}

// BertAdam's step head (kBertAdamNorm): multi_tensor_l2norm's launches over the parameters in
// turn (reading each update's tensors, so after its gradient), then the .item() that reads the
// norm to the host. Returns that sync, which every kernel of the loop is launched after.
sim::OpId emit_norm_sync(std::vector<sim::Op>& ops, const std::vector<sim::Op>& old,
                         const std::vector<std::int64_t>& numel) {
  sim::OpId prev = -1;
  const std::vector<Launch> ls = launches_of(numel, kBertAdamNorm.depth, kBertAdamNorm.scalar_list);
  for (std::size_t j = 0; j < ls.size(); ++j) {
    std::int64_t elems = 0;
    for (const auto& [t, e] : ls[j].parts) elems += e;
    sim::Op k = kernel_op(old[ls[j].parts.back().first], "update/norm/launch" + std::to_string(j),
                          kBertAdamNorm, elems, false, "apex::multi_tensor_l2norm");
    for (const auto& [t, e] : ls[j].parts) {
      for (const sim::TensorRef& r : old[t].inputs)
        if (std::find(k.inputs.begin(), k.inputs.end(), r) == k.inputs.end()) k.inputs.push_back(r);
      for (const sim::OpId c : old[t].control_inputs) k.control_inputs.push_back(c);
    }
    if (prev >= 0) k.control_inputs.push_back(prev);
    ops.push_back(std::move(k));
    prev = static_cast<sim::OpId>(ops.size() - 1);
  }
  sim::Op item;  // global_grad_norm = ...[0].item(): a 4-byte copy to the host
  item.name = "update/norm_item";
  item.type = "aten::_local_scalar_dense";
  item.phase = sim::Phase::Update;
  item.layer = old.back().layer;
  item.group = old.back().group;
  item.dtype = sim::Dtype::F32;
  item.bytes_read = sim::Bytes{kStateBytes};
  item.bytes_written = sim::Bytes{kStateBytes};
  if (prev >= 0) item.control_inputs.push_back(prev);
  ops.push_back(std::move(item));
  return static_cast<sim::OpId>(ops.size() - 1);
}

// BertAdam's kernels for each update of `old` (inputs remapped into `ops`): kBertAdam, less the
// weight decay's two for a 1-D parameter (run_squad.py's no_decay group: biases, LayerNorm).
std::vector<std::vector<KernelStep>> bertadam_steps(const std::vector<sim::Op>& ops,
                                                    const std::vector<sim::Op>& old) {
  const std::vector<KernelStep> all(kBertAdam.begin(), kBertAdam.end());
  std::vector<KernelStep> no_decay = all;
  no_decay.erase(no_decay.begin() + kBertAdamDecay, no_decay.begin() + kBertAdamDecay + 2);
  std::vector<std::vector<KernelStep>> out;
  for (const sim::Op& u : old) {
    const sim::TensorRef& p = u.inputs.front();  // the builders' update: (variable, gradient)
    const auto& t =
        ops[static_cast<std::size_t>(p.op)].outputs.at(static_cast<std::size_t>(p.output));
    if (t.shape.empty())
      throw sim::InputError("--graph-opt", "optimizer",
                            "a graph whose parameters have shapes beside optimizer=bertadam (its "
                            "weight decay skips 1-D ones), got " +
                                u.name);
    out.push_back(t.shape.size() == 1 ? no_decay : all);
  }
  return out;
}

}  // namespace

std::vector<int> multi_tensor_launches(const std::vector<std::int64_t>& numels, int depth,
                                       bool scalar_list) {
  std::vector<int> closes(numels.size(), 0);
  for (const Launch& l : launches_of(numels, depth, scalar_list)) ++closes[l.parts.back().first];
  return closes;
}

std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> multi_tensor_parts(
    const std::vector<std::int64_t>& numels, int depth, bool scalar_list) {
  std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> out;
  for (Launch& l : launches_of(numels, depth, scalar_list)) out.push_back(std::move(l.parts));
  return out;
}

void apply_optimizer_impl(sim::Graph& g, OptimizerImpl impl) {
  g.metadata["optimizer_impl"] = to_string(impl);
  if (impl == OptimizerImpl::Apply) return;
  // The updates in graph order (the builders add them in parameter order, as PyTorch's
  // param_groups list them). A sparse update (SparseApply*, the touched rows of an embedding)
  // becomes a dense one over the whole parameter: PyTorch's nn.Embedding returns a dense gradient
  // unless built with sparse=True (torch/nn/modules/sparse.py), and torch.optim and apex update
  // every element of it.
  std::vector<sim::OpId> dense;
  std::vector<std::int64_t> numel;
  const UpdateKind* kind = nullptr;
  for (sim::OpId o = 0; o < g.num_ops(); ++o) {
    const sim::Op& op = g.ops[static_cast<std::size_t>(o)];
    if (op.phase != sim::Phase::Update) continue;
    const bool sparse = op.type.rfind("Sparse", 0) == 0;
    const UpdateKind* k = kind_of(sparse ? std::string_view(op.type).substr(6) : op.type);
    if (!k) continue;
    if (impl == OptimizerImpl::Fused && k->type == "ApplyRMSProp")
      throw sim::InputError("--graph-opt", "optimizer_impl",
                            "apply, per_param or foreach with optimizer=rmsprop (neither PyTorch "
                            "nor apex fuses RMSprop), got fused");
    if (impl != OptimizerImpl::Fused && k->type == "ApplyLamb")
      throw sim::InputError("--graph-opt", "optimizer_impl",
                            "apply or fused with optimizer=lamb (torch.optim has no LAMB; apex "
                            "FusedLAMB is fused), got " +
                                to_string(impl));
    if (impl != OptimizerImpl::PerParam && k->type == "ApplyBertAdam")
      throw sim::InputError("--graph-opt", "optimizer_impl",
                            "apply or per_param with optimizer=bertadam (BertAdam is a Python loop "
                            "of eager ops), got " +
                                to_string(impl));
    if (kind && kind != k)
      throw sim::InputError("--graph-opt", "optimizer_impl",
                            "a graph whose updates are of one type, got " +
                                std::string(kind->type) + " and " + op.type);
    kind = k;
    dense.push_back(o);
    // The apply form reads the parameter, its gradient and its slots (F32); a sparse one only
    // their touched rows, so the parameter's own shape counts.
    if (sparse && !op.inputs.empty()) {
      const sim::TensorRef& p = op.inputs.front();
      const auto& t =
          g.ops[static_cast<std::size_t>(p.op)].outputs.at(static_cast<std::size_t>(p.output));
      numel.push_back(t.bytes.v / sim::dtype_size(t.dtype));
    } else {
      numel.push_back(op.bytes_read.v / (2 + k->slots) / kStateBytes);
    }
  }
  if (!kind) return;
  // Fused (apex FusedAdam / FusedSGD, torch fused=True): one multi-tensor kernel reading the
  // gradient, the parameter and its slots and writing the parameter and slots.
  const KernelStep fused{"fused", 2 + kind->slots, false, 2 + kind->slots, 1 + kind->slots};
  const bool lamb = kind->type == "ApplyLamb";  // fused: apex's five passes (kLamb)
  const std::vector<KernelStep> steps =
      impl == OptimizerImpl::Fused && !lamb
          ? std::vector<KernelStep>{fused}
          : std::vector<KernelStep>(kind->steps, kind->steps + kind->n);
  // Keep every other op in order (ids remapped), then the optimizer's kernels.
  std::vector<char> drop(g.ops.size(), 0);
  for (const sim::OpId o : dense) drop[static_cast<std::size_t>(o)] = 1;
  std::vector<sim::OpId> new_id(g.ops.size(), -1);
  std::vector<sim::Op> ops;
  for (std::size_t o = 0; o < g.ops.size(); ++o)
    if (!drop[o]) {
      new_id[o] = static_cast<sim::OpId>(ops.size());
      ops.push_back(std::move(g.ops[o]));
    }
  std::vector<sim::Op> old;  // the dense updates, as they were
  for (const sim::OpId o : dense) old.push_back(std::move(g.ops[static_cast<std::size_t>(o)]));
  const auto remap = [&](sim::OpId id, const std::string& user) {
    const sim::OpId n = new_id[static_cast<std::size_t>(id)];
    if (n < 0)
      throw sim::InputError("--graph-opt", "optimizer_impl",
                            "a graph whose update ops feed no other op, got " + user);
    return n;
  };
  for (sim::Op& op : ops) {
    for (sim::TensorRef& t : op.inputs) t.op = remap(t.op, op.name);
    for (sim::OpId& c : op.control_inputs) c = remap(c, op.name);
  }
  for (sim::Op& u : old) {
    for (sim::TensorRef& t : u.inputs) t.op = remap(t.op, u.name);
    for (sim::OpId& c : u.control_inputs) c = remap(c, u.name);
  }
  if (impl == OptimizerImpl::PerParam && kind->type == "ApplyBertAdam") {
    const std::vector<std::vector<KernelStep>> steps_of = bertadam_steps(ops, old);
    const sim::OpId item = emit_norm_sync(ops, old, numel);
    emit_per_param(ops, old, numel, steps_of, item);
  } else if (impl == OptimizerImpl::PerParam) {
    emit_per_param(ops, old, numel, std::vector<std::vector<KernelStep>>(old.size(), steps), -1);
  } else {
    emit_multi_tensor(ops, old, numel, steps,
                      impl != OptimizerImpl::Fused ? ""
                      : lamb                       ? "apex::multi_tensor_lamb"
                      : kind->slots == 2           ? "apex::multi_tensor_adam"
                                                   : "apex::multi_tensor_sgd");
  }
  g.ops = std::move(ops);
  g.finalize("<optimizer_impl " + to_string(impl) + ">");
}

std::string to_string(OptimizerImpl i) {
  switch (i) {
    case OptimizerImpl::Apply:
      return "apply";
    case OptimizerImpl::PerParam:
      return "per_param";
    case OptimizerImpl::Foreach:
      return "foreach";
    case OptimizerImpl::Fused:
      return "fused";
  }
  return "apply";
}

}  // namespace placesim::models

// The training loop's kernels around the optimizer step (grad_clip, master_weights, zero_grad).
// Sources: docs/workloads.md, "The training loop around the update".
#include "models/train_loop.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/optimizer_impl.hpp"
#include "sim/error.hpp"

namespace placesim::models {

std::optional<GradClip> parse_grad_clip(std::string_view s) {
  if (s == "none") return GradClip::None;
  if (s == "norm") return GradClip::Norm;
  if (s == "norm_sync") return GradClip::NormSync;
  if (s == "apex") return GradClip::Apex;
  return std::nullopt;
}

namespace {

// One parameter the update ops read: its gradient (from the backward pass), its elements, the
// bytes an element of its gradient and of its working copy, and the update kernels reading it.
struct Param {
  sim::TensorRef grad;
  std::int64_t numel = 0;
  std::int64_t grad_size = 4;
  std::int64_t weight_size = 4;
  std::vector<sim::OpId> updates;
};

std::vector<Param> params_of(const sim::Graph& g) {
  std::vector<Param> out;
  std::map<std::pair<sim::OpId, std::int32_t>, std::size_t> index;
  for (sim::OpId o = 0; o < g.num_ops(); ++o) {
    const sim::Op& op = g.ops[static_cast<std::size_t>(o)];
    if (op.phase != sim::Phase::Update) continue;
    const sim::TensorRef* grad = nullptr;
    const sim::TensorRef* weight = nullptr;
    for (const sim::TensorRef& t : op.inputs) {
      const sim::Op& p = g.ops[static_cast<std::size_t>(t.op)];
      if (p.phase == sim::Phase::Backward && !grad) grad = &t;
      if (p.phase == sim::Phase::Other && p.inputs.empty() && !weight) weight = &t;
    }
    if (!grad || !weight) continue;
    const auto [it, fresh] = index.emplace(std::make_pair(grad->op, grad->output), out.size());
    if (fresh) {
      const auto& gt = g.ops[static_cast<std::size_t>(grad->op)].outputs.at(
          static_cast<std::size_t>(grad->output));
      const auto& wt = g.ops[static_cast<std::size_t>(weight->op)].outputs.at(
          static_cast<std::size_t>(weight->output));
      Param p;
      p.grad = *grad;
      p.weight_size = sim::dtype_size(wt.dtype);
      // The parameter's own elements: a sparse gradient (an embedding's looked-up rows) is dense
      // in PyTorch (nn.Embedding without sparse=True).
      p.numel = wt.bytes.v / p.weight_size;
      p.grad_size = sim::dtype_size(gt.dtype);
      out.push_back(p);
    }
    out[it->second].updates.push_back(o);
  }
  return out;
}

// Adds the loop's ops to a graph: every new op is one kernel on the rank's stream, with data
// edges (launch-ahead) to what it follows; a host sync is an op whose end every later launch
// waits for (a control edge).
struct LoopOps {
  sim::Graph& g;
  int serial = 0;

  sim::TensorRef add(const std::string& name, const std::string& type, std::int64_t read,
                     std::int64_t written, std::int64_t out_bytes,
                     std::vector<sim::TensorRef> inputs, std::vector<sim::OpId> control,
                     sim::Phase phase = sim::Phase::Update) {
    sim::Op k;
    k.name = "train_loop/" + std::to_string(serial++) + "_" + name;
    k.type = type;
    k.phase = phase;
    k.dtype = sim::Dtype::F32;
    // Elementwise or a reduction: about a FLOP an element read, memory-bound. A copy to the host
    // (.item()) and the forward's integer adds (host_sum: int64 lengths) do no floating-point
    // work, so they stay off the roofline's small-GEMM term (compute_half_flops) and are priced
    // by their bytes: the kernel floor.
    const bool no_flops = type == "aten::_local_scalar_dense" || phase == sim::Phase::Forward;
    k.flops = sim::Flops{no_flops ? 0.0 : static_cast<double>(read) / 4.0};
    k.bytes_read = sim::Bytes{read};
    k.bytes_written = sim::Bytes{written};
    k.outputs = {{.bytes = sim::Bytes{out_bytes}, .dtype = sim::Dtype::F32}};
    k.inputs = std::move(inputs);
    k.control_inputs = std::move(control);
    return sim::TensorRef{g.add_op(std::move(k)), 0};
  }
};

constexpr std::int64_t kScalar = 4;  // an F32 scalar (a norm, the overflow flag)

// Host syncs around the forward pass (host_sum, loss_item), on the graph as given: its forward's
// roots and sinks and its backward's roots.
void add_forward_syncs(LoopOps& b, const TrainLoop& t) {
  sim::Graph& g = b.g;
  const int given = g.num_ops();
  const auto phase_of = [&](sim::OpId o) { return g.ops[static_cast<std::size_t>(o)].phase; };
  // `fn` on every op of `phase` (of the graph as given) that reads no op of that phase.
  const auto for_roots = [&](sim::Phase phase, const auto& fn) {
    for (sim::OpId o = 0; o < given; ++o) {
      sim::Op& op = g.ops[static_cast<std::size_t>(o)];
      if (op.phase != phase) continue;
      bool root = true;
      for (const sim::TensorRef& r : op.inputs) root = root && phase_of(r.op) != phase;
      if (root) fn(op);
    }
  };
  // Every op of `phase` reading no op of that phase waits for host sync `s` to end.
  const auto roots_wait = [&](sim::Phase phase, sim::OpId s) {
    for_roots(phase, [s](sim::Op& op) { op.control_inputs.push_back(s); });
  };
  // Where a chain's adds run: GPU kernels (host_sum: a CUDA tensor) or CPU ops on the host CPU
  // (cpu_sum: a tensor left on the host).
  enum class Runs { OnGpu, OnHostCpu };
  // N one-element adds, one after another (Python's sum(): 0 + t[0], then + t[i]), the first
  // after `after`; returns the last.
  const auto chain = [&](const std::string& name, Runs where, int n, std::vector<sim::OpId> after) {
    sim::TensorRef acc{-1, 0};
    for (int i = 0; i < n; ++i) {
      acc = b.add(name + std::to_string(i), "aten::add", acc.op < 0 ? kScalar : 2 * kScalar,
                  kScalar, kScalar, acc.op < 0 ? std::vector<sim::TensorRef>{} : std::vector{acc},
                  acc.op < 0 ? after : std::vector<sim::OpId>{}, sim::Phase::Forward);
      if (where == Runs::OnHostCpu) {  // the host's own adds: one group, placed on the host CPU
        sim::Op& op = g.ops[static_cast<std::size_t>(acc.op)];
        op.device_kind = sim::DeviceKind::Cpu;
        op.group = "train_loop/" + name;
        // All of a one-element add's time is its dispatch, the CPU's launch_overhead (2 us;
        // "approx 2 us" a small CPU op, half of it Python, pytorch/pytorch#41383): no work is
        // left to share the socket with other ranks' processes, each on its own core.
        op.measured = sim::Duration{0};
      }
    }
    return acc;
  };
  std::vector<sim::OpId> host_done;  // what the host finished before it goes on
  if (t.cpu_sum > 0) host_done = {chain("cpu_sum", Runs::OnHostCpu, t.cpu_sum, {}).op};
  if (t.host_sum > 0) {
    const sim::TensorRef acc = chain("host_sum", Runs::OnGpu, t.host_sum, host_done);
    const sim::TensorRef s = b.add("host_sum_item", "aten::_local_scalar_dense", kScalar, kScalar,
                                   kScalar, {acc}, {}, sim::Phase::Forward);
    host_done = {s.op};
  }
  if (!host_done.empty()) roots_wait(sim::Phase::Forward, host_done.front());
  // The forward's last ops (the loss): what loss.item() and scaler.scale(loss) read.
  const auto forward_sinks = [&] {
    std::vector<char> feeds_forward(static_cast<std::size_t>(given), 0);
    for (sim::OpId o = 0; o < given; ++o)
      if (phase_of(o) == sim::Phase::Forward)
        for (const sim::TensorRef& r : g.ops[static_cast<std::size_t>(o)].inputs)
          feeds_forward[static_cast<std::size_t>(r.op)] = 1;
    std::vector<sim::TensorRef> sinks;
    for (sim::OpId o = 0; o < given; ++o)
      if (phase_of(o) == sim::Phase::Forward && !feeds_forward[static_cast<std::size_t>(o)] &&
          !g.ops[static_cast<std::size_t>(o)].outputs.empty())
        sinks.push_back({o, 0});
    return sinks;
  };
  if (t.loss_item) {
    const sim::TensorRef s = b.add("loss_item", "aten::_local_scalar_dense", kScalar, kScalar,
                                   kScalar, forward_sinks(), {}, sim::Phase::Forward);
    roots_wait(sim::Phase::Backward, s.op);
  }
  if (t.torch_grad_scaler) {
    // torch/cuda/amp/grad_scaler.py scale(): `outputs * self._scale.to(device=outputs.device,
    // non_blocking=True)` (same device: no copy), one mul the backward starts from: every
    // backward op reading no backward op reads it.
    std::vector<sim::TensorRef> in = forward_sinks();
    const sim::TensorRef m = b.add("grad_scaler_scale_loss", "aten::mul", 2 * kScalar, kScalar,
                                   kScalar, std::move(in), {}, sim::Phase::Forward);
    for_roots(sim::Phase::Backward, [m](sim::Op& op) { op.inputs.push_back(m); });
  }
}

// The unscale of GradScaler.step: the scale's inverse, found_inf, and the non-finite check over
// every gradient the update kernels read; `unscaled` maps each gradient to the launch that
// unscaled it. Returns the last launch (found_inf's writer).
// GradScaler.step (torch/cuda/amp/grad_scaler.py, torch 1.13 and torch/amp/grad_scaler.py
// since 2.3): unscale_ computes `self._scale.double().reciprocal().float()` (copy, reciprocal,
// copy) and `found_inf = torch.full((1,), 0.0)` (a fill), _unscale_grads_ takes both through
// _MultiDeviceReplicator.get (`.to(device, non_blocking=True, copy=True)`: two 4-byte device
// copies), then one _amp_foreach_non_finite_check_and_unscale_ over the gradients of each
// device and dtype (multi_tensor_apply<1>: one tensor list, read and written in place).
// _maybe_opt_step's `found_inf.item()` comes after clipping (add_before_update).
sim::TensorRef add_grad_scaler_unscale(
    LoopOps& b, const std::vector<sim::OpId>& updates,
    std::map<std::pair<sim::OpId, std::int32_t>, sim::TensorRef>& unscaled) {
  sim::TensorRef found_inf{-1, 0};
  // Every gradient an update kernel reads (a foreach or fused launch reads many), in the order
  // the update kernels first read them; F32 (checked). Its elements are its parameter's, the
  // weight read just before it (an update reads {parameter, gradient}; a multi-tensor launch
  // those pairs in turn): a sparse gradient (an embedding's touched rows) is dense in PyTorch.
  std::vector<sim::TensorRef> grads;
  std::vector<std::int64_t> grad_numels;
  const auto elements = [&](const sim::TensorRef& r) {
    const auto& t =
        b.g.ops[static_cast<std::size_t>(r.op)].outputs.at(static_cast<std::size_t>(r.output));
    return t.bytes.v / sim::dtype_size(t.dtype);
  };
  for (const sim::OpId u : updates) {
    const sim::TensorRef* weight = nullptr;
    for (const sim::TensorRef& r : b.g.ops[static_cast<std::size_t>(u)].inputs) {
      const sim::Op& from = b.g.ops[static_cast<std::size_t>(r.op)];
      if (from.phase == sim::Phase::Other && from.inputs.empty()) weight = &r;
      if (from.phase != sim::Phase::Backward) continue;
      if (!unscaled.emplace(std::make_pair(r.op, r.output), r).second) continue;
      grads.push_back(r);
      grad_numels.push_back(weight ? elements(*weight) : elements(r));
    }
  }
  // Launched once the backward's are: the first reads every gradient (for its order only).
  sim::TensorRef inv = b.add("grad_scaler_scale_double", "aten::copy_", kScalar, 2 * kScalar,
                             2 * kScalar, grads, {});
  inv = b.add("grad_scaler_reciprocal", "aten::reciprocal", 2 * kScalar, 2 * kScalar, 2 * kScalar,
              {inv}, {});
  inv =
      b.add("grad_scaler_inv_scale_float", "aten::copy_", 2 * kScalar, kScalar, kScalar, {inv}, {});
  found_inf = b.add("grad_scaler_found_inf_full", "aten::fill_", 0, kScalar, kScalar, {inv}, {});
  found_inf = b.add("grad_scaler_found_inf_copy", "aten::copy_", kScalar, kScalar, kScalar,
                    {found_inf}, {});
  inv = b.add("grad_scaler_inv_scale_copy", "aten::copy_", kScalar, kScalar, kScalar,
              {inv, found_inf}, {});
  const auto parts = multi_tensor_parts(grad_numels, 1);
  for (std::size_t j = 0; j < parts.size(); ++j) {
    std::int64_t by = 0;
    std::vector<sim::TensorRef> in{j == 0 ? inv : found_inf};
    for (const auto& [k, e] : parts[j]) {
      by += e * 4;
      in.push_back(grads[k]);
    }
    found_inf = b.add("grad_scaler_unscale_launch" + std::to_string(j),
                      "aten::_amp_foreach_non_finite_check_and_unscale_", by, by, kScalar,
                      std::move(in), {});
    for (const auto& [k, e] : parts[j])
      unscaled[std::make_pair(grads[k].op, grads[k].output)] = found_inf;
  }
  return found_inf;
}

// After GradScaler's found_inf.item() (`item`): every update kernel waits for it and reads the
// unscaled gradients.
void wait_for_found_inf(
    LoopOps& b, const std::vector<sim::OpId>& updates,
    const std::map<std::pair<sim::OpId, std::int32_t>, sim::TensorRef>& unscaled, sim::OpId item) {
  // Every optimizer kernel is launched after the sync (a foreach launch over momentum buffers
  // alone reads no gradient), and reads the unscaled gradients.
  for (const sim::OpId u : updates) {
    sim::Op& op = b.g.ops[static_cast<std::size_t>(u)];
    std::vector<sim::TensorRef> more;
    for (const sim::TensorRef& r : op.inputs)
      if (const auto it = unscaled.find(std::make_pair(r.op, r.output)); it != unscaled.end())
        if (std::find(more.begin(), more.end(), it->second) == more.end())
          more.push_back(it->second);
    for (const sim::TensorRef& m : more)
      if (std::find(op.inputs.begin(), op.inputs.end(), m) == op.inputs.end())
        op.inputs.push_back(m);
    if (std::find(op.control_inputs.begin(), op.control_inputs.end(), item) ==
        op.control_inputs.end())
      op.control_inputs.push_back(item);
  }
}

// run_squad.py's GradientClipper.step (NVIDIA/DeepLearningExamples @ f8b3a63f:
// PyTorch/LanguageModeling/BERT/run_squad.py), called every iteration on amp.master_params:
// `total_norm, _ = multi_tensor_applier(self.multi_tensor_l2norm, self._overflow_buf, [l], False)`
// (apex multi_tensor_l2norm: one tensor list, launches by multi_tensor_apply's depth-1 limits,
// reading every gradient), `total_norm = total_norm.item()` (a host sync), and `if clip_coef < 1:`
// multi_tensor_scale over [l, l] (depth 2, each gradient read and written in place); the scale is
// counted as run, as grad_clip=norm_sync counts its mul_ kernels. `cur` and `gate` as in
// add_before_update (`sync` appends the .item() to `gate`, which the scale launches wait for).
template <typename Sync>
void add_apex_clip(LoopOps& b, const std::vector<Param>& params,
                   const std::vector<std::int64_t>& clip_size, std::vector<sim::TensorRef>& cur,
                   const std::vector<sim::OpId>& gate, const Sync& sync) {
  std::vector<std::int64_t> numels;
  for (const Param& p : params) numels.push_back(p.numel);
  sim::TensorRef norm{-1, 0};
  const auto norm_parts = multi_tensor_parts(numels, 1);
  for (std::size_t j = 0; j < norm_parts.size(); ++j) {
    std::int64_t read = 0;
    std::vector<sim::TensorRef> in;
    if (norm.op >= 0) in.push_back(norm);
    for (const auto& [i, e] : norm_parts[j]) {
      read += e * clip_size[i];
      in.push_back(cur[i]);
    }
    norm = b.add("clip_l2norm_launch" + std::to_string(j), "apex::multi_tensor_l2norm", read,
                 kScalar, kScalar, std::move(in), gate);
  }
  sync("clip_norm_item", {norm});
  const auto scale_parts = multi_tensor_parts(numels, 2);
  sim::TensorRef prev = norm;
  for (std::size_t j = 0; j < scale_parts.size(); ++j) {
    std::int64_t by = 0;
    std::vector<sim::TensorRef> in{prev};
    for (const auto& [i, e] : scale_parts[j]) {
      by += e * clip_size[i];
      in.push_back(cur[i]);
    }
    prev = b.add("clip_scale_launch" + std::to_string(j), "apex::multi_tensor_scale", by, by, 0,
                 std::move(in), gate);
    for (const auto& [i, e] : scale_parts[j]) cur[i] = prev;
  }
}

// Between the backward pass and the update kernels (AccumulateGrad, apex's unscale with its
// overflow check, clip_grad_norm_); the update kernels then follow what was added on their
// gradient and the latest host sync. Returns GradScaler's found_inf .item() (the sync), if any.
std::optional<sim::OpId> add_before_update(LoopOps& b, const TrainLoop& t,
                                           const std::vector<Param>& params,
                                           const std::vector<sim::OpId>& updates) {
  std::vector<sim::TensorRef> cur;  // per parameter, the last op on its gradient
  std::vector<std::int64_t> numels;
  for (const Param& p : params) {
    cur.push_back(p.grad);
    numels.push_back(p.numel);
  }
  std::vector<sim::OpId> gate;  // the latest host sync
  const auto sync = [&](const std::string& name, std::vector<sim::TensorRef> after) {
    const sim::TensorRef s =
        b.add(name, "aten::_local_scalar_dense", kScalar, kScalar, kScalar, std::move(after), gate);
    gate = {s.op};
  };
  // AccumulateGrad into the zeroed .grad (torch/csrc/autograd/functions/accumulate_grad.h:
  // `variable_grad += new_grad`): reads both, writes one. apex O2 sets the half gradients to
  // None before the backward (prepare_backward_with_master_weights), so the new one is stolen.
  if (t.zero_fill && !t.apex_master)
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::int64_t by = params[i].numel * params[i].grad_size;
      cur[i] =
          b.add("accumulate_grad" + std::to_string(i), "aten::add_", 2 * by, by, 0, {cur[i]}, {});
    }
  if (t.grad_div)
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::int64_t by = params[i].numel * params[i].grad_size;
      cur[i] = b.add("grad_div" + std::to_string(i), "aten::div_", by, by, 0, {cur[i]}, {});
    }
  // The clipped gradients: apex's F32 master gradients, else the gradients themselves.
  std::vector<std::int64_t> clip_size;
  for (const Param& p : params) clip_size.push_back(t.apex_master ? 4 : p.grad_size);
  if (t.apex_master) {
    // apex/amp/scaler.py: clear_overflow_state (_overflow_buf.zero_()), unscale
    // (multi_tensor_scale over [model_grads, master_grads], 1/scale), update_scale
    // (_overflow_buf.item(): "we only need one D2H memcopy and sync").
    sim::TensorRef prev =
        b.add("overflow_buf_zero", "aten::zero_", 0, kScalar, kScalar, {cur[0]}, {});
    const auto parts = multi_tensor_parts(numels, 2);
    for (std::size_t j = 0; j < parts.size(); ++j) {
      std::int64_t read = 0, written = 0;
      std::vector<sim::TensorRef> in{prev};
      for (const auto& [i, e] : parts[j]) {
        read += e * params[i].grad_size;
        written += e * 4;
        in.push_back(cur[i]);
      }
      prev = b.add("unscale_launch" + std::to_string(j), "apex::multi_tensor_scale", read, written,
                   0, std::move(in), {});
      for (const auto& [i, e] : parts[j]) cur[i] = prev;
    }
    sync("overflow_item", {prev});
  }
  // GradScaler.step's unscale_ (add_grad_scaler_unscale); its found_inf.item() comes after
  // clipping (the AMP recipe calls unscale_ before clip_grad_norm_), below.
  sim::TensorRef found_inf{-1, 0};
  std::map<std::pair<sim::OpId, std::int32_t>, sim::TensorRef> unscaled;  // gradient -> launch
  if (t.torch_grad_scaler) {
    found_inf = add_grad_scaler_unscale(b, updates, unscaled);
    for (std::size_t i = 0; i < params.size(); ++i)
      if (const auto it = unscaled.find(std::make_pair(cur[i].op, cur[i].output));
          it != unscaled.end())
        cur[i] = it->second;
  }
  if (t.clip == GradClip::Apex) add_apex_clip(b, params, clip_size, cur, gate, sync);
  if (t.clip == GradClip::Norm || t.clip == GradClip::NormSync) {
    // torch/nn/utils/clip_grad.py: total_norm = norm(stack([norm(g) for g in grads])),
    // clip_coef = max_norm / (total_norm + 1e-6), then mul_ of every gradient.
    std::vector<sim::TensorRef> norms;
    for (std::size_t i = 0; i < params.size(); ++i)
      norms.push_back(b.add("norm" + std::to_string(i), "aten::norm",
                            params[i].numel * clip_size[i], kScalar, kScalar, {cur[i]}, gate));
    const auto n = static_cast<std::int64_t>(params.size());
    sim::TensorRef c =
        b.add("stack", "aten::stack", n * kScalar, n * kScalar, n * kScalar, norms, {});
    c = b.add("total_norm", "aten::norm", n * kScalar, kScalar, kScalar, {c}, {});
    c = b.add("norm_add_eps", "aten::add", kScalar, kScalar, kScalar, {c}, {});
    c = b.add("clip_coef", "aten::div", kScalar, kScalar, kScalar, {c}, {});
    if (t.clip == GradClip::NormSync) {
      c = b.add("clip_coef_lt", "aten::lt", kScalar, kScalar, kScalar, {c}, {});
      sync("clip_coef_item", {c});
    } else {
      c = b.add("clip_coef_clamp", "aten::clamp", kScalar, kScalar, kScalar, {c}, {});
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::int64_t by = params[i].numel * clip_size[i];
      cur[i] = b.add("clip_mul" + std::to_string(i), "aten::mul_", by, by, 0, {cur[i], c}, gate);
    }
  }
  // _maybe_opt_step: `if not sum(v.item() for v in optimizer_state["found_inf_per_device"]
  // .values())`, one .item() for one device, before optimizer.step() launches anything.
  std::optional<sim::OpId> found_inf_item;
  if (t.torch_grad_scaler) {
    sync("grad_scaler_found_inf_item", {found_inf});
    found_inf_item = gate.front();
    wait_for_found_inf(b, updates, unscaled, *found_inf_item);
  }
  for (std::size_t i = 0; i < params.size(); ++i)
    for (const sim::OpId u : params[i].updates) {
      sim::Op& op = b.g.ops[static_cast<std::size_t>(u)];
      if ((cur[i].op != params[i].grad.op || cur[i].output != params[i].grad.output) &&
          std::find(op.inputs.begin(), op.inputs.end(), cur[i]) == op.inputs.end())
        op.inputs.push_back(cur[i]);
      for (const sim::OpId s : gate)
        if (std::find(op.control_inputs.begin(), op.control_inputs.end(), s) ==
            op.control_inputs.end())
          op.control_inputs.push_back(s);
    }
  return found_inf_item;
}

// After optimizer.step(): apex copies the F32 master weights into the half model
// (_process_optimizer.py new_step: _master_params_to_model_params, multi_tensor_scale), then the
// trainer's model.zero_grad() zero-fills every gradient. The update kernels write their
// parameters in place (no tensor out): the first kernel after them waits for their end.
void add_after_update(LoopOps& b, const TrainLoop& t, const std::vector<Param>& params,
                      std::vector<sim::OpId> wait, std::optional<sim::OpId> found_inf_item) {
  // GradScaler.update(): `torch._amp_update_scale_(_scale, _growth_tracker, found_inf_combined,
  // ...)`, one kernel (one device: found_inf_combined is found_infs[0], its .to() no copy),
  // launched after the step's kernels, so after the found_inf sync like them. It reads the scale,
  // the growth tracker and found_inf and writes the first two.
  if (found_inf_item) {
    const sim::TensorRef item{*found_inf_item, 0};
    b.add("grad_scaler_update_scale", "aten::_amp_update_scale_", 3 * kScalar, 2 * kScalar, 0,
          {item}, {*found_inf_item});
  }
  std::vector<std::int64_t> numels;
  for (const Param& p : params) numels.push_back(p.numel);
  std::vector<sim::TensorRef> after;
  if (t.apex_master) {
    const auto parts = multi_tensor_parts(numels, 2);
    for (std::size_t j = 0; j < parts.size(); ++j) {
      std::int64_t read = 0, written = 0;
      for (const auto& [i, e] : parts[j]) {
        read += e * 4;
        written += e * params[i].weight_size;
      }
      const sim::TensorRef k = b.add("master_to_model_launch" + std::to_string(j),
                                     "apex::multi_tensor_scale", read, written, 0, after, wait);
      after = {k};
      wait.clear();
    }
  }
  if (t.zero_fill)
    for (std::size_t i = 0; i < params.size(); ++i)
      b.add("zero_grad" + std::to_string(i), "aten::zero_", 0,
            params[i].numel * params[i].grad_size, 0, after,
            after.empty() ? params[i].updates : std::vector<sim::OpId>{});
}

}  // namespace

void apply_train_loop(sim::Graph& g, const TrainLoop& t, const std::string& origin) {
  if (t.clip == GradClip::None && !t.apex_master && !t.zero_fill && !t.loss_item &&
      t.host_sum == 0 && t.cpu_sum == 0 && !t.torch_grad_scaler && !t.grad_div)
    return;
  const std::vector<Param> params = params_of(g);
  if (params.empty())
    throw sim::InputError(origin, g.name,
                          "a training graph with update ops fed by backward ops (grad_clip, "
                          "master_weights and zero_grad act on gradients), got none");
  std::vector<sim::OpId> updates;
  for (sim::OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[static_cast<std::size_t>(o)].phase == sim::Phase::Update) updates.push_back(o);
  LoopOps b{g};
  if (t.torch_grad_scaler)
    for (const Param& p : params)
      if (p.grad_size != 4)
        throw sim::InputError(origin, "grad_scaler",
                              "F32 gradients (grads=f32: GradScaler raises \"Attempting to "
                              "unscale FP16 gradients\"), got a " +
                                  std::to_string(p.grad_size) + "-byte gradient in " + g.name);
  add_forward_syncs(b, t);
  const std::optional<sim::OpId> found_inf_item = add_before_update(b, t, params, updates);
  add_after_update(b, t, params, updates, found_inf_item);
  g.metadata["grad_clip"] = t.clip == GradClip::Norm       ? "norm"
                            : t.clip == GradClip::NormSync ? "norm_sync"
                            : t.clip == GradClip::Apex     ? "apex"
                                                           : "none";
  g.metadata["master_weights"] = t.apex_master ? "apex" : "none";
  g.metadata["zero_grad"] = t.zero_fill ? "fill" : "none";
  g.metadata["loss_item"] = t.loss_item ? "true" : "false";
  g.metadata["host_sum"] = std::to_string(t.host_sum);
  g.metadata["cpu_sum"] = std::to_string(t.cpu_sum);
  g.metadata["grad_scaler"] = t.torch_grad_scaler ? "torch" : "none";
  g.metadata["grad_div"] = t.grad_div ? "true" : "false";
  g.finalize(origin);
}

}  // namespace placesim::models

// What a PyTorch training loop runs around the optimizer step besides the update kernels
// (--graph-opt grad_clip=..., master_weights=..., zero_grad=...): gradient clipping, apex AMP's
// master copies with its overflow check, and the zero-filled gradients the next backward adds
// into. Sources and pricing in docs/workloads.md, "The training loop around the update".
//
//   sim::Graph g = load_graph("nmt", "precision=f16,optimizer_impl=per_param");
//   apply_train_loop(g, {.clip = GradClip::NormSync, .apex_master = true});
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/graph.hpp"

namespace placesim::models {

/// torch.nn.utils.clip_grad_norm_ before each update. Norm: one norm kernel a gradient, the total
/// norm and its clip coefficient (stack, norm, add, div, clamp), one mul_ a gradient (PyTorch's
/// clamp form: no host sync). NormSync: older PyTorch (1.6), `if clip_coef < 1:` reads the
/// coefficient on the host (lt, _local_scalar_dense) before the mul_ kernels. Apex:
/// DeepLearningExamples run_squad.py's GradientClipper: apex multi_tensor_l2norm launches over the
/// gradients, `.item()` of the norm (a host sync), then multi_tensor_scale launches over them.
enum class GradClip { None, Norm, NormSync, Apex };
std::optional<GradClip> parse_grad_clip(std::string_view s);

struct TrainLoop {
  GradClip clip = GradClip::None;
  /// apex AMP O2 (master_weights=apex; precision=f16|bf16 only): after the backward pass the half
  /// gradients are unscaled into F32 master gradients (amp_C.multi_tensor_scale launches) with
  /// an overflow flag the host reads (`_overflow_buf.item()`) before the step; after the step the
  /// F32 master weights are copied into the half model (multi_tensor_scale again).
  bool apex_master = false;
  /// Module.zero_grad() as PyTorch before 2.0 runs it (zero_grad=fill): one zero_ kernel a
  /// gradient after the step, and the next backward's AccumulateGrad adds each new gradient into
  /// the zeroed one (`variable_grad += new_grad`, one add_ a gradient). Under apex_master the half
  /// gradients are set to None before the backward (no add_), the zero_ still runs.
  bool zero_fill = false;
  /// loss.item() between the forward and the backward pass (loss_item=true): the host reads the
  /// loss before it launches the backward, which starts behind an empty queue.
  bool loss_item = false;
  /// Python's built-in sum() over an N-element CUDA tensor, read by int(), before the forward
  /// (host_sum=N; DeepLearningExamples GNMT trainer.py: `int(sum(src_length))` after
  /// `src_length.to(self.device)`): N one-element add kernels, one launch each, then a host sync
  /// every forward launch waits for.
  int host_sum = 0;
  /// Python's built-in sum() over an N-element CPU tensor, read by int(), before the forward
  /// (cpu_sum=N; DeepLearningExamples GNMT trainer.py: `int(sum(tgt_length - 1))`, tgt_length
  /// left on the host): N one-element adds the host runs one after another while the GPU waits,
  /// each a CPU op on the GPU's host CPU (its dispatch cost, the CPU's launch_overhead), before
  /// host_sum's launches and the forward.
  int cpu_sum = 0;
  /// torch.cuda.amp.GradScaler around the step (grad_scaler=torch; precision=f16, F32 gradients:
  /// grads=f32). scaler.scale(loss): one mul between the forward and the backward. step():
  /// unscale_ (the scale's double/reciprocal/float, a zero-filled found_inf, the two
  /// _MultiDeviceReplicator copies, then _amp_foreach_non_finite_check_and_unscale_'s
  /// multi-tensor launches over the gradients, read and written in place), _maybe_opt_step's
  /// found_inf.item() (a host sync) before the update kernels; update(): _amp_update_scale_.
  bool torch_grad_scaler = false;
  /// The trainer's own pass over the gradients before the step (grad_div=true; fairseq's
  /// ddp_trainer.py in NVIDIA DeepLearningExamples' Transformer: `for p in
  /// self.model.parameters(): p.grad /= grad_denom`, a Python int): one aten::div_ a gradient,
  /// read and written in place, launched after the backward (and AccumulateGrad) and before
  /// GradScaler's unscale_ and the update kernels. No host sync.
  bool grad_div = false;
};

/// Adds the ops of `t` around the update ops of a training graph (after apply_optimizer_impl):
/// each a GPU kernel with its own bytes, Update phase; host syncs as an `_local_scalar_dense` op
/// every later op waits for. Records metadata "grad_clip", "master_weights", "zero_grad",
/// "loss_item", "host_sum", "cpu_sum", "grad_scaler".
/// Throws InputError (naming `origin`) for a graph with no update op fed by a gradient, and for
/// grad_scaler on a gradient that is not F32 (GradScaler: "Attempting to unscale FP16 gradients").
void apply_train_loop(sim::Graph& g, const TrainLoop& t, const std::string& origin);

}  // namespace placesim::models

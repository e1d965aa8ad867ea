// The optimizer step as a framework runs it (--graph-opt optimizer_impl=...): which kernels each
// parameter's update launches and the bytes they move. Sources in docs/cost-model.md,
// "Optimizer kernels"; options in docs/workloads.md.
//
//   sim::Graph g = load_graph("resnet50", "batch=32");
//   apply_optimizer_impl(g, OptimizerImpl::Foreach);   // 9 multi-tensor launches, as torch 2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/graph.hpp"

namespace placesim::models {

/// How the framework runs the optimizer step (--graph-opt optimizer_impl=...; docs/workloads.md,
/// docs/cost-model.md "Optimizer kernels"). Apply: one fused kernel per parameter, TensorFlow's
/// Apply* ops (the builders' graphs as built). PerParam: PyTorch's foreach=False loop, several
/// elementwise kernels per parameter. Foreach: PyTorch's torch._foreach_* (multi_tensor_apply),
/// the same kernels over all parameters, a bounded number of tensors and chunks per launch.
/// Fused: apex FusedAdam / FusedSGD (torch fused=True), one multi-tensor kernel.
enum class OptimizerImpl { Apply, PerParam, Foreach, Fused };
std::optional<OptimizerImpl> parse_optimizer_impl(std::string_view s);
std::string to_string(OptimizerImpl i);
/// Per tensor of `numels` (in list order), the multi-tensor launches a torch._foreach_* op of
/// `depth` tensor lists issues when that tensor's chunk fills or ends one (MultiTensorApply.cuh:
/// 65,536-element chunks, at most 110/64/48/36/30 tensors by depth, 96 for one list with a
/// scalar list, and 320 chunks a launch). The sum is the op's kernel count.
std::vector<int> multi_tensor_launches(const std::vector<std::int64_t>& numels, int depth,
                                       bool scalar_list = false);
/// The same launches, each as the (tensor index, elements) it carries, in launch order.
std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> multi_tensor_parts(
    const std::vector<std::int64_t>& numels, int depth, bool scalar_list = false);
/// Replaces every update op (ApplyGradientDescent/Momentum/Adam/RMSProp; a SparseApply* as a
/// dense update of its whole parameter, as PyTorch's dense embedding gradients) by the kernels
/// `impl` launches, each an Update op with its own bytes (F32 state): per_param, one op per
/// kernel and parameter (aten::lerp_, ...); foreach, one op per multi-tensor launch of each
/// torch._foreach_* op (aten::_foreach_lerp_, ...), reading the tensors of its chunks; fused,
/// one op per launch of the fused kernel. Apply leaves the ops as they are. Run after
/// apply_mixed_precision (the state and master copy stay resident with the first kernel that
/// touches a parameter). Records metadata "optimizer_impl". Throws InputError for fused RMSprop
/// and for a graph mixing update types.
void apply_optimizer_impl(sim::Graph& g, OptimizerImpl impl);
}  // namespace placesim::models

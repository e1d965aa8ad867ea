// Which of PyTorch's elementwise kernel paths a graph op runs, and that path's measured bandwidth
// fraction per GPU generation (docs/cost-model.md, "Non-vectorised elementwise kernels").
// KernelCostModel's roofline prices a non-vectorised op's memory term at non_vectorised_eff.
#pragma once

#include <optional>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"

namespace placesim::sim {

/// True for an op PyTorch runs through its non-vectorised elementwise path (TensorIterator's
/// `elementwise_kernel`: per-element offset arithmetic, one element per load) because an operand
/// is not contiguous: a binary op (Add, AddV2, Sub, Mul, Div, RealDiv) with an input of more than
/// one element broadcast to the output's shape (BERT's attention-mask add), or a Transpose (a
/// permuted copy). Needs the op's input shapes (its signature); false without them.
bool non_vectorised_elementwise(const Op& op);
/// The fraction of peak bandwidth a non_vectorised_elementwise op streams at on this GPU: 0.51 on
/// an A100 (8.0), 0.42 on Hopper (measured, docs/cost-model.md, "Non-vectorised elementwise");
/// nullopt elsewhere (other generations, no GPU, p.generation_curves off): memory_eff_for holds.
std::optional<double> non_vectorised_eff(const Op& op, const DeviceSpec& spec,
                                         const RooflineParams& p);

}  // namespace placesim::sim

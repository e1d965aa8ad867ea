// PyTorch eager's host work per framework op (--graph-opt host=torch): the Python, dispatcher,
// autocast and autograd work around each graph op's launch, as Op::host_before, so that an
// op-dense CNN step is launch-bound where the host falls behind the GPU. Sources and figures in
// docs/cost-model.md, "PyTorch eager's host work per framework op".
//
//   sim::Graph g = load_graph("resnet50", "batch=64,precision=f16,grads=f32");
//   apply_torch_host(g);   // a forward Conv2D now carries 86 us (+25 us autocast cast) of host
#pragma once

#include <string_view>

#include "sim/graph.hpp"
#include "sim/units.hpp"

namespace placesim::models {

/// The host time beyond the launch (DeviceSpec::launch_overhead, charged apart) that PyTorch
/// eager spends on one graph op of `phase` and `type`, torch 2.11 on the H200 rig's Xeon:
/// 0 for update ops (their host time is the optimizer's, models/optimizer_impl.cpp), parameters,
/// inputs and constants. `weight_cast`: the graph has no Cast op of its own for autocast's cast
/// of a convolution's or matmul's F32 weight to F16 (built-in graphs at precision=f16,
/// grads=f32), which the forward op then carries.
sim::Duration torch_host_time(sim::Phase phase, std::string_view type, bool weight_cast);

/// Adds torch_host_time to every forward and backward op's host_before.
void apply_torch_host(sim::Graph& g);

}  // namespace placesim::models

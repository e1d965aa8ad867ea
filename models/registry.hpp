// Finding a graph by what the user typed: a built-in workload name with options, or a file.
//
//   sim::Graph g = models::load_graph("nmt", "layers=4,batch=128");  // built-in builder
//   sim::Graph h = models::load_graph("graphs/mine.json", "");        // JSON graph file
//   sim::Graph m = models::load_graph("resnet18.onnx", "training");   // ONNX import
//
// Option syntax: comma-separated key=value pairs; an unknown key or a malformed value throws
// sim::InputError naming "--graph-opt" and the key, with the accepted keys. Every source also
// takes math_mode=torch|tf32|f32, precision=f32|bf16|f16 (mixed precision, below), grads=half|f32
// (the weight gradients' type under mixed precision, below), layout=nchw|nhwc (the
// convolutions' memory format: sim::apply_layout) and input=synthetic|pil|pil_autoaugment with
// input_workers=W (the host input pipeline make_parallel adds: models/parallel.hpp,
// kPilConvnetsUs, kPilAutoaugmentUs; metadata "input" and "input_workers").
#pragma once

#include <string>
#include <vector>

#include "sim/graph.hpp"

namespace placesim::models {

sim::Graph load_graph(const std::string& name_or_path, const std::string& options = "");
/// Mixed-precision training as Megatron-LM and torch.autocast run it: forward and backward ops
/// compute in `half` (BF16 or F16 tensor-core peaks) on half-size activations and gradients; the
/// weights the kernels read are half copies; the update keeps an F32 master copy and the
/// optimizer state (resident with the update op). Records metadata "precision".
/// `f32_grads` (option grads=f32): the weight gradients the updates read stay F32, as
/// torch.cuda.amp's autocast leaves them (F32 parameters, so F32 param.grad and an F32 DDP
/// all-reduce); metadata "grads" = "f32". Without it they are half, as Megatron-LM's are.
void apply_mixed_precision(sim::Graph& g, sim::Dtype half, bool f32_grads = false);
/// Built-in workload names, sorted ("gpt", "inception_v3", "nmt", "resnet50", "rnnlm").
std::vector<std::string> builtin_graph_names();

}  // namespace placesim::models

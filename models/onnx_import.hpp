// Importing an ONNX model as a placesim graph: shapes from ONNX shape inference, FLOPs and bytes
// per node, parameters from initializers (or, for export_params=False, from the graph inputs that
// carry the weight shapes), and optionally the derived backward and optimizer-update ops.
//
//   OnnxImportOptions o;
//   o.training = true;
//   o.batch = 32;                    // replaces a symbolic or fixed batch dimension of the inputs
//   sim::Graph g = import_onnx("resnet18.onnx", o);   // throws InputError
//
// FLOPs count a multiply-add as 2 (Conv, Gemm, MatMul); elementwise ops 1 per output element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "sim/graph.hpp"

namespace placesim::models {

/// How the graph runs Sigmoid(x) -> Mul(x, s), torch.onnx's export of nn.SiLU
/// (docs/workloads.md, "ONNX import"): as those two ops (`ops`, what x * torch.sigmoid(x) runs), as
/// PyTorch's silu / silu_backward kernels (`fused`, nn.SiLU()), or with the copy of x autograd
/// saves for an in-place one first (`inplace`, nn.SiLU(inplace=True)).
enum class SiluMode { Ops, Fused, Inplace };

/// How the graph runs torch.onnx's export of nn.GELU (exact, erf form: Div(x, sqrt 2) -> Erf ->
/// Add 1 -> Mul x -> Mul 0.5; docs/workloads.md, "ONNX import"): as those five ops (`ops`), or as
/// PyTorch's gelu / gelu_backward kernels (`fused`), one op each way.
enum class GeluMode { Ops, Fused };

struct OnnxImportOptions {
  bool training = false;
  SiluMode silu = SiluMode::Ops;
  GeluMode gelu = GeluMode::Ops;
  /// nn.Linear's `MatMul(x, Transpose(W))`: the Transpose of a 2-D weight that only matmuls read is
  /// a `View` (PyTorch's `W.t()`; cuBLAS takes the transposed operand), no copy either way.
  bool weight_view = false;
  /// nn.Linear's bias `Add(MatMul(x, W), b)` (b a 1-D parameter of the output's last dimension) is
  /// the MatMul's cuBLASLt epilogue (PyTorch's addmm, CUDA >= 11.4), its third input, as the `gpt`
  /// graph's `bias_epilogue=true`; the bias gradient a separate column sum (BiasAddGrad).
  bool bias_epilogue = false;
  /// `attention=sdpa`: each MatMul(q, Transpose(k)) -> [Mul/Div by a constant] -> Softmax(-1) ->
  /// MatMul(., v) chain, every intermediate read once, is one fused attention op each way, as
  /// F.scaled_dot_product_attention runs it (the `gpt` graph's `attention=flash` op).
  bool attention_sdpa = false;
  /// `strided_bmm=true`: a Transpose of a 3-D tensor that a batched GEMM can read or write in place
  /// is a `View` (no copy): one whose readers are all MatMuls and whose permutation keeps the
  /// contiguous axis a matrix axis (perm[0] != 2), or a {1, 0, 2} of a MatMul output read by
  /// nothing else (the GEMM writes the transposed layout). cuBLAS strided batched GEMM takes any
  /// batch stride and leading dimension, as fairseq's T x B x C attention runs it.
  bool strided_bmm = false;
  /// `loss=label_smoothing`: the training loss on each [N, C] output is the label-smoothed NLL over
  /// log_softmax(logits, dtype=float32) (GraphBuilder::label_smoothed_nll: F32 in every precision),
  /// as fairseq's label_smoothed_cross_entropy and GNMT v2's LabelSmoothing run it, instead of one
  /// softmax cross-entropy op in the logits' type.
  bool label_smoothing = false;
  /// `autocast=torch`: the graph runs as the program runs it under torch.autocast(dtype=float16)
  /// (aten/src/ATen/autocast_mode.cpp): parameters, inputs and the ops off autocast's lists keep
  /// their types (F32 stays F32; a binary op of F16 and F32 tensors is F32), convolutions, matmuls
  /// and fused attention run in F16 behind a Cast of each F32 input (one a parameter a step: the
  /// cast cache), LayerNorm/GroupNorm/Exp/Log/Pow run in F32 behind a Cast of an F16 input, and
  /// Softmax/LogSoftmax/ReduceSum read F16 and write F32 in one kernel. Each Cast's gradient is a
  /// Cast back. Needs precision=f16 (docs/workloads.md, "ONNX import").
  bool autocast = false;
  /// `layer_norm=apex` (needs autocast=torch): LayerNorm is apex's FusedLayerNorm, whose
  /// fused_layer_norm_affine casts input, weight and bias to the autocast type
  /// (`_cast_if_autocast_enabled`, NVIDIA/apex apex/normalization/fused_layer_norm.py) and runs
  /// with autocast off: one Cast of an F32 input, an F16 kernel, an F16 output the next matmul
  /// reads without a cast. Default `torch`: autocast's `fp32` list (F32 LayerNorm).
  bool layer_norm_apex = false;
  std::int64_t batch = 0;  ///< 0 = keep the model's batch dimension (1 if symbolic)
  Optimizer optimizer = Optimizer::Sgd;
};

sim::Graph import_onnx(const std::string& path, const OnnxImportOptions& options);

}  // namespace placesim::models

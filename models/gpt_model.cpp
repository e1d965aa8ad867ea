// A GPT-2-style transformer decoder (Radford et al. 2019): pre-LayerNorm blocks, fused QKV
// projection, causal softmax attention, GELU MLP, language-model head tied to the token
// embedding. Activations are kept as [batch*seq, hidden] for the projections. The attention
// runs the passes eager PyTorch runs (Hugging Face GPT2Attention, NVIDIA DeepLearningExamples'
// BertSelfAttention): the 1/sqrt(head dim) scale and the mask add as two kernels, softmax, and,
// unless `dropout=0`, dropout on the probabilities, on the embeddings and on both residual
// branches (docs/workloads.md). `attention=fused_softmax` runs Megatron-LM's fused kernels
// instead, `attention=flash` one FlashAttention-2 kernel each way on strided views of the QKV
// projection (below). `qkv_bias=false` drops the QKV projection's bias, `bias_epilogue=true` runs
// every bias as its GEMM's epilogue.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "models/workloads.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

Tensor transpose(GraphBuilder& b, const std::string& name, const Tensor& x, Shape out) {
  return b.op(name, "Transpose", {x}, {std::move(out)}, 0,
              {GradRule{.type = "Transpose", .flops = 0, .wrt = {0}}})[0];
}

// How the program runs its linear layers' biases.
struct Linears {
  bool qkv_bias;  // the fused QKV projection has a bias (Hugging Face GPT-2, BERT), or none
  bool epilogue;  // the bias is the GEMM's epilogue (cuBLASLt, PyTorch's addmm), not a pass
};

// x W (+ b). A bias is its own BiasAdd pass over the output, or, with `epilogue`, the GEMM's:
// PyTorch's nn.Linear folds a contiguous 3-D input to 2-D and calls addmm (at::linear,
// _flatten_3d_linear), and addmm with a 1-D bias and beta 1 calls cuBLASLt's gemm_and_bias
// (aten/src/ATen/native/cuda/Blas.cpp, useLtInterface; CUDA >= 11.4): one kernel that adds the bias
// as it stores the tile (`nvjet_*_bias_*` in the H200 traces). Older addmm copied the broadcast
// bias into the output and ran the GEMM with beta 1: a pass over the output, as BiasAdd prices it.
// Either way the bias gradient is a separate column sum of the output gradient.
Tensor linear(GraphBuilder& b, const std::string& name, const Tensor& x, std::int64_t out,
              bool epilogue, bool bias = true) {
  const Tensor w = b.variable(name + "/w", {x.shape[1], out});
  if (!bias) return b.matmul(name + "/MatMul", x, w);
  const Tensor bv = b.variable(name + "/b", {out});
  if (epilogue) return b.matmul_bias(name + "/MatMul", x, w, bv);
  return b.bias_add(name + "/BiasAdd", b.matmul(name + "/MatMul", x, w), bv);
}

Tensor layer_norm(GraphBuilder& b, const std::string& name, const Tensor& x) {
  const Tensor g = b.variable(name + "/g", {x.shape.back()});
  const Tensor beta = b.variable(name + "/b", {x.shape.back()});
  return b.layer_norm(name, x, g, beta);
}

// How the attention core runs: eager PyTorch's passes, Megatron-LM's fused kernels, or one
// FlashAttention-2 kernel forward and one backward.
enum class Attention { Eager, FusedSoftmax, Flash };

struct AttentionShape {
  std::int64_t batch, heads, seq, hd;
  bool causal;     // the causal LM (every position predicted): FlashAttention skips masked blocks
  double dropout;  // dropout probability on the attention probabilities (0: none)
};

// The attention core from the QKV projection's output [batch*seq, 3*hidden] (or, with
// `separate`, the three projections' outputs [batch*seq, hidden] each) to the merged context
// [batch*seq, hidden].
Tensor attention_core(GraphBuilder& b, Attention mode, const AttentionShape& a,
                      const std::vector<Tensor>& proj, const Tensor* mask) {
  const Tensor& qkv = proj[0];
  const Shape heads_shape{a.batch, a.heads, a.seq, a.hd};
  const Shape merged{a.batch * a.seq, a.heads * a.hd};
  if (mode == Attention::Flash) {
    // What PyTorch runs around F.scaled_dot_product_attention (rasbt/LLMs-from-scratch's
    // PyTorchMultiHeadAttention, tools/train_rig.py): `qkv.view(b, s, 3, h, d).permute(2, 0, 3, 1,
    // 4)` and its unbind into q, k, v are views (the fused kernel reads strided Q, K, V), and the
    // kernel writes O in [b, s, h, d] order, so `o.transpose(1, 2).contiguous().view(b, s, hidden)`
    // copies nothing, nor does the backward's dO. The backward copies twice: the unbind's gradient
    // is a stack of dQ, dK, dV, which the kernel wrote in [b, s, h, d] order (a permuted gather,
    // ATen's generic CatArrayBatchedCopy), and the view's gradient a permuted copy of [3, b, h, s,
    // d] into [b, s, 3, h, d] (`reshape` of a non-contiguous tensor: elementwise_kernel's
    // direct_copy). The H200 traces have exactly these two copies a layer and none forward.
    const Tensor heads = b.op("qkv_heads", "View", {qkv}, {{3, a.batch, a.heads, a.seq, a.hd}}, 0,
                              {GradRule{.type = "Transpose", .flops = 0, .wrt = {0}}})[0];
    const auto qkv3 = b.op("unbind_qkv", "View", {heads}, {heads_shape, heads_shape, heads_shape},
                           0, {GradRule{.type = "Stack", .flops = 0, .wrt = {0}}});
    // FlashAttention-2 (Dao 2023): QK^T, the online softmax (scale, mask, dropout inside) and
    // PV in one kernel over tiles in on-chip memory: it reads Q, K, V and writes O and the
    // row logsumexp [batch, heads, seq]; no seq x seq tensor reaches memory. 4·d FLOPs a
    // query-key pair (two GEMMs); a causal call skips the blocks above the diagonal and counts
    // the pairs it keeps, seq·(seq+1)/2, as calibrate's `attention` class does
    // (calibration/kernel_fit.cpp). The backward recomputes the scores from Q, K and the
    // logsumexp: 2.5 times the forward FLOPs, reading dO, Q, K, V, O and the logsumexp,
    // writing dQ, dK, dV.
    const double s = static_cast<double>(a.seq);
    const double pairs = a.causal ? s * (s + 1) / 2 : s * s;
    const double f = 4.0 * static_cast<double>(a.batch * a.heads * a.hd) * pairs;
    const auto outs = b.op("flash_attention", "FlashAttention", {qkv3[0], qkv3[1], qkv3[2]},
                           {heads_shape, {a.batch, a.heads, a.seq}}, f,
                           {GradRule{.type = "FlashAttentionGrad",
                                     .flops = 2.5 * f,
                                     .wrt = {0, 1, 2},
                                     .saved_inputs = {0, 1, 2},
                                     .saved_outputs = {0, 1}}});
    // Dropout on the probabilities runs inside the kernel: the forward draws its mask with Philox
    // per kept score, the backward draws it again (no mask reaches memory); priced by the cost
    // model's in-kernel dropout term (docs/cost-model.md, "Fused attention ops").
    if (a.dropout > 0.0) b.set_dropout(outs[0], a.dropout);
    return b.op("merge_heads", "View", {outs[0]}, {merged}, 0,
                {GradRule{.wrt = {0}, .passthrough = true}})[0];
  }
  // PyTorch's split of the fused projection (Hugging Face GPT-2's `c_attn(x).split(hidden, dim=2)`,
  // Megatron-LM's split_tensor_along_last_dim) returns three views: no kernel. The copies run where
  // the views are consumed (torch.matmul's reshape of the permuted heads: the q/k/v transposes
  // below). Its gradient is one: SplitBackward0 cats dQ, dK and dV into [b*s, 3*hidden] (ATen's
  // CatArrayBatchedCopy, as UnbindBackward0's stack on the flash path). docs/workloads.md, "The
  // fused QKV split".
  const std::vector<Tensor> split =
      proj.size() == 3 ? proj
                       : b.op("split_qkv", "View", {qkv}, std::vector<Shape>(3, merged), 0,
                              {GradRule{.type = "ConcatV2", .flops = 0, .wrt = {0}}});
  const Tensor q = transpose(b, "q_heads", split[0], heads_shape);
  // Eager and Megatron multiply by K transposed: torch.matmul's reshape copies K^T ([b, h, d, s])
  // out of the [b, s, h, d] view of the projection, a copy whose innermost axis (s) is strided in
  // its input, and the gradient back alike: the H200's eager GPT-2 trace has both at the element
  // rate of a full transpose (39.7 and 41.7 us a layer at [8, 12, 64, 1024] bf16), twice the time
  // of the q and v copies, which keep rows of d contiguous (the cost model's full_transpose).
  const Tensor k_view = b.op("k_view", "View", {split[1]}, {{a.batch, a.seq, a.heads, a.hd}}, 0,
                             {GradRule{.wrt = {0}, .passthrough = true}})[0];
  const Tensor k = transpose(b, "k_heads", k_view, Shape{a.batch, a.heads, a.hd, a.seq});
  const Tensor v = transpose(b, "v_heads", split[2], heads_shape);
  Tensor s = b.batch_matmul("scores", q, k);
  const double score_elems = static_cast<double>(num_elements(s.shape));
  Tensor p;
  if (mode == Attention::FusedSoftmax) {
    // Megatron-LM's FusedScaleMaskSoftmax (megatron/model/fused_softmax.py): scale, mask and
    // softmax in one kernel that reads the scores and the mask and writes the probabilities,
    // saved for its one backward pass (scaled_masked_softmax_cuda.backward reads the output
    // gradient and the probabilities). FLOPs: the scale, the mask and the softmax's 5 forward;
    // the softmax gradient's 3 and the scale backward.
    p = b.op("scale_mask_softmax", "ScaleMaskSoftmax", {s, *mask}, {s.shape}, 7 * score_elems,
             {GradRule{.type = "ScaleMaskSoftmaxGrad",
                       .flops = 4 * score_elems,
                       .wrt = {0},
                       .saved_outputs = {0}}})[0];
  } else {
    // Scale by 1/sqrt(head dim), then mask: two kernels, as eager PyTorch runs them; the
    // scale's gradient is one more pass. BERT's padding mask is added (BertSelfAttention:
    // `attention_scores + attention_mask`): its gradient is the incoming one, no kernel. A
    // causal LM's mask is not an add: Hugging Face GPT2Attention writes the masked scores with
    // torch.where and the GPT of rasbt/LLMs-from-scratch (ch03 MultiHeadAttention) with
    // masked_fill_, whose backward is one more pass over the scores, `grad.masked_fill(mask, 0)`
    // (PyTorch tools/autograd/derivatives.yaml; where's: `where(condition, grad, 0)`): it reads
    // the gradient and the broadcast mask and writes the scores' gradient. The forward is priced
    // as the add it replaces (same bytes, a broadcast operand).
    s = b.op("scale", "Scale", {s}, {s.shape}, score_elems,
             {GradRule{.type = "ScaleGrad", .flops = score_elems, .wrt = {0}}})[0];
    if (a.causal)
      s = b.op(
          "mask_add", "Add", {s, *mask}, {s.shape}, score_elems,
          {GradRule{
              .type = "MaskFillGrad", .flops = score_elems, .wrt = {0}, .saved_inputs = {1}}})[0];
    else
      s = b.add("mask_add", s, *mask);
    p = b.softmax("softmax", s);
  }
  // Megatron's attention dropout is a separate pass after the fused softmax, as eager's.
  if (a.dropout > 0.0) p = b.dropout("dropout_probs", p);
  return transpose(b, "merge_heads", b.batch_matmul("context", p, v), merged);
}

// x + dropout(projection(h)): eager runs the bias add (unless it is the GEMM's epilogue), the
// dropout and the residual add as separate kernels; Megatron-LM as one
// (bias_dropout_add_fused_train, megatron/model/transformer.py).
Tensor projection_residual(GraphBuilder& b, Attention mode, const Tensor& x, const Tensor& h,
                           bool dropout, const Linears& lin) {
  if (mode != Attention::FusedSoftmax) {
    Tensor out = linear(b, "c_proj", h, x.shape[1], lin.epilogue);
    if (dropout) out = b.dropout("dropout", out);
    return b.add("residual", x, out);
  }
  const Tensor w = b.variable("c_proj/w", {h.shape[1], x.shape[1]});
  const Tensor bias = b.variable("c_proj/b", {x.shape[1]});
  return b.bias_dropout_add("bias_dropout_add", b.matmul("c_proj/MatMul", h, w), bias, x, dropout);
}

}  // namespace

sim::Graph build_gpt(GraphOptions& o) {
  o.accept({"batch", "layers", "hidden", "heads", "seq", "vocab", "positions", "optimizer",
            "masked", "dropout", "attention", "qkv_bias", "bias_epilogue", "qkv"});
  const std::int64_t batch = o.get_int("batch", 4);
  const std::int64_t layers = o.get_int("layers", 12, 1, 1024);
  const std::int64_t hidden = o.get_int("hidden", 768);
  const std::int64_t heads = o.get_int("heads", 12);
  const std::int64_t seq = o.get_int("seq", 1024);
  const std::int64_t vocab = o.get_int("vocab", 50257);
  const std::int64_t positions = o.get_int("positions", std::max<std::int64_t>(1024, seq));
  // Positions per sequence the head predicts: all of them for a causal LM; BERT's masked-LM
  // head runs on max_predictions_per_seq gathered positions (20 at 128 tokens, 80 at 512).
  const std::int64_t masked = o.get_int("masked", seq, 1, seq);
  // Dropout probability (GPT-2's and BERT's 0.1). Its value changes no separate kernel's cost,
  // only whether those kernels run (0 leaves them out); `attention=flash` also carries it on the
  // fused attention ops, whose in-kernel dropout costs time whatever its value.
  const double dropout_p = o.get_real("dropout", 0.1, 0.0, 1.0);
  const bool dropout = dropout_p > 0.0;
  const std::string attn = o.get_choice("attention", "eager", {"eager", "fused_softmax", "flash"});
  const Attention mode = attn == "flash"           ? Attention::Flash
                         : attn == "fused_softmax" ? Attention::FusedSoftmax
                                                   : Attention::Eager;
  // The QKV projection's bias: Hugging Face GPT-2 (Conv1D c_attn) and BERT (query/key/value
  // nn.Linear) have one; rasbt/LLMs-from-scratch's GPT (`qkv_bias: False`) and tools/train_rig.py
  // do not. Every other linear has a bias; the head has none (tied, or `bias=False`).
  // `bias_epilogue`: the biases are the GEMMs' cuBLASLt epilogue (PyTorch's addmm on CUDA >= 11.4
  // since its gemm_and_bias path), not BiasAdd passes (docs/workloads.md says which rows run it).
  const Linears lin{.qkv_bias = o.get_bool("qkv_bias", true),
                    .epilogue = o.get_bool("bias_epilogue", false)};
  // `qkv=separate`: three nn.Linear(hidden, hidden) for query, key and value, as BERT's
  // modeling.py has them (NVIDIA DeepLearningExamples PyTorch/LanguageModeling/BERT/modeling.py,
  // BertSelfAttention: `self.query`, `self.key`, `self.value`; Hugging Face BertSelfAttention
  // alike): three GEMMs of a third of the width and six parameter tensors a layer where the fused
  // projection (GPT-2's c_attn, default) has one GEMM and two. The eager and fused-softmax paths
  // take the three outputs as Q, K and V; `attention=flash` reads views of one fused tensor, so
  // the two are refused together.
  const bool separate_qkv = o.get_choice("qkv", "fused", {"fused", "separate"}) == "separate";
  if (separate_qkv && mode == Attention::Flash)
    throw sim::InputError("--graph-opt", "qkv", "fused with attention=flash, got separate");
  const Optimizer opt = optimizer_option(o, Optimizer::Adam);
  if (hidden % heads != 0) {
    throw sim::InputError(
        "--graph-opt", "heads",
        "a divisor of hidden (" + std::to_string(hidden) + "), got " + std::to_string(heads));
  }
  if (seq > positions) {
    throw sim::InputError(
        "--graph-opt", "positions",
        "at least seq (" + std::to_string(seq) + "), got " + std::to_string(positions));
  }
  const std::int64_t hd = hidden / heads, bt = batch * seq;

  GraphBuilder b("gpt");
  b.scope("input");
  const Tensor ids = b.input("ids", {bt}, sim::Dtype::I32);
  const Tensor pos_ids = b.input("positions", {seq}, sim::Dtype::I32);
  const std::int64_t predicted = batch * masked;
  const Tensor labels = b.input("labels", {predicted}, sim::Dtype::I32);
  // The additive attention mask, broadcast over heads and query rows (BERT's extended padding
  // mask; GPT-2's causal mask is one pass over the scores the same way). A resident constant of
  // batch x seq F32: it is small beside the scores, and as a constant the tensor-parallel
  // transform treats it as one (models/parallel_tp.cpp). FlashAttention masks inside its kernel.
  std::optional<Tensor> mask;
  if (mode != Attention::Flash) mask = b.constant("attention_mask", {batch, 1, 1, seq});
  b.scope("gpt/embedding");
  const Tensor wte = b.variable("wte", {vocab, hidden});
  const Tensor wpe = b.variable("wpe", {positions, hidden});
  Tensor x = b.add("add_pos", b.gather("tok_lookup", wte, ids, true),
                   b.gather("pos_lookup", wpe, pos_ids, true));
  if (dropout) x = b.dropout("dropout", x);

  const AttentionShape shape{.batch = batch,
                             .heads = heads,
                             .seq = seq,
                             .hd = hd,
                             .causal = masked == seq,
                             .dropout = dropout_p};
  for (std::int64_t l = 0; l < layers; ++l) {
    b.scope("gpt/h" + std::to_string(l) + "/attn");
    const Tensor ln1 = layer_norm(b, "ln_1", x);
    std::vector<Tensor> proj;
    if (separate_qkv) {
      for (const char* n : {"query", "key", "value"})
        proj.push_back(linear(b, n, ln1, hidden, lin.epilogue, lin.qkv_bias));
    } else {
      proj.push_back(linear(b, "c_attn", ln1, 3 * hidden, lin.epilogue, lin.qkv_bias));
    }
    const Tensor a = attention_core(b, mode, shape, proj, mask ? &*mask : nullptr);
    x = projection_residual(b, mode, x, a, dropout, lin);
    b.scope("gpt/h" + std::to_string(l) + "/mlp");
    // tanh-approximated GELU: about 8 FLOPs per element.
    const Tensor h =
        b.unary("gelu", "Gelu",
                linear(b, "c_fc", layer_norm(b, "ln_2", x), 4 * hidden, lin.epilogue), 8, false);
    x = projection_residual(b, mode, x, h, dropout, lin);
  }
  b.scope("gpt/head");
  x = layer_norm(b, "ln_f", x);
  if (masked < seq) {
    // index_select of the masked rows; its gradient zero-fills [batch*seq, hidden] and
    // index_adds the rows back (PyTorch's IndexSelectBackward).
    const Tensor rows = b.input("masked_positions", {predicted}, sim::Dtype::I32);
    x = b.op("gather_masked", "GatherRows", {x, rows}, {{predicted, hidden}}, 0,
             {GradRule{.type = "GatherRowsGrad", .flops = 0, .wrt = {0}, .saved_inputs = {1}}})[0];
  }
  const Tensor logits = b.matmul("lm_head", x, wte, true);
  const Tensor loss = b.reduce_mean("mean", b.sparse_softmax_xent("xent", logits, labels));
  b.train(loss, opt);
  return b.finish({{"builder", "gpt"},
                   {"options", o.resolved()},
                   {"parameters", std::to_string(b.parameter_count())},
                   {"source", "Radford et al. 2019 (GPT-2 small) (docs/workloads.md)"}});
}

}  // namespace placesim::models

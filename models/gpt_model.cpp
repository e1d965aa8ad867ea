// A GPT-2-style transformer decoder (Radford et al. 2019): pre-LayerNorm blocks, fused QKV
// projection, causal softmax attention, GELU MLP, language-model head tied to the token
// embedding. Activations are kept as [batch*seq, hidden] for the projections. The attention
// runs the passes eager PyTorch runs (Hugging Face GPT2Attention, NVIDIA DeepLearningExamples'
// BertSelfAttention): the 1/sqrt(head dim) scale and the mask add as two kernels, softmax, and,
// unless `dropout=0`, dropout on the probabilities, on the embeddings and on both residual
// branches (docs/workloads.md).
#include <algorithm>
#include <string>

#include "models/workloads.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

Tensor transpose(GraphBuilder& b, const std::string& name, const Tensor& x, Shape out) {
  return b.op(name, "Transpose", {x}, {std::move(out)}, 0,
              {GradRule{.type = "Transpose", .flops = 0, .wrt = {0}}})[0];
}

Tensor linear(GraphBuilder& b, const std::string& name, const Tensor& x, std::int64_t out) {
  const Tensor w = b.variable(name + "/w", {x.shape[1], out});
  const Tensor bias = b.variable(name + "/b", {out});
  return b.bias_add(name + "/BiasAdd", b.matmul(name + "/MatMul", x, w), bias);
}

Tensor layer_norm(GraphBuilder& b, const std::string& name, const Tensor& x) {
  const Tensor g = b.variable(name + "/g", {x.shape.back()});
  const Tensor beta = b.variable(name + "/b", {x.shape.back()});
  return b.layer_norm(name, x, g, beta);
}

}  // namespace

sim::Graph build_gpt(GraphOptions& o) {
  o.accept({"batch", "layers", "hidden", "heads", "seq", "vocab", "positions", "optimizer",
            "masked", "dropout"});
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
  // Dropout probability (GPT-2's and BERT's 0.1); it changes no cost, only whether the dropout
  // kernels run: 0 leaves them out.
  const bool dropout = o.get_real("dropout", 0.1, 0.0, 1.0) > 0.0;
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
  // transform treats it as one (models/parallel_tp.cpp).
  const Tensor mask = b.constant("attention_mask", {batch, 1, 1, seq});
  b.scope("gpt/embedding");
  const Tensor wte = b.variable("wte", {vocab, hidden});
  const Tensor wpe = b.variable("wpe", {positions, hidden});
  Tensor x =
      b.add("add_pos", b.gather("tok_lookup", wte, ids), b.gather("pos_lookup", wpe, pos_ids));
  if (dropout) x = b.dropout("dropout", x);

  const Shape heads_shape{batch, heads, seq, hd};
  const double score_elems = static_cast<double>(batch * heads * seq * seq);
  for (std::int64_t l = 0; l < layers; ++l) {
    b.scope("gpt/h" + std::to_string(l) + "/attn");
    const Tensor qkv = linear(b, "c_attn", layer_norm(b, "ln_1", x), 3 * hidden);
    const auto parts = b.split("split_qkv", qkv, 1, 3);
    const Tensor q = transpose(b, "q_heads", parts[0], heads_shape);
    const Tensor kt = transpose(b, "k_heads", parts[1], {batch, heads, hd, seq});
    const Tensor v = transpose(b, "v_heads", parts[2], heads_shape);
    Tensor s = b.batch_matmul("scores", q, kt);
    // Scale by 1/sqrt(head dim), then add the mask: two kernels, as eager PyTorch runs them.
    // The add's gradient is the incoming one (no kernel); the scale's is one more pass.
    s = b.op("scale", "Scale", {s}, {s.shape}, score_elems,
             {GradRule{.type = "ScaleGrad", .flops = score_elems, .wrt = {0}}})[0];
    s = b.add("mask_add", s, mask);
    Tensor p = b.softmax("softmax", s);
    if (dropout) p = b.dropout("dropout_probs", p);
    const Tensor a = transpose(b, "merge_heads", b.batch_matmul("context", p, v), {bt, hidden});
    Tensor out = linear(b, "c_proj", a, hidden);
    if (dropout) out = b.dropout("dropout", out);
    x = b.add("residual", x, out);
    b.scope("gpt/h" + std::to_string(l) + "/mlp");
    // tanh-approximated GELU: about 8 FLOPs per element.
    const Tensor h =
        b.unary("gelu", "Gelu", linear(b, "c_fc", layer_norm(b, "ln_2", x), 4 * hidden), 8, false);
    Tensor ffn = linear(b, "c_proj", h, hidden);
    if (dropout) ffn = b.dropout("dropout", ffn);
    x = b.add("residual", x, ffn);
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

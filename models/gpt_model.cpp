// A GPT-2-style transformer decoder (Radford et al. 2019): pre-LayerNorm blocks, fused QKV
// projection, causal softmax attention, GELU MLP, language-model head tied to the token
// embedding. Activations are kept as [batch*seq, hidden] for the projections.
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
  o.accept(
      {"batch", "layers", "hidden", "heads", "seq", "vocab", "positions", "optimizer", "masked"});
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
  b.scope("gpt/embedding");
  const Tensor wte = b.variable("wte", {vocab, hidden});
  const Tensor wpe = b.variable("wpe", {positions, hidden});
  Tensor x =
      b.add("add_pos", b.gather("tok_lookup", wte, ids), b.gather("pos_lookup", wpe, pos_ids));

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
    // Scale by 1/sqrt(head dim) and apply the causal mask (constants, so no variables).
    s = b.op("scale_mask", "MaskedScale", {s}, {s.shape}, 2 * score_elems,
             {GradRule{.type = "MaskedScaleGrad", .flops = score_elems, .wrt = {0}}})[0];
    const Tensor p = b.softmax("softmax", s);
    const Tensor a = transpose(b, "merge_heads", b.batch_matmul("context", p, v), {bt, hidden});
    x = b.add("residual", x, linear(b, "c_proj", a, hidden));
    b.scope("gpt/h" + std::to_string(l) + "/mlp");
    // tanh-approximated GELU: about 8 FLOPs per element.
    const Tensor h =
        b.unary("gelu", "Gelu", linear(b, "c_fc", layer_norm(b, "ln_2", x), 4 * hidden), 8, false);
    x = b.add("residual", x, linear(b, "c_proj", h, hidden));
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

// The paper's recurrent benchmarks, statically unrolled as TensorFlow 1.x's static_rnn and
// legacy_seq2seq built them: one set of ops per time step and layer; `nmt lstm=cudnn` builds each
// LSTM layer as cuDNN runs it for PyTorch's nn.LSTM instead (cudnn_lstm_layer).
#include <string>
#include <vector>

#include "models/workloads.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

std::string t_name(const char* prefix, std::int64_t t) {
  std::string s(prefix);
  s += std::to_string(t);
  return s;
}

// Identity-like op with a constant operand (the forget-gate bias of BasicLSTMCell).
Tensor add_const(GraphBuilder& b, const std::string& name, const Tensor& x) {
  return b.op(name, "Add", {x}, {x.shape}, static_cast<double>(num_elements(x.shape)),
              {GradRule{.wrt = {0}, .passthrough = true}})[0];
}

// Per-step softmax cross-entropy loss: logits = h W + b.
Tensor softmax_loss(GraphBuilder& b, const std::string& step, const Tensor& h, const Tensor& w,
                    const Tensor& bias, const Tensor& labels) {
  const Tensor logits = b.bias_add(step + "/logits", b.matmul(step + "/MatMul", h, w), bias);
  return b.sparse_softmax_xent(step + "/xent", logits, labels);
}

// Per-step label-smoothed loss as NVIDIA DeepLearningExamples' GNMT v2 computes it
// (PyTorch/Translation/GNMT/seq2seq/train/smoothing.py @ 70c51ad7, LabelSmoothing; train.py's
// --smoothing 0.1 builds it): logprobs = log_softmax(logits, dtype=torch.float32), loss =
// (1 - s) * -logprobs.gather(label) + s * -logprobs.mean(-1). The log-probabilities are F32
// whatever the model's precision, and so are the two reductions over them and their gradients
// (apply_mixed_precision keeps them: models/registry.hpp); GraphBuilder::label_smoothed_nll.
Tensor label_smoothed_loss(GraphBuilder& b, const std::string& step, const Tensor& h,
                           const Tensor& w, const Tensor& bias, const Tensor& labels) {
  const Tensor logits = b.bias_add(step + "/logits", b.matmul(step + "/MatMul", h, w), bias);
  return b.label_smoothed_nll(step, logits, labels);
}

constexpr const char* kRecurrentKeys[] = {"batch", "layers",    "hidden",           "vocab",
                                          "steps", "optimizer", "grad_accumulation"};

}  // namespace

std::pair<Tensor, Tensor> lstm_cell(GraphBuilder& b, const std::string& step, const Tensor& x,
                                    const Tensor& h, const Tensor& c, const Tensor& w,
                                    const Tensor& bias) {
  const Tensor xh = b.concat(step + "/concat", {x, h}, 1);
  const Tensor gates = b.bias_add(step + "/BiasAdd", b.matmul(step + "/MatMul", xh, w), bias);
  const auto ijfo = b.split(step + "/split", gates, 1, 4);
  // Sigmoid and tanh cost a few FLOPs per element (exp, add, divide).
  const Tensor i = b.unary(step + "/Sigmoid_i", "Sigmoid", ijfo[0], 4);
  const Tensor j = b.unary(step + "/Tanh_j", "Tanh", ijfo[1], 4);
  const Tensor f =
      b.unary(step + "/Sigmoid_f", "Sigmoid", add_const(b, step + "/add_forget_bias", ijfo[2]), 4);
  const Tensor o = b.unary(step + "/Sigmoid_o", "Sigmoid", ijfo[3], 4);
  const Tensor c_new =
      b.add(step + "/add_c", b.mul(step + "/mul_fc", c, f), b.mul(step + "/mul_ij", i, j));
  const Tensor h_new = b.mul(step + "/mul_h", b.unary(step + "/Tanh_c", "Tanh", c_new, 4), o);
  return {h_new, c_new};
}

sim::Graph build_rnnlm(GraphOptions& o) {
  o.accept({std::begin(kRecurrentKeys), std::end(kRecurrentKeys)});
  const std::int64_t batch = o.get_int("batch", 64);
  const std::int64_t layers = o.get_int("layers", 2, 1, 64);
  const std::int64_t hidden = o.get_int("hidden", 2048);
  const std::int64_t vocab = o.get_int("vocab", 10000);
  const std::int64_t steps = o.get_int("steps", 40, 1, 100000);
  const Optimizer opt = optimizer_option(o, Optimizer::Sgd);
  const Accumulation acc = accumulation_option(o);

  GraphBuilder b("rnnlm");
  b.scope("rnnlm/embedding");
  const Tensor emb = b.variable("embedding", {vocab, hidden});
  std::vector<Tensor> w, bias, h, c;
  for (std::int64_t l = 0; l < layers; ++l) {
    b.scope("rnnlm/lstm_" + std::to_string(l));
    w.push_back(b.variable("kernel", {2 * hidden, 4 * hidden}));
    bias.push_back(b.variable("bias", {4 * hidden}));
    h.push_back(b.input("zero_h", {batch, hidden}));
    c.push_back(b.input("zero_c", {batch, hidden}));
  }
  b.scope("rnnlm/softmax");
  const Tensor w_sm = b.variable("softmax_w", {hidden, vocab});
  const Tensor b_sm = b.variable("softmax_b", {vocab});

  std::vector<Tensor> losses;
  for (std::int64_t t = 0; t < steps; ++t) {
    b.scope("rnnlm/input");
    const Tensor ids = b.input(t_name("ids_t", t), {batch}, sim::Dtype::I32);
    const Tensor labels = b.input(t_name("labels_t", t), {batch}, sim::Dtype::I32);
    b.scope("rnnlm/embedding");
    Tensor x = b.gather(t_name("lookup_t", t), emb, ids);
    for (std::int64_t l = 0; l < layers; ++l) {
      b.scope("rnnlm/lstm_" + std::to_string(l));
      auto [hn, cn] = lstm_cell(b, t_name("t", t), x, h[static_cast<std::size_t>(l)],
                                c[static_cast<std::size_t>(l)], w[static_cast<std::size_t>(l)],
                                bias[static_cast<std::size_t>(l)]);
      h[static_cast<std::size_t>(l)] = hn;
      c[static_cast<std::size_t>(l)] = cn;
      x = hn;
    }
    b.scope("rnnlm/softmax");
    losses.push_back(softmax_loss(b, t_name("t", t), x, w_sm, b_sm, labels));
  }
  b.scope("rnnlm/loss");
  const Tensor loss = b.reduce_mean("mean", steps > 1 ? b.add_n("sum_steps", losses) : losses[0]);
  b.train(loss, opt, acc);
  return b.finish({{"builder", "rnnlm"},
                   {"options", o.resolved()},
                   {"parameters", std::to_string(b.parameter_count())},
                   {"source", "Zaremba et al. 2014 / Mirhoseini et al. 2017 (docs/workloads.md)"}});
}

namespace {

// The sizes of the NMT model (build_nmt's options).
struct NmtSizes {
  std::int64_t batch, hidden, attn, src_vocab, tgt_vocab, src_len, tgt_len;
  std::size_t layers;
  bool bidir;
  bool attn_output;      // the attentional output layer tanh(W_c [h; context]) before the softmax
  bool cudnn;            // lstm=cudnn: each layer as cuDNN runs it (cudnn_lstm_layer)
  bool smoothed;         // loss=label_smoothing: label_smoothed_loss instead of softmax_loss
  bool shared_emb;       // share_embedding=true: one embedding table for encoder and decoder
  std::int64_t enc_dim;  // width of an encoder output
};

// Per layer: the recurrent state (h, c) carried from step to step, encoder into decoder.
struct LstmStates {
  std::vector<Tensor> h, c;
};

// The bottom encoder layer's backward LSTM (over the source from its end), its outputs
// concatenated to the forward ones.
void nmt_backward_layer(GraphBuilder& b, const NmtSizes& z, const std::string& sc,
                        const std::vector<Tensor>& layer_in, std::vector<Tensor>& next) {
  b.scope(sc + "_bw");
  const Tensor w_bw = b.variable("kernel", {2 * z.hidden, 4 * z.hidden});
  const Tensor b_bw = b.variable("bias", {4 * z.hidden});
  Tensor hb = b.input("zero_h", {z.batch, z.hidden});
  Tensor cb = b.input("zero_c", {z.batch, z.hidden});
  std::vector<Tensor> bw(next.size());
  for (std::int64_t t = z.src_len - 1; t >= 0; --t) {
    auto [hn, cn] =
        lstm_cell(b, t_name("t", t), layer_in[static_cast<std::size_t>(t)], hb, cb, w_bw, b_bw);
    hb = hn;
    cb = cn;
    bw[static_cast<std::size_t>(t)] = hn;
  }
  b.scope(sc);
  for (std::int64_t t = 0; t < z.src_len; ++t) {
    const auto ti = static_cast<std::size_t>(t);
    next[ti] = b.concat(t_name("t", t) + "/concat_fw_bw", {next[ti], bw[ti]}, 1);
  }
}

// Rows stacked into one [sum of rows, cols] tensor (or [rows, sum of cols] with `by_cols`) that
// cuDNN and PyTorch already hold contiguously ([T, B, H] sequences, a bidirectional layer's y):
// a view, no kernel, its gradient a view too.
Tensor seq_view(GraphBuilder& b, const std::string& name, const std::vector<Tensor>& xs,
                bool by_cols = false) {
  std::int64_t rows = 0, cols = 0;
  GradRule g{.type = "View"};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    rows = by_cols ? xs[i].shape[0] : rows + xs[i].shape[0];
    cols = by_cols ? cols + xs[i].shape[1] : xs[i].shape[1];
    g.wrt.push_back(static_cast<int>(i));
  }
  return b.op(name, "View", xs, {{rows, cols}}, 0, {g})[0];
}

// One direction of one LSTM layer (lstm=cudnn).
struct CudnnLayer {
  std::vector<Tensor> y;  // per time step (index = position in the sequence)
  Tensor seq;             // y as one [T*B, H] tensor
  Tensor h, c;            // final state
};

// One direction of one LSTM layer as cuDNN runs it for PyTorch's nn.LSTM (cudnnRNNForward,
// cudnnRNNBackwardData, cudnnRNNBackwardWeights; Appleyard, "Optimizing Recurrent Neural
// Networks in cuDNN 5", NVIDIA blog 2016; docs/workloads.md):
// - forward: the input projection of all T steps as one GEMM X [T*B, in] x W_ih; per step one
//   recurrent GEMM h_{t-1} x W_hh accumulated into that step's slice (beta = 1), then ONE fused
//   pointwise kernel (biases, gates, cell update) reading the 4H pre-activations and c_{t-1},
//   writing h_t (= y_t), c_t and the 4H gate activations backward reads (the reserve space);
// - backward: per step one fused pointwise kernel (reads dy_t, dh_t, dc_t, c_{t-1}, c_t, the
//   gates; writes the 4H gate gradients and dc_{t-1}) and one recurrent dgrad GEMM; then the input
//   gradient of all steps as one GEMM, the weight gradients as one GEMM each for W_ih and W_hh
//   over all T steps, and the bias gradients as one reduction.
// FLOPs: GEMMs 2mnk (the same total as the unrolled cell's [x, h] x W); the pointwise kernel
// 28 an element of [B, H] forward (4 bias adds, 3 sigmoids and 1 tanh at 4, 3 for c, tanh(c) at
// 4, 1 for h), 25 backward.
CudnnLayer cudnn_lstm_layer(GraphBuilder& b, const NmtSizes& z, const std::string& sc,
                            const Tensor& x_seq, Tensor h, Tensor c, bool reverse) {
  const std::int64_t steps = x_seq.shape[0] / z.batch;
  const std::int64_t bt = z.batch, hd = z.hidden, in = x_seq.shape[1];
  b.scope(sc);
  const Tensor w_ih = b.variable("weight_ih", {in, 4 * hd});
  const Tensor w_hh = b.variable("weight_hh", {hd, 4 * hd});
  const Tensor b_ih = b.variable("bias_ih", {4 * hd});
  const Tensor b_hh = b.variable("bias_hh", {4 * hd});
  const double in_gemm = 2.0 * static_cast<double>(steps * bt * in * 4 * hd);
  const double rec_gemm = 2.0 * static_cast<double>(bt * hd * 4 * hd);
  const double gate_elems = static_cast<double>(steps * bt * 4 * hd);
  // The biases are the GEMM's inputs for their gradient's sake (one reduction over all steps);
  // the pointwise kernel adds them (its FLOPs count them).
  const Tensor gx =
      b.op("input_gemm", "MatMul", {x_seq, w_ih, b_ih, b_hh}, {{steps * bt, 4 * hd}}, in_gemm,
           {GradRule{.type = "MatMul", .flops = in_gemm, .wrt = {0}, .saved_inputs = {1}},
            GradRule{.type = "MatMul", .flops = in_gemm, .wrt = {1}, .saved_inputs = {0}},
            GradRule{.type = "BiasAddGrad", .flops = gate_elems, .wrt = {2, 3}}})[0];
  // Per-step slices of the projection. Backward: the gate gradients of all steps are one buffer
  // (a view), and W_hh's gradient is one GEMM over all steps, reading every h_{t-1}.
  const auto slices = b.op(
      "gates_x", "View", {gx, w_hh},
      std::vector<Shape>(static_cast<std::size_t>(steps), Shape{bt, 4 * hd}), 0,
      {GradRule{.type = "View", .wrt = {0}},
       GradRule{.type = "MatMul", .flops = static_cast<double>(steps) * rec_gemm, .wrt = {1}}});
  CudnnLayer out;
  out.y.resize(static_cast<std::size_t>(steps));
  std::vector<Tensor> h_prev;
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t t = reverse ? steps - 1 - k : k;
    const auto ti = static_cast<std::size_t>(t);
    const std::string st = t_name("t", t);
    h_prev.push_back(h);
    const Tensor pre =
        b.op(st + "/recurrent_gemm", "MatMul", {h, w_hh, slices[ti]}, {{bt, 4 * hd}}, rec_gemm,
             {GradRule{.type = "MatMul", .flops = rec_gemm, .wrt = {0}, .saved_inputs = {1}},
              GradRule{.wrt = {2}, .passthrough = true}})[0];
    // Outputs: y_t, c_t, the gate activations, h_t (y_t's memory: written once).
    const auto pw =
        b.op(st + "/pointwise", "LSTMPointwise", {pre, c},
             {{bt, hd}, {bt, hd}, {bt, 4 * hd}, {bt, hd}}, 28.0 * static_cast<double>(bt * hd),
             {GradRule{.type = "LSTMPointwiseGrad",
                       .flops = 25.0 * static_cast<double>(bt * hd),
                       .wrt = {0, 1},
                       .saved_inputs = {1},
                       .saved_outputs = {1, 2}}});
    b.set_bytes_written(pw[0], tensor_bytes(pw[0]) + tensor_bytes(pw[1]) + tensor_bytes(pw[2]));
    out.y[ti] = pw[0];
    c = pw[1];
    h = pw[3];
  }
  b.add_grad_reads(slices[0], 1, h_prev);
  out.seq = seq_view(b, "y", out.y);
  out.h = h;
  out.c = c;
  return out;
}

// The encoder with lstm=cudnn: each layer over the whole source (the bottom one in both
// directions, cuDNN writing y as [T, B, 2H]). Returns the top layer's output as one sequence.
Tensor nmt_encoder_cudnn(GraphBuilder& b, const NmtSizes& z, LstmStates& s, Tensor x) {
  for (std::size_t l = 0; l < z.layers; ++l) {
    const std::string sc = "nmt/encoder/lstm_" + std::to_string(l);
    const CudnnLayer fw = cudnn_lstm_layer(b, z, sc, x, s.h[l], s.c[l], false);
    if (l == 0 && z.bidir) {
      b.scope(sc + "_bw");
      const Tensor h = b.input("zero_h", {z.batch, z.hidden});
      const Tensor c = b.input("zero_c", {z.batch, z.hidden});
      const CudnnLayer bw = cudnn_lstm_layer(b, z, sc + "_bw", x, h, c, true);
      b.scope(sc);
      x = seq_view(b, "y_fw_bw", {fw.seq, bw.seq}, true);
    } else {
      x = fw.seq;
    }
    s.h[l] = fw.h;
    s.c[l] = fw.c;
  }
  return x;
}

// Encoder. The bottom layer is bidirectional (Bahdanau et al. 2014; Wu et al. 2016): a forward
// and a backward LSTM over the source whose outputs are concatenated. Returns the top layer's
// outputs; `s` holds each layer's final state, `src_emb` the source embedding table.
std::vector<Tensor> nmt_encoder(GraphBuilder& b, const NmtSizes& z, LstmStates& s,
                                Tensor& src_emb) {
  b.scope("nmt/encoder/embedding");
  src_emb = b.variable("embedding", {z.src_vocab, z.hidden});
  std::vector<Tensor> ew, eb;
  s.h.resize(z.layers);
  s.c.resize(z.layers);
  for (std::size_t l = 0; l < z.layers; ++l) {
    b.scope("nmt/encoder/lstm_" + std::to_string(l));
    const std::int64_t in = l == 1 && z.bidir ? 2 * z.hidden : z.hidden;
    if (!z.cudnn) {
      ew.push_back(b.variable("kernel", {in + z.hidden, 4 * z.hidden}));
      eb.push_back(b.variable("bias", {4 * z.hidden}));
    }
    s.h[l] = b.input("zero_h", {z.batch, z.hidden});
    s.c[l] = b.input("zero_c", {z.batch, z.hidden});
  }
  std::vector<Tensor> layer_out;
  for (std::int64_t t = 0; t < z.src_len; ++t) {
    b.scope("nmt/input");
    const Tensor ids = b.input(t_name("src_ids_t", t), {z.batch}, sim::Dtype::I32);
    b.scope("nmt/encoder/embedding");
    layer_out.push_back(b.gather(t_name("lookup_t", t), src_emb, ids));
  }
  if (z.cudnn) return {nmt_encoder_cudnn(b, z, s, seq_view(b, "x_seq", layer_out))};
  for (std::size_t l = 0; l < z.layers; ++l) {
    const std::string sc = "nmt/encoder/lstm_" + std::to_string(l);
    b.scope(sc);
    std::vector<Tensor> next;
    for (std::int64_t t = 0; t < z.src_len; ++t) {
      auto [hn, cn] = lstm_cell(b, t_name("t", t), layer_out[static_cast<std::size_t>(t)], s.h[l],
                                s.c[l], ew[l], eb[l]);
      s.h[l] = hn;
      s.c[l] = cn;
      next.push_back(hn);
    }
    if (l == 0 && z.bidir) nmt_backward_layer(b, z, sc, layer_out, next);
    layer_out = std::move(next);
  }
  return layer_out;
}

// The decoder's weights and the attention memory it reads.
struct NmtDecoder {
  Tensor wq, v;         // attention query kernel and score vector
  Tensor memory, keys;  // encoder outputs [B, S, H] and their projection to keys
  Tensor tgt_emb;       // target embedding
  std::vector<Tensor> dw, db;
  Tensor w_c, w_out, b_out;  // attentional output and softmax
};

// Attention memory: encoder outputs stacked to [B, S, H] and projected to keys once
// (legacy_seq2seq.attention_decoder's hidden_features); then the decoder's weights.
NmtDecoder nmt_decoder_weights(GraphBuilder& b, const NmtSizes& z,
                               const std::vector<Tensor>& enc_out, const Tensor& src_emb) {
  NmtDecoder d;
  b.scope("nmt/attention");
  const Tensor wk = b.variable("memory_kernel", {z.enc_dim, z.attn});
  d.wq = b.variable("query_kernel", {z.hidden, z.attn});
  d.v = b.variable("attention_v", {z.attn});
  std::vector<GradRule> unstack;
  unstack.reserve(enc_out.size());
  for (std::size_t i = 0; i < enc_out.size(); ++i) {
    unstack.push_back(GradRule{.type = "Slice", .wrt = {static_cast<int>(i)}});
  }
  // With lstm=cudnn the encoder's output already is one sequence tensor.
  d.memory =
      z.cudnn ? b.reshape("memory", enc_out[0], {z.batch, z.src_len, z.enc_dim})
              : b.op("memory", "Pack", enc_out, {{z.batch, z.src_len, z.enc_dim}}, 0, unstack)[0];
  d.keys =
      b.reshape("keys",
                b.matmul("keys/MatMul",
                         b.reshape("memory_2d", d.memory, {z.batch * z.src_len, z.enc_dim}), wk),
                {z.batch, z.src_len, z.attn});
  // Decoder: layer 0 reads the target embedding and gives the attention query; the context is
  // fed to every upper layer (GNMT, Wu et al. 2016).
  // share_embedding=true: the decoder looks its tokens up in the encoder's table (GNMT v2's
  // train.py default --share-embedding: one nn.Embedding passed to encoder and decoder, gnmt.py),
  // so the graph has one weight whose gradient sums both uses' lookups and one update.
  b.scope("nmt/decoder/embedding");
  d.tgt_emb = z.shared_emb ? src_emb : b.variable("embedding", {z.tgt_vocab, z.hidden});
  for (std::size_t l = 0; l < z.layers && !z.cudnn; ++l) {
    b.scope("nmt/decoder/lstm_" + std::to_string(l));
    const std::int64_t in = l == 0 ? z.hidden : z.hidden + z.enc_dim;
    d.dw.push_back(b.variable("kernel", {in + z.hidden, 4 * z.hidden}));
    d.db.push_back(b.variable("bias", {4 * z.hidden}));
    // The decoder starts from the encoder's final state.
  }
  b.scope("nmt/softmax");
  // Attentional hidden state h~ = tanh(W_c [h; context]) feeds the softmax (Luong et al. 2015,
  // eq. 5; legacy_seq2seq.attention_decoder's output = linear([cell_output] + attns)). GNMT v2
  // (NVIDIA DeepLearningExamples seq2seq/models/decoder.py) has none: its classifier reads the
  // top LSTM's output, the context having entered every upper layer.
  if (z.attn_output)
    d.w_c = b.variable("attention_output_kernel", {z.hidden + z.enc_dim, z.hidden});
  d.w_out = b.variable("softmax_w", {z.hidden, z.tgt_vocab});
  d.b_out = b.variable("softmax_b", {z.tgt_vocab});
  return d;
}

// Attention at decoder step `st`: the context read with query h0 (decoder layer 0's output).
Tensor nmt_attention(GraphBuilder& b, const NmtSizes& z, const NmtDecoder& d, const std::string& st,
                     const Tensor& h0) {
  const double score_elems = static_cast<double>(z.batch * z.src_len * z.attn);
  b.scope("nmt/attention");
  const Tensor q =
      b.reshape(st + "/query", b.matmul(st + "/query/MatMul", h0, d.wq), {z.batch, 1, z.attn});
  const Tensor th = b.unary(st + "/Tanh", "Tanh", b.add(st + "/add", d.keys, q), 4);
  const Tensor sc =
      b.op(st + "/score", "Sum", {b.mul(st + "/mul_v", th, d.v)}, {{z.batch, z.src_len}},
           score_elems, {GradRule{.type = "Tile", .flops = 0, .wrt = {0}}})[0];
  const Tensor alpha =
      b.reshape(st + "/alpha", b.softmax(st + "/Softmax", sc), {z.batch, 1, z.src_len});
  return b.reshape(st + "/context", b.batch_matmul(st + "/context/BatchMatMul", alpha, d.memory),
                   {z.batch, z.enc_dim});
}

// The attentional output (attention_output) and the loss of step `st`; x the top layer's output.
Tensor nmt_output(GraphBuilder& b, const NmtSizes& z, const NmtDecoder& d, const std::string& st,
                  Tensor x, const Tensor& ctx, const Tensor& labels) {
  b.scope("nmt/softmax");
  if (z.attn_output)
    x = b.unary(st + "/attention_output/Tanh", "Tanh",
                b.matmul(st + "/attention_output/MatMul",
                         b.concat(st + "/attention_output/concat", {x, ctx}, 1), d.w_c),
                4);
  return z.smoothed ? label_smoothed_loss(b, st, x, d.w_out, d.b_out, labels)
                    : softmax_loss(b, st, x, d.w_out, d.b_out, labels);
}

// Decoder step t: the LSTM stack with attention, the attentional output and its loss.
Tensor nmt_decoder_step(GraphBuilder& b, const NmtSizes& z, const NmtDecoder& d, std::int64_t t,
                        LstmStates& s) {
  const std::string st = t_name("t", t);
  b.scope("nmt/input");
  const Tensor ids = b.input(t_name("tgt_ids_t", t), {z.batch}, sim::Dtype::I32);
  const Tensor labels = b.input(t_name("labels_t", t), {z.batch}, sim::Dtype::I32);
  b.scope("nmt/decoder/embedding");
  const Tensor x0 = b.gather(t_name("lookup_t", t), d.tgt_emb, ids);
  b.scope("nmt/decoder/lstm_0");
  auto [h0, c0] = lstm_cell(b, st, x0, s.h[0], s.c[0], d.dw[0], d.db[0]);
  s.h[0] = h0;
  s.c[0] = c0;
  const Tensor ctx = nmt_attention(b, z, d, st, h0);
  Tensor x = h0;
  for (std::size_t l = 1; l < z.layers; ++l) {
    b.scope("nmt/decoder/lstm_" + std::to_string(l));
    auto [hn, cn] = lstm_cell(b, st, b.concat(st + "/input_feed", {x, ctx}, 1), s.h[l], s.c[l],
                              d.dw[l], d.db[l]);
    s.h[l] = hn;
    s.c[l] = cn;
    x = hn;
  }
  return nmt_output(b, z, d, st, x, ctx, labels);
}

// The decoder with lstm=cudnn (teacher forcing, as GNMT v2 trains): layer 0 over all target
// steps, attention per step from its outputs, each upper layer over [y; context] of all steps
// (one concatenation, as GNMT v2's torch.cat). Returns the per-step losses.
std::vector<Tensor> nmt_decoder_cudnn(GraphBuilder& b, const NmtSizes& z, const NmtDecoder& d,
                                      LstmStates& s) {
  std::vector<Tensor> x0, labels, ctx, losses;
  for (std::int64_t t = 0; t < z.tgt_len; ++t) {
    b.scope("nmt/input");
    const Tensor ids = b.input(t_name("tgt_ids_t", t), {z.batch}, sim::Dtype::I32);
    labels.push_back(b.input(t_name("labels_t", t), {z.batch}, sim::Dtype::I32));
    b.scope("nmt/decoder/embedding");
    x0.push_back(b.gather(t_name("lookup_t", t), d.tgt_emb, ids));
  }
  CudnnLayer layer =
      cudnn_lstm_layer(b, z, "nmt/decoder/lstm_0", seq_view(b, "x_seq", x0), s.h[0], s.c[0], false);
  for (std::int64_t t = 0; t < z.tgt_len; ++t)
    ctx.push_back(nmt_attention(b, z, d, t_name("t", t), layer.y[static_cast<std::size_t>(t)]));
  const Tensor ctx_seq = seq_view(b, "context_seq", ctx);
  for (std::size_t l = 1; l < z.layers; ++l) {
    const std::string sc = "nmt/decoder/lstm_" + std::to_string(l);
    b.scope(sc);
    const Tensor in = b.concat("input_feed", {layer.seq, ctx_seq}, 1);
    layer = cudnn_lstm_layer(b, z, sc, in, s.h[l], s.c[l], false);
  }
  for (std::int64_t t = 0; t < z.tgt_len; ++t) {
    const auto ti = static_cast<std::size_t>(t);
    losses.push_back(nmt_output(b, z, d, t_name("t", t), layer.y[ti], ctx[ti], labels[ti]));
  }
  return losses;
}

}  // namespace

sim::Graph build_nmt(GraphOptions& o) {
  o.accept({"batch", "layers", "hidden", "attention", "vocab", "src_vocab", "tgt_vocab", "src_len",
            "tgt_len", "bidirectional", "attention_output", "lstm", "loss", "share_embedding",
            "optimizer", "grad_accumulation", "embedding_grad"});
  NmtSizes z{};
  z.batch = o.get_int("batch", 64);
  z.layers = static_cast<std::size_t>(o.get_int("layers", 2, 1, 64));
  z.hidden = o.get_int("hidden", 1024);
  z.attn = o.get_int("attention", z.hidden);
  const std::int64_t vocab = o.get_int("vocab", 50000);
  z.src_vocab = o.get_int("src_vocab", vocab);
  z.tgt_vocab = o.get_int("tgt_vocab", vocab);
  z.src_len = o.get_int("src_len", 40, 1, 100000);
  z.tgt_len = o.get_int("tgt_len", 40, 1, 100000);
  z.bidir = o.get_bool("bidirectional", true);
  z.attn_output = o.get_bool("attention_output", true);
  z.cudnn = o.get_choice("lstm", "unrolled", {"unrolled", "cudnn"}) == "cudnn";
  z.smoothed = o.get_choice("loss", "xent", {"xent", "label_smoothing"}) == "label_smoothing";
  z.shared_emb = o.get_bool("share_embedding", false);
  // embedding_grad=dense: PyTorch's nn.Embedding gradient, the whole table (GNMT v2's encoder.py
  // and decoder.py build nn.Embedding(vocab_size, hidden_size, padding_idx=config.PAD), sparse
  // False); sparse (default): TensorFlow's IndexedSlices, the looked-up rows.
  const bool dense_emb = o.get_choice("embedding_grad", "sparse", {"sparse", "dense"}) == "dense";
  if (z.shared_emb && z.src_vocab != z.tgt_vocab)
    throw sim::InputError("--graph-opt", "share_embedding",
                          "src_vocab == tgt_vocab (one table for both), got " +
                              std::to_string(z.src_vocab) + " and " + std::to_string(z.tgt_vocab));
  const Optimizer opt = optimizer_option(o, Optimizer::Adam);
  const Accumulation acc = accumulation_option(o);
  z.enc_dim = z.bidir && z.layers > 1 ? z.hidden : (z.bidir ? 2 * z.hidden : z.hidden);

  GraphBuilder b("nmt");
  LstmStates s;
  Tensor src_emb;
  const std::vector<Tensor> enc_out = nmt_encoder(b, z, s, src_emb);
  const NmtDecoder d = nmt_decoder_weights(b, z, enc_out, src_emb);
  if (dense_emb) {
    b.dense_gradient(src_emb);
    b.dense_gradient(d.tgt_emb);  // the same variable when shared
  }
  std::vector<Tensor> losses;
  losses.reserve(static_cast<std::size_t>(z.tgt_len));
  if (z.cudnn)
    losses = nmt_decoder_cudnn(b, z, d, s);
  else
    for (std::int64_t t = 0; t < z.tgt_len; ++t) losses.push_back(nmt_decoder_step(b, z, d, t, s));
  b.scope("nmt/loss");
  const Tensor loss =
      b.reduce_mean("mean", z.tgt_len > 1 ? b.add_n("sum_steps", losses) : losses[0]);
  b.train(loss, opt, acc);
  return b.finish(
      {{"builder", "nmt"},
       {"options", o.resolved()},
       {"parameters", std::to_string(b.parameter_count())},
       {"source",
        "Bahdanau et al. 2014 / Wu et al. 2016 / Mirhoseini et al. 2017 (docs/workloads.md)"}});
}

}  // namespace placesim::models

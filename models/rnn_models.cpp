// The paper's recurrent benchmarks, statically unrolled as TensorFlow 1.x's static_rnn and
// legacy_seq2seq built them: one set of ops per time step and layer.
#include <string>
#include <vector>

#include "models/workloads.hpp"

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

// Encoder. The bottom layer is bidirectional (Bahdanau et al. 2014; Wu et al. 2016): a forward
// and a backward LSTM over the source whose outputs are concatenated. Returns the top layer's
// outputs; `s` holds each layer's final state.
std::vector<Tensor> nmt_encoder(GraphBuilder& b, const NmtSizes& z, LstmStates& s) {
  b.scope("nmt/encoder/embedding");
  const Tensor src_emb = b.variable("embedding", {z.src_vocab, z.hidden});
  std::vector<Tensor> ew, eb;
  s.h.resize(z.layers);
  s.c.resize(z.layers);
  for (std::size_t l = 0; l < z.layers; ++l) {
    b.scope("nmt/encoder/lstm_" + std::to_string(l));
    const std::int64_t in = l == 1 && z.bidir ? 2 * z.hidden : z.hidden;
    ew.push_back(b.variable("kernel", {in + z.hidden, 4 * z.hidden}));
    eb.push_back(b.variable("bias", {4 * z.hidden}));
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
                               const std::vector<Tensor>& enc_out) {
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
  d.memory = b.op("memory", "Pack", enc_out, {{z.batch, z.src_len, z.enc_dim}}, 0, unstack)[0];
  d.keys =
      b.reshape("keys",
                b.matmul("keys/MatMul",
                         b.reshape("memory_2d", d.memory, {z.batch * z.src_len, z.enc_dim}), wk),
                {z.batch, z.src_len, z.attn});
  // Decoder: layer 0 reads the target embedding and gives the attention query; the context is
  // fed to every upper layer (GNMT, Wu et al. 2016).
  b.scope("nmt/decoder/embedding");
  d.tgt_emb = b.variable("embedding", {z.tgt_vocab, z.hidden});
  for (std::size_t l = 0; l < z.layers; ++l) {
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

// Decoder step t: the LSTM stack with attention, the attentional output and its loss.
Tensor nmt_decoder_step(GraphBuilder& b, const NmtSizes& z, const NmtDecoder& d, std::int64_t t,
                        LstmStates& s) {
  const double score_elems = static_cast<double>(z.batch * z.src_len * z.attn);
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
  b.scope("nmt/attention");
  const Tensor q =
      b.reshape(st + "/query", b.matmul(st + "/query/MatMul", h0, d.wq), {z.batch, 1, z.attn});
  const Tensor th = b.unary(st + "/Tanh", "Tanh", b.add(st + "/add", d.keys, q), 4);
  const Tensor sc =
      b.op(st + "/score", "Sum", {b.mul(st + "/mul_v", th, d.v)}, {{z.batch, z.src_len}},
           score_elems, {GradRule{.type = "Tile", .flops = 0, .wrt = {0}}})[0];
  const Tensor alpha =
      b.reshape(st + "/alpha", b.softmax(st + "/Softmax", sc), {z.batch, 1, z.src_len});
  const Tensor ctx =
      b.reshape(st + "/context", b.batch_matmul(st + "/context/BatchMatMul", alpha, d.memory),
                {z.batch, z.enc_dim});
  Tensor x = h0;
  for (std::size_t l = 1; l < z.layers; ++l) {
    b.scope("nmt/decoder/lstm_" + std::to_string(l));
    auto [hn, cn] = lstm_cell(b, st, b.concat(st + "/input_feed", {x, ctx}, 1), s.h[l], s.c[l],
                              d.dw[l], d.db[l]);
    s.h[l] = hn;
    s.c[l] = cn;
    x = hn;
  }
  b.scope("nmt/softmax");
  if (z.attn_output)
    x = b.unary(st + "/attention_output/Tanh", "Tanh",
                b.matmul(st + "/attention_output/MatMul",
                         b.concat(st + "/attention_output/concat", {x, ctx}, 1), d.w_c),
                4);
  return softmax_loss(b, st, x, d.w_out, d.b_out, labels);
}

}  // namespace

sim::Graph build_nmt(GraphOptions& o) {
  o.accept({"batch", "layers", "hidden", "attention", "vocab", "src_vocab", "tgt_vocab", "src_len",
            "tgt_len", "bidirectional", "attention_output", "optimizer", "grad_accumulation"});
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
  const Optimizer opt = optimizer_option(o, Optimizer::Adam);
  const Accumulation acc = accumulation_option(o);
  z.enc_dim = z.bidir && z.layers > 1 ? z.hidden : (z.bidir ? 2 * z.hidden : z.hidden);

  GraphBuilder b("nmt");
  LstmStates s;
  const std::vector<Tensor> enc_out = nmt_encoder(b, z, s);
  const NmtDecoder d = nmt_decoder_weights(b, z, enc_out);
  std::vector<Tensor> losses;
  losses.reserve(static_cast<std::size_t>(z.tgt_len));
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

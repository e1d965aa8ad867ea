#include "calibration/kernel_fit.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::calibration {

using sim::Dtype;
using sim::InputError;

namespace {

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

std::string base_name(const std::string& op) {
  // "aten::add_" and "aten::add" are the same kernel family.
  std::string b = op;
  if (!b.empty() && b.back() == '_' && b.size() > 1 && b[b.size() - 2] != '_') b.pop_back();
  return b;
}

double numel(const std::vector<std::int64_t>& s) {
  double n = 1.0;
  for (std::int64_t d : s) n *= static_cast<double>(std::max<std::int64_t>(d, 0));
  return n;
}

// One class and the op names (PyTorch aten, TensorFlow, ONNX) that belong to it.
struct ClassNames {
  const char* op_class;
  std::vector<const char*> names;
};

// In precedence order: a name listed under two classes belongs to the first
// (aten::convolution_backward is conv_bwd, not conv).
// A table, not logic: kept longer than 120 lines so that the precedence stays one list.
const std::vector<ClassNames>& class_table() {
  static const std::vector<ClassNames> kTable = {
      // Tensor bookkeeping: no kernel, a fixed dispatch cost whatever the shapes.
      {"meta",
       {"aten::empty",
        "aten::empty_strided",
        "aten::empty_like",
        "aten::view",
        "aten::as_strided",
        "aten::reshape",
        "aten::_reshape_alias",
        "aten::t",
        "aten::transpose",
        "aten::expand",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::detach",
        "detach",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::select",
        "aten::slice",
        "aten::permute",
        "aten::result_type",
        "aten::set_",
        "aten::alias",
        "aten::flatten",
        "aten::numpy_T",
        "aten::lift_fresh",
        "aten::_unsafe_view",
        "aten::unbind",
        "aten::split",
        "aten::chunk",
        "aten::narrow",
        "aten::stride",
        "aten::size",
        "aten::is_nonzero",
        "aten::item",
        "aten::_local_scalar_dense",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Shape"}},
      // Dropout draws a random number per element: on this machine's CPU aten::bernoulli_ takes
      // ~8 ns an element, ~10x an add, so one elementwise fit for both mispredicts both.
      {"dropout",
       {"aten::dropout", "aten::native_dropout", "aten::bernoulli_", "aten::bernoulli",
        "aten::feature_dropout", "Dropout"}},
      {"conv_bwd",
       {"aten::convolution_backward", "aten::mkldnn_convolution_backward",
        "aten::cudnn_convolution_backward", "aten::thnn_conv2d_backward",
        "aten::_slow_conv2d_backward", "aten::miopen_convolution_backward",
        "ConvolutionBackward0"}},
      {"gemm",
       {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
        "aten::addbmm", "MatMul", "BatchMatMul", "Gemm", "MatMulGrad", "Linear"}},
      {"conv",
       {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
        "aten::cudnn_convolution", "aten::mkldnn_convolution", "aten::miopen_convolution",
        "aten::thnn_conv2d", "aten::_slow_conv2d_forward", "aten::convolution_backward", "Conv2D",
        "Conv", "Conv2DBackpropInput", "Conv2DBackpropFilter", "ConvBackpropInput",
        "ConvBackpropFilter", "ConvTranspose"}},
      {"norm",
       {"aten::batch_norm", "aten::native_batch_norm", "aten::cudnn_batch_norm", "aten::layer_norm",
        "aten::native_layer_norm", "aten::group_norm", "aten::native_batch_norm_backward",
        "aten::native_layer_norm_backward", "aten::cudnn_batch_norm_backward", "FusedBatchNorm",
        "FusedBatchNormGrad", "BatchNormalization", "BatchNormalizationGrad", "LayerNorm",
        "LayerNormalization", "LayerNormGrad"}},
      {"reduction",
       {"aten::sum",
        "aten::mean",
        "aten::softmax",
        "aten::_softmax",
        "aten::log_softmax",
        "aten::_log_softmax",
        "aten::max",
        "aten::amax",
        "aten::norm",
        "aten::linalg_vector_norm",
        "aten::nll_loss",
        "aten::nll_loss_forward",
        "aten::cross_entropy_loss",
        "aten::mse_loss",
        "aten::_softmax_backward_data",
        "aten::_log_softmax_backward_data",
        "aten::nll_loss_backward",
        "Sum",
        "Mean",
        "Softmax",
        "SoftmaxGrad",
        "MeanGrad",
        "ReduceMean",
        "ReduceSum",
        "LogSoftmax"}},
      // Pooling is its own class: on a CPU a 3x3 max pool with indices runs ~50x slower per byte
      // than a vectorised sum (LeNet-5's two pools took 1.1 ms of a 4.6 ms step), so one fit for
      // both mispredicts both.
      {"pool",
       {"aten::max_pool2d", "aten::max_pool2d_with_indices", "aten::avg_pool2d",
        "aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d", "MaxPool", "AveragePool",
        "GlobalAveragePool", "MaxPool2D", "AvgPool2D"}},
      // Its backward scatters into the indices the forward saved: ~20x cheaper per element on a
      // CPU.
      {"pool_bwd",
       {"aten::max_pool2d_with_indices_backward", "aten::avg_pool2d_backward",
        "aten::_adaptive_avg_pool2d_backward", "MaxPoolGrad", "AvgPoolGrad",
        "GlobalAveragePoolGrad"}},
      // Fused attention (torch >= 2.0's scaled_dot_product_attention and the flash / memory-
      // efficient / cuDNN kernels under it): two GEMMs per query-key block on the matrix units
      // (one bf16 call at sequence 32768 runs 85 ms at 206 TFLOP/s on the MI300X of
      // tests/data/calibration/rocm-mi300x_tracelens_sdpa-bf16_excerpt.json). As "elementwise"
      // it was fitted at a byte rate with the adds.
      {"attention",
       {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_flash_attention_forward",
        "aten::_efficient_attention_forward", "aten::_scaled_dot_product_flash_attention_backward",
        "aten::_scaled_dot_product_efficient_attention_backward",
        "aten::_scaled_dot_product_cudnn_attention_backward",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
        "aten::_flash_attention_backward", "aten::_efficient_attention_backward"}},
      {"rnn",
       {"aten::lstm_cell", "aten::_thnn_fused_lstm_cell", "aten::gru_cell", "aten::lstm",
        "LSTMCell", "LSTM", "GRU", "BlockLSTM"}},
      {"copy",
       {"aten::copy", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous", "aten::cat",
        "aten::stack", "Memcpy", "Memset", "Concat", "ConcatV2", "Identity"}},
  };
  return kTable;
}

}  // namespace

std::string op_class_of(const std::string& raw) {
  // Name -> class, the first class of the table that lists the name.
  static const std::map<std::string, std::string> kClassOf = [] {
    std::map<std::string, std::string> m;
    for (const ClassNames& c : class_table())
      for (const char* n : c.names) m.emplace(n, c.op_class);
    return m;
  }();
  const std::string op = base_name(raw);
  if (auto it = kClassOf.find(op); it != kClassOf.end()) return it->second;
  if (starts(op, "Memcpy") || starts(op, "Memset")) return "copy";
  return "elementwise";
}

namespace {

// "[2, 2]" -> {2, 2}; "1" -> {1}; empty on anything else.
std::vector<std::int64_t> int_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::int64_t v = 0;
  bool in_num = false, neg = false;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9') {
      if (v > (std::int64_t{1} << 40)) return {};  // not a shape or a stride: no overflow
      v = v * 10 + (ch - '0');
      in_num = true;
    } else if (ch == '-' && !in_num) {
      neg = true;
    } else if (ch == ',' || ch == ']' || ch == ' ') {
      if (in_num) out.push_back(neg ? -v : v);
      v = 0;
      in_num = neg = false;
    } else if (ch != '[') {
      return {};
    }
  }
  if (in_num) out.push_back(neg ? -v : v);
  return out;
}

}  // namespace

std::optional<double> conv_flops_from_concrete(const std::string& op,
                                               const std::vector<std::vector<std::int64_t>>& shapes,
                                               const std::vector<std::string>& concrete) {
  struct Pos {
    std::size_t stride, padding, dilation, groups;
  };
  // Argument positions in the ATen schemas.
  static const std::map<std::string, Pos> pos = {{"aten::conv1d", {3, 4, 5, 6}},
                                                 {"aten::conv2d", {3, 4, 5, 6}},
                                                 {"aten::conv3d", {3, 4, 5, 6}},
                                                 {"aten::convolution", {3, 4, 5, 8}},
                                                 {"aten::_convolution", {3, 4, 5, 8}},
                                                 {"aten::cudnn_convolution", {3, 2, 4, 5}},
                                                 {"aten::mkldnn_convolution", {4, 3, 5, 6}},
                                                 {"aten::miopen_convolution", {4, 3, 5, 6}}};
  const auto it = pos.find(op);
  if (it == pos.end() || shapes.size() < 2) return std::nullopt;
  const Pos& p = it->second;
  if (concrete.size() <= std::max({p.stride, p.padding, p.dilation, p.groups})) return std::nullopt;
  const auto& x = shapes[0];
  const auto& w = shapes[1];
  if (x.size() < 3 || w.size() != x.size()) return std::nullopt;
  const std::size_t spatial = x.size() - 2;
  auto stride = int_list(concrete[p.stride]), pad = int_list(concrete[p.padding]),
       dil = int_list(concrete[p.dilation]);
  const auto groups = int_list(concrete[p.groups]);
  // A single value applies to every spatial dimension.
  for (auto* v : {&stride, &pad, &dil})
    if (v->size() == 1) v->assign(spatial, v->front());
  if (stride.size() != spatial || pad.size() != spatial || dil.size() != spatial ||
      groups.size() != 1 || groups[0] < 1)
    return std::nullopt;
  double out_elems = 1.0;
  for (std::size_t i = 0; i < spatial; ++i) {
    if (stride[i] < 1 || dil[i] < 1) return std::nullopt;
    const std::int64_t o = (x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) / stride[i] + 1;
    if (o < 1) return std::nullopt;
    out_elems *= static_cast<double>(o);
  }
  // 2 FLOPs per multiply-add: N x K x out x (C / groups) x kernel; w is [K, C/groups, R, S].
  double kernel = 1.0;
  for (std::size_t i = 1; i < w.size(); ++i) kernel *= static_cast<double>(w[i]);
  return 2.0 * static_cast<double>(x[0]) * static_cast<double>(w[0]) * out_elems * kernel;
}

Dtype dtype_from_profiler(const std::vector<std::string>& types) {
  for (const std::string& t : types) {
    if (t == "float") return Dtype::F32;
    if (t == "c10::Half" || t == "half") return Dtype::F16;
    if (t == "c10::BFloat16") return Dtype::BF16;
    if (t == "double") return Dtype::F64;
    if (t == "long int" || t == "int64_t" || t == "long") return Dtype::I64;
    if (t == "int") return Dtype::I32;
    if (t == "signed char") return Dtype::I8;
    if (t == "unsigned char") return Dtype::U8;
    if (t == "bool") return Dtype::Bool;
    if (auto d = sim::parse_dtype(t)) return *d;
  }
  return Dtype::F32;
}

std::optional<Dtype> dtype_from_kernel_names(const std::vector<std::string>& kernel_names) {
  std::optional<Dtype> found;
  for (const std::string& name : kernel_names) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::optional<Dtype> d;
    if (n.find("bf16") != std::string::npos || n.find("bfloat16") != std::string::npos)
      d = Dtype::BF16;
    else if (n.find("fp16") != std::string::npos || n.find("f16") != std::string::npos ||
             n.find("half") != std::string::npos)
      d = Dtype::F16;  // "fp16", "_f16_", "f16f16", "c10::half", "__half"
    else
      for (const char* h : {"h1688gemm", "h16816gemm", "h884gemm", "hgemm"})
        if (n.find(h) != std::string::npos) d = Dtype::F16;
    if (!d) continue;
    if (found && *found != *d) return std::nullopt;  // the names disagree
    found = d;
  }
  return found;
}

namespace {

// Fused attention over q [..., Sq, D], k [..., Skv, D], v [..., Skv, Dv] (torch's SDPA layout;
// the _flash/_efficient_attention_forward/_backward kernels take [B, S, H, D]). The backward ops
// take the output's gradient first: q, k, v follow it.
struct AttentionShape {
  double heads = 0, sq = 0, skv = 0, d = 0, dv = 0;  // heads: batch x heads
  bool backward = false;
};

std::optional<AttentionShape> attention_shape(const std::string& op,
                                              const std::vector<std::vector<std::int64_t>>& t) {
  AttentionShape a;
  a.backward = op.size() > 9 && op.compare(op.size() - 9, 9, "_backward") == 0;
  const std::size_t q = a.backward ? 1 : 0;
  if (t.size() < q + 3) return std::nullopt;
  const auto &qs = t[q], &ks = t[q + 1], &vs = t[q + 2];
  if (qs.size() < 3 || ks.size() != qs.size() || vs.size() != qs.size()) return std::nullopt;
  const bool bshd =
      op == "aten::_flash_attention_forward" || op == "aten::_efficient_attention_forward" ||
      op == "aten::_flash_attention_backward" || op == "aten::_efficient_attention_backward";
  const std::size_t seq = bshd ? qs.size() - 3 : qs.size() - 2;
  a.sq = static_cast<double>(qs[seq]);
  a.skv = static_cast<double>(ks[seq]);
  a.d = static_cast<double>(qs.back());
  a.dv = static_cast<double>(vs.back());
  if (a.sq <= 0 || a.skv <= 0 || a.d <= 0 || a.dv <= 0) return std::nullopt;
  a.heads = numel(qs) / (a.sq * a.d);
  return a;
}

// Q K^T and P V are 2 Sq Skv (D + Dv) FLOPs per batch-head; the backward recomputes the scores
// and runs four more products, 2.5 times the forward (FlashAttention-2's count). Every query-key
// pair counts here; attention_flops_from_concrete counts a causal call's. Bytes: q, k, v read and
// the output written, as the kernels stream them (the S x S scores stay on chip); the backward
// reads and writes about twice that.
double attention_flops(const AttentionShape& a, double pairs) {
  return 2.0 * a.heads * pairs * (a.d + a.dv) * (a.backward ? 2.5 : 1.0);
}

std::optional<WorkEstimate> attention_work(const std::string& op,
                                           const std::vector<std::vector<std::int64_t>>& t,
                                           double es) {
  const auto a = attention_shape(op, t);
  if (!a) return std::nullopt;
  WorkEstimate w;
  w.op_class = "attention";
  w.flops = attention_flops(*a, a->sq * a->skv);
  w.bytes = a->heads * (a->sq * a->d + a->skv * (a->d + a->dv) + a->sq * a->dv) * es *
            (a->backward ? 2.0 : 1.0);
  return w;
}

}  // namespace

std::optional<double> attention_flops_from_concrete(
    const std::string& op, const std::vector<std::vector<std::int64_t>>& shapes,
    const std::vector<std::string>& concrete) {
  // is_causal's position in each ATen schema.
  static const std::map<std::string, std::size_t> pos = {
      {"aten::scaled_dot_product_attention", 5},
      {"aten::_scaled_dot_product_flash_attention", 4},
      {"aten::_scaled_dot_product_flash_attention_for_cpu", 4},
      {"aten::_scaled_dot_product_efficient_attention", 6},
      {"aten::_scaled_dot_product_cudnn_attention", 6},
      {"aten::_flash_attention_forward", 8},
      {"aten::_scaled_dot_product_flash_attention_backward", 11},
      {"aten::_scaled_dot_product_efficient_attention_backward", 11},
      {"aten::_scaled_dot_product_cudnn_attention_backward", 14},
      {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", 7},
      {"aten::_flash_attention_backward", 11}};
  const auto it = pos.find(op);
  if (it == pos.end() || concrete.size() <= it->second) return std::nullopt;
  if (concrete[it->second] != "True" && concrete[it->second] != "true") return std::nullopt;
  std::vector<std::vector<std::int64_t>> t;
  for (const auto& s : shapes)
    if (!s.empty()) t.push_back(s);
  const auto a = attention_shape(op, t);
  if (!a) return std::nullopt;
  // torch's is_causal keeps the keys j <= i of query i (top-left aligned): sum_i min(i + 1, Skv).
  const double n = std::min(a->sq, a->skv);
  const double pairs = n * (n + 1.0) / 2.0 + (a->sq - n) * a->skv;
  return attention_flops(*a, pairs);
}

WorkEstimate estimate_work(const std::string& raw,
                           const std::vector<std::vector<std::int64_t>>& shapes, Dtype dtype) {
  WorkEstimate w;
  const std::string op = base_name(raw);
  w.op_class = op_class_of(op);
  const double es = static_cast<double>(sim::dtype_size(dtype));
  double in_elems = 0.0, max_elems = 0.0;
  for (const auto& s : shapes) {
    if (s.empty()) continue;
    in_elems += numel(s);
    max_elems = std::max(max_elems, numel(s));
  }
  // Tensors (non-empty shapes) in call order; scalars are dropped.
  std::vector<std::vector<std::int64_t>> t;
  for (const auto& s : shapes)
    if (!s.empty()) t.push_back(s);
  if (w.op_class == "gemm" && t.size() >= 2) {
    // The last two tensors are the operands (addmm/baddbmm put the bias first); linear's weight is
    // [n, k] and multiplies the input's last dimension.
    const auto& a = (op == "aten::linear") ? t[0] : t[t.size() - 2];
    const auto& b = (op == "aten::linear") ? t[1] : t[t.size() - 1];
    if (a.size() >= 2 || op == "aten::linear") {
      const double k = static_cast<double>(a.back());
      const double rows = numel(a) / std::max(k, 1.0);
      double n = 1.0;
      if (op == "aten::linear")
        n = static_cast<double>(b.front());
      else
        n = static_cast<double>(b.back());
      w.flops = 2.0 * rows * k * n;
      w.bytes = (numel(a) + numel(b) + rows * n) * es;
      w.out_bytes = rows * n * es;
      // bmm's [batch, k, n] operand: one BLAS call per matrix.
      if (b.size() >= 3 && b[b.size() - 1] > 0 && b[b.size() - 2] > 0)
        w.matrices = numel(b) / static_cast<double>(b[b.size() - 1] * b[b.size() - 2]);
      return w;
    }
  }
  if (w.op_class == "conv" && t.size() >= 2 && t[0].size() >= 3 && t[1].size() == t[0].size()) {
    // Output spatial size taken equal to the input's (stride 1, same padding): exact for the
    // common 3x3/1x1 stride-1 layers, an over-estimate by stride^2 for strided ones.
    const auto& x = t[0];
    const auto& wt = t[1];
    const double n = static_cast<double>(x[0]);
    const double k = static_cast<double>(wt[0]);
    double spatial = 1.0, kernel = 1.0;
    for (std::size_t i = 2; i < x.size(); ++i) spatial *= static_cast<double>(x[i]);
    for (std::size_t i = 1; i < wt.size(); ++i) kernel *= static_cast<double>(wt[i]);
    w.flops = 2.0 * n * k * spatial * kernel;
    w.bytes = (numel(x) + numel(wt) + n * k * spatial) * es;
    w.out_bytes = numel(wt) * es;  // the CPU curve's weight term (cost model: shape_term_bytes)
    return w;
  }
  if (w.op_class == "conv_bwd" && t.size() >= 3 && t[0].size() >= 3 && t[1].size() == t[0].size() &&
      t[2].size() == t[0].size()) {
    // convolution_backward(grad_out[N,K,H',W'], input[N,C,H,W], weight[K,C,R,S], ...): the input
    // and weight gradients, each as many FLOPs as the forward convolution.
    const auto& go = t[0];
    const auto& wt = t[2];
    double spatial = 1.0, kernel = 1.0;
    for (std::size_t i = 2; i < go.size(); ++i) spatial *= static_cast<double>(go[i]);
    for (std::size_t i = 1; i < wt.size(); ++i) kernel *= static_cast<double>(wt[i]);
    w.flops =
        2.0 * 2.0 * static_cast<double>(go[0]) * static_cast<double>(wt[0]) * spatial * kernel;
    w.bytes = (numel(t[0]) + 2.0 * numel(t[1]) + 2.0 * numel(t[2])) * es;
    w.out_bytes = numel(wt) * es;
    return w;
  }
  if (w.op_class == "attention")
    if (const auto a = attention_work(op, t, es)) return *a;
  if (w.op_class == "rnn" && t.size() >= 2) {
    // lstm_cell(x[B,I], (h,c), w_ih[4H,I], w_hh[4H,H]): two GEMMs and the gates.
    const double b = static_cast<double>(t[0][0]);
    double weights = 0.0;
    for (const auto& s : t)
      if (s.size() == 2 && s[0] != t[0][0]) weights += numel(s);
    w.flops = 2.0 * b * weights + 10.0 * in_elems;
    w.bytes = (in_elems + max_elems) * es;
    return w;
  }
  if (w.op_class == "meta") {
    // Fitted as a constant: the work terms are left at zero.
    return w;
  }
  // Pooling counts one FLOP per input element, as the graph builders' MaxPool/MaxPoolGrad ops do: a
  // class model is fitted on these estimates and applied to the graph's, so the two must agree.
  // Dropout: 2 per element (draw the mask, scale), as the ONNX importer counts its Dropout op.
  const double per = w.op_class == "norm"        ? 8.0
                     : w.op_class == "reduction" ? 4.0
                     : w.op_class == "dropout"   ? 2.0
                     : w.op_class == "copy"      ? 0.0
                                                 : 1.0;
  w.flops = per * max_elems;
  w.bytes = (in_elems + max_elems) * es;
  // A batch norm's N x C planes, as the cost model counts them (gemm_matrices).
  if (w.op_class == "norm" && !t.empty() && t[0].size() >= 4 && starts(op, "aten::") &&
      op.find("batch_norm") != std::string::npos)
    w.matrices = static_cast<double>(t[0][0]) * static_cast<double>(t[0][1]);
  return w;
}

// ---------------------------------------------------------------------------------------------
// Samples.

namespace {

std::string device_key(const Profile& p, const std::string& override_model) {
  return calibration_key(p.device_name, override_model);
}

// The sample of framework op `e` on device `dev` that took `ns` nanoseconds (its own duration on
// a CPU-only profile, its kernels' GPU time otherwise): signature from its name, input shapes and
// dtypes; work from its shapes, FLOPs from its concrete inputs where it is a conv or attention.
OpSample framework_op_sample(const TraceEvent& e, const std::string& dev, std::int64_t ns,
                             std::optional<Dtype> kernel_dtype = std::nullopt) {
  OpSample s;
  s.device = dev;
  s.signature.op_type = e.name;
  s.signature.input_shapes = e.input_dims;
  // No recorded types: the kernels' names, where they state one, else f32.
  s.signature.dtype =
      e.input_types.empty() && kernel_dtype ? *kernel_dtype : dtype_from_profiler(e.input_types);
  s.seconds = static_cast<double>(ns) * 1e-9;
  s.work = estimate_work(e.name, e.input_dims, s.signature.dtype);
  if (auto f = conv_flops_from_concrete(e.name, e.input_dims, e.concrete_inputs))
    s.work.flops = *f;
  else if (auto a = attention_flops_from_concrete(e.name, e.input_dims, e.concrete_inputs))
    s.work.flops = *a;
  return s;
}

}  // namespace

std::string calibration_key(const std::string& device_name, const std::string& override_model) {
  if (!override_model.empty()) return override_model;
  if (device_name.empty()) return "cpu";
  std::string n = device_name;
  for (const char* prefix : {"NVIDIA ", "Tesla ", "AMD "})
    if (starts(n, prefix)) n = n.substr(std::string(prefix).size());
  std::replace(n.begin(), n.end(), ' ', '-');
  return n;
}

bool kernel_keyed(const Profile& p) {
  return p.has_gpu_activity() && std::none_of(p.events.begin(), p.events.end(), [](const auto& e) {
           return e.kind == EventKind::CpuOp;
         });
}

sim::Signature kernel_keyed_signature(const TraceEvent& e) {
  sim::Signature s;
  s.op_type = e.kind == EventKind::Kernel ? e.name : to_string(e.kind);
  if (e.bytes > 0) s.input_shapes = {{e.bytes}};
  return s;
}

std::vector<OpSample> op_samples_from_profile(const Profile& p, const std::string& device_model) {
  std::vector<OpSample> out;
  const bool any_gpu = p.has_gpu_activity();
  const std::string dev =
      any_gpu ? device_key(p, device_model) : (device_model.empty() ? "cpu" : device_model);
  if (!any_gpu) {
    // CPU-only: outermost operators of each thread (their inclusive time is the op's cost).
    std::map<std::string, std::int64_t> open_until;
    for (const TraceEvent& e : p.events) {
      if (e.kind != EventKind::CpuOp) continue;
      const std::string th = e.pid + "/" + e.tid;
      auto it = open_until.find(th);
      if (it != open_until.end() && e.ts_ns < it->second) continue;  // nested in an outer op
      open_until[th] = e.end_ns();
      // A zero duration is below the trace's clock (torch <= 2.0 writes whole microseconds): it
      // holds no rate, and as a relative-error weight (1 / t^2) it would outweigh every other
      // sample of its class. The GPU path below drops such ops the same way.
      if (e.dur_ns <= 0) continue;
      out.push_back(framework_op_sample(e, dev, e.dur_ns));
    }
    return out;
  }
  // GPU time per framework op, through the links the reader resolved (trace.hpp: time nesting
  // on the launching thread, correlation ids and ac2g flows; External ids only where they agree).
  std::map<std::int64_t, std::int64_t> gpu_ns_of_op;
  std::map<std::int64_t, std::vector<std::string>> kernels_of_op;
  bool have_cpu_ops = false;
  for (const TraceEvent& e : p.events) {
    have_cpu_ops |= e.kind == EventKind::CpuOp;
    if (e.on_gpu() && e.op >= 0) {
      gpu_ns_of_op[e.op] += e.dur_ns;
      if (e.kind == EventKind::Kernel) kernels_of_op[e.op].push_back(e.name);
    }
  }
  if (!have_cpu_ops) {
    // Nsight, or a Kineto trace without CPU activity: no framework ops; a kernel's own name is
    // its signature.
    for (const TraceEvent& e : p.events) {
      if (!e.on_gpu() || e.dur_ns <= 0) continue;  // below the clock: no rate (as above)
      OpSample s;
      s.device = dev;
      s.signature = kernel_keyed_signature(e);
      s.seconds = static_cast<double>(e.dur_ns) * 1e-9;
      s.work.op_class = e.kind == EventKind::Kernel ? "kernel" : "copy";
      s.work.bytes = static_cast<double>(e.bytes);
      out.push_back(std::move(s));
    }
    return out;
  }
  for (const auto& [op, ns] : gpu_ns_of_op) {
    if (ns <= 0) continue;
    out.push_back(framework_op_sample(p.events[static_cast<std::size_t>(op)], dev, ns,
                                      dtype_from_kernel_names(kernels_of_op[op])));
  }
  return out;
}

namespace {
std::vector<OpSample> manifest_samples(const nlohmann::json& doc, const std::string& path,
                                       const std::string& device_model);
}  // namespace

namespace {
// The graph builders' and ONNX op types of each op class: a model fitted on the framework's
// names is written under these too, so graphs from build-graph and import onnx find it.
const std::map<std::string, std::vector<std::string>>& graph_type_aliases() {
  static const std::map<std::string, std::vector<std::string>> aliases = {
      {"gemm", {"MatMul", "BatchMatMul", "Gemm"}},
      {"conv",
       {"Conv2D", "Conv", "Conv2DBackpropInput", "Conv2DBackpropFilter", "ConvBackpropInput",
        "ConvBackpropFilter"}},
      {"norm",
       {"FusedBatchNorm", "FusedBatchNormGrad", "BatchNormalization", "BatchNormalizationGrad",
        "LayerNorm", "LayerNormGrad"}},
      {"reduction",
       {"Sum", "Mean", "Softmax", "SoftmaxGrad", "MeanGrad", "ReduceMean", "ReduceSum",
        "SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogitsGrad"}},
      {"pool",
       {"MaxPool", "AveragePool", "GlobalAveragePool", "MaxPoolGrad", "GlobalAveragePoolGrad"}},
      {"pool_bwd", {"MaxPoolGrad", "GlobalAveragePoolGrad"}},
      {"rnn", {"LSTMCell"}},
      // A transformer's ONNX graph (tests/data/onnx/generate.py): dropout, LayerNorm decomposed
      // into Pow/Sqrt/Div, the embedding's Gather and its sparse update, and their gradients.
      {"elementwise", {"Add",           "Mul",         "Sub",        "Div",
                       "Relu",          "Sigmoid",     "Tanh",       "AddN",
                       "BiasAdd",       "BiasAddGrad", "ReluGrad",   "ApplyGradientDescent",
                       "ApplyMomentum", "ApplyAdam",   "Dropout",    "DropoutGrad",
                       "Pow",           "PowGrad",     "Sqrt",       "SqrtGrad",
                       "Neg",           "DivGrad",     "MulGrad",    "SubGrad",
                       "Expand",        "Erf",         "Gelu",       "Cast",
                       "Where",         "Gather",      "GatherGrad", "SparseApplyGradientDescent"}},
      {"copy", {"Concat", "SliceGrad"}},
      // Views in the framework (no kernel): a fixed dispatch cost, not a roofline of their bytes.
      {"meta",
       {"Flatten", "FlattenGrad", "Reshape", "ReshapeGrad", "Identity", "Transpose",
        "TransposeGrad", "Slice", "Unsqueeze", "Squeeze", "Shape", "Constant", "VariableV2",
        "Placeholder"}},
  };
  return aliases;
}

const std::map<std::string, std::vector<std::string>>& graph_type_preferred() {
  // Graph op types whose own class model, when fitted, replaces the fallback of a related class
  // (backward convolutions fall back to the forward model when no backward was profiled).
  static const std::map<std::string, std::vector<std::string>> preferred = {
      {"conv_bwd",
       {"Conv2DBackpropInput", "Conv2DBackpropFilter", "ConvBackpropInput", "ConvBackpropFilter"}},
      {"pool_bwd", {"MaxPoolGrad", "GlobalAveragePoolGrad"}},
      {"dropout", {"Dropout"}},
      // CPU-only classes (cpu_op_class): fitted only from a CPU rig's rows.
      {"norm_bwd", {"BatchNormalizationGrad", "FusedBatchNormGrad"}},
      {"relu_bwd", {"ReluGrad"}},
      {"layer_norm", {"LayerNorm", "LayerNormalization", "LayerNormGrad"}},
      {"softmax",
       {"Softmax", "SoftmaxGrad", "LogSoftmax", "LogSoftmaxGrad",
        "SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogitsGrad"}}};
  return preferred;
}

}  // namespace

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// One step's host side, op by op (HostCost's per-op fields; docs/calibration.md "Host side").
struct StepHost {
  std::map<std::string, double> total_s, graph_ops;  // per "phase:class"
  double accumulate_s = 0, optimizer_s = 0, per_step_s = 0;
  int accumulate = 0;
  bool foreach = false, optimizer_seen = false;
  std::map<std::string, std::set<std::string>> names;
};

bool within(const TraceEvent& a, const TraceEvent& outer) {
  return outer.pid == a.pid && outer.tid == a.tid && a.ts_ns >= outer.ts_ns &&
         a.end_ns() <= outer.end_ns();
}

// A 0-d bookkeeping op (BatchNorm's num_batches_tracked += 1): every input a scalar. Graph
// exporters fold it into its module, so its host time joins the next op's.
bool scalar_bookkeeping(const TraceEvent& e) {
  if (e.input_dims.empty()) return false;
  for (const auto& d : e.input_dims)
    if (!d.empty()) return false;
  return true;
}

using ThreadEvents = std::map<std::pair<std::string, std::string>, std::vector<std::size_t>>;

// The host events of [begin, end) per thread (framework ops and runtime calls), each thread's
// sorted by start, longest first; `windows` gets the Optimizer.step / zero_grad annotations.
ThreadEvents host_events(const Profile& p, std::int64_t begin, std::int64_t end,
                         std::vector<std::size_t>* windows) {
  ThreadEvents by_thread;
  for (std::size_t k = 0; k < p.events.size(); ++k) {
    const TraceEvent& e = p.events[k];
    if (e.ts_ns < begin || e.ts_ns >= end) continue;
    if (e.kind == EventKind::CpuOp || e.kind == EventKind::Runtime)
      by_thread[{e.pid, e.tid}].push_back(k);
    else if (windows && e.kind == EventKind::Annotation && starts(e.name, "Optimizer."))
      windows->push_back(k);
  }
  for (auto& [thread, ks] : by_thread)
    std::stable_sort(ks.begin(), ks.end(), [&](std::size_t a, std::size_t b) {
      const TraceEvent &x = p.events[a], &y = p.events[b];
      return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : x.dur_ns > y.dur_ns;
    });
  return by_thread;
}

// Each thread's top-level events (none inside another), merged into one timeline by start.
std::vector<std::size_t> merged_tops(const Profile& p, const ThreadEvents& by_thread) {
  std::vector<std::size_t> tops;
  for (const auto& [thread, ks] : by_thread) {
    std::int64_t last = std::numeric_limits<std::int64_t>::min();
    for (std::size_t k : ks)
      if (p.events[k].ts_ns >= last) {
        tops.push_back(k);
        last = p.events[k].end_ns();
      }
  }
  std::stable_sort(tops.begin(), tops.end(), [&](std::size_t a, std::size_t b) {
    return p.events[a].ts_ns != p.events[b].ts_ns ? p.events[a].ts_ns < p.events[b].ts_ns : a < b;
  });
  return tops;
}

// The framework op inside autograd node `k` that launched the most GPU work (-1: none).
std::int64_t node_op(const Profile& p, const ThreadEvents& by_thread, std::size_t k,
                     const std::vector<int>& launched) {
  const TraceEvent& e = p.events[k];
  std::int64_t best = -1;
  int most = 0;
  for (const auto& [thread, ks] : by_thread) {
    if (thread.first != e.pid || thread.second != e.tid) continue;
    for (std::size_t c : ks)
      if (c != k && p.events[c].kind == EventKind::CpuOp && within(p.events[c], e) &&
          launched[c] > most) {
        most = launched[c];
        best = static_cast<std::int64_t>(c);
      }
  }
  return best;
}

// Per top-level event of `tops`, the framework ops recorded on its thread within it (itself
// included): each cost the profiler its own host time.
std::map<std::size_t, int> recorded_ops(const Profile& p, const ThreadEvents& by_thread,
                                        const std::vector<std::size_t>& tops) {
  std::map<std::size_t, int> out;
  const std::set<std::size_t> top(tops.begin(), tops.end());
  for (const auto& [thread, ks] : by_thread)
    for (std::size_t i = 0; i < ks.size(); ++i) {
      if (!top.count(ks[i])) continue;
      const TraceEvent& e = p.events[ks[i]];
      int n = 0;
      for (std::size_t j = i; j < ks.size() && p.events[ks[j]].ts_ns < e.end_ns(); ++j)
        n += p.events[ks[j]].kind == EventKind::CpuOp ? 1 : 0;
      out[ks[i]] = n;
    }
  return out;
}

StepHost step_host(const Profile& p, const StepWindow& w, const std::vector<int>& launched,
                   double overhead_s) {
  StepHost out;
  // Top-level host events per thread (framework ops and runtime calls outside any op).
  std::vector<std::size_t> windows;  // Optimizer.step / Optimizer.zero_grad annotations
  const ThreadEvents by_thread = host_events(p, w.begin_ns, w.end_ns, &windows);
  const std::vector<std::size_t> tops = merged_tops(p, by_thread);
  const std::map<std::size_t, int> recorded =
      overhead_s > 0 ? recorded_ops(p, by_thread, tops) : std::map<std::size_t, int>{};
  // The host threads take turns (the main thread waits in backward() while the autograd thread
  // runs): on one merged timeline each op costs its own span plus the gap before it.
  std::int64_t prev = w.begin_ns;
  double pending = 0;  // bookkeeping ops' time, for the next op
  for (std::size_t k : tops) {
    const TraceEvent& e = p.events[k];
    double gap = static_cast<double>(std::max<std::int64_t>(0, e.ts_ns - prev)) * 1e-9;
    double own =
        static_cast<double>(std::max<std::int64_t>(0, e.end_ns() - std::max(e.ts_ns, prev))) * 1e-9;
    prev = std::max(prev, e.end_ns());
    if (const auto r = recorded.find(k); r != recorded.end()) {
      // The profiler's cost of recording the op and its callees: out of its span, then its gap.
      const double cut = overhead_s * r->second;
      const double from_own = std::min(own, cut);
      own -= from_own;
      gap = std::max(0.0, gap - (cut - from_own));
    }
    std::string window;
    for (std::size_t a : windows)
      if (e.ts_ns >= p.events[a].ts_ns && e.ts_ns < p.events[a].end_ns()) window = p.events[a].name;
    if (e.kind == EventKind::Runtime) {
      // A synchronising call waits for the GPU, which the engine models itself: only the host
      // gap before it is host work.
      out.per_step_s += e.name.find("Synchronize") != std::string::npos ? gap : gap + own;
      continue;
    }
    if (starts(window, "Optimizer.zero_grad")) {
      out.per_step_s += gap + own;
      continue;
    }
    if (starts(window, "Optimizer.step")) {
      out.optimizer_seen = true;
      out.optimizer_s += gap + own;
      out.foreach |= starts(e.name, "aten::_foreach") || starts(e.name, "aten::_fused");
      continue;
    }
    static const std::string node = "autograd::engine::evaluate_function: ";
    std::string key, name = e.name;
    double graph_ops = 1;
    if (starts(e.name, node.c_str())) {
      if (e.name.find("AccumulateGrad") != std::string::npos) {
        out.accumulate_s += gap + own;
        ++out.accumulate;
        continue;
      }
      // The node's class is that of the framework op inside it that launched the most GPU work.
      const std::int64_t best = node_op(p, by_thread, k, launched);
      name = best >= 0 ? p.events[static_cast<std::size_t>(best)].name : std::string();
      const std::string cls = best >= 0 ? op_class_of(name) : "meta";
      key = "backward:" + cls;
      // Graphs split a convolution's and a linear layer's backward into an input-gradient and a
      // weight-gradient op: the node's host time is two graph ops' (as the kernel fit's split).
      if (cls == "conv_bwd" || cls == "gemm") graph_ops = 2;
    } else {
      if (scalar_bookkeeping(e)) {
        pending += gap + own;
        continue;
      }
      key = "forward:" + op_class_of(e.name);
    }
    out.total_s[key] += gap + own + pending;
    pending = 0;
    out.graph_ops[key] += graph_ops;
    if (!name.empty()) out.names[key].insert(name);
  }
  out.per_step_s +=
      pending + static_cast<double>(std::max<std::int64_t>(0, w.end_ns - prev)) * 1e-9;
  return out;
}

// GPU activities (kernels, copies, memsets) each host event launched.
std::vector<int> launched_by(const Profile& p) {
  std::vector<int> launched(p.events.size(), 0);
  for (const TraceEvent& e : p.events)
    if (e.on_gpu() && e.op >= 0 && static_cast<std::size_t>(e.op) < launched.size())
      ++launched[static_cast<std::size_t>(e.op)];
  return launched;
}

void fill_host_model(const Profile& p, const std::vector<StepWindow>& steps, HostCost& h,
                     double overhead_s) {
  const std::vector<int> launched = launched_by(p);
  std::map<std::string, std::vector<double>> per_class, per_phase;
  std::vector<double> param, opt, step, params;
  bool foreach = false, optimizer = false;
  for (const StepWindow& w : steps) {
    const StepHost s = step_host(p, w, launched, overhead_s);
    if (s.total_s.empty()) continue;
    std::map<std::string, std::pair<double, double>> phase;
    for (const auto& [k, t] : s.total_s) {
      const double n = s.graph_ops.at(k);
      per_class[k].push_back(t / n);
      auto& ph = phase[k.substr(0, k.find(':'))];
      ph.first += t;
      ph.second += n;
    }
    for (const auto& [k, v] : phase) per_phase[k].push_back(v.first / v.second);
    for (const auto& [k, n] : s.names) h.class_names[k].insert(n.begin(), n.end());
    foreach
      |= s.foreach;
    optimizer |= s.optimizer_seen;
    const int n = std::max(1, s.accumulate);
    // Per-parameter optimizers (for-loop SGD/Adam) launch per parameter: their step is spread
    // over the parameters; a foreach step is a fixed cost per step.
    param.push_back(s.accumulate_s / n + (s.foreach ? 0.0 : s.optimizer_s / n));
    opt.push_back(s.foreach ? s.optimizer_s : 0.0);
    step.push_back(s.per_step_s);
    params.push_back(s.accumulate);
  }
  for (const auto& [k, v] : per_class) h.per_class_s[k] = median_of(v);
  for (const auto& [k, v] : per_phase) h.per_phase_s[k] = median_of(v);
  h.per_parameter_s = median_of(param);
  h.optimizer_step_s = median_of(opt);
  h.per_step_s = median_of(step);
  h.parameters = static_cast<int>(median_of(params));
  h.optimizer = !optimizer ? "" : foreach ? "foreach" : "per-parameter";
}

// The host side of a trace without steps (an op microbenchmark): the span of every top-level
// framework op on its thread, by phase and class, and the host gap before it on the merged
// timeline of the host threads (as step_host: they take turns). The gaps are the benchmark's
// loop and the autograd engine's scheduling; their median per phase is added to every op.
void fill_op_spans(const Profile& p, HostCost& h) {
  const std::vector<int> launched = launched_by(p);
  const ThreadEvents by_thread = host_events(p, std::numeric_limits<std::int64_t>::min(),
                                             std::numeric_limits<std::int64_t>::max(), nullptr);
  const std::vector<std::size_t> tops = merged_tops(p, by_thread);
  static const std::string node = "autograd::engine::evaluate_function: ";
  std::int64_t prev = std::numeric_limits<std::int64_t>::min();
  for (std::size_t k : tops) {
    const TraceEvent& e = p.events[k];
    const double gap = prev == std::numeric_limits<std::int64_t>::min()
                           ? -1.0
                           : static_cast<double>(std::max<std::int64_t>(0, e.ts_ns - prev)) * 1e-9;
    prev = std::max(prev, e.end_ns());
    // A synchronising or other runtime call outside any op is the benchmark's, not an op's.
    if (e.kind != EventKind::CpuOp || scalar_bookkeeping(e)) continue;
    const double span = static_cast<double>(e.dur_ns) * 1e-9;
    const bool backward = starts(e.name, node.c_str());
    if (gap >= 0) h.op_gaps_s[backward ? "backward" : "forward"].push_back(gap);
    if (!backward) {
      const std::string key = "forward:" + op_class_of(e.name);
      h.op_spans_s[key].push_back(span);
      h.class_names[key].insert(e.name);
      continue;
    }
    h.autograd = true;
    if (e.name.find("AccumulateGrad") != std::string::npos) {
      h.op_spans_s["parameter"].push_back(span);
      continue;
    }
    const std::int64_t best = node_op(p, by_thread, k, launched);
    const std::string name = best >= 0 ? p.events[static_cast<std::size_t>(best)].name : "";
    const std::string cls = best >= 0 ? op_class_of(name) : "meta";
    // As step_host: a convolution or linear backward node stands for two graph ops.
    const double graph_ops = cls == "conv_bwd" || cls == "gemm" ? 2 : 1;
    h.op_spans_s["backward:" + cls].push_back(span / graph_ops);
    if (!name.empty()) h.class_names["backward:" + cls].insert(name);
  }
  for (const TraceEvent& e : p.events) h.op_launches += e.on_gpu() ? 1 : 0;
}

}  // namespace

std::optional<HostCost> host_cost_from_ops(const Profile& p, const std::string& device_model) {
  HostCost h{.device = device_key(p, device_model), .op_level = true};
  fill_op_spans(p, h);
  if (h.op_spans_s.empty() || h.op_launches == 0) return std::nullopt;
  finish_op_host_cost(h);
  return h;
}

void finish_op_host_cost(HostCost& h) {
  h.per_class_s.clear();
  h.per_phase_s.clear();
  std::map<std::string, std::vector<double>> phase;
  std::vector<double> all;
  auto gap = [&](const std::string& ph) {
    const auto g = h.op_gaps_s.find(ph);
    return g == h.op_gaps_s.end() ? 0.0 : median_of(g->second);
  };
  for (const auto& [k, v] : h.op_spans_s) {
    if (k == "parameter") continue;
    all.insert(all.end(), v.begin(), v.end());
    const std::string ph = k.substr(0, k.find(':'));
    h.per_class_s[k] = median_of(v) + gap(ph);
    phase[ph].insert(phase[ph].end(), v.begin(), v.end());
  }
  for (const auto& [k, v] : phase) h.per_phase_s[k] = median_of(v) + gap(k);
  const auto it = h.op_spans_s.find("parameter");
  h.per_parameter_s = it == h.op_spans_s.end() ? 0.0 : median_of(it->second) + gap("backward");
  // The launch overhead a GPU takes from the calibration (the per-op model's last fall-back): a
  // typical op's span. A mean would be the warm-up's (cuDNN's first call: milliseconds).
  h.per_activity_s = median_of(all);
  // Not in a trace without steps; 0 is what the per-op model then charges (docs/calibration.md).
  h.optimizer_step_s = h.per_step_s = 0.0;
}

void merge_op_host_cost(HostCost& into, const HostCost& from) {
  // A forward op of a trace whose ops record the autograd graph (it runs a backward) costs what
  // a training step's does (the b8 ResNet trace's conv2d: 109 us; the inference-only
  // microbenchmark's: 55 us): where one trace records and the other does not, it decides.
  for (const auto& [k, v] : from.op_spans_s) {
    const bool training = k.rfind("forward:", 0) == 0;
    if (training && into.autograd && !from.autograd && into.op_spans_s.count(k)) continue;
    if (training && from.autograd && !into.autograd) into.op_spans_s[k].clear();
    into.op_spans_s[k].insert(into.op_spans_s[k].end(), v.begin(), v.end());
  }
  for (const auto& [k, v] : from.op_gaps_s)
    into.op_gaps_s[k].insert(into.op_gaps_s[k].end(), v.begin(), v.end());
  into.autograd |= from.autograd;
  for (const auto& [k, n] : from.class_names) into.class_names[k].insert(n.begin(), n.end());
  into.op_launches += from.op_launches;
  finish_op_host_cost(into);
}

double profiler_overhead_per_op(const Profile& p) {
  for (const TraceEvent& e : p.events)
    if (e.kind == EventKind::CpuOp && !e.input_dims.empty()) return 5.2e-6;
  return 2.3e-6;
}

std::optional<HostCost> host_cost_from_profile(const Profile& p, const std::string& device_model,
                                               double profiler_overhead_s) {
  const std::vector<StepWindow> steps = profile_steps(p);
  bool annotated = false;
  for (const TraceEvent& e : p.events)
    annotated |= e.kind == EventKind::Annotation && starts(e.name, "ProfilerStep#");
  if (!annotated || steps.empty()) return std::nullopt;
  std::set<std::int64_t> gpu_corr;
  for (const TraceEvent& e : p.events)
    if (e.on_gpu() && e.correlation >= 0) gpu_corr.insert(e.correlation);
  std::vector<double> time, count, ratio;
  for (const StepWindow& w : steps) {
    // GPU work launched by the step's runtime calls, wherever it ran.
    int n = 0;
    for (const TraceEvent& e : p.events)
      if (e.kind == EventKind::Runtime && e.ts_ns >= w.begin_ns && e.ts_ns < w.end_ns &&
          gpu_corr.count(e.correlation))
        ++n;
    if (n == 0) continue;
    int recorded = 0;
    if (profiler_overhead_s > 0)
      for (const TraceEvent& e : p.events)
        recorded += e.kind == EventKind::CpuOp && e.ts_ns >= w.begin_ns && e.ts_ns < w.end_ns;
    const double t = std::max(
        0.0, static_cast<double>(w.end_ns - w.begin_ns) * 1e-9 - profiler_overhead_s * recorded);
    time.push_back(t);
    count.push_back(n);
    ratio.push_back(t / n);
  }
  if (ratio.empty()) return std::nullopt;
  HostCost h{.device = device_key(p, device_model),
             .steps = static_cast<int>(ratio.size()),
             .step_s = median_of(time),
             .activities_per_step = median_of(count),
             .per_activity_s = median_of(ratio)};
  fill_host_model(p, steps, h, profiler_overhead_s);
  return h;
}

sim::HostCalibration host_calibration(const HostCost& h, const std::string& profile) {
  sim::HostCalibration c{.launch_overhead = sim::Duration{std::llround(h.per_activity_s * 1e9)},
                         .profile = profile,
                         .steps = h.steps,
                         .activities_per_step = h.activities_per_step};
  if (h.per_phase_s.empty()) return c;
  auto d = [](double s) { return sim::Duration{std::llround(s * 1e9)}; };
  const auto& aliases = graph_type_aliases();
  const auto& preferred = graph_type_preferred();
  for (const auto& [key, s] : h.per_class_s) {
    const std::string phase = key.substr(0, key.find(':')), cls = key.substr(key.find(':') + 1);
    std::set<std::string> names;
    if (auto it = h.class_names.find(key); it != h.class_names.end()) names = it->second;
    if (auto it = aliases.find(cls); it != aliases.end())
      names.insert(it->second.begin(), it->second.end());
    // The backward convolution node prices the graphs' input- and filter-gradient ops.
    if (cls == "conv_bwd")
      for (const std::string& n : aliases.at("conv")) names.insert(n);
    if (auto it = preferred.find(cls); it != preferred.end())
      names.insert(it->second.begin(), it->second.end());
    for (const std::string& n : names) {
      // Where two classes name one type (pool and pool_bwd both list MaxPoolGrad), the class
      // the type belongs to decides.
      const std::string k = phase + ":" + n;
      if (!c.per_op.count(k) || op_class_of(n) == cls) c.per_op[k] = d(s);
    }
  }
  for (const auto& [phase, s] : h.per_phase_s) c.per_phase[phase] = d(s);
  c.per_parameter = d(h.per_parameter_s);
  c.optimizer_step = d(h.optimizer_step_s);
  c.per_step = d(h.per_step_s);
  c.optimizer = h.optimizer;
  return c;
}

std::vector<OpSample> op_samples_from_manifest(const std::string& path,
                                               const std::string& device_model) {
  using nlohmann::json;
  json doc;
  try {
    const std::string text = sim::read_text_file(path);
    sim::check_json_nesting(text, path);
    doc = json::parse(text);
  } catch (const json::exception&) {
    // parse_error, or out_of_range.406 for a number such as 1e309.
    throw InputError(path, "", "a profile_rig.py manifest (JSON), got unparsable text");
  }
  try {
    return manifest_samples(doc, path, device_model);
  } catch (const json::exception& e) {
    throw InputError(
        path, "ops",
        std::string("manifest fields of the JSON types profile_rig.py writes, got: ") + e.what());
  }
}

namespace {

double manifest_number(const nlohmann::json& o, const char* key, const std::string& path,
                       const std::string& where, double hi) {
  if (!o.contains(key) || !o.at(key).is_number() || !(o.at(key).get<double>() >= 0) ||
      o.at(key).get<double>() > hi) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", hi);
    throw InputError(path, where + "." + key,
                     std::string("a number from 0 to ") + buf + ", got " +
                         (o.contains(key) ? sim::printable(o.at(key).dump()) : "no such key"));
  }
  return o.at(key).get<double>();
}

// A manifest's memory_levels ({level, bytes, byte_s}: ascending, DRAM's bytes 0 last) or, with
// `sweep`, its memory_sweep ({bytes, byte_s}: the rig's streaming sweep, ascending by working
// set, every one measured); empty where the manifest has none.
std::vector<sim::MemoryLevel> manifest_memory(const nlohmann::json& doc, const std::string& path,
                                              bool sweep = false) {
  const std::string list = sweep ? "memory_sweep" : "memory_levels";
  const std::string fields = sweep ? "bytes, byte_s" : "level, bytes, byte_s";
  std::vector<sim::MemoryLevel> out;
  if (!doc.contains(list)) return out;
  if (!doc.at(list).is_array()) throw InputError(path, list, "a list of {" + fields + "}");
  std::size_t i = 0;
  for (const nlohmann::json& l : doc.at(list)) {
    const std::string key = list + "[" + std::to_string(i++) + "]";
    if (!l.is_object()) throw InputError(path, key, "a map with " + fields);
    sim::MemoryLevel m;
    m.bytes = manifest_number(l, "bytes", path, key, 1e15);
    m.byte_s = manifest_number(l, "byte_s", path, key, 1e15);
    m.name = sweep ? std::to_string(static_cast<long long>(m.bytes)) + " B"
                   : l.value("level", std::string("?"));
    if (!(m.byte_s > 0)) throw InputError(path, key + ".byte_s", "a positive rate, got 0");
    if (sweep && !(m.bytes > 0))
      throw InputError(path, key + ".bytes", "a measured working set (above 0 bytes), got 0");
    if (!out.empty() && (out.back().bytes <= 0 || (m.bytes > 0 && m.bytes <= out.back().bytes)))
      throw InputError(
          path, key + ".bytes",
          sweep ? "points ascending by working set" : "levels ascending by size, DRAM (0) last");
    out.push_back(m);
  }
  return out;
}

// The host block of a CPU: per parameter the optimizer's Python (SGD loops over the
// parameters); per step what no graph op stands for. All measured by the rig, in us. No
// per-op dispatch: the rig's dispatch_us (a one-element add with autograd, called from Python)
// is the Python call, which lies in the step's gap (the time no top-level op covers: per_step),
// plus the dispatcher and autograd recording inside the op's span, which the rows' times hold
// (every class curve's intercept). Charged per graph op on top, it counted both twice: the
// transformer's 340 graph ops 1.09 ms a step that no measured class had (session 15).
std::optional<sim::HostCalibration> manifest_host(const nlohmann::json& doc,
                                                  const std::string& path) {
  if (!doc.contains("host_side") || !doc.at("host_side").is_object() ||
      !doc.at("host_side").contains("cpu"))
    return std::nullopt;
  const nlohmann::json& h = doc.at("host_side").at("cpu");
  const std::string where = "host_side.cpu";
  if (!h.is_object()) throw InputError(path, where, "a map of host-side figures");
  auto us = [&](const char* k) {
    return sim::Duration::from_seconds_ceil(manifest_number(h, k, path, where, 1e9) * 1e-6);
  };
  sim::HostCalibration c;
  c.cpu = true;
  c.profile = path + " (batch " + std::to_string(h.value("batch", 0)) + ")";
  c.steps = static_cast<int>(manifest_number(h, "steps", path, where, 1e6));
  (void)us("dispatch_us");  // checked, reported by calibrate; not charged (above)
  c.launch_overhead = sim::Duration{0};
  c.per_parameter = us("optimizer_per_parameter_us");
  c.per_step = us("gap_us") + us("zero_grad_us") + us("accumulate_grad_us");
  c.optimizer = "per-parameter";
  return c;
}

}  // namespace

namespace {

// An optional whole number from 1 to hi at the manifest's top level; 0 when absent.
int manifest_count(const nlohmann::json& doc, const char* key, std::int64_t hi, const char* what,
                   const std::string& path) {
  if (!doc.contains(key)) return 0;
  const nlohmann::json& v = doc.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > hi)
    throw InputError(path, key,
                     std::string(what) + " from 1 to " + std::to_string(hi) + ", got " + v.dump());
  return static_cast<int>(v.get<std::int64_t>());
}

}  // namespace

std::optional<ManifestCpu> cpu_side_from_manifest(const std::string& path,
                                                  const std::string& device_model) {
  nlohmann::json doc;
  try {
    const std::string text = sim::read_text_file(path);
    sim::check_json_nesting(text, path);
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw InputError(path, "", "a profile_rig.py manifest (JSON), got unparsable text");
  }
  if (!doc.is_object()) throw InputError(path, "", "a profile_rig.py manifest (a JSON object)");
  ManifestCpu m;
  m.device = !device_model.empty() ? device_model : doc.value("device_model", std::string("cpu"));
  m.memory = manifest_memory(doc, path);
  m.sweep = manifest_memory(doc, path, true);
  m.host = manifest_host(doc, path);
  if (m.host) m.dispatch_us = doc.at("host_side").at("cpu").at("dispatch_us").get<double>();
  m.vector_lanes = manifest_count(doc, "vector_lanes", 64, "a SIMD width in floats", path);
  // What the core's peak is made of (cpu_peak): FMA pipes and the clock the rig measured.
  m.fma_units = manifest_count(doc, "fma_units", 8, "a count of vector FMA pipes", path);
  if (doc.contains("clock_hz")) {
    const nlohmann::json& v = doc.at("clock_hz");
    if (!v.is_number() || !(v.get<double>() >= 1e8) || v.get<double>() > 1e11)
      throw InputError(path, "clock_hz", "a core clock in Hz from 1e8 to 1e11, got " + v.dump());
    m.clock_hz = v.get<double>();
    m.clock_source = "manifest";
    if (doc.contains("clock_source")) {
      if (!doc.at("clock_source").is_string())
        throw InputError(path, "clock_source", "a string naming how clock_hz was measured");
      m.clock_source = doc.at("clock_source").get<std::string>();
    }
  }
  if (m.memory.empty() && !m.host && m.vector_lanes == 0) return std::nullopt;
  return m;
}

RateBounds cpu_peak(const ManifestCpu& cpu) {
  RateBounds r;
  if (cpu.vector_lanes <= 0 || cpu.fma_units <= 0 || cpu.clock_hz <= 0) return r;
  r.max_flop_rate = cpu.vector_lanes * cpu.fma_units * 2.0 * cpu.clock_hz;
  r.max_byte_rate = cpu.vector_lanes * 4.0 * 2.0 * cpu.clock_hz;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s f32 (%d lanes x %d FMA x 2 x %.3g GHz)", cpu.device.c_str(),
                cpu.vector_lanes, cpu.fma_units, cpu.clock_hz * 1e-9);
  r.what = buf;
  return r;
}

namespace {

// A 2-D max pool's window from a rig row (kernel_shape, strides, pads: profile_rig.py writes
// them, since torch records no int arguments): its work as the ONNX importer counts a MaxPool's,
// kernel area x output elements comparisons, and the input read and output written once.
void manifest_pool_window(const nlohmann::json& r, const std::string& path, const std::string& key,
                          OpSample& s) {
  const auto ints = [&](const char* field, std::int64_t lo) {
    std::vector<std::int64_t> v;
    if (r.contains(field) && r.at(field).is_array())
      for (const nlohmann::json& d : r.at(field))
        if (d.is_number_integer() && d.get<std::int64_t>() >= lo && d.get<std::int64_t>() <= 4096)
          v.push_back(d.get<std::int64_t>());
    if (v.size() != 2)
      throw InputError(path, key + "." + field,
                       "two integers from " + std::to_string(lo) + " to 4096 (a 2-D pool's)");
    return v;
  };
  const std::vector<std::int64_t> k = ints("kernel_shape", 1), st = ints("strides", 1),
                                  pad = ints("pads", 0);
  const auto& x =
      s.signature.input_shapes.empty() ? std::vector<std::int64_t>{} : s.signature.input_shapes[0];
  if (x.size() != 4) throw InputError(path, key + ".input_shapes", "an NCHW input for a 2-D pool");
  double out = numel(x) / static_cast<double>(std::max<std::int64_t>(x[2] * x[3], 1));
  for (std::size_t i = 0; i < 2; ++i) {
    const std::int64_t n = (x[2 + i] + 2 * pad[i] - k[i]) / st[i] + 1;
    if (n < 1) throw InputError(path, key + ".kernel_shape", "a window that fits the input");
    out *= static_cast<double>(n);
  }
  const double es = static_cast<double>(sim::dtype_size(s.signature.dtype));
  s.work.flops = static_cast<double>(k[0] * k[1]) * out;
  s.work.bytes = (numel(x) + out) * es;
  s.work.window = true;
}

std::vector<OpSample> manifest_samples(const nlohmann::json& doc, const std::string& path,
                                       const std::string& device_model) {
  using nlohmann::json;
  if (!doc.is_object() || !doc.contains("ops") || !doc.at("ops").is_array())
    throw InputError(path, "ops",
                     "a list of measured ops (tools/profile_rig.py manifest), got none");
  std::vector<OpSample> out;
  const std::string dflt = doc.value("device_model", std::string("cpu"));
  std::size_t i = 0;
  for (const json& r : doc.at("ops")) {
    const std::string key = "ops[" + std::to_string(i++) + "]";
    if (!r.is_object() || !r.contains("name") || !r.at("name").is_string())
      throw InputError(path, key + ".name", "an op name, got none");
    if (r.at("name").get_ref<const std::string&>().size() > 256)
      throw InputError(path, key + ".name", "an op name of at most 256 characters");
    if (!r.contains("mean_us") || !r.at("mean_us").is_number() ||
        !(r.at("mean_us").get<double>() >= 0) || r.at("mean_us").get<double>() > 1e9)
      throw InputError(path, key + ".mean_us", "a mean time from 0 to 1e9 microseconds (1000 s)");
    // Ops below the profiler's 1 us resolution (views, resolve_conj) carry no timing information.
    if (r.at("mean_us").get<double>() <= 0) continue;
    OpSample s;
    s.device = !device_model.empty() ? device_model : r.value("device_model", dflt);
    s.signature.op_type = r.at("name").get<std::string>();
    if (r.contains("input_shapes") && r.at("input_shapes").is_array()) {
      if (r.at("input_shapes").size() > 64)
        throw InputError(path, key + ".input_shapes", "at most 64 input shapes");
      for (const json& sh : r.at("input_shapes")) {
        std::vector<std::int64_t> dims;
        if (sh.is_array())
          for (const json& d : sh) {
            if (!d.is_number_integer()) continue;
            if (d.is_number_unsigned() ? d.get<std::uint64_t>() > (std::uint64_t{1} << 40)
                                       : (d.get<std::int64_t>() < -1 ||
                                          d.get<std::int64_t>() > (std::int64_t{1} << 40)))
              throw InputError(path, key + ".input_shapes",
                               "dimensions from -1 to 2^40, got " + d.dump());
            dims.push_back(d.get<std::int64_t>());
          }
        if (dims.size() > 16)
          throw InputError(path, key + ".input_shapes", "shapes of at most 16 dimensions");
        s.signature.input_shapes.push_back(std::move(dims));
      }
    }
    const std::string dt = r.value("dtype", std::string("float32"));
    s.signature.dtype = sim::parse_dtype(dt).value_or(Dtype::F32);
    s.seconds = r.at("mean_us").get<double>() * 1e-6;
    const std::int64_t count = r.value("count", std::int64_t{1});
    if (count < 1 || count > 1'000'000'000)
      throw InputError(path, key + ".count", "a count from 1 to 1e9, got " + std::to_string(count));
    s.count = static_cast<int>(count);
    s.work = estimate_work(s.signature.op_type, s.signature.input_shapes, s.signature.dtype);
    if (s.work.op_class == "pool" && r.contains("kernel_shape"))
      manifest_pool_window(r, path, key, s);
    if (r.contains("input_grad")) {
      // A first layer's backward (profile_rig.py): its input needs no gradient, so torch
      // computes the weight's alone (convolution_backward's output_mask [False, True, True]), as
      // the graphs' first convolution has a filter gradient and no input gradient. One
      // convolution's FLOPs; grad-output and input read, the weight read and its gradient written.
      if (!r.at("input_grad").is_boolean())
        throw InputError(path, key + ".input_grad",
                         "true or false, got " + sim::printable(r.at("input_grad").dump()));
      const auto& t = s.signature.input_shapes;
      if (!r.at("input_grad").get<bool>() && s.work.op_class == "conv_bwd" && t.size() >= 3) {
        const double es = static_cast<double>(sim::dtype_size(s.signature.dtype));
        s.work.flops *= 0.5;
        s.work.bytes = (numel(t[0]) + numel(t[1]) + 2.0 * numel(t[2])) * es;
        s.work.weight_grad_only = true;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Fitting.

namespace {

// Weighted least squares on the columns in `use` (subset of {1, F, B}); returns false when the
// system is singular. Solved by Gaussian elimination with partial pivoting (at most 3x3).
bool wls(const std::vector<std::array<double, 3>>& x, const std::vector<double>& y,
         const std::vector<double>& wt, const std::array<bool, 3>& use,
         std::array<double, 3>& coef) {
  std::vector<int> cols;
  for (int c = 0; c < 3; ++c)
    if (use[static_cast<std::size_t>(c)]) cols.push_back(c);
  const std::size_t m = cols.size();
  if (m == 0) return false;
  // Columns scaled to unit magnitude so F (1e12) and 1 (intercept) do not ruin the conditioning.
  std::array<double, 3> scale{1, 1, 1};
  for (int c : cols) {
    double mx = 0;
    for (const auto& r : x) mx = std::max(mx, std::abs(r[static_cast<std::size_t>(c)]));
    scale[static_cast<std::size_t>(c)] = mx > 0 ? mx : 1.0;
  }
  std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t r = 0; r < m; ++r) {
      const double xr =
          x[i][static_cast<std::size_t>(cols[r])] / scale[static_cast<std::size_t>(cols[r])];
      for (std::size_t c = 0; c < m; ++c)
        a[r][c] += wt[i] * xr * x[i][static_cast<std::size_t>(cols[c])] /
                   scale[static_cast<std::size_t>(cols[c])];
      a[r][m] += wt[i] * xr * y[i];
    }
  for (std::size_t c = 0; c < m; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < m; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    if (std::abs(a[piv][c]) < 1e-300) return false;
    std::swap(a[c], a[piv]);
    for (std::size_t r = 0; r < m; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k <= m; ++k) a[r][k] -= f * a[c][k];
    }
  }
  coef = {0, 0, 0};
  for (std::size_t c = 0; c < m; ++c)
    coef[static_cast<std::size_t>(cols[c])] =
        a[c][m] / a[c][c] / scale[static_cast<std::size_t>(cols[c])];
  return true;
}

double predict(const std::array<double, 3>& c, double f, double b) {
  return c[0] + c[1] * f + c[2] * b;
}

}  // namespace

namespace {

// Non-negative least squares on relative error of t - lo_f F - lo_b B = a + d_f F + d_b B, all
// coefficients >= 0, by enumerating the 7 active sets of 3 unknowns. Returns {a, 1/R_f, 1/R_b}
// with 1/R_f = lo_f + d_f: a rate never above 1/lo.
std::array<double, 3> bounded_fit(const std::vector<double>& flops,
                                  const std::vector<double>& bytes,
                                  const std::vector<double>& seconds, double lo_f, double lo_b) {
  std::vector<std::array<double, 3>> x;
  std::vector<double> wt, y;
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    x.push_back({1.0, flops[i], bytes[i]});
    y.push_back(seconds[i] - lo_f * flops[i] - lo_b * bytes[i]);
    // Relative error: minimise sum ((pred - t) / t)^2.
    wt.push_back(1.0 / std::max(seconds[i] * seconds[i], 1e-24));
  }
  std::array<double, 3> best{0, 0, 0};
  double best_err = -1.0;
  for (int mask = 0; mask < 8; ++mask) {
    const std::array<bool, 3> use{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    std::array<double, 3> c{};
    if (mask != 0 && !wls(x, y, wt, use, c)) continue;
    if (c[0] < 0 || c[1] < 0 || c[2] < 0) continue;
    // With bounds, the empty set (every rate at its peak, no intercept) is a candidate too.
    if (mask == 0 && lo_f <= 0 && lo_b <= 0) continue;
    double err = 0;
    for (std::size_t i = 0; i < seconds.size(); ++i) {
      const double r = (predict(c, flops[i], bytes[i]) - y[i]) / seconds[i];
      err += r * r;
    }
    if (best_err < 0 || err < best_err - 1e-15) {
      best_err = err;
      best = c;
    }
  }
  best[1] += lo_f;
  best[2] += lo_b;
  return best;
}

std::string rate_text(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g T%s", v * 1e-12, unit);
  return buf;
}

}  // namespace

sim::OpClassModel fit_op_class(const std::vector<double>& flops, const std::vector<double>& bytes,
                               const std::vector<double>& seconds, const RateBounds& bounds) {
  sim::OpClassModel m;
  m.samples = static_cast<int>(seconds.size());
  if (seconds.empty()) return m;
  const double lo_f = bounds.max_flop_rate > 0 ? 1.0 / bounds.max_flop_rate : 0.0;
  const double lo_b = bounds.max_byte_rate > 0 ? 1.0 / bounds.max_byte_rate : 0.0;
  const std::array<double, 3> best = bounded_fit(flops, bytes, seconds, lo_f, lo_b);
  if (lo_f > 0 || lo_b > 0) {
    // Say what the data alone would have claimed when a bound decided the fit.
    const std::array<double, 3> free = bounded_fit(flops, bytes, seconds, 0.0, 0.0);
    std::string note;
    // A free fit that drops a term (coefficient 0) claims no rate; one above the peak does.
    if (lo_f > 0 && free[1] > 0 && free[1] < lo_f)
      note = "flop_rate held at the " + bounds.what + " peak " +
             rate_text(bounds.max_flop_rate, "FLOP/s") +
             " (unconstrained fit: " + rate_text(1.0 / free[1], "FLOP/s") + ")";
    if (lo_b > 0 && free[2] > 0 && free[2] < lo_b)
      note += std::string(note.empty() ? "" : "; ") + "byte_rate held at the memory bandwidth " +
              rate_text(bounds.max_byte_rate, "B/s") +
              " (unconstrained fit: " + rate_text(1.0 / free[2], "B/s") + ")";
    m.clamped = note;
  }
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    m.max_flops = std::max(m.max_flops, flops[i]);
    m.max_bytes = std::max(m.max_bytes, bytes[i]);
  }
  m.intercept_s = best[0];
  m.flop_rate = best[1] > 0 ? 1.0 / best[1] : 0.0;
  m.byte_rate = best[2] > 0 ? 1.0 / best[2] : 0.0;
  m.half_flops = 0.0;
  return m;
}

RateBounds class_bounds(const sim::DeviceSpec& spec, const std::string& op_class,
                        const std::set<sim::Dtype>& dtypes, const sim::MathMode& math) {
  RateBounds r;
  // A representative op name of the class decides the math unit (conv, matmul or neither).
  const std::string rep = op_class == "conv" || op_class == "conv_bwd" ? "Conv"
                          : op_class == "gemm" || op_class == "rnn" || op_class == "attention"
                              ? "MatMul"
                              : "Add";
  std::string best;
  for (const sim::Dtype d : dtypes.empty() ? std::set<sim::Dtype>{sim::Dtype::F32} : dtypes) {
    const sim::Dtype cd = sim::compute_dtype(rep, d, math);
    const double p = spec.peak_for(cd).per_s;
    if (p > r.max_flop_rate) {
      r.max_flop_rate = p;
      best = sim::to_string(spec.peak_flops.count(cd) ? cd : sim::Dtype::F32);
    }
  }
  r.max_byte_rate = spec.memory_bandwidth.bytes_per_s;
  r.what = spec.model + " " + best;
  return r;
}

namespace {

// (device, signature key) -> the sample-count-weighted mean time of that signature.
struct Acc {
  double weighted = 0;  // sum of seconds x count
  double squares = 0;   // sum of seconds^2 x count (the spread of an op-name entry)
  double lo = 0, hi = 0;
  int count = 0;
  const OpSample* s = nullptr;
};
using ExactMap = std::map<std::pair<std::string, std::string>, Acc>;

ExactMap exact_signatures(const std::vector<OpSample>& samples) {
  ExactMap exact;
  for (const OpSample& s : samples) {
    Acc& a = exact[{s.device, s.signature.key()}];
    a.lo = a.count == 0 ? s.seconds : std::min(a.lo, s.seconds);
    a.hi = a.count == 0 ? s.seconds : std::max(a.hi, s.seconds);
    a.weighted += s.seconds * s.count;
    a.squares += s.seconds * s.seconds * s.count;
    a.count += s.count;
    a.s = &s;
  }
  return exact;
}

// The spread of an op-name entry's calls (NameSpread): coefficient of variation, max / min.
NameSpread name_spread(const std::pair<std::string, std::string>& key, const Acc& a) {
  NameSpread n;
  n.device = key.first;
  n.key = key.second;
  n.samples = a.count;
  n.total_s = a.weighted;
  const double mean = a.weighted / a.count;
  const double var = std::max(0.0, a.squares / a.count - mean * mean);
  n.cv = mean > 0 ? std::sqrt(var) / mean : 0.0;
  n.max_over_min = a.lo > 0 ? a.hi / a.lo : 0.0;
  n.kept = name_entry_consistent(n.samples, n.cv);
  return n;
}

// On a CPU, two classes split by what the kernel does per element. A normalisation's backward
// reads the saved input and the gradient and reduces twice (ResNet-18's BatchNorm backward ran
// 3.4x what the forward-dominated norm curve priced); softmax, log-softmax and cross-entropy take
// an exp or a log per element, ~1.7 ns here, where a vectorised sum takes ~0.1 ns (the encoder's
// softmax/loss: -91 % on the reduction curve). NLL's backward is not one of them: it zeroes the
// logits' gradient and writes one value per row (0.4-0.8 ns an element here), a memset that
// pulled the softmax curve's per-element rate down; it stays a reduction. GPU calibrations keep
// the shared classes.
std::string cpu_op_class(const std::string& op, const std::string& cls) {
  // LayerNorm (one row per token, ~1.5 ns an element here) is not BatchNorm (a plane per channel,
  // ~3.2 ns an element forward): one curve for both priced ResNet-18's BatchNorms 30 % fast.
  if (cls == "norm" && op.find("layer_norm") != std::string::npos) return "layer_norm";
  if (cls == "norm" && op.find("_backward") != std::string::npos) return "norm_bwd";
  // ReLU's backward reads the forward's saved output a pass after it was written: its rows are
  // evicted (profile_rig.py) and fitted and priced at DRAM's rate (sim::ByteSource::Dram), where
  // the elementwise curve's rows are forward calls repeated in cache.
  if (sim::reads_saved_activation(base_name(op))) return "relu_bwd";
  if (cls == "reduction" &&
      (op.find("softmax") != std::string::npos || op.find("cross_entropy") != std::string::npos))
    return "softmax";
  return cls;
}

// A CPU rig row's FLOPs as the graphs count the op its curve prices (builders and the ONNX
// importer): a BatchNorm forward 5 per element, a softmax forward 5 and its backward 3, where
// estimate_work counts 8 (a norm's backward) and 4 (a reduction's). A curve fitted on one count
// and applied on the other is off by their ratio wherever its FLOP term carries the time: the
// BatchNorm forward curve priced ResNet-18's at 5/8 of the rows it was fitted on.
double graph_counted_flops(const std::string& op, const WorkEstimate& w) {
  const std::string b = base_name(op);
  const bool backward = b.find("backward") != std::string::npos;
  if (w.op_class == "norm" && b.find("batch_norm") != std::string::npos && !backward)
    return w.flops * 5.0 / 8.0;
  if (w.op_class == "reduction" && b.find("softmax") != std::string::npos)
    return w.flops * (backward ? 3.0 : 5.0) / 4.0;
  return w.flops;
}

// Per device and class: one point per signature (its mean), and the op names seen.
struct ClassData {
  std::vector<double> f, b, t;
  std::vector<double> o, m;  // gemm: output bytes, matrices
  bool cpu = false;          // a CPU with a measured memory hierarchy (FitOptions::memory)
  bool cpu_gemm = false;     // ... and a class of kShapeModel (gemm, conv, ...): fit_cpu_gemm
  bool sweep = false;        // ... and a streaming class priced on the rig's sweep (ByteSource)
  std::string op_class;
  std::set<std::string> names;
  std::set<Dtype> dtypes;
  std::map<std::string, std::size_t> index;
};
using ClassMap = std::map<std::pair<std::string, std::string>, ClassData>;

// Marks `c` a CPU class (its model and byte source) and returns the stretch of a row of
// `bytes`: from the sweep for the streaming classes (fitted on bytes alone: the sweep's own kind
// of call), from DRAM for relu_bwd, from the cache levels otherwise, as the cost model prices
// the class (sim::ByteSource).
double cpu_class_stretch(ClassData& c, const std::string& op_class, const std::string& device,
                         double bytes, const FitOptions& options) {
  static const std::set<std::string> kShapeModel = {
      "gemm", "conv", "conv_bwd", "norm", "norm_bwd", "layer_norm", "softmax", "dropout"};
  c.cpu = true;
  c.cpu_gemm = kShapeModel.count(op_class) > 0;
  c.op_class = op_class;
  const auto sw = options.sweep.find(device);
  const std::vector<sim::MemoryLevel> none;
  const std::vector<sim::MemoryLevel>& points = sw != options.sweep.end() ? sw->second : none;
  const bool streams = op_class == "elementwise" || op_class == "copy";
  const sim::ByteSource source = op_class == "relu_bwd" ? sim::ByteSource::Dram
                                 : streams              ? sim::ByteSource::Sweep
                                                        : sim::ByteSource::Levels;
  c.sweep = source == sim::ByteSource::Sweep && !points.empty();
  return sim::cpu_byte_stretch(options.memory.at(device), points, bytes, source);
}

// Writes each signature's mean as an exact entry of `cal` and returns the points of each class.
// An op-name entry (no shapes) is written only where its calls agree (name_entry_consistent);
// every one is reported in `names`.
ClassMap class_points(const ExactMap& exact, sim::Calibration& cal, const FitOptions& options,
                      std::vector<NameSpread>& names) {
  ClassMap classes;
  for (const auto& [k, a] : exact) {
    const double mean = a.weighted / a.count;
    const OpSample& s = *a.s;
    names.push_back(name_spread(k, a));
    if (!s.signature.input_shapes.empty()) {
      names.back().shaped = true;
      names.back().kept = true;
    } else {
      if (!names.back().kept) {
        // Still a device of the calibration (its host model, kernel floor), without the entry.
        cal.devices[k.first];
        continue;
      }
    }
    cal.devices[k.first].exact[k.second] = sim::Duration::from_seconds_ceil(mean);
    if (s.signature.input_shapes.empty() ||
        (s.work.flops <= 0 && s.work.bytes <= 0 && s.work.op_class != "meta"))
      continue;
    // One point per shape: nested framework ops of one call (conv2d > convolution > _convolution
    // > mkldnn_convolution) share the shapes; the outermost (longest) stands for the call, and
    // holding a shape back in cross-validation holds back all of them.
    WorkEstimate work = s.work;
    const auto mem = options.memory.find(k.first);
    if (mem != options.memory.end() && work.op_class != "meta" && work.bytes > 0) {
      // An op that "moved" its bytes faster than twice the CPU's fastest cache level touched
      // none of them: a view or a no-op under a kernel's name (aten::to to the same dtype,
      // aten::contiguous of a contiguous tensor, aten::is_same_size): a fixed cost, as views.
      double fastest = 0.0;
      for (const sim::MemoryLevel& l : mem->second) fastest = std::max(fastest, l.byte_s);
      if (work.bytes > 2.0 * fastest * mean) work = WorkEstimate{0.0, 0.0, "meta"};
      // Elementwise ops and copies stream: their FLOPs are proportional to their bytes in the
      // microbenchmarks (1 per element) but not in graphs (SGD's update counts 2-3 per element
      // and 12 bytes), so a fit that puts the time on FLOPs misprices the graph's (ResNet-18's
      // updates: 17.7 ms predicted for 4.9 ms measured). Fitted on bytes alone.
      if (work.op_class == "elementwise" || work.op_class == "copy") work.flops = 0.0;
      work.flops = graph_counted_flops(s.signature.op_type, work);
      // A dropout row's bytes as the graph's Dropout counts them: x read, y and the mask
      // written (torch 1.13 draws the mask into a float tensor, scales it in place and
      // multiplies). The rows' estimate counted x and y alone, so a curve with a byte term
      // priced the graph's three tensors at 3/2 of the rows' (the encoder's dropout +15 to +48 %).
      if (work.op_class == "dropout" && !s.signature.input_shapes[0].empty())
        work.bytes = 3.0 * numel(s.signature.input_shapes[0]) *
                     static_cast<double>(sim::dtype_size(s.signature.dtype));
      // A max pool reads its input once and writes a quarter of it (stride 2, as the rig's 3x3
      // and LeNet's 2x2 pools): on bytes alone, as the graph's MaxPool counts them, and not on
      // FLOPs, which the importer counts per window (9 per output for 3x3) and the rig cannot
      // (its rows carry no kernel size). On FLOPs, ResNet-18's stem pool fell outside the curve
      // and to the roofline: 2.0 ms for 4.9 ms measured.
      // With the window in the row (profile_rig.py's kernel_shape), the pool keeps its
      // comparisons as FLOPs: LeNet-5's 2x2 windows make 4 per output where the rig's 3x3 ones
      // make 9, and on bytes alone the 2x2 pools were priced at the 3x3 rate (+50 to +92 %).
      // Its backward scatters each output's gradient through the saved index into a zeroed
      // input gradient: no window in it, so bytes alone (the graph's MaxPoolGrad counts
      // window FLOPs, 2.25 per input element for 3x3/2, 1 for 2x2/2).
      if (work.op_class == "pool_bwd") work.flops = 0.0;
      if (work.op_class == "pool" && !work.window && !s.signature.input_shapes[0].empty()) {
        work.flops = 0.0;
        work.bytes = 1.25 * numel(s.signature.input_shapes[0]) *
                     static_cast<double>(sim::dtype_size(s.signature.dtype));
      }
      work.op_class = cpu_op_class(s.signature.op_type, work.op_class);
    }
    sim::Signature shape_only = s.signature;
    shape_only.op_type = work.op_class;
    ClassData& c = classes[{k.first, work.op_class}];
    const std::string own = mem != options.memory.end()
                                ? cpu_op_class(s.signature.op_type, s.work.op_class)
                                : s.work.op_class;
    if (work.op_class == own) c.names.insert(s.signature.op_type);
    c.dtypes.insert(s.signature.dtype);
    // NCHW BatchNorm's bytes as the per-channel bound stretches them (the cost model applies the
    // curve to the same), so one curve fits 64-channel shapes and 512-channel ones.
    // A convolution's FLOPs quantised to whole waves of tiles, likewise (wave_quantised_flops).
    double bytes = work.bytes;
    double flops = work.flops;
    if (const sim::DeviceSpec* spec = sim::find_device_model(k.first);
        spec && spec->kind == sim::DeviceKind::Gpu) {
      bytes *= sim::batch_norm_stretch(
          s.signature.op_type, s.signature.input_shapes[0], spec->memory_bandwidth.bytes_per_s,
          spec->sm_count, std::nullopt, static_cast<double>(sim::dtype_size(s.signature.dtype)));
      flops = sim::wave_quantised_flops(s.signature.op_type, s.signature.input_shapes, {}, flops,
                                        spec->sm_count);
    }
    // A CPU convolution's FLOPs padded to whole vectors of the channels it writes, likewise.
    // A weight gradient alone (a first layer's backward row) vectorises over the K channels it
    // writes, as the graph's ConvBackpropFilter is padded: counted as a full backward call, half
    // its FLOPs were padded to the image's 1 or 3 channels (16x or 5.3x on 16 lanes), and
    // ResNet-18's stem row (3 -> 64) ran "above the peak" (conv_bwd's free fit 318 GFLOP/s
    // against 234; docs/validation.md, h-cpuloop).
    if (const auto l = options.vector_lanes.find(k.first); l != options.vector_lanes.end())
      flops = work.weight_grad_only && s.signature.input_shapes.size() >= 3
                  ? sim::lane_padded_flops("ConvBackpropFilter", {}, s.signature.input_shapes[2],
                                           flops, l->second)
                  : sim::lane_padded_flops(s.signature.op_type, s.signature.input_shapes, {}, flops,
                                           l->second);
    // A CPU's bytes as its cache hierarchy stretches them (the cost model applies the same).
    const double stretch = mem != options.memory.end()
                               ? cpu_class_stretch(c, work.op_class, k.first, bytes, options)
                               : 1.0;
    auto [it, fresh] = c.index.emplace(shape_only.key(), c.t.size());
    if (fresh || mean > c.t[it->second]) {
      if (fresh) {
        c.f.emplace_back();
        c.b.emplace_back();
        c.t.emplace_back();
        c.o.emplace_back();
        c.m.emplace_back();
      }
      c.f[it->second] = flops;
      c.b[it->second] = bytes * stretch;
      c.t[it->second] = mean;
      c.o[it->second] = work.out_bytes * stretch;
      c.m[it->second] = work.matrices;
    }
  }
  return classes;
}

// Non-negative least squares on relative error, sum ((x.c - t) / t)^2 with every c >= 0, by
// enumerating the active sets (at most 5 columns: 31 small systems). Empty when none solves.
std::vector<double> nnls_relative(const std::vector<std::vector<double>>& x,
                                  const std::vector<double>& t, unsigned required = 0) {
  const std::size_t n = x.empty() ? 0 : x[0].size();
  // Columns scaled to unit magnitude so F (1e9) and the intercept's 1 keep the system conditioned.
  std::vector<double> scale(n, 0.0);
  for (std::size_t j = 0; j < n; ++j)
    for (const auto& r : x) scale[j] = std::max(scale[j], std::abs(r[j]));
  for (double& v : scale) v = v > 0 ? v : 1.0;
  std::vector<double> best;
  double best_err = -1.0;
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    if ((mask & required) != required) continue;
    std::vector<std::size_t> cols;
    for (std::size_t j = 0; j < n; ++j)
      if (mask >> j & 1u) cols.push_back(j);
    const std::size_t m = cols.size();
    std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double w = 1.0 / std::max(t[i] * t[i], 1e-24);
      for (std::size_t r = 0; r < m; ++r) {
        const double xr = x[i][cols[r]] / scale[cols[r]];
        for (std::size_t q = 0; q < m; ++q) a[r][q] += w * xr * x[i][cols[q]] / scale[cols[q]];
        a[r][m] += w * xr * t[i];
      }
    }
    bool ok = true;
    for (std::size_t q = 0; q < m && ok; ++q) {
      std::size_t piv = q;
      for (std::size_t r = q + 1; r < m; ++r)
        if (std::abs(a[r][q]) > std::abs(a[piv][q])) piv = r;
      ok = std::abs(a[piv][q]) > 1e-300;
      if (!ok) break;
      std::swap(a[q], a[piv]);
      for (std::size_t r = 0; r < m; ++r)
        if (r != q) {
          const double f = a[r][q] / a[q][q];
          for (std::size_t k = q; k <= m; ++k) a[r][k] -= f * a[q][k];
        }
    }
    if (!ok) continue;
    std::vector<double> c(n, 0.0);
    for (std::size_t q = 0; q < m; ++q) c[cols[q]] = a[q][m] / a[q][q] / scale[cols[q]];
    if (std::any_of(c.begin(), c.end(), [](double v) { return v < 0; })) continue;
    double err = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      double p = 0;
      for (std::size_t j = 0; j < n; ++j) p += c[j] * x[i][j];
      err += (p - t[i]) * (p - t[i]) / std::max(t[i] * t[i], 1e-24);
    }
    if (best_err < 0 || err < best_err - 1e-15) {
      best_err = err;
      best = c;
    }
  }
  return best;
}

// A CPU GEMM (OpenBLAS under torch): t = a + F/R_f + B/R_b + B_out/R_out + (matrices - 1) x c,
// fitted on the rig's grid of shapes. Small K pays the output and packing terms per few FLOPs
// (a 2048x16x256 mm ran at 42 GFLOP/s, a 512x512x512 one at 78 here), and each matrix of a
// batched GEMM is its own BLAS call (~5 us at 64x16x64). `skip` is a held-back point (or npos).
// A catalog CPU's peak bounds R_f as a GPU's bounds its classes (fit_op_class): where the free fit
// claims more, the fit is redone with the FLOP term's coefficient held at or above 1 / peak.
sim::OpClassModel fit_cpu_gemm(const ClassData& c, std::size_t skip, const RateBounds& bounds) {
  std::vector<std::vector<double>> x;
  std::vector<double> t;
  sim::OpClassModel m;
  for (std::size_t i = 0; i < c.t.size(); ++i) {
    if (i == skip) continue;
    x.push_back({1.0, c.f[i], c.b[i], c.o[i], std::max(c.m[i] - 1.0, 0.0)});
    t.push_back(c.t[i]);
    m.max_flops = std::max(m.max_flops, c.f[i]);
    m.max_bytes = std::max(m.max_bytes, c.b[i]);
  }
  m.samples = static_cast<int>(t.size());
  // A compute class keeps its FLOP term: under load the best fit of one rig's GEMMs (2026-12-02,
  // load 9) dropped it and priced every GEMM on bytes, the encoder's at half their time. So do
  // the classes whose time is per-element arithmetic, not bytes: softmax and log-softmax (an exp
  // or a log per element, 1.4-2.7 ns an element here where a streaming add takes 0.3) and dropout
  // (a scalar Bernoulli draw per element, torch 1.13's bernoulli_ without MKL: 10-17 ns an
  // element). Fitted on bytes alone, the softmax curve (CV 59 %) priced the encoder's [32,64,64]
  // softmax at 45 us for 123 us measured: its rows' bytes sit in L2, where bytes are cheap.
  const unsigned flops_column = 1u << 1;
  const bool compute = c.op_class == "gemm" || c.op_class == "conv" || c.op_class == "conv_bwd" ||
                       c.op_class == "softmax" || c.op_class == "dropout";
  const unsigned required = compute ? flops_column : 0u;
  std::vector<double> k = nnls_relative(x, t, required);
  if (k.size() != 5) return m;
  const double lo_f = bounds.max_flop_rate > 0 ? 1.0 / bounds.max_flop_rate : 0.0;
  if (k[1] > 0 && k[1] < lo_f) {
    // t - F / peak = a + F x k' + ...: k' >= 0 keeps the rate at or under the peak.
    std::vector<double> rest = t;
    std::size_t j = 0;
    for (std::size_t i = 0; i < c.t.size(); ++i)
      if (i != skip) rest[j++] -= lo_f * c.f[i];
    const std::vector<double> free = k;
    k = nnls_relative(x, rest);
    if (k.size() != 5) return m;
    k[1] += lo_f;
    m.clamped = "flop_rate held at the " + bounds.what + " peak " +
                rate_text(bounds.max_flop_rate, "FLOP/s") +
                " (unconstrained fit: " + rate_text(1.0 / free[1], "FLOP/s") + ")";
  }
  m.intercept_s = k[0];
  m.flop_rate = k[1] > 0 ? 1.0 / k[1] : 0.0;
  m.byte_rate = k[2] > 0 ? 1.0 / k[2] : 0.0;
  m.out_byte_rate = k[3] > 0 ? 1.0 / k[3] : 0.0;
  m.per_matrix_s = k[4];
  return m;
}

double predict_point(const sim::OpClassModel& m, const ClassData& c, std::size_t i) {
  return c.o.size() > i ? m.predict_s(c.f[i], c.b[i], c.o[i], c.m[i]) : m.predict_s(c.f[i], c.b[i]);
}

// Leave one shape out: fit on the others, predict the held-back one; the mean relative error.
double leave_one_out_error(const ClassData& c, const RateBounds& bounds) {
  double cv = 0;
  if (c.cpu_gemm) {  // the shape-aware CPU GEMM model, as fit_class fits it
    for (std::size_t h = 0; h < c.t.size(); ++h)
      cv += std::abs(predict_point(fit_cpu_gemm(c, h, bounds), c, h) - c.t[h]) / c.t[h];
    return cv / static_cast<double>(c.t.size());
  }
  for (std::size_t h = 0; h < c.t.size(); ++h) {
    std::vector<double> f, b, t;
    for (std::size_t i = 0; i < c.t.size(); ++i)
      if (i != h) {
        f.push_back(c.f[i]);
        b.push_back(c.b[i]);
        t.push_back(c.t[i]);
      }
    const sim::OpClassModel m = fit_op_class(f, b, t, bounds);
    cv += std::abs(m.predict_s(c.f[h], c.b[h]) - c.t[h]) / c.t[h];
  }
  return cv / static_cast<double>(c.t.size());
}

ClassFitReport fit_class(const std::pair<std::string, std::string>& key, const ClassData& c,
                         const FitOptions& options) {
  ClassFitReport r;
  r.device = key.first;
  r.op_class = key.second;
  r.signatures = static_cast<int>(c.t.size());
  if (const sim::DeviceSpec* spec = sim::find_device_model(key.first))
    r.bounds = class_bounds(*spec, key.second, c.dtypes, options.math);
  else if (auto p = options.cpu_peaks.find(key.first); p != options.cpu_peaks.end())
    r.bounds = p->second;
  // A CPU's GEMMs on the shape-aware model, the rest on t = a + F/R_f + B/R_b.
  r.model = c.cpu_gemm ? fit_cpu_gemm(c, static_cast<std::size_t>(-1), r.bounds)
                       : fit_op_class(c.f, c.b, c.t, r.bounds);
  r.model.sweep = c.sweep;
  double train = 0;
  for (std::size_t i = 0; i < c.t.size(); ++i)
    train += std::abs(predict_point(r.model, c, i) - c.t[i]) / c.t[i];
  r.fit_error = c.t.empty() ? 0.0 : train / static_cast<double>(c.t.size());
  if (c.t.size() >= 3) r.cv_error = leave_one_out_error(c, r.bounds);
  r.model.cv_error = r.cv_error;
  return r;
}

// The class model under every op name it prices: the names profiled, then the graph names of
// the class that have no model of their own, then the preferred graph names.
void install_class_model(const ClassFitReport& r, const ClassData& c, sim::DeviceCalibration& dc) {
  for (const std::string& n : c.names) dc.by_op_type[n] = r.model;
  if (auto it = graph_type_aliases().find(r.op_class); it != graph_type_aliases().end())
    for (const std::string& n : it->second)
      if (!dc.by_op_type.count(n)) dc.by_op_type[n] = r.model;
  if (auto it = graph_type_preferred().find(r.op_class); it != graph_type_preferred().end()) {
    // A profiled convolution_backward is one op with both gradients; graphs split it into an
    // input-gradient and a filter-gradient op, each with half its FLOPs. Each pays half the
    // fixed cost, so the pair costs what the profiled call did.
    sim::OpClassModel split = r.model;
    // Each also names all the weights (shape_term_bytes): half the profiled call's weight time.
    if (r.op_class == "conv_bwd") {
      split.intercept_s *= 0.5;
      split.out_byte_rate *= 2.0;
    }
    for (const std::string& n : it->second) dc.by_op_type[n] = split;
  }
}

}  // namespace

bool name_entry_consistent(int samples, double cv) {
  return samples >= kNameMinSamples && cv <= kNameMaxCv;
}

std::optional<double> kernel_floor_s(const Profile& p) {
  std::vector<std::int64_t> d;
  for (const TraceEvent& e : p.events)
    if (e.kind == EventKind::Kernel && e.dur_ns > 0) d.push_back(e.dur_ns);
  if (d.size() < 20) return std::nullopt;
  const std::size_t i = d.size() / 20;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(i), d.end());
  return static_cast<double>(d[i]) * 1e-9;
}

QueuedGaps queued_kernel_gaps(const Profile& p, std::int64_t margin_ns) {
  QueuedGaps out;
  std::map<std::pair<int, std::int64_t>, std::vector<const TraceEvent*>> streams;
  for (const TraceEvent& e : p.events) {
    if (!e.on_gpu()) continue;
    out.whole_us = out.whole_us && e.ts_ns % 1000 == 0 && e.dur_ns % 1000 == 0;
    streams[{e.device, e.stream}].push_back(&e);
  }
  for (auto& [key, acts] : streams) {
    // Profile::events are in start order already; stable, so ties keep it.
    std::stable_sort(acts.begin(), acts.end(),
                     [](const TraceEvent* a, const TraceEvent* b) { return a->ts_ns < b->ts_ns; });
    for (std::size_t i = 1; i < acts.size(); ++i) {
      const TraceEvent& prev = *acts[i - 1];
      const TraceEvent& next = *acts[i];
      if (next.launch < 0) continue;
      const TraceEvent& launch = p.events[static_cast<std::size_t>(next.launch)];
      if (launch.end_ns() > prev.end_ns() - margin_ns) continue;
      if (prev.kind == EventKind::Kernel && next.kind == EventKind::Kernel)
        out.ns.push_back(next.ts_ns - prev.end_ns());
    }
  }
  return out;
}

std::optional<KernelGapFit> kernel_gap_of(QueuedGaps g) {
  const std::size_t n = g.ns.size();
  if (n < kKernelGapMinPairs) return std::nullopt;
  if (g.whole_us) {
    double sum = 0.0;
    for (const std::int64_t x : g.ns) sum += static_cast<double>(x);
    const std::int64_t mean = std::llround(sum / static_cast<double>(n));
    return KernelGapFit{sim::Duration{std::max<std::int64_t>(0, mean)}, n, true};
  }
  std::nth_element(g.ns.begin(), g.ns.begin() + static_cast<std::ptrdiff_t>(n / 2), g.ns.end());
  // A median below 0 (most pairs overlapping) is no idle: none.
  return KernelGapFit{sim::Duration{std::max<std::int64_t>(0, g.ns[n / 2])}, n, false};
}

CalibrationFit fit_calibration(const std::vector<OpSample>& samples, const std::string& source,
                               const FitOptions& options) {
  CalibrationFit fit;
  fit.calibration.source = source;
  fit.samples = static_cast<int>(samples.size());
  const ClassMap classes =
      class_points(exact_signatures(samples), fit.calibration, options, fit.names);
  for (const auto& [dev, levels] : options.memory) fit.calibration.devices[dev].memory = levels;
  for (const auto& [dev, points] : options.sweep) fit.calibration.devices[dev].sweep = points;
  for (const auto& [dev, lanes] : options.vector_lanes)
    fit.calibration.devices[dev].vector_lanes = lanes;
  for (const auto& [key, c] : classes) {
    const ClassFitReport r = fit_class(key, c, options);
    fit.classes.push_back(r);
    sim::DeviceCalibration& dc = fit.calibration.devices[key.first];
    // One shape is a point, not a curve: its time says nothing about a 50x smaller or larger op
    // (ResNet-18's one batch-64 max pool, 118 us, priced the batch-8 one at 118 us instead of
    // ~2 us). Its exact entry stays; other shapes fall through to the roofline.
    if (c.t.size() < 2) continue;
    install_class_model(r, c, dc);
  }
  return fit;
}

}  // namespace placesim::calibration

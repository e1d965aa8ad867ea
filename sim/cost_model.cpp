#include "sim/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <yaml-cpp/yaml.h>

#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/kernel_gap.hpp"

namespace placesim::sim {

namespace {

Duration ceil_seconds(double s) {
  if (!(s > 0.0)) return {0};
  return Duration::from_seconds_ceil(s);
}

double op_bytes(const Op& op) {
  double b = static_cast<double>(op.bytes_read.v + op.bytes_written.v);
  if (b <= 0.0) {
    // Builders that give no kernel traffic still give output sizes: at least those are written.
    for (const TensorOut& t : op.outputs) b += static_cast<double>(t.bytes.v);
  }
  return b;
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// PyTorch's (and its ONNX exports') names, NCHW.
bool batch_norm_type(std::string_view t) {
  return t == "BatchNormalization" || t == "BatchNormalizationGrad" || t == "aten::batch_norm" ||
         t == "aten::native_batch_norm" || t == "aten::cudnn_batch_norm" ||
         t == "aten::native_batch_norm_backward" || t == "aten::cudnn_batch_norm_backward";
}

// The builders' TensorFlow-style ops: NHWC ([N, H, W, C] signatures; cuDNN's NHWC kernels spread
// N*H*W over all SMs) unless the graph says NCHW (`--graph-opt layout=nchw`: PyTorch's kernels
// on the same tensors, the channels still last in the signature).
bool fused_batch_norm_type(std::string_view t) {
  return t == "FusedBatchNorm" || t == "FusedBatchNormGrad";
}

}  // namespace

MathKind math_kind_of(std::string_view t) {
  // Forward and backward convolutions run cuDNN kernels (implicit GEMM on tensor cores where the
  // math mode allows); matmuls and the LSTM cell's two GEMMs run cuBLAS.
  if (starts_with(t, "Conv") || starts_with(t, "aten::conv") || starts_with(t, "aten::_conv") ||
      starts_with(t, "aten::cudnn_conv") || starts_with(t, "aten::mkldnn_conv") ||
      starts_with(t, "aten::miopen_conv") || starts_with(t, "aten::thnn_conv") ||
      starts_with(t, "aten::_slow_conv2d") || t == "ConvolutionBackward0")
    return MathKind::Conv;
  static constexpr std::string_view kMatmul[] = {"MatMul",
                                                 "BatchMatMul",
                                                 "Gemm",
                                                 "MatMulGrad",
                                                 "Linear",
                                                 "LSTMCell",
                                                 "LSTM",
                                                 "GRU",
                                                 "BlockLSTM",
                                                 "aten::mm",
                                                 "aten::addmm",
                                                 "aten::bmm",
                                                 "aten::baddbmm",
                                                 "aten::matmul",
                                                 "aten::linear",
                                                 "aten::addbmm",
                                                 "aten::lstm_cell",
                                                 "aten::gru_cell",
                                                 "aten::_thnn_fused_lstm_cell",
                                                 "aten::lstm"};
  for (std::string_view m : kMatmul)
    if (t == m) return MathKind::Matmul;
  return MathKind::Other;
}

std::optional<MathMode> MathMode::parse(std::string_view name) {
  if (name == "torch") return MathMode{.conv_tf32 = true, .matmul_tf32 = false};
  if (name == "tf32") return MathMode{.conv_tf32 = true, .matmul_tf32 = true};
  if (name == "f32") return MathMode{.conv_tf32 = false, .matmul_tf32 = false};
  return std::nullopt;
}

std::string MathMode::name() const {
  if (conv_tf32 && matmul_tf32) return "tf32";
  if (conv_tf32) return "torch";
  if (!matmul_tf32) return "f32";
  return "matmul-tf32";
}

namespace {

// PyTorch's own depthwise kernels (ATen's conv_depthwise2d/3d: scalar F32 FMAs on the CUDA
// cores), as a profiler names them.
bool native_depthwise_type(std::string_view t) {
  return starts_with(t, "aten::_conv_depthwise") || starts_with(t, "aten::thnn_conv_depthwise") ||
         starts_with(t, "aten::conv_depthwise");
}

// True when `w` is the weight [M, C/groups, k...] of a depthwise convolution of an input with
// `channels` channels: one input channel per group (C/groups = 1, groups = C > 1), M a multiple
// of C (PyTorch's ConvParams::is_depthwise).
bool depthwise_weight(const std::vector<std::int64_t>& w, std::int64_t channels) {
  return w.size() >= 3 && w[1] == 1 && channels > 1 && w[0] % channels == 0;
}

}  // namespace

namespace {

// Whether `has(w, C)` holds for the weight w and input channels C of one of the ONNX import's
// convolutions (NCHW, weight [M, C/groups, k...]) or their gradients, with operands in its order:
// Conv (x, w), ConvBackpropInput (dy, w) -> dx, ConvBackpropFilter (dy, x) -> dw. The builders'
// Conv2D ops (NHWC, HWIO weights) have no groups and are not looked at.
template <class Pred>
bool conv_weight_is(const Op& op, Pred has) {
  if (!op.signature || op.outputs.empty()) return false;
  const auto& in = op.signature->input_shapes;
  const auto& out = op.outputs[0].shape;
  const auto ch = [](const std::vector<std::int64_t>& s) { return s.size() >= 3 ? s[1] : 0; };
  if (in.size() < 2) return false;
  if (op.type == "Conv" && in[0].size() == in[1].size()) return has(in[1], ch(in[0]));
  if (op.type == "ConvBackpropInput" && out.size() == in[1].size()) return has(in[1], ch(out));
  if (op.type == "ConvBackpropFilter" && in[1].size() == out.size()) return has(out, ch(in[1]));
  return false;
}

// The input channels per group (C/groups, the weight's dim 1) of an ONNX-import convolution or
// its gradients; nullopt for other ops.
std::optional<std::int64_t> conv_channels_per_group(const Op& op) {
  std::optional<std::int64_t> cpg;
  conv_weight_is(op, [&](const std::vector<std::int64_t>& w, std::int64_t) {
    if (w.size() >= 3) cpg = w[1];
    return true;
  });
  return cpg;
}

// A convolution of more than one group (depthwise included): its weight has fewer input
// channels than its input.
bool grouped_conv(const Op& op) {
  return native_depthwise_type(op.type) ||
         conv_weight_is(op, [](const std::vector<std::int64_t>& w, std::int64_t channels) {
           return w.size() >= 3 && w[1] < channels;
         });
}

// Whether `op` broadcasts a per-channel tensor over a feature map or reduces a map to one
// (channelwise_time's ops, defined with it).
bool channel_map_op(const Op& op);

}  // namespace

bool depthwise_conv(const Op& op) {
  return native_depthwise_type(op.type) || conv_weight_is(op, depthwise_weight);
}

Dtype compute_dtype(std::string_view op_type, Dtype dtype, const MathMode& m) {
  if (dtype != Dtype::F32 || native_depthwise_type(op_type)) return dtype;
  const MathKind k = math_kind_of(op_type);
  if ((k == MathKind::Conv && m.conv_tf32) || (k == MathKind::Matmul && m.matmul_tf32))
    return Dtype::TF32;
  return dtype;
}

void apply_math_mode(Graph& g, const MathMode& m) {
  for (Op& op : g.ops) {
    // Undo an earlier mode first, so that applying "f32" after "torch" gives F32 again.
    if (op.dtype == Dtype::TF32 && math_kind_of(op.type) != MathKind::Other) op.dtype = Dtype::F32;
    // A depthwise convolution keeps F32 (CUDA cores) under every mode (docs/cost-model.md).
    if (!depthwise_conv(op)) op.dtype = compute_dtype(op.type, op.dtype, m);
  }
  g.metadata["math_mode"] = m.name();
}

void apply_layout(Graph& g, Layout l) {
  for (Op& op : g.ops)
    if (math_kind_of(op.type) == MathKind::Conv || batch_norm_type(op.type) ||
        fused_batch_norm_type(op.type) || channel_map_op(op))
      op.layout = l;
  g.metadata["layout"] = to_string(l);
}

std::string to_string(KernelCostModel::Source s) {
  switch (s) {
    case KernelCostModel::Source::Measured:
      return "measured";
    case KernelCostModel::Source::Exact:
      return "exact";
    case KernelCostModel::Source::Fitted:
      return "class-curve";
    case KernelCostModel::Source::Roofline:
      return "roofline";
    case KernelCostModel::Source::Storage:
      return "storage";
    case KernelCostModel::Source::View:
      return "view";
    case KernelCostModel::Source::NchwTransforms:
      return "nchw-transforms";
    case KernelCostModel::Source::MisalignedGemm:
      return "misaligned-gemm";
  }
  return "roofline";
}

std::string pricing_rule(const KernelCostModel::Estimate& e, const Op& op) {
  if (e.source == KernelCostModel::Source::Exact && op.signature &&
      op.signature->input_shapes.empty())
    return "exact-name";
  // A fused attention op priced with its in-kernel dropout (attention_dropout_s).
  if (e.attention_dropout) return to_string(e.source) + "+attention-dropout";
  return to_string(e.source);
}

bool stores_only(const Op& op) {
  // HostShape: a shape value an ONNX import folded from Shape/Size arithmetic, a Python int in
  // the PyTorch program (models/onnx_import.cpp, host_shape_arithmetic).
  static const std::set<std::string> kStorage = {"Placeholder",      "VariableV2", "Variable",
                                                 "VarHandleOp",      "Const",      "Constant",
                                                 "RunningStatistic", "HostShape"};
  return op.inputs.empty() && kStorage.count(op.type) != 0;
}

bool is_view(std::string_view type) {
  static constexpr std::string_view kViews[] = {
      "Flatten",     "FlattenGrad",   "Reshape",         "ReshapeGrad",        "Squeeze",
      "SqueezeGrad", "Unsqueeze",     "UnsqueezeGrad",   "Identity",           "View",
      "aten::view",  "aten::squeeze", "aten::unsqueeze", "aten::_unsafe_view", "Narrow"};
  return std::find(std::begin(kViews), std::end(kViews), type) != std::end(kViews);
}

double OpClassModel::predict_s(double flops, double bytes) const {
  double t = intercept_s;
  // F / (P * e(F)) with e(F) = F / (F + F_half): the efficiency cap is folded into flop_rate.
  if (flop_rate > 0.0 && flops > 0.0) t += (flops + half_flops) / flop_rate;
  if (byte_rate > 0.0 && bytes > 0.0) t += bytes / byte_rate;
  return std::max(t, 0.0);
}

double OpClassModel::predict_s(double flops, double bytes, double out_bytes,
                               double matrices) const {
  double t = predict_s(flops, bytes);
  if (out_byte_rate > 0.0 && out_bytes > 0.0) t += out_bytes / out_byte_rate;
  if (per_matrix_s > 0.0 && matrices > 1.0) t += (matrices - 1.0) * per_matrix_s;
  return std::max(t, 0.0);
}

double memory_level_rate(const std::vector<MemoryLevel>& m, double working_set) {
  for (const MemoryLevel& l : m)
    if (l.bytes <= 0.0 || working_set <= l.bytes) return l.byte_s;
  return m.empty() ? 0.0 : m.back().byte_s;
}

double memory_stretch(const std::vector<MemoryLevel>& m, double working_set) {
  double fastest = 0.0;
  for (const MemoryLevel& l : m) fastest = std::max(fastest, l.byte_s);
  const double r = memory_level_rate(m, working_set);
  return r > 0.0 && fastest > r ? fastest / r : 1.0;
}

double sweep_rate(const std::vector<MemoryLevel>& sweep, double working_set) {
  if (sweep.empty()) return 0.0;
  if (working_set <= sweep.front().bytes) return sweep.front().byte_s;
  for (std::size_t i = 1; i < sweep.size(); ++i) {
    const MemoryLevel& a = sweep[i - 1];
    const MemoryLevel& b = sweep[i];
    if (working_set <= b.bytes) {
      const double f = std::log(working_set / a.bytes) / std::log(b.bytes / a.bytes);
      return a.byte_s + f * (b.byte_s - a.byte_s);
    }
  }
  return sweep.back().byte_s;
}

namespace {

double dram_rate(const std::vector<MemoryLevel>& levels) {
  for (const MemoryLevel& l : levels)
    if (l.bytes <= 0.0) return l.byte_s;
  return levels.empty() ? 0.0 : levels.back().byte_s;
}

}  // namespace

double cpu_byte_rate(const std::vector<MemoryLevel>& levels, const std::vector<MemoryLevel>& sweep,
                     double working_set, ByteSource source) {
  if (source == ByteSource::Dram) return dram_rate(levels);
  if (source == ByteSource::Sweep && !sweep.empty()) return sweep_rate(sweep, working_set);
  return memory_level_rate(levels, working_set);
}

double cpu_byte_stretch(const std::vector<MemoryLevel>& levels,
                        const std::vector<MemoryLevel>& sweep, double working_set,
                        ByteSource source) {
  if (source == ByteSource::Levels || (source == ByteSource::Sweep && sweep.empty()))
    return memory_stretch(levels, working_set);
  double fastest = 0.0;
  for (const auto* v : {&levels, &sweep})
    for (const MemoryLevel& l : *v) fastest = std::max(fastest, l.byte_s);
  const double r = cpu_byte_rate(levels, sweep, working_set, source);
  return r > 0.0 && fastest > r ? fastest / r : 1.0;
}

bool reads_saved_activation(std::string_view op_type) {
  return op_type == "ReluGrad" || op_type == "aten::threshold_backward";
}

namespace {

// Batch normalisation with batch statistics on a GPU, NCHW (cuDNN's bn_fw_tr / bn_bw kernels).
// Bytes: the forward reads its input twice (statistics, then normalise) and the backward reads
// grad-output and input twice (two reductions, then the input gradient): the graph's one read
// per input becomes two. Bandwidth: each channel is reduced by one thread block (the kernels'
// grid is C x 1 x 1 in both traces below), so C channels reach at most C x the rate of one block.
// A block streams the lesser of two rates:
// - what it keeps in flight over the memory latency (Little's law: 1024 threads x 16 B = 16 KiB
//   per ~750 ns = 21.8 GB/s forward; the backward, two tensors per element, ~10 KiB, 13.65 GB/s).
//   Measured on the H200 (ResNet-18, batch 64): forward 20.9, 20.4 and 22.0 GB/s per channel
//   (64 at 112x112, 64 at 56x56, 128 at 28x28); backward 13.8, 13.5 and 11.8.
// - a fixed share of its SM's slice of the DRAM bandwidth (bandwidth / SMs). Measured on the
//   A100-SXM4-40GB (A100-PG509-200, 1555 GB/s / 108 SMs = 14.4 GB/s per SM; ResNet-50, batch 32,
//   the 2-rank DDP trace): forward 12.5, 12.1 and 12.9 GB/s per channel at the same three shapes
//   (0.87 of the slice), backward 10.0 and 9.7 at 64 channels (0.685). The H200's slice
//   (4.8 TB/s / 132 = 36.4 GB/s) leaves its blocks at the latency bound.
// Counted as above (two reads and one write forward; two reads of x and dy and one write of dx
// backward); 256 and more channels run at the device's bandwidth on both.
// - The ceiling is in elements, not bytes (since 2026-12-05, session 31, h-nchw): a thread keeps
//   the same number of elements in flight whatever their type (the kernels are templated on it:
//   `bn_fw_tr_1C11_kernel_NCHW<float, ...>` and `<__half, ...>` launch the same C x 1 x 1 grids),
//   so an f16/bf16 block keeps half the bytes in flight and streams half the bytes per second:
//   the ceilings above scale by the element size over kBatchNormCeilingElementBytes (4, the F32
//   traces they were measured on). No constant is fitted. Checked (analysis only, held out) on
//   the H200 ResNet-50 NCHW traces, AMP b128 against FP32 b64 (the same bytes at every call): at
//   64 channels the f16 backward took 1.97-1.98x the F32 one (0.5 predicted) and the forward
//   2.57-2.60x; at 1024 channels and more, both at the bandwidth, about 1x.
//   The SM-share bound stays in bytes (it is the SM's slice of the DRAM bandwidth).
constexpr double kMemoryRoundTrip = 750e-9;            // the memory latency of Little's law above
constexpr double kBatchNormCeilingElementBytes = 4.0;  // F32, the traces' element size
constexpr double kBlockBytesPerSecond = 16384.0 / kMemoryRoundTrip;
constexpr double kBlockBytesPerSecondBwd = 10240.0 / kMemoryRoundTrip;
constexpr double kSmShare = 0.87;
constexpr double kSmShareBwd = 0.685;

// The channels of a batch norm of this type and layout that runs NCHW's one block per channel;
// nullopt for other ops, NHWC ones (cuDNN's channels-last kernels: cudnn_nhwc_batch_norm) and
// shapes that are not 4-D. The PyTorch names of a profile carry no layout and keep it.
std::optional<double> nchw_batch_norm_channels(std::string_view type,
                                               const std::vector<std::int64_t>& input0,
                                               std::optional<Layout> layout) {
  if (input0.size() != 4) return std::nullopt;
  double channels = 0;
  if (batch_norm_type(type) && layout != Layout::Nhwc)
    channels = static_cast<double>(input0[1]);
  else if (fused_batch_norm_type(type) && layout == Layout::Nchw)
    channels = static_cast<double>(input0[3]);
  if (!(channels > 0)) return std::nullopt;
  return channels;
}

// The most C channels of an NCHW batch norm of this type stream (B/s) on a GPU of `bw` B/s and
// `sm_count` SMs; nullopt for other ops and shapes.
std::optional<double> batch_norm_cap(std::string_view type, const std::vector<std::int64_t>& input0,
                                     std::optional<Layout> layout, double bw, int sm_count,
                                     double elem_bytes) {
  const auto channels = nchw_batch_norm_channels(type, input0, layout);
  if (!channels) return std::nullopt;
  const bool backward =
      type.find("Grad") != std::string::npos || type.find("backward") != std::string::npos;
  return *channels * batch_norm_channel_rate(backward, bw, sm_count, elem_bytes);
}

// Whether PyTorch runs this 4-D batch norm (its ONNX or aten name) through cuDNN's channels-last
// kernels: in training with an f16 input and f32 weights (AMP) or f32 throughout, and a
// channels-last input, _batch_norm_impl_index / _select_batch_norm_backend
// (aten/src/ATen/native/Normalization.cpp) take cuDNN, and cudnn_batch_norm
// (aten/src/ATen/native/cudnn/BatchNorm.cpp) calls cudnnBatchNormalizationForwardTrainingEx /
// BackwardEx in CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode with the tensor's NHWC strides (every
// training call at pytorch/pytorch@015d4cad; channels-last ones in later versions'
// getCudnnBatchNormMode, NCHW going to CUDNN_BATCHNORM_SPATIAL). On the H200 (torch 2.11, cuDNN 9)
// that is `batchnorm_fwtr_nhwc_semiPersist` / `batchnorm_bwtr_nhwc_semiPersist`: a grid over the N
// x H x W rows, each thread a vector of channels, the per-channel sums combined across blocks, so
// no block per channel bounds it. What it keeps on chip between its passes is a small part of a
// training activation (ResNet-50's 64 x 112 x 112 at batch 256 is 411 MB against the H200's
// ~60 MB of registers and shared memory), so it reads its input twice (the backward x and dy)
// as the NCHW kernels do: measured, 2.4-3.7 TB/s forward and 2.8-3.2 backward counted so (two
// reads and a write; four and a write), 0.5-0.77 of the 4.8 TB/s, at 64 to 2048 channels
// (h200_resnet50_amp_nhwc_b256_train.json.gz, `tools/cnn_trace_report.py TRACE bn`).
//
// A builders' FusedBatchNorm ([N, H, W, C]) takes these kernels too when the graph states
// `layout=nhwc` (PyTorch's channels_last, as the ONNX graphs' layout=nhwc does): at one read, the
// rule before, the built-in resnet50 graph's batch norms added 28.94 us an image against the H200
// NHWC traces' 52.42 (0.55x; docs/validation.md, "The built-in graph's FusedBatchNorm"). With no
// layout stated it stays the TensorFlow/MXNet op the builders model, one read: MXNet's own NHWC
// batch-norm kernels (the MLPerf rows' fused BN-ReLU-add) were not measured, and TensorFlow's NHWC
// FusedBatchNormV3 reaches cuDNN's NHWC kernels only with TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT
// set, default off (fast_nhwc_batch_norm, tensorflow/core/kernels/fused_batch_norm_op.cc).
bool cudnn_nhwc_batch_norm(const Op& op) {
  return (batch_norm_type(op.type) || fused_batch_norm_type(op.type)) &&
         op.layout == Layout::Nhwc && op.signature && !op.signature->input_shapes.empty() &&
         op.signature->input_shapes[0].size() == 4;
}

// The channels of a batch norm cuDNN runs channels last (either naming), the C x dtype bytes of
// its pixel row.
std::int64_t nhwc_batch_norm_row_bytes(const Op& op) {
  const auto& x = op.signature->input_shapes[0];
  return (fused_batch_norm_type(op.type) ? x[3] : x[1]) * dtype_size(op.dtype);
}

// The rate of cuDNN's channels-last BatchNorm kernels on a pixel row (C elements) that is not a
// whole number of 128-byte lines, as a fraction of their rate on one that is. The kernels read
// 64 channels a pass (16 threads x 4 elements per pixel: the template's 16 and 4 in the traces'
// `batchnorm_fwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 5, 4, ...>`); with rows of
// C x 2 bytes an odd multiple of 64 every other pixel's 128 bytes straddle two lines. Measured on
// the H200 DenseNet-121 AMP NHWC b256 trace, whose channel counts step by 32: each 32-aligned
// count against its two 64-aligned neighbours at the same size, forward and backward, median
// 0.784 over the 18 at 28 x 28 and 56 x 56 (0.73-0.85; 0.93 and 0.97 at 14 x 14 and 7 x 7, where
// a fixed cost per call dominates). Less-aligned rows (16, 24, 40, 144 channels: the depthwise
// networks') were not measured and take it too, as the least they lose.
constexpr double kNhwcBatchNormMisalignedRate = 0.784;

// The fraction of the bandwidth cuDNN's channels-last BatchNorm kernels stream at on Hopper,
// counted in their two-pass bytes (batch_norm_traffic): the H200 ResNet-50 AMP NHWC traces at
// batch 64, 128 and 256 (tools/batch_scaling.py, the norm class as a line in the batch) add
// 52.43 us an image where memory_eff_max's 0.80 priced 46.31, i.e. 0.80 x 46.31 / 52.43 = 0.707;
// per call (`tools/cnn_trace_report.py TRACE bn`, b256) 3.2-3.7 TB/s at 56 x 56 and larger,
// 2.4-2.9 at 28 x 28 and below, of 4.8. Other generations keep memory_eff_max (not measured).
constexpr double kHopperNhwcBatchNormEff = 0.707;

// {bytes moved, bandwidth cap} of a GPU batch-norm op that reads its input twice: NCHW's one
// block per channel (cap: batch_norm_cap), or cuDNN's channels-last kernels (no cap beyond the
// device's: 0; a row not a whole number of 128-byte lines moves its bytes as
// 1 / kNhwcBatchNormMisalignedRate as many); nullopt otherwise.
std::optional<std::pair<double, double>> batch_norm_traffic(const Op& op, double bytes,
                                                            const DeviceSpec& spec) {
  if (!op.signature || op.signature->input_shapes.empty()) return std::nullopt;
  const double two_pass = bytes + static_cast<double>(op.bytes_read.v);
  if (cudnn_nhwc_batch_norm(op)) {
    const std::int64_t row = nhwc_batch_norm_row_bytes(op);
    return std::make_pair(row % 128 == 0 ? two_pass : two_pass / kNhwcBatchNormMisalignedRate, 0.0);
  }
  const auto cap = batch_norm_cap(op.type, op.signature->input_shapes[0], op.layout,
                                  spec.memory_bandwidth.bytes_per_s, spec.sm_count,
                                  static_cast<double>(dtype_size(op.dtype)));
  if (!cap) return std::nullopt;
  return std::make_pair(two_pass, *cap);
}

double elements(const std::vector<std::int64_t>& shape) {
  double n = 1;
  for (std::int64_t d : shape) n *= static_cast<double>(std::max<std::int64_t>(d, 0));
  return n;
}

// PyTorch's LayerNorm kernels (aten/src/ATen/native/cuda/layer_norm_kernel.cu, pytorch/pytorch main
// as of 2026: launch_vectorized_layer_norm_kernel, LayerNormBackwardKernelImplInternal,
// LaunchGammaBetaBackwardCUDAKernel). The forward and the input gradient run one block of
// num_threads() = 128 threads per row: a row of 768 bf16 is 192 four-element loads, fewer than
// two per thread, so a block is latency-bound, not bandwidth-bound (Welford over the row, a
// block reduction through shared memory with __syncthreads, then a second pass that normalises
// and writes). A wave of rows (sm_count x resident blocks) costs one block's latency on top of
// the bytes. Per-wave latency from the H200 kernel rig's 32768-row cases
// (tests/data/calibration/h200_kernels_2026-12-04.json.gz, kernel times; 15.5 waves each) after
// the bytes at 0.8 x 4.8 TB/s: forward 2.89 us (768 columns) and 2.93 (1024): 2.9; input
// gradient 1.20 and 1.00: 1.1. The 2048- and 8192-row cases and the GPT-2 step are checks.
constexpr double kLayerNormFwdWaveLatency = 2.9e-6;
constexpr double kLayerNormBwdWaveLatency = 1.1e-6;
constexpr double kLayerNormThreadsPerBlock = 128.0;
// GammaBetaBackwardCUDAKernelTemplate<T, T_ACC, 32, 32, 256>: blocks.x = ceil(N / 32), blocks.y = 1
// unless M > 64 * 1024 and N / 32 < sm_count / 2 (then M is split too and a .sum(0) follows).
constexpr double kGammaBetaColumns = 32.0;
constexpr double kGammaBetaSplitRows = 64.0 * 1024.0;

// A LayerNorm op on an NVIDIA GPU whose first output's shape is known (the builders' LayerNorm /
// LayerNormGrad, ONNX LayerNormalization, a trace's aten op): {backward, rows, columns, element
// bytes}, the last dimension normalised. nullopt otherwise.
struct LayerNormShape {
  bool backward = false;
  double rows = 0, cols = 0, esize = 0;
};
std::optional<LayerNormShape> layer_norm_shape(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || spec.arch.vendor != GpuArch::Vendor::Nvidia ||
      op.outputs.empty() || op.outputs[0].shape.size() < 2)
    return std::nullopt;
  const std::string_view t = op.type;
  const bool fwd = t == "LayerNorm" || t == "LayerNormalization" || t == "aten::layer_norm" ||
                   t == "aten::native_layer_norm";
  const bool bwd = t == "LayerNormGrad" || t == "LayerNormalizationGrad" ||
                   t == "aten::native_layer_norm_backward";
  if (!fwd && !bwd) return std::nullopt;
  const auto& shape = op.outputs[0].shape;
  const double cols = static_cast<double>(shape.back());
  const double rows = elements(shape) / std::max(cols, 1.0);
  if (!(rows > 0) || !(cols > 0)) return std::nullopt;
  return LayerNormShape{bwd, rows, cols, static_cast<double>(dtype_size(op.outputs[0].dtype))};
}

// The vocabulary cross-entropy as PyTorch runs it (F.cross_entropy = log_softmax + nll_loss;
// aten/src/ATen/native/cuda/SoftMax.cu and LossNLL.cu). A row wider than 1024 elements (or 4 KiB)
// leaves the persistent warp softmax for cunn_SoftMaxForward / cunn_SoftMaxBackward: one block per
// row (1024 threads forward, 512 backward; the H200 traces' grids are [rows] and registers allow
// threads_per_sm / block blocks per SM). The forward walks its row three times (max, sum of exp,
// then read and write), the backward reads the gradient twice (its sum, then with the output) and
// writes once: four passes of the row each. A wave of rows pays a block latency plus its rows'
// passes at a multiple of the SMs' DRAM share (the forward's re-reads come from L2: 2.37x; the
// backward's wave of 528 rows does not fit: 0.89x). nll_loss runs one block each way (grid [1]):
// a fixed latency. Before the backward, nll_loss_backward zeroes the [rows, V] gradient (a fill
// at the memory rate). Constants from the H200 kernel rig's 2048-row cases only
// (tests/data/calibration/h200_kernels_2026-12-04.json.gz, kernel times; 8 and 4 waves): forward
// 9.37 us + 2.37x, backward 0.86 us + 0.89x (least squares over vocab 30522, 50257, 50304, each
// within 0.5 %); nll forward 17.9 us and backward 9.4 us (their means). The 8192-row cases and
// the GPT-2 step are checks. docs/cost-model.md, "Vocabulary cross-entropy".
constexpr double kSoftmaxFwdWaveLatency = 9.37e-6;
constexpr double kSoftmaxBwdWaveLatency = 0.86e-6;
constexpr double kSoftmaxFwdSliceMultiple = 2.37;
constexpr double kSoftmaxBwdSliceMultiple = 0.89;
constexpr double kSoftmaxFwdThreads = 1024.0;
constexpr double kSoftmaxBwdThreads = 512.0;
constexpr double kSoftmaxRowPasses = 4.0;
constexpr double kNllForwardLatency = 17.9e-6;
constexpr double kNllBackwardLatency = 9.4e-6;

// A sparse softmax cross-entropy (the builders' SparseSoftmaxCrossEntropyWithLogits and its
// gradient) on an NVIDIA GPU whose logits [rows, V] take PyTorch's block-per-row softmax:
// {backward, rows, V, element bytes}; nullopt otherwise (a 1000-class head stays on the roofline).
struct XentShape {
  bool backward = false;
  double rows = 0, cols = 0, esize = 0;
};
std::optional<XentShape> vocab_xent_shape(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || spec.arch.vendor != GpuArch::Vendor::Nvidia) return {};
  const bool fwd = op.type == "SparseSoftmaxCrossEntropyWithLogits";
  const bool bwd = op.type == "SparseSoftmaxCrossEntropyWithLogitsGrad";
  if (!fwd && !bwd) return std::nullopt;
  for (const TensorOut& o : op.outputs) {
    if (o.shape.size() < 2) continue;
    const double cols = static_cast<double>(o.shape.back());
    const double rows = elements(o.shape) / std::max(cols, 1.0);
    const double esize = static_cast<double>(dtype_size(o.dtype));
    if (!(rows > 0) || !(cols > 1024.0 || cols * esize > 4096.0)) return std::nullopt;
    return XentShape{bwd, rows, cols, esize};
  }
  return std::nullopt;
}

// PyTorch's reduce_kernel summing a bias gradient over its leading dimensions ([M, N] -> [N], N
// contiguous; aten/src/ATen/native/cuda/Reduce.cuh): 32 x 4 blocks of 128 outputs each, four
// threads along M, and for long M the rows split over up to 128 blocks per output with a second,
// global pass (semaphore, last block reads the partials). Every such kernel measured on an H200
// took 5.6-7.9 us beyond its bytes at the memory rate, whatever its size: ResNet-50's fc bias
// ([256, 1000], no global pass) 7.4, GPT-2 batch 1's [1024, 768] 7.9 and [1024, 3072] 5.6 (16
// blocks per output). Their mean, 7.0 us, is paid once per kernel on top of the bytes. Measured
// in h200_resnet50_amp_nhwc_b256_train.json.gz and
// h200_gpt2-124m_sdpa_bf16_b1_train_shapes.json.gz; GPT-2 batch 8's [8192, N] (128 and 88 blocks
// per output: 13.9 and 13.4 us beyond the bytes) are checks, and miss the global pass's growth with
// blocks per output. M below 256: not measured.
constexpr double kBiasGradReduceLatency = 7.0e-6;
constexpr double kBiasGradMinRows = 256.0;

// Rows M of a bias gradient the rule above prices (BiasAddGrad on an NVIDIA GPU, input [..., N]);
// nullopt otherwise.
std::optional<double> bias_grad_rows(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || spec.arch.vendor != GpuArch::Vendor::Nvidia ||
      op.type != "BiasAddGrad" || op.outputs.empty() || op.outputs[0].shape.empty())
    return std::nullopt;
  const double n = elements(op.outputs[0].shape);
  const double in = static_cast<double>(op.bytes_read.v);
  const double esize = static_cast<double>(dtype_size(op.outputs[0].dtype));
  if (!(n > 0) || !(esize > 0)) return std::nullopt;
  const double rows = in / (n * esize);
  if (!(rows >= kBiasGradMinRows)) return std::nullopt;
  return rows;
}

// PyTorch's dense embedding gradient on an NVIDIA GPU (embedding_dense_backward_cuda,
// aten/src/ATen/native/cuda/Embedding.cu; EmbeddingBackwardKernel.cu). nn.Embedding's gradient is
// a dense [V, E] tensor: at::zeros fills it (a vectorised fill at the streaming rate), then
// - at most 3072 indices: embedding_backward_feature_kernel, grid ceil(E / 32) blocks of 32 x 32
//   threads; each block walks every index in chunks of 32 (blockDim.y): the chunk's gradient rows
//   into shared memory, __syncthreads, then a leader warp per target row reads, adds and writes
//   grad_weight. Two dependent memory round trips a chunk, whatever E: ceil(N / 32) x 2 x 750 ns
//   (kMemoryRoundTrip, the BatchNorm rule's memory latency; not fitted here).
// - more: arange, cub::radix_sort_pairs of the indices (no bit count passed: 64-bit keys, 8
//   one-sweep passes of 8 bits, plus histogram and scan), unique_by_key, an exclusive sum, four
//   small segment kernels and ~10 memsets: 29 small kernels, one or two blocks each, latency-bound:
//   82.1 us per call in the H200 GPT-2 124M batch-8 step
//   (h200_gpt2-124m_sdpa_bf16_b8_train.json.gz, 8192 indices, three calls 82.0-82.3 us), plus the
//   passes' bytes (key and value, read and written: 32 B a key a pass) at the streaming rate. Then
//   compute_grad_weight and sum_and_scatter, each launched over N x E threads (grid ceil(N x E /
//   block) whatever the number of distinct rows), one scalar load and one scalar store a thread:
//   element accesses at the SMs' rate of PyTorch's non-vectorised kernels
//   (kBroadcastElementsPerSmSecond, measured on other kernels). The 54 held-out cases of the H200
//   kernel rig set nothing here (tools/kernel_heldout.py; docs/validation.md, "Held-out rig run,
//   2026-12-04 evening").
constexpr double kEmbeddingFeatureMaxIndices = 3072.0;
constexpr double kEmbeddingFeatureChunk = 32.0;
constexpr double kEmbeddingSortPathLatency = 82.1e-6;
constexpr double kEmbeddingSortPasses = 8.0;
constexpr double kEmbeddingSortBytesPerKeyPass = 32.0;

// {indices, table rows, columns, element bytes} of a dense embedding gradient on an NVIDIA GPU:
// the builders' GatherGrad whose signature carries the table (models/builder.cpp: [[N..., E],
// [N...], [V, E]]) or an ET's aten::embedding_backward / aten::embedding_dense_backward (inputs
// [N..., E], [N...]; output [V, E]); nullopt otherwise.
struct EmbeddingGradShape {
  double indices = 0, rows = 0, cols = 0, esize = 0;
};
std::optional<EmbeddingGradShape> embedding_grad_shape(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || spec.arch.vendor != GpuArch::Vendor::Nvidia ||
      !op.signature || op.signature->input_shapes.size() < 2 || op.outputs.empty())
    return std::nullopt;
  const auto& in = op.signature->input_shapes;
  std::vector<std::int64_t> table;
  if (op.type == "GatherGrad" && in.size() >= 3)
    table = in[2];
  else if (op.type == "aten::embedding_dense_backward" || op.type == "aten::embedding_backward")
    table = op.outputs[0].shape;
  if (table.size() != 2 || in[0].empty() || in[0].back() != table[1]) return std::nullopt;
  const double n = elements(in[1]);
  const double esize = static_cast<double>(dtype_size(op.outputs[0].dtype));
  if (!(n > 0) || !(table[0] > 0) || !(table[1] > 0) || !(esize > 0)) return std::nullopt;
  return EmbeddingGradShape{n, static_cast<double>(table[0]), static_cast<double>(table[1]), esize};
}

// Bytes an ET's aten::embedding moves on a GPU (vectorized_gather_kernel / index_select): the rows
// it writes, read once, and its indices, not the table its inputs name ([V, E], [N...] -> [N...,
// E]; the H200 kernel rig: [50257, 768] bf16 at 8192 indices in 8.8 us, where the 77 MB table alone
// takes 18). The gpt builder's Gather says so in its bytes (models/builder.cpp). nullopt for other
// ops.
std::optional<double> aten_embedding_bytes(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || op.type != "aten::embedding" || !op.signature ||
      op.signature->input_shapes.size() < 2 || op.outputs.empty())
    return std::nullopt;
  const auto& table = op.signature->input_shapes[0];
  const auto& out = op.outputs[0];
  if (table.size() != 2 || out.shape.empty() || out.shape.back() != table[1]) return std::nullopt;
  // 8-byte indices (torch's LongTensor ids).
  return 2.0 * static_cast<double>(out.bytes.v) + 8.0 * elements(op.signature->input_shapes[1]);
}

// Resident threads per SM (CUDA C Programming Guide, "Technical Specifications per Compute
// Capability"): 1024 on 7.5, 1536 on 8.6 / 8.7 / 8.9, 2048 on 7.0, 8.0 and 9.0.
int threads_per_sm(const GpuArch& a) {
  if (a.nvidia(7, 5)) return 1024;
  if (a.major == 8 && a.minor >= 6) return 1536;
  return 2048;
}

// Max pooling as PyTorch trains it (NCHW or not: only element counts matter). The forward also
// writes the int64 index of each output's maximum; the backward (max_pool_backward_nchw) visits
// each input element once and reads grad-output and index of every window that covers it, then
// writes the input gradient. Windows per input element: a graph's MaxPoolGrad (the ONNX importer's
// and the builders') carries its forward's FLOPs, output elements x kernel area, so FLOPs / input
// elements is the mean count exactly (ResNet's 3x3/2 over 112 -> 56: 2.25; VGG's 2x2/2: 1, no
// window overlaps another); an op without FLOPs (a trace's aten op: torch records no kernel size)
// takes the kernel as one wider than the stride, k = s + 1, ((k/s)^2: 2.25 at s = 2). Measured on
// the H200 (ResNet-18, batch 64, 64x64x112x112): 204 us forward, 572 us backward, where one pass
// over the graph's bytes gives 67 and 134 us. nullopt for other ops.
std::optional<double> max_pool_bytes(const Op& op, double bytes) {
  const double esize = static_cast<double>(dtype_size(op.dtype));
  if ((op.type == "MaxPool" || op.type == "aten::max_pool2d_with_indices") && !op.outputs.empty())
    return bytes + static_cast<double>(op.outputs[0].bytes.v) / esize * 8.0;
  if ((op.type == "MaxPoolGrad" || op.type == "aten::max_pool2d_with_indices_backward") &&
      op.signature && op.signature->input_shapes.size() >= 2) {
    const double out = elements(op.signature->input_shapes[0]);
    const double in = elements(op.signature->input_shapes[1]);
    if (!(out > 0) || !(in >= out)) return std::nullopt;
    const double s = std::sqrt(in / out);  // the stride (square windows)
    const double covering =
        op.type == "MaxPoolGrad" && op.flops.v > 0 ? op.flops.v / in : (s + 1) / s * ((s + 1) / s);
    const double windows = std::max(1.0, covering);
    return in * windows * (esize + 8.0) + in * esize;
  }
  return std::nullopt;
}

// The thread-block tiles (rows x columns of the GEMM output) the implicit-GEMM convolution
// kernels of the H200 ResNet-18 traces use (sm80/sm90 xmma "tilesize64x32x64", "64x64x32",
// "64x128x32", "128x64x32", CUTLASS 128x128 and 256x128); both orientations are tried.
constexpr std::array<std::pair<double, double>, 5> kTiles = {
    {{64, 32}, {64, 64}, {128, 64}, {128, 128}, {256, 128}}};

// FLOPs one GEMM of an M x N output and `flops` FLOPs occupies a device of `sms` SMs for.
double quantised(double m, double n, double flops, double sms) {
  if (!(m >= 1) || !(n >= 1) || !(flops > 0)) return flops;
  const double k = flops / (2.0 * m * n);  // the reduction each tile streams
  double best = 0.0;
  for (const auto& [a, b] : kTiles)
    for (const auto& [tm, tn] : {std::pair{a, b}, std::pair{b, a}}) {
      const double tiles = std::ceil(m / tm) * std::ceil(n / tn);
      const double f = std::ceil(tiles / sms) * sms * 2.0 * tm * tn * k;
      if (best == 0.0 || f < best) best = f;
    }
  return std::max(flops, best);
}

double product(const std::vector<std::int64_t>& s, std::size_t from) {
  double n = 1;
  for (std::size_t i = from; i < s.size(); ++i)
    n *= static_cast<double>(std::max<std::int64_t>(s[i], 0));
  return n;
}

bool contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

// A matmul's output bytes and its number of matrices (the product of the output's dimensions
// before the last two when every operand is batched: attention's [batch, heads, seq, seq] is
// batch x heads GEMMs), for the
// CPU GEMM model's per-output-byte and per-matrix terms (OpClassModel::predict_s).
double gemm_out_bytes(const Op& op) {
  double b = 0.0;
  for (const TensorOut& t : op.outputs) b += static_cast<double>(t.bytes.v);
  return b;
}

// The bytes of a CPU curve's per-shape byte term (OpClassModel::out_byte_rate): a GEMM's output,
// a convolution's weights. oneDNN under torch 1.13 reorders the weights into its blocked layout
// on every training call: ResNet-18's 512-channel 3x3 layers (9.4 MB of weights, 4 pixels) ran
// at a fifth of the FLOP rate of 64-channel ones. An input-gradient op's weights are its second
// input, a filter-gradient op's its output.
double shape_term_bytes(const Op& op) {
  if (math_kind_of(op.type) != MathKind::Conv) return gemm_out_bytes(op);
  if (op.type.find("Filter") != std::string::npos) return gemm_out_bytes(op);
  if (!op.signature || op.signature->input_shapes.size() < 2) return 0.0;
  double n = 1.0;
  for (std::int64_t d : op.signature->input_shapes[1])
    n *= static_cast<double>(std::max<std::int64_t>(d, 0));
  return n * static_cast<double>(dtype_size(op.dtype));
}

double gemm_matrices(const Op& op) {
  if (op.outputs.empty() || op.outputs[0].shape.size() < 3) return 1.0;
  // A BatchNorm's N x C planes: a CPU kernel loops over them (ResNet-18's 512-channel 2x2
  // BatchNorm backward took 0.7 ms for 16 K elements), the CPU norm curves' per-slice term.
  if (op.type == "BatchNormalization" || op.type == "BatchNormalizationGrad" ||
      op.type == "FusedBatchNorm" || op.type == "FusedBatchNormGrad") {
    const auto& s = op.outputs[0].shape;
    return static_cast<double>(std::max<std::int64_t>(s[0], 1)) *
           static_cast<double>(std::max<std::int64_t>(s[1], 1));
  }
  // [batch, seq, d] x [d, m] is one GEMM of batch x seq rows (torch folds it): a 2-D operand
  // (a weight, or a gradient with respect to one) means one matrix.
  if (op.signature)
    for (const auto& in : op.signature->input_shapes)
      if (in.size() < 3) return 1.0;
  const auto& s = op.outputs[0].shape;
  double n = 1.0;
  for (std::size_t i = 0; i + 2 < s.size(); ++i)
    n *= static_cast<double>(std::max<std::int64_t>(s[i], 1));
  return n;
}

// Channel-wise kernels (squeeze-and-excitation, bias adds, global pooling) stream a bounded
// number of elements per SM, whatever their size: PyTorch runs a broadcast through its
// non-vectorised elementwise_kernel<128, 2> (two scalar loads per thread, index arithmetic per
// element) and a reduction to [N, C] through reduce_kernel, so the elements each SM keeps in
// flight over the memory latency (Little's law) set the rate, not the DRAM bandwidth, and an
// f16 tensor takes as long as an f32 one. Measured per SM:
// - broadcast: an A100-SXM4-40GB (108 SMs, AlexNet's conv bias add_ [1,C,1,1] over [N,C,H,W],
//   in place: one read and one write per element) 24.8 M elements in 187 us and 8.3 M in 66 us,
//   2.46 and 2.33 G element accesses/s per SM, where the vectorised ReLU on the same tensors
//   runs 1.29x faster; the H200 (132 SMs, ResNet-18 b64: the global pool's gradient, 1.6 M
//   written in 5.28 us) 2.3 G/s per SM. kBroadcastElementsPerSmSecond = 2.4e9.
// - reduction: the same H200 trace's global average pool ([64,512,7,7] -> [64,512]), 1.6 M
//   elements in 9.89 us: 1.23 G/s per SM (launch and tail included).
constexpr double kBroadcastElementsPerSmSecond = 2.4e9;
constexpr double kReduceElementsPerSmSecond = 1.23e9;
// Channels-last on Hopper (layout nhwc, apply_layout): the H200 ResNet-50 AMP NHWC b256 step
// (h200_resnet50_amp_nhwc_b256_train.json.gz, torch 2.11; a fitting trace, not held out), its
// global pool over [256, 2048, 7, 7] f16. The mean (reduce_kernel<128, 4>: H and W are outer
// dimensions of an NHWC map, the kernel vectorises along C) reads 25.7 M elements in 15.5 us, 3.3
// TB/s: the memory rate, no element bound (the NCHW constant above prices it at 161 us). The
// gradient's broadcast multiply (elementwise_kernel<128, 4>, MulFunctor, [256, 2048, 1, 1] into
// the map) 26.2 M elements in 45.9 us: 4.3 G/s per SM (83 us at the NCHW constant). Other
// generations were not timed channels-last and keep the NCHW constants.
constexpr double kBroadcastNhwcElementsPerSmSecondHopper = 4.3e9;

// A full 2-D transpose ([a, b] -> [b, a], both > 1; PyTorch's `x.t().contiguous()`, an ONNX
// Transpose of a matrix): ATen's direct copy through the non-vectorised elementwise_kernel<128, 4>
// with a strided operand, one scalar load and one scalar store an element, so the SMs' element
// rate bounds it like a broadcast (kBroadcastElementsPerSmSecond, two accesses an element), not
// the bytes: bf16 and f32 take the same time per element. The H200 kernel rig's held-out copies
// (bf16 [1024, n] -> [n, 1024], n = 64 ... 256 Ki; tools/kernel_heldout.py) ran 0.52-0.63 TB/s;
// the H100 row of "Non-vectorised elementwise kernels" (f32 [32256, 1536] transposed, 0.99 TB/s)
// is the same 124 G elements/s. A head permute ([B*S, H*D] -> [B, H, S, D]) keeps rows of D
// contiguous and is not one. A permute of equal rank whose output's innermost axis is not its
// input's ([B, S, H, D] -> [B, H, D, S], the `gpt` graph's K^T copy before torch.matmul's bmm)
// reads its innermost axis strided like a 2-D transpose: the H200's eager GPT-2 trace runs it at
// this rate (39.7 us at [8, 12, 64, 1024] bf16; models/gpt_model.cpp). docs/cost-model.md,
// "Non-vectorised elementwise kernels".
bool full_transpose(const Op& op) {
  if (op.type != "Transpose" || !op.signature || op.signature->input_shapes.size() != 1 ||
      op.outputs.size() != 1)
    return false;
  const auto& in = op.signature->input_shapes[0];
  const auto& out = op.outputs[0].shape;
  if (in.size() == 2 && out.size() == 2)
    return in[0] > 1 && in[1] > 1 && out[0] == in[1] && out[1] == in[0];
  return in.size() > 2 && out.size() == in.size() && elements(in) == elements(out) &&
         in.back() > 1 && out.back() > 1 && in.back() != out.back();
}

// Whether `small` is one value per channel of the NCHW feature map `big` ([N or 1, C, 1, 1] or
// [N, C]) that has more than one spatial element.
bool per_channel_of(const std::vector<std::int64_t>& small, const std::vector<std::int64_t>& big) {
  if (big.size() < 3 || small.size() < 2 || small[1] != big[1] || elements(small) <= 1 ||
      !(product(big, 2) > 1))
    return false;
  if (small.size() == 2) return small[0] == big[0];
  return small.size() == big.size() && (small[0] == big[0] || small[0] == 1) &&
         !(product(small, 2) > 1);
}

// The squeeze-and-excitation scale and its gradient, global pooling and its gradient, bias adds:
// an op with an input that is one value per channel of its output or the other way round.
bool channel_map_op(const Op& op) {
  if (!op.signature || op.outputs.empty()) return false;
  const auto& out = op.outputs[0].shape;
  for (const auto& in : op.signature->input_shapes)
    if (per_channel_of(out, in) || per_channel_of(in, out)) return true;
  return false;
}

// A channel-wise GPU kernel's least time (seconds) on a device of `sm_count` SMs: an op that
// broadcasts a per-channel tensor ([N or 1, C, 1, 1] or [N, C]) over an NCHW feature map
// [N, C, H, W] or reduces such a map to one, given its type, its inputs' and its first output's
// shapes: the elements of its inputs and output / (sm_count x elements per SM per second). 0 for
// other ops, convolutions, matmuls, batch norms, max pooling, unknown shapes or sm_count <= 0,
// and for a channels-last reduction on Hopper (`layout`, `hopper`: it streams at the memory rate).
double channelwise_time(std::string_view type, const std::vector<std::vector<std::int64_t>>& inputs,
                        const std::vector<std::int64_t>& output, int sm_count,
                        std::optional<Layout> layout, bool hopper) {
  // A look-up's indices ([B, S] into a [B, S, E] output: an ET's aten::embedding) have a
  // per-channel tensor's shape but are no broadcast: it gathers rows (aten_embedding_bytes).
  if (sm_count <= 0 || output.empty() || math_kind_of(type) != MathKind::Other ||
      batch_norm_type(type) || contains(type, "MaxPool") || contains(type, "max_pool") ||
      contains(type, "embedding") || contains(type, "Gather"))
    return 0.0;
  double n = elements(output);
  bool reduce = false;
  bool broadcast = false;
  for (const auto& in : inputs) {
    n += elements(in);
    reduce = reduce || per_channel_of(output, in);
    broadcast = broadcast || per_channel_of(in, output);
  }
  if (!reduce && !broadcast) return 0.0;
  // Channels-last on Hopper (measured there only; other generations keep the NCHW constants).
  const bool nhwc_hopper = hopper && layout == Layout::Nhwc;
  if (reduce && nhwc_hopper) return 0.0;
  const double rate = reduce        ? kReduceElementsPerSmSecond
                      : nhwc_hopper ? kBroadcastNhwcElementsPerSmSecondHopper
                                    : kBroadcastElementsPerSmSecond;
  return n / (rate * static_cast<double>(sm_count));
}

}  // namespace

double wave_quantised_flops(std::string_view type,
                            const std::vector<std::vector<std::int64_t>>& inputs,
                            const std::vector<std::int64_t>& output, double flops, int sm_count) {
  if (sm_count <= 0 || !(flops > 0) || math_kind_of(type) != MathKind::Conv) return flops;
  const double sms = sm_count;
  if (!output.empty() && output.size() >= 3) {
    // A graph op: its output is the GEMM's M x N. ONNX/PyTorch NCHW: y [N,K,P,Q] and dx
    // [N,C,H,W] have their columns in dim 1, dw [K,C,R,S] its rows in dim 0; the builders' NHWC
    // (Conv2D*: [N,P,Q,K], [N,H,W,C], HWIO [R,S,C,K]) have the columns last.
    // The weight gradient's reduction (N x P x Q) is split across thread blocks whenever its
    // few tiles would leave SMs idle (cuDNN's split-K wgrad: the traces' ReduceSplitK and
    // reduce_wgrad kernels), so it loses no wave.
    if (contains(type, "Filter")) return flops;
    const double all = product(output, 0);
    double n = 0;
    if (starts_with(type, "Conv2D"))
      n = static_cast<double>(output.back());
    else if (contains(type, "Filter"))
      n = all / std::max<double>(1.0, static_cast<double>(output[0]));
    else
      n = static_cast<double>(output[1]);
    return n > 0 ? quantised(all / n, n, flops, sms) : flops;
  }
  // A profiled aten op: convolution(x [N,C,H,W], w [K,C,R,S]) is one GEMM of N*P*Q x K over
  // C*R*S; convolution_backward(dy, x, w) the input gradient (N*H*W x C over K*R*S) and the
  // weight gradient (split-K, as above), half the FLOPs each.
  const bool backward = contains(type, "backward") || contains(type, "Backward");
  if (!backward && inputs.size() >= 2 && inputs[1].size() >= 3) {
    const double k = static_cast<double>(inputs[1][0]);
    const double red = product(inputs[1], 1);
    if (!(k > 0) || !(red > 0)) return flops;
    return quantised(flops / (2.0 * k * red), k, flops, sms);
  }
  if (backward && inputs.size() >= 3 && inputs[1].size() >= 3 && inputs[2].size() >= 3) {
    const auto& x = inputs[1];
    const auto& w = inputs[2];
    const double c = static_cast<double>(x[1]);
    const double k = static_cast<double>(w[0]);
    if (!(c > 0) || !(k > 0)) return flops;
    // An image input (<= 4 channels) is a first layer's: PyTorch computes no input gradient for
    // it (ResNet's conv1), so the call is the weight gradient alone.
    if (c <= 4) return flops;
    return quantised(product(x, 0) / c, c, flops / 2, sms) + flops / 2;  // dw: split-K
  }
  return flops;
}

double wave_quantised_flops(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || op.outputs.empty()) return op.flops.v;
  static const std::vector<std::vector<std::int64_t>> kNone;
  return wave_quantised_flops(op.type, op.signature ? op.signature->input_shapes : kNone,
                              op.outputs[0].shape, op.flops.v, spec.sm_count);
}

double lane_padded_flops(std::string_view type,
                         const std::vector<std::vector<std::int64_t>>& inputs,
                         const std::vector<std::int64_t>& output, double flops, int lanes) {
  if (lanes <= 1 || !(flops > 0) || math_kind_of(type) != MathKind::Conv) return flops;
  const double v = lanes;
  // The factor by which whole vectors of `lanes` channels exceed `ch` channels (1 when unknown).
  const auto pad = [v](std::int64_t ch) {
    return ch > 0 ? std::ceil(static_cast<double>(ch) / v) * v / static_cast<double>(ch) : 1.0;
  };
  if (!output.empty()) {
    // A graph op: the channels of the tensor it writes. ONNX/PyTorch NCHW: y [N,K,P,Q] and dx
    // [N,C,H,W] in dim 1, dw [K,C,R,S] in dim 0; the builders' NHWC / HWIO (Conv2D*) last.
    if (output.size() < 3) return flops;
    if (starts_with(type, "Conv2D")) return flops * pad(output.back());
    if (type == "Conv" || type == "ConvBackpropInput") return flops * pad(output[1]);
    if (type == "ConvBackpropFilter") return flops * pad(output[0]);
    return flops;  // ConvTranspose and its gradients: not modelled
  }
  // A profiled aten op: convolution(x [N,C,H,W], w [K,C,R,S]) writes K channels;
  // convolution_backward(dy, x, w) the input gradient's C and the weight gradient's K.
  const bool backward = type.find("backward") != std::string_view::npos;
  if (!backward && inputs.size() >= 2 && inputs[1].size() >= 3) return flops * pad(inputs[1][0]);
  if (backward && inputs.size() >= 3 && inputs[1].size() >= 3 && inputs[2].size() >= 3)
    return flops / 2 * pad(inputs[1][1]) + flops / 2 * pad(inputs[2][0]);
  return flops;
}

double lane_padded_flops(const Op& op, int lanes) {
  if (op.outputs.empty()) return op.flops.v;
  static const std::vector<std::vector<std::int64_t>> kNone;
  return lane_padded_flops(op.type, op.signature ? op.signature->input_shapes : kNone,
                           op.outputs[0].shape, op.flops.v, lanes);
}

namespace {

// GEMM curves (docs/cost-model.md, "GEMM curves"). Constants fitted (least mean relative error,
// t = t0 + F_q / (P x e_max)) on 3 of every 4 rows of a measured table; the 4th rows are held
// back and checked by tests/sim/cost_model_test.cpp (GemmCurve*).
// Hopper TF32 (sm_90, H100 SXM): OpenXLA's measured matmul table (kernel time, CUPTI), 375 shapes
// b in {1,2,4} x M, N, K in {256 ... 4096}, F32 dots run on TF32 tensor cores
// (tests/data/calibration/xla_sm90_matmul.csv): held rows 15.5 %; 0.82 of the peak at 4096^3 but
// 0.4-0.65 at mid sizes. The same table's BF16 column (0.80, 6.5 us; held rows 7.0 %) prices
// Hopper f16/bf16, and microsoft/vidur's A100 Llama-2-7B projection GEMMs (fp16; 0.73, 8 us; held
// QKV rows 9.0 %) price A100 f16/bf16, applied since session 14 (docs/cost-model.md).
constexpr GemmCurve kHopperTf32{
    0.63, 9.5e-6, "OpenXLA matmul_interpolator_data.h sm_90 F32 as TF32 (fit: 0.63, 9.5 us)"};
// F32 on CUDA cores (no TF32, or TF32 not allowed) on V100 and A100: cuBLAS SGEMM reaches 14.0 of
// 15.7 TFLOP/s on a V100 at M = 2048 (lablup/mlxcel#1654) and 18.88 of 19.49 on an A100 PCIe at
// 5120x4096x4096 (Yinghan-Li/YHs_Sample#4): the lower, 0.89, with the roofline's half-FLOPs term.
constexpr GemmCurve kCudaCoreF32{0.89, std::nullopt,
                                 "cuBLAS SGEMM on V100 14.0/15.7 TFLOP/s (lablup/mlxcel#1654)"};
constexpr GemmCurve kHopperHalf{
    0.80, 6.5e-6, "OpenXLA matmul_interpolator_data.h sm_90 BF16 (fit: 0.80, 6.5 us)"};
constexpr GemmCurve kA100Half{
    0.73, 8e-6, "microsoft/vidur A100 Llama-2-7B projection GEMMs fp16 (fit: 0.73, 8 us)"};
// A part whose f16/bf16 GEMMs were measured on it alone (the catalog's half_gemm_e_max: GA102's
// RTX 3090 and RTX A6000, whose one chip runs at a different clock and power limit on each part,
// so no generation-wide curve; AD102's RTX 4090 and power-capped RTX 6000 Ada): that fraction of
// its F16 peak, at most 1 (the most a curve gives: the RTX 3090's 1.065 is its GeForce clock above
// the rated boost), with the roofline's half-FLOPs term for small GEMMs (docs/cost-model.md, "GEMM
// curves").
constexpr double kMaxCurveEff = 1.0;
// Hopper under sustained load (docs/cost-model.md, "Sustained clock"). XLA's table times single
// kernels in bursts (5 runs, median), and its 0.80 is the burst ceiling stas00's MAMF search
// also finds on an H100 SXM (0.803). Under a training step's back-to-back GEMMs a 700 W Hopper is
// power-capped below the 1830 MHz its 989 TFLOP/s is specified at (bursts reach 1980 MHz): on an
// H200 five --search auto runs gave a sustained (MSMF) 743-746 against a burst (MAMF) 843-850
// TFLOP/s (stas00/ml-engineering compute/accelerator/benchmarks), 0.88; tile-ai/TileOPs#1588
// finds 1830 MHz not sustainable at 700 W under full load. A100's 312 TFLOP/s is specified at its
// top clock (1410 MHz), and its curve was checked on training throughput (MPT +1..+7 %): none.
constexpr double kHopperSustained = 0.88;
// FlashAttention-2 (the `gpt` graph's `attention=flash` ops) on Hopper issues Ampere's mma.sync
// (no wgmma, no TMA) and reaches about a third of the peak: "up to 335 TFLOP/s" forward and
// backward on an H100 (Dao 2023, arXiv 2307.08691, section 4.1), "only 35% utilization on the
// H100" (Shah et al. 2024, FlashAttention-3, arXiv 2407.08608). On A100 it reaches 50-73 % and
// keeps compute_eff_max. docs/cost-model.md, "Fused attention ops".
constexpr double kHopperFlashAttention2 = 0.35;
// On Hopper PyTorch runs cuDNN's fused SDPA (check_prefer_cudnn_attention: sm90 with cuDNN newer
// than 9.15, torch 2.11), whose rate grows with the head dimension: on an H100 SXM5 its forward
// reaches 335 / 373 / 395 TFLOP/s at head dim 64 and 497 / 574 / 617 at head dim 128 (sequence
// 512 / 1k / 2k), 1.48-1.56 times, and 308 / 391 / 450 at head dim 256 (Shah et al. 2024,
// FlashAttention-3, arXiv 2407.08608, Figure 5: the bar labels of the panels with FlashAttention-2
// beside cuDNN; their masking was not checked, only the ratio between head dims is used). The 0.35
// above is the head-dim-64 rate (GPT-2's and BERT's); the model scales it by 1.5 at head dim 128,
// linearly from 64 to 128 and back to 1 at 256 (kCudnnHeadDim128), forward and backward alike (the
// backward's ratio is not in the paper; the H200 kernel rig's head-dim-128 backward is the check).
// docs/cost-model.md, "Fused attention ops".
constexpr double kCudnnHeadDim128 = 1.5;
// cuDNN's sm90 SDPA at head dim 64 is not flat in the sequence: the same Figure 5 (H100 SXM5,
// forward, no causal mask, batch x sequence 16k, 2048 / 64 heads) labels 335 / 373 / 395 / 408 /
// 412 / 413 TFLOP/s at sequence 512 / 1k / 2k / 4k / 8k / 16k. With n = s / 128 query tiles a head
// (one work unit each) and n key tiles a unit, R x n / (n + x) fits all six within 1 % at
// R = 416 TFLOP/s and x = 0.97: each unit costs about one more key tile than it computes (loading
// Q, writing O and the logsumexp, the pipeline's first and last tiles unhidden). The model takes
// the 16k bar as the rate of the tiles themselves (413 / 989.5, kCudnnSdpaTileRate) and one tile a
// unit (kCudnnSdpaUnitTiles, attention_tile_factor), forward and backward alike (the backward's
// Figure 6 bars, 266 ... 433 TFLOP/s, with its two memory passes taken out, give x near 1 at
// sequence 512 too). Only Hopper (cuDNN's kernels); other parts keep their flat rates. Not fitted
// to the H200 rig's cases nor the ViT trace, which check it (docs/validation.md, "Attention at
// short sequences").
constexpr double kCudnnSdpaTileRate = 0.42;
constexpr double kCudnnSdpaUnitTiles = 1.0;
double cudnn_head_dim_factor(double d) {
  if (!(d > 64.0)) return 1.0;
  if (d <= 128.0) return 1.0 + (kCudnnHeadDim128 - 1.0) * (d - 64.0) / 64.0;
  return std::max(1.0, kCudnnHeadDim128 - (kCudnnHeadDim128 - 1.0) * (d - 128.0) / 128.0);
}

// Dropout inside a fused attention kernel (an op's `dropout` > 0: the `gpt` graph's
// FlashAttention ops, an ET's fused SDPA ops). The kernel draws its keep-mask with Philox for
// every score it keeps, in the forward and again in the backward, which regenerates the mask
// rather than reading it (FlashAttention-2, csrc/flash_attn/src/dropout.h: one Philox4x32 call per
// 16 scores, 8 bits each, compared and masked on the CUDA cores; cuDNN's fused SDPA takes a Philox
// seed and offset, at::cuda::philox::unpack_cudnn). That is integer work per kept query-key pair,
// independent of the head dimension and of bytes: priced as thread-instructions per kept pair at
// the GPU's issue rate (issue_rate), on top of the kernel's time without dropout. Measured on the
// H200 kernel rig (tools/kernel_rig.py, torch 2.11 / cuDNN 9.19; tools/sdpa_kernels.py, the
// kernels' own times) at batch 8, 12 heads, head_dim 64, causal, sequence 1024 only (50.4 M kept
// pairs a call), dropout 0 against 0.1: cuDNN's sm90 fprop 46.7 -> 102.8 us, bprop 122.5 -> 151.9;
// FlashAttention-2 forced 77.2 -> 92.8 (its 128x128 tiles drop to 128x64), 172.1 -> 202.4. On
// sequences 512 and 2048 (held out) the with-dropout kernels come out within 10 % (docs/
// validation.md, "Dropout inside fused attention"). Hopper and later run cuDNN's kernel (PyTorch's
// check_prefer_cudnn_attention, sm90/sm100 with cuDNN > 9.15; torch 2.11); older parts
// FlashAttention-2. Another generation is assumed to issue the same instructions per pair.
struct AttentionDropoutCost {
  double fwd, bwd;  // thread-instructions per kept query-key pair
};
constexpr AttentionDropoutCost kCudnnSdpaDropout{37.4, 19.6};
constexpr AttentionDropoutCost kFlashAttention2Dropout{10.4, 20.1};

// Whether `type` is a fused attention kernel (nullopt: not one), and whether it is a backward.
std::optional<bool> fused_attention_backward(std::string_view type) {
  if (type == "FlashAttention" || type == "aten::scaled_dot_product_attention" ||
      type == "aten::_scaled_dot_product_flash_attention" ||
      type == "aten::_scaled_dot_product_efficient_attention" ||
      type == "aten::_scaled_dot_product_cudnn_attention" ||
      type == "aten::_flash_attention_forward" || type == "aten::_efficient_attention_forward" ||
      type == "aten::_cudnn_attention_forward")
    return false;
  if (type == "FlashAttentionGrad" ||
      type == "aten::_scaled_dot_product_flash_attention_backward" ||
      type == "aten::_scaled_dot_product_efficient_attention_backward" ||
      type == "aten::_scaled_dot_product_cudnn_attention_backward" ||
      type == "aten::_flash_attention_backward" || type == "aten::_efficient_attention_backward" ||
      type == "aten::_cudnn_attention_backward")
    return true;
  return std::nullopt;
}

std::optional<double> issue_rate(const DeviceSpec& spec);

// Seconds the in-kernel dropout of a fused attention op adds on `spec` (0: none, or no issue
// rate known). Its kept pairs (batch x heads x pairs) come from its FLOPs: 4 x head_dim a pair
// forward (QK^T and PV), 2.5 times that backward (models/gpt_model.cpp, calibration's
// attention_flops), head_dim the last dimension of its first output (O, or dQ).
double attention_dropout_s(const Op& op, const DeviceSpec& spec) {
  if (!(op.dropout > 0.0) || spec.kind != DeviceKind::Gpu || !(op.flops.v > 0.0) ||
      op.outputs.empty() || op.outputs[0].shape.empty())
    return 0.0;
  const auto bwd = fused_attention_backward(op.type);
  const auto issue = issue_rate(spec);
  const double d = static_cast<double>(op.outputs[0].shape.back());
  if (!bwd || !issue || !(d > 0.0)) return 0.0;
  const double pairs = op.flops.v / (4.0 * d * (*bwd ? 2.5 : 1.0));
  const AttentionDropoutCost& c =
      spec.arch.major >= 9 ? kCudnnSdpaDropout : kFlashAttention2Dropout;
  return pairs * (*bwd ? c.bwd : c.fwd) / *issue;
}

// Fused attention kernels compute whole tiles. A causal call keeps s(s+1)/2 query-key pairs a
// head, but the tiles on the diagonal are computed in full and masked: with key tiles of 128
// (FlashAttention-2's forward at head dim 64 and 128 and its backward at 64,
// Flash_fwd_kernel_traits <64, 128, 128> / <128, 128, 64>; cuDNN's sm90 fprop
// `..._64x128x{64,128}_...` on the H200 kernel rig) a head computes 128^2 x n(n+1)/2 pairs, n =
// ceil(s / 128): (s + 128) / (s + 1) times the kept ones at a multiple of 128, 1.98 at s =
// 128, 1.25 at 512, 1.06 at 2048. A non-causal call computes every pair of whole tiles,
// ceil(sq / 128) x ceil(sk / 128) tiles of 128^2: ViT-B/16's 197 tokens are 2 x 2 tiles, 1.69
// times the 197^2 kept pairs (the H200 trace's cuDNN fprop and bprop kernels, 64x128x64 and
// 64x64x64 tiles, both hold 197 as 256). On Hopper each query tile (a work unit of cuDNN's kernels)
// also costs kCudnnSdpaUnitTiles more tiles. No constant is fitted. docs/cost-model.md, "Fused
// attention ops".
constexpr double kAttentionKeyTile = 128.0;

// Whether `op` runs cuDNN's fused SDPA kernels on `spec` at kCudnnSdpaTileRate: a half-precision
// fused attention on Hopper whose [b, h, s, d] output is known (without it, the flat
// kHopperFlashAttention2, FlashAttention-3's sequence-512 bar, units included).
bool cudnn_sdpa(const Op& op, const DeviceSpec& spec) {
  return spec.kind == DeviceKind::Gpu && spec.arch.hopper() &&
         (op.dtype == Dtype::F16 || op.dtype == Dtype::BF16) && fused_attention_backward(op.type) &&
         !op.outputs.empty() && op.outputs[0].shape.size() >= 3;
}

// The factor above for a fused attention op of `spec`: tile pairs computed (and the units' fixed
// tiles on Hopper) over pairs kept (1: not one, or shapes unknown). Its pairs come from its FLOPs
// (attention_dropout_s: 4 x head dim a pair, 2.5x backward), its batch x heads, sequence and head
// dimension from its first output ([b, h, s, d]: O or dQ); a call keeping fewer than 3/4 of sq^2
// pairs a head is causal (sk = sq), else it keeps sq x sk. `cudnn_units`: the op runs cuDNN's
// Hopper kernels (cudnn_sdpa), whose query tiles cost kCudnnSdpaUnitTiles more.
double attention_tile_factor(const Op& op, const DeviceSpec& spec, bool cudnn_units) {
  if (spec.kind != DeviceKind::Gpu || !(op.flops.v > 0.0) || op.outputs.empty() ||
      op.outputs[0].shape.size() < 3)
    return 1.0;
  const auto bwd = fused_attention_backward(op.type);
  if (!bwd) return 1.0;
  const auto& sh = op.outputs[0].shape;
  const double d = static_cast<double>(sh.back());
  const double sq = static_cast<double>(sh[sh.size() - 2]);
  const double heads = elements(sh) / std::max(d * sq, 1.0);
  if (!(d > 0.0) || !(sq > 0.0) || !(heads > 0.0)) return 1.0;
  const double pairs = op.flops.v / (4.0 * d * (*bwd ? 2.5 : 1.0)) / heads;
  const double nq = std::ceil(sq / kAttentionKeyTile);
  const bool causal = pairs < 0.75 * sq * sq;
  const double tiles =
      causal ? std::min(nq * (nq + 1.0) / 2.0, sq * sq / (kAttentionKeyTile * kAttentionKeyTile))
             : nq * std::ceil(pairs / sq / kAttentionKeyTile - 1e-9);
  const double unit = cudnn_units ? kCudnnSdpaUnitTiles * nq : 0.0;
  return std::max(1.0, (tiles + unit) * kAttentionKeyTile * kAttentionKeyTile / pairs);
}

// Bytes of the two memory passes around a fused attention backward (0 for other ops): both
// FlashAttention-2 (flash_bwd_launch_template.h: flash_bwd_dot_do_o_kernel, which also zeroes the
// F32 dQ accumulator, before the main kernel; flash_bwd_convert_dq_kernel after it) and cuDNN's
// sm90 SDPA (the H200 traces' cudnn::fusion::compute_dot_do_o_specialized and
// convert_dq_to_16bits) read dO and O (2 x t) and write the zeroed F32 accumulator (2 x t) first,
// then read the accumulator (2 x t) and write dQ (t): 7 x t, t = dQ's bytes (the op's first
// output). Separate kernels on the same stream: their time adds to the main kernel's.
double attention_backward_aux_bytes(const Op& op) {
  const auto bwd = fused_attention_backward(op.type);
  if (!bwd || !*bwd || op.outputs.empty()) return 0.0;
  return 7.0 * static_cast<double>(op.outputs[0].bytes.v);
}

// A recurrent cell's output is not its GEMMs' M x N: no quantisation.
bool recurrent(std::string_view t) {
  return contains(t, "LSTM") || contains(t, "lstm") || contains(t, "GRU") || contains(t, "gru");
}

// A tensor-core GEMM whose operands' leading dimensions are not multiples of 16 bytes (8 f16/bf16
// elements, 4 TF32 ones) cannot use cuBLAS's 128-bit-load kernels: since cuBLAS 11 it still runs on
// the tensor cores, but through kernels that load fewer elements at a time (`..._align1`,
// `..._align2`), "less efficiently" (NVIDIA's Matrix Multiplication Background User's Guide,
// "Tensor Core Requirements"; cuBLAS documentation, "Tensor Core Usage"; NVIDIA/cutlass#75).
// Where no such kernel was measured (TF32, see align1_rate; Volta; f16/bf16 align4; align2 on
// Turing) the compute term runs at the one measured align1/aligned pair's ratio:
// pytorch/pytorch#181718 (RTX 4090, bf16):
// `cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1` at N = 2055, 115.6 TFLOP/s, against
// 155.9 aligned at N = 2040, 0.74. docs/cost-model.md, "Misaligned GEMMs".
constexpr double kMisalignedGemmEff = 0.74;

// FLOPs per issued thread-instruction (issue_rate) of cuBLAS's one-element-load f16/bf16 kernels
// (`cutlass_75_tensorop_{bf16,f16}_s1688gemm_..._align1`, mma.sync on sm_75 and later). Their loads
// are scalar, so they run at a rate set by the SMs' instruction issue, not by the tensor cores:
// the same per-clock rate on an Ada GeForce part and on Hopper, where the aligned kernels (wgmma)
// are 7x faster. Measured, cuBLAS's own choice each time:
//   output misaligned (the forward x W^T -> [M, N] with N % 8 != 0; every dimension off):
//     RTX 4090, N = 2055 square bf16, `..._128x128_nn_align1` 115.6 TFLOP/s
//     (pytorch/pytorch#181718) / 41.3 = 2.80; H200 (torch 2.11, CUDA 13.0), GPT-2's lm_head forward
//     [8192 x 768] x [768 x 50257], `..._128x128_tn_align1` 6.625 ms, 95.5 TFLOP/s / 33.5 = 2.85.
//     Mean 2.82.
//   inputs misaligned, output aligned (the gradients dx = dy W and dW = dy^T x, dy [M, 50257]):
//     H200, same trace, `..._256x128_nn_align1` 4.528 ms (4.17) and `..._128x256_nt_align1`
//     4.311 ms (4.38). Mean 4.27.
// tests/data/calibration/h200_gpt2-124m_sdpa_bf16_b8_train.json.gz (and its eager twin: the same
// three kernels, 15.47 ms a step). With the vocabulary padded to 50304 the same step ran 13.4 ms
// faster (h200_rig_2026-12-04_results.jsonl). docs/cost-model.md, "Misaligned GEMMs".
constexpr double kAlign1FlopPerIssueOutput = 2.82;
constexpr double kAlign1FlopPerIssueInputs = 4.27;
// The same measured on the H200 for shapes no constant came from (tools/kernel_rig.py,
// tests/data/calibration/h200_kernels_2026-12-04.jsonl and its Kineto trace; cuBLAS's choice):
//   f16/bf16 with every leading dimension even (2-element aligned, not 8): sm_80 kernels
//     `cutlass_80_tensorop_{bf16,f16}_s16816gemm_..._align2`, 4.8-7.8 FLOPs per issued instruction
//     over 12 GEMMs (N = 30522 and K = 770, both dtypes, all three roles), mean 6.13.
//   TF32 with a leading dimension not a multiple of 4: `cutlass_80_tensorop_s1688gemm_..._align1`
//     (an sm_80 kernel, the A100's too), 2.62-3.94 over 15 GEMMs (N = 50257, 30522, 32317, 4097,
//     K = 770, all roles), mean 3.32 (the aligned TF32 GEMMs ran at 6.2-11.8).
// f16/bf16 leading dimensions that are multiples of 4 but not 8 (align4) were not measured: they
// keep kMisalignedGemmEff; so does TF32 (align1_rate says why).
constexpr double kAlign2FlopPerIssue = 6.13;

// The alignment in elements cuBLAS's vectorised tensor-core kernels need for `op`'s dtype on
// `spec` (16 bytes: 8 f16/bf16, 4 TF32); 0 where no tensor core runs it (a CPU, an AMD part, a
// GPU before Volta, F32 on the CUDA cores, TF32 on a part without TF32 units).
int tensor_core_alignment(Dtype d, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || spec.arch.vendor != GpuArch::Vendor::Nvidia ||
      spec.arch.major < 7)
    return 0;
  if (d == Dtype::F16 || d == Dtype::BF16) return 8;
  if (d == Dtype::TF32 && spec.peak_flops.count(Dtype::TF32) != 0) return 4;
  return 0;
}

enum class Misalignment { None, InputsOnly, Output };

Misalignment gemm_misalignment(const Op& op, const DeviceSpec& spec);

// The largest power of two (at most 8) that divides every leading dimension of matmul `op`'s
// output and rank >= 2 operands: the vector width, in elements, cuBLAS's kernels can load with.
int gemm_alignment_elements(const Op& op) {
  int a = 8;
  const auto fold_dim = [&a](std::int64_t d) {
    while (d > 0 && a > 1 && d % a != 0) a /= 2;
  };
  const auto fold = [&](const std::vector<std::int64_t>& s) {
    if (s.size() >= 2) fold_dim(s.back());
  };
  if (!op.outputs.empty()) fold(op.outputs[0].shape);
  if (!op.leading_dims.empty())
    for (const std::int64_t d : op.leading_dims) fold_dim(d);
  else if (op.signature)
    for (const auto& in : op.signature->input_shapes) fold(in);
  return a;
}

std::optional<double> issue_rate(const DeviceSpec& spec);

// The rate (FLOP/s) of the kernels cuBLAS runs for misaligned GEMM `op` on `spec` where they were
// measured and applied (f16/bf16 align1 on 7.5+, align2 on 8.0+); nullopt where op is aligned or
// where kMisalignedGemmEff stands (TF32, Volta, f16/bf16 align4, align2 on Turing, no issue rate).
std::optional<double> align1_rate(const Op& op, const DeviceSpec& spec) {
  const int cc = spec.arch.compute_capability();
  const Misalignment m = gemm_misalignment(op, spec);
  const auto issue = issue_rate(spec);
  if (m == Misalignment::None || !issue || cc < 75) return std::nullopt;
  // TF32 keeps kMisalignedGemmEff: the 3.32 FLOPs per issue above is what CUDA 13.0's cuBLAS ran on
  // the H200, but Lambda's H100 GNMT TF32 rows split by software stack under it (NGC 22.x rows
  // +9 ... +12 % -> -2 ... +1 %, NGC 24.03 rows -3 % -> -13 %): docs/cost-model.md.
  if (op.dtype != Dtype::F16 && op.dtype != Dtype::BF16) return std::nullopt;
  const int a = gemm_alignment_elements(op);
  if (a == 1)
    return *issue *
           (m == Misalignment::Output ? kAlign1FlopPerIssueOutput : kAlign1FlopPerIssueInputs);
  if (a == 2 && cc >= 80) return *issue * kAlign2FlopPerIssue;
  return std::nullopt;
}

// The aligned efficiency's factor for a misaligned GEMM that align1_rate does not price.
double misaligned_eff_factor(const Op& op, const DeviceSpec& spec) {
  return misaligned_gemm(op, spec) && !align1_rate(op, spec) ? kMisalignedGemmEff : 1.0;
}

Misalignment gemm_misalignment(const Op& op, const DeviceSpec& spec) {
  // A graph op's shapes are its stored (contiguous, row-major) tensors', so each operand's leading
  // dimension is its last: x [M, K] . W [N, K]^T -> y [M, N] (K, K, N), dx = dy W (N, K, K),
  // dW = dy^T x (N, K, K). The rows (batch x sequence) are never a leading dimension. A profiled
  // aten op's shapes are its views' (a transposed operand's leading dimension is its first): it is
  // judged by the leading dimensions its trace's strides gave (Op::leading_dims), else not at all;
  // nor is a shape-less op. Biases (rank 1) are the epilogue's.
  const bool aten = starts_with(op.type, "aten::");
  if (math_kind_of(op.type) != MathKind::Matmul || recurrent(op.type) || op.outputs.empty() ||
      (aten ? op.leading_dims.empty() : !op.signature))
    return Misalignment::None;
  const int align = tensor_core_alignment(op.dtype, spec);
  if (align <= 0) return Misalignment::None;
  const auto off_dim = [align](std::int64_t d) { return d > 0 && d % align != 0; };
  const auto off = [&](const std::vector<std::int64_t>& s) {
    return s.size() >= 2 && off_dim(s.back());
  };
  if (off(op.outputs[0].shape)) return Misalignment::Output;
  const bool inputs =
      !op.leading_dims.empty()
          ? std::any_of(op.leading_dims.begin(), op.leading_dims.end(), off_dim)
          : std::any_of(op.signature->input_shapes.begin(), op.signature->input_shapes.end(), off);
  return inputs ? Misalignment::InputsOnly : Misalignment::None;
}

}  // namespace

bool misaligned_gemm(const Op& op, const DeviceSpec& spec) {
  return gemm_misalignment(op, spec) != Misalignment::None;
}

namespace {

// {b, M, N, K} of a graph matmul: its first output is the batch of M x N results (a 2-D operand
// folds the leading dimensions into M, as torch does), K = F / 2bMN. nullopt when unknown.
std::optional<std::array<double, 4>> gemm_dims(const Op& op) {
  if (op.outputs.empty() || recurrent(op.type) || !(op.flops.v > 0)) return std::nullopt;
  const auto& s = op.outputs[0].shape;
  if (s.size() < 2) return std::nullopt;
  bool folded = s.size() == 2;
  if (op.signature)
    for (const auto& in : op.signature->input_shapes) folded = folded || in.size() < 3;
  const double n = static_cast<double>(s.back());
  const double all = product(s, 0);
  const double m = folded ? all / std::max(n, 1.0) : static_cast<double>(s[s.size() - 2]);
  const double b = folded ? 1.0 : all / std::max(m * n, 1.0);
  if (!(b >= 1 && m >= 1 && n >= 1)) return std::nullopt;
  const double k = op.flops.v / (2.0 * b * m * n);
  if (!(k >= 1)) return std::nullopt;
  return std::array<double, 4>{b, m, n, k};
}

// A matmul's time on a GPU generation with a measured GEMM curve; nullopt elsewhere.
std::optional<Duration> gemm_curve_time(const Op& op, const DeviceSpec& spec,
                                        const RooflineParams& p) {
  if (!p.generation_curves || spec.kind != DeviceKind::Gpu ||
      math_kind_of(op.type) != MathKind::Matmul)
    return std::nullopt;
  const auto c = gemm_curve(spec, op.dtype);
  // Hopper's curves (TF32, f16/bf16) are all tensor-core ones: each takes the sustained clock.
  // bf16 without bf16 tensor cores: the F32 GEMM's rate times bf16_emulation_factor.
  const auto emulated = op.dtype == Dtype::BF16 ? bf16_emulation_factor(spec) : std::nullopt;
  const double peak =
      emulated ? spec.peak_for(Dtype::F32).per_s * *emulated
               : spec.peak_for(op.dtype).per_s * (spec.arch.hopper() ? kHopperSustained : 1.0);
  if (!c || !(peak > 0.0)) return std::nullopt;
  const auto d = gemm_dims(op);
  const double fq =
      d ? gemm_quantised_flops((*d)[0], (*d)[1], (*d)[2], (*d)[3], spec.sm_count) : op.flops.v;
  const double e = c->e_max * misaligned_eff_factor(op, spec);
  double t = 0.0;
  if (fq > 0.0) t = c->t0_s ? *c->t0_s + fq / (peak * e) : (fq + p.compute_half_flops) / (peak * e);
  if (const auto a1 = align1_rate(op, spec); a1 && fq > 0.0) t = std::max(t, fq / *a1);
  const double b = op_bytes(op);
  const double bw = spec.memory_bandwidth.bytes_per_s;
  if (b > 0.0 && bw > 0.0) t = std::max(t, (b + p.memory_half_bytes) / (bw * p.memory_eff_max));
  return std::max(ceil_seconds(t), p.min_kernel);
}

}  // namespace

// bf16 GEMMs on NVIDIA parts without bf16 tensor cores (compute capability < 8.0). PyTorch runs
// them: torch.cuda.is_bf16_supported() answers True there (its including_emulation=True default
// creates a bf16 tensor; torch/cuda/__init__.py since 2.3), and at::cuda::blas::gemm<BFloat16>
// calls cublasGemmEx with CUDA_R_16BF, which cuBLAS serves with CUDA-core kernels where no
// tensor core takes bf16 (mma.sync bf16 and the bf16 arithmetic instructions are sm_80's). What
// torch.mm reaches in bf16 against fp32 on the same card, the best of square sizes 1024 ... 10240
// (zzc0721/torch-performance-test-data database.md @ 07858687), on parts the catalog does not
// price, so that its own parts (T4, V100) stay held out:
//   sm_70: Tesla V100S 9.85 / 13.55 = 0.727 (torch 2.2).
//   sm_75: RTX 2080 5.14 / 9.23 = 0.557, Tesla T10 5.33 / 9.46 = 0.563 (torch 2.8); mean 0.560.
//   sm_61: Tesla P40 5.26 / 10.07 = 0.522, Tesla P4 2.82 / 4.96 = 0.569 (torch 2.8 / 2.2); mean
//          0.546, taken for Pascal's sm_60 (P100) and Kepler too (no measurement of either).
// Held out: V100 cuBLAS bf16 9.6 TFLOP/s at m = 2048 where f32 reaches 14.0 (lablup/mlxcel#1654;
// 0.686), the T4 rows 2.46 / 4.17 and 2.27 / 4.43 (0.590, 0.512). docs/cost-model.md, "bf16
// without bf16 tensor cores"; docs/validation.md has the held-out comparison.
std::optional<double> bf16_emulation_factor(const DeviceSpec& spec) {
  const GpuArch& a = spec.arch;
  if (spec.kind != DeviceKind::Gpu || a.vendor != GpuArch::Vendor::Nvidia || a.major >= 8 ||
      a.major <= 0)
    return std::nullopt;
  if (a.major == 7) return a.minor >= 5 ? (0.557 + 0.563) / 2.0 : 0.727;
  return (0.522 + 0.569) / 2.0;
}

void check_runnable(const Op& op, const DeviceSpec& spec, const std::string& device_name,
                    const std::string& where) {
  if (op.dtype != Dtype::FP8 || spec.kind != DeviceKind::Gpu ||
      math_kind_of(op.type) == MathKind::Other)
    return;
  const GpuArch& a = spec.arch;
  const bool nvidia_old = a.vendor == GpuArch::Vendor::Nvidia && a.compute_capability() < 89;
  const bool amd_old = a.vendor == GpuArch::Vendor::Amd && a.gfx.rfind("gfx94", 0) != 0 &&
                       a.gfx.rfind("gfx95", 0) != 0;
  if (!nvidia_old && !amd_old) return;
  throw InputError(
      where, "op \"" + op.name + "\"",
      "an fp8 " + op.type +
          " on a GPU with FP8 tensor cores (compute capability "
          "8.9 or 9.0+, or AMD MI300+: PyTorch's torch._scaled_mm refuses others), got "
          "device \"" +
          device_name + "\" (" + spec.model + ", " + to_string(a) + ")");
}

std::optional<GemmCurve> gemm_curve(const DeviceSpec& spec, Dtype dtype) {
  if (spec.kind != DeviceKind::Gpu) return std::nullopt;
  // bf16 without bf16 tensor cores: cuBLAS's CUDA-core kernels, the F32 GEMM's curve (its rate
  // times bf16_emulation_factor, gemm_curve_time); never the part's f16 tensor-core ceiling.
  if (dtype == Dtype::BF16 && bf16_emulation_factor(spec)) dtype = Dtype::F32;
  // F32 on the CUDA cores of the generations the sources measured (V100, A100: compute capability
  // 7.0 and 8.0, the catalog's `arch`); TF32 on a part without TF32 units runs as F32.
  const bool measured_sgemm = spec.arch.nvidia(7, 0) || spec.arch.nvidia(8, 0);
  if (measured_sgemm &&
      (dtype == Dtype::F32 || (dtype == Dtype::TF32 && spec.peak_flops.count(Dtype::TF32) == 0)))
    return kCudaCoreF32;
  if (spec.arch.hopper() && dtype == Dtype::TF32) return kHopperTf32;
  const bool half = dtype == Dtype::F16 || dtype == Dtype::BF16;
  if (spec.arch.hopper() && half) return kHopperHalf;
  if (spec.arch.nvidia(8, 0) && half) return kA100Half;
  if (half && spec.half_gemm_e_max && *spec.half_gemm_e_max > 0.0)
    return GemmCurve{std::min(*spec.half_gemm_e_max, kMaxCurveEff), std::nullopt,
                     spec.half_gemm_source};
  // TF32 on such a part (one with TF32 units): the same fraction of its TF32 peak. The TF32 and
  // the f16 (FP32-accumulate) paths are one tensor-core datapath at half and full rate under one
  // clock and power limit, and the same torch.mm benchmark (zzc0721/torch-performance-test-data,
  // its TF32 column, one run per card) measures the best TF32 GEMM at half the best f16 one on
  // every Ampere GA10x and Ada part it lists: RTX 4090 85.65 / 168.38 (0.51, issue #78), A40
  // 59.52 / 119.18 (0.50, #185), A10G 34.71 / 69.47 (0.50, #126), RTX 3080 32.03 / 64.10 (0.50,
  // #114), L20 58.16 / 113.26 (0.51, #107), L4 31.88 / 68.83 (0.46, #120). The A100's TF32 keeps
  // compute_eff_max (A100 PCIe 108.32 / 241.49 = 0.45 there: TF32 0.69 of 156, f16 0.77 of 312).
  // docs/cost-model.md, "GEMM curves"; docs/validation.md, "GNMT v2 on one GPU per op class".
  if (dtype == Dtype::TF32 && spec.peak_flops.count(Dtype::TF32) != 0 && spec.half_gemm_e_max &&
      *spec.half_gemm_e_max > 0.0 && !spec.arch.nvidia(8, 0))
    return GemmCurve{std::min(*spec.half_gemm_e_max, kMaxCurveEff), std::nullopt,
                     spec.half_gemm_source};
  return std::nullopt;
}

double gemm_quantised_flops(double b, double m, double n, double k, int sm_count) {
  const double flops = 2.0 * b * m * n * k;
  if (sm_count <= 0 || !(b >= 1) || !(m >= 1) || !(n >= 1) || !(k >= 1)) return flops;
  const double sms = sm_count;
  constexpr double kMinSplitK = 256;  // the shortest reduction a split-K share is given
  double best = 0.0;
  for (const auto& [x, y] : kTiles)
    for (const auto& [tm, tn] : {std::pair{x, y}, std::pair{y, x}}) {
      const double tiles = b * std::ceil(m / tm) * std::ceil(n / tn);
      // The reduction one SM streams: whole tiles per wave, or a split-K share of K.
      const double per_sm = tiles >= sms ? std::ceil(tiles / sms) * k
                                         : std::max(k * tiles / sms, std::min(k, kMinSplitK));
      const double f = sms * 2.0 * tm * tn * per_sm;
      if (best == 0.0 || f < best) best = f;
    }
  return std::max(flops, best);
}

bool streaming_elementwise(std::string_view t) {
  static constexpr std::string_view kTypes[] = {"Relu",
                                                "ReluGrad",
                                                "Add",
                                                "AddN",
                                                "aten::relu",
                                                "aten::relu_",
                                                "aten::add",
                                                "aten::add_",
                                                "aten::clamp_min",
                                                "aten::clamp_min_",
                                                "aten::threshold_backward"};
  for (std::string_view k : kTypes)
    if (t == k) return true;
  return false;
}

double memory_eff_for(std::string_view op_type, const DeviceSpec& spec, const RooflineParams& p) {
  // Vectorised ReLU, its gradient and the residual add on tensors larger than L2: A100-SXM4-40GB
  // 1335-1439 GB/s (0.86-0.925 of 1555), H200 4141-4357 GB/s (0.86-0.91 of 4800)
  // (tools/bn_channel_rates.py on the A100 ResNet-50 and H200 ResNet-18 b64 traces); a read
  // kernel on an A100 80GB at 88 % of peak (NVIDIA developer forum, "Trouble to Reach Peak
  // Bandwidth of A100", Nsight Compute agreeing). GA102 (compute capability 8.6): an RTX 3090
  // sustains 894.5 of 936.1 GB/s in a read kernel (Don-Chad/ninfer-3090#17, 2026-09-01,
  // tools/hbm_bandwidth_probe.cu: 0.956), above the A100's read kernel, so its vectorised streams
  // take the same 0.88 (no GA102 read-and-write kernel measured). AD102 (8.9, GDDR6X as GA102,
  // with a 72-96 MB L2 against GA102's 6 MB) takes it too: at 0.80 an RTX 4090 streamed ReLU and
  // the residual add slower than an RTX 3090 (0.80 x 1008 < 0.88 x 936 GB/s), while timm's
  // forward-only AMP runs of one build on both cards (torch 2.4 / CUDA 12.4,
  // huggingface/pytorch-image-models results/benchmark-infer-amp-{nchw,nhwc}-pt240-cu124-
  // rtx{3090,4090}.csv) give the RTX 4090 1.29-1.70x the RTX 3090's images/s on ResNet-50,
  // ResNeXt-50, DenseNet-121 and Inception-v3, where the model gave 1.11-1.41x
  // (docs/validation.md, h-adacnn). Not measured on other generations.
  constexpr double kStreamEff = 0.88;
  if (p.generation_curves && spec.kind == DeviceKind::Gpu &&
      (spec.arch.nvidia(8, 0) || spec.arch.nvidia(8, 6) || spec.arch.nvidia(8, 9) ||
       spec.arch.hopper()) &&
      streaming_elementwise(op_type))
    return kStreamEff;
  return p.memory_eff_max;
}

bool non_vectorised_elementwise(const Op& op) {
  // Stack: the `gpt` graph's stack of a fused attention's dQ, dK, dV, which the kernel writes in
  // [b, s, h, d] order: a cat of permuted inputs, ATen's generic CatArrayBatchedCopy (one element
  // per load, per-element offsets), not its contiguous vectorised variant.
  if (op.type == "Transpose" || op.type == "Stack") return true;
  // An operand that is a view into a larger tensor (a cat gradient's Narrow, Op::strided_operand,
  // read by a sum or an elementwise backward: models/onnx_import.cpp narrow_concat_gradients):
  // not contiguous, so the generic kernel whatever the op.
  if (op.strided_operand) return true;
  // MaskFillGrad: a causal mask's gradient, grad.masked_fill(mask, 0) (models/gpt_model.cpp), a
  // TensorIterator over the gradient and a mask broadcast over heads and rows (ATen's
  // masked_fill_kernel: gpu_kernel over (self, mask)), as its forward.
  static constexpr std::string_view kBinary[] = {"Add", "AddV2",   "Sub",         "Mul",
                                                 "Div", "RealDiv", "MaskFillGrad"};
  if (std::find(std::begin(kBinary), std::end(kBinary), op.type) == std::end(kBinary)) return false;
  if (!op.signature || op.outputs.empty()) return false;
  const auto& out = op.outputs[0].shape;
  for (const auto& in : op.signature->input_shapes)
    if (product(in, 0) > 1.0 && in != out) return true;
  return false;
}

std::optional<double> non_vectorised_eff(const Op& op, const DeviceSpec& spec,
                                         const RooflineParams& p) {
  // PyTorch vectorises an elementwise kernel (128-bit loads, vectorized_elementwise_kernel) only
  // when every operand is contiguous; a broadcast or permuted operand sends it to the generic
  // elementwise_kernel, one element per load with per-element index arithmetic, which keeps too
  // few bytes in flight to fill HBM. Measured (docs/cost-model.md, "Non-vectorised elementwise"):
  //  - Hopper: an H100 SXM's PyTorch trace (AMD-AGI/TraceLens tests/traces/h100, Wan2.1-T2V-1.3B,
  //    BinaryElementwise.csv) streams aten::mul of a bf16 [1,32256,1536] by a broadcast f32
  //    [1,32256,1] at 1.41 TB/s (median of 900 calls) and aten::add of two f32 [1,32256,1536] with
  //    one operand transposed at 1.37 TB/s (600 calls): 0.42 and 0.41 of 3.35 TB/s, where its
  //    contiguous kernels stream at 0.87-0.91 (pytorch/pytorch#145746's H100 table).
  //  - A100: the A100-SXM4-40GB ResNet-50 trace (tests/data/calibration/a100_2rank_nccl_rank0)
  //    divides a broadcast [32,2048,1,1] gradient into [32,2048,7,7] (average-pool backward,
  //    elementwise_kernel<128, 2>) in 16.2 us: 12.85 MB at 0.79 TB/s, 0.51 of 1555 GB/s.
  //  - V100 (compute capability 7.0): pytorch/pytorch#69010 (ngimel, 2021-11-29, the PyTorch of
  //    the 21.11 NGC container BERT's pre-training rows ran) times a binary op of a [1,M] row
  //    broadcast into [M,M] ("1M-MM") on a V100 at 546.8 GB/s (45 MB), 0.61 of 900 GB/s, where
  //    the same op on contiguous operands streams 798.7 GB/s (100 MB).
  //
  // What limits the generic kernel is the SMs, not the HBM: each thread keeps a few scalar loads in
  // flight and computes every operand's offset, so its rate is what the SMs sustain (Little's law,
  // as for kBroadcastElementsPerSmSecond), and a part with more HBM bandwidth per SM does not
  // stream it faster. The H200 (the H100's 132 SMs at the same 1980 MHz, 4.8 TB/s of HBM3e
  // against 3.35) shows it: GPT-2's eager attention masked_fill_ of bf16 [8,12,1024,1024] by a
  // broadcast [1024,1024] mask (tests/data/calibration/h200_gpt2-124m_eager_bf16_b8_train.json.gz,
  // elementwise_kernel<128, 4>, 24 calls a step, 277 us each) streams 403 MB at 1.45 TB/s, 0.30 of
  // its HBM, the H100 trace's 1.41 TB/s, not 0.42 of 4.8 TB/s. So each fraction is also capped at
  // the rate per SM of the part it was measured on (fraction x bandwidth / SMs): a part with the
  // same SMs and faster HBM (H200, GH200, H100 NVL; A100 80GB against the 40GB) takes the measured
  // part's rate; one with less HBM per SM keeps its fraction (no clock is in the catalog, so a
  // lower-clocked part is not scaled down).
  struct Measured {
    double eff, bandwidth, sms;  // fraction of the measured part's HBM; its bytes/s; its SMs
  };
  constexpr Measured kHopper{0.42, 3350e9, 132};  // H100 SXM5 (TraceLens Wan2.1)
  constexpr Measured kA100{0.51, 1555e9, 108};    // A100-SXM4-40GB (ResNet-50 trace)
  constexpr Measured kV100{0.61, 900e9, 80};      // V100 (pytorch/pytorch#69010)
  if (!p.generation_curves || spec.kind != DeviceKind::Gpu || !non_vectorised_elementwise(op))
    return std::nullopt;
  const Measured* m = spec.arch.hopper()       ? &kHopper
                      : spec.arch.nvidia(8, 0) ? &kA100
                      : spec.arch.nvidia(7, 0) ? &kV100
                                               : nullptr;
  if (!m) return std::nullopt;
  const double bw = spec.memory_bandwidth.bytes_per_s;
  if (spec.sm_count <= 0 || bw <= 0.0) return m->eff;
  const double per_sm = m->eff * m->bandwidth / m->sms;
  return std::min(m->eff, per_sm * static_cast<double>(spec.sm_count) / bw);
}

namespace {

// The fraction of the F32 (CUDA-core) peak cuDNN's F32 grouped convolutions run at, by input
// channels per group: linear in log2 between the measured points, clamped outside.
double grouped_conv_eff(std::int64_t channels_per_group) {
  // cuDNN's F32 grouped convolution as a fraction of the F32 (CUDA-core) peak, by input channels
  // per group (cpg). Measured: pytorch/pytorch#18631 (you74674, 2022-02-16), torch.profiler's
  // "Self CUDA time total" of 10 forward Conv2d(128, 128, 3, groups=g) on a [16, 128, 256, 256] F32
  // input (254x254 output), cudnn.benchmark on, TITAN Xp (12.15 TFLOP/s F32): groups 64..4 took
  // 274.4, 192.7, 160.4, 143.8, 141.3 ms, i.e. 2*16*128*cpg*9*254^2 FLOPs a call at 0.014, 0.041,
  // 0.098, 0.218, 0.443 of the peak for cpg 2, 4, 8, 16, 32, and groups 2 (cpg 64) 162.6 ms, 0.77.
  // The time falls little with the FLOPs: the grouped kernels cost per output, not per FMA. The
  // totals include cuDNN's algorithm search of the first call (benchmark mode, a new shape each
  // time) and the bias add, so these fractions are lower bounds. docs/cost-model.md, "Grouped
  // convolutions".
  static constexpr std::array<std::pair<double, double>, 6> kLog2CpgEff = {
      {{1.0, 0.014}, {2.0, 0.041}, {3.0, 0.098}, {4.0, 0.218}, {5.0, 0.443}, {6.0, 0.77}}};
  const double x = std::log2(static_cast<double>(std::max<std::int64_t>(channels_per_group, 1)));
  if (x <= kLog2CpgEff.front().first) return kLog2CpgEff.front().second;
  for (std::size_t i = 1; i < kLog2CpgEff.size(); ++i) {
    const auto [x1, y1] = kLog2CpgEff[i];
    if (x <= x1) {
      const auto [x0, y0] = kLog2CpgEff[i - 1];
      return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
  }
  return kLog2CpgEff.back().second;
}

// A bf16 matmul or convolution on a GPU without bf16 tensor cores (bf16_emulation_factor): priced
// as the same op in F32 at the factor times its rate. A convolution there is not cuDNN's:
// ConvParams::use_cudnn (aten/src/ATen/native/Convolution.cpp) refuses bf16 unless
// CUDAHooks::supportsBFloat16ConvolutionWithCuDNNv8() (compute capability >= 8), so ATen's
// slow_conv2d runs it as im2col + the same cuBLAS bf16 GEMM; no cuDNN NHWC transforms
// (nchw_transform_bytes). Depthwise ones keep the CUDA cores' own rule (depthwise_on_cuda_cores).
bool bf16_emulated(const Op& op, const DeviceSpec& spec) {
  return op.dtype == Dtype::BF16 && bf16_emulation_factor(spec) &&
         math_kind_of(op.type) != MathKind::Other &&
         !(math_kind_of(op.type) == MathKind::Conv && depthwise_conv(op));
}

// A channels-last 2-D f16/bf16 convolution on Hopper's tensor cores (cuDNN's sm90_xmma / CUTLASS
// implicit-GEMM kernels on an NHWC tensor: not grouped, not emulated) is two rooflines,
// max(F / (kHopperChannelsLastConv P), B / (memory_eff_max BW)), plus a fixed cost a kernel
// (kHopperConvFixedForward / kHopperConvFixedBackward), where other Hopper half convolutions (3-D)
// keep kHopperHalfConv with the sum. An NCHW 2-D one runs the same NHWC kernels between
// nchwToNhwc/nhwcToNchw transforms (nchw_transform_bytes prices those): the H200 ResNet-50 AMP
// NCHW b128 trace (h200_resnet50_amp_nchw_b128_train.json.gz, held out: checked, not fitted) names
// sm90_xmma_*_nhwckrsc_nhwc kernels between the transforms, ~9.2 ms a step against the NHWC
// step's 7.8 (docs/validation.md, issue 15, h-nchw2). Measured on the H200 ResNet-50 AMP NHWC
// traces at batch 64, 128 and 256
// (tests/data/calibration/h200_resnet50_amp_nhwc_b{64,128,256}_train.json.gz,
// tools/batch_scaling.py, docs/validation.md "ResNet-50 on the H200: what grows with the batch"):
// the forward and both gradients add 8.2 and 16.1 GFLOP an image at 464 and 502 TFLOP/s (0.47 and
// 0.51 of the 989 TFLOP/s peak) where kHopperHalfConv's sum priced 0.25; per call (44 forward calls
// of the b128 and b256 traces, stem left out) max() at 0.70 and 0.8 fits with RMS log error 0.156,
// the sum's best 0.20. TraceLens's VAE convolutions (3-D, NCHW tensors, batch 1-4) ran at
// 0.21-0.56 and keep the sum (docs/cost-model.md, "Convolutions per generation").
constexpr double kHopperChannelsLastConv = 0.70;
// The fixed part a convolution kernel adds on Hopper under that rule (seconds): the H200 ResNet-50
// AMP NHWC traces' conv class as a line in the batch (b64, b128, b256) has 257 us (forward) and
// 1069 us (both gradients) a step that do not grow with the batch: cuDNN's workspace and scale
// kernels, the weight gradients' split-K reductions, the layout transposes of the weights. Over
// ResNet-50's 53 forward and 105 gradient convolution ops: 4.8 and 10.2 us a kernel.
constexpr double kHopperConvFixedForward = 257e-6 / 53;
constexpr double kHopperConvFixedBackward = 1069e-6 / 105;

// Whether `op` takes the channels-last Hopper convolution rule above (any `layout`: NCHW ones too).
bool hopper_channels_last_conv(const Op& op, const DeviceSpec& spec, const RooflineParams& p) {
  return p.generation_curves && spec.kind == DeviceKind::Gpu && spec.arch.hopper() &&
         math_kind_of(op.type) == MathKind::Conv &&
         (op.dtype == Dtype::F16 || op.dtype == Dtype::BF16) && !bf16_emulated(op, spec) &&
         !grouped_conv(op) && op.signature && !op.signature->input_shapes.empty() &&
         op.signature->input_shapes[0].size() == 4;
}

// hopper_conv_shape_factor: two per-shape departures from kHopperChannelsLastConv's rate under
// that rule (1 elsewhere and off Hopper's channels-last 2-D f16/bf16 convolutions), measured per
// convolution call on the H200 ResNet-50 AMP NHWC fitting traces at batch 64 and 256
// (tests/data/calibration/h200_resnet50_amp_nhwc_b{64,256}_train.json.gz against `simulate
// --pricing`, tools/conv_stage_price.py; docs/validation.md, "Late-stage convolutions on the H200
// fitting traces"), as a factor on the FLOPs:
// - an image input (<= 4 channels, ResNet's conv1): cuDNN runs its image_first_layer kernel
//   class (sm90_xmma_fprop_image_first_layer_*_hmma_k6 forward, the weight gradient alone
//   backward) at kHopperImageFirstLayerConv of the peak, within 10 % at both batches;
// - a narrow GEMM: a tile of 128 rows and n < 128 columns streams (128 + n) k operands for
//   128 n k products, so at the operand feed that keeps a 128 x 128 tile at the rate its math
//   runs at 2n / (128 + n) of it (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication
//   Background", Tile Quantization / tile size: larger tiles reuse more of each operand). n is
//   the output's columns: the forward's output channels, the input gradient's input channels,
//   the weight gradient's smaller side (K or C R S). ResNet-50's 64-channel 3x3 convolutions
//   (forward and both gradients) ran at 0.70-0.72 of the rule's rate at both batches; 2 x 64 /
//   192 = 0.67. Convolutions of 128 and more channels, the late 14x14 and 7x7 stages included,
//   ran at 0.93-1.2 of it: no small-spatial (wave) loss beyond wave_quantised_flops.
// kHopperImageFirstLayerConv (fraction of the f16 peak, 989.5 TFLOP/s on the H200): ResNet-50's
// conv1 ([N, 3, 224, 224] x [64, 3, 7, 7], stride 2), its fixed cost a kernel taken off, ran at
// 0.113 (forward) and 0.115 (weight gradient) at batch 256, 0.102 and 0.098 at batch 64; the
// mean 0.107. The held-out ViT-B/16 trace's patch embedding ([192, 3, 224, 224] x
// [768, 3, 16, 16], CUTLASS s16816fprop kernels; checked, not fitted) ran at 0.036 and 0.080.
constexpr double kHopperImageFirstLayerConv = 0.107;
// An image's channels (RGB, RGBA): the input channels that select the image_first_layer class.
constexpr std::int64_t kImageChannels = 4;
// The columns of the tile the operand feed is sized for (kTiles' 128 x 128), and the narrowest
// tile side of kTiles: narrower outputs (a head writing 1-3 channels) were not timed and keep 1.
constexpr double kHopperFullTileColumns = 128.0;
constexpr double kNarrowestTileColumns = 32.0;

double hopper_conv_shape_factor(const Op& op, const DeviceSpec& spec, const RooflineParams& p) {
  if (!hopper_channels_last_conv(op, spec, p) || !op.signature ||
      op.signature->input_shapes.size() < 2 || op.outputs.empty())
    return 1.0;
  const auto& w = op.signature->input_shapes[1];
  const auto& out = op.outputs[0].shape;
  // The builders' NHWC ops (HWIO weights) and the ONNX import's NCHW ones (KCRS weights); not
  // transposed convolutions.
  const bool nhwc =
      op.type == "Conv2D" || op.type == "Conv2DBackpropInput" || op.type == "Conv2DBackpropFilter";
  const bool nchw =
      op.type == "Conv" || op.type == "ConvBackpropInput" || op.type == "ConvBackpropFilter";
  if (out.size() != 4 || w.size() != 4 || !(nhwc || nchw)) return 1.0;
  const bool filter = contains(op.type, "Filter");
  const bool input_grad = contains(op.type, "Input");
  // The convolution's input channels: the weight's (forward) or the weight gradient's.
  std::int64_t c = 0;
  if (filter)
    c = nhwc ? out[2] : out[1];
  else if (!input_grad)
    c = nhwc ? w[2] : w[1];
  if (c > 0 && c <= kImageChannels) return kHopperChannelsLastConv / kHopperImageFirstLayerConv;
  double n = 0.0;
  if (filter) {
    const double k = static_cast<double>(nhwc ? out[3] : out[0]);
    n = std::min(k, product(out, 0) / k);  // K and C R S
  } else {
    n = static_cast<double>(nhwc ? out[3] : out[1]);
  }
  if (n < kNarrowestTileColumns || n >= kHopperFullTileColumns) return 1.0;
  return (kHopperFullTileColumns + n) / (2.0 * n);
}

// A convolution's measured fraction of peak on the GPU generations whose cuDNN kernels were
// timed; nullopt elsewhere (tf32_eff_max or compute_eff_max then apply). docs/cost-model.md,
// "Convolutions per generation".
std::optional<double> conv_generation_eff(const Op& op, const DeviceSpec& spec,
                                          const RooflineParams& p, bool tf32_units) {
  if (!p.generation_curves || spec.kind != DeviceKind::Gpu ||
      math_kind_of(op.type) != MathKind::Conv)
    return std::nullopt;
  const bool emulated = bf16_emulated(op, spec);
  const bool cuda_cores =
      op.dtype == Dtype::F32 || (op.dtype == Dtype::TF32 && !tf32_units) || emulated;
  const bool volta_ampere = spec.arch.nvidia(7, 0) || spec.arch.nvidia(8, 0);
  if (grouped_conv(op)) {
    // F32 grouped convolutions on the CUDA cores: grouped_conv_eff (cuDNN's grouped kernels as a
    // function of channels per group). Depthwise ones (PyTorch's own kernel), TF32 and f16 ones
    // were not timed and keep the defaults.
    const auto cpg = conv_channels_per_group(op);
    if (!cuda_cores || !volta_ampere || depthwise_conv(op) || !cpg) return std::nullopt;
    return grouped_conv_eff(*cpg);
  }
  // TF32 on an A100 (compute capability 8.0): ResNet-50's cuDNN convolutions, NCHW, batch 32,
  // forward and both gradients with their nchwToNhwc/nhwcToNchw transforms, 18.72 ms a step on
  // the A100-SXM4-40GB trace (tests/data/calibration/a100_2rank_nccl_rank0.json.gz,
  // tools/conv_kernel_times.py) where this roofline gives that time at 0.295 of the TF32 peak.
  // The H200's ResNet-18 measured 0.207 (tf32_eff_max), which Hopper keeps.
  constexpr double kA100Tf32Conv = 0.295;
  if (tf32_units && op.dtype == Dtype::TF32 && spec.arch.nvidia(8, 0)) return kA100Tf32Conv;
  // f16/bf16 on Hopper's tensor cores: cuDNN's forward kernels (sm90_xmma implicit GEMM, CUTLASS
  // fprop) of every convolution in an H100 SXM PyTorch profile (AMD-AGI/TraceLens @ 2801c389,
  // tests/traces/h100 Wan2.1-T2V-1.3B CONV_fwd.csv: 26 call shapes, 2-D and 3-D, 0.07-130 GFLOP)
  // take 2555 us, kernel alone; this roofline (this fraction of the bf16 peak plus the memory
  // term, the half-convolution sum) gives that total at 0.38 where 0.70 gave 1539 us
  // (tests/data/calibration/h100_tracelens_wan21_bf16_conv_fwd.csv, tools/conv_rate_check.py).
  // The same profile's cuBLAS GEMMs run at 0.75-0.80 of the peak. The gradients were not in it and
  // take the forward's rate. docs/cost-model.md, "Convolutions per generation".
  constexpr double kHopperHalfConv = 0.38;
  const bool half = (op.dtype == Dtype::F16 || op.dtype == Dtype::BF16) && !emulated;
  if (hopper_channels_last_conv(op, spec, p)) return kHopperChannelsLastConv;
  if (half && spec.arch.hopper()) return kHopperHalfConv;
  // f16/bf16 on a part whose own f16 GEMMs were measured (the catalog's half_gemm_e_max: GA102's
  // RTX 3090 and RTX A6000, AD102's RTX 4090 and RTX 6000 Ada). cuDNN runs the same mma.sync
  // implicit-GEMM kernels there as on an A100 (sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32 and
  // CUTLASS s16816fprop kernels in an A40's and an L4's PyTorch profiles, sm86_xmma_* variants of
  // them), and a part's clock and power ceiling bound both kinds alike. So its convolutions stand
  // to its GEMMs as the A100's do: compute_eff_max (the A100 fit the A100's f16 convolutions take)
  // times the part's GEMM ceiling (at most 1) over the A100's (kA100Half, 0.73). RTX 3090 and RTX
  // 4090 0.96, RTX A6000 0.75, RTX 6000 Ada 0.51, A10 0.43 (since session 32). docs/cost-model.md,
  // "Convolutions per generation".
  if (half && spec.half_gemm_e_max && *spec.half_gemm_e_max > 0.0 && !spec.arch.nvidia(8, 0))
    return p.compute_eff_max * std::min(*spec.half_gemm_e_max, kMaxCurveEff) / kA100Half.e_max;
  // F32 on the CUDA cores (V100; an A100 without TF32): cuDNN's implicit-GEMM SGEMM kernels, as
  // fast as cuBLAS's SGEMM (kCudaCoreF32, 0.89): AlexNet's conv1 on the A100 trace
  // (a100_alexnet.json, cudnn_ampere_scudnn_128x64) ran at 17.4 TFLOP/s, 0.89 of the F32 peak.
  if (cuda_cores && volta_ampere) return kCudaCoreF32.e_max;
  return std::nullopt;
}

// Whether an f16/bf16 tensor-core convolution's memory term overlaps its compute term (max) rather
// than adding to it (the half-convolution sum, below): on GA10x and AD10x (compute capability 8.6
// and 8.9). Their f16 tensor cores run f16 MMA with FP32 accumulate (PyTorch's cuDNN convolutions
// set CUDNN_DATA_FLOAT as the compute type of a half convolution) at half the FP16-accumulate rate
// on GeForce parts (NVIDIA's GA102 and Ada whitepapers: RTX 3090 71 of 142, RTX 4090 165.2 of
// 330.3), i.e. at half the A100's tensor rate per SM and clock, so the same cuDNN mma.sync
// implicit-GEMM kernels (sm80_xmma / sm86_xmma fprop, multistage cp.async pipelines) have twice
// the time per tile to hide their gathers behind the math: the sum, fitted on the A100's CNN rows,
// charged those parts the gathers again. Measured: timm's RTX 3090 benchmark (pt112, AMP), whose
// dense CNNs the sum priced 8-19 % slow in both layouts (ResNet-50 NHWC b512: 420.0 ms measured,
// 522 predicted, of which convolutions 271 = 182 of compute at 0.96 of 71 TFLOP/s + 88 of memory);
// and the H200 ResNet-50 AMP traces (docs/cost-model.md, "How that miss grows with the batch"):
// cuDNN's convolution kernels there follow max(F / (0.70 P), B / (0.8 BW)), not the sum.
// docs/cost-model.md, "Convolutions per generation"; docs/validation.md, "f16 convolutions on
// GA10x/AD10x: compute and gathers overlap".
bool half_conv_overlaps_memory(const DeviceSpec& spec, const RooflineParams& p) {
  return p.generation_curves && spec.kind == DeviceKind::Gpu &&
         (spec.arch.nvidia(8, 6) || spec.arch.nvidia(8, 9));
}

// Whether a GPU runs `op` on its CUDA cores whatever its dtype: a depthwise convolution (one
// input channel per group) reduces kh*kw products per output, nothing for a tensor-core tile to
// fill, and neither PyTorch's own kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu: scalar
// FMAs, a thread per output or a block per weight element; every F32 and TF32 NCHW one) nor
// cuDNN's depthwise kernels (f16, channels-last) are tensor-core kernels. docs/cost-model.md,
// "Depthwise convolutions".
bool depthwise_on_cuda_cores(const Op& op, const DeviceSpec& spec) {
  return spec.kind == DeviceKind::Gpu && math_kind_of(op.type) == MathKind::Conv &&
         depthwise_conv(op);
}

// Thread-instructions an NVIDIA GPU issues per second: four warp schedulers per SM, each one
// 32-thread instruction per clock (NVIDIA's Pascal, Volta, Ampere GA100/GA102 and Hopper
// whitepapers), i.e. 128 per SM per clock. The catalog gives the F32 peak, 2 FLOPs per FP32 lane
// per clock, and the lanes per SM are 64 on compute capability 6.0, 7.x and 8.0 and 128 on 6.1,
// 6.2, 8.6, 8.7, 8.9, 9.0 and later (CUDA C++ Programming Guide, "Throughput of Native Arithmetic
// Instructions", 32-bit floating-point add/multiply/multiply-add per clock per multiprocessor), so
// the issue rate is the F32 peak x 64 / lanes. nullopt off NVIDIA or without an F32 peak.
std::optional<double> issue_rate(const DeviceSpec& spec) {
  const GpuArch& a = spec.arch;
  const double f32 = spec.peak_for(Dtype::F32).per_s;
  if (spec.kind != DeviceKind::Gpu || a.vendor != GpuArch::Vendor::Nvidia || !(f32 > 0.0) ||
      a.major < 6)
    return std::nullopt;
  const bool lanes64 = a.nvidia(6, 0) || a.major == 7 || a.nvidia(8, 0);
  return lanes64 ? f32 : f32 / 2.0;
}

// cuDNN's channels-last depthwise kernels (conv2d_c1_k1_nhwc, dgrad2d_c1_k1_nhwc / xmma
// depthwise dgrad, wgrad2d_c1_k1_nhwc + reduction; PyTorch sends every channels-last depthwise
// convolution to cuDNN, ConvParams::use_cudnn_depthwise) move their bytes at this share of the
// rate the roofline gives other kernels (default 1 / 1.96; fraction). Fitted on data no judged row
// holds: timm's forward-only AMP benchmarks on an RTX 3090 (huggingface/pytorch-image-models @
// 5e7d47ca, results/benchmark-infer-amp-{nchw,nhwc}-pt112-cu113-rtx3090.csv, batch 1024).
// Channels-last speeds MobileNetV2 up 1.147x and MNASNet 1.238x where the model predicted 1.354x
// and 1.415x; the networks without depthwise layers over-gain 1.046x (ResNet-18/50, DenseNet-121,
// ResNeXt-50), and with that kept, their NHWC depthwise forwards take 2.08x and 1.82x their
// memory-rate time, 1.96x weighted by time (tools/dw_timm_infer.py). MobileNetV3 and
// EfficientNet-B0 are left out: their SE blocks' channels-last rates on the 3090 are unmeasured.
// Measured on GA102 and on the forward only: the input and weight gradients, bf16, and other
// generations take the same share (docs/cost-model.md, "Depthwise convolutions").
constexpr double kCudnnNhwcDepthwiseBandwidthShare = 1.0 / 1.96;

// The share of the memory rate `op` moves its bytes at: kCudnnNhwcDepthwiseBandwidthShare for a
// channels-last f16/bf16 depthwise convolution on a GPU under the generation curves, else 1.
double nhwc_depthwise_share(const Op& op, const DeviceSpec& spec, const RooflineParams& p) {
  const bool cudnn_nhwc_depthwise = p.generation_curves && depthwise_on_cuda_cores(op, spec) &&
                                    op.layout == Layout::Nhwc &&
                                    (op.dtype == Dtype::F16 || op.dtype == Dtype::BF16);
  return cudnn_nhwc_depthwise ? kCudnnNhwcDepthwiseBandwidthShare : 1.0;
}

// Whether PyTorch runs depthwise `op` with ATen's own kernels (DepthwiseConv2d.cu) rather than
// cuDNN: an F32 (TF32 mode does not reach it) convolution not in channels-last.
// ConvParams::use_cudnn_depthwise (aten/src/ATen/native/Convolution.cpp, PyTorch 1.2 to 2.x)
// takes cuDNN for a depthwise convolution only when the tensors are channels-last or f16/bf16.
bool aten_native_depthwise(const Op& op, const DeviceSpec& spec) {
  return depthwise_on_cuda_cores(op, spec) && (op.dtype == Dtype::F32 || op.dtype == Dtype::TF32) &&
         op.layout != Layout::Nhwc;
}

// FLOPs ATen's depthwise kernels run per issue slot (issue_rate). The kernels are scalar: per
// output (forward, input gradient) or per weight element and image row (weight gradient) they
// compute indices with integer division and modulo, bounds-check each tap and do one FMA per tap,
// so their rate follows the SMs' instruction issue, not the bandwidth or the F32 peak. Measured:
// pytorch/pytorch#18631 (chenyuntc, soumith; TITAN Xp, PyTorch 1.1, cudnn 7.4, synchronised
// %timeit): nn.Conv2d(32, 32, 3, 1, 1, groups=32) forward on [2, 32, 512, 512] F32 in 1.02 ms,
// 302 MFLOP at 0.296 TFLOP/s, where the TITAN Xp (30 SMs, 128 lanes, 12.15 TFLOP/s F32 at
// 1582 MHz) issues 6.08 T thread-instructions/s: 0.0487 FLOP per issue slot. Its 134 MB moved at
// 132 GB/s, 0.24 of the card's 548: it is not bandwidth-bound. The input gradient's kernel takes
// the forward's rate, the weight gradient's kAtenDepthwiseWgradPerFlop times its slots (below).
// docs/cost-model.md, "Depthwise convolutions".
constexpr double kAtenDepthwiseFlopPerIssue = 0.0487;

// Issue slots per FLOP of ATen's depthwise weight-gradient kernel over the forward's, at full
// lanes. conv_depthwise2d_grad_weight_kernel (DepthwiseConv2d.cu) runs a block per weight element
// (C x kh x kw blocks), a warp per image, the 32 lanes striding over the P x Q outputs: each
// product pays its own idx % Q and idx / Q, offsets and bounds check, where the forward's thread
// pays its index arithmetic once for kh x kw unrolled taps. Measured by the same author on one GPU
// with PyTorch's own benchmark (pytorch/pytorch#125362 forward "before", #129609 backward
// "before", F32, [8, 64, 1024, 1008], 5x5, stride 1): forward 24.98 ms, backward (input and
// weight gradients) 89.00 ms. The input gradient's kernel is the forward's structure (a thread
// per input element, kh x kw taps; its stride checks fold away at stride 1), so it is taken as
// the forward's time and the weight gradient as the rest: (89.00 - 24.98) / 24.98 = 2.563. The
// other shape both posted ([4, 48, 720, 539], 6x1) gives 2.60.
constexpr double kAtenDepthwiseWgradPerFlop = 2.563;

// The factor by which ATen's depthwise kernel for `op` takes more issue slots per FLOP than the
// forward: 1 for the forward and the input gradient; for the weight gradient
// kAtenDepthwiseWgradPerFlop times the lanes and warps its launch leaves idle: each warp's lanes
// stride over the P x Q outputs of one image (32 x ceil(PQ / 32) lane-slots for PQ products:
// 7 x 7 = 49 outputs fill 49 of 64), and the block has min(N, 8) warps (getGradParamsNumThreads:
// min(32 N, 256) threads) looping over the N images.
double aten_depthwise_pass_factor(const Op& op) {
  if (op.type != "ConvBackpropFilter") return 1.0;
  if (!op.signature || op.signature->input_shapes.empty() ||
      op.signature->input_shapes[0].size() != 4)
    return kAtenDepthwiseWgradPerFlop;
  const auto& dy = op.signature->input_shapes[0];  // (dy, x) -> dw
  const double n = static_cast<double>(dy[0]);
  const double pq = static_cast<double>(dy[2]) * static_cast<double>(dy[3]);
  if (!(n > 0) || !(pq > 0)) return kAtenDepthwiseWgradPerFlop;
  const double lanes = 32.0 * std::ceil(pq / 32.0) / pq;
  const double warps = std::min(n, 8.0);
  const double warp_fill = warps * std::ceil(n / warps) / n;
  return kAtenDepthwiseWgradPerFlop * lanes * warp_fill;
}

// The peak of the unit that runs `op`: its dtype's peak, but the CUDA cores' F32 peak for a
// depthwise convolution on a GPU. For f16/bf16 that is a lower bound of the CUDA cores' rate
// (A100: 78 / 39 TFLOP/s f16 / bf16 non-tensor against 19.5 F32; H100 SXM5: 120 / 120 against
// 60; NVIDIA's "Hopper architecture in depth" blog, Table 3, as quoted in the NVIDIA developer
// forum thread "Theoretical TFLOPS for FP16, BF16 and TF32 for tensor and non-tensor"), and at
// most an eighth of the f16/bf16 tensor-core peak (the catalog's: A100 19.5 of 312, H100 SXM5 67 of
// 989.5 TFLOP/s).
double unit_peak(const Op& op, const DeviceSpec& spec) {
  const double f32 = spec.peak_for(Dtype::F32).per_s;
  if (depthwise_on_cuda_cores(op, spec) && f32 > 0.0) return f32;
  return spec.peak_for(op.dtype).per_s;
}

}  // namespace

double batch_norm_channel_rate(bool backward, double bw, int sm_count, double elem_bytes) {
  const double ceiling = (backward ? kBlockBytesPerSecondBwd : kBlockBytesPerSecond) *
                         std::min(1.0, elem_bytes / kBatchNormCeilingElementBytes);
  if (sm_count <= 0 || !(bw > 0)) return ceiling;
  return std::min(ceiling, (backward ? kSmShareBwd : kSmShare) * bw / sm_count);
}

double layer_norm_kernel_time(bool backward, double rows, double cols, double elem_bytes,
                              double memory_s, double rate, double bw, int sm_count,
                              int threads_per_sm) {
  if (!(rows > 0) || !(cols > 0) || !(elem_bytes > 0) || sm_count <= 0 || threads_per_sm <= 0)
    return 0.0;
  const double sms = sm_count;
  const double resident =
      sms * std::max(1.0, std::floor(threads_per_sm / kLayerNormThreadsPerBlock));
  const double waves = std::ceil(rows / resident);
  double t = memory_s + waves * (backward ? kLayerNormBwdWaveLatency : kLayerNormFwdWaveLatency);
  if (backward) {
    const double blocks = std::ceil(cols / kGammaBetaColumns);
    const bool split_rows =
        rows > kGammaBetaSplitRows && std::floor(cols / kGammaBetaColumns) < std::floor(sms / 2);
    double gb_rate = rate;
    if (!split_rows && bw > 0.0)
      gb_rate = std::min(rate, std::min(blocks, sms) * kSmShare * bw / sms);
    if (gb_rate > 0.0) t += 2.0 * rows * cols * elem_bytes / gb_rate;  // x and dy, again
  }
  return t;
}

double vocab_xent_kernel_time(bool backward, double rows, double cols, double elem_bytes,
                              double rate, double bw, int sm_count, int threads_per_sm) {
  if (!(rows > 0) || !(cols > 0) || !(elem_bytes > 0) || !(rate > 0) || !(bw > 0) ||
      sm_count <= 0 || threads_per_sm <= 0)
    return 0.0;
  const double sms = sm_count;
  const double row_bytes = cols * elem_bytes;
  const double threads = backward ? kSoftmaxBwdThreads : kSoftmaxFwdThreads;
  const double resident = sms * std::max(1.0, std::floor(threads_per_sm / threads));
  const double waves = std::ceil(rows / resident);
  const double multiple = backward ? kSoftmaxBwdSliceMultiple : kSoftmaxFwdSliceMultiple;
  const double latency = backward ? kSoftmaxBwdWaveLatency : kSoftmaxFwdWaveLatency;
  const double wave_s = latency + resident * kSoftmaxRowPasses * row_bytes / (multiple * bw);
  // At least one read and one write of the logits from DRAM.
  double t = std::max(waves * wave_s, 2.0 * rows * row_bytes / rate);
  if (backward)
    t += rows * row_bytes / rate + kNllBackwardLatency;  // the zero fill, the one-block scatter
  else
    t += kNllForwardLatency;  // the one-block gather of the target log-probabilities
  return t;
}

double embedding_grad_kernel_time(double indices, double rows, double cols, double elem_bytes,
                                  double rate, int sm_count) {
  if (!(indices > 0) || !(rows > 0) || !(cols > 0) || !(elem_bytes > 0) || !(rate > 0) ||
      sm_count <= 0)
    return 0.0;
  double t = rows * cols * elem_bytes / rate;  // at::zeros of the [V, E] gradient
  if (indices <= kEmbeddingFeatureMaxIndices)
    return t + std::ceil(indices / kEmbeddingFeatureChunk) * 2.0 * kMemoryRoundTrip;
  t += kEmbeddingSortPathLatency +
       kEmbeddingSortPasses * kEmbeddingSortBytesPerKeyPass * indices / rate;
  // compute_grad_weight and sum_and_scatter: N x E threads each, a load and a store per thread.
  t += 2.0 * (2.0 * indices * cols) / (sm_count * kBroadcastElementsPerSmSecond);
  return t;
}

double batch_norm_stretch(std::string_view type, const std::vector<std::int64_t>& input0, double bw,
                          int sm_count, std::optional<Layout> layout, double elem_bytes) {
  const auto cap = batch_norm_cap(type, input0, layout, bw, sm_count, elem_bytes);
  return cap && bw > *cap ? bw / *cap : 1.0;
}

namespace {

// The roofline time `t` of a GPU op raised or extended by the PyTorch kernels that run it, where a
// rule knows them: the vocabulary cross-entropy (a block per row and its passes, the one-block nll
// kernels and the gradient's zero fill: vocab_xent_kernel_time), a bias gradient's reduce_kernel
// (a fixed latency beyond its bytes, `memory_s`: kBiasGradReduceLatency), the dense embedding
// gradient, a causal mask gradient's clone and a full 2-D transpose. `rate` is the op's memory
// rate (B/s).
// PyTorch's average pooling (an ONNX graph's AveragePool and its gradient; the builders name
// theirs AvgPool): ATen's avg_pool2d_out_cuda_frame(_nhwc) runs a thread per output and
// avg_pool2d_backward_out_cuda_frame(_nhwc) a thread per input-gradient element
// (aten/src/ATen/native/cuda/AveragePool2d.cu), each decomposing its flat index into n, h, w, c
// with 64-bit divisions and modulos (channels, height and width are int64_t there) and computing
// its windows and divisor with more, so the elements an SM retires a second set the time, not
// the bytes. Measured on the H200 (132 SMs, h200_densenet121_amp_nhwc_b256_train.json.gz,
// `tools/cnn_trace_report.py TRACE pools`: DenseNet-121's three 2x2/2 transition pools, f16
// channels-last): forward 41.4, 41.3 and 39.5 G outputs/s, backward 54.7, 54.8 and 57.3 G
// elements/s, 9-28x the time their bytes at the memory rate gave (67 us for the first pair). The
// median per SM, held for every NVIDIA part per SM (as kBroadcastElementsPerSmSecond): F32 and
// NCHW, other windows and other generations were not measured.
constexpr double kAvgPoolOutputsPerSmSecond = 41.26e9 / 132;
constexpr double kAvgPoolGradElementsPerSmSecond = 54.84e9 / 132;

// The time ATen's average-pooling kernels take for `op` on `spec` (above); 0 for other ops.
double aten_avg_pool_time(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || spec.arch.vendor != GpuArch::Vendor::Nvidia ||
      spec.sm_count <= 0 || op.outputs.empty() ||
      (op.type != "AveragePool" && op.type != "AveragePoolGrad"))
    return 0.0;
  const double rate =
      op.type == "AveragePool" ? kAvgPoolOutputsPerSmSecond : kAvgPoolGradElementsPerSmSecond;
  return elements(op.outputs[0].shape) / (spec.sm_count * rate);
}

// ATen's max pooling on Hopper: max_pool_forward_nchw / _nhwc run a thread per output, each
// decomposing its flat index and scanning its window, and max_pool_backward_nchw / _nhwc a thread
// per input-gradient element that visits the windows covering it (aten/src/ATen/native/cuda/
// DilatedMaxPool2d.cu), so, as for average pooling, the elements an SM retires a second set the
// time, more than max_pool_bytes at the memory rate. Measured on the H200 (132 SMs, ResNet-50's
// 3x3/2 pool over 64 x 112 x 112, `tools/cnn_trace_report.py TRACE pools`): forward 62.1 and 61.5
// G outputs/s channels-last f16 (h200_resnet50_amp_nhwc_b{128,256}_train.json.gz), 61.5 NCHW f16
// (h200_resnet50_amp_nchw_b128_train.json.gz) and 62.7 NCHW f32 (h200_resnet50_fp32_nchw_b64);
// backward 105.9 and 105.0 G input elements/s channels-last, 85.3 and 83.1 NCHW (f16, f32). Where
// max_pool_bytes gave 241 us forward and 1.31 ms backward at b256, 835 and 1957 were measured.
// Held per SM on Hopper only (other generations were not timed and keep max_pool_bytes).
constexpr double kMaxPoolOutputsPerSmSecond = 61.8e9 / 132;
constexpr double kMaxPoolGradElementsPerSmSecondNhwc = 105.5e9 / 132;
constexpr double kMaxPoolGradElementsPerSmSecondNchw = 84.2e9 / 132;

// The time ATen's max-pooling kernels take for `op` on a Hopper `spec` (above); 0 otherwise.
double aten_max_pool_time(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || !spec.arch.hopper() || spec.sm_count <= 0 ||
      op.outputs.empty())
    return 0.0;
  double rate = 0.0;
  if (op.type == "MaxPool" || op.type == "aten::max_pool2d_with_indices")
    rate = kMaxPoolOutputsPerSmSecond;
  else if (op.type == "MaxPoolGrad" || op.type == "aten::max_pool2d_with_indices_backward")
    rate = op.layout == Layout::Nchw ? kMaxPoolGradElementsPerSmSecondNchw
                                     : kMaxPoolGradElementsPerSmSecondNhwc;
  else
    return 0.0;
  return elements(op.outputs[0].shape) / (spec.sm_count * rate);
}

double pytorch_kernel_time(const Op& op, const DeviceSpec& spec, const RooflineParams& p, double t,
                           double memory_s, double rate) {
  const double bw = spec.memory_bandwidth.bytes_per_s;
  t = std::max(t, aten_avg_pool_time(op, spec));
  t = std::max(t, aten_max_pool_time(op, spec));
  if (const auto x = vocab_xent_shape(op, spec))
    t = std::max(t, vocab_xent_kernel_time(x->backward, x->rows, x->cols, x->esize, rate, bw,
                                           spec.sm_count, threads_per_sm(spec.arch)));
  if (bias_grad_rows(op, spec)) t = std::max(t, memory_s + kBiasGradReduceLatency);
  // PyTorch's dense embedding gradient: zero fill, then the feature kernel or the sort path
  // (embedding_grad_kernel_time).
  if (const auto e = embedding_grad_shape(op, spec))
    t = std::max(t, embedding_grad_kernel_time(e->indices, e->rows, e->cols, e->esize,
                                               bw * memory_eff_for("Add", spec, p), spec.sm_count));
  // A causal mask's gradient is grad.masked_fill(mask, 0), out of place (derivatives.yaml),
  // and ATen's out-of-place masked_fill clones its input before the in-place fill
  // (TensorAdvancedIndexing.cpp: `result = _self->clone(at::MemoryFormat::Contiguous);
  // result.masked_fill_(mask, source);`): a contiguous device-to-device copy of the scores'
  // gradient (one read, one write) at the streaming rate, before the fill. The H200's eager
  // GPT-2 trace has it, one `Memcpy DtoD` of [8, 12, 1024, 1024] bf16 per layer at 96 us.
  if (spec.kind == DeviceKind::Gpu && op.type == "MaskFillGrad" && !op.outputs.empty())
    t += 2.0 * static_cast<double>(op.outputs[0].bytes.v) / (bw * memory_eff_for("Add", spec, p));
  // A full 2-D transpose at the SMs' element rate (full_transpose).
  if (spec.kind == DeviceKind::Gpu && spec.arch.vendor == GpuArch::Vendor::Nvidia &&
      spec.sm_count > 0 && full_transpose(op))
    t = std::max(
        t, 2.0 * elements(op.outputs[0].shape) / (spec.sm_count * kBroadcastElementsPerSmSecond));
  return t;
}

// The half-FLOPs term models a GEMM's tiles under-filling the device (small M, N, K): matmuls,
// convolutions, LSTM layers and fused attention kernels pay it. A pointwise, normalisation,
// reduction or optimizer kernel on a GPU has no tiles to fill: its small-size cost is the kernel
// floor and the memory term's fixed bytes (and the engine's device gap, sim/kernel_gap.hpp).
// The term is F_half / (P e_max) at the op dtype's peak, so it charged every F32/TF32 pointwise
// op >= 14.7 us on an A100 (19.5 TFLOP/s) and 18.2 on a V100, an f16 one 0.9 / 2.3 us: where
// the A100 ResNet-50 trace (tests/data/calibration/a100_2rank_nccl_rank0) runs 81 of its 147 F32
// ReLU kernels in under 14.7 us (shortest 3.9). A calibration's fitted roofline keeps its own
// term on every op but the optimizer's (it was fitted so). docs/cost-model.md, "The half-FLOPs
// term".
bool pays_half_flops(const Op& op, const DeviceSpec& spec, const RooflineParams& p) {
  const bool untiled = spec.kind == DeviceKind::Gpu && math_kind_of(op.type) == MathKind::Other &&
                       !fused_attention_backward(op.type).has_value() &&
                       (op.phase == Phase::Update || p.generation_curves);
  return !untiled;
}

}  // namespace

Duration KernelCostModel::roofline_time(const Op& op, const DeviceSpec& spec) const {
  const RooflineParams& p = roofline_;
  // A matmul on a GPU generation whose GEMMs were measured: its own curve.
  if (const auto g = gemm_curve_time(op, spec, p)) return *g;
  const Duration floor = spec.kind == DeviceKind::Gpu ? p.min_kernel : p.min_cpu_op;
  // A convolution's FLOPs rounded up to whole waves of whole tiles (idle SMs stream the whole
  // reduction), times what narrow tiles and image inputs cost on Hopper (hopper_conv_shape_factor).
  double f = wave_quantised_flops(op, spec) * hopper_conv_shape_factor(op, spec, p);
  // A fused attention computes whole tiles, and on Hopper pays a tile a query tile
  // (attention_tile_factor).
  if (p.generation_curves) f *= attention_tile_factor(op, spec, cudnn_sdpa(op, spec));
  double b = op_bytes(op);
  double bw_cap = 0.0;  // a kernel whose parallelism cannot reach the device's bandwidth
  if (spec.kind == DeviceKind::Gpu)
    if (const auto bn = batch_norm_traffic(op, b, spec)) std::tie(b, bw_cap) = *bn;
  if (spec.kind == DeviceKind::Gpu)
    if (const auto mp = max_pool_bytes(op, b)) b = *mp;
  if (p.generation_curves)
    if (const auto eb = aten_embedding_bytes(op, spec)) b = *eb;
  double t = 0.0;
  const bool emulated = bf16_emulated(op, spec);
  const double peak = emulated ? spec.peak_for(Dtype::F32).per_s * *bf16_emulation_factor(spec)
                               : unit_peak(op, spec);
  // TF32 on a part without TF32 units (Volta and older, CPUs) runs as F32 on the CUDA cores.
  const bool tf32_units = op.dtype == Dtype::TF32 && spec.peak_flops.count(Dtype::TF32) != 0;
  // tf32_eff_max was measured on cuDNN convolutions (layout transforms included); a TF32 GEMM
  // is a cuBLAS GEMM like any other and keeps the GEMM efficiency (BERT-large's TF32 matmuls
  // at 0.21 of peak put NVIDIA's published 317 sequences/s at 111; docs/validation.md).
  const bool tf32_conv = tf32_units && math_kind_of(op.type) == MathKind::Conv;
  double eff = tf32_conv ? p.tf32_eff_max : p.compute_eff_max;
  if (const auto c = conv_generation_eff(op, spec, p, tf32_units)) eff = *c;
  // A tensor-core GEMM with a misaligned leading dimension (misaligned_gemm): no faster than the
  // measured align1/align2 kernels (align1_rate, below), else at kMisalignedGemmEff here.
  eff *= misaligned_eff_factor(op, spec);
  // Like the GEMM curves, a measured per-generation rate that a calibration's roofline replaces.
  // An ET's fused SDPA ops (aten::scaled_dot_product_attention, ..._cudnn_attention_backward)
  // launch the same fused kernels as the graph's FlashAttention ops and take the same rate.
  const bool half = op.dtype == Dtype::F16 || op.dtype == Dtype::BF16;
  if (p.generation_curves && spec.kind == DeviceKind::Gpu && spec.arch.hopper() && half &&
      fused_attention_backward(op.type))
    eff = (cudnn_sdpa(op, spec) ? kCudnnSdpaTileRate : kHopperFlashAttention2) *
          cudnn_head_dim_factor(op.outputs.empty() || op.outputs[0].shape.empty()
                                    ? 0.0
                                    : static_cast<double>(op.outputs[0].shape.back()));
  const double half_flops = pays_half_flops(op, spec, p) ? p.compute_half_flops : 0.0;
  const auto issue = issue_rate(spec);
  if (p.generation_curves && issue && aten_native_depthwise(op, spec))
    t = f * aten_depthwise_pass_factor(op) /
        (kAtenDepthwiseFlopPerIssue * *issue);  // no tiles: no half-FLOPs term
  else if (f > 0.0 && peak > 0.0)
    t = std::max(t, (f + half_flops) / (peak * eff));
  if (const auto a1 = align1_rate(op, spec); a1 && f > 0.0) t = std::max(t, f / *a1);
  // TF32 allows cuDNN's tensor-core kernels, it does not force them: under cudnn.benchmark
  // PyTorch times every algorithm cudnnFind returns, the F32 CUDA-core ones too, and keeps the
  // fastest. So a TF32 convolution takes no longer than the same convolution in F32 on the CUDA
  // cores. That bound only binds where the TF32 units are not faster than the CUDA cores at their
  // measured rates: GA102/AD102 GeForce parts (TF32 tensor = F32 peak: RTX 3090 35.6, RTX 4090
  // 82.6) and the RTX A6000 (77.4 TF32 at tf32_eff_max's 0.21 against 38.7 F32 at 0.70); on A100
  // (0.295 of 156 against 0.89 of 19.5) and Hopper TF32 stays the faster. docs/cost-model.md,
  // "Convolutions per generation".
  // Grouped convolutions keep their own rates (grouped_conv_eff on the CUDA cores).
  if (tf32_conv && p.generation_curves && spec.kind == DeviceKind::Gpu && f > 0.0 &&
      !grouped_conv(op)) {
    const double f32_peak = spec.peak_for(Dtype::F32).per_s;
    const bool volta_ampere = spec.arch.nvidia(7, 0) || spec.arch.nvidia(8, 0);
    const double f32_eff = volta_ampere ? kCudaCoreF32.e_max : p.compute_eff_max;
    if (f32_peak > 0.0) t = std::min(t, (f + half_flops) / (f32_peak * f32_eff));
  }
  const double bw = spec.memory_bandwidth.bytes_per_s;
  double rate = bw * non_vectorised_eff(op, spec, p).value_or(memory_eff_for(op.type, spec, p)) *
                nhwc_depthwise_share(op, spec, p);
  if (p.generation_curves && spec.kind == DeviceKind::Gpu && spec.arch.hopper() &&
      cudnn_nhwc_batch_norm(op))
    rate = bw * kHopperNhwcBatchNormEff;
  if (bw_cap > 0.0) rate = std::min(rate, bw_cap);
  // A convolution on f16/bf16 tensor cores sits near the ridge (ResNet-50's, weighted by time:
  // median 204 FLOP/B, half between 102 and 397, against A100's 134 at 0.70 of the f16 peak
  // over 0.80 of the bandwidth): its implicit-GEMM tiles gather activations they do not hide
  // behind the math, so it pays both terms. Over 12 published CNN mixed-precision throughputs
  // max() was +6 to +62 % fast, the sum -9 to +42 % (docs/validation.md). TF32 and F32
  // convolutions keep max(): tf32_eff_max was measured all-in; so do depthwise ones, which have
  // no implicit-GEMM tiles (unit_peak), and f16 ones on GA10x/AD10x, whose half-rate tensor cores
  // leave the gathers time to hide (half_conv_overlaps_memory).
  // Hopper's 2-D ones (NHWC kernels, NCHW ones too) take max() (two_rooflines,
  // hopper_channels_last_conv).
  const bool two_rooflines = hopper_channels_last_conv(op, spec, p);
  const bool half_conv_sum = math_kind_of(op.type) == MathKind::Conv && half && !emulated &&
                             !depthwise_on_cuda_cores(op, spec) && !two_rooflines &&
                             !half_conv_overlaps_memory(spec, p);
  if (b > 0.0 && bw > 0.0) {
    const double memory_s = (b + p.memory_half_bytes) / rate;
    t = half_conv_sum ? t + memory_s : std::max(t, memory_s);
    // PyTorch's LayerNorm kernels: a block latency per wave of rows, the backward's gamma/beta
    // column reduction on ceil(cols / 32) SMs (layer_norm_kernel_time).
    if (p.generation_curves)
      if (const auto ln = layer_norm_shape(op, spec))
        t = std::max(
            t, layer_norm_kernel_time(ln->backward, ln->rows, ln->cols, ln->esize, memory_s, rate,
                                      bw, spec.sm_count, threads_per_sm(spec.arch)));
    // PyTorch's own kernels of a few op kinds (pytorch_kernel_time).
    if (p.generation_curves) t = pytorch_kernel_time(op, spec, p, t, memory_s, rate);
  }
  if (two_rooflines)
    t += op.phase == Phase::Backward ? kHopperConvFixedBackward : kHopperConvFixedForward;
  // A fused attention kernel's in-kernel dropout: Philox per kept score (attention_dropout_s).
  if (p.generation_curves) t += attention_dropout_s(op, spec);
  // A fused attention backward's dO.O and dQ-conversion passes (attention_backward_aux_bytes),
  // at the streaming rate, after and before the main kernel.
  if (p.generation_curves && spec.kind == DeviceKind::Gpu && bw > 0.0)
    t += attention_backward_aux_bytes(op) / (bw * memory_eff_for("Add", spec, p));
  return std::max(ceil_seconds(t), floor);
}

namespace {

// The fall-back chain (header comment) with the model's defaults `roofline_` and the device's
// calibration `cal` (nullptr: none); estimate() adds what the framework launches around the op.
KernelCostModel::Estimate chain_estimate(const RooflineParams& roofline_, const Op& op,
                                         const Device& device, const DeviceCalibration* cal) {
  using Source = KernelCostModel::Source;
  if (op.measured) return {*op.measured, Source::Measured};
  // Before any calibration: the 2 us kernel floor on each of ResNet-18's 104 variables and
  // running statistics was 0.13 ms of a batch-8 step's GPU time that no kernel spends.
  if (stores_only(op)) return {Duration{0}, Source::Storage};
  if (device.spec.kind == DeviceKind::Gpu && is_view(op.type)) return {Duration{0}, Source::View};
  if (cal) {
    if (op.signature) {
      auto e = cal->exact.find(op.signature->key());
      if (e != cal->exact.end()) return {e->second, Source::Exact};
    }
    if (op.phase == Phase::Update && device.spec.kind == DeviceKind::Gpu && cal->host &&
        cal->host->optimizer == "foreach") {
      // A multi-tensor (foreach) optimizer updates every parameter in a few launches
      // (multi_tensor_apply: ~100 tensors per launch): no per-kernel fixed cost per parameter,
      // only its bytes at the memory rate. The H200 ResNet-18 step: 62 updates, 35 us of GPU time
      // where 62 separate kernels at the 2 us floor would take 149 us.
      const RooflineParams& rp = cal->roofline ? *cal->roofline : roofline_;
      const double bw = device.spec.memory_bandwidth.bytes_per_s * rp.memory_eff_max;
      if (bw > 0.0) return {ceil_seconds(op_bytes(op) / bw), Source::Roofline};
    }
    auto m = cal->by_op_type.find(op.type);
    // A class curve fitted on small shapes says little about ones 100x larger (the H200
    // microbenchmarks' convolutions ran at a third of ResNet-18's rate): past its range the
    // roofline prices the op.
    const double b = op_bytes(op);
    // The curve's bytes are stretched as it was fitted (batch_norm_stretch on a GPU; on a CPU
    // with a measured hierarchy, memory_stretch of the op's working set).
    const bool cpu_memory = device.spec.kind == DeviceKind::Cpu && !cal->memory.empty();
    const ByteSource source = reads_saved_activation(op.type)                 ? ByteSource::Dram
                              : m != cal->by_op_type.end() && m->second.sweep ? ByteSource::Sweep
                                                                              : ByteSource::Levels;
    const double stretch =
        cpu_memory ? cpu_byte_stretch(cal->memory, cal->sweep, b, source)
        : device.spec.kind == DeviceKind::Gpu && op.signature && !op.signature->input_shapes.empty()
            ? batch_norm_stretch(op.type, op.signature->input_shapes[0],
                                 device.spec.memory_bandwidth.bytes_per_s, device.spec.sm_count,
                                 op.layout, static_cast<double>(dtype_size(op.dtype)))
            : 1.0;
    const double b_fit = b * stretch;
    // ... and its FLOPs quantised to whole waves of tiles (wave_quantised_flops), or on a CPU
    // padded to whole vectors of channels (lane_padded_flops), as fitted.
    const double f_fit = device.spec.kind == DeviceKind::Cpu
                             ? lane_padded_flops(op, cal->vector_lanes)
                             : wave_quantised_flops(op, device.spec);
    // A CPU curve without a FLOP term streams its bytes: past DRAM-sized working sets nothing
    // changes regime, so it holds at any size (ResNet-18's 9.4 MB weight updates fell to a
    // roofline whose GPU half-efficiency FLOPs cost them 5.6 ms each).
    const bool streaming = cpu_memory && m != cal->by_op_type.end() && m->second.flop_rate <= 0.0;
    if (m != cal->by_op_type.end() && (streaming || m->second.covers(f_fit, b_fit))) {
      const Duration floor = device.spec.kind != DeviceKind::Gpu ? roofline_.min_cpu_op
                             : cal->min_kernel                   ? *cal->min_kernel
                                                                 : roofline_.min_kernel;
      const double fit =
          m->second.predict_s(f_fit, b_fit, stretch * shape_term_bytes(op), gemm_matrices(op));
      // No prediction faster than the unit that runs the op can go, whatever the file says (a
      // calibration fitted before fits were constrained, or one fitted on another math mode).
      const double peak = unit_peak(op, device.spec);
      // A CPU with a measured hierarchy streams an op at its working set's level, not at the
      // cluster file's DRAM figure.
      const double bw = cpu_memory ? cpu_byte_rate(cal->memory, cal->sweep, b, source)
                                   : device.spec.memory_bandwidth.bytes_per_s;
      double bound = 0.0;
      if (peak > 0.0 && op.flops.v > 0.0) bound = std::max(bound, op.flops.v / peak);
      if (bw > 0.0 && b > 0.0) bound = std::max(bound, b / bw);
      // Nor faster than its parallelism lets it stream (NCHW BatchNorm: one block per channel).
      if (device.spec.kind == DeviceKind::Gpu)
        if (const auto bn = batch_norm_traffic(op, b, device.spec); bn && bn->second > 0.0)
          bound = std::max(bound, bn->first / bn->second);
      // Nor a misaligned GEMM faster than cuBLAS's narrow-load kernels run (align1_rate): a class
      // curve fitted on a trace's GEMMs, aligned or not, does not know the op's dimensions.
      if (const auto a1 = align1_rate(op, device.spec); a1 && op.flops.v > 0.0)
        bound = std::max(bound, op.flops.v / *a1);
      const bool clamped = bound > fit;
      const Duration t = ceil_seconds(std::max(fit, bound));
      return {std::max(t, floor), Source::Fitted, clamped};
    }
    if (cal->roofline || cal->min_kernel) {
      // The calibration's efficiency curves and its device's own shortest kernel.
      RooflineParams p = cal->roofline ? *cal->roofline : roofline_;
      if (cal->min_kernel) p.min_kernel = *cal->min_kernel;
      // Efficiencies fitted on the device's own profile replace the built-in per-generation ones
      // (GEMM curves, elementwise streaming).
      if (cal->roofline) p.generation_curves = false;
      const KernelCostModel fitted(p);
      return {fitted.roofline_time(op, device.spec), Source::Roofline, false,
              p.generation_curves && attention_dropout_s(op, device.spec) > 0.0};
    }
  }
  return {KernelCostModel(roofline_).roofline_time(op, device.spec), Source::Roofline, false,
          roofline_.generation_curves && attention_dropout_s(op, device.spec) > 0.0};
}

// PyTorch's BatchNorm2d in training mode also increments its num_batches_tracked counter: one
// more (elementwise add_) kernel per forward call. An ONNX training export keeps the op
// (BatchNormalization with its running-statistic outputs) but not the counter. The H200
// ResNet-18 b8 trace: 20 such add_ kernels per step, 1.1 us each.
bool torch_batch_norm_training(const Op& op) {
  return op.type == "BatchNormalization" && op.phase == Phase::Forward && op.outputs.size() > 1;
}

// A rule's estimate raised to the op's channel-wise bound (channelwise_time) on a GPU; the rule
// that priced it keeps its name (as the NCHW BatchNorm bound does). Not a LayerNorm the roofline
// priced by PyTorch's kernels (`layer_norm_rule`: layer_norm_kernel_time): its backward's gamma
// and beta outputs ([C] from [N, T, C]) look like a channel reduction, but they are one pass of
// 32-column blocks that the LayerNorm rule prices (an ET's native_layer_norm_backward over
// [8, 1024, 768] on the H200: 59.6 us by the channel bound, 47.4 by the rule, 43.9 measured).
KernelCostModel::Estimate with_channelwise(KernelCostModel::Estimate e, const Op& op,
                                           const DeviceSpec& spec, bool layer_norm_rule) {
  using Source = KernelCostModel::Source;
  if (spec.kind != DeviceKind::Gpu || !op.signature || op.outputs.empty() ||
      (e.source != Source::Fitted && e.source != Source::Roofline))
    return e;
  if (layer_norm_rule && e.source == Source::Roofline && layer_norm_shape(op, spec)) return e;
  const Duration t =
      ceil_seconds(channelwise_time(op.type, op.signature->input_shapes, op.outputs[0].shape,
                                    spec.sm_count, op.layout, spec.arch.hopper()));
  e.time = std::max(e.time, t);
  return e;
}
}  // namespace

// Not for a depthwise convolution: the transforms feed NHWC tensor-core kernels, and a depthwise
// one runs on the CUDA cores (depthwise_on_cuda_cores) in cuDNN's direct depthwise kernels, which
// PyTorch has used for f16 NCHW tensors since pytorch/pytorch#22302 (cuDNN 7.6; nvprof named
// cuDNN 7.1's `conv2d_grouped_direct_kernel`, pytorch/pytorch#1708), or in ATen's NCHW kernels.
// docs/cost-model.md, "Depthwise convolutions".
double nchw_transform_bytes(const Op& op, const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::Gpu || op.layout != Layout::Nchw ||
      math_kind_of(op.type) != MathKind::Conv ||
      (op.dtype != Dtype::F16 && op.dtype != Dtype::BF16) || depthwise_on_cuda_cores(op, spec) ||
      bf16_emulated(op, spec))
    return 0.0;
  return 2.0 * op_bytes(op);
}

KernelCostModel::Estimate KernelCostModel::estimate(const Op& op, const Device& device) const {
  const DeviceCalibration* cal =
      calibration_ ? find_device_calibration(*calibration_, device) : nullptr;
  // The LayerNorm rule holds where the roofline keeps the per-generation rules (chain_estimate).
  const bool layer_norm_rule = roofline_.generation_curves && !(cal && cal->roofline);
  Estimate e = with_channelwise(chain_estimate(roofline_, op, device, cal), op, device.spec,
                                layer_norm_rule);
  // NCHW layout transforms (nchw_transform_bytes): separate memory-bound kernels on the
  // convolution's stream, at the roofline's memory rate. Only on the roofline: a class curve or
  // an exact entry was measured on the profile's own kernels, transforms included.
  if (e.source == Source::Roofline) {
    const double tb = nchw_transform_bytes(op, device.spec);
    const double bw =
        device.spec.memory_bandwidth.bytes_per_s *
        (cal && cal->roofline ? cal->roofline->memory_eff_max : roofline_.memory_eff_max);
    if (tb > 0.0 && bw > 0.0) {
      e.time = e.time + ceil_seconds(tb / bw);
      e.source = Source::NchwTransforms;
    }
  }
  // The roofline priced a misaligned tensor-core GEMM at its align1 kernels' rate: say so.
  if (e.source == Source::Roofline && misaligned_gemm(op, device.spec))
    e.source = Source::MisalignedGemm;
  if (device.spec.kind == DeviceKind::Gpu && e.source != Source::Measured &&
      torch_batch_norm_training(op))
    e.time = e.time + (cal && cal->min_kernel ? *cal->min_kernel : roofline_.min_kernel);
  return e;
}

const HostCalibration* KernelCostModel::host_model(const Device& device) const {
  if (!calibration_) return nullptr;
  const DeviceCalibration* cal = find_device_calibration(*calibration_, device);
  if (device.spec.kind != DeviceKind::Gpu)
    return cal && cal->host && cal->host->cpu ? &*cal->host : nullptr;
  if (cal && cal->host && cal->host->cpu) return nullptr;
  if (!cal || !cal->host || !cal->host->per_op_model()) return nullptr;
  // apply_host_calibration set the GPU's launch_overhead to the calibration's unless the cluster
  // file chose its own: an explicit value wins over the per-op model too.
  if (device.spec.launch_overhead != cal->host->launch_overhead) return nullptr;
  return &*cal->host;
}

std::optional<Duration> KernelCostModel::host_time(const Op& op, const Device& device) const {
  // A parameter or an input is no framework op: nothing is dispatched or launched for it.
  if (device.spec.kind == DeviceKind::Gpu && stores_only(op)) return Duration{0};
  const HostCalibration* h = host_model(device);
  if (!h) {
    // The default host side: the launch, plus the framework's host work before it that no graph
    // op stands for (Op::host_before: the optimizer's per-parameter Python). A calibration's host
    // cost (launch_overhead per activity, measured as step time / activities) already holds it.
    const DeviceCalibration* cal =
        calibration_ ? find_device_calibration(*calibration_, device) : nullptr;
    if (device.spec.kind == DeviceKind::Gpu && op.host_before.ns > 0 && !(cal && cal->host))
      return device.spec.launch_overhead + op.host_before;
    return std::nullopt;
  }
  if (op.phase == Phase::Other || stores_only(op)) return Duration{0};
  if (h->cpu)  // every framework op is dispatched from Python; an update also loops in it
    return op.phase == Phase::Update ? h->launch_overhead + h->per_parameter : h->launch_overhead;
  if (op.phase == Phase::Update) return h->per_parameter;
  const std::string phase = to_string(op.phase);
  if (auto it = h->per_op.find(phase + ":" + op.type); it != h->per_op.end()) return it->second;
  if (auto it = h->per_phase.find(phase); it != h->per_phase.end()) return it->second;
  return device.spec.launch_overhead;
}

Duration KernelCostModel::step_host_time(const Device& device) const {
  const HostCalibration* h = host_model(device);
  return h ? h->per_step : Duration{0};
}

Duration KernelCostModel::optimizer_host_time(const Device& device) const {
  const HostCalibration* h = host_model(device);
  return h ? h->optimizer_step : Duration{0};
}

std::string pricing_to_json(const Graph& g, const Cluster& c,
                            const std::vector<DeviceId>& device_of, const KernelCostModel& costs) {
  using nlohmann::json;
  json rules = json::object();
  json ops = json::array();
  int clamped = 0;
  for (std::size_t i = 0; i < g.ops.size() && i < device_of.size(); ++i) {
    const DeviceId d = device_of[i];
    if (d < 0 || static_cast<std::size_t>(d) >= c.devices.size()) continue;
    const Device& dev = c.devices[static_cast<std::size_t>(d)];
    const KernelCostModel::Estimate e = costs.estimate(g.ops[i], dev);
    const std::string rule = pricing_rule(e, g.ops[i]);
    rules[rule] = rules.value(rule, 0) + 1;
    json o = {{"op", g.ops[i].name}, {"device", dev.name}, {"rule", rule}, {"time_ns", e.time.ns}};
    if (e.clamped) {
      o["clamped"] = true;
      ++clamped;
    }
    ops.push_back(std::move(o));
  }
  return json{{"rules", std::move(rules)}, {"clamped", clamped}, {"ops", std::move(ops)}}.dump();
}

// ---------------------------------------------------------------------------------------------
// YAML (format in docs/cost-model.md).

namespace {

const YAML::Node need(const YAML::Node& n, const std::string& key, const std::string& file,
                      const std::string& path) {
  const YAML::Node v = n[key];
  if (!v) throw InputError(file, path + key, "a value for required key \"" + key + "\"");
  return v;
}

std::string scalar(const YAML::Node& n, const std::string& file, const std::string& path) {
  if (!n.IsScalar()) throw InputError(file, path, "a scalar value");
  return n.as<std::string>();
}

double number(const YAML::Node& n, const std::string& file, const std::string& path) {
  const std::string s = scalar(n, file, path);
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw InputError(file, path, "a number, got \"" + s + "\"");
  }
}

template <class F>
auto with_units(F parse, const YAML::Node& n, const std::string& file, const std::string& path,
                const char* what) {
  const std::string s = scalar(n, file, path);
  try {
    return parse(s);
  } catch (const InputError& e) {
    throw InputError(file, path, std::string(what) + ", got \"" + s + "\"");
  }
}

RooflineParams read_roofline(const YAML::Node& n, const std::string& file,
                             const std::string& path) {
  RooflineParams p;
  if (!n.IsMap()) throw InputError(file, path, "a map of roofline parameters");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const std::string kp = path + "." + k;
    if (k == "compute_eff_max")
      p.compute_eff_max = number(kv.second, file, kp);
    else if (k == "tf32_eff_max")
      p.tf32_eff_max = number(kv.second, file, kp);
    else if (k == "compute_half_flops")
      p.compute_half_flops = number(kv.second, file, kp);
    else if (k == "memory_eff_max")
      p.memory_eff_max = number(kv.second, file, kp);
    else if (k == "memory_half_bytes")
      p.memory_half_bytes = number(kv.second, file, kp);
    else if (k == "min_kernel")
      p.min_kernel = with_units(parse_duration, kv.second, file, kp, "a duration such as \"2 us\"");
    else if (k == "min_cpu_op")
      p.min_cpu_op = with_units(parse_duration, kv.second, file, kp, "a duration such as \"1 us\"");
    else
      throw InputError(file, kp,
                       "one of compute_eff_max, tf32_eff_max, compute_half_flops, memory_eff_max, "
                       "memory_half_bytes, min_kernel, min_cpu_op");
  }
  if (!(p.compute_eff_max > 0.0 && p.compute_eff_max <= 1.0))
    throw InputError(file, path + ".compute_eff_max", "a fraction in (0, 1]");
  if (!(p.tf32_eff_max > 0.0 && p.tf32_eff_max <= 1.0))
    throw InputError(file, path + ".tf32_eff_max", "a fraction in (0, 1]");
  if (!(p.memory_eff_max > 0.0 && p.memory_eff_max <= 1.0))
    throw InputError(file, path + ".memory_eff_max", "a fraction in (0, 1]");
  if (p.compute_half_flops < 0.0 || p.memory_half_bytes < 0.0)
    throw InputError(file, path, "non-negative half-efficiency sizes");
  return p;
}

// A map of durations, e.g. per_op: {"forward:Conv": "120 us"}.
std::map<std::string, Duration> read_durations(const YAML::Node& n, const std::string& file,
                                               const std::string& path) {
  if (!n.IsMap()) throw InputError(file, path, "a map from name to duration");
  std::map<std::string, Duration> out;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const Duration d =
        with_units(parse_duration, kv.second, file, path + "." + k, "a duration such as \"50 us\"");
    if (d.ns < 0) throw InputError(file, path + "." + k, "a non-negative duration");
    out[k] = d;
  }
  return out;
}

HostCalibration read_host(const YAML::Node& n, const std::string& file, const std::string& path) {
  static const char* kKeys =
      "one of launch_overhead, profile, steps, activities_per_step, per_op, per_phase, "
      "per_parameter, optimizer_step, per_step, optimizer, cpu";
  if (!n.IsMap()) throw InputError(file, path, std::string("a map with ") + kKeys);
  HostCalibration h;
  bool have_launch = false;
  auto duration = [&](const YAML::Node& v, const std::string& kp) {
    const Duration d = with_units(parse_duration, v, file, kp, "a duration such as \"50 us\"");
    if (d.ns < 0) throw InputError(file, kp, "a non-negative duration");
    return d;
  };
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const std::string kp = path + "." + k;
    if (k == "launch_overhead") {
      h.launch_overhead = duration(kv.second, kp);
      have_launch = true;
    } else if (k == "profile") {
      h.profile = scalar(kv.second, file, kp);
    } else if (k == "steps") {
      const double v = number(kv.second, file, kp);
      if (v < 0 || v != std::floor(v) || v > 1e9)
        throw InputError(
            file, kp, "a non-negative whole number of steps, got " + scalar(kv.second, file, kp));
      h.steps = static_cast<int>(v);
    } else if (k == "activities_per_step") {
      h.activities_per_step = number(kv.second, file, kp);
      if (h.activities_per_step < 0) throw InputError(file, kp, "a non-negative count");
    } else if (k == "per_op") {
      h.per_op = read_durations(kv.second, file, kp);
    } else if (k == "per_phase") {
      h.per_phase = read_durations(kv.second, file, kp);
    } else if (k == "per_parameter") {
      h.per_parameter = duration(kv.second, kp);
    } else if (k == "optimizer_step") {
      h.optimizer_step = duration(kv.second, kp);
    } else if (k == "per_step") {
      h.per_step = duration(kv.second, kp);
    } else if (k == "cpu") {
      const std::string v = scalar(kv.second, file, kp);
      if (v != "true" && v != "false")
        throw InputError(file, kp, "true or false, got \"" + v + "\"");
      h.cpu = v == "true";
    } else if (k == "optimizer") {
      h.optimizer = scalar(kv.second, file, kp);
      if (h.optimizer != "foreach" && h.optimizer != "per-parameter" && !h.optimizer.empty())
        throw InputError(file, kp, "foreach or per-parameter, got \"" + h.optimizer + "\"");
    } else {
      throw InputError(file, kp, kKeys);
    }
  }
  if (!have_launch)
    throw InputError(file, path + ".launch_overhead",
                     "a value for required key \"launch_overhead\"");
  return h;
}

OpClassModel read_op_class(const YAML::Node& n, const std::string& file, const std::string& path) {
  OpClassModel m;
  if (!n.IsMap())
    throw InputError(file, path, "a map with intercept, flop_rate, half_flops, byte_rate");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const std::string kp = path + "." + k;
    if (k == "intercept") {
      const std::string s = scalar(kv.second, file, kp);
      // Negative intercepts come out of least-squares fits; parse the magnitude with its unit.
      const bool neg = !s.empty() && s[0] == '-';
      const Duration d = with_units(parse_duration, YAML::Node(neg ? s.substr(1) : s), file, kp,
                                    "a duration such as \"3 us\"");
      m.intercept_s = (neg ? -1.0 : 1.0) * d.seconds();
    } else if (k == "flop_rate") {
      m.flop_rate =
          with_units(parse_flop_rate, kv.second, file, kp, "a rate such as \"7 TFLOP/s\"").per_s;
    } else if (k == "half_flops") {
      m.half_flops = number(kv.second, file, kp);
    } else if (k == "byte_rate") {
      m.byte_rate =
          with_units(parse_bandwidth, kv.second, file, kp, "a bandwidth such as \"700 GB/s\"")
              .bytes_per_s;
    } else if (k == "samples") {
      const double n = number(kv.second, file, kp);
      if (!(n >= 0 && n <= 1e9)) throw InputError(file, kp, "a sample count from 0 to 1e9");
      m.samples = static_cast<int>(n);
    } else if (k == "cv_error") {
      m.cv_error = number(kv.second, file, kp);
    } else if (k == "clamped") {
      m.clamped = scalar(kv.second, file, kp);
    } else if (k == "max_flops") {
      m.max_flops = number(kv.second, file, kp);
    } else if (k == "max_bytes") {
      m.max_bytes = number(kv.second, file, kp);
    } else if (k == "out_byte_rate") {
      m.out_byte_rate =
          with_units(parse_bandwidth, kv.second, file, kp, "a bandwidth such as \"20 GB/s\"")
              .bytes_per_s;
    } else if (k == "sweep") {
      const std::string v = scalar(kv.second, file, kp);
      if (v != "true" && v != "false")
        throw InputError(file, kp, "true or false, got \"" + printable(v) + "\"");
      m.sweep = v == "true";
    } else if (k == "per_matrix") {
      const Duration d =
          with_units(parse_duration, kv.second, file, kp, "a duration such as \"1 us\"");
      if (d.ns < 0) throw InputError(file, kp, "a non-negative duration");
      m.per_matrix_s = d.seconds();
    } else {
      throw InputError(file, kp,
                       "one of intercept, flop_rate, half_flops, byte_rate, samples, cv_error, "
                       "clamped, max_flops, max_bytes, out_byte_rate, per_matrix, sweep");
    }
  }
  if (m.flop_rate < 0.0 || m.byte_rate < 0.0 || m.half_flops < 0.0 || m.max_flops < 0.0 ||
      m.max_bytes < 0.0 || m.out_byte_rate < 0.0)
    throw InputError(file, path, "non-negative rates and half_flops");
  return m;
}

// A CPU's memory hierarchy: [{name: L2, bytes: 524288, byte_rate: "80 GB/s"}, ...], ascending by
// size, the last one unbounded (bytes 0: DRAM).
std::vector<MemoryLevel> read_memory(const YAML::Node& n, const std::string& file,
                                     const std::string& path) {
  if (!n.IsSequence())
    throw InputError(file, path, "a list of {name, bytes, byte_rate}, ascending by bytes");
  std::vector<MemoryLevel> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const YAML::Node e = n[i];
    if (!e.IsMap()) throw InputError(file, p, "a map with name, bytes, byte_rate");
    MemoryLevel l;
    l.name = scalar(need(e, "name", file, p + "."), file, p + ".name");
    l.bytes = number(need(e, "bytes", file, p + "."), file, p + ".bytes");
    l.byte_s = with_units(parse_bandwidth, need(e, "byte_rate", file, p + "."), file,
                          p + ".byte_rate", "a bandwidth such as \"80 GB/s\"")
                   .bytes_per_s;
    if (!(l.bytes >= 0) || l.bytes > 1e15) throw InputError(file, p + ".bytes", "0 to 1e15 bytes");
    if (!(l.byte_s > 0)) throw InputError(file, p + ".byte_rate", "a positive bandwidth");
    const bool ascending =
        out.empty() || (out.back().bytes > 0 && (l.bytes == 0 || l.bytes > out.back().bytes));
    if (!ascending)
      throw InputError(file, p + ".bytes", "levels ascending by bytes, the unbounded (0) one last");
    out.push_back(l);
  }
  return out;
}

Calibration parse_calibration(const YAML::Node& root, const std::string& file) {
  Calibration cal;
  cal.source = file;
  if (!root.IsMap()) throw InputError(file, "", "a YAML map with keys format, source, devices");
  if (const YAML::Node f = root["format"]) {
    const std::string v = scalar(f, file, "format");
    if (v != "placesim-calibration/1")
      throw InputError(file, "format", "\"placesim-calibration/1\", got \"" + v + "\"");
  }
  if (const YAML::Node s = root["source"]) cal.source = scalar(s, file, "source");
  const YAML::Node devs = need(root, "devices", file, "");
  if (!devs.IsMap())
    throw InputError(file, "devices", "a map from device model to its calibration");
  for (const auto& dkv : devs) {
    const std::string model = dkv.first.as<std::string>();
    const std::string dp = "devices." + model;
    DeviceCalibration dc;
    if (!dkv.second.IsMap()) throw InputError(file, dp, "a map with exact, op_types, roofline");
    for (const auto& kv : dkv.second) {
      const std::string k = kv.first.as<std::string>();
      if (k == "exact") {
        if (!kv.second.IsMap())
          throw InputError(file, dp + ".exact", "a map from signature key to duration");
        for (const auto& e : kv.second) {
          const std::string key = e.first.as<std::string>();
          const std::string ep = dp + ".exact[\"" + key + "\"]";
          const Duration d =
              with_units(parse_duration, e.second, file, ep, "a duration such as \"12 us\"");
          if (d.ns < 0) throw InputError(file, ep, "a non-negative duration");
          dc.exact[key] = d;
        }
      } else if (k == "op_types") {
        if (!kv.second.IsMap())
          throw InputError(file, dp + ".op_types", "a map from op type to model");
        for (const auto& e : kv.second) {
          const std::string t = e.first.as<std::string>();
          dc.by_op_type[t] = read_op_class(e.second, file, dp + ".op_types." + t);
        }
      } else if (k == "roofline") {
        dc.roofline = read_roofline(kv.second, file, dp + ".roofline");
      } else if (k == "host") {
        dc.host = read_host(kv.second, file, dp + ".host");
      } else if (k == "min_kernel") {
        const Duration d = with_units(parse_duration, kv.second, file, dp + ".min_kernel",
                                      "a duration such as \"1.2 us\"");
        if (d.ns <= 0) throw InputError(file, dp + ".min_kernel", "a positive duration");
        dc.min_kernel = d;
      } else if (k == "kernel_gap") {
        const Duration d = with_units(parse_duration, kv.second, file, dp + ".kernel_gap",
                                      "a duration such as \"1.1 us\"");
        if (d.ns < 0) throw InputError(file, dp + ".kernel_gap", "a non-negative duration");
        dc.kernel_gap = d;
      } else if (k == "memory") {
        dc.memory = read_memory(kv.second, file, dp + ".memory");
      } else if (k == "memory_sweep") {
        dc.sweep = read_memory(kv.second, file, dp + ".memory_sweep");
        if (!dc.sweep.empty() && dc.sweep.back().bytes <= 0)
          throw InputError(file, dp + ".memory_sweep", "measured working sets, none unbounded (0)");
      } else if (k == "vector_lanes") {
        const double lanes = number(kv.second, file, dp + ".vector_lanes");
        if (lanes < 1 || lanes > 64 || lanes != std::floor(lanes))
          throw InputError(file, dp + ".vector_lanes", "a SIMD width in floats from 1 to 64");
        dc.vector_lanes = static_cast<int>(lanes);
      } else {
        throw InputError(file, dp + "." + k,
                         "one of exact, op_types, roofline, host, min_kernel, kernel_gap, memory, "
                         "memory_sweep, vector_lanes");
      }
    }
    cal.devices[model] = std::move(dc);
  }
  return cal;
}

std::string quoted(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

}  // namespace

namespace {
Calibration parse_calibration_text(const std::string& text, const std::string& path);
}  // namespace

Calibration load_calibration(const std::string& path) {
  return parse_calibration_text(read_text_file(path), path);
}

namespace {

Calibration parse_calibration_text(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(path, "line " + std::to_string(e.mark.line + 1), "valid YAML (" + e.msg + ")");
  }
  try {
    return parse_calibration(root, path);
  } catch (const YAML::Exception& e) {
    throw InputError(path, "line " + std::to_string(e.mark.line + 1),
                     "a well-formed calibration (" + e.msg + ")");
  }
}

// YAML allows at most 1024 characters in an implicit key: a longer signature key (a concat of
// many shapes) is written as an explicit "? key" entry.
std::string yaml_key(const std::string& indent, const std::string& key) {
  const std::string q = quoted(key);
  return q.size() > 1000 ? indent + "? " + q + "\n" + indent + ":" : indent + q + ":";
}

}  // namespace

std::string calibration_to_yaml(const Calibration& c) {
  // Written by hand so that numbers keep 17 significant digits and units are spelled.
  std::string out = "format: placesim-calibration/1\n";
  out += "source: " + quoted(c.source) + "\n";
  out += "devices:\n";
  if (c.devices.empty()) out = out.substr(0, out.size() - 1) + " {}\n";
  for (const auto& [model, dc] : c.devices) {
    out += yaml_key("  ", model) + "\n";
    if (dc.roofline) {
      const RooflineParams& p = *dc.roofline;
      out += "    roofline:\n";
      out += "      compute_eff_max: " + fmt_double(p.compute_eff_max) + "\n";
      out += "      tf32_eff_max: " + fmt_double(p.tf32_eff_max) + "\n";
      out += "      compute_half_flops: " + fmt_double(p.compute_half_flops) + "\n";
      out += "      memory_eff_max: " + fmt_double(p.memory_eff_max) + "\n";
      out += "      memory_half_bytes: " + fmt_double(p.memory_half_bytes) + "\n";
      out += "      min_kernel: \"" + std::to_string(p.min_kernel.ns) + " ns\"\n";
      out += "      min_cpu_op: \"" + std::to_string(p.min_cpu_op.ns) + " ns\"\n";
    }
    if (dc.min_kernel) out += "    min_kernel: \"" + std::to_string(dc.min_kernel->ns) + " ns\"\n";
    if (dc.kernel_gap) out += "    kernel_gap: \"" + std::to_string(dc.kernel_gap->ns) + " ns\"\n";
    if (dc.host) {
      out += "    host:\n";
      out += "      launch_overhead: \"" + std::to_string(dc.host->launch_overhead.ns) + " ns\"\n";
      out += "      profile: " + quoted(dc.host->profile) + "\n";
      out += "      steps: " + std::to_string(dc.host->steps) + "\n";
      out += "      activities_per_step: " + fmt_double(dc.host->activities_per_step) + "\n";
      const HostCalibration& h = *dc.host;
      if (h.cpu) out += "      cpu: true\n";
      if (h.per_op_model() || h.cpu) {
        auto ns = [](Duration d) { return "\"" + std::to_string(d.ns) + " ns\""; };
        out += "      per_step: " + ns(h.per_step) + "\n";
        out += "      per_parameter: " + ns(h.per_parameter) + "\n";
        out += "      optimizer_step: " + ns(h.optimizer_step) + "\n";
        if (!h.optimizer.empty()) out += "      optimizer: " + h.optimizer + "\n";
        for (const auto* m : {&h.per_phase, &h.per_op}) {
          out += m == &h.per_phase ? "      per_phase:" : "      per_op:";
          out += m->empty() ? " {}\n" : "\n";
          for (const auto& [k, d] : *m) out += yaml_key("        ", k) + " " + ns(d) + "\n";
        }
      }
    }
    if (dc.vector_lanes > 0) out += "    vector_lanes: " + std::to_string(dc.vector_lanes) + "\n";
    for (const auto& [key, levels] :
         {std::pair{"memory", &dc.memory}, std::pair{"memory_sweep", &dc.sweep}}) {
      if (levels->empty()) continue;
      out += std::string("    ") + key + ":\n";
      for (const MemoryLevel& l : *levels)
        out += "      - {name: " + quoted(l.name) + ", bytes: " + fmt_double(l.bytes) +
               ", byte_rate: \"" + fmt_double(l.byte_s) + " B/s\"}\n";
    }
    out += "    op_types:";
    out += dc.by_op_type.empty() ? " {}\n" : "\n";
    for (const auto& [type, m] : dc.by_op_type) {
      out += yaml_key("      ", type) + "\n";
      const double ns = m.intercept_s * 1e9;
      out += "        intercept: \"" + fmt_double(ns) + " ns\"\n";
      out += "        flop_rate: \"" + fmt_double(m.flop_rate) + " FLOP/s\"\n";
      out += "        half_flops: " + fmt_double(m.half_flops) + "\n";
      out += "        byte_rate: \"" + fmt_double(m.byte_rate) + " B/s\"\n";
      out += "        samples: " + std::to_string(m.samples) + "\n";
      out += "        cv_error: " + fmt_double(m.cv_error) + "\n";
      if (!m.clamped.empty()) out += "        clamped: " + quoted(m.clamped) + "\n";
      if (m.max_flops > 0) out += "        max_flops: " + fmt_double(m.max_flops) + "\n";
      if (m.max_bytes > 0) out += "        max_bytes: " + fmt_double(m.max_bytes) + "\n";
      if (m.out_byte_rate > 0)
        out += "        out_byte_rate: \"" + fmt_double(m.out_byte_rate) + " B/s\"\n";
      if (m.per_matrix_s > 0)
        out += "        per_matrix: \"" + fmt_double(m.per_matrix_s * 1e9) + " ns\"\n";
      if (m.sweep) out += "        sweep: true\n";
    }
    out += "    exact:";
    out += dc.exact.empty() ? " {}\n" : "\n";
    for (const auto& [key, d] : dc.exact)
      out += yaml_key("      ", key) + " \"" + std::to_string(d.ns) + " ns\"\n";
  }
  // What is written must read back: the reader's rules (units, ranges, finite numbers) apply.
  parse_calibration_text(
      out, (c.source.empty() ? std::string("calibration") : c.source) + " (as written)");
  return out;
}

std::pair<const DeviceCalibration*, std::string> find_calibration_of_model(const Calibration& c,
                                                                           std::string_view name) {
  const DeviceSpec* want = find_device_model(name);
  if (!want) return {nullptr, ""};
  for (const auto& [key, dc] : c.devices)
    if (const DeviceSpec* s = find_device_model(key); s && s->model == want->model)
      return {&dc, key};
  return {nullptr, ""};
}

const DeviceCalibration* find_device_calibration(const Calibration& c, const Device& device) {
  auto it = c.devices.find(device.name);
  if (it == c.devices.end()) it = c.devices.find(device.spec.model);
  return it == c.devices.end() ? nullptr : &it->second;
}

std::vector<std::string> apply_host_calibration(Cluster& cluster, const Calibration& c) {
  std::vector<std::string> lines;
  for (Device& d : cluster.devices) {
    if (d.spec.kind != DeviceKind::Gpu) continue;
    const DeviceCalibration* dc = find_device_calibration(c, d);
    if (!dc || !dc->host) continue;
    const HostCalibration& h = *dc->host;
    // A cluster file always spells launch_overhead (import topo writes the catalog's); only a
    // value that differs from the catalog's default was chosen by someone, and it wins.
    const DeviceSpec* model = find_device_model(d.spec.model);
    if (!model || model->launch_overhead != d.spec.launch_overhead) {
      lines.push_back(d.name + ": launch_overhead " + format_duration(d.spec.launch_overhead) +
                      " kept (" + (model ? "set in the cluster file" : "no catalog model") +
                      "); the calibration's host cost " + format_duration(h.launch_overhead) +
                      " not applied");
      continue;
    }
    lines.push_back(d.name + ": launch_overhead " + format_duration(d.spec.launch_overhead) +
                    " -> " + format_duration(h.launch_overhead) +
                    " (host cost per launch measured on " + h.profile + ")");
    d.spec.launch_overhead = h.launch_overhead;
  }
  return lines;
}

std::vector<std::string> apply_kernel_gap_calibration(Cluster& cluster, const Calibration& c) {
  std::vector<std::string> lines;
  for (Device& d : cluster.devices) {
    if (d.spec.kind != DeviceKind::Gpu) continue;
    const DeviceCalibration* dc = find_device_calibration(c, d);
    if (!dc || !dc->kernel_gap) continue;
    // A cluster file spells every GPU's kernel_gap (import topo writes the catalog's); only a
    // value other than the default was chosen by someone, and it wins (as launch_overhead).
    const DeviceSpec* model = find_device_model(d.spec.model);
    const Duration dflt = model ? model->kernel_gap : default_kernel_gap(d.spec.arch).gap;
    const std::string from = format_duration(d.spec.kernel_gap);
    if (d.spec.kernel_gap != dflt) {
      lines.push_back(d.name + ": kernel_gap " + from +
                      " kept (set in the cluster file); the calibration's measured " +
                      format_duration(*dc->kernel_gap) + " not applied");
      continue;
    }
    d.spec.kernel_gap = *dc->kernel_gap;
    d.spec.kernel_gap_source = "measured on " + c.source + " (calibrate)";
    lines.push_back(d.name + ": kernel_gap " + from + " -> " + format_duration(d.spec.kernel_gap) +
                    " (the gap between queued kernels measured on " + c.source + ")");
  }
  return lines;
}

namespace {

// A calibration is keyed by what its trace printed ("NVIDIA H200" -> "H200") unless calibrate was
// given --device-model; a cluster names catalog models ("H200-SXM-141GB"). Each key that is no
// device's name or model but names a catalog model (find_device_model: the names tools print)
// prices that model's devices too, said in a note; a calibration that prices no device of the
// cluster is said too, since its fits would otherwise go unused without a word.
void resolve_calibration_keys(Calibration& c, const Cluster& cluster, const std::string& path,
                              std::vector<std::string>& notes) {
  std::set<std::string> unpriced;  // catalog models of devices no key names
  for (const Device& d : cluster.devices)
    if (!find_device_calibration(c, d)) unpriced.insert(d.spec.model);
  for (const std::string& model : unpriced) {
    const auto [dc, key] = find_calibration_of_model(c, model);
    if (!dc) continue;
    DeviceCalibration copy = *dc;
    c.devices.emplace(model, std::move(copy));
    notes.push_back(path + ": calibration device \"" + key + "\" prices the cluster's " + model +
                    " devices (the catalog reads that name as " + model + ")");
  }
  const bool any = std::any_of(cluster.devices.begin(), cluster.devices.end(),
                               [&](const Device& d) { return find_device_calibration(c, d); });
  if (!any && !c.devices.empty()) {
    std::string keys;
    for (const auto& [key, dc] : c.devices) keys += (keys.empty() ? "\"" : ", \"") + key + "\"";
    notes.push_back(path + ": prices no device of this cluster (its devices: " + keys +
                    "; the cluster's are named by device name or catalog model): its fits are "
                    "not used; calibrate with --device-model MODEL to key them to a model");
  }
}

}  // namespace

std::shared_ptr<const Calibration> use_calibration(const std::string& path, Cluster& cluster,
                                                   std::vector<std::string>& notes) {
  Calibration loaded = load_calibration(path);
  resolve_calibration_keys(loaded, cluster, path, notes);
  auto c = std::make_shared<const Calibration>(std::move(loaded));
  for (std::string& l : apply_host_calibration(cluster, *c)) notes.push_back(path + ": " + l);
  for (std::string& l : apply_kernel_gap_calibration(cluster, *c)) notes.push_back(path + ": " + l);
  return c;
}

}  // namespace placesim::sim

#include "models/torch_host.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "sim/catalog.hpp"
#include "sim/cost_model.hpp"

namespace placesim::models {
namespace {

using sim::Duration;

// Host time per framework op of torch 2.11 eager (CUDA 13.0, cuDNN 9.19) on the H200 rig's
// 16-core Xeon ("Intel(R) Xeon(R) Processor", h200_rig_2026-12-04_log.txt), the launch included
// (the engine charges DeviceSpec::launch_overhead, 6 us there, apart: minus_launch). Fitted on
// one trace outside the held-out set: session 24's ResNet-50 AMP NHWC b64 step (tests/data/
// calibration/h200_resnet50_amp_nhwc_b64_train.json.gz, recorded without shapes; host-bound:
// 19.51 and 23.22 ms unprofiled in two leases for 12.3 ms of kernels). Per call of the top-level
// aten op (main thread) or autograd node (autograd thread), the median over the trace's 5 steps of
// its span less the profiler's cost per recorded op, 1.93 us: (median profiled step 27.79 ms -
// mean unprofiled step 21.37 ms) / 3333 recorded ops. Between the ops: forward, the Python of
// nn.Module.__call__ and the autocast context, 7.9 us per top-level op (median step; 229 a step);
// backward, the autograd engine's work per node (ready queue, input buffers), 4.5 us over 397
// nodes, 161 of them AccumulateGrad (no graph op: charged to the op making a parameter's
// gradient). `tools/torch_host_fit.py TRACE` prints every figure; docs/cost-model.md, "PyTorch
// eager's host work per framework op".
constexpr Duration kPythonPerOp{7'900};    // forward, per top-level aten op
constexpr Duration kEnginePerNode{4'500};  // backward, per autograd node
// aten::conv2d 44.0 us less autocast's cast of its F32 weight (nested aten::to, 11.1 us):
// aten::convolution down to cudnn_convolution with cuDNN v8's plan look-up.
constexpr Duration kConvFwd{32'900};
constexpr Duration kWeightCast{11'100};  // inside conv2d/linear: no Python of its own
// aten::batch_norm 37.9 us (cudnn_batch_norm, the NHWC empty_like) + num_batches_tracked.add_(1)
// 9.1 us, a second top-level op with its own Python.
constexpr Duration kBatchNormFwd{37'900 + 9'100 + 7'900};
constexpr Duration kActivationFwd{10'600};  // relu_ (2 aten ops, 1 launch)
constexpr Duration kOneKernelFwd{9'100};    // add_ (1 aten op, 1 launch): add, mul, cat
// median of max_pool2d 26.9, adaptive_avg_pool2d 42.4, cross_entropy_loss 66.6, linear 99.7
constexpr Duration kOtherFwd{54'500};
constexpr Duration kViewFwd{5'600};  // flatten
// ConvolutionBackward0 71.9 us + its node's engine work, for the two gradients (two graph ops)
constexpr Duration kConvBwdEach{(71'900 + 4'500) / 2};
constexpr Duration kBatchNormBwd{33'300 + 4'500};   // CudnnBatchNormBackward0
constexpr Duration kActivationBwd{14'200 + 4'500};  // ReluBackward0
constexpr Duration kCastBwd{13'200 + 4'500};        // ToCopyBackward0
constexpr Duration kGradAccumulate{9'100};  // the engine's add_ of a tensor's second gradient
// median of MaxPool2DWithIndices- 39.3, Mean- 36.4, NllLoss- 57.9, LogSoftmax- 24.0, Mul- 78.6 and
// AddmmBackward0 176.1 us, + the node's engine work
constexpr Duration kOtherBwd{48'600 + 4'500};

bool in(std::string_view type, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), type) != names.end();
}

bool conv(std::string_view t) {
  return in(t, {"Conv2D", "Conv", "DepthwiseConv2dNative"});
}
bool matmul(std::string_view t) {
  return in(t, {"MatMul", "Gemm"});
}
bool batch_norm(std::string_view t) {
  return in(t, {"FusedBatchNorm", "FusedBatchNormV3", "BatchNormalization"});
}
bool activation(std::string_view t) {
  return in(t, {"Relu", "Relu6", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Silu", "Tanh",
                "Gelu", "LeakyRelu", "Elu"});
}
bool one_kernel(std::string_view t) {
  return in(t, {"Add", "AddV2", "Mul", "Sub", "Div", "Concat", "ConcatV2", "Pad", "BiasAdd",
                "Dropout", "aten::mul"});
}

// The figures above are one traced step's shares; the step interval the rig times without the
// profiler is 1.23 times what they add up to on the fitted step: at 1.23 the b64 step's
// prediction (host-bound) is its unprofiled mean, 21.37 ms (19.51 and 23.22 in two leases); at 1
// it is 18.23 ms. The 20 timed steps include the slow ones a traced step shows (its 5 steps:
// 24.3-35.5 ms), and the profiler's cost per op is known only to about +-0.4 us (+-1.3 ms a step).
constexpr double kHostLevel = 1.23;

// The host time beyond the launch of a framework op whose traced share is `host`: the launch is
// the fitted rig's, the catalog's H200 launch_overhead, which the engine charges apart.
Duration minus_launch(Duration host) {
  static const Duration kRigLaunch = sim::find_device_model("H200-SXM-141GB")->launch_overhead;
  const auto total = static_cast<std::int64_t>(static_cast<double>(host.ns) * kHostLevel);
  return Duration{std::max<std::int64_t>(0, total - kRigLaunch.ns)};
}

Duration forward(std::string_view t, bool weight_cast) {
  if (sim::is_view(t)) return minus_launch(kViewFwd + kPythonPerOp);
  if (t == "Cast") return minus_launch(kWeightCast);
  const Duration cast = weight_cast ? kWeightCast : Duration{0};
  if (conv(t)) return minus_launch(kConvFwd + kPythonPerOp + cast);
  if (batch_norm(t)) return minus_launch(kBatchNormFwd + kPythonPerOp);
  if (activation(t)) return minus_launch(kActivationFwd + kPythonPerOp);
  if (one_kernel(t)) return minus_launch(kOneKernelFwd + kPythonPerOp);
  return minus_launch(kOtherFwd + kPythonPerOp + (matmul(t) ? cast : Duration{0}));
}

Duration backward(std::string_view t) {
  if (sim::is_view(t)) return Duration{0};  // inside its autograd node (CatBackward0's narrows)
  // A weight gradient also runs its parameter's AccumulateGrad node; BatchNorm's two (scale,
  // shift).
  if (in(t, {"Conv2DBackpropInput", "ConvBackpropInput", "DepthwiseConv2dNativeBackpropInput"}))
    return minus_launch(kConvBwdEach);
  if (in(t, {"Conv2DBackpropFilter", "ConvBackpropFilter", "DepthwiseConv2dNativeBackpropFilter"}))
    return minus_launch(kConvBwdEach + kEnginePerNode);
  if (in(t, {"FusedBatchNormGrad", "FusedBatchNormGradV3", "BatchNormalizationGrad"}))
    return minus_launch(kBatchNormBwd + kEnginePerNode + kEnginePerNode);
  if (t.size() > 4 && t.substr(t.size() - 4) == "Grad" && activation(t.substr(0, t.size() - 4)))
    return minus_launch(kActivationBwd);
  if (t == "Cast") return minus_launch(kCastBwd);
  if (in(t, {"Add", "AddN"})) return minus_launch(kGradAccumulate);
  return minus_launch(kOtherBwd);
}

}  // namespace

Duration torch_host_time(sim::Phase phase, std::string_view type, bool weight_cast) {
  switch (phase) {
    case sim::Phase::Forward:
      return forward(type, weight_cast);
    case sim::Phase::Backward:
      return backward(type);
    case sim::Phase::Update:
    case sim::Phase::Other:
      return Duration{0};
  }
  return Duration{0};
}

void apply_torch_host(sim::Graph& g) {
  // Built-in graphs at precision=f16, grads=f32 keep F32 weights with no Cast op: autocast's
  // cast runs inside the convolution's or matmul's aten call, as in the fitted trace.
  const auto grads = g.metadata.find("grads");
  const auto precision = g.metadata.find("precision");
  const bool autocast_ops = std::any_of(g.ops.begin(), g.ops.end(), [](const sim::Op& o) {
    return o.phase == sim::Phase::Forward && o.type == "Cast";
  });
  const bool weight_cast = !autocast_ops && grads != g.metadata.end() && grads->second == "f32" &&
                           precision != g.metadata.end() && precision->second != "f32";
  for (sim::Op& op : g.ops) {
    if (sim::stores_only(op)) continue;
    op.host_before = op.host_before + torch_host_time(op.phase, op.type, weight_cast);
  }
}

}  // namespace placesim::models

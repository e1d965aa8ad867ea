// Kernel times behind one narrow interface. For an op on a device the duration comes from, in
// order (the fall-back chain; each estimate says which rule priced it):
//   1. "measured": the op's measured duration, if the graph gives one;
//   2. "exact": the calibration table's entry for (device model, signature key);
//   3. "class-curve": the fitted per-op-class model for the device model and op type, within
//      twice the largest work it was fitted on (OpClassModel::covers), never
//      faster than the device's peak for the op's compute dtype (F/P_dtype) or its memory
//      bandwidth (B/BW): a fit that would be is raised to that floor ("clamped");
//   4. "roofline" (the calibration's fitted efficiency curves, else the defaults):
//      t = max(F / (P_dtype * e_c(F)), B / (BW * e_m(B))), with efficiency curves that fall for
//      small kernels, e_c(F) = e_c_max * F / (F + F_half), e_m(B) = e_m_max * B / (B + B_half).
// P_dtype is the peak of the unit that runs the op: an F32 convolution runs on TF32 tensor cores
// where the framework allows it (MathMode, apply_math_mode), which sets the op's compute dtype.
// The host-side launch overhead is not part of the kernel time: the engine charges it on the
// launching host thread (DeviceSpec::launch_overhead, or per op the calibration's per-framework-op
// host model: KernelCostModel::host_time).
//
//   KernelCostModel km;                                   // roofline only
//   km.set_calibration(load_calibration("cal.yaml"));     // adds 2 and 3
//   Estimate e = km.estimate(graph.ops[i], cluster.devices[d]);   // e.time, e.source, e.clamped
//   apply_math_mode(graph, *MathMode::parse("torch"));    // F32 convs on TF32 tensor cores
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

/// Which unit a kernel's math runs on: convolutions (cuDNN) and matmuls (cuBLAS) may use tensor
/// cores; everything else runs on the CUDA cores (or is memory-bound).
enum class MathKind { Conv, Matmul, Other };
MathKind math_kind_of(std::string_view op_type);  ///< aten, graph-builder and ONNX names

/// Framework math settings that decide the unit F32 convolutions and matmuls run on where the GPU
/// has TF32 tensor cores (Ampere and later; elsewhere the TF32 peak falls back to F32). F16, BF16
/// and FP8 always take their own (tensor-core) peaks. Sources in docs/cost-model.md.
struct MathMode {
  bool conv_tf32 = true;  ///< PyTorch torch.backends.cudnn.allow_tf32, default True
  bool matmul_tf32 =
      false;  ///< PyTorch torch.backends.cuda.matmul.allow_tf32, default False (>= 1.12)
  /// "torch" (the defaults above), "tf32" (both on: TensorFlow >= 2.4, or torch with
  /// allow_tf32 set / set_float32_matmul_precision("high")), "f32" (both off:
  /// NVIDIA_TF32_OVERRIDE=0). nullopt for anything else.
  static std::optional<MathMode> parse(std::string_view name);
  [[nodiscard]] std::string name() const;
  auto operator<=>(const MathMode&) const = default;
};
/// The dtype whose peak an op of `op_type` computing in `dtype` runs at (F32 -> TF32 where
/// allowed).
Dtype compute_dtype(std::string_view op_type, Dtype dtype, const MathMode& m);
/// A depthwise convolution or gradient (one input channel per group, C/groups = 1): PyTorch's
/// native conv_depthwise kernels by type name (aten::_conv_depthwise2d, ...), or an ONNX-import
/// Conv / ConvBackpropInput / ConvBackpropFilter whose weight is [M, 1, k...] on C > 1 input
/// channels. Its F32 math stays on the CUDA cores under every math mode (docs/cost-model.md).
bool depthwise_conv(const Op& op);
/// Sets every F32 convolution / matmul op's compute dtype to TF32 where `m` allows it (its
/// signature keeps F32, as profilers record it), except depthwise convolutions
/// (depthwise_conv), and records metadata "math_mode".
void apply_math_mode(Graph& g, const MathMode& m);
/// Sets every convolution's and batch norm's memory format (Op::layout) to `l` and records
/// metadata "layout" (a batch norm's decides whether it runs NCHW's one block per channel).
/// The ONNX import states NCHW (what its tensors are); `--graph-opt layout=nchw|nhwc` states
/// how the framework ran the model (PyTorch's default NCHW, or channels_last).
void apply_layout(Graph& g, Layout l);
/// The bytes cuDNN's layout transforms move for one convolution call (forward, input or weight
/// gradient): an f16/bf16 convolution on a GPU whose Op::layout is NCHW runs NHWC tensor-core
/// kernels behind nchwToNhwc / nhwcToNchw transforms, one read and one write of every operand,
/// 2 x (bytes read + written). 0 for other ops, dtypes (TF32's tf32_eff_max was measured with
/// its transforms in), layouts and devices, and for depthwise convolutions (direct CUDA-core
/// kernels that read NCHW as it is). Sources in docs/cost-model.md.
double nchw_transform_bytes(const Op& op, const DeviceSpec& spec);

/// Roofline efficiency parameters (defaults and sources in docs/cost-model.md).
struct RooflineParams {
  double compute_eff_max = 0.70;    ///< large GEMM/conv fraction of peak
  double compute_half_flops = 2e8;  ///< FLOPs at which compute efficiency is half its max
  double memory_eff_max = 0.80;     ///< STREAM-like fraction of peak bandwidth
  double memory_half_bytes = 2e5;   ///< bytes at which memory efficiency is half its max
  Duration min_kernel{2000};        ///< shortest kernel on a GPU (launch-to-end on device)
  Duration min_cpu_op{1000};        ///< shortest op on a CPU worker
  /// compute_eff_max for ops on TF32 tensor cores: measured 0.207 for ResNet-18's cuDNN
  /// convolutions (forward and backward, layout transforms included) on an H200
  /// (docs/cost-model.md). TF32 matmuls keep compute_eff_max.
  double tf32_eff_max = 0.21;
  /// Whether the per-generation measurements apply on a GPU: matmuls of a generation with a
  /// measured GEMM curve (gemm_curve) priced by that curve, and elementwise streaming ops at the
  /// generation's measured streaming efficiency (memory_eff_for). A calibration's fitted
  /// `roofline` (the device's own profile) turns them off: its own efficiencies price every op.
  bool generation_curves = true;
};

/// True for the elementwise ops the GPU traces stream at 0.86-0.92 of DRAM bandwidth: ReLU, its
/// gradient and the tensor add (ONNX/builder names Relu, ReluGrad, Add, AddN; aten relu,
/// threshold_backward, add, clamp_min, with or without the in-place underscore).
bool streaming_elementwise(std::string_view op_type);
/// The fraction of peak bandwidth an op's memory term streams at on this GPU: 0.88 for a
/// streaming_elementwise op on an A100 (8.0) or a Hopper part (measured on the A100 and H200
/// traces, docs/cost-model.md) and on GA10x/AD10x (8.6, 8.9: GDDR6X), else p.memory_eff_max;
/// p.memory_eff_max wherever p.generation_curves is off or the device is not a GPU.
double memory_eff_for(std::string_view op_type, const DeviceSpec& spec, const RooflineParams& p);

// Which of PyTorch's elementwise kernel paths a graph op runs, and that path's measured bandwidth
// fraction per GPU generation (docs/cost-model.md, "Non-vectorised elementwise kernels").
// KernelCostModel's roofline prices a non-vectorised op's memory term at non_vectorised_eff.

/// True for an op PyTorch runs through its non-vectorised elementwise path (TensorIterator's
/// `elementwise_kernel`: per-element offset arithmetic, one element per load) because an operand
/// is not contiguous: a binary op (Add, AddV2, Sub, Mul, Div, RealDiv) with an input of more than
/// one element broadcast to the output's shape (BERT's attention-mask add), or a Transpose (a
/// permuted copy), or a binary op marked Op::strided_operand (a gradient sum of cat-gradient
/// views). Otherwise needs the op's input shapes (its signature); false without them.
bool non_vectorised_elementwise(const Op& op);
/// The fraction of peak bandwidth a non_vectorised_elementwise op streams at on this GPU: 0.61 on
/// Volta (7.0), 0.51 on an A100 (8.0), 0.42 on Hopper (measured, docs/cost-model.md,
/// "Non-vectorised elementwise"), capped at the measured part's rate per SM times the GPU's SMs
/// (an H200 streams at the H100's 1.41 TB/s, 0.29 of its HBM); nullopt elsewhere (other
/// generations, no GPU, p.generation_curves off): memory_eff_for holds.
std::optional<double> non_vectorised_eff(const Op& op, const DeviceSpec& spec,
                                         const RooflineParams& p);

/// A GPU generation's measured GEMM efficiency for one math unit (docs/cost-model.md, "GEMM
/// curves"): a GEMM of F FLOPs whose tiles occupy the device for F_q >= F FLOPs
/// (gemm_quantised_flops) takes t0 + F_q / (P_dtype x e_max) on the unit whose peak is P_dtype,
/// or, where t0 is unset, (F_q + compute_half_flops) / (P_dtype x e_max).
struct GemmCurve {
  double e_max = 0.0;          ///< fraction of P_dtype a large GEMM reaches, in (0, 1]
  std::optional<double> t0_s;  ///< per-call fixed time (s); nullopt: the roofline's half-flops term
  std::string_view source;     ///< where the constants come from
};
/// The measured curve applied to matmuls computing in `dtype` on a GPU of this catalog model
/// (Hopper H100/H200/H800/H20: TF32; V100 and A100: F32 on CUDA cores, and TF32 where the part
/// has no TF32 units; f16/bf16 on Hopper, A100, and a part with a measured half_gemm_e_max such as
/// GA102's RTX 3090 and RTX A6000, whose curve's source views spec.half_gemm_source; TF32 on such
/// a part with TF32 units at the same fraction of its TF32 peak), nullopt elsewhere (the
/// roofline's compute_eff_max then applies).
std::optional<GemmCurve> gemm_curve(const DeviceSpec& spec, Dtype dtype);
/// bf16 on an NVIDIA GPU without bf16 tensor cores (compute capability below 8.0: Volta, Turing,
/// Pascal, Kepler): PyTorch runs it (torch.cuda.is_bf16_supported() is true there through
/// emulation), cuBLAS's CUDA_R_16BF GEMMs on the CUDA cores, at this fraction of the rate the same
/// GEMM reaches in F32 there (measured torch.mm bf16 / fp32 on parts the catalog does not price:
/// sm_70 0.727, sm_75 0.560, sm_6x and older 0.546; docs/cost-model.md, "bf16 without bf16
/// tensor cores"). A bf16 matmul or (non-depthwise) convolution there is priced as the same op in
/// F32 with its compute rate times this factor. nullopt for other GPUs, CPUs and unknown archs.
std::optional<double> bf16_emulation_factor(const DeviceSpec& spec);
/// Throws InputError (`where`, the op) when `op` cannot run on `spec` because the framework
/// refuses it: an FP8
/// matmul or convolution on a GPU without FP8 tensor cores (NVIDIA compute capability below 8.9,
/// AMD other than gfx942): torch._scaled_mm is "only supported on CUDA devices with compute
/// capability >= 9.0 or 8.9, or ROCm MI300+" (aten/src/ATen/native/cuda/Blas.cpp).
/// `device_name` names the device in the message.
void check_runnable(const Op& op, const DeviceSpec& spec, const std::string& device_name,
                    const std::string& where);
/// Wave/tile quantisation of a batch of `b` GEMMs of M x N outputs over a K reduction on a GPU of
/// `sm_count` SMs: the FLOPs its thread-block tiles (64x32 ... 256x128, the best) occupy the device
/// for. With at least as many tiles as SMs, whole waves of one tile per SM, each tile streaming
/// all of K; with fewer, the reduction is split across SMs (split-K) but no SM's share is shorter
/// than min(K, 256). Never below 2bMNK; 2bMNK for unknown shapes or sm_count <= 0. Non-decreasing
/// in b, M, N and K.
double gemm_quantised_flops(double b, double m, double n, double k, int sm_count);
/// Whether `op` is a tensor-core GEMM on `spec` (NVIDIA compute capability >= 7.0; f16/bf16, or
/// TF32 on a part with TF32 units) whose output or any operand of rank >= 2 has a last (leading)
/// dimension that is not a multiple of 16 bytes (8 f16/bf16 elements, 4 TF32): cuBLAS then runs
/// its narrow-load (align1/align2) kernels: no faster than their issue-bound rate where measured
/// (align1_rate: f16/bf16 odd dimensions on 7.5+, even ones on 8.0+; an H200 and an RTX 4090),
/// else (TF32, Volta, align4) at kMisalignedGemmEff (0.74) of the aligned efficiency. A profiled
/// aten op only with the leading dimensions its trace's strides gave (Op::leading_dims: its
/// shapes are views'); recurrent cells and shape-less ops never. docs/cost-model.md,
/// "Misaligned GEMMs".
bool misaligned_gemm(const Op& op, const DeviceSpec& spec);

/// A fitted per-op-class model: t = a + F / (P * e(F)) + B / (BW_fit), e(F) as the roofline's.
struct OpClassModel {
  double intercept_s = 0.0;
  double flop_rate = 0.0;  ///< effective FLOP/s at large sizes (0 = unused)
  double half_flops = 0.0;
  double byte_rate = 0.0;  ///< effective bytes/s (0 = unused)
  int samples = 0;
  double cv_error = 0.0;  ///< cross-validated mean relative error
  std::string clamped;    ///< why a rate was held at the device's peak ("" = not held)
  /// The largest work the fit saw (0 = unknown): beyond kClassCurveRange times it the curve is an
  /// extrapolation and the roofline prices the op instead.
  double max_flops = 0.0;
  double max_bytes = 0.0;
  static constexpr double kClassCurveRange = 2.0;
  [[nodiscard]] bool covers(double flops, double bytes) const {
    return !(max_flops > 0.0 && flops > kClassCurveRange * max_flops) &&
           !(max_bytes > 0.0 && bytes > kClassCurveRange * max_bytes);
  }
  [[nodiscard]] double predict_s(double flops, double bytes) const;
  /// GEMMs on a CPU (fitted from a grid of shapes, calibration/kernel_fit.cpp): a cost per byte
  /// of the output (C written once per K-panel: small K pays it per few FLOPs) and per matrix of
  /// a batched GEMM (each is its own BLAS call), on top of predict_s. 0 = unused.
  double out_byte_rate = 0.0;  ///< output bytes/s
  double per_matrix_s = 0.0;   ///< per matrix of a batched GEMM
  /// A CPU streaming curve (ByteSource::Sweep): fitted and priced on bytes stretched by the
  /// rig's sweep at the op's working set, not by the cache levels.
  bool sweep = false;
  [[nodiscard]] double predict_s(double flops, double bytes, double out_bytes,
                                 double matrices) const;
};

/// One level of a CPU's memory hierarchy as `tools/profile_rig.py` measured it: an op whose
/// working set (bytes read + written) is at most `bytes` (0 = no limit: DRAM) streams at `byte_s`.
/// Sizes from /sys/devices/system/cpu/cpu0/cache.
struct MemoryLevel {
  std::string name;  ///< "L2", "L3", "DRAM"
  double bytes = 0.0;
  double byte_s = 0.0;
};
/// The rate an op with this working set streams at: the first level it fits (0 if `m` is empty).
double memory_level_rate(const std::vector<MemoryLevel>& m, double working_set);
/// How many times longer its bytes take than at the hierarchy's fastest level (1 if `m` is
/// empty). CPU class curves are fitted and applied on bytes x this factor, so one curve serves a
/// cache-resident add and one that streams from DRAM.
double memory_stretch(const std::vector<MemoryLevel>& m, double working_set);
/// Where a CPU op's bytes come from, as its class curve was fitted and is applied:
/// - Levels: the first cache level (sizes from /sys) its working set fits (memory_level_rate);
///   GEMMs, convolutions, BatchNorm, softmax, dropout, pools, reductions.
/// - Sweep: the rig's streaming sweep read at the working set (sweep_rate): the streaming classes
///   (elementwise with the optimizer updates, copies), whose curve is the sweep's own kind of call.
///   A 28 MB update streams at the sweep's 24-48 MB rate (25 GB/s on the 2026-12-03 VM), where the
///   /sys L3 of 32 MiB said 72.
/// - Dram: DRAM whatever the size: an activation's gradient (ReluGrad, torch's
///   threshold_backward), which reads the forward's saved output a whole pass after it was
///   written and writes a fresh gradient (docs/cost-model.md, "Memory levels of a CPU").
enum class ByteSource { Levels, Sweep, Dram };
/// The sweep's rate at `working_set`: log-linear between the two points around it, the first
/// point's below the sweep and the last one's above it (0 if `sweep` is empty).
double sweep_rate(const std::vector<MemoryLevel>& sweep, double working_set);
/// The rate and the stretch (its slowdown against the fastest rate of `levels` and `sweep`
/// together; Levels: memory_stretch's) of an op's bytes from `source`. Without a sweep, Sweep is
/// Levels; without a DRAM level (bytes 0), Dram is the last level.
double cpu_byte_rate(const std::vector<MemoryLevel>& levels, const std::vector<MemoryLevel>& sweep,
                     double working_set, ByteSource source);
double cpu_byte_stretch(const std::vector<MemoryLevel>& levels,
                        const std::vector<MemoryLevel>& sweep, double working_set,
                        ByteSource source);
/// A CPU op whose bytes come from DRAM (ByteSource::Dram): ReluGrad, aten::threshold_backward.
bool reads_saved_activation(std::string_view op_type);

/// The host side `placesim calibrate` measured on a profile's annotated steps: host time per
/// launched GPU activity (framework dispatch, autograd, optimizer, Python), applied as the launch
/// overhead of the GPUs the calibration matches (apply_host_calibration).
///
/// When the profile's host threads could be read op by op (`per_phase` not empty), the host cost
/// is a per-framework-op model instead (KernelCostModel::host_time): host time per graph op by
/// phase and op type ("forward:Conv", "backward:ConvBackpropFilter"; the framework op's wall time
/// on its thread plus the Python/engine gap before it), a default per phase, the optimizer (per
/// parameter, and a multi-tensor step's host time once per GPU) and a per-step
/// remainder (Python loop, zero_grad, step tail) paid once per GPU.
struct HostCalibration {
  Duration launch_overhead;                   ///< host time per launched GPU activity
  std::string profile;                        ///< the profile it was measured on
  int steps = 0;                              ///< annotated steps it is the median of
  double activities_per_step = 0.0;           ///< GPU activities launched per step
  std::map<std::string, Duration> per_op;     ///< "phase:OpType" -> host time per graph op
  std::map<std::string, Duration> per_phase;  ///< "forward"/"backward" -> any other op type
  Duration per_parameter{0};   ///< per update op: grad accumulation (+ per-parameter optimizer)
  Duration optimizer_step{0};  ///< a foreach optimizer's host time per step, once per GPU
  Duration per_step{0};        ///< Python loop, zero_grad, step tail: once per step per GPU
  std::string optimizer;       ///< "foreach", "per-parameter" or "" (not seen)
  /// A CPU's host side (tools/profile_rig.py): every framework op pays launch_overhead on the
  /// worker before it runs, an update op per_parameter more, ops of phase Other nothing, and the
  /// step per_step once (the Python between ops, zero_grad, AccumulateGrad: no graph op stands
  /// for them). Applies to CPU devices only; per_op/per_phase are then empty.
  bool cpu = false;
  [[nodiscard]] bool per_op_model() const { return !per_phase.empty(); }
};

/// Calibrated kernel times (and host cost) for one device model.
struct DeviceCalibration {
  std::map<std::string, Duration> exact;           ///< signature key -> measured mean
  std::map<std::string, OpClassModel> by_op_type;  ///< op type -> fitted model
  std::optional<RooflineParams> roofline;          ///< fitted efficiency curve, if any
  std::optional<HostCalibration> host;             ///< measured host cost per launch, if any
  /// The shortest kernel of this device as profiled (kernel_floor_s: the 5th percentile of the
  /// profile's kernel durations); replaces RooflineParams::min_kernel in every rule that has a
  /// floor. Unset (a manifest, a CPU, too few kernels): the 2 us default.
  std::optional<Duration> min_kernel;
  /// The GPU's own idle between two kernels queued back to back on one stream, as profiled
  /// (calibration::kernel_gap_of_profiles); apply_kernel_gap_calibration makes it the matched
  /// GPUs' DeviceSpec::kernel_gap. Unset (too few queued pairs, a manifest, a CPU): the cluster's.
  std::optional<Duration> kernel_gap;
  std::vector<MemoryLevel> memory;  ///< a CPU's cache hierarchy, ascending (DRAM last); or empty
  /// A CPU's streaming rate by working set (the rig's memory_sweep points, ascending); or empty
  std::vector<MemoryLevel> sweep;
  /// A CPU's SIMD width in floats (a rig manifest's vector_lanes): its convolutions are fitted
  /// and priced on lane_padded_flops. 0 = unknown (no padding).
  int vector_lanes = 0;
};

struct Calibration {
  std::string source;                                ///< file it came from
  std::map<std::string, DeviceCalibration> devices;  ///< device model (or device name) -> data
};

Calibration load_calibration(const std::string& path);  ///< YAML; throws InputError
std::string calibration_to_yaml(const Calibration& c);

/// The calibration entry for a device: by device name, then by its catalog model (nullptr if none).
const DeviceCalibration* find_device_calibration(const Calibration& c, const Device& device);
/// The entry (and its key) whose key the catalog reads as the same model as `name` ("H200",
/// printed by the trace, and "H200-SXM-141GB"): the first in key order, else {nullptr, ""}.
/// Walks the catalog per key: for loading a calibration, not for pricing an op.
std::pair<const DeviceCalibration*, std::string> find_calibration_of_model(const Calibration& c,
                                                                           std::string_view name);

/// Sets the launch overhead of every GPU of `cluster` whose calibration entry
/// (find_device_calibration) has a host cost to that cost. A GPU whose cluster file set a
/// launch_overhead other than its catalog model's default keeps it (an explicit value wins; a
/// GPU of no catalog model always keeps its own). Returns one line per device for the notes.
std::vector<std::string> apply_host_calibration(Cluster& cluster, const Calibration& c);
/// Sets DeviceSpec::kernel_gap of every GPU of `cluster` whose calibration entry has a measured
/// kernel_gap. A GPU whose cluster file set a kernel_gap other than its default (the catalog
/// model's, or default_kernel_gap of its explicit `arch`) keeps it. One line per device.
std::vector<std::string> apply_kernel_gap_calibration(Cluster& cluster, const Calibration& c);
/// What every command's --calibration does: load_calibration, then apply_host_calibration and
/// apply_kernel_gap_calibration to `cluster`, their lines appended to `notes` (the command prints
/// them on stderr).
std::shared_ptr<const Calibration> use_calibration(const std::string& path, Cluster& cluster,
                                                   std::vector<std::string>& notes);

class KernelCostModel {
 public:
  KernelCostModel() = default;
  explicit KernelCostModel(RooflineParams p) : roofline_(p) {}
  void set_calibration(std::shared_ptr<const Calibration> c) { calibration_ = std::move(c); }
  [[nodiscard]] const RooflineParams& roofline() const { return roofline_; }
  /// The calibration entry pricing `device` (find_device_calibration), or nullptr.
  [[nodiscard]] const DeviceCalibration* calibration_for(const Device& device) const {
    return calibration_ ? find_device_calibration(*calibration_, device) : nullptr;
  }

  /// Which rule produced a time (for reports): the fall-back chain above. Storage: an op that
  /// only names a tensor already in memory (stores_only), which launches no kernel.
  /// View: a GPU op that only re-describes its input's memory (is_view), which launches no kernel.
  /// NchwTransforms: the roofline's time plus the NCHW layout transforms' bytes at the memory
  /// rate (nchw_transform_bytes); class curves, exact entries and measurements already hold them.
  /// MisalignedGemm: the roofline (or a generation's GEMM curve) pricing a tensor-core GEMM whose
  /// leading dimensions are not multiples of 16 bytes at the align1 kernels' rate
  /// (misaligned_gemm).
  enum class Source {
    Measured,
    Exact,
    Fitted,
    Roofline,
    Storage,
    View,
    NchwTransforms,
    MisalignedGemm
  };
  struct Estimate {
    Duration time;
    Source source;
    bool clamped = false;  ///< a class curve faster than the device's peak, raised to it
    /// A fused attention op's in-kernel dropout (Op::dropout) priced in; `--pricing` names the
    /// rule "<source>+attention-dropout".
    bool attention_dropout = false;
  };
  [[nodiscard]] Estimate estimate(const Op& op, const Device& device) const;
  [[nodiscard]] Duration op_time(const Op& op, const Device& device) const {
    return estimate(op, device).time;
  }
  [[nodiscard]] Duration roofline_time(const Op& op, const DeviceSpec& spec) const;

  /// Host time of launching `op` on `device` under the calibration's per-op host model
  /// (HostCalibration): by "phase:type", else the phase's default; ops of phase Other
  /// (variables, placeholders, running statistics) are no framework op and cost 0, as do
  /// stores_only ops on any GPU, with or without a host model; an update op
  /// costs per_parameter. On a CPU with a CPU host model (HostCalibration::cpu): 0 for Other,
  /// launch_overhead (+ per_parameter for updates) otherwise.
  /// nullopt where no such model applies: a CPU without one, no host model, or a GPU
  /// whose cluster file set its own launch_overhead (it then differs from the calibration's,
  /// apply_host_calibration): the device's launch_overhead is charged per op. On a GPU without
  /// any calibrated host cost, an op with Op::host_before costs launch_overhead + host_before.
  [[nodiscard]] std::optional<Duration> host_time(const Op& op, const Device& device) const;
  /// The per-step host remainder charged once per step on `device`'s launcher (0 if none).
  [[nodiscard]] Duration step_host_time(const Device& device) const;
  /// A foreach optimizer's host time per step, charged once per step on `device`'s launcher
  /// before its first update op (each data-parallel rank runs its own optimizer step).
  [[nodiscard]] Duration optimizer_host_time(const Device& device) const;

 private:
  [[nodiscard]] const HostCalibration* host_model(const Device& device) const;
  RooflineParams roofline_;
  std::shared_ptr<const Calibration> calibration_;
};

/// "measured", "exact", "class-curve", "roofline", "storage", "view", "nchw-transforms".
std::string to_string(KernelCostModel::Source s);

/// The name of the cost-model rule that priced an op, as `simulate --pricing` and the Chrome
/// trace's "priced by" write it: to_string(Estimate::source), except that an exact entry keyed by
/// the op name alone (a signature without input shapes, from a profile recorded without shapes)
/// is "exact-name": calibrate keeps such an entry only where the name's calls agreed
/// (calibration::name_entry_consistent; docs/cost-model.md, "Look-up order").
std::string pricing_rule(const KernelCostModel::Estimate& e, const Op& op);

/// The bytes per second one thread block of an NCHW training BatchNorm (one block per channel)
/// streams on a GPU of memory bandwidth `bw` B/s and `sm_count` SMs: the lesser of its
/// Little's-law ceiling (21.8 GB/s forward, 13.65 GB/s backward; the H200 traces) and a share
/// of its SM's slice of the bandwidth (0.87 x bw / sm_count forward, 0.685 backward; the
/// A100-SXM4-40GB trace). The ceiling alone when `sm_count` or `bw` is unknown (<= 0). The
/// ceiling counts elements: measured on F32, it scales by `elem_bytes` / 4 for narrower types
/// (an f16/bf16 block keeps half the bytes in flight; the share bound stays in bytes).
double batch_norm_channel_rate(bool backward, double bw, int sm_count, double elem_bytes = 4.0);

/// BatchNorm that runs NCHW on a GPU of memory bandwidth `bw` B/s and `sm_count` SMs: PyTorch/ONNX
/// names (`input0` its first input's [N, C, H, W]; any `layout`: NHWC kernels are not measured),
/// or the builders' FusedBatchNorm(Grad) when `layout` is NCHW ([N, H, W, C]; `--graph-opt
/// layout=nchw`, PyTorch's kernels on the builder's tensors): how many times longer its bytes
/// take than at `bw`, as C channels stream at most C x batch_norm_channel_rate:
/// max(1, bw / (C x rate)). 1 for other ops, layouts and shapes. `norm` class curves are fitted
/// and applied on bytes x this factor, so one curve serves 64 channels and 512. `elem_bytes`:
/// the input's element size (batch_norm_channel_rate).
double batch_norm_stretch(std::string_view type, const std::vector<std::int64_t>& input0, double bw,
                          int sm_count, std::optional<Layout> layout = std::nullopt,
                          double elem_bytes = 4.0);

/// PyTorch's LayerNorm CUDA kernels (aten/src/ATen/native/cuda/layer_norm_kernel.cu) over `rows` x
/// `cols` elements of `elem_bytes` on a GPU of `sm_count` SMs with `threads_per_sm` resident
/// threads, memory bandwidth `bw` B/s, given `memory_s`, the roofline's time for the op's bytes.
/// Forward (vectorized_layer_norm_kernel): one 128-thread block per row, threads_per_sm / 128
/// resident per SM; each wave of rows pays a fixed block latency (Welford reduction, the row's
/// second pass): memory_s + ceil(rows / (sm_count x blocks per SM)) x 2.9 us. Backward: the input
/// gradient (layer_norm_grad_input_kernel_vectorized, the same grid) at 1.1 us a wave plus
/// GammaBetaBackwardCUDAKernelTemplate: one 32 x 32 block per 32 columns walking every row (rows
/// <= 65536 or cols / 32 >= sm_count / 2), so min(ceil(cols / 32), sm_count) SMs read x and dy at
/// 0.87 of an SM's slice of `bw` each (batch_norm_channel_rate's share), at most `bw` x
/// memory_s's efficiency. The latencies are the H200's (tools/kernel_rig.py, 32768 rows);
/// docs/cost-model.md, "LayerNorm". 0 when a dimension or `sm_count` is not positive.
double layer_norm_kernel_time(bool backward, double rows, double cols, double elem_bytes,
                              double memory_s, double rate, double bw, int sm_count,
                              int threads_per_sm);

/// PyTorch's cross-entropy over [rows, cols] logits of `elem_bytes` wider than 1024 elements
/// (aten/src/ATen/native/cuda/SoftMax.cu, LossNLL.cu) on a GPU of `sm_count` SMs, `threads_per_sm`
/// resident threads, bandwidth `bw` and memory rate `rate` (B/s). Forward: cunn_SoftMaxForward,
/// one 1024-thread block per row; a wave of sm_count x floor(threads_per_sm / 1024) rows costs
/// 9.37 us plus four passes of its rows at 2.37 x `bw` (re-reads from L2), at least one read and
/// one write at `rate`; then nll_loss's one-block forward, 17.9 us. Backward: the gradient's zero
/// fill at `rate`, cunn_SoftMaxBackward (512-thread blocks, 0.86 us a wave, four passes at
/// 0.89 x `bw`) and nll_loss's one-block backward, 9.4 us. Constants from the H200 kernel rig's
/// 2048-row cases; docs/cost-model.md, "Vocabulary cross-entropy". 0 when an argument is not
/// positive.
double vocab_xent_kernel_time(bool backward, double rows, double cols, double elem_bytes,
                              double rate, double bw, int sm_count, int threads_per_sm);

/// PyTorch's dense embedding gradient (embedding_dense_backward_cuda, aten/src/ATen/native/cuda/
/// Embedding.cu and EmbeddingBackwardKernel.cu) of `indices` looked up in a [rows, cols] table of
/// `elem_bytes` elements, on a GPU of `sm_count` SMs streaming at `rate` (B/s): the zero fill of
/// the [rows, cols] gradient at `rate`, then for at most 3072 indices
/// embedding_backward_feature_kernel (ceil(cols / 32) blocks walking the indices 32 at a time,
/// two dependent memory round trips of 750 ns per chunk), else the sort path: cub's radix sort of
/// the 64-bit indices and the segment bookkeeping, 82.1 us of small kernels (the H200 GPT-2 124M
/// batch-8 step's 8192 indices; plus 8 passes of 32 B a key at `rate`), and compute_grad_weight
/// and sum_and_scatter, one thread per index and column each, two element accesses a thread at
/// 2.4 G accesses/s per SM (PyTorch's scalar-load kernels, kBroadcastElementsPerSmSecond).
/// docs/cost-model.md, "Embedding gradients". 0 when an argument is not positive.
double embedding_grad_kernel_time(double indices, double rows, double cols, double elem_bytes,
                                  double rate, int sm_count);

/// Wave/tile quantisation of a convolution (forward, input gradient, weight gradient) on a GPU of
/// `sm_count` SMs: the FLOPs its implicit-GEMM kernels occupy the device for. Each GEMM's
/// M x N output is cut into thread-block tiles (the xmma/CUTLASS tiles of the H200 traces' kernel
/// names, 64x32 to 256x128, the one that fills the device best), a wave runs one tile per SM, and
/// every tile streams the whole reduction dimension (K = F / 2MN): max(F, waves x SMs x 2 x tile
/// x K). Fewer tiles than SMs (ResNet-18 at batch 8: 16-64) cost one tile's whole reduction
/// however few FLOPs the op has. Forward and input gradient only: the weight gradient's long
/// reduction (N x P x Q) is split across blocks (split-K) and loses no wave. `output` is the graph
/// op's first output shape (empty for a profiled aten op, whose GEMMs follow from `inputs`).
/// `flops` unchanged for other ops, unknown shapes or sm_count <= 0. Class curves are fitted
/// (calibration/kernel_fit) and applied on it.
double wave_quantised_flops(std::string_view type,
                            const std::vector<std::vector<std::int64_t>>& inputs,
                            const std::vector<std::int64_t>& output, double flops, int sm_count);
/// The same for a graph op on a device (its signature's inputs, its first output).
double wave_quantised_flops(const Op& op, const DeviceSpec& spec);

/// Vector-lane padding of a convolution on a CPU whose kernels (oneDNN's direct convolutions
/// under PyTorch) vectorise over the channels of the tensor they write, `lanes` floats at a time
/// (8 with AVX2, 16 with AVX-512): the forward over its output channels K, the input gradient
/// over the input channels C, the weight gradient over K. A channel count that is not a whole
/// number of vectors leaves lanes idle, and the op runs as if it had ceil(ch / lanes) x lanes
/// channels: LeNet-5's 1 -> 6 and 6 -> 16 layers, an RGB stem's input gradient (C = 3: 8/3 of
/// its FLOPs). Returns the FLOPs so padded (a profiled aten convolution_backward computes both
/// gradients, half the FLOPs each, each padded on its own channels); `flops` unchanged for other
/// ops (transposed convolutions included), unknown shapes or lanes <= 1. Class curves are fitted
/// (calibration/kernel_fit) and applied on it.
double lane_padded_flops(std::string_view type,
                         const std::vector<std::vector<std::int64_t>>& inputs,
                         const std::vector<std::int64_t>& output, double flops, int lanes);
/// The same for a graph op (its signature's inputs, its first output).
double lane_padded_flops(const Op& op, int lanes);

/// True for a shape-only op PyTorch runs as a view of its input's memory (Flatten, Reshape,
/// Squeeze, Unsqueeze, Identity, View and the graphs' gradients of the first four): it launches
/// no kernel (the H200 ResNet-18 traces' aten::flatten / aten::view launch none), so on a GPU it
/// costs no kernel time (its host dispatch is still charged). Transpose is not one: where a
/// framework runs it as a view, the copy happens in whichever op first needs it contiguous.
bool is_view(std::string_view type);

/// True for an op with no inputs that only names storage: a parameter (VariableV2, Variable,
/// VarHandleOp), an input (Placeholder), a constant (Const, Constant) or BatchNorm running
/// statistics (RunningStatistic). PyTorch launches nothing for these (no aten op in a trace):
/// they cost no kernel time and, on a GPU, no host time.
bool stores_only(const Op& op);

/// Per op of a placed graph, the rule that priced it on its device, as a JSON object:
/// {"rules": {"roofline": N, ...}, "clamped": N, "ops": [{"op", "device", "rule", "time_ns"
/// [, "clamped": true]}, ...]} (`placesim simulate --pricing FILE` writes it).
std::string pricing_to_json(const Graph& g, const Cluster& c,
                            const std::vector<DeviceId>& device_of, const KernelCostModel& costs);

}  // namespace placesim::sim

// Kernel calibration: measured op times out of profiles, an exact table per signature and a fitted
// per-op-class model for unseen shapes, with the fit error measured by leave-one-shape-out
// cross-validation.
//
//   using namespace placesim::calibration;
//   std::vector<OpSample> s = op_samples_from_profile(read_profile("trace.json"),
//   "A100-SXM4-40GB"); CalibrationFit fit = fit_calibration(s, "trace.json"); std::string yaml =
//   sim::calibration_to_yaml(fit.calibration);   // `placesim calibrate -o` for (const
//   ClassFitReport& r : fit.classes) print(r.op_class, r.cv_error);
//
// Per op class (gemm, conv, elementwise, reduction, norm, ...) the model is
//   t = a + F / R_f + B / R_b,   a >= 0,  R_f <= P (the device's peak for the class's compute
//   dtype under the math mode),  R_b <= BW (its memory bandwidth),
// fitted by bounded least squares on relative error (each sample weighted by 1/t). The effective
// rate F / t then rises monotonically with F and saturates at R_f: the roofline's efficiency curve
// e(F) = F / (F + F_half) is F / (P e(F)) = F/P + F_half/P, its small-kernel penalty the intercept
// a, so sim::OpClassModel's half_flops stays 0. A fit the bounds decided says so in `clamped`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "calibration/trace.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"

namespace placesim::calibration {

/// FLOPs and bytes of one op from its name and input shapes (shape rules in docs/calibration.md).
struct WorkEstimate {
  double flops = 0.0;
  double bytes = 0.0;
  std::string op_class;    ///< "gemm", "conv", "elementwise", "reduction", "norm", "copy", "other"
  double out_bytes = 0.0;  ///< gemm: bytes of the output matrix (or matrices); conv: weights
  double matrices = 1.0;   ///< gemm: matrices of a batched GEMM (bmm's batch); BatchNorm: N x C
  /// pool: `flops` are the window's comparisons, kernel area x outputs (a rig row's kernel_shape)
  bool window = false;
  /// conv_bwd: the weight gradient alone (a first layer's backward; a rig row's input_grad false)
  bool weight_grad_only = false;
};
WorkEstimate estimate_work(const std::string& op,
                           const std::vector<std::vector<std::int64_t>>& shapes, sim::Dtype dtype);
/// The class an op name belongs to (aten names and the graph builders' / ONNX type names).
std::string op_class_of(const std::string& op);
/// FLOPs of a forward convolution from its real stride, padding, dilation and groups, read from
/// the profiler's "Concrete Inputs" (torch >= 2.0) by the op's argument positions (conv2d,
/// convolution, _convolution, cudnn/mkldnn/miopen_convolution); nullopt when they are not there.
std::optional<double> conv_flops_from_concrete(const std::string& op,
                                               const std::vector<std::vector<std::int64_t>>& shapes,
                                               const std::vector<std::string>& concrete);
/// FLOPs of a causal fused-attention call (is_causal "True" in the "Concrete Inputs", by the op's
/// argument position: scaled_dot_product_attention, the flash / efficient / cuDNN ops and their
/// backwards): the query-key pairs the causal mask keeps; nullopt when not causal or not recorded.
std::optional<double> attention_flops_from_concrete(
    const std::string& op, const std::vector<std::vector<std::int64_t>>& shapes,
    const std::vector<std::string>& concrete);
/// Dtype from the profiler's "Input type" strings ("float", "c10::Half", ...); F32 when unknown.
sim::Dtype dtype_from_profiler(const std::vector<std::string>& input_types);
/// The operand dtype the names of an op's GPU kernels state, for a trace that recorded no input
/// types (record_shapes=False): "bf16"/"BFloat16" -> bf16; "fp16", "f16", "Half", or a half-
/// precision cuBLAS GEMM ("h1688gemm", "h16816gemm", "h884gemm", "hgemm") -> f16 (cuBLAS and
/// CUTLASS name a GEMM by its operand type, e.g. `ampere_fp16_s16816gemm_fp16_*` has f16 operands
/// and f32 accumulation, `turing_h1688gemm_*` is all half: NVIDIA/cutlass#1025,
/// huggingface/candle#2139; elementwise kernels by their template type, `<c10::Half>`). None when
/// no name states one or the names disagree.
std::optional<sim::Dtype> dtype_from_kernel_names(const std::vector<std::string>& kernel_names);

struct OpSample {
  std::string device;  ///< calibration key: device model (or name)
  sim::Signature signature;
  double seconds = 0.0;  ///< measured time of one call (GPU time, or CPU time for CPU ops)
  int count = 1;         ///< calls averaged into `seconds`
  WorkEstimate work;
};

/// The calibration key of a profiled device: `override_model` if given, else the device name
/// without its vendor prefix, spaces as dashes ("NVIDIA A100-SXM4-40GB" -> "A100-SXM4-40GB"), or
/// "cpu" for a trace without a GPU name.
std::string calibration_key(const std::string& device_name, const std::string& override_model);

/// One sample per framework op that launched GPU work (kernels, memcpys, memsets tied to it by
/// external id -> runtime correlation); for CPU-only traces, one per outermost CPU op. Nsight
/// exports (no framework ops) give one sample per kernel name. `device_model` empty = derived
/// from the profile's device name ("NVIDIA A100-SXM4-40GB" -> "A100-SXM4-40GB") or "cpu".
std::vector<OpSample> op_samples_from_profile(const Profile& p, const std::string& device_model);

/// True when `p` holds GPU activity but no framework op (Nsight exports; Kineto traces recorded
/// without ProfilerActivity.CPU): op_samples_from_profile then keys each GPU activity by
/// kernel_keyed_signature, and `validate --calibration` looks its activities up the same way.
bool kernel_keyed(const Profile& p);
/// The signature of GPU activity `e` in a kernel-keyed profile: the kernel's name, or the
/// activity's kind ("memcpy", "memset") with its size in bytes as its one shape; dtype f32.
sim::Signature kernel_keyed_signature(const TraceEvent& e);

/// The shortest kernel the profiled GPU runs, launch to end on the device: the 5th percentile of
/// the profile's kernel durations (its very shortest are outliers: 0.64 us on the H200 b8 trace,
/// whose 5th percentile is 1.02 us and whose elementwise kernels take 1.0-1.2 us). nullopt with
/// fewer than 20 kernels (the cost model keeps its 2 us default). `calibrate` writes it as the
/// device's `min_kernel`.
std::optional<double> kernel_floor_s(const Profile& p);

/// How far ahead (ns) a kernel's launch call must have returned before its predecessor on the
/// stream ended for the pair to count as queued: the host cannot have caused the idle between
/// them. tools/kernel_gap.py's default --margin; the figures do not move with it (0, 5 or 20 us:
/// the same quantiles on the H200 ResNet-50 b256 trace, docs/validation.md).
inline constexpr std::int64_t kQueuedMarginNs = 5'000;
/// Fewest queued kernel->kernel pairs a gap is written from (as the kernel floor's 20 kernels).
inline constexpr std::size_t kKernelGapMinPairs = 20;

/// The device-side gaps between queued kernels of one profile (or several pooled).
struct QueuedGaps {
  std::vector<std::int64_t> ns;  ///< next start - previous end, per kernel->kernel pair
  bool whole_us = true;          ///< every GPU activity's ts and dur are whole microseconds
};
/// tools/kernel_gap.py's selection: for consecutive GPU activities (kernels, memcpys, memsets) on
/// one (device, stream), in start order, whose second one's launch call ended at least
/// `margin_ns` before the first ended, gap = second start - first end; kept for kernel->kernel
/// pairs (negative ones too: Hopper's programmatic dependent launch). Activities without a linked
/// launch give no pair.
QueuedGaps queued_kernel_gaps(const Profile& p, std::int64_t margin_ns = kQueuedMarginNs);

struct KernelGapFit {
  sim::Duration gap;
  std::size_t pairs = 0;
  bool mean = false;  ///< the mean (whole-microsecond timestamps), else the median
};
/// The GPU's kernel gap from its queued pairs: their median (the upper one, as tools/kernel_gap.py
/// prints), or their mean when the timestamps are whole microseconds (torch <= 2.0: the median of
/// gaps that read 1 or 2 us says 1; the A100 traces' mean is 1.46 us). nullopt with fewer than
/// kKernelGapMinPairs pairs. `calibrate` writes it as the device's `kernel_gap`.
std::optional<KernelGapFit> kernel_gap_of(QueuedGaps g);

/// Samples from a tools/profile_rig.py manifest (its "ops" table: name, input_shapes, dtype,
/// count, mean_us per device). Throws sim::InputError.
std::vector<OpSample> op_samples_from_manifest(const std::string& path,
                                               const std::string& device_model);

/// Upper bounds on a class's fitted rates (0 = unknown: unbounded).
struct RateBounds {
  double max_flop_rate = 0.0;  ///< FLOP/s: the peak of the unit that runs the class
  double max_byte_rate = 0.0;  ///< B/s: the device's memory bandwidth
  std::string what;            ///< names the peak in notes, e.g. "H200-SXM-141GB tf32"
};

struct FitOptions {
  /// Decides the peak that bounds F32 convolution / matmul fits (docs/cost-model.md).
  sim::MathMode math;
  /// Per device key, a CPU's measured memory hierarchy (a rig manifest's, cpu_side_from_manifest):
  /// its class curves are fitted on bytes stretched by sim::memory_stretch, its GEMMs on the
  /// shape-aware model (per matrix and per output byte too), and the levels go into the
  /// calibration.
  std::map<std::string, std::vector<sim::MemoryLevel>> memory;
  /// Per device key, a CPU's streaming sweep (a rig manifest's memory_sweep points): its
  /// streaming classes (elementwise, copy, optimizer updates) are fitted on bytes stretched by the
  /// sweep's rate at their working set (sim::ByteSource::Sweep), and the points go into the
  /// calibration.
  std::map<std::string, std::vector<sim::MemoryLevel>> sweep;
  /// Per device key, a CPU's SIMD width in floats (a rig manifest's vector_lanes): its
  /// convolution rows are fitted on sim::lane_padded_flops, and the width goes into the
  /// calibration, which the cost model prices them with.
  std::map<std::string, int> vector_lanes;
  /// Per device key, a CPU's peaks (cpu_peak of a rig manifest): they bound its class fits as a
  /// catalog device's peaks bound a GPU's (a catalog device's own peaks win).
  std::map<std::string, RateBounds> cpu_peaks;
};

/// What a rig manifest says about a CPU beyond its op rows: the device key, the memory
/// hierarchy (cache sizes from /sys with the rates the rig's streaming sweep measured) and the
/// host side (per-op dispatch, per-parameter optimizer overhead, and per step the Python between
/// ops, zero_grad and AccumulateGrad, from the model's trace at the --host-batch).
struct ManifestCpu {
  std::string device;
  std::vector<sim::MemoryLevel> memory;
  std::vector<sim::MemoryLevel> sweep;  ///< the streaming sweep's points (manifest memory_sweep)
  std::optional<sim::HostCalibration> host;
  int vector_lanes = 0;  ///< SIMD width in floats (manifest "vector_lanes"); 0 = not recorded
  int fma_units = 0;     ///< vector FMA pipes per core (manifest "fma_units"); 0 = not recorded
  double clock_hz = 0;   ///< core clock the rig measured (manifest "clock_hz"); 0 = not recorded
  std::string clock_source;  ///< how the rig got clock_hz (manifest "clock_source")
  double dispatch_us = 0;    ///< host_side.cpu.dispatch_us, reported only (manifest_host)
};
/// A CPU core's f32 peaks from a rig manifest: FLOP/s = vector_lanes x fma_units x 2 (an FMA is
/// two FLOPs) x clock_hz; B/s = two vector loads a cycle (vector_lanes x 4 bytes x 2 x clock_hz,
/// the L1's load ports on every x86 core since Haswell and Zen 2). max_flop_rate 0 when the
/// manifest lacks one of the three.
RateBounds cpu_peak(const ManifestCpu& cpu);
/// nullopt when the manifest has neither (a GPU-only or older manifest). Throws sim::InputError.
std::optional<ManifestCpu> cpu_side_from_manifest(const std::string& path,
                                                  const std::string& device_model);

struct ClassFitReport {
  std::string device;
  std::string op_class;
  int signatures = 0;      ///< distinct shapes fitted
  double cv_error = -1.0;  ///< mean |pred - meas| / meas over held-back shapes; -1 = too few shapes
  double fit_error = 0.0;  ///< same on the training shapes
  sim::OpClassModel model;  ///< model.clamped says whether a bound decided the fit
  RateBounds bounds;        ///< the peaks it was held to (0 = the device is not in the catalog)
};

/// An op-name entry: a signature without input shapes (traces recorded without
/// `record_shapes`, torch 1.13's bare-list export, Nsight kernel names). Its mean prices another
/// op of that name only when the name's samples agree: at least kNameMinSamples of them, with a
/// coefficient of variation (population standard deviation / mean over the samples, each weighted
/// by its call count) of at most kNameMaxCv. Why these bounds (docs/calibration.md, "Op-name
/// entries"): repeated calls of one shape spread by CV <= 0.227 in the four H200 traces that
/// record shapes (p95 0.06-0.16; copy_ excluded, whose direction is not in its signature), while
/// the names carrying 95 % of the GPU time of the three shapeless A100 traces spread by 0.46-2.6
/// (one name, several sizes); a spread needs three samples to be seen at all.
inline constexpr double kNameMaxCv = 0.25;
inline constexpr int kNameMinSamples = 3;
struct NameSpread {
  std::string device;
  std::string key;  ///< the signature key: op name and dtype ("aten::copy_:f32")
  int samples = 0;  ///< calls (a sample's count included)
  double cv = 0.0;  ///< standard deviation / mean of the calls' times
  double max_over_min = 1.0;
  double total_s = 0.0;  ///< the name's measured time, all calls
  bool kept = false;     ///< written to the exact table (samples agree, or shaped)
  bool shaped = false;   ///< a signature with shapes: always kept; its spread is the noise
};
/// Whether an op-name entry of `samples` calls spreading by `cv` is kept (kNameMaxCv,
/// kNameMinSamples).
bool name_entry_consistent(int samples, double cv);

struct CalibrationFit {
  sim::Calibration calibration;
  std::vector<ClassFitReport> classes;
  int samples = 0;
  /// Every exact-table key of the samples by device and key, with the spread of its calls: the
  /// op-name entries (signatures without shapes), kept or dropped (a dropped one has no exact
  /// entry: its ops fall to the next rule of the chain), and the shaped ones (`shaped`, kept).
  std::vector<NameSpread> names;
};

/// The host side of a profiled step: how much host time the framework spends per GPU activity it
/// launches. On a host-bound step (batch 8 on an H200: GPU 9 % busy) that is the launch overhead
/// per GPU op a graph needs (DeviceSpec::launch_overhead): `calibrate` writes it into the
/// calibration under the device (`host:`), and `--calibration` applies it to that device's GPUs.
struct HostCost {
  std::string device;                ///< calibration device key (as op_samples_from_profile's)
  int steps = 0;                     ///< annotated steps (ProfilerStep#N)
  double step_s = 0.0;               ///< median step wall time
  double activities_per_step = 0.0;  ///< median GPU kernels + copies + memsets launched per step
  double per_activity_s = 0.0;       ///< median over steps of step time / activities
  /// Per framework op (empty when the step's host threads hold no framework ops): host time per
  /// graph op by "phase:class" ("forward:conv", "backward:norm"), each the median over steps of
  /// (the op's wall time on its thread + the host gap before it) / the graph ops it stands for
  /// (a convolution or linear backward node is two graph ops: input and weight gradient).
  std::map<std::string, double> per_class_s;
  std::map<std::string, double> per_phase_s;  ///< "forward"/"backward": all of the phase
  std::map<std::string, std::set<std::string>> class_names;  ///< framework op names per class
  double per_parameter_s = 0.0;   ///< AccumulateGrad per parameter (+ a per-parameter optimizer)
  double optimizer_step_s = 0.0;  ///< a foreach optimizer's host time per step
  double per_step_s = 0.0;        ///< zero_grad, runtime calls outside ops, the step's tail
  std::string optimizer;          ///< "foreach", "per-parameter", "" (no Optimizer.step seen)
  int parameters = 0;             ///< AccumulateGrad nodes per step (median)
  /// From a trace without ProfilerStep annotations (an op microbenchmark): per_class_s is the
  /// median span of the top-level framework ops of each "phase:class" on their thread (dispatch
  /// and runtime calls included) plus the phase's median host gap before an op on the host
  /// threads' merged timeline (the benchmark's Python loop, the autograd engine's scheduling),
  /// per_phase_s the same over the phase, per_parameter_s the AccumulateGrad nodes';
  /// per_step_s and optimizer_step_s are 0 (only a step trace shows the Python loop, zero_grad
  /// and optimizer.step), steps 0, per_activity_s the median span of all its ops.
  bool op_level = false;
  std::map<std::string, std::vector<double>> op_spans_s;  ///< "phase:class"/"parameter" spans
  std::map<std::string, std::vector<double>> op_gaps_s;   ///< per phase: host gap before an op
  bool autograd = false;  ///< backward nodes ran: its forward ops recorded the autograd graph
  int op_launches = 0;    ///< GPU activities in the trace (none: no host model)
};
/// The calibration's host block from a HostCost: per-op costs written under the graph
/// builders'/ONNX op types of each class (and the framework names seen), `profile` recorded.
sim::HostCalibration host_calibration(const HostCost& h, const std::string& profile);
/// nullopt when the profile has no annotated steps or no GPU activity. `profiler_overhead_s`:
/// the profiler's own host cost per recorded framework op, taken out of every host span, gap and
/// step it lies in (0: the trace's host times as recorded; profiler_overhead_per_op).
std::optional<HostCost> host_cost_from_profile(const Profile& p,
                                               const std::string& device_model = "",
                                               double profiler_overhead_s = 0.0);
/// The profiler's host cost per recorded framework op measured on an H200 rig's 16-core Xeon with
/// torch 2.11 (the same batch-1 GPT-2 step unprofiled, profiled without and with shapes:
/// tests/data/calibration/h200_gpt2-124m_sdpa_bf16_b1_train*.json.gz): 5.2 us when the trace
/// recorded input shapes, 2.3 us when not. docs/calibration.md, "The profiler's own cost".
double profiler_overhead_per_op(const Profile& p);
/// The op-level model (HostCost::op_level) of any trace, annotated or not (`calibrate
/// --host-from-ops` uses it for traces without steps); nullopt when the profile has no
/// framework op or no GPU activity.
std::optional<HostCost> host_cost_from_ops(const Profile& p, const std::string& device_model = "");
/// Recomputes an op-level HostCost's medians from its op_spans_s.
void finish_op_host_cost(HostCost& h);
/// Pools `from`'s op spans into `into` (two microbenchmark traces of one device: forward ops and
/// backward ops) and recomputes the medians. Both op-level.
void merge_op_host_cost(HostCost& into, const HostCost& from);

/// Exact table (mean per signature key) + per-class fits, written under every op type name of
/// the class that was seen in the samples plus the builders'/ONNX names of that class. Each
/// class's rates are bounded by the catalog peaks of its device (sample.device looked up with
/// sim::find_device_model; unbounded when it is not there).
CalibrationFit fit_calibration(const std::vector<OpSample>& samples, const std::string& source,
                               const FitOptions& options = {});

/// The bounds for an op class on a catalog device: the highest peak over the class's compute
/// dtypes (`math` maps F32 convolutions/matmuls to TF32) and the memory bandwidth.
RateBounds class_bounds(const sim::DeviceSpec& spec, const std::string& op_class,
                        const std::set<sim::Dtype>& dtypes, const sim::MathMode& math);

/// Fits t = a + F/R_f + B/R_b to (flops, bytes, seconds) points with R_f, R_b within `bounds`;
/// exposed for tests.
sim::OpClassModel fit_op_class(const std::vector<double>& flops, const std::vector<double>& bytes,
                               const std::vector<double>& seconds, const RateBounds& bounds = {});

}  // namespace placesim::calibration

// Readers of real profiles into one event list: PyTorch-profiler / Kineto Chrome-trace JSON
// (.json, .json.gz; current and pre-2022 category names; ROCm traces; the bare-list dialect that
// Debian's torch 1.13 writes) and Nsight Systems SQLite exports.
//
//   using namespace placesim::calibration;
//   Profile p = read_profile("trace.json.gz");          // dispatches on the file's content
//   for (const TraceEvent& e : p.events)
//     if (e.kind == EventKind::Kernel) use(e.name, e.dur_ns, e.device, e.stream);
//   for (const std::string& m : p.missing) std::cerr << "note: " << m << "\n";
//
// Times are integer nanoseconds on the trace's own clock (Kineto microseconds × 1000, rounded;
// traces written in nanoseconds are recognised and not scaled).
// Links (resolved by link_events, which the readers call): every GPU activity to the runtime call
// that launched it (`launch`, by correlation id or the `ac2g` flow) and every runtime call and GPU
// activity to the framework op that issued it (`op`): the innermost CPU op enclosing the call in
// time on the same thread, skipping allocation/view ops (aten::empty, ...) that launch nothing.
// A trace's `External id` is used only where the op it names encloses the call in time: in torch
// <= 2.0 a runtime call's External id is its own correlation id and names an unrelated op.
//
//   for (const TraceEvent& k : p.events)
//     if (k.on_gpu() && k.op >= 0) gpu_ns[p.events[k.op].name] += k.dur_ns;
//   std::cout << p.links.gpu_to_op << " of " << p.links.gpu << " GPU activities linked\n";
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace placesim::calibration {

enum class EventKind {
  CpuOp,          ///< framework operator on a CPU thread (cpu_op / Operator)
  Runtime,        ///< CUDA/HIP runtime or driver call on a CPU thread (cuda_runtime / Runtime)
  Kernel,         ///< GPU kernel (kernel / Kernel)
  Memcpy,         ///< GPU copy (gpu_memcpy / Memcpy)
  Memset,         ///< GPU memset (gpu_memset / Memset)
  Sync,           ///< GPU-side synchronisation record (cuda_sync)
  Annotation,     ///< CPU user annotation (ProfilerStep#N, record_function ranges)
  GpuAnnotation,  ///< GPU user annotation
  Other
};
std::string to_string(EventKind k);

struct TraceEvent {
  EventKind kind = EventKind::Other;
  std::string name;
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;
  std::string pid;  ///< as written (a number or a label such as "CPU functions")
  std::string tid;
  int device = -1;           ///< GPU index for GPU events
  std::int64_t stream = -1;  ///< GPU stream for GPU events
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
  std::int64_t bytes = 0;                             ///< memcpy/memset size
  std::vector<std::vector<std::int64_t>> input_dims;  ///< "Input Dims" when recorded
  std::vector<std::string> input_types;               ///< "Input type" when recorded
  /// "Concrete Inputs" (torch >= 2.0): scalar and list arguments as text ("[2, 2]", "1", "" for
  /// tensors)
  std::vector<std::string> concrete_inputs;
  std::map<std::string, std::string>
      args;                  ///< other scalar args (NCCL collective name, sizes, ...)
  std::int64_t launch = -1;  ///< GPU activity: index in Profile::events of its runtime launch
  std::int64_t op = -1;  ///< runtime call / GPU activity: index of the framework op that issued it
  [[nodiscard]] std::int64_t end_ns() const { return ts_ns + dur_ns; }
  [[nodiscard]] bool on_gpu() const {
    return kind == EventKind::Kernel || kind == EventKind::Memcpy || kind == EventKind::Memset;
  }
};

/// What link_events tied together and what stayed unlinked.
struct LinkReport {
  int gpu = 0;             ///< GPU activities (kernels, memcpys, memsets)
  int gpu_to_launch = 0;   ///< ... tied to their runtime launch
  int gpu_to_op = 0;       ///< ... tied to a framework op (through their launch)
  int launches = 0;        ///< runtime calls that launched GPU work
  int launches_to_op = 0;  ///< ... inside a framework op on their thread
  int by_flow = 0;         ///< GPU activities whose correlation came from an `ac2g` flow only
  int by_external_id = 0;  ///< runtime calls tied by External id (no enclosing op on the thread)
  int external_id_disagrees = 0;  ///< External ids naming an op that does not enclose the call
  int external_id_is_correlation =
      0;  ///< runtime External ids equal to their correlation (torch <= 2.0): unused
  std::map<std::string, int> without_launch;  ///< per kind ("kernel", "memcpy", "memset")
  std::map<std::string, int> without_op;      ///< per kind, GPU activities with a launch but no op
  [[nodiscard]] double gpu_linked_fraction() const {
    return gpu > 0 ? static_cast<double>(gpu_to_op) / gpu : 0.0;
  }
};

struct Profile {
  std::string source;       ///< file path
  std::string dialect;      ///< "kineto", "kineto-pre2022", "torch-bare-list", "nsys-sqlite"
  std::string device_name;  ///< GPU name when the file says ("NVIDIA A100-PG509-200"), else ""
  int rank = -1;            ///< distributed rank when the file says
  int world_size = 0;
  std::vector<TraceEvent> events;    ///< sorted by (ts, longer first, file order)
  std::vector<std::string> missing;  ///< what the file lacks that calibration/validation would use
  LinkReport links;
  bool ns_timestamps = false;  ///< the file's ts/dur were nanoseconds (not Kineto's microseconds)

  /// True when any event ran on a GPU (a kernel, copy or memset): a GPU trace, whether or not
  /// the file names its GPU.
  [[nodiscard]] bool has_gpu_activity() const;
};

/// Ops that allocate or re-view a tensor (aten::empty, empty_strided, resize_, view, ...): they
/// launch no GPU work, so a runtime call inside one belongs to the op around it.
bool launches_nothing(const std::string& op_name);
/// Runtime calls that enqueue GPU work: kernel launches (cudaLaunchKernel, cuLaunchKernel,
/// hipLaunchKernel, hipExtModuleLaunchKernel, ...), graph launches and asynchronous copies and
/// memsets. Each leaves a GPU activity in a complete trace.
bool enqueues_gpu_work(const TraceEvent& e);
/// Throws sim::InputError naming the file for a profile that no step time or kernel time can be
/// measured from: (1) runtime calls enqueued GPU work but the file holds no GPU activity (the
/// profiler recorded the launches, not the kernels: CUDA activity off, or the trace stopped
/// before the GPU ran them), so every op that launched work would pass for CPU work; (2) neither a
/// framework op nor a GPU activity (only runtime calls such as cudaGetDeviceCount, or
/// annotations), so a replay would compare the runtime calls' span with itself.
/// `calibrate`, `validate` and `import et --kineto` call it on every profile they read.
void require_measured_work(const Profile& p);
/// Resolves TraceEvent::launch and ::op for every event and fills Profile::links (see above).
/// The readers call it; exposed for tests and for profiles built in memory.
void link_events(Profile& p);

/// Reads a Kineto/PyTorch Chrome-trace JSON (optionally gzip-compressed) or an Nsight Systems
/// SQLite export, chosen by content (SQLite magic, gzip magic, else JSON). Throws sim::InputError.
Profile read_profile(const std::string& path);
/// Parses Chrome-trace JSON text; `origin` names the file in errors.
Profile parse_kineto_json(const std::string& text, const std::string& origin);
/// Reads an Nsight Systems SQLite export (kernel, memcpy, memset, runtime, sync tables).
Profile read_nsys_sqlite(const std::string& path);

/// Whole file content, gunzipped when it starts with the gzip magic. Throws sim::InputError.
///
/// Inflation stops with an InputError past `max_bytes`, or past 100 times the compressed size when
/// that is larger than 64 MiB (real Chrome traces compress 10-20 times; a gzip bomb a thousand).
inline constexpr std::size_t kMaxInflatedBytes = std::size_t{1} << 30;
std::string read_maybe_gzip(const std::string& path, std::size_t max_bytes = kMaxInflatedBytes);

/// A profiled step: a `ProfilerStep#N` annotation, or the whole trace span when there is none.
struct StepWindow {
  std::string name;
  std::int64_t begin_ns = 0, end_ns = 0;
};
/// Steps of the profile in time order (one per ProfilerStep#N on the busiest CPU thread, else one
/// window spanning every event).
std::vector<StepWindow> profile_steps(const Profile& p);

}  // namespace placesim::calibration

// A Chrome-trace (Trace Event Format) timeline of one simulated step, laid out like a PyTorch
// profiler (Kineto) trace so that Perfetto, chrome://tracing and Holistic Trace Analysis open it
// beside a real one (docs/formats.md "Chrome trace"):
//   - pid = device index; tid = compute stream (GPU) or worker (CPU), one track per copy engine,
//     and the host launch thread of each GPU;
//   - categories as Kineto writes them: cpu_op + cuda_runtime (cudaLaunchKernel, cudaMemcpyAsync)
//     on the launch thread, kernel on streams, gpu_memcpy on copy engines, cpu_op on CPU workers;
//   - `ac2g` flow arrows (ph s/f, bp e) from each launch to its kernel or copy, with the same
//     `correlation` arg on both ends, and `dep` arrows for data and control dependencies;
//   - args on every event: op, op type, phase, FLOPs, bytes, route, the rule that priced the op;
//   - counters (ph C): memory allocated per device; per link (process "links") the throughput in
//     each direction and the number of flows: the mean rate of every active flow, summed.
// Times are microseconds with nanosecond decimals.
//
//   TraceSink trace(cluster);                          // cluster, graph, costs outlive write()
//   trace.describe(graph, &costs);                     // op args and dependency arrows
//   SimOptions o;
//   o.trace = &trace;
//   simulate(cluster, graph, placement, o, costs);
//   trace.write("step.json");                          // temporary name, then rename
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

struct Graph;
class KernelCostModel;

class TraceSink {
 public:
  enum class EngineKind : std::uint8_t { H2D = 0, D2H = 1, Peer = 2 };

  /// A copy segment's place in the dataflow (for args and arrows); producer < 0 = unknown.
  struct CopyOf {
    std::int32_t producer = -1;  ///< op whose output is copied
    std::int32_t output = 0;     ///< output index of that op
    DeviceId dst = -1;           ///< final destination device
    int segment = 0, segments = 1;
  };

  explicit TraceSink(const Cluster& c);

  /// Op args (type, phase, FLOPs, bytes, pricing rule) and dependency arrows come from `g` (and
  /// `costs`, optional). Both must outlive write()/to_json().
  void describe(const Graph& g, const KernelCostModel* costs = nullptr);
  /// Prefixes process names and offsets pids (validate --trace: measured beside predicted).
  void set_process_prefix(std::string prefix, int pid_offset);

  void launch(DeviceId d, std::string_view op, SimTime start, SimTime end);
  /// A kernel on GPU stream `stream`, or an op on CPU worker `stream`.
  void kernel(DeviceId d, int stream, std::string_view op, std::string_view type, SimTime start,
              SimTime end);
  /// A copy segment held by copy engine `slot` of kind `kind` on device `d` (`slot` < 0: no
  /// engine, e.g. host to host, drawn on the source device's "copies" tracks).
  void copy(DeviceId d, EngineKind kind, int slot, std::string_view name, std::int64_t bytes,
            SimTime start, SimTime end, CopyOf of);
  void copy(DeviceId d, EngineKind kind, int slot, std::string_view name, std::int64_t bytes,
            SimTime start, SimTime end) {
    copy(d, kind, slot, name, bytes, start, end, CopyOf{});
  }
  /// The bandwidth phase of the last copy segment on one link of its route.
  void link_flow(LinkId l, std::string_view name, std::int64_t bytes, SimTime start, SimTime end,
                 bool forward = true);
  /// Bytes allocated on device `d` from time `t` on.
  void memory(DeviceId d, SimTime t, std::int64_t bytes);

  [[nodiscard]] std::size_t size() const { return events_.size(); }
  [[nodiscard]] std::string to_json() const;
  /// Writes atomically; throws InputError naming the path if it cannot be written.
  void write(const std::string& path) const;

 private:
  enum class Kind : std::uint8_t { Launch, Kernel, Copy };
  struct Ev {
    Kind kind;
    std::int32_t pid, tid;
    SimTime ts, dur;
    std::string name;
    std::int64_t bytes;  // -1 = none
    CopyOf of;
    std::string route;  // copies: link names
  };
  struct LinkFlow {
    LinkId link;
    bool forward;
    SimTime start, end;
    std::int64_t bytes;
  };
  struct Mem {
    DeviceId d;
    SimTime t;
    std::int64_t bytes;
  };
  struct Index;  // cross-references of the events, built by to_json (trace.cpp)
  std::string track_name(std::int32_t pid, std::int32_t tid) const;
  [[nodiscard]] bool is_gpu(std::int32_t d) const;
  [[nodiscard]] std::int32_t pid_of(std::int32_t d) const { return d + pid_offset_; }
  [[nodiscard]] Index index() const;
  [[nodiscard]] nlohmann::json op_args(const std::string& name, std::int32_t d) const;
  void emit_metadata(const Index& ix, nlohmann::json& evs) const;
  void emit_slices(const Index& ix, nlohmann::json& evs) const;
  void emit_dependencies(const Index& ix, nlohmann::json& evs) const;
  void emit_counters(nlohmann::json& evs) const;

  const Cluster* cluster_;
  const Graph* graph_ = nullptr;
  const KernelCostModel* costs_ = nullptr;
  std::string prefix_;
  int pid_offset_ = 0;
  std::vector<Ev> events_;
  std::vector<LinkFlow> flows_;
  std::vector<Mem> memory_;
};

}  // namespace placesim::sim

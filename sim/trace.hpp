// A Chrome-trace (Trace Event Format) timeline of one simulated step, which Perfetto and
// chrome://tracing open. One process per device with a track for its host launch thread, each
// compute stream (GPU) or worker (CPU), and each copy engine; one process "links" with a track per
// link, where every flow is an async slice (flows on a link overlap). Times are microseconds with
// nanosecond decimals.
//
//   TraceSink trace(cluster);
//   SimOptions o;
//   o.trace = &trace;
//   simulate(cluster, graph, placement, o);
//   trace.write("step.json");                           // temporary name, then rename
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

class TraceSink {
 public:
  enum class EngineKind : std::uint8_t { H2D = 0, D2H = 1, Peer = 2 };

  explicit TraceSink(const Cluster& c);

  void launch(DeviceId d, std::string_view op, SimTime start, SimTime end);
  /// A kernel on GPU stream `stream`, or an op on CPU worker `stream`.
  void kernel(DeviceId d, int stream, std::string_view op, std::string_view type, SimTime start,
              SimTime end);
  /// A copy segment held by copy engine `slot` of kind `kind` on device `d` (`d` < 0: no engine,
  /// e.g. host to host, drawn on the source device's "copies" track).
  void copy(DeviceId d, EngineKind kind, int slot, std::string_view name, std::int64_t bytes,
            SimTime start, SimTime end);
  /// The bandwidth phase of a copy on one link.
  void link_flow(LinkId l, std::string_view name, std::int64_t bytes, SimTime start, SimTime end);

  [[nodiscard]] std::size_t size() const { return events_.size(); }
  [[nodiscard]] std::string to_json() const;
  /// Writes atomically; throws InputError naming the path if it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Ev {
    char ph;                 // 'X' complete, 'b'/'e' async
    std::int32_t pid, tid;
    std::int64_t id;         // async id
    SimTime ts, dur;
    std::string name, cat;
    std::int64_t bytes;      // -1 = none
  };
  std::string track_name(std::int32_t pid, std::int32_t tid) const;

  std::vector<std::string> device_names_;
  std::vector<bool> is_gpu_;
  std::vector<std::string> link_names_;
  std::vector<Ev> events_;
  std::int64_t next_async_ = 1;
};

}  // namespace placesim::sim

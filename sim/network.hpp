// The network as a resource model: copies in their bandwidth phase are flows over the links of
// their route segment, sharing every link by max-min fairness (maxmin.hpp) according to the link's
// SharingPolicy:
//   Shared       one constraint per link, capacity = bandwidth, both directions count;
//   SplitDuplex  one constraint per (link, direction), capacity = bandwidth each;
//   FatPipe      no constraint; the flow's rate is capped at the link's bandwidth (a bound).
// A flow that has `remaining` bytes at rate r (bytes/s) since time t0 finishes at
//   t0 + ceil(remaining / r * 1e9 - 1e-6) ns          (the rounding of units.hpp transfer_time),
// so a flow alone on a path takes exactly transfer_time(bytes, bottleneck). The flows' life cycle
// (settling, rates, completions) is MaxMinModel's (maxmin_model.hpp), shared with CpuShare. A flow
// that crosses a link marked `tcp` is a TCP flow, shared as SimGrid's CM02 model shares it
// (weight-S 0, latency and bandwidth factors 1; simgrid
// src/kernel/resource/models/network_cm02.cpp, NetworkCm02Model::communicate and
// comm_action_set_variable): its max-min weight ("sharing penalty") is its route latency L in
// seconds (1 when L = 0, as SimGrid), so on a saturated link TCP flows get rates proportional to 1
// / L, and its rate is bound by window / (2 L) (TCP-gamma / RTT). Other flows have weight 1e-6 (a 1
// us route), so on links they share with TCP flows they count as a TCP flow over a 1 us route
// would. Rates change only when a flow starts or ends; then only the flows of the touched max-min
// component have their progress brought up to date and their rates recomputed. Latency is not
// handled here: the engine holds a copy for its route latency before starting its flow (SimGrid
// does the same).
//
//   FlowNetwork net(cluster);
//   engine.add_model(&net);
//   net.start(engine.now(), segment.hops, bytes, /*tag=*/copy_index);
//   ... in on_resource: for (int tag : net.completed()) ...
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/engine.hpp"
#include "sim/maxmin.hpp"
#include "sim/maxmin_model.hpp"

namespace placesim::sim {

class FlowNetwork final : public MaxMinModel {
 public:
  explicit FlowNetwork(const Cluster& c);
  /// Forgets all flows and statistics (keeps the link set); for reuse across simulations.
  void reset();

  /// Starts moving `bytes` over `hops` at time `now`; `tag` is reported back on completion
  /// (completed(), in flow-slot order).
  void start(SimTime now, std::span<const Hop> hops, double bytes, std::int32_t tag);

  [[nodiscard]] int active_flows() const { return active(); }

  // Per-link statistics, indexed by LinkId.
  [[nodiscard]] const std::vector<double>& link_bytes() const { return link_bytes_; }
  [[nodiscard]] const std::vector<SimTime>& link_busy() const { return link_busy_; }

 private:
  void on_complete(int slot, SimTime t) override;

  struct FlowStats {
    double bytes = 0.0;
    std::vector<LinkId> links;  // capacity kept when the slot is reused
  };
  std::vector<int> con_fwd_, con_bwd_;  // constraint per link direction (-1 = none)
  std::vector<double> fat_bound_;       // per link: bound for FatPipe, +inf otherwise
  std::vector<double> latency_s_;       // per link, seconds
  std::vector<char> tcp_;               // per link (bytes: read at every flow start)
  double tcp_window_ = 0;
  std::vector<FlowStats> stats_;  // indexed by slot
  std::vector<int> scratch_cons_;
  std::vector<double> link_bytes_;
  std::vector<SimTime> link_busy_, link_since_;
  std::vector<int> link_active_;
};

}  // namespace placesim::sim

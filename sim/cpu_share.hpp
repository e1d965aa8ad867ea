// A CPU socket as a shared processor: the ops running on its worker threads share the socket's
// compute and memory bandwidth by max-min fairness (maxmin.hpp), one constraint of capacity 1
// (the whole socket) per CPU, each op a variable bounded by its per-op cap c (the fraction of the
// socket one op can use: intra-op threads / worker threads, docs/cost-model.md). An op's work W is
// its kernel time at the full socket (the roofline of cost_model.hpp with the socket's peak); at
// rate r (fraction of the socket) it progresses W at r ns per ns, so
//   alone:            t = W / c
//   n ops, equal c:   each runs at min(c, 1/n)   (the socket is work-conserving)
// and an op with `remaining` work at rate r since t0 finishes at t0 + ceil(remaining / r - 1e-6) ns
// (a lone op with c = 1 takes exactly W). Rates change only when an op starts or ends, and only
// the ops of that CPU are touched. The life cycle is MaxMinModel's (maxmin_model.hpp).
//
//   CpuShare cpus(cluster.num_devices());
//   engine.add_model(&cpus);
//   cpus.start(engine.now(), /*processor=*/cpu, /*work_ns=*/kernel_ns, /*cap=*/1.0, /*tag=*/op);
//   ... in on_resource: for (int op : cpus.completed()) ...
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine.hpp"
#include "sim/maxmin.hpp"
#include "sim/maxmin_model.hpp"

namespace placesim::sim {

class CpuShare final : public MaxMinModel {
 public:
  explicit CpuShare(int processors);
  /// Forgets every running op (keeps the processors); for reuse across simulations.
  void reset() { reset_items(); }

  /// Starts `work_ns` of work (ns at the whole processor) on `processor` at `now`, at most `cap`
  /// (in (0, 1]) of the processor; `tag` is reported back on completion (completed(), in slot
  /// order).
  void start(SimTime now, int processor, double work_ns, double cap, std::int32_t tag);

  /// Current share (fraction of its processor) of the op started with `tag`; -1 if not running.
  [[nodiscard]] double share_of_tag(std::int32_t tag) { return rate_of_tag(tag); }
};

}  // namespace placesim::sim

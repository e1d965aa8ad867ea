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
// the ops of that CPU are touched.
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

namespace placesim::sim {

class CpuShare final : public ResourceModel {
 public:
  explicit CpuShare(int processors);
  /// Forgets every running op (keeps the processors); for reuse across simulations.
  void reset();

  /// Starts `work_ns` of work (ns at the whole processor) on `processor` at `now`, at most `cap`
  /// (in (0, 1]) of the processor; `tag` is reported back on completion.
  void start(SimTime now, int processor, double work_ns, double cap, std::int32_t tag);

  SimTime next_completion() override;
  void advance(SimTime t) override;
  /// Tags of the ops that completed at the last `advance`, in slot order.
  [[nodiscard]] std::span<const std::int32_t> completed() const { return completed_; }
  [[nodiscard]] int active() const { return solver_.num_live_variables(); }
  /// Current share (fraction of its processor) of the op started with `tag`; -1 if not running.
  [[nodiscard]] double share_of_tag(std::int32_t tag);

 private:
  struct Work {
    double remaining = 0.0;  // ns of work at the whole processor
    double rate = 0.0;       // fraction of the processor
    SimTime last = 0;
    SimTime finish = kNever;
    std::int32_t tag = -1;
    bool alive = false;
  };
  void resolve();

  MaxMinSolver solver_;
  std::vector<Work> work_;  // indexed by solver variable id
  std::vector<std::int32_t> completed_;
  SimTime pending_time_ = 0;
  bool dirty_ = false;
  bool min_valid_ = false;
  SimTime min_finish_ = kNever;
};

}  // namespace placesim::sim

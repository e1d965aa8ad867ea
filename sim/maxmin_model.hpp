// The life cycle shared by the engine's max-min resource models (FlowNetwork: copies over links;
// CpuShare: ops on a CPU socket): work items that each have an amount of work, share their
// constraints by max-min fairness (maxmin.hpp), progress at their rate, and complete when their
// work is done. A derived model turns its own start() into `start_item` (the item's constraints,
// bound, weight and amount) and may watch completions through `on_complete`.
//
//   class Disks final : public MaxMinModel {
//    public:
//     Disks() : MaxMinModel(/*ns_per_unit=*/1e9) { solver_.add_constraint(2e9); }  // bytes/s
//     void start(SimTime now, double bytes, std::int32_t tag) {
//       const int c = 0;
//       start_item(now, kUnbounded, {&c, 1}, 1.0, bytes, tag);
//     }
//   };
//   engine.add_model(&disks);   ... in on_resource: for (int tag : disks.completed()) ...
//
// Timing. An item with `remaining` units at rate r (units per second when ns_per_unit = 1e9, per
// ns when it is 1) since t0 has remaining - r (t - t0) / ns_per_unit left at t, and finishes at
//   t0 + Duration::from_ns_ceil(remaining / r * ns_per_unit)
// (units.hpp: whole ns, rounded up), so an item alone at a constant rate takes exactly its
// amount's time. Rates change only when an item starts or ends; then only the items of the touched
// max-min component whose rate changed are brought up to date and get new finish times (lazy
// settlement: settling an unchanged item twice would round differently, in the last bits only).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine.hpp"
#include "sim/maxmin.hpp"

namespace placesim::sim {

class MaxMinModel : public ResourceModel {
 public:
  ~MaxMinModel() override = default;
  MaxMinModel(const MaxMinModel&) = delete;
  MaxMinModel& operator=(const MaxMinModel&) = delete;
  SimTime next_completion() final;
  void advance(SimTime t) final;
  /// Tags of the items that completed at the last `advance`, in slot order.
  [[nodiscard]] std::span<const std::int32_t> completed() const { return completed_; }
  /// Items in progress.
  [[nodiscard]] int active() const { return solver_.num_live_variables(); }
  /// Current rate of the item started with `tag`; -1 if it is not in progress. For tests.
  [[nodiscard]] double rate_of_tag(std::int32_t tag);
  /// The solver's invariant check after every solve (maxmin.hpp; default PLACESIM_CHECK_MAXMIN).
  void set_check_invariants(bool on) { solver_.set_check_invariants(on); }
  /// The solver's no-re-solve removals and additions (maxmin.hpp: on by default; off re-solves at
  /// every start and end).
  void set_skip_neutral_removals(bool on) { solver_.set_skip_neutral_removals(on); }
  [[nodiscard]] std::int64_t removals_without_solve() const {
    return solver_.removals_without_solve();
  }
  /// Starts that needed no re-solve (maxmin.hpp, additions_without_solve).
  [[nodiscard]] std::int64_t additions_without_solve() const {
    return solver_.additions_without_solve();
  }

 protected:
  /// `ns_per_unit`: the ns that one unit of work takes at rate 1 (1e9 for bytes at bytes/s).
  explicit MaxMinModel(double ns_per_unit) : ns_per_unit_(ns_per_unit) {}

  /// Starts an item of `amount` units at `now` over `constraints` (solver ids); returns its slot
  /// (the solver's variable id, reused once it completes).
  int start_item(SimTime now, double bound, std::span<const int> constraints, double weight,
                 double amount, std::int32_t tag);
  /// Forgets every item in progress (keeps the constraints).
  void reset_items();
  /// Called by `advance` for each item that completes at `t`, before its slot is freed.
  virtual void on_complete(int /*slot*/, SimTime /*t*/) {}

  MaxMinSolver solver_;

 private:
  struct Item {
    double remaining = 0.0;
    double rate = 0.0;
    SimTime last = 0;  // time `remaining` refers to
    std::int32_t tag = -1;
    bool alive = false;
  };
  void resolve();
  [[nodiscard]] SimTime finish_time(SimTime from, double remaining, double rate) const;

  double ns_per_unit_;
  double unit_per_ns_ = 1.0 / ns_per_unit_;
  std::vector<Item> items_;  // indexed by solver variable id
  // Each slot's finish time, kNever when free (or stalled): apart from the items so that the scans
  // of next_completion() and advance() read one dense array, without a liveness test.
  std::vector<SimTime> finish_;
  // One past the highest live slot: the solver reuses the lowest free ids, so the live slots sit
  // at the bottom and the scans of advance() and next_completion() stop here, not at the
  // historical maximum items_.size().
  int live_end_ = 0;
  std::vector<std::int32_t> completed_;
  SimTime pending_time_ = 0;
  bool dirty_ = false;
  bool min_valid_ = false;
  SimTime min_finish_ = kNever;
  // min_finish_ is at most every slot's finish time and some slot holds it (after a scan, a solve,
  // or advance() over the slots that stay): resolve() then needs no scan unless a slot it
  // re-times held it.
  bool min_held_ = false;
};

}  // namespace placesim::sim

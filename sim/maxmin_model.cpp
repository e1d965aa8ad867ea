#include "sim/maxmin_model.hpp"

#include <algorithm>
#include <cassert>

namespace placesim::sim {

namespace {

// Duration::from_ns_ceil(ns).ns, the same integer for every ns below 2^63 (beyond, both overflow),
// without the libm call that std::ceil is on baseline x86-64 (no SSE4.1 rounding instruction):
// truncation is the ceiling for y <= 0 and for whole y, one more otherwise. Every finish time of
// every flow and op goes through it.
std::int64_t ceil_ns(double ns) {
  const double y = ns - 1e-6;
  const auto i = static_cast<std::int64_t>(y);
  return i + (static_cast<double>(i) < y ? 1 : 0);
}

}  // namespace

SimTime MaxMinModel::finish_time(SimTime from, double remaining, double rate) const {
  if (remaining <= 0.0 || rate == kUnbounded) return from;
  if (rate <= 0.0) return kNever;
  return from + ceil_ns(remaining / rate * ns_per_unit_);
}

int MaxMinModel::start_item(SimTime now, double bound, std::span<const int> constraints,
                            double weight, double amount, std::int32_t tag) {
  assert(!dirty_ || pending_time_ == now);
  // Items of the touched component must be settled at `now` with their old rates before the new
  // variable changes them; resolve() does it, and the new item has made no progress yet.
  const int v = solver_.add_variable(bound, constraints, weight);
  if (static_cast<std::size_t>(v) >= items_.size()) {
    items_.resize(v + 1);
    finish_.resize(v + 1, kNever);
  }
  live_end_ = std::max(live_end_, v + 1);
  Item& it = items_[v];
  it.remaining = amount;
  it.rate = 0.0;
  it.last = now;
  it.tag = tag;
  it.alive = true;
  pending_time_ = now;
  dirty_ = true;
  min_valid_ = false;
  return v;
}

void MaxMinModel::reset_items() {
  for (std::size_t v = 0; v < items_.size(); ++v) {
    if (items_[v].alive) {
      solver_.remove_variable(static_cast<int>(v));
      items_[v].alive = false;
      finish_[v] = kNever;
    }
  }
  solver_.solve();
  completed_.clear();
  live_end_ = 0;
  dirty_ = false;
  min_valid_ = false;
  min_held_ = false;
}

void MaxMinModel::resolve() {
  const SimTime t = pending_time_;
  solver_.solve();
  const std::span<const int> changed = solver_.last_changed();
  SimTime min_changed = kNever;
  for (int v : changed) {
    Item& it = items_[v];
    // Lazy settlement: an item whose rate the solve left unchanged keeps its progress and
    // finish time as they are (SimGrid's lazy update does the same): settling it now and again at
    // its next change rounds differently from settling once then, in the last bits only.
    if (it.last < t && solver_.value(v) == it.rate && it.rate != kUnbounded) {
      min_changed = std::min(min_changed, finish_[v]);
      continue;
    }
    // A re-timed slot that held the last minimum may no longer hold it (see below).
    if (finish_[v] == min_finish_) min_held_ = false;
    // Progress at the old rate up to t (the rate is the item's own copy, which the solve did not
    // touch), then the new rate from t.
    if (it.last < t) {
      if (it.rate == kUnbounded) {
        it.remaining = 0.0;
      } else {
        it.remaining =
            std::max(0.0, it.remaining - it.rate * static_cast<double>(t - it.last) * unit_per_ns_);
      }
      it.last = t;
    }
    it.rate = solver_.value(v);
    finish_[v] = finish_time(it.last, it.remaining, it.rate);
    min_changed = std::min(min_changed, finish_[v]);
  }
  dirty_ = false;
  if (static_cast<int>(changed.size()) == solver_.num_live_variables()) {
    // Every item in progress is in the component just solved (a PCIe tree, one socket): its
    // minimum is the minimum, no scan of the other slots.
    min_finish_ = min_changed;
    min_valid_ = true;
  } else if (min_held_) {
    // min_finish_ was at most every slot's finish time before this solve (the last minimum, or
    // advance()'s over the slots that stay) and held by some slot, and no re-timed slot held it:
    // a slot the solve left alone still does and the others are at or above it, so the minimum
    // is the lesser of it and the re-timed slots'.
    min_finish_ = std::min(min_finish_, min_changed);
    min_valid_ = true;
  } else {
    min_valid_ = false;
  }
  min_held_ = min_valid_;
}

SimTime MaxMinModel::next_completion() {
  if (dirty_) resolve();
  if (!min_valid_) {
    // finish_ is kNever at free slots: a branch-free minimum over one array.
    SimTime m = kNever;
    for (int v = 0; v < live_end_; ++v) m = std::min(m, finish_[v]);
    min_finish_ = m;
    min_valid_ = true;
    min_held_ = true;
  }
  return min_finish_;
}

void MaxMinModel::advance(SimTime t) {
  if (dirty_) resolve();
  completed_.clear();
  SimTime m = kNever;  // the minimum over the slots that stay, for resolve()
  for (int v = 0; v < live_end_; ++v) {
    if (finish_[v] > t) {  // free slots hold kNever > t
      m = std::min(m, finish_[v]);
      continue;
    }
    Item& it = items_[v];
    completed_.push_back(it.tag);
    on_complete(v, t);
    it.alive = false;
    finish_[v] = kNever;
    solver_.remove_variable(v);
    dirty_ = true;
  }
  while (live_end_ > 0 && !items_[live_end_ - 1].alive) --live_end_;
  pending_time_ = t;
  min_valid_ = false;
  min_finish_ = m;
  min_held_ = true;
}

double MaxMinModel::rate_of_tag(std::int32_t tag) {
  if (dirty_) resolve();
  for (const Item& it : items_)
    if (it.alive && it.tag == tag) return it.rate;
  return -1.0;
}

}  // namespace placesim::sim

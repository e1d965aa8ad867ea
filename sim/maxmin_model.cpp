#include "sim/maxmin_model.hpp"

#include <algorithm>
#include <cassert>

namespace placesim::sim {

SimTime MaxMinModel::finish_time(SimTime from, double remaining, double rate) const {
  if (remaining <= 0.0 || rate == kUnbounded) return from;
  if (rate <= 0.0) return kNever;
  return from + Duration::from_ns_ceil(remaining / rate * ns_per_unit_).ns;
}

int MaxMinModel::start_item(SimTime now, double bound, std::span<const int> constraints,
                            double weight, double amount, std::int32_t tag) {
  assert(!dirty_ || pending_time_ == now);
  // Items of the touched component must be settled at `now` with their old rates before the new
  // variable changes them; resolve() does it, and the new item has made no progress yet.
  const int v = solver_.add_variable(bound, constraints, weight);
  if (static_cast<std::size_t>(v) >= items_.size()) {
    items_.resize(v + 1);
    heap_pos_.resize(v + 1, -1);
  }
  Item& it = items_[v];
  it.remaining = amount;
  it.rate = 0.0;
  it.last = now;
  it.finish = kNever;
  it.tag = tag;
  it.alive = true;
  pending_time_ = now;
  dirty_ = true;
  return v;
}

void MaxMinModel::reset_items() {
  for (std::size_t v = 0; v < items_.size(); ++v) {
    if (items_[v].alive) {
      solver_.remove_variable(static_cast<int>(v));
      items_[v].alive = false;
    }
  }
  solver_.solve();
  completed_.clear();
  for (int v : heap_) heap_pos_[v] = -1;
  heap_.clear();
  dirty_ = false;
}

void MaxMinModel::resolve() {
  const SimTime t = pending_time_;
  solver_.solve();
  for (int v : solver_.last_changed()) {
    Item& it = items_[v];
    // Lazy settlement: an item whose rate the solve left unchanged keeps its progress and
    // finish time as they are (SimGrid's lazy update does the same): settling it now and again at
    // its next change rounds differently from settling once then, in the last bits only.
    if (it.last < t && solver_.value(v) == it.rate && it.rate != kUnbounded) continue;
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
    it.finish = finish_time(it.last, it.remaining, it.rate);
    heap_set(v);
  }
  dirty_ = false;
}

SimTime MaxMinModel::next_completion() {
  if (dirty_) resolve();
  return heap_.empty() ? kNever : items_[heap_[0]].finish;
}

void MaxMinModel::advance(SimTime t) {
  if (dirty_) resolve();
  completed_.clear();
  // Everything due, then in slot order (the order of the scan this replaced: the removals'
  // order decides which of them re-solve, so the results stay the same bits).
  done_.clear();
  while (!heap_.empty() && items_[heap_[0]].finish <= t) {
    done_.push_back(heap_[0]);
    heap_erase(heap_[0]);
  }
  std::sort(done_.begin(), done_.end());
  for (int v : done_) {
    Item& it = items_[v];
    completed_.push_back(it.tag);
    on_complete(v, t);
    it.alive = false;
    solver_.remove_variable(v);
    dirty_ = true;
  }
  pending_time_ = t;
}

void MaxMinModel::heap_set(int slot) {
  if (items_[slot].finish == kNever) {
    if (heap_pos_[slot] >= 0) heap_erase(slot);
    return;
  }
  std::size_t i;
  if (heap_pos_[slot] < 0) {
    i = heap_.size();
    heap_.push_back(slot);
    heap_pos_[slot] = static_cast<int>(i);
  } else {
    i = static_cast<std::size_t>(heap_pos_[slot]);
  }
  sift_up(i);
  sift_down(static_cast<std::size_t>(heap_pos_[slot]));
}

void MaxMinModel::heap_erase(int slot) {
  const auto i = static_cast<std::size_t>(heap_pos_[slot]);
  heap_pos_[slot] = -1;
  const int last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  heap_[i] = last;
  heap_pos_[last] = static_cast<int>(i);
  sift_up(i);
  sift_down(static_cast<std::size_t>(heap_pos_[last]));
}

void MaxMinModel::sift_up(std::size_t i) {
  const int slot = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!heap_less(slot, heap_[parent])) break;
    heap_[i] = heap_[parent];
    heap_pos_[heap_[i]] = static_cast<int>(i);
    i = parent;
  }
  heap_[i] = slot;
  heap_pos_[slot] = static_cast<int>(i);
}

void MaxMinModel::sift_down(std::size_t i) {
  const int slot = heap_[i];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_less(heap_[child + 1], heap_[child])) ++child;
    if (!heap_less(heap_[child], slot)) break;
    heap_[i] = heap_[child];
    heap_pos_[heap_[i]] = static_cast<int>(i);
    i = child;
  }
  heap_[i] = slot;
  heap_pos_[slot] = static_cast<int>(i);
}

double MaxMinModel::rate_of_tag(std::int32_t tag) {
  if (dirty_) resolve();
  for (const Item& it : items_)
    if (it.alive && it.tag == tag) return it.rate;
  return -1.0;
}

}  // namespace placesim::sim

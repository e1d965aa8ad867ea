#include "sim/cpu_share.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace placesim::sim {

namespace {

SimTime finish_at(SimTime from, double remaining, double rate) {
  if (remaining <= 0.0 || rate == kUnbounded) return from;
  if (rate <= 0.0) return kNever;
  return from + static_cast<SimTime>(std::ceil(remaining / rate - 1e-6));
}

}  // namespace

CpuShare::CpuShare(int processors) {
  for (int p = 0; p < processors; ++p) solver_.add_constraint(1.0);
}

void CpuShare::reset() {
  for (std::size_t v = 0; v < work_.size(); ++v) {
    if (work_[v].alive) {
      solver_.remove_variable(static_cast<int>(v));
      work_[v].alive = false;
    }
  }
  solver_.solve();
  completed_.clear();
  dirty_ = false;
  min_valid_ = false;
}

void CpuShare::start(SimTime now, int processor, double work_ns, double cap, std::int32_t tag) {
  assert(!dirty_ || pending_time_ == now);
  assert(cap > 0.0 && processor >= 0 && processor < solver_.num_constraints());
  const int c = processor;
  const int v = solver_.add_variable(std::min(cap, 1.0), {&c, 1});
  if (static_cast<std::size_t>(v) >= work_.size()) work_.resize(v + 1);
  Work& w = work_[v];
  w.remaining = work_ns;
  w.rate = 0.0;
  w.last = now;
  w.finish = kNever;
  w.tag = tag;
  w.alive = true;
  pending_time_ = now;
  dirty_ = true;
  min_valid_ = false;
}

void CpuShare::resolve() {
  const SimTime t = pending_time_;
  // Ops of the touched processor progress at their old share up to t before the shares change.
  for (int v : solver_.pending_component()) {
    Work& w = work_[v];
    if (w.last < t) {
      w.remaining = std::max(0.0, w.remaining - w.rate * static_cast<double>(t - w.last));
      w.last = t;
    }
  }
  solver_.solve();
  const std::span<const int> changed = solver_.last_changed();
  SimTime min_changed = kNever;
  for (int v : changed) {
    Work& w = work_[v];
    w.rate = solver_.value(v);
    w.finish = finish_at(w.last, w.remaining, w.rate);
    min_changed = std::min(min_changed, w.finish);
  }
  dirty_ = false;
  // When every running op is on the processor just solved, its minimum is the minimum.
  min_valid_ = static_cast<int>(changed.size()) == solver_.num_live_variables();
  min_finish_ = min_changed;
}

SimTime CpuShare::next_completion() {
  if (dirty_) resolve();
  if (!min_valid_) {
    min_finish_ = kNever;
    for (const Work& w : work_)
      if (w.alive && w.finish < min_finish_) min_finish_ = w.finish;
    min_valid_ = true;
  }
  return min_finish_;
}

void CpuShare::advance(SimTime t) {
  if (dirty_) resolve();
  completed_.clear();
  for (std::size_t v = 0; v < work_.size(); ++v) {
    Work& w = work_[v];
    if (!w.alive || w.finish > t) continue;
    completed_.push_back(w.tag);
    w.alive = false;
    solver_.remove_variable(static_cast<int>(v));
    dirty_ = true;
  }
  pending_time_ = t;
  min_valid_ = false;
}

double CpuShare::share_of_tag(std::int32_t tag) {
  if (dirty_) resolve();
  for (const Work& w : work_)
    if (w.alive && w.tag == tag) return w.rate;
  return -1.0;
}

}  // namespace placesim::sim

#include "sim/network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace placesim::sim {

FlowNetwork::FlowNetwork(const Cluster& c) {
  const std::size_t n = c.links.size();
  con_fwd_.assign(n, -1);
  con_bwd_.assign(n, -1);
  fat_bound_.assign(n, kUnbounded);
  latency_s_.assign(n, 0.0);
  tcp_.assign(n, false);
  tcp_window_ = c.tcp_window_bytes;
  for (std::size_t l = 0; l < n; ++l) {
    const Link& link = c.links[l];
    latency_s_[l] = static_cast<double>(link.latency.ns) * 1e-9;
    tcp_[l] = link.tcp;
    const double bw = link.bandwidth.bytes_per_s;
    switch (link.sharing) {
      case SharingPolicy::Shared:
        con_fwd_[l] = con_bwd_[l] = solver_.add_constraint(bw);
        break;
      case SharingPolicy::SplitDuplex:
        con_fwd_[l] = solver_.add_constraint(bw);
        con_bwd_[l] = solver_.add_constraint(bw);
        break;
      case SharingPolicy::FatPipe:
        fat_bound_[l] = bw;
        break;
    }
  }
  link_bytes_.assign(n, 0.0);
  link_busy_.assign(n, 0);
  link_since_.assign(n, 0);
  link_active_.assign(n, 0);
}

void FlowNetwork::reset() {
  for (std::size_t v = 0; v < flows_.size(); ++v) {
    if (flows_[v].alive) {
      solver_.remove_variable(static_cast<int>(v));
      flows_[v].alive = false;
    }
  }
  solver_.solve();
  std::fill(link_bytes_.begin(), link_bytes_.end(), 0.0);
  std::fill(link_busy_.begin(), link_busy_.end(), 0);
  std::fill(link_active_.begin(), link_active_.end(), 0);
  completed_.clear();
  dirty_ = false;
  min_valid_ = false;
}

SimTime FlowNetwork::finish_time(SimTime from, double remaining, double rate) {
  if (remaining <= 0.0 || rate == kUnbounded) return from;
  if (rate <= 0.0) return kNever;
  return from + static_cast<SimTime>(std::ceil(remaining / rate * 1e9 - 1e-6));
}

void FlowNetwork::start(SimTime now, std::span<const Hop> hops, double bytes, std::int32_t tag) {
  assert(!dirty_ || pending_time_ == now);
  scratch_cons_.clear();
  double bound = kUnbounded;
  bool tcp = false;
  double latency = 0.0;
  for (const Hop& h : hops) {
    tcp = tcp || tcp_[h.link];
    latency += latency_s_[h.link];
    const int c = h.forward ? con_fwd_[h.link] : con_bwd_[h.link];
    if (c >= 0) {
      // A route crosses a Shared link at most once in practice; guard against duplicates anyway.
      if (std::find(scratch_cons_.begin(), scratch_cons_.end(), c) == scratch_cons_.end())
        scratch_cons_.push_back(c);
    } else {
      bound = std::min(bound, fat_bound_[h.link]);
    }
  }
  // Existing flows of the touched component must be settled at `now` with their old rates before
  // the new variable changes them: the solver reports the component only after the add, and the
  // new flow has made no progress, so settling after the add is equivalent.
  // Weights in microseconds of route latency: a non-TCP flow weighs 1 (a 1 us route, see
  // network.hpp), so without TCP links every weight is 1 and the solver is plain max-min, bit for
  // bit; a TCP flow weighs its route latency (SimGrid's penalty 1 s when the latency is 0).
  double weight = 1.0;
  if (tcp) {
    weight = latency > 0.0 ? latency * 1e6 : 1e6;
    if (latency > 0.0 && tcp_window_ > 0.0) bound = std::min(bound, tcp_window_ / (2.0 * latency));
  }
  const int v = solver_.add_variable(bound, scratch_cons_, weight);
  if (static_cast<std::size_t>(v) >= flows_.size()) flows_.resize(v + 1);
  Flow& f = flows_[v];
  f.remaining = bytes;
  f.bytes = bytes;
  f.rate = 0.0;
  f.last = now;
  f.finish = kNever;
  f.tag = tag;
  f.alive = true;
  f.links.clear();
  for (const Hop& h : hops) {
    f.links.push_back(h.link);
    if (link_active_[h.link]++ == 0) link_since_[h.link] = now;
  }
  pending_time_ = now;
  dirty_ = true;
  min_valid_ = false;
}

void FlowNetwork::resolve() {
  const SimTime t = pending_time_;
  for (int v : solver_.pending_component()) {
    Flow& f = flows_[v];
    if (f.last < t) {
      if (f.rate == kUnbounded) {
        f.remaining = 0.0;
      } else {
        f.remaining = std::max(0.0, f.remaining - f.rate * static_cast<double>(t - f.last) * 1e-9);
      }
      f.last = t;
    }
  }
  solver_.solve();
  const std::span<const int> changed = solver_.last_changed();
  SimTime min_changed = kNever;
  for (int v : changed) {
    Flow& f = flows_[v];
    f.rate = solver_.value(v);
    f.finish = finish_time(f.last, f.remaining, f.rate);
    min_changed = std::min(min_changed, f.finish);
  }
  dirty_ = false;
  // On a tree every flow is in the one component just solved: its minimum is the minimum, no
  // scan of the other slots needed.
  min_valid_ = static_cast<int>(changed.size()) == solver_.num_live_variables();
  min_finish_ = min_changed;
}

SimTime FlowNetwork::next_completion() {
  if (dirty_) resolve();
  if (!min_valid_) {
    min_finish_ = kNever;
    for (const Flow& f : flows_)
      if (f.alive && f.finish < min_finish_) min_finish_ = f.finish;
    min_valid_ = true;
  }
  return min_finish_;
}

void FlowNetwork::advance(SimTime t) {
  if (dirty_) resolve();
  completed_.clear();
  for (std::size_t v = 0; v < flows_.size(); ++v) {
    Flow& f = flows_[v];
    if (!f.alive || f.finish > t) continue;
    completed_.push_back(f.tag);
    for (LinkId l : f.links) {
      link_bytes_[l] += f.bytes;
      if (--link_active_[l] == 0) link_busy_[l] += t - link_since_[l];
    }
    f.alive = false;
    solver_.remove_variable(static_cast<int>(v));
    dirty_ = true;
  }
  pending_time_ = t;
  min_valid_ = false;
}

double FlowNetwork::rate_of_tag(std::int32_t tag) {
  if (dirty_) resolve();
  for (const Flow& f : flows_)
    if (f.alive && f.tag == tag) return f.rate;
  return -1.0;
}

}  // namespace placesim::sim

#include "sim/network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace placesim::sim {

FlowNetwork::FlowNetwork(const Cluster& c) : MaxMinModel(/*ns_per_unit=*/1e9) {
  const std::size_t n = c.links.size();
  con_fwd_.assign(n, -1);
  con_bwd_.assign(n, -1);
  fat_bound_.assign(n, kUnbounded);
  latency_s_.assign(n, 0.0);
  tcp_.assign(n, 0);
  tcp_window_ = c.tcp_window_bytes;
  for (std::size_t l = 0; l < n; ++l) {
    const Link& link = c.links[l];
    latency_s_[l] = static_cast<double>(link.latency.ns) * 1e-9;
    tcp_[l] = link.tcp ? 1 : 0;
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
  reset_items();
  std::fill(link_bytes_.begin(), link_bytes_.end(), 0.0);
  std::fill(link_busy_.begin(), link_busy_.end(), 0);
  std::fill(link_active_.begin(), link_active_.end(), 0);
}

void FlowNetwork::start(SimTime now, std::span<const Hop> hops, double bytes, std::int32_t tag) {
  scratch_cons_.clear();
  double bound = kUnbounded;
  bool tcp = false;
  double latency = 0.0;
  for (const Hop& h : hops) {
    tcp = tcp || tcp_[h.link] != 0;
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
  // Weights in microseconds of route latency: a non-TCP flow weighs 1 (a 1 us route, see
  // network.hpp), so without TCP links every weight is 1 and the solver is plain max-min, bit for
  // bit; a TCP flow weighs its route latency (SimGrid's penalty 1 s when the latency is 0).
  double weight = 1.0;
  if (tcp) {
    weight = latency > 0.0 ? latency * 1e6 : 1e6;
    if (latency > 0.0 && tcp_window_ > 0.0) bound = std::min(bound, tcp_window_ / (2.0 * latency));
  }
  const int v = start_item(now, bound, scratch_cons_, weight, bytes, tag);
  if (static_cast<std::size_t>(v) >= stats_.size()) stats_.resize(v + 1);
  FlowStats& f = stats_[v];
  f.bytes = bytes;
  f.links.clear();
  for (const Hop& h : hops) {
    f.links.push_back(h.link);
    if (link_active_[h.link]++ == 0) link_since_[h.link] = now;
  }
}

void FlowNetwork::on_complete(int slot, SimTime t) {
  const FlowStats& f = stats_[slot];
  for (LinkId l : f.links) {
    link_bytes_[l] += f.bytes;
    if (--link_active_[l] == 0) link_busy_[l] += t - link_since_[l];
  }
}

}  // namespace placesim::sim

// List-scheduling baselines: HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 2002) and Baechi's
// memory-constrained m-TOPO, m-ETF and m-SCT (Jeon et al., SoCC 2020). They schedule ops (the op
// graph is acyclic; the group graph of a training graph is not) and honour co-location the way
// Baechi does: the first op of a group to be scheduled chooses the device, and every other op of
// the group follows it. Compute times come from the kernel cost model plus the launch overhead;
// transfers cost latency + bytes / bottleneck bandwidth per route segment; none models
// contention (the simulator does).
//
// The Baechi methods account memory as Baechi does, conservatively (group_memory(): parameters,
// every output and every tensor received from another device, all held for the whole step). The
// simulator frees activations after their last use, so its peak is never above this sum: whenever
// a placement fits by this accounting, the simulation does not run out of memory. For a training
// graph the sum is several times the real peak (rnnlm: 28 GiB of outputs, 4.3 GiB peak on one
// GPU), which pushes work off GPUs that have room. So each method first runs with only a share of
// the activations counted (1/4, then 1/2) and keeps that placement when the simulator confirms it
// does not run out of memory; the fully conservative run is the last resort, so the guarantee
// stands.
#include <algorithm>
#include <cassert>
#include <deque>
#include <limits>
#include <set>
#include <utility>

#include "policy/place/baselines.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {
namespace {

constexpr double kUnreachable = 1e6;

/// Transfer-time terms per device pair, precomputed: t(a, b, B) = latency + B * inverse_bw.
struct CommModel {
  int n = 0;
  std::vector<double> latency, inverse_bw;
  explicit CommModel(const sim::Cluster& c) : n(c.num_devices()) {
    latency.assign(static_cast<std::size_t>(n * n), 0.0);
    inverse_bw.assign(static_cast<std::size_t>(n * n), 0.0);
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        const auto i = static_cast<std::size_t>(a * n + b);
        const sim::Route& r = c.route(a, b);
        if (r.empty()) {
          latency[i] = kUnreachable;
          continue;
        }
        for (const sim::RouteSegment& s : r.segments) {
          latency[i] += s.latency.seconds();
          if (s.bottleneck.bytes_per_s > 0) inverse_bw[i] += 1.0 / s.bottleneck.bytes_per_s;
        }
      }
  }
  [[nodiscard]] double time(int a, int b, double bytes) const {
    if (a == b) return 0.0;
    const auto i = static_cast<std::size_t>(a * n + b);
    return latency[i] + bytes * inverse_bw[i];
  }
};

/// The devices a Baechi method prefers for a group (GPUs, or the kind the group requires) and
/// the ones it falls back to when none of those has room (CPUs, for unconstrained groups).
struct Candidates {
  std::vector<sim::DeviceId> preferred, fallback;
};
Candidates baechi_candidates(const GroupDag& dag, int gi, const sim::Cluster& c) {
  Candidates out;
  if (dag.kind[static_cast<std::size_t>(gi)]) {
    out.preferred = allowed_devices(dag, gi, c);
  } else {
    out.preferred = compute_devices(c);
    if (!c.gpus().empty()) out.fallback = c.cpus();
  }
  return out;
}

/// State shared by the list schedulers: devices chosen per group, op finish times, free memory.
struct Schedule {
  const GroupDag& dag;
  const sim::Cluster& c;
  double activation_share = 1.0;
  OpCosts costs;
  CommModel comm;
  GroupPlacement gdev;
  std::vector<double> finish;    ///< per op (valid once placed)
  std::vector<double> free_mem;  ///< per device
  std::vector<double> load;      ///< per device: compute time of the groups placed there

  Schedule(const GroupDag& d, const sim::Graph& g, const sim::Cluster& cl, const MethodOptions& o)
      : dag(d),
        c(cl),
        costs(op_costs(g, cl, o.costs)),
        comm(cl),
        gdev(static_cast<std::size_t>(d.size()), -1),
        finish(static_cast<std::size_t>(g.num_ops()), 0.0),
        free_mem(static_cast<std::size_t>(cl.num_devices()), 0.0),
        load(static_cast<std::size_t>(cl.num_devices()), 0.0) {
    // What tensors can use: a GPU's reserved memory (context, workspaces) is never available.
    for (int dv = 0; dv < cl.num_devices(); ++dv) {
      const sim::DeviceSpec& s = cl.devices[static_cast<std::size_t>(dv)].spec;
      const std::int64_t reserved = s.kind == sim::DeviceKind::Gpu ? s.reserved_memory.v : 0;
      free_mem[static_cast<std::size_t>(dv)] = static_cast<double>(s.memory_capacity.v - reserved);
    }
  }
  [[nodiscard]] int group(sim::OpId op) const {
    return dag.group_of_op[static_cast<std::size_t>(op)];
  }
  [[nodiscard]] sim::DeviceId device_of_op(sim::OpId op) const {
    return gdev[static_cast<std::size_t>(group(op))];
  }
  [[nodiscard]] double time(sim::OpId op, sim::DeviceId d) const {
    return costs.time_s[static_cast<std::size_t>(op)][static_cast<std::size_t>(d)];
  }
  [[nodiscard]] bool fits(int gi, sim::DeviceId d) const {
    return group_memory(dag, gi, d, gdev, activation_share) <=
           free_mem[static_cast<std::size_t>(d)];
  }
  /// Earliest time the inputs of `op` (all producers placed) are on `d`.
  [[nodiscard]] double data_ready(sim::OpId op, sim::DeviceId d) const {
    double t = 0.0;
    for (const OpEdge& e : dag.op_pred[static_cast<std::size_t>(op)])
      t = std::max(
          t, finish[static_cast<std::size_t>(e.op)] + comm.time(device_of_op(e.op), d, e.bytes));
    return t;
  }
  void pin(int gi, sim::DeviceId d) {
    free_mem[static_cast<std::size_t>(d)] -= group_memory(dag, gi, d, gdev, activation_share);
    gdev[static_cast<std::size_t>(gi)] = d;
    for (const sim::OpId op : dag.ops[static_cast<std::size_t>(gi)])
      load[static_cast<std::size_t>(d)] += time(op, d);
  }
  /// When no candidate has room: the earliest-ready fallback device with room, else the allowed
  /// device with the most free memory (the simulator will then report the OOM, which is the
  /// truth: no device could hold the group).
  [[nodiscard]] sim::DeviceId fallback_device(int gi, const Candidates& cand) const {
    for (const sim::DeviceId d : cand.fallback)
      if (fits(gi, d)) return d;
    std::vector<sim::DeviceId> all = cand.preferred;
    all.insert(all.end(), cand.fallback.begin(), cand.fallback.end());
    sim::DeviceId best = all.front();
    for (const sim::DeviceId d : all)
      if (free_mem[static_cast<std::size_t>(d)] > free_mem[static_cast<std::size_t>(best)])
        best = d;
    return best;
  }
};

/// Earliest start on `d` at or after `ready` for `dur` seconds, using idle gaps (insertion).
double insertion_start(const std::vector<std::pair<double, double>>& busy, double ready,
                       double dur) {
  auto it =
      std::upper_bound(busy.begin(), busy.end(), ready,
                       [](double t, const std::pair<double, double>& iv) { return t < iv.second; });
  double start = ready;
  for (; it != busy.end(); ++it) {
    if (start + dur <= it->first) break;
    start = std::max(start, it->second);
  }
  return start;
}

}  // namespace

// HEFT over ops. Upward rank with the mean compute time over the devices an op's group may use
// and the mean transfer time over all device pairs; ops in decreasing rank; an op whose group has
// no device yet takes the device giving it the earliest finish time, with insertion into idle
// gaps; the rest of its group follows. HEFT has no memory model.
GroupPlacement place_heft(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                          const MethodOptions& o) {
  Schedule s(dag, g, c, o);
  const int nd = c.num_devices();
  double mean_lat = 0.0, mean_inv = 0.0;
  int pairs = 0;
  for (int a = 0; a < nd; ++a)
    for (int b = 0; b < nd; ++b) {
      const auto i = static_cast<std::size_t>(a * nd + b);
      if (a != b && s.comm.latency[i] < kUnreachable) {
        mean_lat += s.comm.latency[i];
        mean_inv += s.comm.inverse_bw[i];
        ++pairs;
      }
    }
  if (pairs > 0) {
    mean_lat /= pairs;
    mean_inv /= pairs;
  }
  std::vector<std::vector<sim::DeviceId>> allowed(static_cast<std::size_t>(dag.size()));
  for (int gi = 0; gi < dag.size(); ++gi)
    allowed[static_cast<std::size_t>(gi)] = allowed_devices(dag, gi, c);
  std::vector<double> rank(static_cast<std::size_t>(g.num_ops()), 0.0);
  // The 1 ns added to every mean keeps a producer's rank strictly above its consumers', so the
  // rank order is a topological order.
  for (auto it = g.topo_order.rbegin(); it != g.topo_order.rend(); ++it) {
    const sim::OpId op = *it;
    const auto& al = allowed[static_cast<std::size_t>(s.group(op))];
    double w = 0.0;
    for (const sim::DeviceId d : al) w += s.time(op, d);
    w = w / static_cast<double>(std::max<std::size_t>(1, al.size())) + 1e-9;
    double tail = 0.0;
    for (const OpEdge& e : dag.op_succ[static_cast<std::size_t>(op)])
      tail = std::max(tail, mean_lat + e.bytes * mean_inv + rank[static_cast<std::size_t>(e.op)]);
    rank[static_cast<std::size_t>(op)] = w + tail;
  }
  std::vector<sim::OpId> order = g.topo_order;
  std::stable_sort(order.begin(), order.end(), [&](sim::OpId a, sim::OpId b) {
    return rank[static_cast<std::size_t>(a)] > rank[static_cast<std::size_t>(b)];
  });
  std::vector<std::vector<std::pair<double, double>>> busy(static_cast<std::size_t>(nd));
  for (const sim::OpId op : order) {
    const int gi = s.group(op);
    const sim::DeviceId pinned = s.gdev[static_cast<std::size_t>(gi)];
    double best_eft = std::numeric_limits<double>::infinity(), best_start = 0.0;
    sim::DeviceId best = -1;
    for (const sim::DeviceId d : allowed[static_cast<std::size_t>(gi)]) {
      if (pinned >= 0 && d != pinned) continue;
      const double dur = s.time(op, d);
      const double start =
          insertion_start(busy[static_cast<std::size_t>(d)], s.data_ready(op, d), dur);
      if (start + dur < best_eft) {
        best_eft = start + dur;
        best_start = start;
        best = d;
      }
    }
    if (pinned < 0) s.pin(gi, best);
    s.finish[static_cast<std::size_t>(op)] = best_eft;
    auto& b = busy[static_cast<std::size_t>(best)];
    b.insert(std::upper_bound(b.begin(), b.end(), std::make_pair(best_start, best_eft)),
             {best_start, best_eft});
  }
  return s.gdev;
}

// m-TOPO (Baechi §4.1): ops in topological order; the group of an op not yet placed goes to the
// current GPU, which takes groups until its compute time reaches an equal share of the total,
// then the next GPU; a GPU without room for the group is skipped (first fit from the current one).
namespace {

GroupPlacement m_topo(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                      const MethodOptions& o, double share_of_activations) {
  Schedule s(dag, g, c, o);
  s.activation_share = share_of_activations;
  const auto devs = compute_devices(c);
  const sim::DeviceId ref = devs.front();
  double total = 0.0;
  for (int op = 0; op < g.num_ops(); ++op) total += s.time(op, ref);
  const double share = total / static_cast<double>(devs.size());
  std::size_t cur = 0;
  for (const sim::OpId op : g.topo_order) {
    const int gi = s.group(op);
    if (s.gdev[static_cast<std::size_t>(gi)] >= 0) continue;
    const Candidates cand = baechi_candidates(dag, gi, c);
    sim::DeviceId chosen = -1;
    if (!dag.kind[static_cast<std::size_t>(gi)]) {
      while (cur + 1 < devs.size() &&
             s.load[static_cast<std::size_t>(devs[cur])] >= share * (1.0 - 1e-9))
        ++cur;
      for (std::size_t k = 0; k < devs.size() && chosen < 0; ++k) {
        const sim::DeviceId d = devs[(cur + k) % devs.size()];
        if (s.fits(gi, d)) chosen = d;
      }
    } else {
      for (const sim::DeviceId d : cand.preferred)
        if (chosen < 0 && s.fits(gi, d)) chosen = d;
    }
    if (chosen < 0) chosen = s.fallback_device(gi, cand);
    s.pin(gi, chosen);
  }
  return s.gdev;
}

// m-ETF and m-SCT (Baechi §4.2-4.3). Earliest task first (Hwang et al. 1989): repeatedly start
// the (ready op, device) pair with the earliest start time, over the devices the op may use: its
// group's device once chosen, else the candidates with room for the whole group. No insertion.
// With `favourite_child`, the small-communication-time rule of Hanen & Munier as Baechi uses it:
// each op's favourite child is the consumer it sends the most bytes to (Baechi chooses it with
// an LP relaxation; the largest transfer is our simplification), and a ready favourite child
// starts on its parent's device, ahead of any other choice, whenever that device is idle by the
// time the child's inputs are there.
// The state of one earliest-task-first run: the schedule, per-op states and the per-device
// queues of ready ops.
class EarliestTaskFirst {
 public:
  EarliestTaskFirst(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                    const MethodOptions& o, bool favourite_child, double share_of_activations)
      : dag_(dag),
        c_(c),
        s_(dag, g, c, o),
        n_(g.num_ops()),
        nd_(c.num_devices()),
        device_free_(static_cast<std::size_t>(nd_), 0.0),
        state_(static_cast<std::size_t>(n_), State::Waiting),
        waiting_(static_cast<std::size_t>(n_), 0),
        favourite_parent_(static_cast<std::size_t>(n_), -1),
        queue_(static_cast<std::size_t>(nd_)),
        ready_at_(static_cast<std::size_t>(n_)),
        queued_on_(static_cast<std::size_t>(n_), 0) {
    s_.activation_share = share_of_activations;
    for (int op = 0; op < n_; ++op)
      waiting_[static_cast<std::size_t>(op)] =
          static_cast<int>(dag.op_pred[static_cast<std::size_t>(op)].size());
    if (favourite_child) find_favourite_parents();
  }

  GroupPlacement run() {
    for (int op = 0; op < n_; ++op)
      if (waiting_[static_cast<std::size_t>(op)] == 0 &&
          state_[static_cast<std::size_t>(op)] == State::Waiting)
        make_ready(op);
    int placed = 0;
    while (placed < n_) {
      if (place_urgent()) {
        ++placed;
        continue;
      }
      const Step step = place_earliest();
      if (step == Step::Placed) ++placed;
      if (step == Step::Stuck) break;
    }
    // Groups whose ops were never reached (only if the loop above stopped early) keep a device.
    for (int gi = 0; gi < dag_.size(); ++gi)
      if (s_.gdev[static_cast<std::size_t>(gi)] < 0)
        s_.gdev[static_cast<std::size_t>(gi)] =
            s_.fallback_device(gi, baechi_candidates(dag_, gi, c_));
    return s_.gdev;
  }

 private:
  enum class State : std::uint8_t { Waiting, Ready, Placed };
  enum class Step : std::uint8_t { Placed, Pruned, Stuck };

  // Each op's favourite child is the consumer it sends the most bytes to; a child with several
  // such parents keeps the one sending the most.
  void find_favourite_parents() {
    std::vector<double> best_bytes(static_cast<std::size_t>(n_), -1.0);
    for (int op = 0; op < n_; ++op) {
      sim::OpId fav = -1;
      double fav_bytes = 0.0;
      for (const OpEdge& e : dag_.op_succ[static_cast<std::size_t>(op)])
        if (e.bytes > fav_bytes) {
          fav_bytes = e.bytes;
          fav = e.op;
        }
      if (fav >= 0 && fav_bytes > best_bytes[static_cast<std::size_t>(fav)]) {
        best_bytes[static_cast<std::size_t>(fav)] = fav_bytes;
        favourite_parent_[static_cast<std::size_t>(fav)] = op;
      }
    }
  }

  void enqueue(sim::OpId op, sim::DeviceId d) {
    auto& r = ready_at_[static_cast<std::size_t>(op)];
    if (r[static_cast<std::size_t>(d)] >= 0) return;
    r[static_cast<std::size_t>(d)] = s_.data_ready(op, d);
    queue_[static_cast<std::size_t>(d)].emplace(r[static_cast<std::size_t>(d)], op);
    ++queued_on_[static_cast<std::size_t>(op)];
  }

  void dequeue(sim::OpId op, sim::DeviceId d) {
    auto& r = ready_at_[static_cast<std::size_t>(op)];
    if (r[static_cast<std::size_t>(d)] < 0) return;
    queue_[static_cast<std::size_t>(d)].erase({r[static_cast<std::size_t>(d)], op});
    r[static_cast<std::size_t>(d)] = -1;
    --queued_on_[static_cast<std::size_t>(op)];
  }

  // Choosing a device for a group reserves its memory and queues its other ready ops there.
  void pin(int gi, sim::DeviceId d) {
    s_.pin(gi, d);
    for (const sim::OpId other : dag_.ops[static_cast<std::size_t>(gi)])
      if (state_[static_cast<std::size_t>(other)] == State::Ready) {
        for (int x = 0; x < nd_; ++x)
          if (x != d) dequeue(other, x);
        enqueue(other, d);
      }
  }

  void make_ready(sim::OpId op) {
    state_[static_cast<std::size_t>(op)] = State::Ready;
    ready_at_[static_cast<std::size_t>(op)].assign(static_cast<std::size_t>(nd_), -1.0);
    const int gi = s_.group(op);
    const sim::DeviceId pinned = s_.gdev[static_cast<std::size_t>(gi)];
    if (pinned >= 0) {
      enqueue(op, pinned);
    } else {
      const Candidates cand = baechi_candidates(dag_, gi, c_);
      for (const sim::DeviceId d : cand.preferred)
        if (s_.fits(gi, d)) enqueue(op, d);
      if (queued_on_[static_cast<std::size_t>(op)] == 0) pin(gi, s_.fallback_device(gi, cand));
    }
    if (favourite_parent_[static_cast<std::size_t>(op)] >= 0) urgent_.push_back(op);
  }

  void place(sim::OpId op, sim::DeviceId d, double start) {
    for (int x = 0; x < nd_; ++x) dequeue(op, x);
    state_[static_cast<std::size_t>(op)] = State::Placed;
    const int gi = s_.group(op);
    if (s_.gdev[static_cast<std::size_t>(gi)] < 0) pin(gi, d);
    s_.finish[static_cast<std::size_t>(op)] = start + s_.time(op, d);
    device_free_[static_cast<std::size_t>(d)] = s_.finish[static_cast<std::size_t>(op)];
    for (const OpEdge& e : dag_.op_succ[static_cast<std::size_t>(op)])
      if (--waiting_[static_cast<std::size_t>(e.op)] == 0) make_ready(e.op);
  }

  // A ready favourite child starts on its parent's device when that device is idle by the time
  // its inputs are there. Returns whether one was placed.
  bool place_urgent() {
    while (!urgent_.empty()) {
      const sim::OpId op = urgent_.front();
      urgent_.pop_front();
      if (state_[static_cast<std::size_t>(op)] != State::Ready) continue;
      const sim::DeviceId d = s_.device_of_op(favourite_parent_[static_cast<std::size_t>(op)]);
      const double r = ready_at_[static_cast<std::size_t>(op)][static_cast<std::size_t>(d)];
      if (r < 0 || device_free_[static_cast<std::size_t>(d)] > r) continue;
      const int gi = s_.group(op);
      if (s_.gdev[static_cast<std::size_t>(gi)] < 0 && !s_.fits(gi, d)) continue;
      place(op, d, r);
      return true;
    }
    return false;
  }

  // Drops the ops at the head of device d's queue whose group can no longer go there (an
  // unplaced group that no longer fits never will: free memory only shrinks). Returns whether
  // any was dropped.
  bool prune_head(sim::DeviceId d) {
    auto& q = queue_[static_cast<std::size_t>(d)];
    bool pruned = false;
    while (!q.empty()) {
      const sim::OpId op = q.begin()->second;
      const int gi = s_.group(op);
      if (s_.gdev[static_cast<std::size_t>(gi)] == d ||
          (s_.gdev[static_cast<std::size_t>(gi)] < 0 && s_.fits(gi, d)))
        break;
      dequeue(op, d);
      pruned = true;
      if (queued_on_[static_cast<std::size_t>(op)] == 0 &&
          s_.gdev[static_cast<std::size_t>(gi)] < 0)
        pin(gi, s_.fallback_device(gi, baechi_candidates(dag_, gi, c_)));
    }
    return pruned;
  }

  // Starts the (ready op, device) pair with the earliest start time.
  Step place_earliest() {
    bool progress = false;
    double best_start = std::numeric_limits<double>::infinity();
    sim::OpId best_op = -1;
    sim::DeviceId best_dev = -1;
    for (int d = 0; d < nd_; ++d) {
      if (prune_head(d)) progress = true;
      const auto& q = queue_[static_cast<std::size_t>(d)];
      if (q.empty()) continue;
      const double start = std::max(device_free_[static_cast<std::size_t>(d)], q.begin()->first);
      if (start < best_start) {
        best_start = start;
        best_op = q.begin()->second;
        best_dev = d;
      }
    }
    if (best_op < 0) {
      assert(progress);
      return progress ? Step::Pruned : Step::Stuck;
    }
    place(best_op, best_dev, best_start);
    return Step::Placed;
  }

  const GroupDag& dag_;
  const sim::Cluster& c_;
  Schedule s_;
  int n_;
  int nd_;
  std::vector<double> device_free_;
  std::vector<State> state_;
  std::vector<int> waiting_;
  std::vector<sim::OpId> favourite_parent_;
  // Per device, the ready ops that may start there, by (data-ready time there, op).
  std::vector<std::set<std::pair<double, sim::OpId>>> queue_;
  std::vector<std::vector<double>> ready_at_;  // per op and device; -1 = not queued there
  std::vector<int> queued_on_;
  std::deque<sim::OpId> urgent_;
};

GroupPlacement earliest_task_first(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                                   const MethodOptions& o, bool favourite_child,
                                   double share_of_activations) {
  return EarliestTaskFirst(dag, g, c, o, favourite_child, share_of_activations).run();
}

using Scheduler = GroupPlacement (*)(const GroupDag&, const sim::Graph&, const sim::Cluster&,
                                     const MethodOptions&, double);

// Runs `run` with a growing share of the activations counted, keeping the first placement the
// simulator confirms fits; the last run counts all of them (Baechi's own bound).
GroupPlacement memory_checked(Scheduler run, const GroupDag& dag, const sim::Graph& g,
                              const sim::Cluster& c, const MethodOptions& o) {
  for (const double share : {0.25, 0.5}) {
    GroupPlacement gp = run(dag, g, c, o, share);
    sim::SimOptions so;
    so.stop_at_first_oom = true;
    so.record_critical_path = false;
    if (!sim::simulate(c, g, dag.expand(gp), so, o.costs).oom) return gp;
  }
  return run(dag, g, c, o, 1.0);
}

GroupPlacement etf_plain(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                         const MethodOptions& o, double share) {
  return earliest_task_first(dag, g, c, o, false, share);
}

GroupPlacement etf_sct(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                       const MethodOptions& o, double share) {
  return earliest_task_first(dag, g, c, o, true, share);
}

}  // namespace

GroupPlacement place_m_topo(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                            const MethodOptions& o) {
  return memory_checked(m_topo, dag, g, c, o);
}

GroupPlacement place_m_etf(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                           const MethodOptions& o) {
  return memory_checked(etf_plain, dag, g, c, o);
}

GroupPlacement place_m_sct(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                           const MethodOptions& o) {
  return memory_checked(etf_sct, dag, g, c, o);
}

/// The Baechi methods with a fixed share of activations counted and no simulation (tests).
GroupPlacement place_baechi_unchecked(const std::string& method, const GroupDag& dag,
                                      const sim::Graph& g, const sim::Cluster& c,
                                      const MethodOptions& o, double share) {
  if (method == "m-topo") return m_topo(dag, g, c, o, share);
  return earliest_task_first(dag, g, c, o, method == "m-sct", share);
}

}  // namespace placesim::policy

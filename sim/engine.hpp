// The discrete-event core: an event queue ordered by (time, named priority, kind, index) and an
// `Engine` that interleaves those events with the completions of resource models (SimGrid's
// protocol: a model is asked "when is your next completion?" and told "advance to t"). The Engine
// is an ordinary object: as many per process as you like, no globals.
//
//   struct Handler {
//     void on_event(Engine& e, const Event& ev) { ... e.schedule(e.now() + 5, Priority::OpEnd, 1,
//     7); } void on_resource(Engine& e, int model) { ... }     // model `model` completed work at
//     e.now()
//   };
//   Engine e;
//   e.add_model(&network);                             // a ResourceModel
//   e.schedule(0, Priority::OpReady, 0, 0);
//   Handler h;
//   e.run(h);                                          // until no event and no model has work
//
// Priorities order events that happen at the same nanosecond; completions come before starts
// so that memory freed at t is available to an allocation at t, and a resource released at t can
// be taken at t. Within a priority, events at one nanosecond run by (kind, index), not by when
// they were inserted: the order is a property of the events themselves, so a run split into
// partitions (each seeing only its own events) orders every partition's events as the whole run
// does (docs/engine.md, "Same-instant order"). Two events equal in (time, priority, kind, index)
// are indistinguishable, so their order cannot matter.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "sim/units.hpp"

namespace placesim::sim {

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

/// Same-time order of events (lower first). Named so that a trace reads as a story.
enum class Priority : std::uint8_t {
  TransferDone = 0,  ///< a flow finished moving its bytes (reported by the network model)
  KernelEnd = 1,     ///< an op finished on a stream or worker
  LatencyDone = 2,   ///< a copy's latency elapsed; its bytes start flowing
  LaunchEnd = 3,     ///< a host thread finished launching an op
  KernelStart = 4,   ///< a queued kernel reaches the head of its stream
  Start = 5,         ///< initial events
};

struct Event {
  SimTime time = 0;
  std::uint64_t key = 0;   ///< priority << 56 | (kind & 0xFFFFFF) << 32 | uint32(index)
  std::int32_t kind = 0;   ///< meaning chosen by the handler
  std::int32_t index = 0;  ///< e.g. an op or copy index
  [[nodiscard]] Priority priority() const { return static_cast<Priority>(key >> 56); }
};

/// Binary min-heap on (time, priority, kind, index) over a reusable vector: no allocation once
/// warm. Kinds are compared as their low 24 bits and indices as unsigned 32-bit numbers.
class EventQueue {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  void clear() { heap_.clear(); }
  void push(SimTime t, Priority p, std::int32_t kind, std::int32_t index);
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  [[nodiscard]] const Event& top() const { return heap_.front(); }
  [[nodiscard]] SimTime next_time() const { return heap_.empty() ? kNever : heap_.front().time; }
  Event pop();

 private:
  static bool before(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.key < b.key;
  }
  std::vector<Event> heap_;
};

/// A model of resources whose work completes at times it computes itself (the network's flows).
class ResourceModel {
 public:
  virtual ~ResourceModel() = default;
  /// Earliest time at which some of its work completes, or kNever.
  virtual SimTime next_completion() = 0;
  /// Moves the model to time `t` (completing what ends at or before t).
  virtual void advance(SimTime t) = 0;
};

class Engine {
 public:
  [[nodiscard]] SimTime now() const { return now_; }
  [[nodiscard]] std::int64_t events_processed() const { return processed_; }
  void add_model(ResourceModel* m) { models_.push_back(m); }
  void schedule(SimTime t, Priority p, std::int32_t kind, std::int32_t index) {
    queue_.push(t, p, kind, index);
  }
  EventQueue& queue() { return queue_; }
  /// Stops `run` after the current event.
  void stop() { stopped_ = true; }
  void reset() {
    queue_.clear();
    now_ = 0;
    processed_ = 0;
    stopped_ = false;
  }

  /// Runs until nothing is left. Model completions at time t come before events at t (they carry
  /// Priority::TransferDone, the highest).
  template <class Handler>
  void run(Handler& h) {
    while (!stopped_) {
      SimTime tm = kNever;
      int which = -1;
      for (int i = 0; i < static_cast<int>(models_.size()); ++i) {
        const SimTime t = models_[i]->next_completion();
        if (t < tm) {
          tm = t;
          which = i;
        }
      }
      const SimTime te = queue_.next_time();
      if (which < 0 && te == kNever) break;
      if (which >= 0 && tm <= te) {
        now_ = tm;
        models_[which]->advance(tm);
        ++processed_;
        h.on_resource(*this, which);
      } else {
        const Event ev = queue_.pop();
        now_ = ev.time;
        ++processed_;
        h.on_event(*this, ev);
      }
    }
  }

 private:
  EventQueue queue_;
  std::vector<ResourceModel*> models_;
  SimTime now_ = 0;
  std::int64_t processed_ = 0;
  bool stopped_ = false;
};

}  // namespace placesim::sim

#include "sim/engine.hpp"

#include <algorithm>
#include <utility>

namespace placesim::sim {

// A 4-ary heap: half the depth of a binary heap, and the four children of a node share a cache
// line or two, so a pop (the hot operation: one per event) touches fewer lines. The order is
// total (time, then priority and insertion sequence), so the pop order is the same as any other
// heap's.
void EventQueue::push(SimTime t, Priority p, std::int32_t kind, std::int32_t index) {
  Event ev{t, (static_cast<std::uint64_t>(p) << 56) | seq_++, kind, index};
  std::size_t i = heap_.size();
  heap_.push_back(ev);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!before(ev, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = ev;
}

Event EventQueue::pop() {
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n > 0) {
    std::size_t i = 0;
    while (true) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t child = first;
      const std::size_t end = std::min(first + 4, n);
      for (std::size_t k = first + 1; k < end; ++k)
        if (before(heap_[k], heap_[child])) child = k;
      if (!before(heap_[child], last)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = last;
  }
  return top;
}

}  // namespace placesim::sim

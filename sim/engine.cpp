#include "sim/engine.hpp"

#include <utility>

namespace placesim::sim {

void EventQueue::push(SimTime t, Priority p, std::int32_t kind, std::int32_t index) {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(p) << 56) |
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(kind) & 0xFFFFFFU) << 32) |
      static_cast<std::uint32_t>(index);
  Event ev{t, key, kind, index};
  std::size_t i = heap_.size();
  heap_.push_back(ev);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
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
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], last)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = last;
  }
  return top;
}

}  // namespace placesim::sim

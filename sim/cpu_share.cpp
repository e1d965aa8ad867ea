#include "sim/cpu_share.hpp"

#include <algorithm>
#include <cassert>

namespace placesim::sim {

// Work in ns at the whole processor, rates in fractions of it: one unit of work takes 1 ns at
// rate 1.
CpuShare::CpuShare(int processors) : MaxMinModel(/*ns_per_unit=*/1.0) {
  for (int p = 0; p < processors; ++p) solver_.add_constraint(1.0);
}

void CpuShare::start(SimTime now, int processor, double work_ns, double cap, std::int32_t tag) {
  assert(cap > 0.0 && processor >= 0 && processor < solver_.num_constraints());
  const int c = processor;
  start_item(now, std::min(cap, 1.0), {&c, 1}, 1.0, work_ns, tag);
}

}  // namespace placesim::sim

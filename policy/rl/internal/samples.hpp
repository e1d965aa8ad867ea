// The RL trainers' side of data-parallel training (the torch-free part; shards and fixed-order
// sums are the communication layer's, policy/comm/shards.hpp).
//
//   exchange_samples(comm, placements, evaluations);   // every rank's samples, in rank order
#pragma once

#include <vector>

#include "policy/comm/comm.hpp"
#include "policy/rl/rl.hpp"

namespace placesim::policy {

/// On entry this rank's sampled placements and their evaluations; on return every rank's, in
/// rank order (= sample order under a ShardPlan), on every rank.
void exchange_samples(const Comm* comm, std::vector<DevicesOfGroups>& placements,
                      std::vector<Evaluation>& evaluations);

/// Sets OpenBLAS's own thread pool (which LibTorch's at::set_num_threads does not reach) to one
/// thread, if OpenBLAS is the BLAS this process loaded. Its multi-threaded kernels add in an order
/// that depends on the thread count, which is the machine's core count by default but one core
/// under mpirun's binding: without this, 2 ranks and 1 process part ways after a few iterations.
/// Returns whether OpenBLAS was found.
bool pin_blas_to_one_thread();

}  // namespace placesim::policy

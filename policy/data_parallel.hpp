// Synchronous data-parallel REINFORCE, the torch-free half: which of an iteration's K samples a
// rank draws, the seed of each sample, and how per-shard results meet in a fixed order so that
// any rank count gives the bits of a single process.
//
// The K samples are cut into S shards (contiguous, as equal as integers allow); S is fixed by
// the user, not by the rank count, and the R ranks take S / R consecutive shards each. Every
// floating-point sum over samples is a sum over shards in shard order, done the same way on one
// process and on many.
//
//   ShardPlan plan(16, 4, comm.rank(), comm.size());   // 16 samples in 4 shards; 1, 2 or 4 ranks
//   for (int s = plan.first_shard(); s < plan.end_shard(); ++s) {
//     auto [begin, end] = plan.samples_of(s);
//     std::mt19937_64 rng(sample_seed(seed, iteration, begin));   // one engine per sample
//   }
//   std::vector<float> g = sum_shards_fixed_order(&comm, my_shard_grads);   // s0 + s1 + s2 + s3
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "policy/rl.hpp"

namespace placesim::policy {

class SweepComm;

class ShardPlan {
 public:
  /// Throws sim::InputError (flag --shards) unless 1 <= shards <= samples and `ranks` divides
  /// `shards`.
  ShardPlan(int samples, int shards, int rank, int ranks);
  [[nodiscard]] int samples() const { return samples_; }
  [[nodiscard]] int shards() const { return shards_; }
  /// This rank's shards: [first_shard, end_shard).
  [[nodiscard]] int first_shard() const { return first_; }
  [[nodiscard]] int end_shard() const { return end_; }
  /// Samples of `shard`: [first, second).
  [[nodiscard]] std::pair<int, int> samples_of(int shard) const;
  /// This rank's samples: [first_sample, end_sample).
  [[nodiscard]] int first_sample() const { return samples_of(first_).first; }
  [[nodiscard]] int end_sample() const { return samples_of(end_ - 1).second; }

 private:
  int samples_, shards_, first_, end_;
};

/// The seed of sample `sample` of iteration `iteration` (SplitMix64 over the three): it depends
/// on nothing else, so whichever rank draws the sample draws the same placement.
std::uint64_t sample_seed(std::uint64_t seed, std::int64_t iteration, std::int64_t sample);

/// Every rank's string in rank order, on every rank. `comm` null = one process.
std::vector<std::string> allgather(const SweepComm* comm, const std::string& mine);

/// `mine` holds this rank's shards in shard order (the plan's [first_shard, end_shard)); all
/// vectors of all ranks have one size. Returns ((s0 + s1) + s2) + ... over every shard of every
/// rank, on every rank: the same bits as one process holding all the shards.
std::vector<float> sum_shards_fixed_order(const SweepComm* comm,
                                          const std::vector<std::vector<float>>& mine);
std::vector<double> sum_shards_fixed_order(const SweepComm* comm,
                                           const std::vector<std::vector<double>>& mine);

/// On entry this rank's sampled placements and their evaluations; on return every rank's, in
/// rank order (= sample order under a ShardPlan), on every rank.
void exchange_samples(const SweepComm* comm, std::vector<DevicesOfGroups>& placements,
                      std::vector<Evaluation>& evaluations);

/// Sets OpenBLAS's own thread pool (which LibTorch's at::set_num_threads does not reach) to one
/// thread, if OpenBLAS is the BLAS this process loaded. Its multi-threaded kernels add in an order
/// that depends on the thread count, which is the machine's core count by default but one core
/// under mpirun's binding: without this, 2 ranks and 1 process part ways after a few iterations.
/// Returns whether OpenBLAS was found.
bool pin_blas_to_one_thread();

/// Rank 0's `value` on every rank: for decisions (stop, budget spent) that all ranks must take
/// together or deadlock in the next collective.
bool rank0_decides(const SweepComm* comm, bool value);

}  // namespace placesim::policy

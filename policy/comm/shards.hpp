// Data-parallel work in a fixed order (synchronous data-parallel REINFORCE uses it): which of an
// iteration's K samples a rank draws, the seed of each sample, and how per-shard results meet in
// a fixed order so that any rank count gives the bits of a single process.
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

#include "policy/comm/comm.hpp"

namespace placesim::policy {

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
std::vector<std::string> allgather(const Comm* comm, const std::string& mine);

/// `mine` holds this rank's shards in shard order (the plan's [first_shard, end_shard)); all
/// vectors of all ranks have one size. Returns ((s0 + s1) + s2) + ... over every shard of every
/// rank, on every rank: the same bits as one process holding all the shards.
std::vector<float> sum_shards_fixed_order(const Comm* comm,
                                          const std::vector<std::vector<float>>& mine);
std::vector<double> sum_shards_fixed_order(const Comm* comm,
                                           const std::vector<std::vector<double>>& mine);

/// Rank 0's `value` on every rank: for decisions (stop, budget spent) that all ranks must take
/// together or deadlock in the next collective.
bool rank0_decides(const Comm* comm, bool value);

/// Sums `data` over all ranks in a fixed order (rank 0 + rank 1 + ...) as
/// sum_shards_fixed_order does, one shard per rank. Every rank ends with identical bits, and the
/// result does not depend on MPI's reduction tree. Sizes must agree on every rank.
void allreduce_sum_fixed_order(const Comm& comm, std::vector<float>& data);
void allreduce_sum_fixed_order(const Comm& comm, std::vector<double>& data);

}  // namespace placesim::policy

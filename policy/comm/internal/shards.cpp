// Shards, per-sample seeds and fixed-order sums for data-parallel jobs (shards.hpp).
#include "policy/comm/shards.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/error.hpp"

namespace placesim::policy {

ShardPlan::ShardPlan(int samples, int shards, int rank, int ranks)
    : samples_(samples), shards_(shards) {
  if (shards < 1 || shards > samples)
    throw sim::InputError("<flag --shards>", "",
                          "between 1 and the " + std::to_string(samples) +
                              " samples per iteration, got " + std::to_string(shards));
  if (ranks < 1 || shards % ranks != 0)
    throw sim::InputError("<flag --shards>", "",
                          "a multiple of the " + std::to_string(ranks) +
                              " MPI ranks, e.g. --shards " + std::to_string(std::max(ranks, 1)) +
                              " (one process with the same --shards gives the same result), got " +
                              std::to_string(shards));
  const int per_rank = shards / ranks;
  first_ = rank * per_rank;
  end_ = first_ + per_rank;
}

std::pair<int, int> ShardPlan::samples_of(int shard) const {
  auto at = [this](int s) {
    return static_cast<int>(static_cast<std::int64_t>(samples_) * s / shards_);
  };
  return {at(shard), at(shard + 1)};
}

namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <typename T>
std::vector<T> add_in_order(const std::vector<std::vector<T>>& shards) {
  if (shards.empty()) return {};
  std::vector<T> acc = shards.front();
  for (std::size_t s = 1; s < shards.size(); ++s) {
    if (shards[s].size() != acc.size())
      throw std::logic_error("sum_shards_fixed_order: shards of different sizes");
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += shards[s][i];
  }
  return acc;
}

// A reduce-scatter and an all-gather, as a ring all-reduce does, but with the order of the
// additions fixed: the n elements are cut into one chunk per rank; every rank sends chunk q of
// each of its shards to rank q (one all-to-all), rank q adds the chunk over all shards in shard
// order (rank order, then the rank's own order, which is shard order under a ShardPlan), and an
// all-gather puts the summed chunks together. Every element is added in the same order as one
// process adding whole shards, so the bits agree; each rank sends and receives about 2n elements
// whatever the rank count, and the additions are spread over the ranks.
template <typename T>
std::vector<T> sum_impl(const Comm* comm, const std::vector<std::vector<T>>& mine) {
  if (comm == nullptr || comm->size() == 1) return add_in_order(mine);
  if (mine.empty()) throw std::logic_error("sum_shards_fixed_order: a rank holds no shard");
  const std::size_t n = mine.front().size();
  for (const auto& v : mine)
    if (v.size() != n) throw std::logic_error("sum_shards_fixed_order: shards of different sizes");
  const auto ranks = static_cast<std::size_t>(comm->size());
  const std::size_t chunk = (n + ranks - 1) / ranks;
  auto chunk_begin = [&](std::size_t q) { return std::min(n, q * chunk); };
  std::vector<std::string> to_each(ranks);
  for (std::size_t q = 0; q < ranks; ++q) {
    const std::size_t b = chunk_begin(q), e = chunk_begin(q + 1);
    to_each[q].reserve(mine.size() * (e - b) * sizeof(T));
    for (const auto& v : mine)
      to_each[q].append(reinterpret_cast<const char*>(v.data() + b), (e - b) * sizeof(T));
  }
  const std::vector<std::string> got = comm->alltoall(to_each);
  const auto me = static_cast<std::size_t>(comm->rank());
  const std::size_t len = chunk_begin(me + 1) - chunk_begin(me);
  // Added straight from the received bytes, shard after shard (no copy per shard).
  std::vector<T> my_sum(len);
  bool first = true;
  for (const std::string& from : got) {
    if (from.size() != mine.size() * len * sizeof(T))
      throw std::logic_error("sum_shards_fixed_order: ranks passed different sizes");
    for (std::size_t off = 0; off < from.size(); off += len * sizeof(T)) {
      const char* part = from.data() + off;
      if (first) {
        std::memcpy(my_sum.data(), part, len * sizeof(T));
        first = false;
        continue;
      }
      for (std::size_t i = 0; i < len; ++i) {
        T v;
        std::memcpy(&v, part + i * sizeof(T), sizeof(T));
        my_sum[i] += v;
      }
    }
  }
  const std::vector<std::string> sums = comm->allgather(
      std::string(reinterpret_cast<const char*>(my_sum.data()), my_sum.size() * sizeof(T)));
  std::vector<T> out(n);
  std::size_t at = 0;
  for (const std::string& s : sums) {
    if (at + s.size() / sizeof(T) > n || s.size() % sizeof(T) != 0)
      throw std::logic_error("sum_shards_fixed_order: a rank's sum has the wrong size");
    std::memcpy(out.data() + at, s.data(), s.size());
    at += s.size() / sizeof(T);
  }
  if (at != n)
    throw std::logic_error("sum_shards_fixed_order: summed chunks do not cover the vector");
  return out;
}
}  // namespace

std::uint64_t sample_seed(std::uint64_t seed, std::int64_t iteration, std::int64_t sample) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(iteration));
  return splitmix64(h ^ static_cast<std::uint64_t>(sample));
}

std::vector<std::string> allgather(const Comm* comm, const std::string& mine) {
  if (comm == nullptr || comm->size() == 1) return {mine};
  return comm->allgather(mine);
}

std::vector<float> sum_shards_fixed_order(const Comm* comm,
                                          const std::vector<std::vector<float>>& mine) {
  return sum_impl(comm, mine);
}

std::vector<double> sum_shards_fixed_order(const Comm* comm,
                                           const std::vector<std::vector<double>>& mine) {
  return sum_impl(comm, mine);
}

bool rank0_decides(const Comm* comm, bool value) {
  if (comm == nullptr || comm->size() == 1) return value;
  return comm->broadcast(value ? "1" : "0") == "1";
}

void allreduce_sum_fixed_order(const Comm& comm, std::vector<float>& data) {
  data = sum_shards_fixed_order(&comm, {data});
}
void allreduce_sum_fixed_order(const Comm& comm, std::vector<double>& data) {
  data = sum_shards_fixed_order(&comm, {data});
}

}  // namespace placesim::policy

// The RL trainers' side of data-parallel training: sampled placements across ranks, and BLAS
// pinned to one thread.
#include "policy/rl/internal/samples.hpp"

#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <stdexcept>

#include "policy/comm/shards.hpp"

namespace placesim::policy {

namespace {
template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T take(const std::string& in, std::size_t& at) {
  if (at + sizeof(T) > in.size()) throw std::logic_error("exchange_samples: truncated message");
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}
}  // namespace

void exchange_samples(const Comm* comm, std::vector<DevicesOfGroups>& placements,
                      std::vector<Evaluation>& evaluations) {
  if (comm == nullptr || comm->size() == 1) return;
  if (placements.size() != evaluations.size())
    throw std::logic_error("exchange_samples: one evaluation per placement");
  std::string mine;
  put<std::uint64_t>(mine, placements.size());
  for (std::size_t s = 0; s < placements.size(); ++s) {
    put<std::uint64_t>(mine, placements[s].size());
    for (sim::DeviceId d : placements[s]) put<sim::DeviceId>(mine, d);
    put<double>(mine, evaluations[s].step_time_s);
    put<double>(mine, evaluations[s].overflow);
    put<std::uint8_t>(mine, evaluations[s].oom ? 1 : 0);
  }
  placements.clear();
  evaluations.clear();
  for (const std::string& part : allgather(comm, mine)) {
    std::size_t at = 0;
    const auto n = take<std::uint64_t>(part, at);
    for (std::uint64_t s = 0; s < n; ++s) {
      DevicesOfGroups p(take<std::uint64_t>(part, at));
      for (auto& d : p) d = take<sim::DeviceId>(part, at);
      Evaluation e;
      e.step_time_s = take<double>(part, at);
      e.overflow = take<double>(part, at);
      e.oom = take<std::uint8_t>(part, at) != 0;
      placements.push_back(std::move(p));
      evaluations.push_back(e);
    }
  }
}

bool pin_blas_to_one_thread() {
  // Looked up at run time: the BLAS is whatever libblas.so.3 Debian's alternatives point at.
  using SetThreads = void (*)(int);
  void* sym = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  if (sym == nullptr) return false;
  reinterpret_cast<SetThreads>(sym)(1);
  return true;
}

}  // namespace placesim::policy

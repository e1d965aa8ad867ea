// The one file that calls MPI. Strings travel as (length, bytes); vectors as raw bytes.
#include "policy/mpi_util.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#ifdef PLACESIM_WITH_MPI
#include <mpi.h>
#endif

namespace placesim::policy {

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

#ifdef PLACESIM_WITH_MPI

namespace {
// OpenMPI's blocking collectives spin on the CPU while they wait. A rank that waits for a slower
// one would take a core from it (or from anybody else on the machine), so every collective here
// is non-blocking and waited for by polling: a tight loop for 200 us plus 1 ns per byte moved (a
// collective whose ranks are all there finishes in that time; a large one moves its fragments
// only when polled, and a sleeping rank on a busy machine waits milliseconds for its next time
// slice), then sleeps of 10 us doubling to 200 us.
void wait_politely(MPI_Request& request, std::size_t bytes) {
  int done = 0;
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200) +
                          std::chrono::nanoseconds(static_cast<std::int64_t>(bytes));
  auto pause = std::chrono::microseconds(10);
  for (;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() < spin_until) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

void bcast(void* data, int count, MPI_Datatype type) {
  MPI_Request r;
  MPI_Ibcast(data, count, type, 0, MPI_COMM_WORLD, &r);
  int size = 0;
  MPI_Type_size(type, &size);
  wait_politely(r, static_cast<std::size_t>(count) * static_cast<std::size_t>(size));
}
}  // namespace

MpiRuntime::MpiRuntime() {
  if (!launched_by_mpirun()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the thread that created the runtime calls MPI; oneTBB workers never do.
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  active_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiRuntime::~MpiRuntime() {
  if (!active_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiComm::broadcast(const std::string& from_root) const {
  if (!rt_.active() || rt_.size() == 1) return from_root;
  long long n = static_cast<long long>(from_root.size());
  bcast(&n, 1, MPI_LONG_LONG);
  std::string s = rt_.rank() == 0 ? from_root : std::string(static_cast<std::size_t>(n), '\0');
  if (n > 0) bcast(s.data(), static_cast<int>(n), MPI_CHAR);
  return s;
}

std::vector<std::string> MpiComm::gather(const std::string& mine) const {
  if (!rt_.active() || rt_.size() == 1) return {mine};
  const int size = rt_.size();
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(rt_.rank() == 0 ? size : 0);
  MPI_Request r;
  MPI_Igather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &r);
  wait_politely(r, 0);
  std::vector<int> displs(counts.size(), 0);
  std::string all;
  if (rt_.rank() == 0) {
    long long total = 0;
    for (int r = 0; r < size; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Igatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0,
               MPI_COMM_WORLD, &r);
  wait_politely(r, rt_.rank() == 0 ? all.size() : mine.size());
  std::vector<std::string> out;
  if (rt_.rank() == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
  return out;
}

void MpiComm::barrier() const {
  if (!rt_.active()) return;
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  wait_politely(r, 0);
}

#else

MpiRuntime::MpiRuntime() = default;
MpiRuntime::~MpiRuntime() = default;
std::string MpiComm::broadcast(const std::string& from_root) const { return from_root; }
std::vector<std::string> MpiComm::gather(const std::string& mine) const { return {mine}; }
void MpiComm::barrier() const {}

#endif

namespace {

template <typename T>
void allreduce_impl(const SweepComm& comm, std::vector<T>& data) {
  if (comm.size() == 1) return;
  std::string mine(data.size() * sizeof(T), '\0');
  std::memcpy(mine.data(), data.data(), mine.size());
  const std::vector<std::string> all = comm.gather(mine);
  std::string sum;
  if (comm.rank() == 0) {
    std::vector<T> acc(data.size(), T{0});
    for (const std::string& part : all) {
      if (part.size() != mine.size())
        throw std::logic_error("allreduce_sum_fixed_order: ranks passed different sizes");
      std::vector<T> v(data.size());
      std::memcpy(v.data(), part.data(), part.size());
      for (std::size_t i = 0; i < v.size(); ++i) acc[i] += v[i];
    }
    sum.assign(reinterpret_cast<const char*>(acc.data()), acc.size() * sizeof(T));
  }
  sum = comm.broadcast(sum);
  std::memcpy(data.data(), sum.data(), sum.size());
}

}  // namespace

void allreduce_sum_fixed_order(const SweepComm& comm, std::vector<float>& data) {
  allreduce_impl(comm, data);
}
void allreduce_sum_fixed_order(const SweepComm& comm, std::vector<double>& data) {
  allreduce_impl(comm, data);
}

}  // namespace placesim::policy

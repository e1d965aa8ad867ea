// The one file that calls MPI: collectives on strings, and the messages of the sweep work queue.
// Built with PLACESIM_WITH_MPI; mpi_single.cpp stands in for it otherwise (policy/CMakeLists.txt).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mpi.h>
#include <stdexcept>
#include <thread>

#include "policy/comm/mpi.hpp"

namespace placesim::policy {

namespace {
// OpenMPI's blocking calls spin on the CPU while they wait. A rank that waits for a slower one
// would take a core from it (or from anybody else on the machine), so every wait for another
// rank polls: a tight loop for 200 us plus 1 ns per byte moved, then sleeps of 10 us doubling to
// 200 us. Collectives first wait so for every rank to arrive (all_arrive), then move their data
// with OpenMPI's blocking calls: with every rank there those finish in milliseconds, where
// sleeps between polls stretched a 4 MB gradient exchange to 50-100 ms (OpenMPI moves a large
// message in fragments, each only when both sides poll).
template <typename Done>
void poll_politely(const Done& done, std::size_t bytes) {
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200) +
                          std::chrono::nanoseconds(static_cast<std::int64_t>(bytes));
  auto pause = std::chrono::microseconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() < spin_until) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

void wait_politely(MPI_Request& request, std::size_t bytes) {
  poll_politely(
      [&] {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        return done != 0;
      },
      bytes);
}

void all_arrive() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  wait_politely(r, 0);
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
  all_arrive();
  long long n = static_cast<long long>(from_root.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string s = rt_.rank() == 0 ? from_root : std::string(static_cast<std::size_t>(n), '\0');
  if (n > 0) MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return s;
}

std::vector<std::string> MpiComm::gather(const std::string& mine) const {
  if (!rt_.active() || rt_.size() == 1) return {mine};
  const int size = rt_.size();
  all_arrive();
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(rt_.rank() == 0 ? size : 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
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
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rt_.rank() == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
  return out;
}

namespace {
int as_count(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::length_error("MPI message of " + std::to_string(n) + " bytes: over 2 GiB");
  return static_cast<int>(n);
}
// Exclusive prefix sums of counts: the displacements of MPI's v-collectives.
std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> displs(counts.size(), 0);
  long long total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = as_count(static_cast<std::size_t>(total));
    total += counts[r];
  }
  as_count(static_cast<std::size_t>(total));
  return displs;
}
std::vector<std::string> split(const std::string& all, const std::vector<int>& counts,
                               const std::vector<int>& displs) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < counts.size(); ++r)
    out.push_back(
        all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(counts[r])));
  return out;
}
}  // namespace

std::vector<std::string> MpiComm::allgather(const std::string& mine) const {
  if (!rt_.active() || rt_.size() == 1) return {mine};
  all_arrive();
  int n = as_count(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(rt_.size()));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const std::vector<int> displs = displacements(counts);
  std::string all(static_cast<std::size_t>(displs.back() + counts.back()), '\0');
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  return split(all, counts, displs);
}

std::vector<std::string> MpiComm::alltoall(const std::vector<std::string>& to_each) const {
  if (static_cast<int>(to_each.size()) != rt_.size())
    throw std::logic_error("MpiComm::alltoall: one part per rank expected");
  if (!rt_.active() || rt_.size() == 1) return to_each;
  all_arrive();
  std::vector<int> send_counts;
  std::string send;
  for (const std::string& part : to_each) {
    send_counts.push_back(as_count(part.size()));
    send += part;
  }
  const std::vector<int> send_displs = displacements(send_counts);
  std::vector<int> recv_counts(to_each.size());
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const std::vector<int> recv_displs = displacements(recv_counts);
  std::string recv(static_cast<std::size_t>(recv_displs.back() + recv_counts.back()), '\0');
  MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_CHAR, recv.data(),
                recv_counts.data(), recv_displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  return split(recv, recv_counts, recv_displs);
}

// The tag of run_sweep's work-queue messages (collectives do not match point-to-point ones).
constexpr int kQueueTag = 17;

void MpiComm::send(int to, const std::string& message) const {
  if (!rt_.active()) throw std::logic_error("MpiComm::send: not running under mpirun");
  MPI_Request r;
  MPI_Isend(message.data(), as_count(message.size()), MPI_CHAR, to, kQueueTag, MPI_COMM_WORLD, &r);
  wait_politely(r, message.size());
}

std::pair<int, std::string> MpiComm::receive() const {
  if (!rt_.active()) throw std::logic_error("MpiComm::receive: not running under mpirun");
  // Probed politely (the sender may be busy for seconds), then received at once.
  int flag = 0;
  MPI_Status status;
  poll_politely(
      [&] {
        MPI_Iprobe(MPI_ANY_SOURCE, kQueueTag, MPI_COMM_WORLD, &flag, &status);
        return flag != 0;
      },
      0);
  int n = 0;
  MPI_Get_count(&status, MPI_CHAR, &n);
  std::string message(static_cast<std::size_t>(n), '\0');
  MPI_Recv(message.data(), n, MPI_CHAR, status.MPI_SOURCE, kQueueTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return {status.MPI_SOURCE, std::move(message)};
}

void MpiComm::barrier() const {
  if (!rt_.active()) return;
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  wait_politely(r, 0);
}

}  // namespace placesim::policy

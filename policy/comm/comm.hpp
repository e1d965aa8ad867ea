// The communication layer of placesim's multi-rank jobs (sweeps, data-parallel training): one
// interface, collectives on strings and point-to-point messages, with three implementations:
// this base class (one process), ThreadComm (ranks as threads of one process, thread_comm.hpp)
// and MpiComm (MPI_COMM_WORLD, mpi.hpp; the only code that includes <mpi.h>). Users see only
// `const Comm*`; nullptr means one process.
//
//   const Comm one;                                      // rank 0 of 1
//   std::vector<std::string> all = one.allgather("x");   // {"x"}
//   MpiRuntime mpi;  MpiComm world(mpi);                 // under mpirun: every rank
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace placesim::policy {

/// The ranks a job runs on. The base class is one process; ThreadComm (thread_comm.hpp) runs ranks
/// as threads of one process, MpiComm (mpi.hpp) over MPI.
class Comm {
 public:
  virtual ~Comm() = default;
  [[nodiscard]] virtual int rank() const { return 0; }
  [[nodiscard]] virtual int size() const { return 1; }
  /// Rank 0's string, on every rank.
  [[nodiscard]] virtual std::string broadcast(const std::string& from_root) const {
    return from_root;
  }
  /// Every rank's string, in rank order, on rank 0 (empty elsewhere).
  [[nodiscard]] virtual std::vector<std::string> gather(const std::string& mine) const {
    return {mine};
  }
  /// Every rank's string, in rank order, on every rank. The default is gather + broadcast;
  /// the MPI one is MPI_Allgatherv.
  [[nodiscard]] virtual std::vector<std::string> allgather(const std::string& mine) const;
  /// `to_each` holds one string per rank: part r goes to rank r. Returns what every rank sent to
  /// this one, in rank order. The default goes through rank 0; the MPI one is MPI_Alltoallv.
  [[nodiscard]] virtual std::vector<std::string> alltoall(
      const std::vector<std::string>& to_each) const;
  /// Point to point, for run_sweep's work queue: sends `message` to rank `to` (it may wait until
  /// the receiver takes it). Only multi-rank comms need these; the defaults throw.
  virtual void send(int to, const std::string& message) const;
  /// The next message sent to this rank by any rank, as {sender, message}; waits for one.
  [[nodiscard]] virtual std::pair<int, std::string> receive() const;
};

}  // namespace placesim::policy

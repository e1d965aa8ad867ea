// MPI, wrapped: initialized only when the process was launched by mpirun (OpenMPI sets
// OMPI_COMM_WORLD_SIZE; PMI launchers set PMI_SIZE), so plain runs need no MPI runtime and
// builds without PLACESIM_WITH_MPI behave as one rank.
//
//   MpiRuntime mpi;                         // MPI_Init if launched by mpirun; finalized on exit
//   MpiComm comm(mpi);                      // a Comm over MPI_COMM_WORLD
//   run_sweep(spec, eval, "out.csv", {.comm = &comm});
//   std::vector<float> grad = ...;
//   allreduce_sum_fixed_order(comm, grad);  // same bits on every rank, any rank count
#pragma once

#include <string>
#include <vector>

#include "policy/comm/comm.hpp"
#include "policy/comm/shards.hpp"  // allreduce_sum_fixed_order

namespace placesim::policy {

/// Owns MPI initialization for the life of one command. One per process.
class MpiRuntime {
 public:
  MpiRuntime();
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  [[nodiscard]] bool active() const { return active_; }
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

 private:
  bool active_ = false;
  int rank_ = 0;
  int size_ = 1;
};

/// True when the environment says mpirun started this process.
bool launched_by_mpirun();

/// Comm over MPI_COMM_WORLD; one rank when the runtime is not active.
class MpiComm : public Comm {
 public:
  explicit MpiComm(const MpiRuntime& runtime) : rt_(runtime) {}
  [[nodiscard]] int rank() const override { return rt_.rank(); }
  [[nodiscard]] int size() const override { return rt_.size(); }
  [[nodiscard]] std::string broadcast(const std::string& from_root) const override;
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) const override;
  [[nodiscard]] std::vector<std::string> allgather(const std::string& mine) const override;
  [[nodiscard]] std::vector<std::string> alltoall(
      const std::vector<std::string>& to_each) const override;
  void send(int to, const std::string& message) const override;
  [[nodiscard]] std::pair<int, std::string> receive() const override;
  void barrier() const;

 private:
  const MpiRuntime& rt_;
};

}  // namespace placesim::policy

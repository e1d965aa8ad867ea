// MpiComm in a build without MPI (PLACESIM_WITH_MPI=OFF; policy/CMakeLists.txt picks this file
// or mpi_world.cpp): one rank, whatever launched the process (tools/mpi_guard.cpp refuses mpirun).
#include <string>
#include <utility>
#include <vector>

#include "policy/comm/mpi.hpp"

namespace placesim::policy {

MpiRuntime::MpiRuntime() = default;
MpiRuntime::~MpiRuntime() = default;
std::string MpiComm::broadcast(const std::string& from_root) const {
  return from_root;
}
std::vector<std::string> MpiComm::gather(const std::string& mine) const {
  return {mine};
}
std::vector<std::string> MpiComm::allgather(const std::string& mine) const {
  return {mine};
}
std::vector<std::string> MpiComm::alltoall(const std::vector<std::string>& to_each) const {
  return to_each;
}
void MpiComm::send(int to, const std::string& message) const {
  Comm::send(to, message);
}
std::pair<int, std::string> MpiComm::receive() const {
  return Comm::receive();
}
void MpiComm::barrier() const {}

}  // namespace placesim::policy

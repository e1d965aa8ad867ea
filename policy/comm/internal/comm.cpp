// The one-process defaults of Comm: collectives built on gather and broadcast, and no messages.
#include "policy/comm/comm.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "policy/comm/mpi.hpp"

namespace placesim::policy {

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

namespace {
// Rank 0's framing for the defaults below: (8-byte length, bytes) per part.
std::string frame(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    const std::uint64_t len = p.size();
    out.append(reinterpret_cast<const char*>(&len), sizeof len);
    out += p;
  }
  return out;
}
std::vector<std::string> unframe(const std::string& framed) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at + sizeof(std::uint64_t) <= framed.size()) {
    std::uint64_t len = 0;
    std::memcpy(&len, framed.data() + at, sizeof len);
    at += sizeof len;
    if (len > framed.size() - at) throw std::logic_error("Comm: truncated frame");
    out.push_back(framed.substr(at, len));
    at += len;
  }
  return out;
}
}  // namespace

std::vector<std::string> Comm::allgather(const std::string& mine) const {
  if (size() == 1) return {mine};
  std::vector<std::string> out = unframe(broadcast(frame(gather(mine))));
  if (static_cast<int>(out.size()) != size())
    throw std::logic_error("Comm::allgather: a part was lost");
  return out;
}

void Comm::send(int /*to*/, const std::string& /*message*/) const {
  throw std::logic_error("Comm::send: this comm has no point-to-point messages");
}

std::pair<int, std::string> Comm::receive() const {
  throw std::logic_error("Comm::receive: this comm has no point-to-point messages");
}

std::vector<std::string> Comm::alltoall(const std::vector<std::string>& to_each) const {
  if (static_cast<int>(to_each.size()) != size())
    throw std::logic_error("Comm::alltoall: one part per rank expected");
  if (size() == 1) return to_each;
  // Every rank's parts reach every rank, which keeps those sent to it: simple, not cheap.
  const std::vector<std::string> all = allgather(frame(to_each));
  std::vector<std::string> out;
  for (const std::string& from : all) {
    std::vector<std::string> parts = unframe(from);
    if (static_cast<int>(parts.size()) != size())
      throw std::logic_error("Comm::alltoall: a part was lost");
    out.push_back(std::move(parts[static_cast<std::size_t>(rank())]));
  }
  return out;
}

}  // namespace placesim::policy

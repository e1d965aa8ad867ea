// Shared by the subcommands that run on several MPI ranks (sweep, train).
#include <cstdlib>
#include <string>

#include "policy/comm/mpi.hpp"
#include "sim/error.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

void refuse_mpirun_without_mpi(const policy::MpiRuntime& mpi) {
  if (mpi.active() || !policy::launched_by_mpirun()) return;
  // Started by mpirun but built without MPI: N independent copies would all write the same files.
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!size || std::string(size) == "1") return;
  if (!rank || std::string(rank) == "0")
    throw sim::InputError("<mpirun>", "",
                          "a placesim built with PLACESIM_WITH_MPI=ON to run on several ranks; "
                          "this one has no MPI, run it without mpirun");
  throw CliExit{2};
}

}  // namespace placesim::tools

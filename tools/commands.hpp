// Registration of the `placesim` subcommands. Each cmd_*.cpp adds its subcommand(s) to the app;
// a subcommand's callback does the work and throws sim::InputError for bad input (main prints it
// on one line and exits 2) or CliExit for any other non-zero status.
#pragma once

#include <CLI/CLI.hpp>

namespace placesim::tools {

/// Thrown by a subcommand to end with a given status after printing its own message.
struct CliExit {
  int code = 1;
};

void register_describe(CLI::App& app);        // cmd_describe.cpp
void register_simulate(CLI::App& app);        // cmd_simulate.cpp
void register_build_graph(CLI::App& app);     // cmd_build_graph.cpp
void register_import(CLI::App& app);          // cmd_import.cpp (onnx, topo)
void register_place(CLI::App& app);           // cmd_place.cpp (place, compare)
void register_train(CLI::App& app);           // cmd_train.cpp
void register_calibrate(CLI::App& app);       // cmd_calibrate.cpp (calibrate, calibrate-links, validate)
void register_sweep(CLI::App& app);           // cmd_sweep.cpp
void register_collective(CLI::App& app);      // cmd_collective.cpp

}  // namespace placesim::tools

namespace placesim::policy {
class MpiRuntime;
}  // namespace placesim::policy

namespace placesim::tools {
/// Under mpirun, a build without MPI would run N independent copies writing the same files: rank
/// 0 throws an InputError saying so, the other ranks CliExit{2} silently (mpi_guard.cpp).
void refuse_mpirun_without_mpi(const policy::MpiRuntime& mpi);

}  // namespace placesim::tools

namespace placesim::tools {
void register_import_topo(CLI::App& import_cmd);   // cmd_import_topo.cpp (calibration owner)

/// In the LibTorch-free `placesim`: replaces this process with `placesim-torch` from the same
/// folder, same arguments (torch_exec.cpp). Returns only if there is none, or in a build that
/// has LibTorch itself; the caller then answers as a build without LibTorch does.
void exec_torch_build();
}  // namespace placesim::tools

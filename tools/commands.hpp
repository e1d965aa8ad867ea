// Registration of the `placesim` subcommands. Each cmd_*.cpp adds its subcommand(s) to the app;
// a subcommand's callback does the work and throws sim::InputError for bad input (main prints it
// on one line and exits 2) or CliExit for any other non-zero status.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <string>

namespace placesim::tools {

/// Thrown by a subcommand to end with a given status after printing its own message.
struct CliExit {
  int code = 1;
};

// The contract every subcommand keeps (cli_contract.cpp, docs/formats.md "Command line"):
// results on stdout; notes, warnings and progress on stderr (none under --quiet); every usage
// or input error exits 2 with one line on stderr and nothing on stdout.

/// True when the command line has --quiet (added to every subcommand by main).
bool quiet();
void set_quiet(bool q);
/// "note: TEXT" on stderr, unless --quiet.
void note(const std::string& text);
/// CLI11 check for an input path: exists and is not a directory (one-line usage error).
const CLI::Validator& input_file();
/// CLI11 checks for a number above 0 / at least 0, with a one-line "expected ..., got X" message
/// (CLI11's PositiveNumber and NonNegativeNumber print a 300-digit upper bound instead, and
/// "Value 0 not in range 0 to ..." for 0).
const CLI::Validator& positive_number();
const CLI::Validator& non_negative_number();
/// CLI11 check for "a file or a built-in name": if the path exists it must not be a directory.
const CLI::Validator& not_a_directory();
/// Adds --quiet to `app` and every subcommand below it that has none, and the usage error
/// mapping; then `placesim completion bash` (cmd_completion) can walk the same tree.
void add_quiet_flags(CLI::App& app);
/// Maps an exception from parsing or running the app to the exit status, printing one line on
/// stderr (a help hint is part of that line for usage errors).
int report_failure(CLI::App& app, std::exception_ptr error);
void register_completion(CLI::App& app);  // cmd_completion.cpp
}  // namespace placesim::tools

namespace placesim::sim {
struct Graph;
struct GraphStats;
}  // namespace placesim::sim

namespace placesim::tools {
/// `--json` of the commands that write a graph: its statistics and the file written.
std::string graph_stats_json(const sim::Graph& g, const sim::GraphStats& s,
                             const std::string& output);
void register_import_chakra(CLI::App& import_cmd);  // cmd_chakra.cpp: import chakra
void register_export(CLI::App& app);                // cmd_chakra.cpp: export chakra
}  // namespace placesim::tools

namespace placesim::sim {
struct Placement;
struct Cluster;
class KernelCostModel;
}  // namespace placesim::sim

namespace placesim::tools {
/// --placement of simulate/export: a placement JSON file, else a method name (cmd_simulate.cpp).
sim::Placement placement_arg(const std::string& arg, const sim::Graph& graph,
                             const sim::Cluster& cluster, const sim::KernelCostModel& costs);

void register_describe(CLI::App& app);     // cmd_describe.cpp
void register_simulate(CLI::App& app);     // cmd_simulate.cpp
void register_build_graph(CLI::App& app);  // cmd_build_graph.cpp
void register_import(CLI::App& app);       // cmd_import.cpp (onnx, topo)
void register_place(CLI::App& app);        // cmd_place.cpp (place, compare)
void register_train(CLI::App& app);        // cmd_train.cpp
void register_calibrate(CLI::App& app);  // cmd_calibrate.cpp (calibrate, calibrate-links, validate)
void register_sweep(CLI::App& app);      // cmd_sweep.cpp
void register_collective(CLI::App& app);  // cmd_collective.cpp

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
void register_import_topo(CLI::App& import_cmd);  // cmd_import_topo.cpp (calibration owner)

/// In the LibTorch-free `placesim`: replaces this process with `placesim-torch` from the same
/// folder, same arguments (torch_exec.cpp). Returns only if there is none, or in a build that
/// has LibTorch itself; the caller then answers as a build without LibTorch does.
void exec_torch_build();
}  // namespace placesim::tools

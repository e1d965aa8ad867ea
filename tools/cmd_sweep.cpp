// `placesim sweep SPEC.yaml [-o results.csv] [--plot DIR] [--threads N]`: evaluates every point
// of a topology sweep in parallel (oneTBB threads, MPI ranks under mpirun) into one CSV.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "policy/comm/mpi.hpp"
#include "policy/place/learned.hpp"
#include "policy/sweep/sweep.hpp"
#include "sim/error.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {

namespace fs = std::filesystem;

std::string find_plot_script() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / "tools" / "plot_sweep.py");
    candidates.push_back(exe.parent_path().parent_path() / "tools" / "plot_sweep.py");
  }
  if (const char* src = std::getenv("PLACESIM_SOURCE_DIR"))
    candidates.push_back(fs::path(src) / "tools" / "plot_sweep.py");
  candidates.push_back(fs::path("tools") / "plot_sweep.py");
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return c.string();
  return {};
}

/// Runs the plotting script without a shell, so paths need no quoting.
int run_plot(const std::string& script, const std::string& csv, const std::string& dir,
             const std::string& title, const std::string& x_axis) {
  std::vector<std::string> args = {"/usr/bin/python3", script, csv, dir};
  if (!x_axis.empty()) {
    args.push_back("--x");
    args.push_back(x_axis);
  }
  if (!title.empty()) {
    args.push_back("--title");
    args.push_back(title);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Evaluate a topology sweep (docs/sweeps.md) into a CSV, one row per point; resumes an "
      "interrupted run; splits points across MPI ranks under mpirun");
  struct Args {
    std::string spec;
    std::string out;
    std::string plot_dir;
    int threads = 0;
    bool quiet = false;
    bool retry_errors = false;
    bool json = false;
    std::string clusters_dir;
    std::size_t sample = 0;
    std::uint64_t seed = 1;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("spec", args->spec, "sweep spec YAML")->required()->check(input_file());
  cmd->add_option("-o,--output", args->out, "result CSV (default: <spec name>.csv)");
  cmd->add_option("--plot", args->plot_dir, "write PNG plots (lines, heatmaps) into this folder");
  cmd->add_option("--threads", args->threads, "oneTBB threads per rank (default: all cores)")
      ->check(non_negative_number());
  cmd->add_flag("-q,--quiet", args->quiet, "no progress bar");
  cmd->add_flag("--json", args->json, "print the run's summary as JSON instead of the CSV path");
  cmd->add_flag("--retry-errors", args->retry_errors,
                "evaluate again the points whose rows in the CSV carry an error");
  auto* write = cmd->add_option(
      "--write-clusters", args->clusters_dir,
      "write the cluster of each grid point to DIR/NNN_AXIS-VALUE_....yaml instead of evaluating "
      "(a corpus for `train --clusters`)");
  cmd->add_option("--sample", args->sample,
                  "with --write-clusters: only N grid points drawn at random (default: all)")
      ->needs(write)
      ->check(positive_number());
  cmd->add_option("--seed", args->seed, "with --sample: the draw's seed (default 1)")->needs(write);
  cmd->callback([args] {
    if (!args->clusters_dir.empty()) {
      const policy::SweepSpec spec = policy::load_sweep_spec(args->spec);
      for (const std::string& path :
           policy::write_sweep_clusters(spec, args->clusters_dir, args->sample, args->seed))
        std::cout << path << "\n";
      return;
    }
    // rl: methods are LibTorch's: hand over to placesim-torch before MPI starts (a bad spec is
    // reported below, by this build, like any other).
    if (policy::learned_methods() == nullptr) try {
        if (policy::uses_rl(policy::load_sweep_spec(args->spec))) exec_torch_build();
      } catch (const sim::InputError&) {
      }
    policy::MpiRuntime mpi;
    policy::MpiComm comm(mpi);
    refuse_mpirun_without_mpi(mpi);
    try {
      const policy::SweepSpec spec = policy::load_sweep_spec(args->spec);
      std::string out = args->out;
      if (out.empty()) out = fs::path(args->spec).stem().string() + ".csv";
      const policy::SimulationEvaluator evaluator(spec);
      policy::SweepRunOptions opt;
      opt.threads = args->threads;
      if (opt.threads == 0 && comm.size() > 1) {
        // Ranks on one machine share its cores; mpirun says how many ranks this node runs.
        const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        const int per_node = local ? std::max(1, std::atoi(local)) : 1;
        opt.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / per_node);
      }
      opt.comm = &comm;
      opt.retry_errors = args->retry_errors;
      opt.cost_hint = [&](const policy::SweepPoint& p) { return evaluator.cost_hint(p); };
      if (!args->quiet && !quiet()) opt.progress = &std::cerr;
      const policy::SweepRunStats st = policy::run_sweep(
          spec, [&](const policy::SweepPoint& p) { return evaluator(p); }, out, opt);
      if (comm.rank() != 0) return;
      std::cerr << "sweep: " << st.total << " points (" << st.skipped << " already in " << out
                << ", " << st.evaluated << " evaluated on " << comm.size() << " rank(s)) in "
                << st.wall_s << " s\n";
      if (args->json)
        std::cout << nlohmann::ordered_json{{"csv", out},
                                            {"points", st.total},
                                            {"skipped", st.skipped},
                                            {"evaluated", st.evaluated},
                                            {"ranks", comm.size()},
                                            {"wall_s", st.wall_s}}
                         .dump()
                  << "\n";
      else
        std::cout << out << "\n";
      if (!args->plot_dir.empty()) {
        const std::string script = find_plot_script();
        if (script.empty())
          throw sim::InputError(
              "<flag --plot>", "",
              "tools/plot_sweep.py next to the placesim binary or under $PLACESIM_SOURCE_DIR");
        std::error_code ec;
        fs::create_directories(args->plot_dir, ec);
        const int rc = run_plot(script, out, args->plot_dir,
                                spec.question.empty() ? spec.name : spec.question, spec.plot_x);
        if (rc != 0) {
          std::cerr << "placesim: plotting failed (tools/plot_sweep.py exit " << rc
                    << "); the CSV is complete\n";
          throw CliExit{1};
        }
      }
    } catch (const sim::InputError&) {
      // Every rank sees the same bad input; one message is enough.
      if (comm.rank() != 0) throw CliExit{2};
      throw;
    }
  });
}

}  // namespace placesim::tools

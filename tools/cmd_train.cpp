// `placesim train`: the README's main job, the RL placer (policy/rl/train_job.hpp runs it). This
// file reads the flags, routes SIGINT to the run's stop flag and starts MPI. With no arguments:
// nmt on paper-4gpu, 8 minutes.
#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <thread>

#include "policy/comm/mpi.hpp"
#include "policy/rl/train_job.hpp"
#include "sim/error.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {
namespace {

// A signal handler can reach nothing but a global; this flag is the only one, and only the
// `train` command installs the handler that sets it.
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
std::atomic<bool> g_stop_requested{false};
extern "C" void on_sigint(int) {
  g_stop_requested.store(true);
}

// While training: Ctrl-C sets the stop flag (checkpoint and return); before and after it, the
// handler that was there.
std::function<void(bool)> interrupt_switch() {
  auto previous = std::make_shared<void (*)(int)>(SIG_DFL);
  return [previous](bool on) {
    if (on) {
      g_stop_requested.store(false);
      *previous = std::signal(SIGINT, on_sigint);
    } else {
      std::signal(SIGINT, *previous);
    }
  };
}

// The LibTorch-free binary when placesim-torch is not beside it (main.cpp hands `train` over when
// it is): the command exists, and says what it needs.
void register_train_unavailable(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "train the RL placer (needs a build with LibTorch)");
  cmd->allow_extras();
  cmd->callback([] {
    throw sim::InputError("<placesim train>", "",
                          "a build with -DPLACESIM_WITH_TORCH=ON; this one has no LibTorch");
  });
}

// The options that name the problem: graph, cluster, cost model, budget and seed.
void add_problem_options(CLI::App* cmd, policy::TrainJob& a) {
  cmd->add_option("--graph", a.graph, "built-in workload or graph file")
      ->capture_default_str()
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", a.graph_opt, "workload options, k=v,k=v");
  cmd->add_option("--cluster", a.cluster, "built-in cluster or YAML file")
      ->capture_default_str()
      ->check(not_a_directory());
  cmd->add_option("--calibration", a.calibration, "calibration YAML for the kernel cost model")
      ->check(input_file());
  cmd->add_option("--minutes", a.minutes,
                  "wall-clock budget (default 8 when --iterations is not given)");
  cmd->add_option("--iterations", a.iterations, "total iterations, counting those before --resume");
  cmd->add_option("--samples", a.samples, "placements sampled per iteration (K)")
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "seed: weights and sampling; the same seed gives the same run")
      ->capture_default_str();
}

// The GNN policy's options (docs/rl.md, "The GNN policy").
void add_gnn_options(CLI::App* cmd, policy::TrainJob& a) {
  cmd->add_option(
         "--policy", a.policy,
         "seq2seq (Mirhoseini et al. 2017, one graph) or gnn (graph embeddings: any graph, "
         "any cluster; docs/rl.md)")
      ->capture_default_str();
  cmd->add_option("--update", a.update,
                  "gnn: ppo (clipped ratio, --ppo-epochs per batch) or reinforce")
      ->capture_default_str();
  cmd->add_option("--ppo-epochs", a.ppo_epochs, "gnn, ppo: gradient steps per batch of samples")
      ->capture_default_str();
  cmd->add_option("--rounds", a.rounds, "gnn: message-passing rounds over the group DAG")
      ->capture_default_str();
  cmd->add_flag("--no-hints", a.no_hints,
                "gnn: hide the baselines' placements (scotch, m-etf) from the policy (ablation)");
  cmd->add_option("--search", a.search,
                  "gnn: the test-time search that ends training (inside --minutes), "
                  "SAMPLES,EVALUATIONS,STARTS,OP_EVALUATIONS, default (32,512,3,8192) or off")
      ->capture_default_str();
  cmd->add_option("--clusters", a.clusters,
                  "gnn with --graphs: pre-train on every graph on each of these clusters, c1,c2");
}

// Outputs, parallelism and what is printed.
void add_output_options(CLI::App* cmd, policy::TrainJob& a) {
  cmd->add_option("-o,--output", a.output, "best placement JSON")->capture_default_str();
  cmd->add_option("--curve", a.curve,
                  "training-curve CSV (default: <output stem>.curve.csv; PNG beside it)");
  cmd->add_option("--threads", a.threads,
                  "simulation threads (oneTBB); 0 = all cores (shared by the ranks under mpirun)")
      ->capture_default_str();
  cmd->add_option("--shards", a.shards,
                  "cut the K samples into this many shards, each sampled and back-propagated as "
                  "one batch; under mpirun the rank count must divide it, and every such rank "
                  "count (1 included) gives the same result")
      ->capture_default_str();
  cmd->add_flag("--no-plot", a.no_plot, "skip the PNG plot");
  cmd->add_flag("--no-table", a.no_table, "skip the baselines table at the end");
  cmd->add_flag("--json", a.json, "print the result (and the baselines table's rows) as JSON");
  cmd->add_flag("--project-baselines", a.project_baselines,
                "no training: simulate every baseline's placement projected onto the policy's "
                "groups (what the grouping can express)");
}

// One `placesim train` run, on every rank.
void run_train_command(const policy::TrainJob& a, policy::TrainJobRunner run) {
  policy::MpiRuntime mpi;
  policy::MpiComm comm(mpi);
  refuse_mpirun_without_mpi(mpi);
  policy::TrainHooks hooks;
  hooks.stop = &g_stop_requested;
  hooks.catch_interrupt = interrupt_switch();
  hooks.note = note;
  try {
    const int status = run(a, comm, hooks);
    if (status != 0) throw CliExit{status};
  } catch (const sim::InputError&) {
    // Every rank meets the same bad input; one line from rank 0 is enough. The others wait a
    // moment before exiting: mpirun aborts the job when the first rank exits non-zero, which
    // could otherwise be before rank 0 has printed the line.
    if (comm.rank() != 0) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      throw CliExit{2};
    }
    throw;
  }
  // Ranks leave together (polling with sleeps), so no rank spins in MPI_Finalize while rank 0
  // writes its outputs and the baselines table.
  comm.barrier();
}

}  // namespace

void register_train(CLI::App& app) {
  const policy::TrainJobRunner run = policy::train_job_runner();
  if (run == nullptr) {
    register_train_unavailable(app);
    return;
  }
  auto a = std::make_shared<policy::TrainJob>();
  CLI::App* cmd = app.add_subcommand("train",
                                     "train the RL placer (Mirhoseini et al. 2017) on the "
                                     "simulator; no arguments = nmt on paper-4gpu, 8 minutes");
  add_problem_options(cmd, *a);
  auto* hidden_opt = cmd->add_option("--hidden", a->hidden,
                                     "LSTM width (seq2seq; default 256) or embedding width (gnn; "
                                     "default 64)");
  add_gnn_options(cmd, *a);
  cmd->add_option("--groups", a->groups, "maximum co-location groups the policy places")
      ->capture_default_str();
  cmd->add_option("--grouper", a->grouper,
                  "group_graph (models::group_graph), scotch (group_graph split along Scotch's "
                  "placement), colocation (contiguous co-location runs) or learned (Hierarchical "
                  "Planner grouper, trained jointly)")
      ->capture_default_str();
  auto* lr_opt = cmd->add_option("--lr", a->learning_rate,
                                 "Adam learning rate (seq2seq default 0.001, gnn 0.003)");
  cmd->add_option("--entropy", a->entropy, "entropy bonus weight")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "softmax temperature")->capture_default_str();
  cmd->add_option("--attention", a->attention,
                  "dot (Luong, default) or additive (Bahdanau, ~10x slower)")
      ->capture_default_str();
  cmd->add_option("--checkpoint", a->checkpoint_dir,
                  "directory for checkpoint.pt (atomic, every --checkpoint-every iterations)");
  cmd->add_option("--checkpoint-every", a->checkpoint_every, "iterations between checkpoints")
      ->capture_default_str();
  cmd->add_flag("--resume", a->resume, "continue from --checkpoint DIR exactly where it stopped");
  cmd->add_option(
      "--graphs", a->graphs,
      "train one policy on several graphs, g1,g2,... (needs --checkpoint; with --policy gnn "
      "g@k=v+k=v gives a graph's options; see docs/rl.md)");
  cmd->add_option(
      "--pretrained", a->pretrained,
      "start from this checkpoint's weights (e.g. from --graphs); --iterations 0 = no retraining");
  add_output_options(cmd, *a);
  cmd->callback([a, hidden_opt, lr_opt, run] {
    a->hidden_given = hidden_opt->count() > 0;
    a->lr_given = lr_opt->count() > 0;
    run_train_command(*a, run);
  });
}

}  // namespace placesim::tools

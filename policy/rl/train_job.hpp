// `placesim train` as a library call: the flags as a value, the run (one graph, several graphs,
// GNN pre-training or the grouping's projection of the baselines), its outputs (placement JSON,
// curve CSV and PNG, the baselines table or JSON on stdout). tools/cmd_train.cpp only parses the
// command line into a TrainJob, catches SIGINT and starts MPI. This header is LibTorch-free; the
// LibTorch-free binary reaches the run through train_job_runner(), which is nullptr there.
//
//   TrainJob job;  job.graph = "nmt";  job.iterations = 50;
//   std::atomic<bool> stop{false};
//   if (TrainJobRunner run = train_job_runner())
//     status = run(job, Comm{}, TrainHooks{.stop = &stop});   // 0, or 130 when interrupted
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "policy/comm/comm.hpp"
#include "policy/rl/rl.hpp"
#include "policy/rl/rl_gnn.hpp"

namespace placesim::policy {

/// The flags of `placesim train` (their meaning: `placesim train --help`, docs/rl.md).
struct TrainJob {
  std::string graph = "nmt", graph_opt, cluster = "paper-4gpu", calibration;
  std::optional<double> minutes;
  std::optional<int> iterations;
  int samples = 16, hidden = 256, groups = 64, checkpoint_every = 10, threads = 0;
  int shards = 1;
  std::uint64_t seed = 1;
  double learning_rate = RlOptions{}.learning_rate;
  double entropy = RlOptions{}.entropy_weight;
  double temperature = RlOptions{}.temperature;
  std::string attention = "dot";
  std::string grouper = "scotch";
  std::string checkpoint_dir, output = "rl_placement.json", curve;
  bool resume = false, no_plot = false, no_table = false, json = false;
  bool project_baselines = false;  // the grouping's ceiling instead of training (docs/rl.md)
  std::string graphs, pretrained;  // multi-graph training; weights to start from (docs/rl.md)
  // The policy network: seq2seq (the 2017 paper's) or gnn (graph embeddings, issue 21), and how
  // the GNN learns; --clusters makes --graphs a pre-training corpus of every graph on every one.
  std::string policy = "seq2seq", update = "ppo", clusters;
  int ppo_epochs = GnnOptions{}.ppo_epochs, rounds = GnnOptions{}.rounds;
  bool hidden_given = false, lr_given = false, no_hints = false;
  /// gnn, one graph: the test-time search that ends training, "SAMPLES,EVALUATIONS,STARTS,
  /// OP_EVALUATIONS" (GnnPlaceOptions), "default" or "off" (the best sample of training).
  std::string search = "default";
};

/// What the run needs from the command line around it.
struct TrainHooks {
  /// Set by the caller (on SIGINT) to checkpoint and stop; nullptr: never.
  const std::atomic<bool>* stop = nullptr;
  /// Called with true before training and false after it: the caller routes SIGINT to `stop`
  /// only while there is a training loop to stop.
  std::function<void(bool)> catch_interrupt;
  /// A note for the user (calibration notes); nullptr: dropped.
  std::function<void(const std::string&)> note;
};

/// Runs the job. Returns the exit status: 0, or 130 when interrupted (the checkpoint is written).
/// Throws sim::InputError for bad flags or inputs.
int run_train_job(const TrainJob& job, const Comm& comm, const TrainHooks& hooks);

using TrainJobRunner = int (*)(const TrainJob&, const Comm&, const TrainHooks&);
/// run_train_job, or nullptr in a binary linked without the RL library (the LibTorch-free
/// `placesim`; policy/place/learned.hpp says how).
TrainJobRunner train_job_runner();

}  // namespace placesim::policy

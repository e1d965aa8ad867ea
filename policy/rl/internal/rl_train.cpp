// The training loop against the simulator: grouping, batch oracle, budgets, checkpoints.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <torch/torch.h>

#include "policy/comm/comm.hpp"
#include "policy/comm/shards.hpp"
#include "policy/place/methods.hpp"
#include "policy/rl/internal/rl_common.hpp"
#include "policy/rl/rl.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

namespace {

sim::Placement expand(const models::Grouping& gr, const DevicesOfGroups& dev) {
  sim::Placement p;
  p.device_of.resize(gr.group_of_op.size());
  for (size_t op = 0; op < gr.group_of_op.size(); ++op)
    p.device_of[op] = dev[static_cast<size_t>(gr.group_of_op[op])];
  return p;
}

}  // namespace

void write_curve_csv(const std::vector<IterationStats>& history, const std::string& path,
                     const std::vector<std::string>& graphs) {
  std::ostringstream os;
  os << (graphs.empty() ? "iteration," : "iteration,graph,")
     << "best_step_s,mean_step_s,min_step_s,oom_fraction,mean_reward,baseline,entropy,"
        "sample_s,reward_s,grad_s\n";
  os << std::setprecision(9);
  for (const auto& s : history) {
    os << s.iteration << ',';
    if (!graphs.empty())
      os << graphs[static_cast<std::size_t>(std::max(0, s.iteration - 1)) % graphs.size()] << ',';
    os << s.best_step_s << ',' << s.mean_step_s << ',' << s.min_step_s << ',' << s.oom_fraction
       << ',' << s.mean_reward << ',' << s.baseline << ',' << s.entropy << ',' << s.sample_s << ','
       << s.reward_s << ',' << s.grad_s << '\n';
  }
  // "<path>.tmp.<pid>" then rename; a killed run's temp file is removed by the next write, and
  // the fixed-name temp file of earlier releases too.
  std::error_code ec;
  std::filesystem::remove(path + ".tmp", ec);
  sim::write_file_atomic(path, os.str());
}

models::Grouping policy_grouping(const sim::Graph& graph, const sim::Cluster& cluster,
                                 const TrainConfig& config) {
  switch (config.grouper) {
    case Grouper::Colocation:
      return colocation_grouping(graph, config.max_groups);
    case Grouper::Scotch: {
      MethodOptions mo;
      mo.costs = config.costs;
      sim::Placement cut;
      try {
        cut = make_placement("scotch", graph, cluster, mo);
      } catch (const sim::InputError&) {
        // Scotch does not apply here (e.g. nothing to partition over): the plain grouping.
        return models::group_graph(graph, config.max_groups);
      }
      // Splitting along the cut adds pieces (nmt on paper-4gpu: 64 groups become 150), and the
      // iteration's cost grows with the sequence: the largest base grouping whose refinement
      // stays within max_groups (fewer pieces is not always monotone in the base, so bisect and
      // keep the best seen).
      models::Grouping best =
          models::refine_grouping(models::group_graph(graph, 1), graph, cut.device_of);
      int lo = 2, hi = config.max_groups;
      while (lo <= hi) {
        const int mid = lo + (hi - lo) / 2;
        models::Grouping r =
            models::refine_grouping(models::group_graph(graph, mid), graph, cut.device_of);
        if (r.size() <= config.max_groups) {
          if (r.size() > best.size()) best = std::move(r);
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
      return best;
    }
    case Grouper::GroupGraph:
    case Grouper::Learned:
      break;
  }
  return models::group_graph(graph, config.max_groups);
}

namespace {

// The flags a run cannot start with.
void check_train_flags(const TrainConfig& config) {
  if (config.checkpoint_every < 1)
    throw sim::InputError("<flag --checkpoint-every>", "", "a positive number of iterations");
  if (config.iterations && *config.iterations < 0)
    throw sim::InputError("<flag --iterations>", "", "a non-negative number of iterations");
  if (config.minutes && !(*config.minutes >= 0))
    throw sim::InputError("<flag --minutes>", "", "a non-negative number of minutes");
}

// Creates --checkpoint's folder and, with --resume, loads the checkpoint found there. Returns the
// checkpoint file's path ("" without --checkpoint).
std::string open_checkpoint(const TrainConfig& config, const models::Grouping& grouping,
                            const sim::BatchOracle& oracle, Trainer& trainer, TrainResult& result) {
  std::string checkpoint;
  if (!config.checkpoint_dir.empty()) {
    make_checkpoint_dir(config.checkpoint_dir);
    checkpoint = (std::filesystem::path(config.checkpoint_dir) / "checkpoint.pt").string();
    if (config.resume && std::filesystem::exists(checkpoint)) {
      trainer.load(checkpoint);
      result.resumed = true;
      // The best placement a checkpoint carries is simulated again: its step time must be the one
      // recorded (a crafted or foreign best would otherwise be reported as found).
      if (!trainer.best().empty()) {
        const Evaluation e = evaluation_of(oracle.evaluate(expand(grouping, trainer.best())));
        if (e.oom || e.step_time_s != trainer.best_step_s())
          throw sim::InputError(checkpoint, "best_step_s",
                                "the simulated step time of the checkpoint's best placement (" +
                                    std::to_string(e.step_time_s) + " s" +
                                    (e.oom ? ", out of memory" : "") + "), got " +
                                    std::to_string(trainer.best_step_s()) + " s");
      }
    }
  }
  return checkpoint;
}

// What the progress line shows after an iteration: `done` iterations this run, `iteration` in
// all, `total` (-1: until the budget ends), `evals` simulations so far.
Progress progress_of(int done, int iteration, int total, double elapsed_s, double evals,
                     std::optional<double> budget_s) {
  Progress pr;
  pr.iteration = iteration;
  if (total >= 0) pr.total_iterations = total;
  pr.elapsed_s = elapsed_s;
  pr.evals_per_s = pr.elapsed_s > 0 ? evals / pr.elapsed_s : 0.0;
  std::optional<double> left;
  if (total >= 0 && done > 0) left = pr.elapsed_s / done * std::max(0, total - iteration);
  if (budget_s) left = std::min(left.value_or(*budget_s), std::max(0.0, *budget_s - pr.elapsed_s));
  pr.time_left_s = left;
  return pr;
}

}  // namespace

TrainResult train_placement(const sim::Graph& graph, const sim::Cluster& cluster,
                            const TrainConfig& config) {
  const auto t_start = std::chrono::steady_clock::now();
  pin_torch_to_one_thread();
  check_train_flags(config);

  if (config.grouper == Grouper::Learned) return train_hierarchical(graph, cluster, config);
  // Before the grouping, which runs Scotch: a bad --shards is known without it.
  (void)ShardPlan(config.rl.samples, config.rl.shards, config.comm ? config.comm->rank() : 0,
                  config.comm ? config.comm->size() : 1);
  const models::Grouping grouping = policy_grouping(graph, cluster, config);
  // A pretrained policy reads features in its own op-type vocabulary.
  const std::vector<std::string> vocab =
      config.pretrained.empty() ? std::vector<std::string>{} : checkpoint_vocab(config.pretrained);
  PolicyProblem problem =
      vocab.empty() ? make_problem(grouping, cluster) : make_problem(grouping, cluster, vocab);
  sim::SimOptions sim_options;
  sim_options.record_critical_path = false;
  const sim::BatchOracle oracle(cluster, graph, sim_options, config.costs);

  TrainResult result;
  result.groups = grouping.size();

  // The OOM penalty scale: the single-GPU step time (its compute time even if it does not fit).
  double reference_s = 1.0;
  if (auto single = sim::builtin_placement(cluster.gpus().empty() ? "single-cpu" : "single-gpu",
                                           graph, cluster)) {
    const sim::Outcome o = oracle.evaluate(*single);
    ++result.evaluations;
    if (o.step_time.seconds() > 0) reference_s = o.step_time.seconds();
  }

  std::int64_t evaluations = 0;
  RewardFn reward = [&](const std::vector<DevicesOfGroups>& ps) {
    std::vector<sim::Placement> placements;
    placements.reserve(ps.size());
    for (const auto& p : ps) placements.push_back(expand(grouping, p));
    const std::vector<sim::Outcome> outcomes = oracle.evaluate(placements, config.sim_threads);
    evaluations += static_cast<std::int64_t>(outcomes.size());
    std::vector<Evaluation> out;
    out.reserve(outcomes.size());
    for (const auto& o : outcomes) out.push_back(evaluation_of(o));
    return out;
  };
  Trainer trainer(std::move(problem), config.rl, reward, reference_s, config.comm);
  if (!config.pretrained.empty()) trainer.load_weights(config.pretrained);
  // Under MPI every rank trains an identical copy; rank 0 alone writes and reports.
  const bool root = config.comm == nullptr || config.comm->rank() == 0;
  const int ranks = config.comm == nullptr ? 1 : config.comm->size();

  const std::string checkpoint = open_checkpoint(config, grouping, oracle, trainer, result);
  // The best placement so far, as a placement file beside the checkpoint: a run killed with
  // SIGKILL leaves it on disk (the checkpoint itself needs LibTorch to read).
  auto save_checkpoint = [&] {
    trainer.save(checkpoint);
    if (trainer.best().empty()) return;
    sim::PlacementMetadata md;
    md.method = "rl";
    md.graph = graph.name;
    md.cluster = cluster.name;
    md.predicted_step_time_s = trainer.best_step_s();
    md.seed = config.rl.seed;
    md.extra["iterations"] = std::to_string(trainer.iteration());
    md.extra["checkpoint"] = "best so far";
    sim::write_placement_json(
        sim::to_placement_file(expand(grouping, trainer.best()), graph, cluster, md),
        (std::filesystem::path(config.checkpoint_dir) / "best.json").string());
  };

  const auto t_train = std::chrono::steady_clock::now();
  const int first_iteration = trainer.iteration();
  const bool has_budget = config.minutes.has_value();
  const double budget_s = has_budget ? *config.minutes * 60.0 : 0.0;
  const std::optional<double> budget = has_budget ? std::optional<double>(budget_s) : std::nullopt;
  const int total = config.iterations ? *config.iterations : (has_budget ? -1 : 100);
  while (total < 0 || trainer.iteration() < total) {
    // Rank 0's clock and Ctrl-C decide for all ranks, which would otherwise part ways and wait
    // for each other forever in the next step.
    if (rank0_decides(config.comm, config.stop != nullptr && config.stop->load())) {
      result.interrupted = true;
      break;
    }
    if (has_budget && rank0_decides(config.comm, seconds_since(t_train) >= budget_s)) break;
    const IterationStats st = trainer.step();
    if (root && !checkpoint.empty() && trainer.iteration() % config.checkpoint_every == 0)
      save_checkpoint();
    if (root && config.on_iteration) {
      const double elapsed_s = seconds_since(t_train);
      // All ranks' simulations: this process ran only its shards' share.
      const double evals = ranks == 1 ? static_cast<double>(evaluations)
                                      : static_cast<double>(trainer.iteration() - first_iteration) *
                                            config.rl.samples;
      config.on_iteration(st, progress_of(trainer.iteration() - first_iteration,
                                          trainer.iteration(), total, elapsed_s, evals, budget));
    }
  }
  if (ranks == 1 && config.stop != nullptr && config.stop->load()) result.interrupted = true;
  // Saved before the greedy decode below is looked at, so that a resumed run continues from
  // exactly the state an uninterrupted one had at this iteration.
  if (root && !checkpoint.empty()) save_checkpoint();

  // The greedy decode is a candidate too; evaluated here, not offered to the trainer.
  const DevicesOfGroups greedy = trainer.greedy();
  const sim::Outcome greedy_outcome = oracle.evaluate(expand(grouping, greedy));
  ++evaluations;
  const Evaluation ge = evaluation_of(greedy_outcome);
  pick_final(trainer.best(), trainer.best_step_s(), greedy, ge, result);
  result.best = expand(grouping, result.best_groups);
  result.history = trainer.history();
  result.evaluations += evaluations;
  result.wall_s = seconds_since(t_start);
  return result;
}

}  // namespace placesim::policy

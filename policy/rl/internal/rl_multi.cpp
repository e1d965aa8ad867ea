// One policy trained on several graphs (the generalisation Placeto showed with graph embeddings,
// here with the seq2seq policy): round-robin REINFORCE over the graphs with one network and one
// Adam state; features from a shared op-type vocabulary so every graph has the same width.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <torch/torch.h>

#include "policy/rl/internal/rl_common.hpp"
#include "policy/rl/rl.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

namespace {

// What the trainer needs to place one graph.
struct GraphTask {
  models::Grouping grouping;
  std::unique_ptr<sim::BatchOracle> oracle;
  double reference_s = 1.0;
};

}  // namespace

MultiTrainResult train_multi(const std::vector<sim::Graph>& graphs, const sim::Cluster& cluster,
                             const TrainConfig& config) {
  const auto t_start = std::chrono::steady_clock::now();
  pin_torch_to_one_thread();
  if (graphs.size() < 2)
    throw sim::InputError(
        "<flag --graphs>", "",
        "at least two graphs to train one policy on, got " + std::to_string(graphs.size()));
  if (config.grouper == Grouper::Learned)
    throw sim::InputError("<flag --grouper>", "",
                          "group_graph or colocation with --graphs, got learned");
  if (config.resume)
    throw sim::InputError("<flag --resume>", "", "a single-graph run: --graphs cannot resume");
  if (!config.iterations && !config.minutes)
    throw sim::InputError("<flag --iterations>", "", "--iterations or --minutes for --graphs");

  std::vector<GraphTask> tasks(graphs.size());
  std::set<std::string> types;
  sim::SimOptions sim_options;
  sim_options.record_critical_path = false;
  for (size_t i = 0; i < graphs.size(); ++i) {
    GraphTask& t = tasks[i];
    t.grouping = policy_grouping(graphs[i], cluster, config);
    types.insert(t.grouping.type_vocab.begin(), t.grouping.type_vocab.end());
    t.oracle = std::make_unique<sim::BatchOracle>(cluster, graphs[i], sim_options, config.costs);
    if (auto single = sim::builtin_placement(cluster.gpus().empty() ? "single-cpu" : "single-gpu",
                                             graphs[i], cluster)) {
      const double s = t.oracle->evaluate(*single).step_time.seconds();
      if (s > 0) t.reference_s = s;
    }
  }
  const std::vector<std::string> vocab(types.begin(), types.end());

  auto reward_of = [&](size_t i) -> RewardFn {
    return [&tasks, i, &config](const std::vector<DevicesOfGroups>& ps) {
      std::vector<sim::Placement> placements;
      for (const auto& p : ps) placements.push_back(tasks[i].grouping.expand(p));
      std::vector<Evaluation> out;
      for (const auto& o : tasks[i].oracle->evaluate(placements, config.sim_threads))
        out.push_back(evaluation_of(o));
      return out;
    };
  };

  MultiTrainResult result;
  for (const auto& g : graphs) result.graphs.push_back(g.name);
  result.best_step_s.assign(graphs.size(), 0.0);
  Trainer trainer(make_problem(tasks[0].grouping, cluster, vocab), config.rl, reward_of(0),
                  tasks[0].reference_s);
  std::string checkpoint;
  if (!config.checkpoint_dir.empty()) {
    make_checkpoint_dir(config.checkpoint_dir);
    checkpoint = (std::filesystem::path(config.checkpoint_dir) / "checkpoint.pt").string();
  }

  const auto t_train = std::chrono::steady_clock::now();
  const int total = config.iterations.value_or(-1);
  const double budget_s = config.minutes ? *config.minutes * 60.0 : -1.0;
  while (total < 0 || trainer.iteration() < total) {
    if (config.stop != nullptr && config.stop->load()) break;
    if (budget_s >= 0 && seconds_since(t_train) >= budget_s) break;
    const auto i = static_cast<size_t>(trainer.iteration()) % graphs.size();
    if (trainer.iteration() > 0)
      trainer.set_problem(make_problem(tasks[i].grouping, cluster, vocab), reward_of(i),
                          tasks[i].reference_s);
    const IterationStats st = trainer.step();
    if (st.min_step_s > 0 &&
        (result.best_step_s[i] == 0.0 || st.min_step_s < result.best_step_s[i]))
      result.best_step_s[i] = st.min_step_s;
    if (!checkpoint.empty() && trainer.iteration() % config.checkpoint_every == 0)
      trainer.save(checkpoint);
    if (config.on_iteration) {
      Progress pr;
      pr.iteration = trainer.iteration();
      if (total >= 0) pr.total_iterations = total;
      pr.elapsed_s = seconds_since(t_train);
      if (budget_s >= 0) pr.time_left_s = std::max(0.0, budget_s - pr.elapsed_s);
      config.on_iteration(st, pr);
    }
  }
  if (!checkpoint.empty()) trainer.save(checkpoint);
  result.history = trainer.history();
  result.wall_s = seconds_since(t_start);
  return result;
}

}  // namespace placesim::policy

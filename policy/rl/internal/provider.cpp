// The RL library's entries for the LibTorch-free code (policy/place/learned.hpp,
// policy/rl/train_job.hpp). Compiled into each binary that links placesim_policy with LibTorch,
// as none.cpp is into the others: the one difference between `placesim-torch` and `placesim`.
#include "policy/place/learned.hpp"
#include "policy/rl/rl.hpp"
#include "policy/rl/rl_gnn.hpp"
#include "policy/rl/train_job.hpp"

namespace placesim::policy {
namespace {

sim::Placement place_zero_shot(const std::string& policy_file, const sim::Graph& graph,
                               const sim::Cluster& cluster, const sim::KernelCostModel& costs) {
  return place_with_gnn(policy_file.empty() ? default_gnn_policy() : policy_file, graph, cluster,
                        costs);
}

// A sweep point's short training run: one oracle thread, since the point itself is already one
// of many running in parallel.
sim::Placement train_short(const sim::Graph& graph, const sim::Cluster& cluster, int iterations,
                           std::uint64_t seed) {
  TrainConfig cfg;
  cfg.iterations = iterations;
  cfg.rl.seed = seed;
  cfg.sim_threads = 1;
  return train_placement(graph, cluster, cfg).best;
}

constexpr LearnedMethods kLearned{place_zero_shot, train_short};

}  // namespace

const LearnedMethods* learned_methods() {
  return &kLearned;
}

TrainJobRunner train_job_runner() {
  return run_train_job;
}

}  // namespace placesim::policy

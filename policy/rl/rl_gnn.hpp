// A placement policy that transfers across graphs and clusters (issue 21; Placeto, NeurIPS 2019,
// and GDP, 2019): message passing over the group DAG embeds every group from features that mean
// the same on any graph (op-type classes, log FLOPs / bytes / memory, topological position), the
// cluster's devices are embedded from their own features (peak rate, memory, bandwidth to the
// others, index), and each (group, device) pair is scored, so one network places any graph on any
// cluster of up to kGnnMaxDevices devices. Trained with REINFORCE or PPO (clipped ratio, several
// epochs per batch of samples) against the simulator. LibTorch stays in policy/rl_gnn.cpp.
//
//   GnnOptions o;                                             // PPO, hidden 64, 3 rounds
//   TrainResult r = train_gnn(graph, cluster, TrainConfig{.iterations = 100}, o);
//   pretrain_gnn({{&nmt, &paper4}, {&rnnlm, &dgx1}}, cfg, o, "policy.ckpt");  // a corpus
//   sim::Placement p = place_with_gnn(default_gnn_policy(), graph, cluster, {});  // zero-shot
//   GnnPlacement s = place_with_gnn_search(path, graph, cluster, {}, {.samples = 0});  // stages
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/rl/rl.hpp"

namespace placesim::policy {

/// The device count the policy's device features are scaled for (positional index features).
inline constexpr int kGnnMaxDevices = 64;

/// How the GNN policy learns from a batch of K sampled placements.
enum class PolicyUpdate {
  Reinforce,  ///< one gradient step on -A * log p (the seq2seq agent's rule)
  Ppo,        ///< `ppo_epochs` steps on the clipped surrogate, per placement decision
};

struct GnnOptions {
  int hidden = 64;  ///< group and device embedding width
  int rounds = 3;   ///< message-passing rounds over predecessors and successors
  int samples = 16;
  std::uint64_t seed = 1;
  double learning_rate = 3e-3;
  double entropy_weight = 0.01;  ///< per decision, summed over groups (as the seq2seq agent)
  double grad_clip = 1.0;
  double baseline_decay = 0.9;
  double oom_penalty = 3.0;
  double logit_clip = 5.0;  ///< logits = C * tanh(score / C)
  PolicyUpdate update = PolicyUpdate::Ppo;
  int ppo_epochs = 4;
  double ppo_clip = 0.2;
  /// Show the policy the baselines' placements (GnnProblem::hints); false zeroes them (ablation:
  /// `train --no-hints`).
  bool hints = true;
};

/// The problem as the GNN sees it: graph-independent group features, the group DAG, and device
/// features read from the cluster.
struct GnnProblem {
  std::vector<std::vector<float>> groups;  ///< [group][kGnnGroupFeatures()]
  std::vector<std::vector<std::int32_t>> pred, succ;
  std::vector<std::vector<float>> devices;  ///< [device][kGnnDeviceFeatures()]
  std::vector<std::vector<bool>> allowed;   ///< [group][device]; empty = everywhere
  /// [hint][group]: the device a baseline placement gives the group (-1: none), one entry per
  /// kGnnHints; an input to the policy, which learns when to follow which (empty = no hints).
  std::vector<DevicesOfGroups> hints;
  [[nodiscard]] int num_groups() const { return static_cast<int>(groups.size()); }
  [[nodiscard]] int num_devices() const { return static_cast<int>(devices.size()); }
};
/// Baseline placements offered to the policy as (group, device) features: scotch and m-etf,
/// projected onto the groups (models::project_placement).
inline constexpr int kGnnHints = 2;
int gnn_group_features();
int gnn_device_features();

/// Features of `grouping`'s groups and of `cluster`'s devices. Throws sim::InputError when the
/// cluster has more than kGnnMaxDevices devices or no device an op's kind needs.
GnnProblem make_gnn_problem(const models::Grouping& grouping, const sim::Cluster& cluster);
/// The same with the baseline hints of `graph` (each baseline that does not apply is left out).
GnnProblem make_gnn_problem(const models::Grouping& grouping, const sim::Graph& graph,
                            const sim::Cluster& cluster, const sim::KernelCostModel& costs);

class GnnTrainer {
 public:
  GnnTrainer(GnnProblem problem, GnnOptions options, RewardFn reward, double oom_reference_s);
  ~GnnTrainer();
  GnnTrainer(const GnnTrainer&) = delete;
  GnnTrainer& operator=(const GnnTrainer&) = delete;

  IterationStats step();  ///< samples K placements, scores them, updates; deterministic
  [[nodiscard]] DevicesOfGroups greedy() const;  ///< most likely device per group
  /// K placements drawn from the policy as step() draws them (the trainer's seeded RNG), without
  /// scoring or updating: test-time search (place_with_gnn_search).
  std::vector<DevicesOfGroups> sample(int k);
  /// The same from an engine seeded with `seed`, leaving the trainer's RNG as it was.
  [[nodiscard]] std::vector<DevicesOfGroups> sample(int k, std::uint64_t seed) const;
  [[nodiscard]] const DevicesOfGroups& best() const;
  [[nodiscard]] double best_step_s() const;
  [[nodiscard]] int iteration() const;
  [[nodiscard]] const std::vector<IterationStats>& history() const;
  /// Another graph or cluster for the same network and Adam state (pre-training on a corpus);
  /// the baseline restarts and the best placement is forgotten.
  void set_problem(GnnProblem problem, RewardFn reward, double oom_reference_s);

  /// The network's weights with a header (policy/checkpoint_file.hpp) and `how_made` (a line
  /// saying how the policy was trained), written to a temporary name and renamed.
  void save_policy(const std::string& path, const std::string& how_made) const;
  /// Weights from a save_policy file. Throws sim::InputError naming `path` when it is missing,
  /// damaged, not a GNN policy, or of another hidden size or round count.
  void load_policy(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// GnnOptions a policy file was saved with (hidden, rounds) and its how-made line; throws
/// sim::InputError as GnnTrainer::load_policy.
std::pair<GnnOptions, std::string> read_gnn_policy_header(const std::string& path);

/// Test-time search of a zero-shot placement (no training): the simulator scores the policy's
/// greedy decode, its hints (Scotch's and m-ETF's placements projected onto the groups) and
/// `samples` placements drawn from the policy; the best one is then improved by moving one group
/// at a time to the device that shortens the step most, until no move helps or
/// `search_evaluations` simulations are spent. Counts, not seconds, so the result is the same on
/// any machine and thread count. samples = search_evaluations = op_evaluations = 0: the plain
/// greedy decode against the hints.
struct GnnPlaceOptions {
  int samples = 32;
  int search_evaluations = 512;  ///< per start
  int starts = 3;                ///< climbs from this many best distinct candidates
  /// Then op-level moves (the ops of a co-location group together), first onto a producer's or
  /// consumer's device, then onto any: finer than the groups, which bound the group-level search.
  int op_evaluations = 1024;
  std::uint64_t seed = 1;
  int sim_threads = 0;  ///< oneTBB threads for the simulations; <= 0 = default
  /// A wall-clock end: no simulation batch starts after it (train --minutes sets it on the final
  /// search so a run ends inside its budget whatever the load; unset, the counts alone bound the
  /// search and its result is the same on any machine).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};
/// The search `train --policy gnn` ends with by default: place's with 8 times the op-level moves
/// (training has minutes; on the held-out mobilenet_v2 and inception_v3 x a100pcie4 the op moves
/// still improved after 1,024; docs/rl.md).
inline GnnPlaceOptions gnn_train_search_defaults() {
  GnnPlaceOptions o;
  o.op_evaluations = 8192;
  return o;
}
/// `placesim train --policy gnn`: train_placement with the GNN (grouping, oracle, budgets as
/// there; config.pretrained = a GNN policy file to fine-tune). Writes
/// config.checkpoint_dir/gnn.ckpt at the end when set (no --resume). With `search`, training
/// ends with the test-time search of place_with_gnn_search from the trained policy, seeded with
/// the best placement training found (so the result is never worse than it); a --minutes budget
/// stops training early enough to leave the search its time (an estimate from the simulations'
/// measured cost; the search itself is bounded by counts, so it is deterministic).
TrainResult train_gnn(const sim::Graph& graph, const sim::Cluster& cluster,
                      const TrainConfig& config, const GnnOptions& options,
                      const std::optional<GnnPlaceOptions>& search = std::nullopt);
/// The most simulations the search runs with `o` (besides the greedy decode and hint and seed
/// candidates, at most `extra_candidates`).
std::int64_t gnn_search_max_evaluations(const GnnPlaceOptions& o, int extra_candidates);
/// GnnPlaceOptions from "SAMPLES,EVALUATIONS,STARTS,OP_EVALUATIONS" (`train --search`,
/// $PLACESIM_RL_SEARCH); throws sim::InputError naming `where` when it is malformed.
GnnPlaceOptions parse_gnn_search(const std::string& text, const std::string& where);

/// One (graph, cluster) pair of a pre-training corpus, with its name for the curve.
struct CorpusItem {
  const sim::Graph* graph = nullptr;
  const sim::Cluster* cluster = nullptr;
  std::string name;
};
/// Pre-trains one GNN policy round-robin over the corpus (one iteration per item in turn) and
/// writes it to `output` with save_policy. Returns the history (iteration i trained item
/// (i - 1) % n) and the best sample per item.
struct PretrainResult {
  std::vector<std::string> items;
  std::vector<double> best_step_s;
  std::vector<IterationStats> history;
  double wall_s = 0.0;
};
PretrainResult pretrain_gnn(const std::vector<CorpusItem>& corpus, const TrainConfig& config,
                            const GnnOptions& options, const std::string& output,
                            const std::string& how_made);

/// What the search found: the placement and the step time of each stage's best (0 = none ran).
struct GnnPlacement {
  sim::Placement placement;
  DevicesOfGroups groups;  ///< the group-level placement before the op-level moves
  double greedy_s = 0.0;   ///< the policy's greedy decode
  double hint_s = 0.0;     ///< the best hint
  double sampled_s = 0.0;  ///< the best of the samples
  double final_s = 0.0;    ///< after the group and op moves
  std::string start;       ///< "greedy", "hint scotch", "hint m-etf" or "sample": where it began
  std::int64_t evaluations = 0;  ///< simulations run
};
GnnPlacement place_with_gnn_search(const std::string& path, const sim::Graph& graph,
                                   const sim::Cluster& cluster, const sim::KernelCostModel& costs,
                                   const GnnPlaceOptions& options);
/// GnnPlaceOptions with $PLACESIM_RL_SEARCH = "SAMPLES,EVALUATIONS,STARTS,OP_EVALUATIONS" when set
/// (e.g. "0,0,1,0": the plain greedy decode against the hints); throws sim::InputError when it is
/// malformed.
GnnPlaceOptions gnn_place_options_from_env();
/// Zero-shot placement, `placesim place --method rl`: place_with_gnn_search with those options,
/// over the grouping TrainConfig's defaults give. Seconds.
sim::Placement place_with_gnn(const std::string& path, const sim::Graph& graph,
                              const sim::Cluster& cluster, const sim::KernelCostModel& costs);

/// The project's pre-trained policy: $PLACESIM_POLICY, else scenarios/policies/gnn.ckpt of the
/// checkout this binary was built from (or beside it).
std::string default_gnn_policy();

}  // namespace placesim::policy

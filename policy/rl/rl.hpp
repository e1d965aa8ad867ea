// The reinforcement-learning placer of Mirhoseini et al. (ICML 2017): a seq2seq policy (group
// embeddings -> LSTM encoder -> LSTM decoder with attention, one device per group) trained with
// REINFORCE against the simulator. LibTorch stays inside policy/rl_*.cpp; this header is free of
// it, so the CLI and tests compile fast. Only available when built with PLACESIM_WITH_TORCH.
//
//   TrainConfig cfg;                                  // defaults: hidden 256, 16 samples
//   cfg.iterations = 200;
//   cfg.checkpoint_dir = "ckpt";                      // model + Adam + RNG + baseline + best
//   TrainResult r = train_placement(graph, cluster, cfg);
//   sim::write_placement_json(sim::to_placement_file(r.best, graph, cluster, meta), "p.json");
//
// The trainer alone works against any reward (tests use a synthetic one):
//
//   Trainer t(problem, RlOptions{.hidden = 32}, [](const auto& placements) { ... }, 1.0);
//   for (int i = 0; i < 50; ++i) t.step();
//   std::vector<sim::DeviceId> g = t.greedy();
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/grouping.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::policy {

class Comm;

/// How the decoder scores encoder states. Dot (Luong) is the default: on this machine it is about
/// ten times cheaper than Additive (Bahdanau) for 256 groups and 16 samples (docs/rl.md).
enum class AttentionScore { Dot, Additive };

struct RlOptions {
  int hidden = 256;          ///< LSTM and embedding width (the paper's 256)
  int samples = 16;          ///< K placements sampled per iteration
  std::uint64_t seed = 1;    ///< torch::manual_seed for the weights; our own RNG samples
  double temperature = 1.0;  ///< softmax temperature when sampling and in the gradient
  double logit_clip = 5.0;   ///< logits = C * tanh(u): keeps exploration alive
  /// Adam. 1e-3, not 3e-3: at 3e-3 a few iterations push the logits into the tanh clip (docs/rl.md,
  /// "Collapse"), where no gradient reaches them any more.
  double learning_rate = 1e-3;
  double grad_clip = 1.0;       ///< global L2 norm
  double baseline_decay = 0.9;  ///< EMA of the mean reward per iteration
  /// Bonus on the policy's entropy, per placement decision (summed over groups like the
  /// log-probabilities it competes with). 0.01 keeps the policy from collapsing onto one
  /// placement (docs/rl.md, "Collapse").
  double entropy_weight = 0.01;
  /// Divide the advantages (reward - EMA baseline) by the standard deviation of this iteration's
  /// rewards: the gradient's size then does not depend on the workload's step-time scale.
  bool normalize_advantage = true;
  /// An OOM placement is scored as if it took oom_penalty × reference × (1 + overflow) seconds,
  /// reference being the trainer's `oom_reference_s` and overflow the fraction by which the worst
  /// device exceeds its memory: worse than any sane placement, and less bad the closer it fits.
  double oom_penalty = 3.0;
  AttentionScore attention = AttentionScore::Dot;
  /// The K samples are cut into this many shards; every sum over samples (the gradient, the
  /// entropy) is a sum over shards in shard order, so the run is the same bits on any number of
  /// MPI ranks that divides it (policy/comm/shards.hpp). 1 = one batch of K.
  int shards = 1;
};

/// The placement problem as the policy sees it: groups in sequence order.
struct PolicyProblem {
  std::vector<std::vector<float>> features;  ///< [group][feature], same width for every group
  int num_devices = 0;
  /// [group][device]: may the group go there (device-kind constraints). Empty = everywhere.
  std::vector<std::vector<bool>> allowed;
  [[nodiscard]] int num_groups() const { return static_cast<int>(features.size()); }
  /// The op types of the feature columns when they are a fixed vocabulary shared by several
  /// graphs (make_problem's third argument); empty = the graph's own types. Saved in checkpoints.
  std::vector<std::string> vocab;
};

/// Which devices each item (a group, an op) may use: those of its device kind `kinds[i]`, or all
/// when it has none; empty when no item has a kind. Throws sim::InputError naming `names[i]` when
/// the cluster has no device of an item's kind.
std::vector<std::vector<bool>> allowed_devices(
    const sim::Cluster& cluster, const std::vector<std::optional<sim::DeviceKind>>& kinds,
    const std::vector<std::string>& names);

/// Features per group (op-type counts, log output bytes / FLOPs / parameters, in/out degree and
/// where its neighbours sit in the sequence) and the device-kind mask.
PolicyProblem make_problem(const models::Grouping& grouping, const sim::Cluster& cluster);
/// The same with op-type columns from a fixed `vocab` (sorted) plus one column for every type not
/// in it, so that graphs with different op types give features of one width (multi-graph
/// training, policy/rl_multi.cpp).
PolicyProblem make_problem(const models::Grouping& grouping, const sim::Cluster& cluster,
                           const std::vector<std::string>& vocab);

/// A grouping from the graph's own co-location groups (an op with its gradient and update),
/// taken in topological order and cut into at most `max_groups` contiguous runs of about equal op
/// count. The simpler alternative to models::group_graph (TrainConfig::grouper).
models::Grouping colocation_grouping(const sim::Graph& g, int max_groups);

/// What the reward oracle says about one placement.
struct Evaluation {
  double step_time_s = 0.0;
  bool oom = false;       ///< includes "unreachable": a placement that cannot run
  double overflow = 0.0;  ///< worst device's (peak - capacity) / capacity when oom
};

using DevicesOfGroups = std::vector<sim::DeviceId>;
using RewardFn = std::function<std::vector<Evaluation>(const std::vector<DevicesOfGroups>&)>;

/// One REINFORCE iteration, as written to the training-curve CSV.
struct IterationStats {
  int iteration = 0;         ///< 1-based
  double best_step_s = 0.0;  ///< best non-OOM step time so far (0 = none yet)
  double mean_step_s = 0.0;  ///< mean over this iteration's non-OOM samples (0 = none)
  double min_step_s = 0.0;   ///< best of this iteration (0 = none)
  double oom_fraction = 0.0;
  double mean_reward = 0.0;
  double baseline = 0.0;                                ///< after this iteration's update
  double entropy = 0.0;                                 ///< mean per-group policy entropy (nats)
  double sample_s = 0.0, reward_s = 0.0, grad_s = 0.0;  ///< wall time split (not deterministic)
};

class Trainer {
 public:
  /// `oom_reference_s` scales the OOM penalty (train_placement uses the single-GPU step time).
  /// With `comm` (several MPI ranks), this rank samples and scores only its shards' placements
  /// (`reward` sees only those); all ranks keep identical weights. `comm` must outlive the trainer.
  Trainer(PolicyProblem problem, RlOptions options, RewardFn reward, double oom_reference_s,
          const Comm* comm = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Samples K placements, scores them, takes one Adam step. Deterministic for a given seed.
  IterationStats step();
  /// Most likely device per group (ties to the lowest index). Does not touch the RNG.
  [[nodiscard]] DevicesOfGroups greedy() const;
  /// Samples `k` placements with the trainer's RNG (advances it).
  std::vector<DevicesOfGroups> sample(int k);

  [[nodiscard]] const DevicesOfGroups& best() const;  ///< empty until a sample fit in memory
  [[nodiscard]] double best_step_s() const;           ///< 0 until then
  [[nodiscard]] int iteration() const;
  [[nodiscard]] const std::vector<IterationStats>& history() const;
  [[nodiscard]] const RlOptions& options() const;

  /// Model, Adam state, RNG state, baseline, best so far and the history; written to a temporary
  /// name and renamed. `load` throws sim::InputError naming `path` for a missing, unreadable or
  /// mismatched checkpoint (other problem size, device count or hidden size).
  void save(const std::string& path) const;
  void load(const std::string& path);
  /// Loads only the network's weights from a checkpoint (any number of groups: the policy reads a
  /// sequence): a pretrained policy for another graph. Throws sim::InputError naming `path` when
  /// the device count, hidden size or feature width differ.
  void load_weights(const std::string& path);
  /// Places another problem with the same network and Adam state (one policy for several graphs).
  /// The baseline restarts from the next iteration's mean; the best placement is forgotten.
  void set_problem(PolicyProblem problem, RewardFn reward, double oom_reference_s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Progress reported after every iteration.
struct Progress {
  int iteration = 0;
  std::optional<int> total_iterations;
  double elapsed_s = 0.0;  ///< this process's training wall time
  std::optional<double> time_left_s;
  double evals_per_s = 0.0;
};

/// Which grouping the policy places: models::group_graph (the paper's co-location grouping with
/// acyclic merges and features), colocation_grouping (contiguous runs of co-location groups),
/// the learned one (HierarchicalTrainer), or Scotch: models::group_graph split along the Scotch
/// baseline's min-cut placement (models::refine_grouping), so that the groups respect the cuts
/// a partitioner finds (docs/rl.md, "The grouping's ceiling").
enum class Grouper { GroupGraph, Colocation, Learned, Scotch };

struct TrainConfig {
  RlOptions rl;
  /// Scotch: on nmt × paper-4gpu the 64 plain group_graph groups cannot express the Scotch
  /// baseline's placement (projected, it runs out of memory), the refined ones can (docs/rl.md).
  Grouper grouper = Grouper::Scotch;
  int max_groups = 64;            ///< groups the policy places, at most (docs/rl.md: why 64)
  std::optional<int> iterations;  ///< total, counting iterations before a resume
  std::optional<double> minutes;  ///< wall budget of this process; whichever ends first
  std::string checkpoint_dir;     ///< empty = no checkpoints
  bool resume = false;            ///< load checkpoint_dir/checkpoint.pt if it exists
  int checkpoint_every = 10;      ///< iterations
  int sim_threads = 0;            ///< oneTBB threads for the oracle; <= 0 = default
  sim::KernelCostModel costs;     ///< kernel times the oracle uses (calibration)
  const std::atomic<bool>* stop = nullptr;  ///< set (e.g. by SIGINT) to checkpoint and return
  /// A checkpoint whose weights start the policy (e.g. one trained on other graphs by
  /// train_multi); its op-type vocabulary is used for the features. Empty = random weights.
  std::string pretrained;
  std::function<void(const IterationStats&, const Progress&)> on_iteration;
  /// Several MPI ranks: data-parallel over rl.shards; only rank 0 writes checkpoints and gets
  /// on_iteration. nullptr = one process.
  const Comm* comm = nullptr;
};

struct TrainResult {
  sim::Placement best;  ///< per op
  DevicesOfGroups best_groups;
  double best_step_s = 0.0;
  bool best_oom = false;  ///< nothing fitted: `best` is the greedy decode
  int groups = 0;
  std::vector<IterationStats> history;  ///< all iterations, including those before a resume
  bool interrupted = false;             ///< stopped by `stop`
  bool resumed = false;
  double wall_s = 0.0;
  std::int64_t evaluations = 0;  ///< simulations run by this process
  /// `train --policy gnn` with its final test-time search: the best step time training found
  /// (before the search), the search's simulations and wall time; 0 = no search ran.
  double trained_step_s = 0.0;
  std::int64_t search_evaluations = 0;
  double search_wall_s = 0.0;
};

/// The grouping train_placement gives the policy for `config.grouper` (not Learned) and
/// `config.max_groups`.
models::Grouping policy_grouping(const sim::Graph& graph, const sim::Cluster& cluster,
                                 const TrainConfig& config);

/// Groups the graph, trains on the batch oracle (LibTorch on one thread, simulations on oneTBB)
/// and returns the best placement seen. Checkpoints every `checkpoint_every` iterations, at the
/// end and when stopped.
TrainResult train_placement(const sim::Graph& graph, const sim::Cluster& cluster,
                            const TrainConfig& config);

/// Per-op features for the learned grouper: op-type one-hot, log output bytes / FLOPs /
/// parameters (scaled by the graph's largest), log in/out degree, topological position; and the
/// device-kind mask per op.
struct OpProblem {
  std::vector<std::vector<float>> features;  ///< [op][feature]
  int num_devices = 0;
  std::vector<std::vector<bool>> allowed;  ///< [op][device]; empty = everywhere
  /// [op] the first op (by index) of its co-location group, which all its members follow; the op
  /// itself when it is first or alone; empty = no co-location.
  std::vector<int> leader;
};
OpProblem make_op_problem(const sim::Graph& graph, const sim::Cluster& cluster);

/// The Hierarchical Planner (Mirhoseini et al., ICLR 2018): a feed-forward grouper puts each op
/// into one of `groups` groups, the seq2seq placer (group features = mean of the members' op
/// features) places the groups; one REINFORCE loss on the sum of both log-probabilities. The
/// reward sees one device per *op*. Deterministic for a seed; no checkpoints.
///
///   HierarchicalTrainer t(make_op_problem(graph, cluster), 64, RlOptions{}, reward, 1.0);
///   for (int i = 0; i < 100; ++i) t.step();
class HierarchicalTrainer {
 public:
  HierarchicalTrainer(OpProblem problem, int groups, RlOptions options, RewardFn reward,
                      double oom_reference_s);
  ~HierarchicalTrainer();
  HierarchicalTrainer(const HierarchicalTrainer&) = delete;
  HierarchicalTrainer& operator=(const HierarchicalTrainer&) = delete;
  IterationStats step();
  [[nodiscard]] const DevicesOfGroups& best() const;  ///< per op; a first sample if none fitted
  [[nodiscard]] double best_step_s() const;           ///< 0 until a sample fitted
  [[nodiscard]] const std::vector<IterationStats>& history() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `placesim train --grouper learned`: train_placement with the HierarchicalTrainer (no
/// checkpoints, resume or pretrained weights).
TrainResult train_hierarchical(const sim::Graph& graph, const sim::Cluster& cluster,
                               const TrainConfig& config);

/// The op-type vocabulary a checkpoint's features were built with (empty: the graph's own).
std::vector<std::string> checkpoint_vocab(const std::string& path);

/// One policy trained on several graphs of one cluster (Placeto-style generalisation, with the
/// seq2seq policy): iterations go round-robin over the graphs, each a REINFORCE step on that
/// graph; features use the union of the graphs' op types. Writes checkpoint_dir/checkpoint.pt
/// (weights for `pretrained`). `iterations` / `minutes` as in train_placement; no resume.
struct MultiTrainResult {
  std::vector<std::string> graphs;
  std::vector<double> best_step_s;      ///< per graph: best sample seen while training
  std::vector<IterationStats> history;  ///< iteration i trained graphs[(i - 1) % n]
  double wall_s = 0.0;
};
MultiTrainResult train_multi(const std::vector<sim::Graph>& graphs, const sim::Cluster& cluster,
                             const TrainConfig& config);

/// The training curve as CSV (one row per IterationStats), written atomically. With `graphs`
/// (train_multi's, iteration i trained graphs[(i - 1) % n]) a `graph` column names each row's.
void write_curve_csv(const std::vector<IterationStats>& history, const std::string& path,
                     const std::vector<std::string>& graphs = {});

/// For tests: the largest absolute difference between the policy's LSTM recurrence (its forward
/// and its written-out backward, policy/rl_lstm.hpp) and LibTorch's torch::nn::LSTM on random
/// weights and inputs: outputs, last cell state, and the gradients of inputs, initial state and
/// every weight.
double lstm_recurrence_max_error(int steps, int batch, int hidden, std::uint64_t seed);

}  // namespace placesim::policy

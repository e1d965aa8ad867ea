// Helpers shared by the LibTorch training loops (rl_train.cpp, rl_multi.cpp, rl_grouper.cpp).
// Internal: include only from policy/rl_*.cpp, which compile with LibTorch.
//
//   pin_torch_to_one_thread();                    // first thing in every training entry point
//   Evaluation e = evaluation_of(outcome);        // the reward oracle's view of a simulation
//   SampleScores sc = score_samples(...);         // rewards, best placement, first baseline
//   finish_iteration(sc, ...);                    // baseline update, the curve's row
//   make_checkpoint_dir(config.checkpoint_dir);   // --checkpoint's folder, or an input error
#pragma once

#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "policy/comm/shards.hpp"
#include "policy/rl/internal/samples.hpp"
#include "policy/rl/rl.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

/// Creates --checkpoint's folder (and its parents); one that cannot be made is an input error.
inline void make_checkpoint_dir(const std::string& dir) {
  if (std::error_code ec; !std::filesystem::create_directories(dir, ec) && ec)
    throw sim::InputError(dir, "",
                          "a folder for checkpoints that can be created (" + ec.message() + ")");
}

/// Held while a training loop seeds LibTorch's global generator and initialises its network's
/// weights from it: a sweep trains several policies at once on oneTBB threads (`rl:` methods),
/// and without the lock their draws interleave, so a point's result depended on which other
/// point trained beside it (a sweep on 2 threads differed from run to run and from 1 thread).
inline std::mutex& torch_init_mutex() {
  static std::mutex m;
  return m;
}

/// One intra-op thread and one OpenBLAS thread: the gradient pass of a small LSTM gains little
/// from more, the other core runs the simulations (oneTBB), and OpenBLAS's own pool otherwise
/// follows the machine's core count, which changes results between machines. The inter-op
/// setting can be made only once per process, so a second call's refusal is ignored.
inline void pin_torch_to_one_thread() {
  at::set_num_threads(1);
  pin_blas_to_one_thread();
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
  }
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A simulated step as the trainer scores it: OOM includes "unreachable" (a placement that cannot
/// run at all), and the overflow is the fraction by which the fullest device exceeds its memory.
inline Evaluation evaluation_of(const sim::Outcome& o) {
  Evaluation e{.step_time_s = o.step_time.seconds(), .oom = o.oom || o.unreachable};
  for (const auto& d : o.oom_devices)
    if (d.capacity.v > 0)
      e.overflow = std::max(e.overflow, static_cast<double>(d.needed.v - d.capacity.v) /
                                            static_cast<double>(d.capacity.v));
  if (o.unreachable) e.overflow = std::max(e.overflow, 1.0);
  return e;
}

/// What the advantages (reward - baseline) are multiplied by: 1 / the standard deviation of this
/// iteration's rewards when `normalize`, so the gradient's size does not depend on the workload's
/// step-time scale. Identical rewards carry no signal; a floor keeps the step finite.
inline double advantage_scale(const std::vector<double>& rewards, double mean_reward,
                              bool normalize) {
  const auto k = static_cast<double>(rewards.size());
  if (!normalize || rewards.size() < 2) return 1.0;
  double var = 0.0;
  for (double r : rewards) var += (r - mean_reward) * (r - mean_reward);
  return 1.0 / std::max(std::sqrt(var / (k - 1)), 1e-3 * std::abs(mean_reward) + 1e-12);
}

/// An iteration's samples as REINFORCE sees them (score_samples).
struct SampleScores {
  std::vector<double> rewards;  ///< -sqrt(effective step time), one per sample
  double mean_reward = 0.0;
  double sum_ok = 0.0;  ///< step times of the samples that fit in memory, summed
  int ok = 0;           ///< how many fit
};

/// Scores an iteration's evaluated placements, as the placer and the learned grouper both do:
/// reward -sqrt(step time), where a placement that does not fit counts as `oom_penalty x
/// oom_reference_s x (1 + overflow)` (docs/rl.md, "OOM penalty"). Sets `st.min_step_s`; keeps the
/// best fitting placement in `best` (strictly better only, so the earliest of equal placements
/// stays and the result depends on nothing but the sample order); starts the moving-average
/// baseline from the first iteration's mean.
inline SampleScores score_samples(const std::vector<DevicesOfGroups>& placements,
                                  const std::vector<Evaluation>& evals, const RlOptions& opt,
                                  double oom_reference_s, IterationStats& st, DevicesOfGroups& best,
                                  double& best_step_s, double& baseline, bool& baseline_set) {
  SampleScores sc;
  for (std::size_t s = 0; s < evals.size(); ++s) {
    const Evaluation& e = evals[s];
    const double effective =
        e.oom ? opt.oom_penalty * oom_reference_s * (1.0 + std::max(0.0, e.overflow))
              : e.step_time_s;
    sc.rewards.push_back(-std::sqrt(std::max(0.0, effective)));
    if (e.oom) continue;
    sc.sum_ok += e.step_time_s;
    ++sc.ok;
    if (st.min_step_s == 0.0 || e.step_time_s < st.min_step_s) st.min_step_s = e.step_time_s;
    if (best.empty() || e.step_time_s < best_step_s) {
      best = placements[s];
      best_step_s = e.step_time_s;
    }
  }
  for (double r : sc.rewards) sc.mean_reward += r;
  if (!sc.rewards.empty()) sc.mean_reward /= static_cast<double>(sc.rewards.size());
  if (!baseline_set) {
    baseline = sc.mean_reward;
    baseline_set = true;
  }
  return sc;
}

/// After the gradient step: moves the baseline towards this iteration's mean reward, completes
/// the curve's row `st` and appends it to `history`.
inline void finish_iteration(const SampleScores& sc, const RlOptions& opt, double best_step_s,
                             double& baseline, IterationStats& st,
                             std::vector<IterationStats>& history) {
  const auto k = static_cast<double>(sc.rewards.size());
  baseline = opt.baseline_decay * baseline + (1.0 - opt.baseline_decay) * sc.mean_reward;
  st.baseline = baseline;
  st.mean_reward = sc.mean_reward;
  st.mean_step_s = sc.ok > 0 ? sc.sum_ok / sc.ok : 0.0;
  st.oom_fraction = k > 0 ? (k - sc.ok) / k : 0.0;
  st.best_step_s = best_step_s;
  history.push_back(st);
}

/// The result's placement (per group): the best fitting sample, unless the greedy decode (its
/// evaluation `ge`) is faster or nothing fitted.
inline void pick_final(const DevicesOfGroups& best, double best_step_s,
                       const DevicesOfGroups& greedy, const Evaluation& ge, TrainResult& result) {
  if (!best.empty() && (ge.oom || best_step_s <= ge.step_time_s)) {
    result.best_groups = best;
    result.best_step_s = best_step_s;
  } else {
    result.best_groups = greedy;
    result.best_step_s = ge.step_time_s;
    result.best_oom = ge.oom;
  }
}

}  // namespace placesim::policy

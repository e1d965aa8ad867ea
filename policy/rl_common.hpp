// Helpers shared by the LibTorch training loops (rl_train.cpp, rl_multi.cpp, rl_grouper.cpp).
// Internal: include only from policy/rl_*.cpp, which compile with LibTorch.
//
//   pin_torch_to_one_thread();                    // first thing in every training entry point
//   Evaluation e = evaluation_of(outcome);        // the reward oracle's view of a simulation
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <vector>

#include "policy/data_parallel.hpp"
#include "policy/rl.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

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
inline double advantage_scale(const std::vector<double>& rewards, double mean_reward, bool normalize) {
  const auto k = static_cast<double>(rewards.size());
  if (!normalize || rewards.size() < 2) return 1.0;
  double var = 0.0;
  for (double r : rewards) var += (r - mean_reward) * (r - mean_reward);
  return 1.0 / std::max(std::sqrt(var / (k - 1)), 1e-3 * std::abs(mean_reward) + 1e-12);
}

}  // namespace placesim::policy

// The RL library's entries in a binary linked without it (the LibTorch-free `placesim`, or any
// build with PLACESIM_WITH_TORCH=OFF): no learned methods, no training (provider.cpp is the
// other side).
#include "policy/place/learned.hpp"
#include "policy/rl/train_job.hpp"

namespace placesim::policy {

const LearnedMethods* learned_methods() {
  return nullptr;
}

TrainJobRunner train_job_runner() {
  return nullptr;
}

}  // namespace placesim::policy

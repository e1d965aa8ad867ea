// Synthetic rewards for the RL trainers' tests (tests/policy/rl_*_test.cpp): rewards whose best
// placement is known, so a test can check that training finds it.
//
//   Trainer t(problem, RlOptions{.hidden = 16}, placesim::test::prefer_device(2), 1.0);
#pragma once

#include "policy/rl/rl.hpp"

namespace placesim::test {

/// Step time = 1 + the number of groups not on device `target`: a single best placement.
policy::RewardFn prefer_device(int target);

}  // namespace placesim::test

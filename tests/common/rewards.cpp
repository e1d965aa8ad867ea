#include "tests/common/rewards.hpp"

#include <vector>

namespace placesim::test {

policy::RewardFn prefer_device(int target) {
  return [target](const std::vector<policy::DevicesOfGroups>& ps) {
    std::vector<policy::Evaluation> out;
    for (const auto& p : ps) {
      double t = 1.0;
      for (auto d : p) t += d != target ? 1.0 : 0.0;
      out.push_back({.step_time_s = t});
    }
    return out;
  };
}

}  // namespace placesim::test

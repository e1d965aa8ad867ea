// Replay of the 2-rank NCCL trace (3 ProfilerSteps, ~1250 GPU activities and ~5800 host ops per
// step): a few seconds of parsing and simulation, hence the slow label.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "calibration/trace.hpp"
#include "calibration/validate.hpp"

namespace pc = placesim::calibration;

namespace {
std::string data(const std::string& f) { return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f; }
}  // namespace

TEST(Validate, TwoRankNcclTraceThreeSteps) {
  const pc::ValidationReport r = pc::validate_profiles({pc::read_profile(data("a100_2rank_nccl_rank0.json.gz"))}, {});
  ASSERT_EQ(r.steps.size(), 3u);
  for (const auto& s : r.steps) {
    EXPECT_GT(s.gpu_ops, 800);
    EXPECT_LT(std::abs(s.error), 0.05) << pc::validation_to_text(r);
  }
  std::cout << pc::validation_to_text(r);
}

// Replay of the 2-rank NCCL trace (3 ProfilerSteps, ~1250 GPU activities and ~5800 host ops per
// step): a few seconds of parsing and simulation, hence the slow label.
#include <cmath>
#include <gtest/gtest.h>
#include <iostream>

#include "calibration/trace.hpp"
#include "calibration/validate.hpp"

namespace pc = placesim::calibration;

namespace {
std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}
}  // namespace

TEST(Validate, TwoRankNcclTraceThreeSteps) {
  const pc::ValidationReport r =
      pc::validate_profiles({pc::read_profile(data("a100_2rank_nccl_rank0.json.gz"))}, {});
  ASSERT_EQ(r.steps.size(), 3u);
  for (const auto& s : r.steps) {
    EXPECT_GT(s.gpu_ops, 800);
    EXPECT_LT(std::abs(s.error), 0.05) << pc::validation_to_text(r);
  }
  std::cout << pc::validation_to_text(r);
}

TEST(Validate, TwoRankNcclTracePassedAsBothRanks) {
  // Rank 0 of the 2-rank job stands in for both ranks (the only rank published): every NCCL
  // kernel is matched by process group and collective, each rank's busy time is found under its
  // own device name, and the job's step period is reproduced within 3 %.
  const pc::Profile p = pc::read_profile(data("a100_2rank_nccl_rank0.json.gz"));
  const pc::ValidationReport r = pc::validate_profiles({p, p}, {});
  ASSERT_EQ(r.steps.size(), 3u);
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.nccl_matched, 7);
    ASSERT_EQ(s.ranks.size(), 2u);
    for (const auto& rk : s.ranks) {
      ASSERT_EQ(rk.devices.size(), 1u);
      EXPECT_EQ(rk.devices[0].device, "r" + std::to_string(rk.rank) + "_gpu0");
      EXPECT_GT(rk.devices[0].measured_s, 0.040);
      EXPECT_GT(rk.devices[0].predicted_s, 0.040);
    }
    EXPECT_LT(std::abs(s.error), 0.03) << pc::validation_to_text(r);
  }
  EXPECT_LT(std::abs(r.steady_predicted_s / r.steady_measured_s - 1.0), 0.03);
}

#include "calibration/validate.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "calibration/trace.hpp"

namespace pc = placesim::calibration;

namespace {
std::string data(const std::string& f) { return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f; }
}  // namespace

TEST(Validate, EventSyncStepWithinFivePercent) {
  const pc::ValidationReport r = pc::validate_profiles({pc::read_profile(data("a100_event_sync.json"))}, {});
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  EXPECT_EQ(s.name, "ProfilerStep#100");
  EXPECT_NEAR(s.annotated_s, 3154e-6, 1e-9);
  EXPECT_EQ(s.gpu_ops, 5);  // 4 kernels + 1 memcpy
  EXPECT_LT(std::abs(s.error), 0.05) << pc::validation_to_text(r);
}

TEST(Validate, RocmStepsReplay) {
  const pc::ValidationReport r = pc::validate_profiles({pc::read_profile(data("mi250_rocm_minitoy.json"))}, {});
  ASSERT_FALSE(r.steps.empty());
  for (const auto& s : r.steps) EXPECT_GT(s.predicted_s, 0.0);
  EXPECT_LT(std::abs(r.steps[0].error), 0.05) << pc::validation_to_text(r);
}

TEST(Validate, JsonReportHasTheDocumentedKeys) {
  const pc::ValidationReport r = pc::validate_profiles({pc::read_profile(data("a100_event_sync.json"))}, {});
  const std::string j = pc::validation_to_json(r);
  for (const char* k : {"\"measured_s\"", "\"predicted_s\"", "\"error\"", "\"streams\"", "\"error_contributors\"", "\"devices\""})
    EXPECT_NE(j.find(k), std::string::npos) << k;
}


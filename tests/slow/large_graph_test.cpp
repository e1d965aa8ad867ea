// A 100k-op graph (RNNLM unrolled 1200 steps) is built and grouped; builders and grouping are
// linear-ish, so this stays within seconds in Release (speed itself is not asserted here).
#include <gtest/gtest.h>

#include "models/grouping.hpp"
#include "models/registry.hpp"

namespace placesim::models {
namespace {

TEST(LargeGraph, RnnlmHundredThousandOpsBuildsAndGroups) {
  const sim::Graph g = load_graph("rnnlm", "steps=1200,hidden=256,vocab=1000");
  EXPECT_GT(g.num_ops(), 100000);
  const Grouping gr = group_graph(g, 256);
  EXPECT_EQ(gr.size(), 256);
  for (int k = 0; k < gr.size(); ++k) {
    for (const std::int32_t w : gr.succ[static_cast<std::size_t>(k)]) EXPECT_GT(w, k);
  }
}

}  // namespace
}  // namespace placesim::models

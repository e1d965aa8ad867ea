// Data-parallel graph transform (models/parallel.hpp).
#include "models/parallel.hpp"

#include <gtest/gtest.h>

#include "models/registry.hpp"
#include "sim/collective.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace pm = placesim::models;
namespace sim = placesim::sim;

TEST(Parallel, ParsesLayouts) {
  const pm::ParallelSpec s = pm::parse_parallel("dp=8", "<t>");
  EXPECT_EQ(s.dp, 8);
  EXPECT_EQ(s.bucket_bytes, 25LL << 20);
  EXPECT_EQ(pm::parse_parallel("dp=2,bucket=50MiB", "<t>").bucket_bytes, 50LL << 20);
  EXPECT_THROW(pm::parse_parallel("dp=0", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("dp=2,tp=2", "<t>"), sim::InputError);  // not implemented
  EXPECT_THROW(pm::parse_parallel("xp=2", "<t>"), sim::InputError);
  EXPECT_THROW(pm::parse_parallel("", "<t>"), sim::InputError);
}

// ResNet-50: every replica's gradients (its parameters, f32) go through the buckets once, the
// first bucket is DDP's 1 MiB one, the others at most 25 MiB (or one gradient larger than that).
TEST(Parallel, DataParallelBucketsEveryGradientOnce) {
  const sim::Graph g = pm::load_graph("resnet50", "batch=32");
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const pm::ParallelJob job = pm::make_parallel(g, c, pm::parse_parallel("dp=4", "<t>"));
  EXPECT_EQ(job.replicas, 4);
  EXPECT_EQ(job.graph.num_ops(), 4 * (g.num_ops() + job.buckets));
  const double params = std::stod(g.metadata.at("parameters"));
  EXPECT_NEAR(static_cast<double>(job.gradient_bytes), 4.0 * params, 0.01 * 4.0 * params);
  std::int64_t total = 0;
  int calls = 0;
  for (const sim::Op& op : job.graph.ops) {
    if (!op.collective || op.name.rfind("dp0/", 0) != 0) continue;
    ++calls;
    total += op.collective->bytes.v;
  }
  EXPECT_EQ(calls, job.buckets);
  EXPECT_EQ(total, job.gradient_bytes);
  EXPECT_GE(job.buckets, static_cast<int>(job.gradient_bytes / (25LL << 20)));
  // Replica k runs on the k-th GPU.
  const auto gpus = c.gpus();
  EXPECT_EQ(job.placement.device_of.front(), gpus[0]);
  EXPECT_EQ(job.placement.device_of.back(), gpus[3]);
  // A data-parallel step is no faster than one replica alone and its all-reduce overlaps the
  // backward pass: the step is shorter than one replica plus every bucket's all-reduce in a row.
  const sim::Outcome one =
      sim::simulate(c, g, pm::make_parallel(g, c, pm::parse_parallel("dp=1", "<t>")).placement);
  const sim::Outcome four = sim::simulate(c, job.graph, job.placement);
  EXPECT_GE(four.step_time, one.step_time);
  sim::Duration serial = one.step_time;
  for (const sim::Op& op : job.graph.ops)
    if (op.collective && op.name.rfind("dp0/", 0) == 0)
      serial +=
          sim::predict_collective(c, *op.collective, {gpus[0], gpus[1], gpus[2], gpus[3]}).time;
  EXPECT_LT(four.step_time, serial);
  EXPECT_FALSE(four.oom);
}

TEST(Parallel, Refusals) {
  const sim::Graph g = pm::load_graph("resnet50", "batch=8");
  EXPECT_THROW(
      pm::make_parallel(g, sim::load_cluster("dgx-a100"), pm::parse_parallel("dp=16", "<t>")),
      sim::InputError);
}

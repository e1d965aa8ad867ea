// build_gpt_huge: the streamed dp x tp x pp GPT step (models/huge_step.hpp).
#include "models/huge_step.hpp"

#include <gtest/gtest.h>

#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::models {
namespace {

const HugeGptShape kSmall = parse_gpt_huge("layers=4,hidden=1024,seq=512,vocab=8192", "<t>");

TEST(GptHuge, CountsItsOpsAndPlacesEachOnItsRanksGpu) {
  const sim::Cluster c = sim::load_cluster("2x-dgx-a100");
  const ParallelSpec par = parse_parallel("dp=2,tp=4,pp=2,mb=4", "<t>");
  const HugeStep h = build_gpt_huge(c, kSmall, par, {});
  EXPECT_EQ(h.ops, gpt_huge_ops(kSmall, par));
  EXPECT_EQ(h.step.num_ops(), h.ops);
  EXPECT_EQ(static_cast<std::int64_t>(h.placement.device_of.size()), h.ops);
  EXPECT_EQ(h.gpus, 16);
  // Every one of the 16 GPUs runs ops; no CPU does.
  const std::vector<sim::DeviceId> gpus = c.gpus();
  std::vector<int> per(c.num_devices(), 0);
  for (sim::DeviceId d : h.placement.device_of) ++per[d];
  for (int d = 0; d < c.num_devices(); ++d) {
    const bool gpu = std::find(gpus.begin(), gpus.end(), d) != gpus.end();
    EXPECT_EQ(per[d] > 0, gpu) << c.devices[d].name;
  }
  // Ring all-reduce ops: tp rings of 4 ranks (7 ops per rank), 2 per layer forward and backward,
  // + the head's input gradient; dp rings of 2 ranks (3 ops per rank) per parameter group.
  const std::int64_t tp_rings = (2 * 2 * 4 + 1) * par.mb * par.dp;  // per tp rank group
  const std::int64_t dp_groups = (4 + 1 + 1) * par.tp;              // layers, embedding, head
  EXPECT_EQ(h.ring_ops, tp_rings * 4 * 7 + dp_groups * 2 * 3);
}

TEST(GptHuge, SimulatesWithTrafficOnNvlinkAndInfinibandAndOneFOneBOrder) {
  const sim::Cluster c = sim::load_cluster("2x-dgx-a100");
  const ParallelSpec par = parse_parallel("dp=2,tp=4,pp=2,mb=4", "<t>");
  const HugeStep h = build_gpt_huge(c, kSmall, par, {});
  const sim::Outcome o = sim::simulate(h.step, h.placement);
  EXPECT_FALSE(o.oom);
  EXPECT_FALSE(o.unreachable);
  EXPECT_GT(o.step_time.ns, 0);
  EXPECT_GT(o.transfers, h.ring_ops / 2);
  std::int64_t nvlink = 0, ib = 0;
  for (std::size_t l = 0; l < o.links.size(); ++l) {
    if (c.links[l].kind.starts_with("nvlink")) nvlink += o.links[l].bytes.v;
    if (c.links[l].kind.starts_with("ib")) ib += o.links[l].bytes.v;
  }
  EXPECT_GT(nvlink, 0);
  EXPECT_GT(ib, 0);
  // More micro-batches fill the pipeline: the step grows by less than the micro-batches do.
  const HugeStep h8 = build_gpt_huge(c, kSmall, parse_parallel("dp=2,tp=4,pp=2,mb=8", "<t>"), {});
  const sim::Outcome o8 = sim::simulate(h8.step, h8.placement);
  EXPECT_GT(o8.step_time.ns, o.step_time.ns);
  EXPECT_LT(o8.step_time.ns, 2 * o.step_time.ns);
}

TEST(GptHuge, SameStepOnAnyThreadCount) {
  const sim::Cluster c = sim::load_cluster("2x-dgx-a100");
  const ParallelSpec par = parse_parallel("dp=4,tp=2,pp=2,mb=6", "<t>");
  sim::SimOptions o1;
  o1.threads = 1;
  const HugeStep h1 = build_gpt_huge(c, kSmall, par, {}, 1);
  const sim::Outcome ref = sim::simulate(h1.step, h1.placement, o1);
  for (int threads : {2, 4}) {
    const HugeStep h = build_gpt_huge(c, kSmall, par, {}, threads);
    EXPECT_EQ(h.placement.device_of, h1.placement.device_of);
    EXPECT_EQ(h.step.memory_bytes(), h1.step.memory_bytes());
    sim::SimOptions o;
    o.threads = threads;
    const sim::Outcome x = sim::simulate(h.step, h.placement, o);
    EXPECT_EQ(
        sim::outcome_to_json(x, -1).substr(0, sim::outcome_to_json(x, -1).find("sim_wall")),
        sim::outcome_to_json(ref, -1).substr(0, sim::outcome_to_json(ref, -1).find("sim_wall")));
  }
}

std::string json_of(const sim::Outcome& o) {
  const std::string j = sim::outcome_to_json(o, -1);
  return j.substr(0, j.find("sim_wall"));
}

// Simulated while generated (sim::simulate_while_building) on 2 and 4 threads: the whole
// outcome, critical path included, is the one of simulate() on the step built first, for
// several layouts (pp up to 4: the watermark then waits for activations saved 4 tasks back),
// and with GPUs small enough that some run out of memory (peaks and OOM order settled at the end).
TEST(GptHuge, SimulatedWhileGeneratedIsTheSequentialRun) {
  const sim::Cluster c = sim::load_cluster("2x-dgx-a100");
  for (const char* spec : {"dp=4,tp=2,pp=2,mb=6", "dp=2,tp=4,pp=2,mb=5", "dp=1,tp=2,pp=4,mb=9",
                           "dp=2,tp=1,pp=1,mb=3", "dp=1,tp=8,pp=2,mb=4"}) {
    const ParallelSpec par = parse_parallel(spec, "<t>");
    sim::SimOptions o1;
    o1.threads = 1;
    const HugeStep h1 = build_gpt_huge(c, kSmall, par, {}, 1);
    const std::string ref = json_of(sim::simulate(h1.step, h1.placement, o1));
    for (int threads : {1, 2, 4}) {
      sim::SimOptions o;
      o.threads = threads;
      const HugeRun r = simulate_gpt_huge(c, kSmall, par, {}, o);
      EXPECT_EQ(r.overlapped, threads > 1) << spec;
      EXPECT_EQ(r.h.ops, h1.ops);
      EXPECT_EQ(r.h.placement.device_of, h1.placement.device_of) << spec;
      EXPECT_EQ(json_of(r.outcome), ref) << spec << " on " << threads << " threads";
      EXPECT_EQ(json_of(sim::simulate(r.h.step, r.h.placement, o1)), ref) << spec;
    }
  }
  // GPT-3 175B's layers on 8 GPUs: 16 layers hold ~116 GB per GPU of weights and Adam state
  // (every GPU out of memory from t = 0), 10 layers ~73 GB (out as activations pile up).
  const ParallelSpec par = parse_parallel("dp=2,tp=2,pp=2,mb=3", "<t>");
  for (const char* shape : {"layers=16,hidden=12288,seq=512,vocab=8192",
                            "layers=10,hidden=12288,seq=8192,vocab=8192"}) {
    const HugeGptShape big = parse_gpt_huge(shape, "<t>");
    const HugeStep h1 = build_gpt_huge(c, big, par, {}, 1);
    sim::SimOptions o1;
    o1.threads = 1;
    const sim::Outcome ref = sim::simulate(h1.step, h1.placement, o1);
    EXPECT_TRUE(ref.oom) << shape;
    sim::SimOptions o2;
    o2.threads = 2;
    const HugeRun r = simulate_gpt_huge(c, big, par, {}, o2);
    EXPECT_TRUE(r.overlapped);
    EXPECT_EQ(json_of(r.outcome), json_of(ref)) << shape;
  }
}

TEST(GptHuge, BadOptionsAndTooFewGpusAreInputErrors) {
  EXPECT_THROW(parse_gpt_huge("layers=0", "<t>"), sim::InputError);
  EXPECT_THROW(parse_gpt_huge("heads=4", "<t>"), sim::InputError);
  EXPECT_THROW(parse_gpt_huge("hidden=12x", "<t>"), sim::InputError);
  EXPECT_THROW(parse_gpt_huge("precision=f8", "<t>"), sim::InputError);
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  EXPECT_THROW(build_gpt_huge(c, kSmall, parse_parallel("dp=4,tp=4", "<t>"), {}), sim::InputError);
  EXPECT_THROW(build_gpt_huge(c, kSmall, parse_parallel("pp=5", "<t>"), {}), sim::InputError);
  EXPECT_THROW(build_gpt_huge(c, kSmall, parse_parallel("tp=3", "<t>"), {}), sim::InputError);
}

}  // namespace
}  // namespace placesim::models

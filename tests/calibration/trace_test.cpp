#include "calibration/trace.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace pc = placesim::calibration;

namespace {
std::string data(const std::string& f) { return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f; }
int count(const pc::Profile& p, pc::EventKind k) {
  return static_cast<int>(std::count_if(p.events.begin(), p.events.end(), [&](const pc::TraceEvent& e) { return e.kind == k; }));
}
}  // namespace

TEST(KinetoReader, CurrentCategoriesA100Alexnet) {
  const pc::Profile p = pc::read_profile(data("a100_alexnet.json"));
  EXPECT_EQ(p.dialect, "kineto");
  EXPECT_EQ(count(p, pc::EventKind::Kernel), 79);
  EXPECT_EQ(count(p, pc::EventKind::CpuOp), 359);
  EXPECT_EQ(count(p, pc::EventKind::Memcpy), 16);
  EXPECT_EQ(count(p, pc::EventKind::Memset), 3);
  EXPECT_EQ(p.device_name, "NVIDIA A100-PG509-200");
  for (const auto& e : p.events)
    if (e.kind == pc::EventKind::Kernel) {
      EXPECT_EQ(e.device, 0);
      EXPECT_TRUE(e.stream == 7 || e.stream == 20);
      EXPECT_GE(e.correlation, 0);
    }
}

TEST(KinetoReader, GzipTwoRankNcclWithSteps) {
  const pc::Profile p = pc::read_profile(data("a100_2rank_nccl_rank0.json.gz"));
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.world_size, 2);
  EXPECT_EQ(count(p, pc::EventKind::Kernel), 2700);
  const auto steps = pc::profile_steps(p);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].name, "ProfilerStep#4");
  EXPECT_EQ(steps[0].end_ns - steps[0].begin_ns, 222442191);
  int nccl = 0;
  for (const auto& e : p.events)
    if (e.kind == pc::EventKind::Kernel && e.name.rfind("ncclKernel", 0) == 0) {
      ++nccl;
      const std::string c = e.args.at("Collective name");
      EXPECT_TRUE(c == "allreduce" || c == "broadcast") << c;
      EXPECT_EQ(e.args.at("Group size"), "2");
    }
  EXPECT_EQ(nccl, 21);
}

TEST(KinetoReader, RocmTraceHasShapesAndHipRuntime) {
  const pc::Profile p = pc::read_profile(data("mi250_rocm_minitoy.json"));
  EXPECT_EQ(count(p, pc::EventKind::Kernel), 14);
  bool saw_dims = false, saw_hip = false;
  for (const auto& e : p.events) {
    if (e.name == "aten::mse_loss_backward" && e.input_dims.size() == 4) {
      saw_dims = true;
      EXPECT_EQ(e.input_dims[1], (std::vector<std::int64_t>{5, 128}));
      EXPECT_EQ(e.input_types[1], "float");
    }
    saw_hip |= e.kind == pc::EventKind::Runtime && e.name == "hipLaunchKernel";
  }
  EXPECT_TRUE(saw_dims);
  EXPECT_TRUE(saw_hip);
}

TEST(KinetoReader, Pre2022CategoryNames) {
  const std::string text = R"({"traceEvents":[
    {"ph":"X","cat":"Operator","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":20,"args":{"External id":3,"Input dims":[[2,2]]}},
    {"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,"dur":5,"args":{"External id":3,"correlation":9}},
    {"ph":"X","cat":"Kernel","name":"gemm","pid":0,"tid":"stream 7","ts":18,"dur":40,"args":{"device":0,"stream":7,"correlation":9}},
    {"ph":"X","cat":"Memcpy","name":"Memcpy HtoD","pid":0,"tid":"stream 7","ts":60,"dur":4,"args":{"device":0,"stream":7,"correlation":10,"bytes":64}}]})";
  const pc::Profile p = pc::parse_kineto_json(text, "old.json");
  EXPECT_EQ(p.dialect, "kineto-pre2022");
  EXPECT_EQ(count(p, pc::EventKind::Kernel), 1);
  EXPECT_EQ(count(p, pc::EventKind::Memcpy), 1);
  EXPECT_EQ(p.events[2].stream, 7);
  EXPECT_EQ(p.events[2].dur_ns, 40000);
}

TEST(KinetoReader, TorchBareListDialect) {
  const std::string text = R"([
    {"name":"ProfilerStep#1","ph":"X","ts":100,"dur":500,"tid":1,"pid":"CPU functions","args":{}},
    {"name":"aten::mm","ph":"X","ts":110,"dur":200,"tid":1,"pid":"CPU functions","args":{}}])";
  const pc::Profile p = pc::parse_kineto_json(text, "bare.json");
  EXPECT_EQ(p.dialect, "torch-bare-list");
  ASSERT_EQ(pc::profile_steps(p).size(), 1u);
  EXPECT_EQ(pc::profile_steps(p)[0].end_ns - pc::profile_steps(p)[0].begin_ns, 500000);
  EXPECT_EQ(count(p, pc::EventKind::CpuOp), 1);
}

TEST(KinetoReader, MalformedInputIsInputError) {
  EXPECT_THROW(pc::parse_kineto_json("{\"traceEvents\": [", "bad.json"), placesim::sim::InputError);
  EXPECT_THROW(pc::parse_kineto_json("{\"foo\": 1}", "bad.json"), placesim::sim::InputError);
  EXPECT_THROW(pc::read_profile(data("does_not_exist.json")), placesim::sim::InputError);
}

TEST(NsysReader, SaxpySqliteSchemaCheckedAndLinked) {
  const pc::Profile p = pc::read_profile(data("a100_saxpy.sqlite"));
  EXPECT_EQ(p.dialect, "nsys-sqlite");
  EXPECT_EQ(p.device_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(count(p, pc::EventKind::Kernel), 5);
  EXPECT_EQ(count(p, pc::EventKind::Memcpy), 15);
  EXPECT_EQ(count(p, pc::EventKind::Runtime), 95);
  // Every kernel is launched by a runtime call with the same correlation id.
  for (const auto& k : p.events) {
    if (k.kind != pc::EventKind::Kernel) continue;
    EXPECT_EQ(k.name.rfind("saxpy(", 0), 0u);
    const bool launched = std::any_of(p.events.begin(), p.events.end(), [&](const pc::TraceEvent& r) {
      return r.kind == pc::EventKind::Runtime && r.correlation == k.correlation && r.name.find("Launch") != std::string::npos;
    });
    EXPECT_TRUE(launched);
  }
  EXPECT_TRUE(std::any_of(p.missing.begin(), p.missing.end(), [](const std::string& m) { return m.find("MEMSET") == std::string::npos && m.find("input shapes") != std::string::npos; }));
}

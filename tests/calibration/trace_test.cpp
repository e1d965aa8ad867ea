#include "calibration/trace.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <string>

#include "calibration/kernel_fit.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace pc = placesim::calibration;

namespace {
std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}
int count(const pc::Profile& p, pc::EventKind k) {
  return static_cast<int>(std::count_if(p.events.begin(), p.events.end(),
                                        [&](const pc::TraceEvent& e) { return e.kind == k; }));
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
  const std::string text = R"J({"traceEvents":[
    {"ph":"X","cat":"Operator","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":20,"args":{"External id":3,"Input dims":[[2,2]]}},
    {"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,"dur":5,"args":{"External id":3,"correlation":9}},
    {"ph":"X","cat":"Kernel","name":"gemm","pid":0,"tid":"stream 7","ts":18,"dur":40,"args":{"device":0,"stream":7,"correlation":9}},
    {"ph":"X","cat":"Memcpy","name":"Memcpy HtoD","pid":0,"tid":"stream 7","ts":60,"dur":4,"args":{"device":0,"stream":7,"correlation":10,"bytes":64}}]})J";
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
    const bool launched =
        std::any_of(p.events.begin(), p.events.end(), [&](const pc::TraceEvent& r) {
          return r.kind == pc::EventKind::Runtime && r.correlation == k.correlation &&
                 r.name.find("Launch") != std::string::npos;
        });
    EXPECT_TRUE(launched);
  }
  EXPECT_TRUE(std::any_of(p.missing.begin(), p.missing.end(), [](const std::string& m) {
    return m.find("MEMSET") == std::string::npos && m.find("input shapes") != std::string::npos;
  }));
}

// ---------------------------------------------------------------------------------------------
// Linking: runtime call -> framework op by time nesting on its thread; GPU activity -> launch by
// correlation (or ac2g flow). One hand-written trace per dialect users have, then every real trace.

namespace {
const pc::TraceEvent* find(const pc::Profile& p, const std::string& name) {
  for (const auto& e : p.events)
    if (e.name == name) return &e;
  return nullptr;
}
std::string op_of(const pc::Profile& p, const std::string& gpu_name) {
  const pc::TraceEvent* k = find(p, gpu_name);
  if (!k || k->op < 0) return "";
  return p.events[static_cast<std::size_t>(k->op)].name;
}
}  // namespace

TEST(Linking, Pre2022LowercaseExternalIdAndStringTids) {
  // torch 1.8-1.10: Operator/Runtime/Kernel, "external id", tids written as strings.
  const std::string t = R"J({"traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 7, "tid": "7", "ts": 100, "dur": 50, "args": {"external id": 1}},
    {"ph": "X", "cat": "Operator", "name": "aten::empty", "pid": 7, "tid": "7", "ts": 101, "dur": 2, "args": {"external id": 2}},
    {"ph": "X", "cat": "Operator", "name": "aten::cudnn_convolution", "pid": 7, "tid": "7", "ts": 104, "dur": 40, "args": {"external id": 3}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 110, "dur": 5, "args": {"correlation": 900, "external id": 3}},
    {"ph": "X", "cat": "Kernel", "name": "conv_kernel", "pid": 0, "tid": "stream 7", "ts": 120, "dur": 30, "args": {"correlation": 900, "external id": 3, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": "stream 7", "ts": 160, "dur": 3, "args": {"correlation": 901, "device": 0, "stream": 7}}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "pre2022.json");
  EXPECT_EQ(p.dialect, "kineto-pre2022");
  EXPECT_EQ(op_of(p, "conv_kernel"), "aten::cudnn_convolution");
  EXPECT_EQ(p.links.gpu, 2);
  EXPECT_EQ(p.links.gpu_to_op, 1);
  EXPECT_EQ(p.links.without_launch.at("memcpy"), 1);  // its launch is not in the trace: counted
}

TEST(Linking, Torch20RuntimeExternalIdIsTheCorrelationAndNamesAnUnrelatedOp) {
  // torch <= 2.0: a runtime call's External id is its correlation id; here it coincides with the
  // External id of aten::empty, which launches nothing. Time nesting decides.
  const std::string t = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 5, "tid": 5, "ts": 10, "dur": 2, "args": {"External id": 44}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 5, "tid": 5, "ts": 100, "dur": 20, "args": {"External id": 45}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 105, "dur": 5, "args": {"External id": 44, "correlation": 44}},
    {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 112, "dur": 4, "args": {"External id": 44, "correlation": 44, "device": 0, "stream": 7}}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "t20.json");
  EXPECT_EQ(op_of(p, "add_kernel"), "aten::add");
  EXPECT_EQ(p.links.external_id_is_correlation, 1);
  EXPECT_EQ(p.links.gpu_to_op, 1);
}

TEST(Linking, AllocationOpsNeverTakeTheLaunch) {
  // aten::zeros -> aten::empty (whose allocator call sits inside) and aten::zero_ -> fill_.
  const std::string t = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 1, "dur": 20, "args": {"External id": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 5, "dur": 5, "args": {"correlation": 10}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::fill_", "pid": 1, "tid": 1, "ts": 30, "dur": 50, "args": {"External id": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 40, "dur": 5, "args": {"correlation": 11}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 50, "dur": 2, "args": {"correlation": 10, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "fill_kernel", "pid": 0, "tid": 7, "ts": 55, "dur": 2, "args": {"correlation": 11, "device": 0, "stream": 7}}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "alloc.json");
  EXPECT_EQ(op_of(p, "Memset (Device)"), "aten::zeros");
  EXPECT_EQ(op_of(p, "fill_kernel"), "aten::fill_");
  EXPECT_TRUE(pc::launches_nothing("aten::empty_strided"));
  EXPECT_FALSE(pc::launches_nothing("aten::fill_"));
}

TEST(Linking, Ac2gFlowGivesTheCorrelationWhenArgsLackIt) {
  const std::string t = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 3, "tid": 3, "ts": 0, "dur": 30, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 3, "tid": 3, "ts": 10, "dur": 5, "args": {}},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 3, "tid": 3, "ts": 10},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 9, "args": {"device": 0, "stream": 7}},
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 0, "tid": 7, "ts": 20, "bp": "e"}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "flow.json");
  EXPECT_EQ(op_of(p, "gemm"), "aten::mm");
  EXPECT_EQ(p.links.by_flow, 1);
}

TEST(Linking, NanosecondTimestampsAreRecognised) {
  // ts/dur in ns: a launch reading 5000 "us" is 5 us.
  const std::string t = R"J({"displayTimeUnit": "ns", "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 3, "tid": 3, "ts": 1000000, "dur": 20000, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 3, "tid": 3, "ts": 1005000, "dur": 5000, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1012000, "dur": 3000, "args": {"correlation": 8, "device": 0, "stream": 7}}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "ns.json");
  EXPECT_TRUE(p.ns_timestamps);
  const pc::TraceEvent* k = find(p, "relu_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dur_ns, 3000);
  EXPECT_EQ(op_of(p, "relu_kernel"), "aten::relu");
}

TEST(Linking, EveryRealTraceLinksNinetyPercentAndNoAllocationOpGetsGpuTime) {
  for (const char* f :
       {"a100_alexnet.json", "a100_simple_add.json", "a100_triton.json",
        "hta_backward_thread_excerpt.json", "mi250_rocm_minitoy.json",
        "a100_2rank_nccl_rank0.json.gz", "h200_resnet18-224px-b64_train.json.gz",
        "h200_resnet18-64px-b8_train.json.gz", "h200_micro.json.gz", "h200_micro_bwd.json.gz",
        "v100_torch181_tbplugin_excerpt.json", "h100_libkineto_cuda-sync_test-output.json"}) {
    const pc::Profile p = pc::read_profile(data(f));
    ASSERT_GT(p.links.gpu, 0) << f;
    EXPECT_GE(p.links.gpu_linked_fraction(), 0.90)
        << f << ": " << p.links.gpu_to_op << " of " << p.links.gpu;
    for (const auto& e : p.events)
      if (e.on_gpu() && e.op >= 0) {
        EXPECT_FALSE(pc::launches_nothing(p.events[static_cast<std::size_t>(e.op)].name)) << f;
      }
  }
}

TEST(Linking, EventSyncSpinKernelIsTheOnlyActivityOutsideAnOp) {
  // torch.cuda._sleep launches its spin kernel from Python, outside any aten op: counted, not
  // attributed. The other 4 activities (fill, sum, gt, the D2H copy of item()) link.
  const pc::Profile p = pc::read_profile(data("a100_event_sync.json"));
  EXPECT_EQ(p.links.gpu, 5);
  EXPECT_EQ(p.links.gpu_to_launch, 5);
  EXPECT_EQ(p.links.gpu_to_op, 4);
  EXPECT_EQ(p.links.without_op.at("kernel"), 1);
  EXPECT_EQ(op_of(p, "Memcpy DtoH (Device -> Pageable)"), "aten::_local_scalar_dense");
}

TEST(Linking, Torch113BackwardThreadExcerpt) {
  // Real excerpt (HTA test data, A100, Oct 2022): the launch on the autograd thread carries
  // External id = correlation = 2131433, which names no op; it sits inside aten::mm.
  const pc::Profile p = pc::read_profile(data("hta_backward_thread_excerpt.json"));
  EXPECT_EQ(op_of(p, "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"),
            "aten::mm");
}

TEST(Dialects, Torch181TbPluginTraceNamesItsGpuFromComputeProperties) {
  // Real excerpt (kineto tb_plugin test input, torch 1.8.1, Tesla V100-DGXS-32GB, May 2021): the
  // GPUs are listed as `computeProperties`, tids are strings ("24572", "stream 7"), flows are
  // `async`/`launch`. Read as deviceProperties only, the trace had no GPU name and calibrate filed
  // its kernel times under "cpu".
  const pc::Profile p = pc::read_profile(data("v100_torch181_tbplugin_excerpt.json"));
  EXPECT_EQ(p.dialect, "kineto-pre2022");
  EXPECT_EQ(p.device_name, "Tesla V100-DGXS-32GB");
  EXPECT_EQ(pc::calibration_key(p.device_name, ""), "V100-DGXS-32GB");
  EXPECT_EQ(p.links.gpu, 5);
  EXPECT_EQ(p.links.gpu_to_op, 5);
  EXPECT_EQ(op_of(p, "volta_sgemm_128x32_nt"), "aten::mm");  // on the autograd thread "24610"
  EXPECT_EQ(op_of(p, "Memcpy HtoD (Pageable -> Device)"), "aten::copy_");
  for (const pc::OpSample& s : pc::op_samples_from_profile(p, ""))
    EXPECT_EQ(s.device, "V100-DGXS-32GB") << s.signature.op_type;
}

TEST(Dialects, LibkinetoTestOutputWithCudaSyncAndStringPids) {
  // Real libkineto output (CuptiActivityProfilerTest, 8x H100, CUDA 12.9 runtime, CUPTI 28):
  // leading whitespace, `cuda_sync` activities (Stream Wait Event, Event Sync with stream -1),
  // a "Trace" span and instants on the string pids "Spans", "Traces" and "".
  const pc::Profile p = pc::read_profile(data("h100_libkineto_cuda-sync_test-output.json"));
  EXPECT_EQ(p.dialect, "kineto");
  EXPECT_EQ(p.device_name, "NVIDIA H100");
  EXPECT_EQ(op_of(p, "Kernel"), "op1");
  int syncs = 0;
  for (const auto& e : p.events) syncs += e.kind == pc::EventKind::Sync;
  EXPECT_EQ(syncs, 2);
}

TEST(Dialects, RocmTraceLensGemmLinksByFlowOnly) {
  // Real excerpt (AMD-AGI/TraceLens evals, torch profiler on ROCm, 2026; Tensile kernels built for
  // gfx942): no deviceProperties; hipExtModuleLaunchKernel calls whose External id is their own
  // correlation id (not the aten::mm's), kernels with only an External id and the `ac2g` flow
  // (`"bp": "e"`), a hex-string "stream" arg, the GPU as pid 2, python_function events with a
  // null parent id, and bf16 inputs as "c10::BFloat16".
  const pc::Profile p = pc::read_profile(data("rocm-gfx942_tracelens_bf16-gemm_excerpt.json"));
  EXPECT_EQ(p.dialect, "kineto");
  EXPECT_EQ(p.device_name, "");
  EXPECT_EQ(p.links.gpu, 4);
  EXPECT_EQ(p.links.by_flow, 4);
  EXPECT_EQ(p.links.gpu_to_op, 4);
  EXPECT_EQ(p.links.external_id_is_correlation, 4);
  for (const auto& e : p.events)
    if (e.kind == pc::EventKind::Kernel) {
      EXPECT_EQ(e.device, 2);
      EXPECT_EQ(e.stream, 0);
      EXPECT_EQ(p.events[static_cast<std::size_t>(e.op)].name, "aten::mm");
    }
  const auto s = pc::op_samples_from_profile(p, "gfx942");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].signature.dtype, placesim::sim::Dtype::BF16);
  EXPECT_EQ(s[0].signature.input_shapes,
            (std::vector<std::vector<std::int64_t>>{{256, 131072}, {131072, 512}}));
  EXPECT_EQ(s[0].device, "gfx942");
}

TEST(Dialects, RocmGenericGpuNameIsNoModel) {
  // HTA's MI250 trace (ROCm 6.2) names its GPUs "AMD Radeon Graphics", ROCm's name for any part
  // without a marketing name; calibrate filed the MI250's kernels under "Radeon-Graphics".
  const pc::Profile p = pc::read_profile(data("mi250_rocm_minitoy.json"));
  EXPECT_EQ(p.device_name, "");
  EXPECT_TRUE(std::any_of(p.missing.begin(), p.missing.end(), [](const std::string& m) {
    return m.find("\"AMD Radeon Graphics\"") != std::string::npos &&
           m.find("9.0, 104 CUs, 64 GiB") != std::string::npos;
  }));
}

TEST(Linking, ZeroLengthCallAtAnOpsEndBelongsToTheOpItsIdNames) {
  // torch 1.8-1.10 (as in kineto's tb_plugin tests): a 0-us launch at the instant aten::mm ends,
  // inside aten::matmul; its "external id" names aten::mm, which encloses it (boundary included).
  const std::string t = R"J({"traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "aten::matmul", "pid": 9, "tid": "456", "ts": 100, "dur": 100, "args": {"External id": 2}},
    {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 9, "tid": "456", "ts": 120, "dur": 70, "args": {"External id": 4}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": "456", "ts": 190, "dur": 0, "args": {"correlation": 336, "external id": 4}},
    {"ph": "X", "cat": "Kernel", "name": "gemm_at_end", "pid": 0, "tid": "stream 7", "ts": 200, "dur": 7, "args": {"correlation": 336, "external id": 4, "device": 0}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": "456", "ts": 195, "dur": 0, "args": {"correlation": 337, "external id": 2}},
    {"ph": "X", "cat": "Kernel", "name": "after_mm", "pid": 0, "tid": "stream 7", "ts": 210, "dur": 8, "args": {"correlation": 337, "external id": 2, "device": 0}}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "tb.json");
  EXPECT_EQ(op_of(p, "gemm_at_end"), "aten::mm");
  EXPECT_EQ(op_of(p, "after_mm"), "aten::matmul");
  EXPECT_EQ(p.links.external_id_disagrees, 0);
}

TEST(Linking, EpochNanosecondTimestampsDoNotOverflow) {
  // ns since the epoch (1.7e18): as microseconds they would overflow int64 nanoseconds.
  const std::string t = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 3, "tid": 3, "ts": 1712667379482806000, "dur": 20000, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 3, "tid": 3, "ts": 1712667379482811000, "dur": 5000, "args": {}},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 8, "pid": 3, "tid": 3, "ts": 1712667379482811000},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1712667379482818000, "dur": 3000, "args": {"device": 0, "stream": 7}},
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 8, "pid": 0, "tid": 7, "ts": 1712667379482818000, "bp": "e"}
  ]})J";
  const pc::Profile p = pc::parse_kineto_json(t, "epoch-ns.json");
  EXPECT_TRUE(p.ns_timestamps);
  const pc::TraceEvent* k = find(p, "relu_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->ts_ns, 1712667379482818000);
  EXPECT_EQ(k->dur_ns, 3000);
  EXPECT_EQ(op_of(p, "relu_kernel"), "aten::relu");
}

TEST(Linking, BlockedLaunchesOfAGpuBoundLoopStayMicroseconds) {
  // Most launches block ~2 ms on a full queue; the fastest tenth do not: still microseconds.
  std::string ev;
  for (int i = 0; i < 20; ++i) {
    const int ts = 1000 + 3000 * i, dur = i < 3 ? 4 : 2000;
    ev +=
        std::string(i ? "," : "") +
        R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" +
        std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
        ", \"args\": {\"correlation\": " + std::to_string(i) + "}}";
  }
  const pc::Profile p = pc::parse_kineto_json("{\"traceEvents\": [" + ev + "]}", "blocked.json");
  EXPECT_FALSE(p.ns_timestamps);
}

TEST(Dialects, Torch18KinetoBareInfIsReadAsNull) {
  // Real fragment of pytorch/kineto#105 (torch 1.8 era): a 0-us memcpy, so Kineto wrote
  // `"memory bandwidth (GB/s)": inf`, not JSON. Before, the whole file was a parse error.
  const pc::Profile p = pc::read_profile(data("torch18_kineto-issue105_memcpy-inf.json"));
  EXPECT_EQ(p.dialect, "kineto-pre2022");
  ASSERT_EQ(count(p, pc::EventKind::Memcpy), 1);
  const pc::TraceEvent* m = find(p, "Memcpy HtoD (Pageable -> Device)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->bytes, 200);
  EXPECT_EQ(m->stream, 7);
  EXPECT_EQ(m->correlation, 20002);
  EXPECT_EQ(m->args.at("memory bandwidth (GB/s)"), "null");
  ASSERT_FALSE(p.missing.empty());
  EXPECT_NE(p.missing[0].find("1 bare inf/nan/N/A values read as null"), std::string::npos)
      << p.missing[0];
}

TEST(Dialects, OldKinetoControlBytesNaAndCutUtf8InStrings) {
  // What kineto's TensorBoard plugin reads with json.loads(strict=False) and its N/A quoting: a
  // raw control byte and a UTF-8 sequence cut short (a 15-byte thread name) in strings, a bare
  // N/A and nan. A broken file otherwise stays an error, and strict JSON is read as it was.
  const std::string t =
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\x01"
      "b\xc3\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 2, \"args\": {\"q\": N/A, \"o\": "
      "nan, \"s\": \"N/A inf\"}}]}";
  const pc::Profile p = pc::parse_kineto_json(t, "old.json");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].name,
            "a\x01"
            "b\xef\xbf\xbd");
  EXPECT_EQ(p.events[0].args.at("q"), "null");
  EXPECT_EQ(p.events[0].args.at("s"), "N/A inf");  // inside a string: left alone
  EXPECT_NE(p.missing[0].find("2 bare inf/nan/N/A values read as null, 1 raw control bytes in "
                              "strings escaped, 1 bytes of invalid UTF-8"),
            std::string::npos)
      << p.missing[0];
  EXPECT_THROW(pc::parse_kineto_json("{\"traceEvents\": [inf inf]}", "bad.json"),
               placesim::sim::InputError);
  const pc::Profile strict = pc::read_profile(data("a100_alexnet.json"));
  EXPECT_TRUE(std::none_of(strict.missing.begin(), strict.missing.end(), [](const std::string& m) {
    return m.find("not strict JSON") != std::string::npos;
  }));
}

TEST(Dialects, TruncatedRealTraceSaysSoInOneLine) {
  // A real trace cut short (a 100,000-character copy, a process that died writing it): one line
  // that says the file ends inside its JSON, at the byte where it ends.
  const std::string full =
      placesim::sim::read_text_file(data("rocm-mi300x_tracelens_elem-add_excerpt.json"));
  for (const std::size_t cut : {std::size_t{16000}, std::size_t{2000}, full.size() - 2}) {
    try {
      pc::parse_kineto_json(full.substr(0, cut), "cut.json");
      ADD_FAILURE() << "no error at " << cut;
    } catch (const placesim::sim::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("a truncated file"), std::string::npos) << what;
      EXPECT_NE(what.find("byte " + std::to_string(cut + 1)), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(Dialects, RocmMi300xElementwiseExcerptLinksEveryKernel) {
  // Real excerpt (AMD-AGI/TraceLens elem_01, 8x MI300X, rocprofiler-sdk 1.0): hipLaunchKernel
  // with correlation and External id in args, kernels with both and an ac2g flow, a catalog GPU
  // name, python_function events around the ops.
  const pc::Profile p = pc::read_profile(data("rocm-mi300x_tracelens_elem-add_excerpt.json"));
  EXPECT_EQ(p.dialect, "kineto");
  EXPECT_EQ(p.device_name, "AMD Instinct MI300X");
  EXPECT_EQ(p.links.gpu, 10);
  EXPECT_EQ(p.links.gpu_to_op, 10);
  EXPECT_EQ(p.links.external_id_is_correlation, 10);
  EXPECT_FALSE(p.ns_timestamps);
  const auto s = pc::op_samples_from_profile(p, "");
  ASSERT_EQ(s.size(), 10u);
  for (const auto& x : s) {
    EXPECT_EQ(x.signature.op_type, "aten::add");
    EXPECT_GT(x.seconds, 400e-6);
    EXPECT_LT(x.seconds, 440e-6);
  }
}

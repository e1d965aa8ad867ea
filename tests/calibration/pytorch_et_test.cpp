// PyTorch Execution Trace import (calibration/pytorch_et.hpp) on real traces: torch 1.13 CPU
// training steps of a small CNN and a small transformer with their Kineto traces, and a torch
// 2.x CUDA training step (facebookresearch/param's linear_et.json); small hand-written traces
// for the torch 2.x "chakra" dialect (schema 1.0.2-chakra.0.0.4), the record-function-id,
// order and GPU-kernel links, and malformed files.
#include "calibration/pytorch_et.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>

#include "sim/error.hpp"

namespace pc = placesim::calibration;
namespace ps = placesim::sim;

namespace {

const std::string kData = std::string(PLACESIM_TEST_DATA) + "/et/";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("placesim_et_" + name);
  std::ofstream(p) << text;
  return p.string();
}

std::vector<const ps::Op*> ops_of_type(const ps::Graph& g, const std::string& type) {
  std::vector<const ps::Op*> out;
  for (const ps::Op& op : g.ops)
    if (op.type == type) out.push_back(&op);
  return out;
}

bool depends_on(const ps::Graph& g, ps::OpId consumer, ps::OpId producer) {
  std::vector<ps::OpId> stack = {consumer};
  std::vector<bool> seen(g.ops.size(), false);
  while (!stack.empty()) {
    const ps::OpId o = stack.back();
    stack.pop_back();
    if (o == producer) return true;
    if (seen[static_cast<std::size_t>(o)]) continue;
    seen[static_cast<std::size_t>(o)] = true;
    for (const ps::TensorRef& t : g.ops[static_cast<std::size_t>(o)].inputs) stack.push_back(t.op);
    for (ps::OpId c : g.ops[static_cast<std::size_t>(o)].control_inputs) stack.push_back(c);
  }
  return false;
}

}  // namespace

TEST(PytorchEt, Torch113CnnStepWithKineto) {
  const pc::EtImport in = pc::import_pytorch_et(kData + "cpu_torch113_cnn_et.json.gz",
                                                kData + "cpu_torch113_cnn_kineto.json.gz");
  const ps::Graph& g = in.graph;
  EXPECT_EQ(in.schema, "1.0.1");
  EXPECT_EQ(in.ops, 88);
  EXPECT_EQ(in.forward_ops, 17);
  EXPECT_EQ(in.backward_ops, 29);
  EXPECT_EQ(in.update_ops, 42);
  EXPECT_EQ(in.outside_step, 1);  // the profiler's own aten::zeros before ProfilerStep#1
  // Convolutions at their real stride: 3->16 at 32x32 and 16->32 with stride 2 to 8x8, batch 16.
  const auto convs = ops_of_type(g, "aten::conv2d");
  ASSERT_EQ(convs.size(), 2u);
  EXPECT_DOUBLE_EQ(convs[0]->flops.v, 2.0 * 16 * 16 * 32 * 32 * 3 * 9);
  EXPECT_DOUBLE_EQ(convs[1]->flops.v, 2.0 * 16 * 32 * 8 * 8 * 16 * 9);
  EXPECT_EQ(convs[0]->phase, ps::Phase::Forward);
  const auto mm = ops_of_type(g, "aten::linear");
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_DOUBLE_EQ(mm[0]->flops.v, 2.0 * 16 * 512 * 10);
  for (const ps::Op* b : ops_of_type(g, "aten::convolution_backward"))
    EXPECT_EQ(b->phase, ps::Phase::Backward);
  // The first convolution's output feeds the batch norm: a data edge of 16x16x32x32 floats.
  const ps::OpId conv0 = g.op_index(convs[0]->name);
  bool fed = false;
  for (const ps::Op* bn : ops_of_type(g, "aten::batch_norm"))
    for (const ps::TensorRef& t : bn->inputs)
      if (t.op == conv0) {
        fed = true;
        EXPECT_EQ(g.ops[static_cast<std::size_t>(conv0)]
                      .outputs[static_cast<std::size_t>(t.output)]
                      .bytes.v,
                  16 * 16 * 32 * 32 * 4);
      }
  EXPECT_TRUE(fed);
  // Every optimizer update comes after the whole forward pass.
  for (const ps::Op& op : g.ops)
    if (op.phase == ps::Phase::Update && op.type == "aten::add_" && !op.inputs.empty())
      EXPECT_TRUE(depends_on(g, g.op_index(op.name), conv0)) << op.name;
  // Parameters, gradients and momentum buffers: 10,314 parameters x 3 x 4 bytes, plus the batch
  // norms' running statistics (96 floats) and their batch counters (2 int64).
  std::int64_t persistent = 0;
  for (const ps::Op& op : g.ops) persistent += op.persistent.v;
  EXPECT_EQ(persistent, 10314 * 3 * 4 + 96 * 4 + 2 * 8);
  // Kineto: every op tied by order (torch 1.13 writes no record-function ids), CPU-only times.
  EXPECT_EQ(in.link_method, "order");
  EXPECT_EQ(in.linked, in.ops);
  EXPECT_EQ(in.measured_step_ns, 11901000);
  for (const ps::Op& op : g.ops) {
    ASSERT_TRUE(op.measured.has_value()) << op.name;
    EXPECT_EQ(op.device_kind, ps::DeviceKind::Cpu);
  }
  // The ops' host time covers the step but for the Python between the framework calls.
  EXPECT_GT(in.measured_ops_ns, in.measured_step_ns * 8 / 10);
  EXPECT_LE(in.measured_ops_ns, in.measured_step_ns);
}

TEST(PytorchEt, WithoutKinetoOpsArePricedByTheCostModel) {
  const pc::EtImport in = pc::import_pytorch_et(kData + "cpu_torch113_cnn_et.json.gz", "");
  EXPECT_EQ(in.ops, 88);
  EXPECT_EQ(in.link_method, "");
  for (const ps::Op& op : in.graph.ops) {
    EXPECT_FALSE(op.measured.has_value());
    EXPECT_FALSE(op.device_kind.has_value());  // a CPU-only trace constrains nothing
  }
  const auto view = ops_of_type(in.graph, "aten::t");
  ASSERT_FALSE(view.empty());
  EXPECT_EQ(view[0]->bytes_read.v + view[0]->bytes_written.v, 0);  // a view moves nothing
}

TEST(PytorchEt, Torch113TransformerStep) {
  const pc::EtImport in = pc::import_pytorch_et(kData + "cpu_torch113_transformer_et.json.gz",
                                                kData + "cpu_torch113_transformer_kineto.json.gz");
  EXPECT_EQ(in.ops, 308);
  EXPECT_EQ(in.linked, 308);  // 6 events the profiler dropped are skipped by the alignment
  EXPECT_EQ(ops_of_type(in.graph, "aten::embedding").size(), 1u);
  EXPECT_EQ(ops_of_type(in.graph, "aten::bmm").size(), 6u);
  // Adam: one addcdiv_ per parameter tensor, in the update phase.
  const auto adam = ops_of_type(in.graph, "aten::addcdiv_");
  ASSERT_EQ(adam.size(), 15u);
  for (const ps::Op* op : adam) EXPECT_EQ(op->phase, ps::Phase::Update);
  EXPECT_EQ(ops_of_type(in.graph, "aten::embedding_backward")[0]->phase, ps::Phase::Backward);
}

TEST(PytorchEt, Torch2CudaTrainingStepOfLinearLayers) {
  // A real torch 2.x CUDA trace (facebookresearch/param's linear_et.json): 21 Linear(1024,
  // 1024)+ReLU layers on batch 512, softmax, cross-entropy, backward on the autograd thread, SGD.
  const pc::EtImport in = pc::import_pytorch_et(kData + "param_linear_et.json.gz", "");
  const ps::Graph& g = in.graph;
  EXPECT_EQ(in.schema, "1.0.1");
  EXPECT_EQ(in.nodes, 931);
  EXPECT_EQ(in.ops, 320);
  EXPECT_EQ(in.forward_ops, 45);
  EXPECT_EQ(in.backward_ops, 232);
  EXPECT_EQ(in.update_ops, 43);
  EXPECT_EQ(in.link_method, "");
  // aten::linear is the outermost operator; its aten::t and aten::addmm are part of it.
  const auto linear = ops_of_type(g, "aten::linear");
  ASSERT_EQ(linear.size(), 21u);
  EXPECT_TRUE(ops_of_type(g, "aten::addmm").empty());
  for (const ps::Op* op : linear) {
    EXPECT_EQ(op->phase, ps::Phase::Forward);
    EXPECT_EQ(op->dtype, ps::Dtype::F32);
    EXPECT_DOUBLE_EQ(op->flops.v, 2.0 * 512 * 1024 * 1024);  // addmm [512,1024] x [1024,1024]
  }
  // Each layer reads the previous layer's ReLU output through the trace's tensor ids; the
  // weights and biases are parameters, not edges.
  const auto relu = ops_of_type(g, "aten::relu");
  ASSERT_EQ(relu.size(), 21u);
  EXPECT_TRUE(linear[0]->inputs.empty());
  for (std::size_t l = 1; l < linear.size(); ++l) {
    ASSERT_EQ(linear[l]->inputs.size(), 1u) << l;
    EXPECT_EQ(&g.ops[static_cast<std::size_t>(linear[l]->inputs[0].op)], relu[l - 1]) << l;
    ASSERT_EQ(relu[l]->inputs.size(), 1u) << l;
    EXPECT_EQ(&g.ops[static_cast<std::size_t>(relu[l]->inputs[0].op)], linear[l]) << l;
  }
  // Backward: two mm per layer (input and weight gradients) but the first layer's input
  // gradient, which autograd does not compute.
  const auto mm = ops_of_type(g, "aten::mm");
  ASSERT_EQ(mm.size(), 41u);
  for (const ps::Op* op : mm) {
    EXPECT_EQ(op->phase, ps::Phase::Backward);
    EXPECT_DOUBLE_EQ(op->flops.v, 2.0 * 512 * 1024 * 1024);
  }
  const auto step = ops_of_type(g, "aten::_foreach_add_");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0]->phase, ps::Phase::Update);
  // Every tensor is on cuda:0, so no op is pinned to the host; without a Kineto trace none is
  // timed either (the cost model prices them).
  for (const ps::Op& op : g.ops) {
    EXPECT_NE(op.device_kind, ps::DeviceKind::Cpu) << op.name;
    EXPECT_FALSE(op.measured.has_value()) << op.name;
  }
}

TEST(PytorchEt, Torch2CudaResnetStemExcerptTakesTheConvolutionsOwnStrideAndPadding) {
  // Excerpt of facebookresearch/param's resnet_et.json (torch 2.x ExecutionTraceObserver, schema
  // 1.0.1, CUDA, batch 128): the input and label copies to cuda:0 ("<None>" arguments), an empty
  // Optimizer.zero_grad label, the stem aten::conv2d (7x7, stride 2, padding 3) over its nested
  // convolution / _convolution / cudnn_convolution (a "Tensor(nullptr (uninitialized))" bias),
  // a step counter aten::add_ of a CPU tensor into a CUDA one, and the self-parented process node.
  const pc::EtImport in = pc::import_pytorch_et(kData + "param_resnet_et_excerpt.json", "");
  EXPECT_EQ(in.schema, "1.0.1");
  EXPECT_EQ(in.nodes, 16);
  EXPECT_EQ(in.ops, 4);
  EXPECT_EQ(in.nested, 9);
  const auto conv = ops_of_type(in.graph, "aten::conv2d");
  ASSERT_EQ(conv.size(), 1u);
  // 2 x N x K x (112 x 112 outputs, from stride 2 and padding 3) x C x 7 x 7.
  EXPECT_DOUBLE_EQ(conv[0]->flops.v, 2.0 * 128 * 64 * 112 * 112 * 3 * 7 * 7);
  EXPECT_EQ(conv[0]->dtype, ps::Dtype::F32);
  ASSERT_EQ(conv[0]->inputs.size(), 1u);  // the image copied to the GPU by aten::to
  EXPECT_EQ(in.graph.ops[static_cast<std::size_t>(conv[0]->inputs[0].op)].type, "aten::to");
  for (const ps::Op& op : in.graph.ops) EXPECT_NE(op.device_kind, ps::DeviceKind::Cpu) << op.name;
}

TEST(PytorchEt, ChakraDialectLinksByRecordFunctionIdOrByOrder) {
  // A hand-written torch 2.x "chakra" ET (nested inputs/outputs, an attrs list, ctrl_deps) and
  // a Kineto trace whose CPU ops carry the ET's rf_ids: mm -> relu (clamp_min inside) -> sum.
  const std::string et = kData + "chakra_handwritten_et.json";
  const std::string kineto = kData + "chakra_handwritten_kineto.json";
  const pc::EtImport in = pc::import_pytorch_et(et, kineto);
  EXPECT_EQ(in.schema, "1.0.2-chakra.0.0.4");
  EXPECT_EQ(in.nodes, 7);
  ASSERT_EQ(in.ops, 3);
  EXPECT_EQ(in.nested, 1);
  EXPECT_EQ(in.link_method, "record-function-id");
  EXPECT_EQ(in.linked, 3);
  EXPECT_EQ(in.gpu_timed, 3);
  EXPECT_EQ(in.measured_step_ns, 200000);
  const ps::Graph& g = in.graph;
  EXPECT_EQ(g.ops[0].type, "aten::mm");
  EXPECT_DOUBLE_EQ(g.ops[0].flops.v, 2.0 * 256 * 256 * 256);
  EXPECT_EQ(g.ops[0].measured->ns, 25000);  // its kernel, not the 40 us on the host
  EXPECT_EQ(g.ops[1].type, "aten::relu");
  EXPECT_EQ(g.ops[1].measured->ns, 4000);  // the kernel its nested clamp_min launched
  EXPECT_EQ(g.ops[2].measured->ns, 6000);
  for (const ps::Op& op : g.ops) EXPECT_EQ(op.device_kind, ps::DeviceKind::Gpu) << op.name;
  ASSERT_EQ(g.ops[2].inputs.size(), 1u);
  EXPECT_EQ(g.ops[2].inputs[0].op, 1);
  ASSERT_EQ(g.ops[1].inputs.size(), 1u);
  EXPECT_EQ(g.ops[1].inputs[0].op, 0);

  // A profiler that wrote "Record function id": 0 (an observer not registered to it): tied by
  // order, to the same events.
  std::ifstream f(kineto);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (std::size_t p = 0; (p = text.find("\"Record function id\": ", p)) != std::string::npos;) {
    p += 22;
    const std::size_t e = text.find_first_not_of("0123456789", p);
    text.replace(p, e - p, "0");
  }
  const pc::EtImport zero = pc::import_pytorch_et(et, write_temp("chakra_kineto_zero.json", text));
  EXPECT_EQ(zero.link_method, "order");
  EXPECT_EQ(zero.linked, 3);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(zero.graph.ops[i].measured->ns, g.ops[i].measured->ns) << i;
}

TEST(PytorchEt, RealChakraDialectPairWithZeroRecordFunctionIds) {
  // A real torch 2.x pair (2024-04-09, schema 1.0.2-chakra.0.0.4, CPU): two 1024x1024 numpy
  // arrays to float tensors, then torch.matmul. The profiler wrote "Record function id": 0 on
  // every event, the process node is its own ctrl_deps parent, and the top-level ops name a
  // parent (3) that is not in the file: read as they are, tied by order.
  const pc::EtImport in = pc::import_pytorch_et(kData + "cpu_torch2-2024_matmul1024_et.json",
                                                kData + "cpu_torch2-2024_matmul1024_kineto.json");
  EXPECT_EQ(in.schema, "1.0.2-chakra.0.0.4");
  EXPECT_EQ(in.nodes, 21);
  ASSERT_EQ(in.ops, 7);
  EXPECT_EQ(in.link_method, "order");
  EXPECT_EQ(in.linked, 7);
  EXPECT_EQ(in.measured_step_ns, 2674000);  // ProfilerStep#10
  const ps::Op& mm = in.graph.ops.back();
  EXPECT_EQ(mm.type, "aten::matmul");
  EXPECT_DOUBLE_EQ(mm.flops.v, 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(mm.measured->ns, 1501000);
  ASSERT_EQ(mm.inputs.size(), 2u);  // the two converted tensors, through their detach_
  EXPECT_EQ(in.graph.ops[1].measured->ns, 189000);  // the first aten::to (double -> float)
  for (const ps::Op& op : in.graph.ops) EXPECT_EQ(op.device_kind, ps::DeviceKind::Cpu) << op.name;
}

namespace {

// One op on the GPU: aten::mm (record-function id 5) launching one 30 us kernel.
constexpr const char* kGpuEt = R"J({"schema": "1.0.1", "nodes": [
  {"name": "[pytorch|profiler|execution_graph|thread]", "id": 2, "rf_id": 0, "parent": 1, "tid": 1,
   "scope": 7, "op_schema": "", "inputs": [], "input_shapes": [], "input_types": [],
   "outputs": [], "output_shapes": [], "output_types": []},
  {"name": "aten::mm", "id": 3, "rf_id": 5, "parent": 2, "tid": 1, "scope": 0,
   "op_schema": "aten::mm(Tensor self, Tensor mat2) -> Tensor",
   "inputs": [[10,11,0,4096,4,"cuda:0"],[12,13,0,4096,4,"cuda:0"]],
   "input_shapes": [[64,64],[64,64]], "input_types": ["Tensor(c10::Half)","Tensor(c10::Half)"],
   "outputs": [[14,15,0,4096,2,"cuda:0"]], "output_shapes": [[64,64]],
   "output_types": ["Tensor(c10::Half)"]},
  {"name": "aten::relu_", "id": 4, "rf_id": 6, "parent": 2, "tid": 1, "scope": 0,
   "op_schema": "aten::relu_(Tensor(a!) self) -> Tensor(a!)",
   "inputs": [[14,15,0,4096,2,"cuda:0"]], "input_shapes": [[64,64]],
   "input_types": ["Tensor(c10::Half)"], "outputs": [[14,15,0,4096,2,"cuda:0"]],
   "output_shapes": [[64,64]], "output_types": ["Tensor(c10::Half)"]},
  {"name": "[pytorch|profiler|execution_graph|process]", "id": 1, "rf_id": 0, "parent": 1,
   "tid": 0, "scope": 7, "op_schema": ""}]})J";
constexpr const char* kGpuKineto = R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu_", "pid": 9, "tid": 9, "ts": 300, "dur": 20,
   "args": {"External id": 2, "Record function id": 6}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 100, "dur": 50,
   "args": {"External id": 1, "Record function id": 5}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 110,
   "dur": 5, "args": {"correlation": 7, "External id": 1}},
  {"ph": "X", "cat": "kernel", "name": "sm80_gemm", "pid": 0, "tid": 7, "ts": 200, "dur": 30,
   "args": {"correlation": 7, "External id": 1, "device": 0, "stream": 7}}]})J";

}  // namespace

TEST(PytorchEt, RecordFunctionIdsAndGpuKernels) {
  const pc::EtImport in = pc::import_pytorch_et(write_temp("gpu_et.json", kGpuEt),
                                                write_temp("gpu_kineto.json", kGpuKineto));
  ASSERT_EQ(in.ops, 2);
  EXPECT_EQ(in.link_method, "record-function-id");
  EXPECT_EQ(in.linked, 2);
  EXPECT_EQ(in.gpu_timed, 1);
  const ps::Op& mm = in.graph.ops[0];
  EXPECT_EQ(mm.type, "aten::mm");
  EXPECT_EQ(mm.dtype, ps::Dtype::F16);
  EXPECT_EQ(mm.measured->ns, 30000);  // the kernel's GPU time, not the 50 us on the host
  EXPECT_EQ(mm.device_kind, ps::DeviceKind::Gpu);
  EXPECT_DOUBLE_EQ(mm.flops.v, 2.0 * 64 * 64 * 64);
  // relu_ writes mm's result in place: a data edge, and no GPU work of its own.
  const ps::Op& relu = in.graph.ops[1];
  ASSERT_EQ(relu.inputs.size(), 1u);
  EXPECT_EQ(relu.inputs[0].op, 0);
  EXPECT_EQ(relu.measured->ns, 0);
}

TEST(PytorchEt, OfSeveralStepsTheFirstIsTheGraph) {
  const std::string et = write_temp("two_steps.json", R"J({"schema": "1.0.1", "nodes": [
    {"name": "ProfilerStep#8", "id": 5, "rf_id": 4, "parent": 2, "op_schema": ""},
    {"name": "aten::relu", "id": 6, "rf_id": 5, "parent": 5, "op_schema": "aten::relu(Tensor self) -> Tensor",
     "inputs": [[9,10,0,16,4,"cpu"]], "input_shapes": [[16]], "input_types": ["Tensor(float)"],
     "outputs": [[11,12,0,16,4,"cpu"]], "output_shapes": [[16]], "output_types": ["Tensor(float)"]},
    {"name": "ProfilerStep#7", "id": 3, "rf_id": 1, "parent": 2, "op_schema": ""},
    {"name": "aten::neg", "id": 4, "rf_id": 2, "parent": 3, "op_schema": "aten::neg(Tensor self) -> Tensor",
     "inputs": [[9,10,0,16,4,"cpu"]], "input_shapes": [[16]], "input_types": ["Tensor(float)"],
     "outputs": [[13,14,0,16,4,"cpu"]], "output_shapes": [[16]], "output_types": ["Tensor(float)"]},
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 2, "rf_id": 0, "parent": 1, "op_schema": ""}]})J");
  const pc::EtImport in = pc::import_pytorch_et(et, "");
  ASSERT_EQ(in.ops, 1);
  EXPECT_EQ(in.graph.ops[0].type, "aten::neg");
  EXPECT_EQ(in.outside_step, 1);
  ASSERT_FALSE(in.notes.empty());
  EXPECT_NE(in.notes[0].find("ProfilerStep#7"), std::string::npos) << in.notes[0];
}

TEST(PytorchEt, Torch211CudaBackwardOnTheAutogradThreadIsPartOfTheStep) {
  // A real torch 2.11 CUDA step of GPT-2 124M (H200, bf16, SDPA, fused AdamW): the autograd
  // engine ran the backward on its device thread (ET tid 2), under a second thread root, outside
  // the main thread's ProfilerStep#1 label. Its 766 operators belong to the step: their Kineto
  // events lie inside ProfilerStep#1's.
  const std::string et = kData + "h200_torch211_gpt2-124m_sdpa_bf16_b8_et.json.gz";
  const pc::EtImport in =
      pc::import_pytorch_et(et, kData + "h200_torch211_gpt2-124m_sdpa_bf16_b8_kineto.json.gz");
  const ps::Graph& g = in.graph;
  EXPECT_EQ(in.schema, "1.1.1-chakra.0.0.4");
  EXPECT_EQ(in.nodes, 3788);
  EXPECT_EQ(in.ops, 985);  // 219 before, the backward dropped as "outside ProfilerStep#1"
  EXPECT_EQ(in.forward_ops, 217);
  EXPECT_EQ(in.backward_ops, 766);
  EXPECT_EQ(in.update_ops, 2);
  EXPECT_EQ(in.other_threads, 766);
  EXPECT_EQ(in.outside_step, 0);
  EXPECT_EQ(in.link_method, "record-function-id");
  EXPECT_EQ(in.linked, 985);
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_NE(in.notes[0].find("766 operators of other threads (tid 2"), std::string::npos)
      << in.notes[0];
  // Every aten::mm of the trace is a backward matmul (the forward's are inside aten::linear):
  // 98 of them, each timed by its GPU kernels.
  const auto mm = ops_of_type(g, "aten::mm");
  ASSERT_EQ(mm.size(), 98u);
  for (const ps::Op* op : mm) {
    EXPECT_EQ(op->phase, ps::Phase::Backward) << op->name;
    EXPECT_EQ(op->device_kind, ps::DeviceKind::Gpu) << op->name;
    ASSERT_TRUE(op->measured.has_value()) << op->name;
    EXPECT_GT(op->measured->ns, 0) << op->name;
  }
  // The ops' own time is now the whole step's GPU work (forward, backward, fused AdamW): the
  // 618 kernels, memsets and copies of the Kineto trace, 33.66 ms (12.95 ms before).
  EXPECT_NEAR(static_cast<double>(in.measured_ops_ns) * 1e-6, 33.661, 0.001);
  // The autograd engine's dependencies: each attention backward reads what its forward saved,
  // and the fused AdamW reads every gradient, so it follows every backward matmul.
  const auto sdpa_bwd = ops_of_type(g, "aten::_scaled_dot_product_cudnn_attention_backward");
  ASSERT_EQ(sdpa_bwd.size(), 12u);
  for (const ps::Op* op : sdpa_bwd) {
    const bool reads_forward =
        std::any_of(op->inputs.begin(), op->inputs.end(), [&](const ps::TensorRef& t) {
          return g.ops[static_cast<std::size_t>(t.op)].phase == ps::Phase::Forward;
        });
    EXPECT_TRUE(reads_forward) << op->name;
  }
  // The attention's dropout_p (0.1) reaches the fused SDPA ops, forward and backward, as their
  // in-kernel dropout; no other op carries one.
  for (const ps::Op* op : sdpa_bwd) EXPECT_EQ(op->dropout, 0.1) << op->name;
  const auto sdpa_fwd = ops_of_type(g, "aten::scaled_dot_product_attention");
  ASSERT_EQ(sdpa_fwd.size(), 12u);
  for (const ps::Op* op : sdpa_fwd) EXPECT_EQ(op->dropout, 0.1) << op->name;
  EXPECT_EQ(
      std::count_if(g.ops.begin(), g.ops.end(), [](const ps::Op& o) { return o.dropout > 0; }), 24);
  const auto adamw = ops_of_type(g, "aten::_fused_adamw_");
  ASSERT_EQ(adamw.size(), 1u);
  EXPECT_EQ(adamw[0]->phase, ps::Phase::Update);
  const auto adamw_id = static_cast<ps::OpId>(adamw[0] - g.ops.data());
  for (const ps::Op* op : mm)
    EXPECT_TRUE(depends_on(g, adamw_id, static_cast<ps::OpId>(op - g.ops.data()))) << op->name;

  // Without the Kineto trace: the trace holds a single ProfilerStep#N label, so the other
  // thread's operators can only belong to it.
  const pc::EtImport bare = pc::import_pytorch_et(et, "");
  EXPECT_EQ(bare.ops, 985);
  EXPECT_EQ(bare.backward_ops, 766);
  EXPECT_EQ(bare.data_edges, in.data_edges);
  EXPECT_EQ(bare.control_edges, in.control_edges);
  ASSERT_EQ(bare.notes.size(), 1u);
  EXPECT_NE(bare.notes[0].find("as the trace holds no other step"), std::string::npos)
      << bare.notes[0];
}

TEST(PytorchEt, Torch211FusedAdamWWritesItsListArgumentsInPlace) {
  // torch 2.x's `_fused_adamw_` returns nothing; its schema marks the parameters, gradients and
  // both moments `Tensor(a!)[]`, and the step counters' `_foreach_add_` its list `Tensor(a!)[]`.
  // Those lists are the model state: read before they are written, then updated in place, so
  // they stay resident all step. GPT-2 124M as the rig ran it (bf16, untied head): 163,009,536
  // parameters, and as many of each moment, 2 bytes each, plus 137 F32 step counters (0 before:
  // nothing was seen written).
  const pc::EtImport in =
      pc::import_pytorch_et(kData + "h200_torch211_gpt2-124m_sdpa_bf16_b8_et.json.gz", "");
  std::int64_t persistent = 0;
  for (const ps::Op& op : in.graph.ops) persistent += op.persistent.v;
  EXPECT_EQ(persistent, 163009536LL * 2 * 3 + 137 * 4);
  // The update writes what it read: one output per parameter, gradient and moment, as bf16.
  const auto adamw = ops_of_type(in.graph, "aten::_fused_adamw_");
  ASSERT_EQ(adamw.size(), 1u);
  EXPECT_EQ(adamw[0]->outputs.size(), 137u * 4);
  for (const ps::TensorOut& t : adamw[0]->outputs) EXPECT_EQ(t.dtype, ps::Dtype::BF16) << t.name;
}

TEST(PytorchEt, OtherThreadsOpsJoinTheStepTheyRanIn) {
  // Two steps on thread 1; thread 2 ran aten::abs during ProfilerStep#7 and aten::exp during
  // ProfilerStep#8 (Kineto times, microseconds).
  const std::string et = write_temp("threads_et.json", R"J({"schema": "1.0.1", "nodes": [
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 2, "rf_id": 0, "parent": 1, "tid": 1, "op_schema": ""},
    {"name": "ProfilerStep#7", "id": 3, "rf_id": 1, "parent": 2, "tid": 1, "op_schema": ""},
    {"name": "aten::neg", "id": 4, "rf_id": 2, "parent": 3, "tid": 1, "op_schema": "aten::neg(Tensor self) -> Tensor",
     "inputs": [[9,10,0,16,4,"cpu"]], "input_shapes": [[16]], "input_types": ["Tensor(float)"],
     "outputs": [[13,14,0,16,4,"cpu"]], "output_shapes": [[16]], "output_types": ["Tensor(float)"]},
    {"name": "ProfilerStep#8", "id": 5, "rf_id": 4, "parent": 2, "tid": 1, "op_schema": ""},
    {"name": "aten::relu", "id": 6, "rf_id": 5, "parent": 5, "tid": 1, "op_schema": "aten::relu(Tensor self) -> Tensor",
     "inputs": [[9,10,0,16,4,"cpu"]], "input_shapes": [[16]], "input_types": ["Tensor(float)"],
     "outputs": [[11,12,0,16,4,"cpu"]], "output_shapes": [[16]], "output_types": ["Tensor(float)"]},
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 7, "rf_id": 0, "parent": 1, "tid": 2, "op_schema": ""},
    {"name": "aten::abs", "id": 8, "rf_id": 3, "parent": 7, "tid": 2, "op_schema": "aten::abs(Tensor self) -> Tensor",
     "inputs": [[13,14,0,16,4,"cpu"]], "input_shapes": [[16]], "input_types": ["Tensor(float)"],
     "outputs": [[15,16,0,16,4,"cpu"]], "output_shapes": [[16]], "output_types": ["Tensor(float)"]},
    {"name": "aten::exp", "id": 9, "rf_id": 6, "parent": 7, "tid": 2, "op_schema": "aten::exp(Tensor self) -> Tensor",
     "inputs": [[11,12,0,16,4,"cpu"]], "input_shapes": [[16]], "input_types": ["Tensor(float)"],
     "outputs": [[17,18,0,16,4,"cpu"]], "output_shapes": [[16]], "output_types": ["Tensor(float)"]},
    {"name": "[pytorch|profiler|execution_graph|process]", "id": 1, "rf_id": 0, "parent": 1, "tid": 0, "op_schema": ""}]})J");
  const std::string kineto = write_temp("threads_kineto.json", R"J({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 9, "tid": 9, "ts": 0, "dur": 100, "args": {"Record function id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::neg", "pid": 9, "tid": 9, "ts": 10, "dur": 10, "args": {"Record function id": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::abs", "pid": 9, "tid": 12, "ts": 30, "dur": 10, "args": {"Record function id": 3}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 9, "tid": 9, "ts": 100, "dur": 100, "args": {"Record function id": 4}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 9, "tid": 9, "ts": 110, "dur": 10, "args": {"Record function id": 5}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::exp", "pid": 9, "tid": 12, "ts": 150, "dur": 10, "args": {"Record function id": 6}}]})J");
  // By time: abs ran inside ProfilerStep#7 and reads neg's result; exp ran in the next step.
  const pc::EtImport in = pc::import_pytorch_et(et, kineto);
  ASSERT_EQ(in.ops, 2);
  EXPECT_EQ(in.graph.ops[0].type, "aten::neg");
  EXPECT_EQ(in.graph.ops[1].type, "aten::abs");
  ASSERT_EQ(in.graph.ops[1].inputs.size(), 1u);
  EXPECT_EQ(in.graph.ops[1].inputs[0].op, 0);
  EXPECT_EQ(in.graph.ops[1].measured->ns, 10000);
  EXPECT_EQ(in.other_threads, 1);
  EXPECT_EQ(in.outside_step, 2);  // relu (ProfilerStep#8) and exp
  // Without times, a trace of two steps does not say which one thread 2 worked for.
  const pc::EtImport bare = pc::import_pytorch_et(et, "");
  ASSERT_EQ(bare.ops, 1);
  EXPECT_EQ(bare.other_threads, 0);
  EXPECT_EQ(bare.outside_step, 3);
}

TEST(PytorchEt, MalformedTracesAreOneLineInputErrors) {
  const auto fails = [](const std::string& name, const std::string& text,
                        const std::string& expect) {
    const std::string path = write_temp(name, text);
    try {
      pc::import_pytorch_et(path, "");
      ADD_FAILURE() << name << ": no error";
    } catch (const ps::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(expect), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  fails("not_json.json", "{\"nodes\": [", "parse error");
  fails("no_nodes.json", "{\"schema\": \"1.0.1\"}", "nodes");
  fails("nodes_object.json", "{\"nodes\": {}}", "a list of nodes");
  fails("no_id.json", "{\"nodes\": [{\"name\": \"aten::mm\"}]}", "nodes[0]");
  fails("dup_id.json",
        R"J({"nodes": [{"id": 3, "name": "aten::mm", "op_schema": "x"},
                      {"id": 3, "name": "aten::add", "op_schema": "y"}]})J",
        "nodes[1].id");
  fails("bad_dim.json",
        R"J({"nodes": [{"id": 3, "name": "aten::relu", "op_schema": "x", "parent": 1,
            "inputs": [[5,6,0,4,4,"cpu"]], "input_shapes": [[-4]],
            "input_types": ["Tensor(float)"]}]})J",
        "dimensions from 0 to 2^40");
  fails("cycle.json",
        R"J({"nodes": [{"id": 3, "name": "a", "parent": 4}, {"id": 4, "name": "b", "parent": 3},
                      {"id": 5, "name": "aten::mm", "op_schema": "x", "parent": 3}]})J",
        "cycle");
  fails("no_ops.json", R"J({"nodes": [{"id": 3, "name": "## step ##", "parent": 1}]})J",
        "at least one operator");
  fails("bad_attrs.json", R"J({"nodes": [{"id": 3, "name": "aten::mm", "attrs": 7}]})J",
        "nodes[0].attrs");
}

TEST(PytorchEt, CalibrationSamplesAreTheGraphsOps) {
  // `calibrate --profile K --et ET`: one sample per timed op, keyed by the op's own signature, so
  // that the calibration prices the imported graph's ops exactly.
  const pc::EtImport in = pc::import_pytorch_et(kData + "cpu_torch113_cnn_et.json.gz",
                                                kData + "cpu_torch113_cnn_kineto.json.gz");
  const std::vector<pc::OpSample> s = pc::op_samples_from_et(in, "cpu0");
  int timed = 0;
  for (const ps::Op& op : in.graph.ops) timed += op.measured && op.measured->ns > 0;
  ASSERT_EQ(static_cast<int>(s.size()), timed);
  for (const pc::OpSample& x : s) EXPECT_EQ(x.device, "cpu0");
  const pc::CalibrationFit fit = pc::fit_calibration(s, "cnn");
  ASSERT_TRUE(fit.calibration.devices.count("cpu0"));
  const ps::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  const auto convs = ops_of_type(in.graph, "aten::conv2d");
  ASSERT_FALSE(convs.empty());
  EXPECT_EQ(s.front().signature.key(), in.graph.ops.front().signature->key());
  ASSERT_TRUE(dc.exact.count(convs[0]->signature->key())) << convs[0]->signature->key();
  EXPECT_EQ(dc.exact.at(convs[0]->signature->key()).ns, convs[0]->measured->ns);
  EXPECT_EQ(pc::calibration_key("NVIDIA H200", ""), "H200");
  EXPECT_EQ(pc::calibration_key("", ""), "cpu");
}

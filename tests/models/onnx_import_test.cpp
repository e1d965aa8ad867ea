// ONNX import of real torchvision exports (tests/data/onnx, made by generate.py there):
// parameter counts against torchvision's own sum(p.numel()), multiply-adds against torchvision's
// published table, and the derived training step.
#include "models/onnx_import.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <map>

#include "models/grouping.hpp"
#include "models/registry.hpp"
#include "sim/catalog.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"

namespace placesim::models {
namespace {

const std::string kDir = PLACESIM_TEST_DATA "/onnx/";

std::int64_t params_of(const sim::Graph& g) {
  std::int64_t n = 0;
  for (const auto& op : g.ops) {
    if (op.type == "VariableV2") n += num_elements(op.outputs.at(0).shape);
  }
  return n;
}

double forward_macs(const sim::Graph& g) {
  double f = 0;
  for (const auto& op : g.ops) {
    if (op.phase == sim::Phase::Forward &&
        (op.type == "Conv" || op.type == "Gemm" || op.type == "MatMul")) {
      f += op.flops.v / 2;
    }
  }
  return f;
}

struct Expected {
  std::int64_t params;  // torchvision sum(p.numel()), printed by generate.py
  double macs;          // torchvision's model table ("GFLOPS" = multiply-adds), 224x224
};

const std::map<std::string, Expected> kModels = {
    {"resnet18", {11689512, 1.81e9}},
    {"mobilenet_v2", {3504872, 0.30e9}},
    {"squeezenet1_0", {1248424, 0.82e9}},
};

TEST(OnnxImport, ParametersAndMacsMatchTorchvision) {
  for (const auto& [name, want] : kModels) {
    SCOPED_TRACE(name);
    const sim::Graph g = import_onnx(kDir + name + ".onnx", {});
    EXPECT_EQ(params_of(g), want.params);
    EXPECT_EQ(g.metadata.at("parameters"), std::to_string(want.params));
    // Conv biases add one FLOP per output element, hence a little above the table.
    EXPECT_NEAR(forward_macs(g), want.macs, 0.05 * want.macs);
    EXPECT_EQ(g.metadata.count("unknown_ops"), 0u);
    for (const auto& op : g.ops) {
      EXPECT_NE(op.phase, sim::Phase::Backward);
      if (op.phase == sim::Phase::Forward) {
        EXPECT_TRUE(op.signature.has_value());
        EXPECT_FALSE(op.outputs.empty());
      }
    }
  }
}

TEST(OnnxImport, ShapesFromInference) {
  const sim::Graph g = import_onnx(kDir + "resnet18.onnx", {.batch = 4});
  const sim::OpId fc = g.op_index("/fc/Gemm");
  ASSERT_GE(fc, 0);
  EXPECT_EQ(g.ops[static_cast<std::size_t>(fc)].outputs.at(0).shape, (Shape{4, 1000}));
  EXPECT_EQ(g.ops[static_cast<std::size_t>(fc)].layer, "fc");
  const sim::OpId conv = g.op_index("/layer1/layer1.0/conv1/Conv");
  ASSERT_GE(conv, 0);
  EXPECT_EQ(g.ops[static_cast<std::size_t>(conv)].outputs.at(0).shape, (Shape{4, 64, 56, 56}));
  // 2 x N x Cout x H x W x Cin x 3 x 3
  EXPECT_DOUBLE_EQ(g.ops[static_cast<std::size_t>(conv)].flops.v, 2.0 * 4 * 64 * 56 * 56 * 64 * 9);
  EXPECT_EQ(g.ops[static_cast<std::size_t>(conv)].bytes_written.v, 4LL * 4 * 64 * 56 * 56);
  const sim::Graph g1 = import_onnx(kDir + "resnet18.onnx", {});
  EXPECT_NEAR(forward_macs(g), 4 * forward_macs(g1), 1e-6 * forward_macs(g));
}

TEST(OnnxImport, TrainingAddsBackwardAndColocatedUpdates) {
  const sim::Graph g = import_onnx(kDir + "mobilenet_v2.onnx",
                                   {.training = true, .batch = 2, .optimizer = Optimizer::Adam});
  std::map<std::string, int> vars, updates;
  double fwd = 0, bwd = 0;
  for (const auto& op : g.ops) {
    if (op.type == "VariableV2") ++vars[op.group];
    if (op.phase == sim::Phase::Update) {
      ++updates[op.group];
      EXPECT_EQ(op.type, "ApplyAdam");
    }
    if (op.phase == sim::Phase::Forward) fwd += op.flops.v;
    if (op.phase == sim::Phase::Backward) bwd += op.flops.v;
  }
  EXPECT_EQ(vars, updates);
  EXPECT_EQ(static_cast<int>(vars.size()), 158);  // conv weights, BN scales and shifts, fc w and b
  // Backward is about twice the forward (two products per convolution / GEMM).
  EXPECT_GT(bwd, 1.6 * fwd);
  EXPECT_LT(bwd, 2.4 * fwd);
  const sim::OpId conv = g.op_index("/features/features.1/conv/conv.0/conv.0.0/Conv");
  ASSERT_GE(conv, 0);
  int grads = 0;
  for (const auto& op : g.ops) {
    grads +=
        op.phase == sim::Phase::Backward && op.group == g.ops[static_cast<std::size_t>(conv)].group;
  }
  EXPECT_EQ(grads, 2);  // input and filter gradients, colocated with the convolution
  const Grouping gr = group_graph(g, 64);
  EXPECT_LE(gr.size(), 64);
}

TEST(OnnxImport, ThroughLoadGraphAndJsonRoundTrip) {
  const sim::Graph g = load_graph(kDir + "squeezenet1_0.onnx", "training,batch=2");
  EXPECT_GT(g.num_ops(), 200);
  const std::string text = sim::graph_to_json(g);
  EXPECT_EQ(sim::graph_to_json(sim::parse_graph_json(text, "squeezenet")), text);
  EXPECT_THROW(load_graph(kDir + "squeezenet1_0.onnx", "layers=2"), sim::InputError);
}

// An ONNX model's convolutions are NCHW (PyTorch's default memory format): every forward and
// backward convolution says so, and survives the JSON round trip; `layout=nhwc` states that the
// framework ran channels_last; anything else is refused naming the key.
TEST(OnnxImport, ConvolutionsAreNchwUnlessToldChannelsLast) {
  const sim::Graph g = load_graph(kDir + "squeezenet1_0.onnx", "training,batch=2");
  const sim::Graph nhwc = load_graph(kDir + "squeezenet1_0.onnx", "training,batch=2,layout=nhwc");
  int convs = 0;
  int channel_ops = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const bool conv = sim::math_kind_of(g.ops[i].type) == sim::MathKind::Conv;
    convs += conv ? 1 : 0;
    // The channel-wise ops (the global pool and its gradient: one value per channel of a map)
    // carry the layout too, which prices them channels-last on Hopper (cost_model.cpp,
    // channelwise_time); no other op does.
    const bool pool = g.ops[i].type.rfind("GlobalAveragePool", 0) == 0;
    channel_ops += pool ? 1 : 0;
    EXPECT_EQ(g.ops[i].layout, conv || pool ? std::optional(sim::Layout::Nchw) : std::nullopt)
        << g.ops[i].name;
    EXPECT_EQ(nhwc.ops[i].layout, conv || pool ? std::optional(sim::Layout::Nhwc) : std::nullopt)
        << nhwc.ops[i].name;
  }
  EXPECT_EQ(channel_ops, 2);
  // 26 convolutions, each with its filter gradient, all but the first (the image's) its input's.
  EXPECT_EQ(convs, 3 * 26 - 1);
  EXPECT_EQ(g.metadata.at("layout"), "nchw");
  EXPECT_EQ(nhwc.metadata.at("layout"), "nhwc");
  const sim::Graph back = sim::parse_graph_json(sim::graph_to_json(g), "squeezenet");
  for (std::size_t i = 0; i < g.ops.size(); ++i) EXPECT_EQ(back.ops[i].layout, g.ops[i].layout);
  EXPECT_THROW(load_graph(kDir + "squeezenet1_0.onnx", "layout=nchwc"), sim::InputError);
  // The built-in CNNs are channels-last and state no layout unless asked.
  const sim::Graph rn = load_graph("resnet50", "batch=2");
  for (const auto& op : rn.ops) EXPECT_FALSE(op.layout.has_value()) << op.name;
  const sim::Graph rn_nchw = load_graph("resnet50", "batch=2,layout=nchw");
  int marked = 0;
  for (const auto& op : rn_nchw.ops) marked += op.layout == sim::Layout::Nchw ? 1 : 0;
  EXPECT_GT(marked, 3 * 50);
}

// The same network, ResNet-50 run NCHW: the built-in graph with `layout=nchw` prices its
// BatchNorms (forward and backward, one block per channel) as the ONNX export does, on an A100
// and an H100; without it the built-in's channels-last BatchNorms stream at the device's rate.
TEST(OnnxImport, BuiltInResnet50AsNchwPricesBatchNormLikeTheOnnxGraph) {
  const auto norm_time = [](const sim::Graph& g, const sim::Device& d) {
    const sim::KernelCostModel km;
    double s = 0;
    for (const auto& op : g.ops)
      if (op.type.find("BatchNorm") != std::string::npos) s += km.estimate(op, d).time.seconds();
    return s;
  };
  const sim::Graph onnx =
      load_graph(kDir + "resnet50.onnx", "training,optimizer=momentum,batch=32");
  const sim::Graph nchw = load_graph("resnet50", "batch=32,layout=nchw");
  const sim::Graph nhwc = load_graph("resnet50", "batch=32");
  for (const char* gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB"}) {
    const sim::DeviceSpec* spec = sim::find_device_model(gpu);
    ASSERT_NE(spec, nullptr) << gpu;
    const sim::Device d{.name = "gpu0", .spec = *spec};
    const double reference = norm_time(onnx, d);
    ASSERT_GT(reference, 0) << gpu;
    // The ONNX graph's forward BatchNorms also pay PyTorch's counter increment (53 x 2 us).
    EXPECT_NEAR(norm_time(nchw, d) / reference, 1.0, 0.03) << gpu;
    EXPECT_LT(norm_time(nhwc, d) / reference, 0.8) << gpu;
  }
}

TEST(OnnxImport, BadFilesAreInputErrors) {
  EXPECT_THROW(import_onnx(kDir + "missing.onnx", {}), sim::InputError);
  const std::string junk = ::testing::TempDir() + "junk.onnx";
  {
    std::ofstream f(junk, std::ios::binary);
    f << "this is not a protobuf \x01\x02\x03\xff\xff\xff";
  }
  EXPECT_THROW(import_onnx(junk, {}), sim::InputError);
}

TEST(OnnxImport, TransformerEveryWeightTrains) {
  // A 2-layer torch.nn.TransformerEncoder with an embedding and a linear head (generate.py):
  // weights reached through Gather (embedding), Transpose -> MatMul (attention, feed-forward),
  // Gemm and Add (biases). torch's sum(p.numel()) = 164468, printed by generate.py. The *_params
  // file keeps the 27 weights as initializers (export_params=True), the other as graph inputs.
  for (const char* file : {"transformer_encoder.onnx", "transformer_encoder_params.onnx"}) {
    SCOPED_TRACE(file);
    const sim::Graph g = import_onnx(kDir + file, {.training = true});
    EXPECT_EQ(params_of(g), 164468);
    EXPECT_EQ(g.metadata.at("parameters"), "164468");
    int variables = 0, updates = 0, gather_grads = 0;
    for (const auto& op : g.ops) {
      variables += op.type == "VariableV2";
      updates += op.phase == sim::Phase::Update;
      gather_grads += op.type == "GatherGrad";
    }
    EXPECT_EQ(variables, 27);
    EXPECT_GE(updates, 27);      // one optimizer update per weight
    EXPECT_EQ(gather_grads, 1);  // the embedding's sparse gradient
    std::int64_t persistent = 0;
    for (const auto& op : g.ops) persistent += op.persistent.v;
    EXPECT_GE(persistent, 164468 * 4);  // every weight resident (F32)
  }
}

// Ops of each type in g, and the bytes its forward and backward ops move.
void census(const sim::Graph& g, std::map<std::string, int>& count, double& traffic) {
  for (const auto& op : g.ops) {
    ++count[op.type];
    if (op.phase != sim::Phase::Update)
      traffic += static_cast<double>(op.bytes_read.v + op.bytes_written.v);
  }
}

// torch.onnx exports nn.SiLU as Sigmoid(x) -> Mul(x, s). `silu=fused` runs each as PyTorch's silu
// and silu_backward kernels (x read and y written; x and dy read, dx written), `silu=inplace` adds
// the copy of x autograd saves for nn.SiLU(inplace=True); the SE gates' Sigmoids (read by a Mul of
// another tensor) stay; the default keeps the ONNX ops. Anything else is refused naming the key.
TEST(OnnxImport, SiluFusesSigmoidTimesItsInput) {
  const std::string model = kDir + "efficientnet_b0.onnx";
  std::map<std::string, std::map<std::string, int>> count;
  std::map<std::string, double> traffic;
  for (const std::string mode : {"ops", "fused", "inplace"})
    census(load_graph(model, "training,batch=2,silu=" + mode), count[mode], traffic[mode]);
  // EfficientNet-B0: 49 SiLUs (stem, head, 15 expansions, 16 depthwise, 16 SE squeezes) and 16 SE
  // gates.
  EXPECT_EQ(count["ops"]["Sigmoid"], 65);
  EXPECT_EQ(count["ops"].count("Silu"), 0u);
  EXPECT_EQ(count["fused"]["Silu"], 49);
  EXPECT_EQ(count["fused"]["SiluGrad"], 49);
  EXPECT_EQ(count["fused"]["Sigmoid"], 16);
  EXPECT_EQ(count["fused"]["Mul"], count["ops"]["Mul"] - 49);
  EXPECT_EQ(count["fused"].count("Copy"), 0u);
  EXPECT_EQ(count["inplace"]["Copy"], 49);
  EXPECT_EQ(count["inplace"]["Silu"], 49);
  // Per SiLU the two ops move 5 passes over the tensor forward and 12 backward (two MulGrads, a
  // SigmoidGrad, the sum of x's two gradients) where the kernels move 2 + 3; the copy adds 2.
  EXPECT_LT(traffic["fused"], 0.8 * traffic["ops"]);
  EXPECT_GT(traffic["inplace"], traffic["fused"]);
  const sim::Graph f = load_graph(model, "training,batch=2,silu=fused");
  const auto& silu =
      f.ops.at(static_cast<std::size_t>(f.op_index("/features/features.0/features.0.2/Mul")));
  EXPECT_EQ(silu.type, "Silu");
  EXPECT_EQ(silu.bytes_read.v, silu.bytes_written.v);
  EXPECT_THROW(load_graph(model, "training,batch=2,silu=yes"), sim::InputError);
}

// timm's models of its RTX 3090 benchmark (generate.py): every weight a variable with an update,
// torch's parameter count (= the CSV's param_count), and the training FLOPs of timm's GMACs (x 2
// FLOPs, x 3 for forward, input and weight gradients) at a dynamic batch: DeiT-tiny 1.26 GMACs.
TEST(OnnxImport, TimmTransformersTrainEveryWeight) {
  const std::map<std::string, std::int64_t> want{
      {"deit_tiny_patch16_224.onnx", 5717416}, {"vit_small_patch16_224.onnx", 22050664},
      {"vit_base_patch32_224.onnx", 88224232}, {"vit_base_patch16_224.onnx", 86567656},
      {"mixer_b16_224.onnx", 59880472},        {"convnext_tiny.onnx", 28589128}};
  for (const auto& [file, params] : want) {
    SCOPED_TRACE(file);
    const sim::Graph g = import_onnx(kDir + file, {.training = true, .batch = 2});
    EXPECT_EQ(params_of(g), params);
    int variables = 0, updates = 0;
    for (const auto& op : g.ops) {
      variables += op.type == "VariableV2";
      updates += op.phase == sim::Phase::Update;
    }
    EXPECT_EQ(updates, variables);
  }
  double flops1 = 0, flops512 = 0;
  for (const auto& op : import_onnx(kDir + "deit_tiny_patch16_224.onnx", {.training = true}).ops)
    flops1 += static_cast<double>(op.flops.v);
  for (const auto& op :
       import_onnx(kDir + "deit_tiny_patch16_224.onnx", {.training = true, .batch = 512}).ops)
    flops512 += static_cast<double>(op.flops.v);
  EXPECT_NEAR(flops1 / 1e9, 6 * 1.26, 0.1);
  EXPECT_NEAR(flops512 / flops1, 512, 3);
}

// torch.onnx exports nn.GELU() as Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5. `gelu=fused`
// runs each chain as PyTorch's gelu and gelu_backward kernels (x read and y written; x and dy
// read, dx written); the default keeps the five ONNX ops. gpt_separate_qkv.onnx has one GELU per
// block (2); the MLP-Mixer export, two per block (24).
TEST(OnnxImport, GeluFusesTheErfChain) {
  std::map<std::string, std::map<std::string, int>> count;
  std::map<std::string, double> traffic;
  for (const std::string mode : {"ops", "fused"})
    census(load_graph(kDir + "gpt_separate_qkv.onnx", "training,gelu=" + mode), count[mode],
           traffic[mode]);
  EXPECT_EQ(count["ops"]["Erf"], 2);
  EXPECT_EQ(count["ops"].count("Gelu"), 0u);
  EXPECT_EQ(count["fused"]["Gelu"], 2);
  EXPECT_EQ(count["fused"]["GeluGrad"], 2);
  EXPECT_EQ(count["fused"].count("Erf"), 0u);
  EXPECT_EQ(count["fused"]["Div"], count["ops"]["Div"] - 2);
  EXPECT_EQ(count["fused"]["Mul"], count["ops"]["Mul"] - 4);
  EXPECT_LT(traffic["fused"], traffic["ops"]);
  const sim::Graph mixer = load_graph(kDir + "mixer_b16_224.onnx", "training,batch=2,gelu=fused");
  int gelus = 0, erfs = 0;
  for (const auto& op : mixer.ops) {
    gelus += op.type == "Gelu";
    erfs += op.type == "Erf";
    if (op.type == "Gelu") EXPECT_EQ(op.bytes_read.v, op.bytes_written.v);
  }
  EXPECT_EQ(gelus, 24);
  EXPECT_EQ(erfs, 0);
  EXPECT_EQ(mixer.metadata.at("parameters"), "59880472");  // timm's mixer_b16_224
  EXPECT_THROW(load_graph(kDir + "gpt_separate_qkv.onnx", "training,gelu=tanh"), sim::InputError);
}

// torch.onnx rebuilds a Reshape's target from Shape -> Gather -> Unsqueeze -> Concat; PyTorch
// computes it on the host (Python ints), so the import folds those nodes into storage values.
TEST(OnnxImport, ShapeArithmeticIsFoldedIntoHostValues) {
  const sim::Graph vit = load_graph(kDir + "vit_base_patch16_224.onnx", "training,batch=2");
  int host = 0;
  for (const auto& op : vit.ops) {
    EXPECT_NE(op.type, "Shape") << op.name;
    if (op.type != "HostShape") continue;
    ++host;
    EXPECT_TRUE(op.inputs.empty()) << op.name;
    EXPECT_TRUE(sim::stores_only(op)) << op.name;
    for (const auto& out : op.outputs) EXPECT_LE(out.shape.empty() ? 1 : out.shape[0], 16);
  }
  EXPECT_GT(host, 100);  // 38 Shape, 38 Gather, 39 Concat and their Unsqueezes, in 12 blocks
  // Data work stays: the attention's reshapes and concatenations of activations are still ops.
  int concat_data = 0;
  for (const auto& op : vit.ops) concat_data += op.type == "Concat";
  EXPECT_GE(concat_data, 1);  // the class token joined to the patches
}

// NVIDIA DeepLearningExamples' Transformer-big (fairseq, transformer_wmt_en_de_big_t2t with shared
// embeddings; tests/data/onnx/fairseq_transformer.py): torch's parameter count, and `strided_bmm`
// running as views the Transposes around each attention's two bmms (q, k's permute, v, the output:
// 4 in each of 18 attentions) and the decoder's final T x B -> B x T read by the vocabulary GEMM.
// The 18 transposes of the scaled query weight and the 2 of the embeddings (read by LayerNorm and
// the residual Add) stay copies; a 4-D Transpose (ViT-B/16's heads) is never touched.
TEST(OnnxImport, StridedBmmTransposesAreViews) {
  const std::string model = kDir + "fairseq_transformer_big.onnx";
  std::map<std::string, std::map<std::string, int>> count;
  std::map<std::string, double> traffic;
  for (const std::string opt : {"", ",strided_bmm=true"}) {
    const sim::Graph g = load_graph(model, "training,batch=8,weight_view=true" + opt);
    census(g, count[opt], traffic[opt]);
    EXPECT_EQ(g.metadata.at("parameters"), "210808832");
  }
  EXPECT_EQ(count[",strided_bmm=true"]["Transpose"], count[""]["Transpose"] - 73);
  EXPECT_EQ(count[",strided_bmm=true"]["Transpose"], 20);
  EXPECT_EQ(count[",strided_bmm=true"]["TransposeGrad"], 20);
  EXPECT_EQ(count[",strided_bmm=true"]["View"], count[""]["View"] + 73);
  EXPECT_EQ(count[",strided_bmm=true"]["MatMul"], count[""]["MatMul"]);
  EXPECT_LT(traffic[",strided_bmm=true"], traffic[""]);
  std::map<std::string, int> vit, vit_strided;
  double t0 = 0, t1 = 0;
  census(load_graph(kDir + "vit_base_patch16_224.onnx", "training,batch=2"), vit, t0);
  census(load_graph(kDir + "vit_base_patch16_224.onnx", "training,batch=2,strided_bmm=true"),
         vit_strided, t1);
  EXPECT_EQ(vit, vit_strided);
  EXPECT_EQ(t0, t1);
}

// PyTorch's cat backward hands each input a view of the output's gradient (grad.narrow), and
// autograd sums a tensor's gradients in place. The H200 DenseNet-121 AMP channels-last b256 trace
// (tests/data/calibration/h200_densenet121_amp_nhwc_b256_train.json.gz) launches no kernel for
// its 597 cat gradients and runs the 535 sums (58 aten::add of two views, 477 aten::add_ of one)
// in the generic elementwise_kernel<128, 4>: 9525 us a step (13.4 GB at 1.0-1.6 TB/s). Before,
// the model copied every gradient (597 Slices, 14.7 ms) and summed at the contiguous rate (3.5 ms).
TEST(OnnxImport, ConcatGradientsAreViewsSummedByTheGenericKernel) {
  const sim::Graph g =
      load_graph(kDir + "densenet121.onnx",
                 "training,optimizer=momentum,batch=256,precision=f16,grads=f32,layout=nhwc");
  const sim::DeviceSpec* spec = sim::find_device_model("H200-SXM-141GB");
  ASSERT_NE(spec, nullptr);
  const sim::Device d{.name = "gpu0", .spec = *spec};
  const sim::KernelCostModel km;
  int narrow = 0, slice = 0, strided = 0;
  double narrow_s = 0, sums_s = 0;
  for (const auto& op : g.ops) {
    narrow += op.type == "Narrow";
    slice += op.type == "Slice";
    if (op.type == "Narrow") narrow_s += km.estimate(op, d).time.seconds();
    if (op.strided_operand) {
      ++strided;
      EXPECT_EQ(op.type, "Add") << op.name;
      sums_s += km.estimate(op, d).time.seconds();
    }
  }
  // Every concatenation input's gradient but the blocks' last features' (their one reader, the
  // 3x3 convolution's backward, takes a contiguous copy) is summed with others.
  EXPECT_EQ(narrow + slice, 597);
  EXPECT_EQ(slice, 4);
  EXPECT_EQ(strided, 535);
  EXPECT_EQ(narrow_s, 0.0);
  EXPECT_NEAR(sums_s / 9525e-6, 1.0, 0.25) << sums_s;
  // The JSON form keeps the mark.
  const sim::Graph back = sim::parse_graph_json(sim::graph_to_json(g), "<round trip>");
  int back_strided = 0;
  for (const auto& op : back.ops) back_strided += op.strided_operand;
  EXPECT_EQ(back_strided, 535);
}

// DeepLearningExamples' NCF (tests/data/onnx/ncf_neumf.py): ONNX's Dropout mask is tensor(bool),
// a byte an element, as PyTorch's _fused_dropout writes it and its backward reads it, not the
// data's type; a cat gradient copied for a reader that needs it contiguous
// (embedding_dense_backward's `grad_.contiguous()`) reads its slice only, not the whole gradient;
// one that only elementwise backward ops read (the MF product's and the last dropout's) is a view
// they read strided.
TEST(OnnxImport, NcfDropoutMaskIsBoolAndCatSlicesReadTheirSlice) {
  const std::int64_t n = 4096;
  const sim::Graph g =
      load_graph(kDir + "ncf_neumf.onnx", "training,optimizer=adam,batch=" + std::to_string(n));
  EXPECT_EQ(g.metadata.at("parameters"), "31832577");  // torch's sum(p.numel())
  int dropouts = 0, dropout_grads = 0, slices = 0, narrows = 0, embedding_grads = 0;
  std::map<std::string, int> strided;
  for (const auto& op : g.ops) {
    if (op.type == "Dropout") {
      ++dropouts;
      ASSERT_EQ(op.outputs.size(), 2u) << op.name;
      const std::int64_t elems = num_elements(op.outputs[1].shape);
      EXPECT_EQ(op.outputs[1].dtype, sim::Dtype::Bool) << op.name;
      EXPECT_EQ(op.outputs[1].bytes.v, elems) << op.name;
      EXPECT_EQ(op.bytes_written.v, 4 * elems + elems) << op.name;  // F32 output + bool mask
    }
    if (op.type == "DropoutGrad") {
      ++dropout_grads;
      const std::int64_t elems = num_elements(op.outputs.at(0).shape);
      EXPECT_EQ(op.bytes_read.v, 4 * elems + elems) << op.name;  // the gradient + the mask
    }
    if (op.type == "Slice") {
      ++slices;
      // The [n, 256] concatenation's gradient is 4 n 256 bytes; each copy reads its half.
      EXPECT_EQ(op.outputs.at(0).shape, (Shape{n, 128})) << op.name;
      EXPECT_EQ(op.bytes_read.v, 4 * n * 128) << op.name;
      EXPECT_EQ(op.bytes_written, op.outputs.at(0).bytes) << op.name;
    }
    narrows += op.type == "Narrow";
    if (op.strided_operand) ++strided[op.type];
    embedding_grads += op.type == "GatherGrad";
  }
  EXPECT_EQ(dropouts, 3);
  EXPECT_EQ(dropout_grads, 3);
  EXPECT_EQ(embedding_grads, 4);
  EXPECT_EQ(slices, 2);   // the MLP tables' halves, read by their embedding backward
  EXPECT_EQ(narrows, 2);  // the final cat's halves
  EXPECT_EQ(strided, (std::map<std::string, int>{{"DropoutGrad", 1}, {"MulGrad", 2}}));
}

// `loss=label_smoothing`: fairseq's label_smoothed_cross_entropy over log_softmax(logits,
// dtype=float32) (DeepLearningExamples Transformer ddp_trainer.py and criterions.py) in place of
// the one cross-entropy op: a LogSoftmax and a SmoothedNll over [batch x 32, 33712], F32 (4 bytes
// an element) even under precision=f16, where the default's cross-entropy runs in F16.
TEST(OnnxImport, LabelSmoothedLossRunsInF32) {
  const std::string model = kDir + "fairseq_transformer_big.onnx";
  const std::string base = "training,batch=8,strided_bmm=true,precision=f16";
  const sim::Graph xent = load_graph(model, base);
  const sim::Graph smooth = load_graph(model, base + ",loss=label_smoothing");
  std::map<std::string, int> cx, cs;
  double tx = 0, ts = 0;
  census(xent, cx, tx);
  census(smooth, cs, ts);
  EXPECT_EQ(cx["SparseSoftmaxCrossEntropyWithLogits"], 1);
  EXPECT_EQ(cs.count("SparseSoftmaxCrossEntropyWithLogits"), 0u);
  EXPECT_EQ(cs["LogSoftmax"], 1);
  EXPECT_EQ(cs["SmoothedNll"], 1);
  EXPECT_EQ(cs["LogSoftmaxGrad"], 1);
  for (const auto& op : smooth.ops) {
    if (op.type != "LogSoftmax") continue;
    ASSERT_EQ(op.outputs.at(0).shape, (std::vector<std::int64_t>{8 * 32, 33712}));
    EXPECT_EQ(op.outputs[0].dtype, sim::Dtype::F32);
  }
  EXPECT_GT(ts, tx);
}

// torch.onnx exports nn.Linear as Transpose(W) -> MatMul(x, .) -> Add(b, .). `weight_view` runs
// each weight's Transpose as PyTorch's `W.t()`, a view (no kernel, its gradient passed through);
// `bias_epilogue` makes each bias the MatMul's third input (cuBLASLt's epilogue, PyTorch's addmm),
// its gradient a BiasAddGrad column sum. ViT-B/16: 12 blocks of 4 linears (qkv, proj, fc1, fc2);
// the head is a Gemm (its bias and transposed B already one op). Off by default.
TEST(OnnxImport, LinearWeightViewAndBiasEpilogue) {
  const std::string model = kDir + "vit_base_patch16_224.onnx";
  std::map<std::string, std::map<std::string, int>> count;
  std::map<std::string, double> traffic;
  std::map<std::string, double> fwd_flops;
  std::map<std::string, int> biased;
  std::map<std::string, std::string> params;
  for (const std::string opt :
       {"", ",weight_view=true", ",bias_epilogue=true", ",weight_view=true,bias_epilogue=true"}) {
    const sim::Graph g = load_graph(model, "training,batch=2" + opt);
    census(g, count[opt], traffic[opt]);
    params[opt] = g.metadata.at("parameters");
    for (const auto& op : g.ops) {
      if (op.phase != sim::Phase::Forward) continue;
      fwd_flops[opt] += op.flops.v;
      if (op.type != "MatMul" || op.inputs.size() != 3) continue;
      ++biased[opt];
      // The bias: a 1-D parameter of the output's last dimension.
      const sim::Op& b = g.ops[static_cast<std::size_t>(op.inputs[2].op)];
      EXPECT_EQ(b.type, "VariableV2") << op.name;
      ASSERT_EQ(b.outputs.at(0).shape.size(), 1u) << op.name;
      EXPECT_EQ(b.outputs[0].shape[0], op.outputs.at(0).shape.back()) << op.name;
    }
  }
  const std::string both = ",weight_view=true,bias_epilogue=true";
  // Default: every weight transposed by a copy, every bias its own Add; no View, no fused bias.
  EXPECT_EQ(count[""].count("View"), 0u);
  EXPECT_EQ(biased[""], 0);
  EXPECT_EQ(count[""].count("BiasAddGrad"), 0u);
  // weight_view: 48 weight Transposes (and their gradients) fewer, 48 Views; nothing else moves.
  EXPECT_EQ(count[",weight_view=true"]["View"], 48);
  EXPECT_EQ(count[",weight_view=true"]["Transpose"], count[""]["Transpose"] - 48);
  EXPECT_EQ(count[",weight_view=true"]["TransposeGrad"], count[""]["TransposeGrad"] - 48);
  EXPECT_EQ(count[",weight_view=true"]["Add"], count[""]["Add"]);
  EXPECT_LT(traffic[",weight_view=true"], traffic[""]);
  // bias_epilogue: 48 biased MatMuls, 48 Adds fewer, their gradients BiasAddGrad column sums.
  EXPECT_EQ(biased[",bias_epilogue=true"], 48);
  EXPECT_EQ(count[",bias_epilogue=true"]["Add"], count[""]["Add"] - 48);
  EXPECT_EQ(count[",bias_epilogue=true"]["BiasAddGrad"], 48);
  EXPECT_EQ(count[",bias_epilogue=true"]["ReduceSum"], count[""]["ReduceSum"] - 48);
  EXPECT_EQ(count[",bias_epilogue=true"]["Transpose"], count[""]["Transpose"]);
  EXPECT_LT(traffic[",bias_epilogue=true"], traffic[""]);
  // The bias adds' FLOPs leave the step (as GraphBuilder::matmul_bias counts them): 2 x 197 tokens
  // x (3·768 + 768 + 3072 + 768) outputs a block, 12 blocks.
  EXPECT_NEAR(fwd_flops[""] - fwd_flops[",bias_epilogue=true"], 2.0 * 197 * 6912 * 12, 1.0);
  EXPECT_EQ(biased[both], 48);
  EXPECT_EQ(count[both]["View"], 48);
  for (const auto& [opt, p] : params) EXPECT_EQ(p, "86567656") << opt;  // timm's ViT-B/16
  int variables = 0, updates = 0;
  for (const auto& op : load_graph(model, "training,batch=2" + both).ops) {
    variables += op.type == "VariableV2";
    updates += op.phase == sim::Phase::Update;
  }
  EXPECT_EQ(updates, variables);
  EXPECT_THROW(load_graph(model, "training,bias_epilogue=maybe"), sim::InputError);
  EXPECT_THROW(load_graph(model, "training,weight_view=2"), sim::InputError);
}

// torch.onnx writes timm's attention as MatMul(q, Transpose(k)) -> Mul(scale) -> Softmax ->
// MatMul(., v). `attention=sdpa` makes each chain one FlashAttention op each way (what
// F.scaled_dot_product_attention runs, timm >= 0.9's fused_attn), with the two matmuls' FLOPs;
// the default keeps the ONNX ops. A masked attention (gpt_separate_qkv.onnx's causal one) stays.
TEST(OnnxImport, AttentionSdpaFusesTheScoreChain) {
  const std::string model = kDir + "vit_base_patch16_224.onnx";
  std::map<std::string, std::map<std::string, int>> count;
  std::map<std::string, double> traffic;
  std::map<std::string, double> matmul_flops, attention_flops;
  for (const std::string mode : {"ops", "sdpa"}) {
    const sim::Graph g = load_graph(model, "training,batch=2,attention=" + mode);
    census(g, count[mode], traffic[mode]);
    for (const auto& op : g.ops) {
      if (op.phase != sim::Phase::Forward) continue;
      if (op.type == "MatMul") matmul_flops[mode] += op.flops.v;
      if (op.type != "FlashAttention") continue;
      attention_flops[mode] += op.flops.v;
      ASSERT_EQ(op.inputs.size(), 3u) << op.name;
      ASSERT_EQ(op.outputs.size(), 2u) << op.name;
      // O [b, heads, tokens, head dim] and the row logsumexp [b, heads, tokens].
      EXPECT_EQ(op.outputs[0].shape, (Shape{2, 12, 197, 64})) << op.name;
      EXPECT_EQ(op.outputs[1].shape, (Shape{2, 12, 197})) << op.name;
      // q, k, v as the heads' split gives them: k is not transposed.
      for (const auto& in : op.inputs)
        EXPECT_EQ(g.ops[static_cast<std::size_t>(in.op)]
                      .outputs.at(static_cast<std::size_t>(in.output))
                      .shape,
                  (Shape{2, 12, 197, 64}))
            << op.name;
    }
  }
  EXPECT_EQ(count["ops"].count("FlashAttention"), 0u);
  EXPECT_EQ(count["sdpa"]["FlashAttention"], 12);
  EXPECT_EQ(count["sdpa"]["FlashAttentionGrad"], 12);
  EXPECT_EQ(count["sdpa"].count("Softmax"), 0u);
  EXPECT_EQ(count["ops"]["Softmax"], 12);
  EXPECT_EQ(count["sdpa"]["MatMul"], count["ops"]["MatMul"] - 6 * 12);  // 2 forward, 4 backward
  EXPECT_EQ(count["sdpa"]["Mul"], count["ops"]["Mul"] - 12);            // the scale
  // K^T, and the heads' permute before the attention and transpose after it, views each way
  // (find_qkv_views), but for the permute's backward copy (a Transpose).
  EXPECT_EQ(count["sdpa"]["Transpose"], count["ops"]["Transpose"] - 24);
  EXPECT_EQ(count["sdpa"]["TransposeGrad"], count["ops"]["TransposeGrad"] - 36);
  // The unbind is a view; its gradient a stack of dq, dk, dv, not the Split's Concat.
  EXPECT_EQ(count["sdpa"].count("Split"), 0u);
  EXPECT_EQ(count["sdpa"].count("Concat"), count["ops"].count("Concat"));
  EXPECT_EQ(count["sdpa"]["Stack"], 12);
  EXPECT_EQ(count["ops"].count("Stack"), 0u);
  EXPECT_LT(traffic["sdpa"], traffic["ops"]);
  // The two score matmuls' FLOPs: 2 x 2 x 12 x 197^2 x 64 each, 12 blocks.
  const double two_matmuls = 2 * 2.0 * 2 * 12 * 197 * 197 * 64 * 12;
  EXPECT_NEAR(attention_flops["sdpa"], two_matmuls, 1.0);
  EXPECT_NEAR(matmul_flops["ops"] - matmul_flops["sdpa"], two_matmuls, 1.0);
  std::map<std::string, int> gpt;
  double unused = 0;
  census(load_graph(kDir + "gpt_separate_qkv.onnx", "training,attention=sdpa"), gpt, unused);
  EXPECT_EQ(gpt.count("FlashAttention"), 0u);
  EXPECT_EQ(gpt["Softmax"], 2);
  EXPECT_THROW(load_graph(model, "training,attention=flash"), sim::InputError);
}

// autocast=torch types the graph as torch.autocast(float16) runs it
// (aten/src/ATen/autocast_mode.cpp): parameters stay F32 and each is cast to F16 once a step for
// the matmuls that read it (weight and bias), LayerNorm runs in F32 and the matmul after it reads
// an F16 cast of its output, the residual stream is F32 (the class token and position embedding are
// F32 parameters), GELU runs in its F16 input's type; each cast's gradient casts back, so weight
// gradients are F32. Without precision=f16 it is refused.
TEST(OnnxImport, AutocastTypesTheGraphAsTorchRunsIt) {
  const std::string model = kDir + "vit_base_patch16_224.onnx";
  const std::string opt =
      "training,batch=2,precision=f16,grads=f32,weight_view=true,bias_epilogue=true,"
      "attention=sdpa,gelu=fused";
  const sim::Graph g = load_graph(model, opt + ",autocast=torch");
  const sim::Graph half = load_graph(model, opt);
  const auto in_dtype = [&](const sim::Op& op, std::size_t i) {
    const auto& r = op.inputs.at(i);
    return g.ops[static_cast<std::size_t>(r.op)]
        .outputs.at(static_cast<std::size_t>(r.output))
        .dtype;
  };
  int casts = 0, back = 0, ln = 0, residual = 0, matmuls = 0;
  for (const auto& op : g.ops) {
    if (op.type == "Cast") ++(op.phase == sim::Phase::Forward ? casts : back);
    if (op.phase == sim::Phase::Update) {
      // The optimizer reads the F32 parameter and its F32 gradient.
      EXPECT_EQ(in_dtype(op, 0), sim::Dtype::F32) << op.name;
      EXPECT_EQ(in_dtype(op, 1), sim::Dtype::F32) << op.name;
      continue;
    }
    if (op.phase != sim::Phase::Forward) continue;
    if (op.type == "MatMul" || op.type == "Gemm" || op.type == "Conv" ||
        op.type == "FlashAttention") {
      ++matmuls;
      EXPECT_EQ(op.dtype, sim::Dtype::F16) << op.name;
      for (std::size_t i = 0; i < op.inputs.size(); ++i)
        EXPECT_EQ(in_dtype(op, i), sim::Dtype::F16) << op.name << " input " << i;
    }
    if (op.type == "LayerNormalization") {
      ++ln;
      EXPECT_EQ(op.dtype, sim::Dtype::F32) << op.name;
      EXPECT_EQ(op.outputs[0].dtype, sim::Dtype::F32) << op.name;
    }
    if (op.type == "Gelu") EXPECT_EQ(op.outputs[0].dtype, sim::Dtype::F16) << op.name;
    if (op.type == "Add" && op.name.find("/Add") != std::string::npos &&
        op.name.find("blocks.") != std::string::npos) {
      ++residual;
      EXPECT_EQ(op.outputs[0].dtype, sim::Dtype::F32) << op.name;
    }
  }
  EXPECT_EQ(matmuls, 12 * 5 + 2);  // qkv, attention, proj, fc1, fc2; patch embedding and head
  EXPECT_EQ(ln, 2 * 12 + 1);
  EXPECT_EQ(residual, 2 * 12);
  // One cast a parameter the matmuls read: 4 weights and 4 biases a block, the patch
  // embedding's and the head's; one of each LayerNorm output a Linear reads (2 a block, the
  // final norm's class token) and one of the input image. The image's has no gradient.
  EXPECT_EQ(casts, 8 * 12 + 2 + 2 + 2 * 12 + 1 + 1);
  // Each cast's gradient casts back (the image's has none), and the residual adds' F32
  // gradients are cast into their F16 inputs (proj's and fc2's outputs; autograd's engine).
  EXPECT_EQ(back, casts - 1 + 2 * 12);
  EXPECT_EQ(g.metadata.at("autocast"), "torch");
  EXPECT_EQ(g.metadata.at("grads"), "f32");
  // F32 LayerNorms and residual stream move more bytes than the all-F16 graph.
  double t_ac = 0, t_half = 0;
  std::map<std::string, int> unused;
  census(g, unused, t_ac);
  census(half, unused, t_half);
  EXPECT_GT(t_ac, t_half);
  EXPECT_THROW(load_graph(model, "training,batch=2,autocast=torch"), sim::InputError);
  EXPECT_THROW(load_graph(model, "training,batch=2,precision=bf16,autocast=torch"),
               sim::InputError);
  EXPECT_THROW(load_graph(model, opt + ",autocast=cuda"), sim::InputError);
}

// layer_norm=apex: apex's FusedLayerNorm under autocast casts input, weight and bias to F16
// (`_cast_if_autocast_enabled`, NVIDIA/apex apex/normalization/fused_layer_norm.py) and runs in
// F16, so its output feeds the next matmul without a cast: ViT-B/16's LayerNorms read one F16 cast
// of the F32 residual each and its weight and bias once a step; the casts of their outputs go.
TEST(OnnxImport, ApexLayerNormRunsInHalfUnderAutocast) {
  const std::string model = kDir + "vit_base_patch16_224.onnx";
  const std::string opt =
      "training,batch=2,precision=f16,grads=f32,weight_view=true,bias_epilogue=true,"
      "attention=sdpa,gelu=fused,autocast=torch";
  const sim::Graph torch_ln = load_graph(model, opt);
  const sim::Graph apex = load_graph(model, opt + ",layer_norm=apex");
  const auto count = [](const sim::Graph& g, int& casts, int& ln_f16) {
    casts = ln_f16 = 0;
    for (const auto& op : g.ops) {
      if (op.phase != sim::Phase::Forward) continue;
      if (op.type == "Cast") ++casts;
      if (op.type == "LayerNormalization" && op.dtype == sim::Dtype::F16 &&
          op.outputs[0].dtype == sim::Dtype::F16)
        ++ln_f16;
    }
  };
  int casts_torch = 0, ln_torch = 0, casts_apex = 0, ln_apex = 0;
  count(torch_ln, casts_torch, ln_torch);
  count(apex, casts_apex, ln_apex);
  EXPECT_EQ(ln_torch, 0);
  EXPECT_EQ(ln_apex, 2 * 12 + 1);
  // Each LayerNorm gains a cast of its input and of its weight and bias (3 casts) and its output's
  // cast goes (2 a block and the final norm's class token): +3 x 25 - 25.
  EXPECT_EQ(casts_apex, casts_torch + 3 * 25 - 25);
  EXPECT_NE(apex.metadata.at("options").find(",layer_norm=apex"), std::string::npos);
  double t_torch = 0, t_apex = 0;
  std::map<std::string, int> unused;
  census(torch_ln, unused, t_torch);
  census(apex, unused, t_apex);
  EXPECT_LT(t_apex, t_torch);  // F16 LayerNorms move half the bytes
  EXPECT_THROW(load_graph(model, "training,batch=2,precision=f16,layer_norm=apex"),
               sim::InputError);
  EXPECT_THROW(load_graph(model, opt + ",layer_norm=fused"), sim::InputError);
}

}  // namespace
}  // namespace placesim::models

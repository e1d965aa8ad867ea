// Built-in workloads checked against published totals (parameter counts, multiply-adds) and the
// structure of a training step.
#include "models/workloads.hpp"

#include <algorithm>
#include <array>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "models/registry.hpp"
#include "sim/error.hpp"

namespace placesim::models {
namespace {

std::int64_t params_of(const sim::Graph& g) {
  std::int64_t n = 0;
  for (const auto& op : g.ops) {
    if (op.type == "VariableV2") n += num_elements(op.outputs.at(0).shape);
  }
  return n;
}

// Forward multiply-adds of convolutions and matrix products (the convention of torchvision's
// and most papers' "FLOPs" tables).
double forward_macs(const sim::Graph& g) {
  double f = 0;
  for (const auto& op : g.ops) {
    if (op.phase == sim::Phase::Forward &&
        (op.type == "Conv2D" || op.type == "MatMul" || op.type == "BatchMatMul")) {
      f += op.flops.v / 2;
    }
  }
  return f;
}

TEST(Workloads, ResNet50MatchesTorchvision) {
  const sim::Graph g = load_graph("resnet50", "batch=2");
  // torchvision.models.resnet50: sum(p.numel()) = 25,557,032.
  EXPECT_EQ(params_of(g), 25557032);
  // 4.09 G multiply-adds per 224x224 image (He et al. 2016 quote 3.8 G for v1; v1.5 moves the
  // stride to the 3x3 conv: 4.09 G as torchvision and fvcore count).
  EXPECT_NEAR(forward_macs(g) / 2, 4.09e9, 0.03 * 4.09e9);
}

int count_type(const sim::Graph& g, const std::string& type) {
  return static_cast<int>(std::count_if(g.ops.begin(), g.ops.end(),
                                        [&](const sim::Op& op) { return op.type == type; }));
}

// Bytes the forward and backward passes move (update ops excluded).
double step_traffic(const sim::Graph& g) {
  double b = 0;
  for (const auto& op : g.ops)
    if (op.phase == sim::Phase::Forward || op.phase == sim::Phase::Backward)
      b += static_cast<double>(op.bytes_read.v + op.bytes_written.v);
  return b;
}

// fuse=bn_relu / bn_add_relu (MXNet's --fuse-bn-relu / --fuse-bn-add-relu): the ReLU and the
// residual Add run inside the batch norm, forward and backward; the arithmetic stays.
TEST(Workloads, ResNet50FusedBatchNormDropsTheReluAndAddPasses) {
  const sim::Graph plain = load_graph("resnet50", "batch=2");
  const sim::Graph relu = load_graph("resnet50", "batch=2,fuse=bn_relu");
  const sim::Graph add = load_graph("resnet50", "batch=2,fuse=bn_add_relu");
  const sim::Graph both = load_graph("resnet50", "batch=2,fuse=bn_relu+bn_add_relu");
  // 1 stem + 2 a block in the body + 1 after each of the 16 blocks' residual add.
  EXPECT_EQ(count_type(plain, "Relu"), 49);
  EXPECT_EQ(count_type(plain, "Add"), 16 + count_type(both, "Add"));  // gradient sums remain
  EXPECT_EQ(count_type(relu, "Relu"), 16);
  EXPECT_EQ(count_type(add, "Relu"), 33);
  EXPECT_EQ(count_type(both, "Relu"), 0);
  EXPECT_EQ(count_type(both, "ReluGrad"), 0);
  for (const sim::Graph* g : {&relu, &add, &both}) {
    EXPECT_EQ(count_type(*g, "FusedBatchNorm"), 53);
    EXPECT_EQ(count_type(*g, "FusedBatchNormGrad"), 53);
    EXPECT_EQ(params_of(*g), 25557032);
    EXPECT_EQ(forward_macs(*g), forward_macs(plain));
  }
  // Each fused ReLU saves its forward pass (read + write y) and its gradient (read y and dy,
  // write dx): 5 tensors of its size; the fused backward reads beta instead (C floats).
  double relu_bytes = 0;  // of the 33 ReLUs fuse=bn_relu takes in
  for (const auto& op : plain.ops)
    if (op.type == "Relu") relu_bytes += static_cast<double>(op.outputs.at(0).bytes.v);
  for (const auto& op : relu.ops)
    if (op.type == "Relu") relu_bytes -= static_cast<double>(op.outputs.at(0).bytes.v);
  const double saved = step_traffic(plain) - step_traffic(relu);
  EXPECT_GT(saved, 0.99 * 5 * relu_bytes);
  EXPECT_LE(saved, 5 * relu_bytes);
  EXPECT_LT(step_traffic(both), step_traffic(add));
  EXPECT_LT(step_traffic(add), step_traffic(plain));
  // BatchNormAddRelu: reads the addend, keeps a 1-bit ReLU mask (int32 words, F32 or F16
  // alike); its gradient also writes the addend's.
  const sim::Graph half = load_graph("resnet50", "batch=2,fuse=bn_add_relu,precision=f16");
  for (const sim::Graph* g : {&add, &half}) {
    const sim::Op& bn =
        g->ops.at(static_cast<std::size_t>(g->op_index("resnet50/layer1/block1/conv3/BatchNorm")));
    ASSERT_EQ(bn.inputs.size(), 4U);
    ASSERT_EQ(bn.outputs.size(), 4U);
    const std::int64_t elems = num_elements(bn.outputs[0].shape);
    EXPECT_EQ(bn.outputs[3].dtype, sim::Dtype::I32);
    EXPECT_EQ(bn.outputs[3].bytes.v, (elems + 31) / 32 * 4);
  }
  int four_way_grads = 0;
  for (const auto& op : add.ops)
    if (op.type == "FusedBatchNormGrad" && op.outputs.size() == 4) ++four_way_grads;
  EXPECT_EQ(four_way_grads, 16);
  for (const char* bad : {"fuse=bn_add", "fuse=", "fuse=bn_relu+bn_relu"}) {
    try {
      load_graph("resnet50", std::string("batch=2,") + bad);
      ADD_FAILURE() << bad;
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("fuse"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_graph("inception_v3", "batch=1,fuse=bn_relu"), sim::InputError);
  // The fused kernels are NHWC ones.
  EXPECT_THROW(load_graph("resnet50", "batch=2,fuse=bn_relu,layout=nchw"), sim::InputError);
  EXPECT_NO_THROW(load_graph("resnet50", "batch=2,fuse=none,layout=nchw"));
  EXPECT_NO_THROW(load_graph("resnet50", "batch=2,fuse=bn_relu,layout=nhwc"));
}

TEST(Workloads, InceptionV3MatchesTorchvision) {
  const sim::Graph with_aux = load_graph("inception_v3", "batch=1");
  const sim::Graph no_aux = load_graph("inception_v3", "batch=1,aux_head=false");
  // torchvision.models.inception_v3(aux_logits=True): 27,161,264; minus the AuxLogits module
  // (3,326,696): 23,834,568 (Keras quotes 23.85 M incl. non-trainable BN statistics).
  EXPECT_EQ(params_of(with_aux), 27161264);
  EXPECT_EQ(params_of(no_aux), 23834568);
  // torchvision's table: 5.71 G multiply-adds per 299x299 image (Szegedy et al.: ~5 G).
  EXPECT_NEAR(forward_macs(no_aux), 5.71e9, 0.03 * 5.71e9);
  for (const char* block : {"Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b", "Mixed_6c",
                            "Mixed_6d", "Mixed_6e", "Mixed_7a", "Mixed_7b", "Mixed_7c"}) {
    EXPECT_GE(no_aux.op_index(std::string("InceptionV3/") + block + "/concat"), 0) << block;
  }
}

TEST(Workloads, Gpt2SmallParameters) {
  const sim::Graph g = load_graph("gpt", "batch=1,seq=64");
  // GPT-2 small (Radford et al. 2019; Hugging Face gpt2): 124,439,808 with the tied head.
  EXPECT_EQ(params_of(g), 124439808);
  // Forward matmul FLOPs: 2 x non-embedding weights x tokens, attention 2 x 2 x L x T^2 x H x B,
  // and the tied head 2 x H x V x tokens.
  const double tokens = 64, layers = 12, h = 768, t = 64, v = 50257;
  const double weights = layers * 12 * h * h;
  EXPECT_NEAR(forward_macs(g) * 2,
              2 * weights * tokens + 4 * layers * t * t * h + 2 * h * v * tokens, 1.0);
}

// A lookup's gradient is IndexedSlices in the graph ([N, E] values), but its signature names the
// table [V, E] too: PyTorch writes the dense table gradient, and the cost model prices its zero
// fill and sort from it (docs/cost-model.md, "Embedding gradients").
TEST(Workloads, GatherGradSignatureNamesTheTable) {
  const sim::Graph g =
      load_graph("gpt", "layers=1,hidden=64,heads=4,seq=32,positions=32,vocab=100,batch=2");
  int seen = 0;
  for (const auto& op : g.ops) {
    if (op.type != "GatherGrad") continue;
    ASSERT_TRUE(op.signature);
    ASSERT_EQ(op.signature->input_shapes.size(), 3U) << op.name;
    const bool tok = op.name.find("tok_lookup") != std::string::npos;
    EXPECT_EQ(op.signature->input_shapes[2], (std::vector<std::int64_t>{tok ? 100 : 32, 64}))
        << op.name;
    EXPECT_EQ(op.outputs.at(0).shape, (std::vector<std::int64_t>{tok ? 64 : 32, 64})) << op.name;
    ++seen;
  }
  EXPECT_EQ(seen, 2);
  // The look-up reads the rows it writes and its indices, not the table (f32 here).
  for (const auto& op : g.ops) {
    if (op.type != "Gather") continue;
    const bool tok = op.name.find("tok_lookup") != std::string::npos;
    const std::int64_t rows = tok ? 64 : 32;
    EXPECT_EQ(op.bytes_read.v, rows * 64 * 4 + op.signature->input_shapes[1][0] * 4) << op.name;
  }
  // A per-time-step look-up of an unrolled recurrent graph keeps the IndexedSlices gradient.
  const sim::Graph nmt =
      load_graph("nmt", "layers=1,hidden=32,src_len=3,tgt_len=3,vocab=50,batch=2");
  for (const auto& op : nmt.ops)
    if (op.type == "GatherGrad") EXPECT_EQ(op.signature->input_shapes.size(), 2U) << op.name;
}

TEST(Workloads, GptMaskedHeadPredictsOnlyTheMaskedPositions) {
  // BERT-style pre-training: the head runs on `masked` gathered positions per sequence, so the
  // head's FLOPs scale by masked/seq; the parameters do not change.
  const std::string dims = "layers=2,hidden=64,heads=4,seq=32,vocab=1000,batch=2";
  const sim::Graph all = load_graph("gpt", dims);
  const sim::Graph mlm = load_graph("gpt", dims + ",masked=4");
  EXPECT_EQ(params_of(all), params_of(mlm));
  const double h = 64, v = 1000, b = 2;
  EXPECT_NEAR((forward_macs(all) - forward_macs(mlm)) * 2, 2 * h * v * b * (32 - 4), 1.0);
  int gathers = 0, grads = 0;
  for (const auto& op : mlm.ops) {
    gathers += op.type == "GatherRows";
    grads += op.type == "GatherRowsGrad";
  }
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(grads, 1);
  EXPECT_THROW(load_graph("gpt", dims + ",masked=33"), sim::InputError);
  EXPECT_THROW(load_graph("gpt", dims + ",masked=0"), sim::InputError);
}

// Bytes moved over the attention scores of one layer, forward and backward: every op in the
// attention scope whose first output is [batch, heads, seq, seq] but the two batched matmuls.
double score_pass_bytes(const sim::Graph& g, const std::vector<std::int64_t>& score_shape) {
  double bytes = 0;
  for (const auto& op : g.ops) {
    if (op.layer != "gpt/h0/attn" || op.outputs.empty() || op.type == "BatchMatMul") continue;
    if (op.outputs[0].shape != score_shape) continue;
    bytes += static_cast<double>(op.bytes_read.v + op.bytes_written.v);
  }
  return bytes;
}

TEST(Workloads, GptAttentionRunsPyTorchsPasses) {
  // NVIDIA DeepLearningExamples' BertSelfAttention runs, per score element of s bytes: scale 2s,
  // mask add 2s, softmax 2s, dropout 2s + 1 (Bool mask); backward dropout 2s + 1, softmax 3s,
  // scale 2s: 15s + 2. The mask add also reads the [batch, 1, 1, seq] F32 mask once (a
  // constant: it stays F32 under mixed precision). A causal LM (Hugging Face GPT2Attention's
  // torch.where, rasbt/LLMs-from-scratch's masked_fill_) masks with an op whose backward is a
  // pass of its own, grad.masked_fill(mask, 0): 2s more and the mask read again, 17s + 2.
  const std::string dims = "layers=1,hidden=64,heads=4,seq=32,vocab=100,batch=2";
  const std::vector<std::int64_t> scores{2, 4, 32, 32};
  const double e = 2.0 * 4 * 32 * 32, mask = 2.0 * 32;
  // (The mixed-precision transform rescales byte counts in doubles: a byte of rounding per op.)
  EXPECT_NEAR(score_pass_bytes(load_graph("gpt", dims), scores), (17 * 4 + 2) * e + 8 * mask, 8);
  EXPECT_NEAR(score_pass_bytes(load_graph("gpt", dims + ",precision=f16"), scores),
              (17 * 2 + 2) * e + 8 * mask, 8);
  // Without dropout: scale, mask, softmax and their gradients, 13s.
  EXPECT_NEAR(score_pass_bytes(load_graph("gpt", dims + ",dropout=0"), scores),
              13 * 4 * e + 8 * mask, 8);
  // BERT (a masked-LM head: masked < seq): the padding mask is added, its gradient no kernel.
  const sim::Graph bert = load_graph("gpt", dims + ",masked=4");
  EXPECT_NEAR(score_pass_bytes(bert, scores), (15 * 4 + 2) * e + 4 * mask, 8);
  EXPECT_EQ(count_type(bert, "MaskFillGrad"), 0);
  EXPECT_EQ(count_type(load_graph("gpt", "layers=3,seq=8,batch=1"), "MaskFillGrad"), 3);
  // Dropout on the embeddings, the probabilities and both residual branches of every layer.
  for (const auto& [opts, want] : std::map<std::string, int>{{"layers=3,seq=8,batch=1", 10},
                                                             {"layers=3,seq=8,dropout=0.2", 10},
                                                             {"layers=3,seq=8,dropout=0", 0}}) {
    const sim::Graph g = load_graph("gpt", opts);
    int fwd = 0, bwd = 0;
    for (const auto& op : g.ops) {
      fwd += op.type == "Dropout";
      bwd += op.type == "DropoutGrad";
    }
    EXPECT_EQ(fwd, want) << opts;
    EXPECT_EQ(bwd, want) << opts;
  }
  for (const char* bad : {"dropout=1", "dropout=-0.1", "dropout=x", "dropout=0.1.2"}) {
    EXPECT_THROW(load_graph("gpt", dims + "," + bad), sim::InputError) << bad;
  }
}

TEST(Workloads, GptFusedSoftmaxRunsMegatronsKernels) {
  // Megatron-LM's FusedScaleMaskSoftmax: one pass each way over the scores of s bytes (forward
  // reads the scores, writes the probabilities: 2s; backward reads the output gradient and the
  // probabilities, writes the score gradient: 3s), the dropout on the probabilities kept
  // (2s + 1 each way): 9s + 2 against eager's 15s + 2; 5s without dropout (eager: 11s).
  const std::string dims = "layers=2,hidden=64,heads=4,seq=32,vocab=100,batch=2";
  const std::vector<std::int64_t> scores{2, 4, 32, 32};
  const double e = 2.0 * 4 * 32 * 32, mask = 2.0 * 32;
  const sim::Graph g = load_graph("gpt", dims + ",attention=fused_softmax");
  EXPECT_NEAR(score_pass_bytes(g, scores), (9 * 4 + 2) * e + 4 * mask, 8);
  EXPECT_NEAR(
      score_pass_bytes(load_graph("gpt", dims + ",attention=fused_softmax,dropout=0"), scores),
      5 * 4 * e + 4 * mask, 8);
  EXPECT_EQ(count_type(g, "ScaleMaskSoftmax"), 2);
  EXPECT_EQ(count_type(g, "ScaleMaskSoftmaxGrad"), 2);
  EXPECT_EQ(count_type(g, "Scale") + count_type(g, "Softmax"), 0);
  // bias_dropout_add_fused_train on both residual branches; the embedding's and the
  // probabilities' dropouts stay separate kernels.
  EXPECT_EQ(count_type(g, "BiasDropoutAdd"), 4);
  EXPECT_EQ(count_type(g, "Dropout"), 1 + 2);
  EXPECT_EQ(count_type(g, "BiasAdd"), 2 * 2);  // c_attn, c_fc; not the projections
  // The same parameters and matmul FLOPs as eager.
  const sim::Graph eager = load_graph("gpt", dims);
  EXPECT_EQ(params_of(g), params_of(eager));
  EXPECT_DOUBLE_EQ(forward_macs(g), forward_macs(eager));
}

TEST(Workloads, GptFlashAttentionWritesNoScoreMatrix) {
  const std::string dims = "layers=2,hidden=64,heads=4,seq=32,vocab=100,batch=2";
  const double b = 2, h = 4, s = 32, d = 16;
  for (const char* masked : {"", ",masked=4"}) {
    const sim::Graph g = load_graph("gpt", dims + ",attention=flash" + masked);
    // No tensor of the step has seq x seq elements per head: neither a score matrix nor its
    // gradient, nor the dropout's keep-mask (dropout runs inside the kernel).
    for (const auto& op : g.ops)
      for (const auto& t : op.outputs)
        EXPECT_FALSE(t.shape.size() == 4 && t.shape[2] == 32 && t.shape[3] == 32) << op.name;
    EXPECT_EQ(count_type(g, "FlashAttention"), 2);
    EXPECT_EQ(count_type(g, "FlashAttentionGrad"), 2);
    EXPECT_EQ(count_type(g, "BatchMatMul") + count_type(g, "Softmax") + count_type(g, "Scale"), 0);
    EXPECT_EQ(count_type(g, "Dropout"), 1 + 2 * 2);  // the embedding's and the residuals'
    const bool causal = std::string(masked).empty();
    const double pairs = causal ? s * (s + 1) / 2 : s * s;
    const double io = b * h * s * d * 4, lse = b * h * s * 4;  // F32 bytes
    for (const auto& op : g.ops) {
      if (op.layer != "gpt/h0/attn") continue;
      if (op.type == "FlashAttention") {
        EXPECT_DOUBLE_EQ(op.flops.v, 4 * b * h * d * pairs);
        EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_read.v), 3 * io);       // Q, K, V
        EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_written.v), io + lse);  // O, logsumexp
      } else if (op.type == "FlashAttentionGrad") {
        EXPECT_DOUBLE_EQ(op.flops.v, 2.5 * 4 * b * h * d * pairs);
        // dO, Q, K, V, O and the logsumexp read; dQ, dK, dV written.
        EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_read.v), 5 * io + lse);
        EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_written.v), 3 * io);
      }
    }
  }
  for (const char* bad : {"attention=fused", "attention=", "attention=Flash"}) {
    EXPECT_THROW(load_graph("gpt", dims + "," + bad), sim::InputError) << bad;
  }
}

TEST(Workloads, GptFlashAttentionRunsOnViewsOfTheQkvProjection) {
  // PyTorch's SDPA program (rasbt's PyTorchMultiHeadAttention, tools/train_rig.py): the head
  // split and merge are views, no copy forward; backward, a stack of dQ, dK, dV and one permuted
  // copy into the projection's [b*s, 3*hidden] gradient, per layer.
  const std::string dims = "layers=2,hidden=64,heads=4,seq=32,vocab=100,batch=2";
  const double io = 2.0 * 4 * 32 * 16 * 4;  // one of Q, K, V in F32 bytes
  const sim::Graph g = load_graph("gpt", dims + ",attention=flash");
  int views = 0, stacks = 0, copies = 0;
  for (const auto& op : g.ops) {
    if (op.layer != "gpt/h0/attn" && op.layer != "gpt/h1/attn") continue;
    const bool fwd = op.phase == sim::Phase::Forward;
    EXPECT_FALSE(op.type == "Split" || op.type == "ConcatV2") << op.name;
    EXPECT_FALSE(fwd && op.type == "Transpose") << op.name;
    views += op.type == "View";
    if (op.type == "Stack") {
      ++stacks;
      EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_read.v), 3 * io) << op.name;
      EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_written.v), 3 * io) << op.name;
    }
    if (op.type == "Transpose") {
      ++copies;
      EXPECT_EQ(op.outputs.at(0).shape, (std::vector<std::int64_t>{2 * 32, 3 * 64})) << op.name;
      EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes_read.v), 3 * io) << op.name;
    }
  }
  EXPECT_EQ(views, 2 * 3);  // the [3, b, h, s, d] view, its unbind, the merged output
  EXPECT_EQ(stacks, 2);
  EXPECT_EQ(copies, 2);
  // The eager and Megatron paths keep their head transposes (bmm copies them).
  const sim::Graph eager = load_graph("gpt", dims);
  EXPECT_EQ(count_type(eager, "Split") + count_type(eager, "Stack"), 0);
  EXPECT_EQ(count_type(eager, "Transpose"), 2 * 2 * 4);
}

TEST(Workloads, GptFusedQkvSplitIsViewsWithACatGradient) {
  // Hugging Face GPT-2's `c_attn(x).split(hidden, dim=2)` returns views: no forward kernel; its
  // gradient (SplitBackward0) cats dQ, dK, dV into [b*s, 3*hidden]. K is viewed [b, s, h, d]
  // first so its transpose to [b, h, d, s] shows the strided innermost axis the cost model prices.
  const std::string dims = "layers=2,hidden=64,heads=4,seq=32,vocab=100,batch=2";
  for (const char* attn : {"eager", "fused_softmax"}) {
    const sim::Graph g = load_graph("gpt", dims + ",attention=" + attn);
    int splits = 0, cats = 0;
    for (const auto& op : g.ops) {
      if (op.name.find("split_qkv") == std::string::npos) continue;
      if (op.phase == sim::Phase::Forward) {
        ++splits;
        EXPECT_EQ(op.type, "View") << attn;
        EXPECT_EQ(op.outputs.size(), 3U) << attn;
      } else {
        ++cats;
        EXPECT_EQ(op.type, "ConcatV2") << attn;
        EXPECT_EQ(op.outputs.at(0).shape, (std::vector<std::int64_t>{2 * 32, 3 * 64})) << attn;
      }
    }
    EXPECT_EQ(splits, 2) << attn;
    EXPECT_EQ(cats, 2) << attn;
    for (const auto& op : g.ops)
      if (op.type == "Transpose" && op.name.find("k_heads") != std::string::npos)
        EXPECT_EQ(op.signature->input_shapes.at(0).size(), 4U) << op.name;
  }
}

TEST(Workloads, GptQkvBiasAndBiasEpilogue) {
  const std::string dims = "layers=2,hidden=64,heads=4,seq=8,vocab=100,batch=2";
  const sim::Graph def = load_graph("gpt", dims);
  // Hugging Face GPT-2 and BERT have a QKV bias (the default); rasbt's GPT and train_rig's don't.
  const sim::Graph no_qkv = load_graph("gpt", dims + ",qkv_bias=false");
  EXPECT_EQ(params_of(def) - params_of(no_qkv), 2 * 3 * 64);
  EXPECT_EQ(count_type(def, "BiasAdd"), 2 * 4);
  EXPECT_EQ(count_type(no_qkv, "BiasAdd"), 2 * 3);
  EXPECT_EQ(count_type(no_qkv, "BiasAddGrad"), 2 * 3);
  EXPECT_DOUBLE_EQ(forward_macs(no_qkv), forward_macs(def));
  // cuBLASLt's bias epilogue: each bias is the GEMM's third input, no BiasAdd pass; its gradient
  // is still a column sum of the output gradient. Same parameters and GEMM FLOPs.
  for (const auto& [opt, biased] : std::vector<std::pair<std::string, int>>{
           {",bias_epilogue=true", 4}, {",bias_epilogue=true,qkv_bias=false", 3}}) {
    const sim::Graph g = load_graph("gpt", dims + opt);
    EXPECT_EQ(count_type(g, "BiasAdd"), 0) << opt;
    EXPECT_EQ(count_type(g, "BiasAddGrad"), 2 * biased) << opt;
    EXPECT_EQ(params_of(g), params_of(biased == 4 ? def : no_qkv)) << opt;
    EXPECT_DOUBLE_EQ(forward_macs(g), forward_macs(def)) << opt;
    int epilogues = 0;
    for (const auto& op : g.ops)
      if (op.phase == sim::Phase::Forward && op.type == "MatMul" && op.inputs.size() == 3) {
        ++epilogues;
        EXPECT_EQ(op.signature->input_shapes.at(2).size(), 1U) << op.name;
      }
    EXPECT_EQ(epilogues, 2 * biased) << opt;
    // The passes it saves: a read and a write of each biased output ([16 tokens, width], F32)
    // in each of the 2 layers; the GEMM reads the bias the add read.
    const double widths = (biased == 4 ? 3 * 64 : 0) + 64 + 4 * 64 + 64;
    EXPECT_DOUBLE_EQ(step_traffic(biased == 4 ? def : no_qkv) - step_traffic(g),
                     2 * 2 * 16 * widths * 4)
        << opt;
  }
  // Megatron's c_proj keeps its bias_dropout_add; the column linears take the epilogue.
  const sim::Graph mega = load_graph("gpt", dims + ",attention=fused_softmax,bias_epilogue=true");
  EXPECT_EQ(count_type(mega, "BiasDropoutAdd"), 4);
  EXPECT_EQ(count_type(mega, "BiasAdd"), 0);
  for (const char* bad : {"qkv_bias=maybe", "bias_epilogue=2"})
    EXPECT_THROW(load_graph("gpt", dims + "," + bad), sim::InputError) << bad;
}

TEST(Workloads, GptSeparateQkvIsThreeLinearsOfAThirdTheWidth) {
  // BERT's modeling.py (BertSelfAttention: query, key, value nn.Linear): three GEMMs of a third of
  // the fused projection's width, six parameter tensors a layer where c_attn has two, the same
  // parameters and forward MACs, and no Split of the fused output.
  const std::string dims = "layers=2,hidden=64,heads=4,seq=8,vocab=100,batch=2";
  const sim::Graph fused = load_graph("gpt", dims);
  const sim::Graph sep = load_graph("gpt", dims + ",qkv=separate");
  EXPECT_EQ(params_of(sep), params_of(fused));
  EXPECT_DOUBLE_EQ(forward_macs(sep), forward_macs(fused));
  int fused_vars = 0, sep_vars = 0;
  for (const auto& op : fused.ops) fused_vars += op.type == "VariableV2";
  for (const auto& op : sep.ops) sep_vars += op.type == "VariableV2";
  EXPECT_EQ(sep_vars - fused_vars, 2 * 4);
  EXPECT_EQ(count_type(sep, "ConcatV2"), 0);
  EXPECT_EQ(count_type(fused, "ConcatV2"), 2);
  EXPECT_EQ(count_type(sep, "BiasAdd"), count_type(fused, "BiasAdd") + 2 * 2);
  int qkv_gemms = 0;
  for (const auto& op : sep.ops)
    if (op.phase == sim::Phase::Forward && op.type == "MatMul" &&
        op.name.find("/attn/") != std::string::npos &&
        op.name.find("c_proj") == std::string::npos) {
      ++qkv_gemms;
      EXPECT_EQ(op.outputs.at(0).shape, (std::vector<std::int64_t>{2 * 8, 64})) << op.name;
    }
  EXPECT_EQ(qkv_gemms, 2 * 3);
  EXPECT_EQ(load_graph("gpt", dims + ",qkv=fused").ops.size(), fused.ops.size());
  for (const char* bad : {"qkv=split", "qkv=separate,attention=flash"})
    EXPECT_THROW(load_graph("gpt", dims + "," + bad), sim::InputError) << bad;
}

TEST(Workloads, GptFlashAttentionCarriesItsDropout) {
  // The attention's dropout runs inside the fused kernel: the forward op and its gradient, which
  // regenerates the mask, carry the probability (`dropout=`, 0.1 by default); no other op does.
  const std::string dims = "layers=2,hidden=64,heads=4,seq=32,vocab=100,batch=2,attention=flash";
  for (const auto& [opt, p] :
       {std::pair<std::string, double>{"", 0.1}, {",dropout=0.25", 0.25}, {",dropout=0", 0.0}}) {
    const sim::Graph g = load_graph("gpt", dims + opt);
    int attention = 0;
    for (const auto& op : g.ops) {
      if (op.type == "FlashAttention" || op.type == "FlashAttentionGrad") {
        EXPECT_EQ(op.dropout, p) << op.name << opt;
        ++attention;
      } else {
        EXPECT_EQ(op.dropout, 0.0) << op.name << opt;
      }
    }
    EXPECT_EQ(attention, 4) << opt;
  }
}

TEST(Workloads, RnnlmStructure) {
  const sim::Graph g = load_graph("rnnlm", "steps=3,hidden=64,vocab=100,batch=4");
  // Embedding V x H, two LSTM layers of (2H x 4H + 4H), softmax H x V + V.
  const std::int64_t h = 64, v = 100;
  EXPECT_EQ(params_of(g), v * h + 2 * (2 * h * 4 * h + 4 * h) + h * v + v);
  int matmuls = 0, updates = 0, backward = 0;
  for (const auto& op : g.ops) {
    matmuls += op.type == "MatMul" && op.phase == sim::Phase::Forward;
    updates += op.phase == sim::Phase::Update;
    backward += op.phase == sim::Phase::Backward;
  }
  EXPECT_EQ(matmuls, 3 * (2 + 1));  // per step: one per LSTM layer and the softmax projection
  EXPECT_EQ(updates, 7);            // one per variable (embedding, 2 x kernel+bias, softmax w, b)
  EXPECT_GT(backward, matmuls * 2);
}

TEST(Workloads, EveryVariableHasOneUpdateInItsGroup) {
  for (const auto& [name, opts] : std::map<std::string, std::string>{
           {"rnnlm", "steps=2,hidden=32,vocab=50"},
           {"nmt", "src_len=2,tgt_len=2,hidden=32,vocab=50"},
           {"gpt", "layers=2,hidden=64,heads=4,seq=8,vocab=100,batch=1"},
           {"resnet50", "batch=1,image_size=32"},
           {"inception_v3", "batch=1,image_size=75"}}) {
    const sim::Graph g = load_graph(name, opts);
    std::map<std::string, int> vars, updates;
    for (const auto& op : g.ops) {
      if (op.type == "VariableV2") {
        ++vars[op.group];
        EXPECT_GT(op.persistent.v, 0) << op.name;
      }
      if (op.phase == sim::Phase::Update) ++updates[op.group];
      if (op.phase == sim::Phase::Forward || op.phase == sim::Phase::Backward) {
        EXPECT_TRUE(op.signature.has_value()) << op.name;
        EXPECT_FALSE(op.layer.empty()) << op.name;
      }
    }
    EXPECT_EQ(vars, updates) << name;
    EXPECT_FALSE(g.metadata.at("options").empty());
  }
}

TEST(Workloads, GradientOpsShareTheForwardOpsGroup) {
  const sim::Graph g = load_graph("rnnlm", "steps=2,hidden=16,vocab=20,batch=2");
  const sim::OpId mm = g.op_index("rnnlm/lstm_0/t1/MatMul");
  ASSERT_GE(mm, 0);
  int grads = 0;
  for (const auto& op : g.ops) {
    if (op.phase == sim::Phase::Backward && op.group == g.ops[static_cast<std::size_t>(mm)].group) {
      ++grads;
      EXPECT_EQ(op.type, "MatMul");
    }
  }
  EXPECT_EQ(grads, 2);  // dX and dW
}

TEST(Workloads, UnknownOptionListsAcceptedKeys) {
  try {
    load_graph("nmt", "layers=4,bogus=1");
    FAIL() << "expected InputError";
  } catch (const sim::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--graph-opt"), std::string::npos) << m;
    EXPECT_NE(m.find("bogus"), std::string::npos) << m;
    EXPECT_NE(m.find("tgt_len"), std::string::npos) << m;
  }
  EXPECT_THROW(load_graph("rnnlm", "batch=0"), sim::InputError);
  EXPECT_THROW(load_graph("rnnlm", "batch=abc"), sim::InputError);
  EXPECT_THROW(load_graph("rnnlm", "optimizer=lion"), sim::InputError);
  EXPECT_THROW(load_graph("gpt", "hidden=100,heads=7"), sim::InputError);
  EXPECT_THROW(load_graph("no_such_model"), sim::InputError);
}

TEST(Workloads, NmtFourLayers) {
  const sim::Graph g2 = load_graph("nmt", "src_len=2,tgt_len=2,hidden=32,vocab=50");
  const sim::Graph g4 = load_graph("nmt", "layers=4,src_len=2,tgt_len=2,hidden=32,vocab=50");
  EXPECT_GE(g4.op_index("nmt/encoder/lstm_3/t1/MatMul"), 0);
  EXPECT_GE(g4.op_index("nmt/decoder/lstm_3/t1/MatMul"), 0);
  EXPECT_LT(g2.op_index("nmt/encoder/lstm_3/t1/MatMul"), 0);
  EXPECT_GT(g4.num_ops(), g2.num_ops());
}

// GNMT v2 (attention_output=false): the classifier reads the top decoder LSTM, no
// tanh(W_c [h; context]) layer; its (hidden + hidden) x hidden kernel and per-step ops are gone.
TEST(Workloads, NmtWithoutAttentionOutput) {
  const std::string base = "layers=4,src_len=2,tgt_len=2,hidden=32,vocab=50";
  const sim::Graph with = load_graph("nmt", base);
  const sim::Graph without = load_graph("nmt", base + ",attention_output=false");
  EXPECT_GE(with.op_index("nmt/softmax/t1/attention_output/MatMul"), 0);
  EXPECT_LT(without.op_index("nmt/softmax/t1/attention_output/MatMul"), 0);
  EXPECT_LT(without.op_index("nmt/softmax/attention_output_kernel"), 0);
  EXPECT_GE(without.op_index("nmt/softmax/t1/logits"), 0);
  const auto params = [](const sim::Graph& g) { return std::stoll(g.metadata.at("parameters")); };
  EXPECT_EQ(params(with) - params(without), (32 + 32) * 32);
  EXPECT_THROW(load_graph("nmt", base + ",attention_output=maybe"), sim::InputError);
}

// share_embedding=true (GNMT v2's train.py default --share-embedding: one nn.Embedding passed to
// encoder and decoder, seq2seq/models/gnmt.py): one table, the decoder's lookups read it, the
// gradients of all lookups summed into one, one update. GNMT v2 at Lambda's vocabulary 31794 has
// the 159,593,523 parameters its train.py prints less attention's normalize_scalar and
// normalize_bias (1 + 1024), which the graph's score omits.
TEST(Workloads, NmtSharedEmbedding) {
  const std::string base = "layers=2,src_len=2,tgt_len=2,hidden=32,vocab=50,optimizer=adam";
  const sim::Graph sep = load_graph("nmt", base);
  const sim::Graph shared = load_graph("nmt", base + ",share_embedding=true");
  const auto params = [](const sim::Graph& g) { return std::stoll(g.metadata.at("parameters")); };
  EXPECT_EQ(params(sep) - params(shared), 50 * 32);
  EXPECT_GE(sep.op_index("nmt/decoder/embedding/embedding"), 0);
  EXPECT_LT(shared.op_index("nmt/decoder/embedding/embedding"), 0);
  const sim::OpId table = shared.op_index("nmt/encoder/embedding/embedding");
  ASSERT_GE(table, 0);
  const sim::Op& lookup =
      shared.ops.at(static_cast<std::size_t>(shared.op_index("nmt/decoder/embedding/lookup_t1")));
  EXPECT_EQ(lookup.inputs.at(0).op, table);
  // One update op reads the table, and its gradient depends on the decoder's lookups too.
  int updates = 0;
  for (const auto& op : shared.ops) {
    if (op.phase != sim::Phase::Update) continue;
    for (const auto& r : op.inputs) updates += r.op == table ? 1 : 0;
  }
  EXPECT_EQ(updates, 1);
  EXPECT_GE(shared.op_index("gradients/nmt/decoder/embedding/lookup_t0_grad/GatherGrad"), 0);
  EXPECT_GE(shared.op_index("gradients/nmt/encoder/embedding/embedding_0/acc_3"), 0);
  const std::string gnmt =
      "layers=4,hidden=1024,src_len=2,tgt_len=2,attention_output=false,lstm=cudnn,vocab=31794";
  EXPECT_EQ(params(load_graph("nmt", gnmt)), 159593523 - 1025 + 31794LL * 1024);
  EXPECT_EQ(params(load_graph("nmt", gnmt + ",share_embedding=true")), 159593523 - 1025);
  EXPECT_THROW(load_graph("nmt", base + ",share_embedding=true,src_vocab=40"), sim::InputError);
  EXPECT_THROW(load_graph("nmt", base + ",share_embedding=maybe"), sim::InputError);
}

// embedding_grad=dense (PyTorch's nn.Embedding, sparse=False: GNMT v2's encoder.py/decoder.py):
// the table's gradient is the whole [V, E] table, written once from the accumulated look-up rows,
// and its update is dense; the default keeps TensorFlow's row slices and a sparse update.
TEST(Workloads, NmtDenseEmbeddingGradient) {
  const std::string base =
      "layers=2,src_len=2,tgt_len=2,hidden=32,vocab=50,batch=2,optimizer=adam,share_embedding=true";
  const auto table_update = [](const sim::Graph& g) -> const sim::Op& {
    const sim::OpId table = g.op_index("nmt/encoder/embedding/embedding");
    for (const auto& op : g.ops)
      if (op.phase == sim::Phase::Update && op.inputs.at(0).op == table) return op;
    throw std::runtime_error("no update of the embedding");
  };
  const sim::Graph sparse = load_graph("nmt", base);
  EXPECT_EQ(table_update(sparse).type, "SparseApplyAdam");
  EXPECT_LT(sparse.op_index("gradients/nmt/encoder/embedding/embedding/dense_backward"), 0);
  const sim::Graph dense = load_graph("nmt", base + ",embedding_grad=dense");
  const sim::OpId d = dense.op_index("gradients/nmt/encoder/embedding/embedding/dense_backward");
  ASSERT_GE(d, 0);
  const sim::Op& dop = dense.ops.at(static_cast<std::size_t>(d));
  EXPECT_EQ(dop.outputs.at(0).bytes.v, 50 * 32 * 4);  // the table, F32
  EXPECT_EQ(dop.bytes_written.v, 50 * 32 * 4);
  EXPECT_EQ(dop.bytes_read.v, 2 * 32 * 4);  // the accumulated rows: one [batch 2, 32] slice
  const sim::Op& up = table_update(dense);
  EXPECT_EQ(up.type, "ApplyAdam");
  EXPECT_EQ(up.inputs.at(1).op, d);
  // Same parameters either way.
  EXPECT_EQ(dense.metadata.at("parameters"), sparse.metadata.at("parameters"));
  EXPECT_THROW(load_graph("nmt", base + ",embedding_grad=maybe"), sim::InputError);
}

// Ops of `type` in `phase` whose layer is `layer`, and the sum of their FLOPs.
std::pair<int, double> layer_ops(const sim::Graph& g, const std::string& layer, sim::Phase phase,
                                 const std::string& type) {
  std::pair<int, double> r{0, 0.0};
  for (const auto& op : g.ops)
    if (op.layer == layer && op.phase == phase && op.type == type) {
      ++r.first;
      r.second += op.flops.v;
    }
  return r;
}

double gemm_flops(const sim::Graph& g, sim::Phase phase) {
  double f = 0;
  for (const auto& op : g.ops)
    if (op.phase == phase && (op.type == "MatMul" || op.type == "BatchMatMul")) f += op.flops.v;
  return f;
}

// lstm=cudnn (PyTorch nn.LSTM on cuDNN): per layer one input GEMM over all steps, per step one
// recurrent GEMM and one fused pointwise kernel; backward per step one pointwise kernel and one
// recurrent dgrad GEMM, then dX, dW_ih, dW_hh as one GEMM each and one bias reduction.
// lstm=unrolled (the default): TensorFlow's per-step cell, its GEMM and weight gradient per step.
TEST(Workloads, NmtCudnnLstm) {
  const std::string base = "layers=2,src_len=3,tgt_len=2,hidden=32,vocab=50,batch=4";
  const sim::Graph un = load_graph("nmt", base);
  const sim::Graph cu = load_graph("nmt", base + ",lstm=cudnn");
  const std::int64_t bt = 4, h = 32;
  using sim::Phase;
  // Encoder layer 1: 3 steps from a zero state (no gradient for it: step 0 has no dgrad GEMM).
  const std::string enc1 = "nmt/encoder/lstm_1";
  EXPECT_EQ(layer_ops(cu, enc1, Phase::Forward, "MatMul").first, 1 + 3);
  EXPECT_EQ(layer_ops(cu, enc1, Phase::Forward, "LSTMPointwise").first, 3);
  EXPECT_EQ(layer_ops(cu, enc1, Phase::Backward, "LSTMPointwiseGrad").first, 3);
  EXPECT_EQ(layer_ops(cu, enc1, Phase::Backward, "MatMul").first, 2 + 3);
  EXPECT_EQ(layer_ops(cu, enc1, Phase::Backward, "BiasAddGrad").first, 1);
  EXPECT_EQ(layer_ops(cu, enc1, Phase::Forward, "Sigmoid").first, 0);
  EXPECT_EQ(layer_ops(un, enc1, Phase::Forward, "MatMul").first, 3);
  EXPECT_EQ(layer_ops(un, enc1, Phase::Forward, "Sigmoid").first, 3 * 3);
  EXPECT_EQ(layer_ops(un, enc1, Phase::Backward, "MatMul").first, 2 * 3);
  EXPECT_EQ(layer_ops(un, enc1, Phase::Forward, "LSTMPointwise").first, 0);
  // Decoder layer 1: 2 steps from the encoder's final state (step 0's dgrad flows into it).
  const std::string dec1 = "nmt/decoder/lstm_1";
  EXPECT_EQ(layer_ops(cu, dec1, Phase::Forward, "MatMul").first, 1 + 2);
  EXPECT_EQ(layer_ops(cu, dec1, Phase::Forward, "LSTMPointwise").first, 2);
  EXPECT_EQ(layer_ops(cu, dec1, Phase::Backward, "MatMul").first, 2 + 3);
  // The layer-wide weight gradient: all steps in one GEMM of 2 * T*B * H * 4H FLOPs.
  const sim::Op& dw_hh = cu.ops.at(
      static_cast<std::size_t>(cu.op_index("gradients/" + enc1 + "/gates_x_grad/MatMul_1")));
  EXPECT_DOUBLE_EQ(dw_hh.flops.v, 2.0 * 3 * bt * h * 4 * h);
  EXPECT_EQ(dw_hh.outputs.at(0).shape, (Shape{h, 4 * h}));
  // GEMM FLOPs: forward identical; backward less only the dgrad of the 3 zero initial states
  // (encoder layers 0, 0 backward, 1), which the unrolled cell's [x, h] dgrad computes.
  EXPECT_DOUBLE_EQ(gemm_flops(cu, Phase::Forward), gemm_flops(un, Phase::Forward));
  EXPECT_DOUBLE_EQ(gemm_flops(un, Phase::Backward) - gemm_flops(cu, Phase::Backward),
                   3 * 2.0 * bt * h * 4 * h);
  // Dependencies: step t's recurrent GEMM reads step t-1's pointwise output; layer 1's input
  // GEMM reads layer 0's whole output (a view of every step's y).
  const auto input_ops = [&](const std::string& name) {
    std::set<std::string> in;
    for (const auto& r : cu.ops.at(static_cast<std::size_t>(cu.op_index(name))).inputs)
      in.insert(cu.ops.at(static_cast<std::size_t>(r.op)).name);
    return in;
  };
  EXPECT_EQ(input_ops(enc1 + "/t2/recurrent_gemm").count(enc1 + "/t1/pointwise"), 1U);
  EXPECT_EQ(input_ops("nmt/encoder/lstm_0_bw/t1/recurrent_gemm")
                .count("nmt/encoder/lstm_0_bw/t2/pointwise"),
            1U);
  EXPECT_EQ(input_ops(enc1 + "/input_gemm").count("nmt/encoder/lstm_0/y_fw_bw"), 1U);
  EXPECT_EQ(input_ops("nmt/encoder/lstm_0/y_fw_bw").count("nmt/encoder/lstm_0/y"), 1U);
  EXPECT_EQ(input_ops("nmt/encoder/lstm_0/y").size(), 3U);
  // The input dgrad reads the gate gradients of all steps (a view over the 3 pointwise grads).
  const auto dg = input_ops("gradients/" + enc1 + "/input_gemm_grad/MatMul_0");
  EXPECT_EQ(dg.count("gradients/" + enc1 + "/gates_x_grad/View_0"), 1U);
  EXPECT_EQ(input_ops("gradients/" + enc1 + "/gates_x_grad/View_0").size(), 3U);
  // The fused kernel's traffic (F32): reads the 4H pre-activations and c_{t-1}; writes h, c and
  // the 4H gate activations.
  const sim::Op& pw = cu.ops.at(static_cast<std::size_t>(cu.op_index(enc1 + "/t1/pointwise")));
  EXPECT_EQ(pw.bytes_read.v, (4 + 1) * bt * h * 4);
  EXPECT_EQ(pw.bytes_written.v, (1 + 1 + 4) * bt * h * 4);
  EXPECT_THROW(load_graph("nmt", base + ",lstm=fused"), sim::InputError);
}

// loss=label_smoothing (GNMT v2's LabelSmoothing, smoothing.py): per step a log-softmax to F32
// and one reduction over it; backward the mean's and the gather's gradients, their add and the
// softmax's backward. Under precision=f16 the log-probabilities and their gradients stay F32;
// only the logits and the logits' gradient are half. Bytes per element of [B, V]: 4 + 2 + 4 +
// 4 + 4 + 12 + (8 + 2) = 40 in f16 (44 in F32), against 8 for the default xent in f16.
TEST(Workloads, NmtLabelSmoothedLossRunsInF32) {
  const std::string base = "layers=2,src_len=2,tgt_len=2,hidden=32,vocab=50,batch=4,lstm=cudnn";
  const std::int64_t n = 4 * 50;  // B x V
  const auto traffic = [&](const sim::Graph& g, const std::string& type) {
    std::int64_t bytes = 0;
    for (const auto& op : g.ops)
      if (op.type == type && op.name.find("/t1/") != std::string::npos)
        bytes += op.bytes_read.v + op.bytes_written.v;
    return bytes;
  };
  const sim::Graph h = load_graph("nmt", base + ",loss=label_smoothing,precision=f16");
  const sim::Graph f = load_graph("nmt", base + ",loss=label_smoothing");
  EXPECT_EQ(count_type(h, "LogSoftmax"), 2);
  EXPECT_EQ(count_type(h, "SparseSoftmaxCrossEntropyWithLogits"), 0);
  const sim::Op& lp = h.ops.at(static_cast<std::size_t>(h.op_index("nmt/softmax/t1/log_softmax")));
  EXPECT_EQ(lp.outputs.at(0).dtype, sim::Dtype::F32);
  EXPECT_EQ(lp.bytes_read.v, 2 * n);  // half logits
  EXPECT_EQ(lp.bytes_written.v, 4 * n);
  EXPECT_EQ(traffic(h, "SmoothedNll"), 4 * n + 4 * 4 + 4 * 4);  // + labels read, loss written
  EXPECT_EQ(traffic(h, "RowMeanGrad") - 4 * n, 4 * 2);          // + the half dy read
  EXPECT_EQ(traffic(h, "NllGatherGrad") - 4 * n, 4 * 2 + 4 * 4);
  const sim::Op& add = h.ops.at(
      static_cast<std::size_t>(h.op_index("gradients/nmt/softmax/t1/log_softmax_0/acc_1")));
  EXPECT_EQ(add.outputs.at(0).dtype, sim::Dtype::F32);
  EXPECT_EQ(add.bytes_read.v + add.bytes_written.v, 12 * n);
  EXPECT_EQ(traffic(h, "LogSoftmaxGrad"), 8 * n + 2 * n);
  EXPECT_EQ(traffic(f, "LogSoftmaxGrad"), 8 * n + 4 * n);
  // The default loss is unchanged; another value is refused.
  EXPECT_EQ(load_graph("nmt", base + ",loss=xent").num_ops(), load_graph("nmt", base).num_ops());
  EXPECT_THROW(load_graph("nmt", base + ",loss=focal"), sim::InputError);
}

// optimizer=adam,optimizer_impl=per_param (torch.optim.Adam's loop): seven kernels a parameter,
// each a pass over the whole parameter, 11 reads and 7 writes of its F32 bytes; the fused
// ApplyAdam reads 4 and writes 3, and only the rows an embedding's sparse gradient touched, where
// PyTorch's nn.Embedding gradient is dense and the loop updates every row.
TEST(Workloads, TorchAdamPassesOverEveryParameter) {
  const std::string base = "layers=2,src_len=2,tgt_len=2,hidden=32,vocab=50,batch=4,lstm=cudnn";
  const sim::Graph fused = load_graph("nmt", base + ",optimizer=adam");
  const sim::Graph torch = load_graph("nmt", base + ",optimizer=adam,optimizer_impl=per_param");
  // The kernels of one parameter's update, summed: count, bytes read and written.
  const auto kernels = [](const sim::Graph& g, const std::string& var) {
    const std::string prefix = "update/" + var + "/";
    std::array<std::int64_t, 3> s{0, 0, 0};
    for (const sim::Op& op : g.ops)
      if (op.name.rfind(prefix, 0) == 0) {
        ++s[0];
        s[1] += op.bytes_read.v;
        s[2] += op.bytes_written.v;
      }
    return s;
  };
  const std::int64_t kernel = 32 * 4 * 32 * 4;  // decoder layer 0's W_hh, F32 bytes
  EXPECT_EQ(kernels(torch, "nmt/decoder/lstm_0/weight_hh"),
            (std::array<std::int64_t, 3>{7, 11 * kernel, 7 * kernel}));
  const sim::Op& f =
      fused.ops.at(static_cast<std::size_t>(fused.op_index("update/nmt/decoder/lstm_0/weight_hh")));
  EXPECT_EQ(f.bytes_read.v, 4 * kernel);
  EXPECT_EQ(f.bytes_written.v, 3 * kernel);
  // The embedding: the looked-up rows (sparse) for ApplyAdam, all 50 rows of 32 for PyTorch.
  const std::int64_t table = 50 * 32 * 4;
  EXPECT_EQ(kernels(torch, "nmt/decoder/embedding/embedding"),
            (std::array<std::int64_t, 3>{7, 11 * table, 7 * table}));
  const sim::Op& fe = fused.ops.at(
      static_cast<std::size_t>(fused.op_index("update/nmt/decoder/embedding/embedding")));
  EXPECT_EQ(fe.type, "SparseApplyAdam");
  EXPECT_LT(fe.bytes_written.v, 3 * table);
  EXPECT_THROW(load_graph("nmt", base + ",optimizer=torch_adam"), sim::InputError);
}

// The default is the unrolled cell, unchanged: the op count in docs/workloads.md.
TEST(Workloads, NmtDefaultLstmIsUnrolled) {
  const sim::Graph g = load_graph("nmt");
  EXPECT_EQ(g.num_ops(), 9583);
  EXPECT_EQ(count_type(g, "LSTMPointwise"), 0);
  const sim::Graph explicit_unrolled = load_graph("nmt", "lstm=unrolled");
  EXPECT_EQ(explicit_unrolled.num_ops(), g.num_ops());
  EXPECT_DOUBLE_EQ(sim::graph_stats(explicit_unrolled).flops.v, sim::graph_stats(g).flops.v);
}

TEST(Workloads, JsonRoundTrip) {
  for (const auto& [name, opts] : std::map<std::string, std::string>{
           {"rnnlm", "steps=2,hidden=32,vocab=50"},
           {"nmt", "src_len=2,tgt_len=2,hidden=32,vocab=50"},
           {"gpt", "layers=1,hidden=64,heads=4,seq=8,vocab=100,batch=1"},
           {"resnet50", "batch=1,image_size=32"},
           {"inception_v3", "batch=1,image_size=75"}}) {
    const sim::Graph g = load_graph(name, opts);
    const std::string text = sim::graph_to_json(g);
    const sim::Graph back = sim::parse_graph_json(text, name);
    EXPECT_EQ(sim::graph_to_json(back), text) << name;
    ASSERT_EQ(back.num_ops(), g.num_ops());
    for (int i = 0; i < g.num_ops(); ++i) {
      const auto& a = g.ops[static_cast<std::size_t>(i)];
      const auto& b = back.ops[static_cast<std::size_t>(i)];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.inputs, b.inputs);
      EXPECT_EQ(a.flops.v, b.flops.v);
      EXPECT_EQ(a.persistent, b.persistent);
      EXPECT_EQ(a.group, b.group);
      EXPECT_EQ(a.signature, b.signature);
    }
  }
}

TEST(Workloads, BuiltinNamesSorted) {
  EXPECT_EQ(builtin_graph_names(),
            (std::vector<std::string>{"gpt", "inception_v3", "nmt", "resnet50", "rnnlm"}));
}

}  // namespace
}  // namespace placesim::models

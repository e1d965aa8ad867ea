// The optimizer step as frameworks run it (--graph-opt optimizer_impl=...): kernel counts and
// bytes per mode, and multi_tensor_apply's launches against a real trace.
#include "models/optimizer_impl.hpp"

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "models/registry.hpp"
#include "sim/error.hpp"

namespace placesim::models {
namespace {

// The optimizer kernels of a graph but its sparse SparseApply* updates (the apply form's touched
// rows of an embedding): one op each.
struct Totals {
  std::int64_t kernels = 0, read = 0, written = 0, persistent = 0;
};

Totals updates_of(const sim::Graph& g) {
  Totals t;
  for (const sim::Op& op : g.ops) {
    if (op.phase != sim::Phase::Update || op.type.rfind("SparseApply", 0) == 0) continue;
    ++t.kernels;
    t.read += op.bytes_read.v;
    t.written += op.bytes_written.v;
    t.persistent += op.persistent.v;
  }
  return t;
}

// Elements of the dense parameters (the apply form reads p, g and `slots` state tensors).
std::int64_t elements_of(const sim::Graph& g, int slots) {
  std::int64_t n = 0;
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Update && op.type.rfind("Apply", 0) == 0)
      n += op.bytes_read.v / (2 + slots) / 4;
  return n;
}

// The sparse updates of the apply form: how many, the elements of their whole parameters (which
// the PyTorch forms update densely, nn.Embedding's gradient being dense) and their state bytes.
Totals sparse_of(const sim::Graph& g) {
  Totals t;
  for (const sim::Op& op : g.ops) {
    if (op.phase != sim::Phase::Update || op.type.rfind("SparseApply", 0) != 0) continue;
    ++t.kernels;
    const sim::TensorOut& p = g.ops.at(static_cast<std::size_t>(op.inputs.at(0).op)).outputs.at(0);
    t.read += p.bytes.v / 4;
    t.persistent += op.persistent.v;
  }
  return t;
}

// rnnlm (2 layers of 64, vocabulary 100): its parameter tensors, each under one chunk; the
// embedding a sparse update in the apply form, a dense one in the others.
TEST(OptimizerImpl, KernelsAndBytesOfEachMode) {
  const std::string base = "layers=2,hidden=64,vocab=100,steps=4,batch=8,optimizer=adam";
  const sim::Graph g = load_graph("rnnlm", base);
  const Totals apply = updates_of(g);
  const Totals defaults = updates_of(load_graph("rnnlm", base + ",optimizer_impl=apply"));
  const Totals per_param = updates_of(load_graph("rnnlm", base + ",optimizer_impl=per_param"));
  const sim::Graph fg = load_graph("rnnlm", base + ",optimizer_impl=foreach");
  const Totals foreach = updates_of(fg);
  const Totals fused = updates_of(load_graph("rnnlm", base + ",optimizer_impl=fused"));
  const std::int64_t n = elements_of(g, 2);
  const Totals sparse = sparse_of(g);
  const std::int64_t all = n + sparse.read;  // every parameter's elements
  ASSERT_GT(apply.kernels, 1);
  ASSERT_GT(n, 0);
  ASSERT_EQ(sparse.kernels, 1);
  // Apply (TensorFlow's ApplyAdam, the graphs as built): one kernel a parameter, p, g, m, v read,
  // p, m, v written.
  EXPECT_EQ(apply.read, 4 * 4 * n);
  EXPECT_EQ(apply.written, 3 * 4 * n);
  EXPECT_EQ(defaults.read, apply.read);
  EXPECT_EQ(defaults.kernels, apply.kernels);
  // PyTorch's per-parameter Adam: 7 kernels a parameter, 11 reads and 7 writes an element.
  EXPECT_EQ(per_param.kernels, 7 * (apply.kernels + sparse.kernels));
  EXPECT_EQ(per_param.read, 11 * 4 * all);
  EXPECT_EQ(per_param.written, 7 * 4 * all);
  // foreach: the same bytes; every list fits one launch (fewer than 48 tensors, 320 chunks).
  EXPECT_EQ(foreach.kernels, 7);
  EXPECT_EQ(foreach.read, per_param.read);
  EXPECT_EQ(foreach.written, per_param.written);
  // fused (apex FusedAdam): one launch, the apply form's bytes a parameter element.
  EXPECT_EQ(fused.kernels, 1);
  EXPECT_EQ(fused.read, 4 * 4 * all);
  EXPECT_EQ(fused.written, 3 * 4 * all);
  // The state stays resident: as much in every mode.
  EXPECT_EQ(per_param.persistent, apply.persistent + sparse.persistent);
  EXPECT_EQ(foreach.persistent, apply.persistent + sparse.persistent);
  EXPECT_EQ(fused.persistent, apply.persistent + sparse.persistent);
  // The kernels are memory-bound elementwise ops of the update phase, in stream order.
  for (const sim::Op& op : fg.ops)
    if (op.type.rfind("aten::_foreach_", 0) == 0) EXPECT_EQ(op.phase, sim::Phase::Update);
  EXPECT_EQ(fg.metadata.at("optimizer_impl"), "foreach");
}

TEST(OptimizerImpl, MultiTensorLaunchesFollowTheListLimits) {
  // 200 one-chunk tensors at depth 1: launches at 110 tensors and at the end.
  std::vector<int> l = multi_tensor_launches(std::vector<std::int64_t>(200, 1000), 1);
  EXPECT_EQ(std::accumulate(l.begin(), l.end(), 0), 2);
  EXPECT_EQ(l[109], 1);
  EXPECT_EQ(l[199], 1);
  // With a scalar list one launch holds 96.
  l = multi_tensor_launches(std::vector<std::int64_t>(200, 1000), 1, true);
  EXPECT_EQ(l[95], 1);
  // One tensor of 1000 chunks: cut at every 320 chunks, 4 launches, all its own.
  l = multi_tensor_launches({1000 * 65536}, 2);
  EXPECT_EQ(l[0], 4);
  // Empty tensors launch nothing and close nothing.
  l = multi_tensor_launches({0, 5, 0}, 3);
  EXPECT_EQ(l, (std::vector<int>{0, 1, 0}));
}

// The A100 ResNet-50 trace (tests/data/calibration/a100_2rank_nccl_rank0.json.gz, torch 2.0
// foreach SGD with momentum): per step _foreach_mul_ launches 3 multi_tensor_apply kernels of
// 180, 320 and 8 blocks and each _foreach_add_ 3 of 71, 155 and 282: 9 kernels over 508 chunks.
TEST(OptimizerImpl, ForeachMomentumMatchesTheA100ResNet50Trace) {
  const sim::Graph apply = load_graph("resnet50", "batch=32");
  std::vector<std::int64_t> numel;
  for (const sim::Op& op : apply.ops)
    if (op.phase == sim::Phase::Update) numel.push_back(op.bytes_read.v / 3 / 4);
  ASSERT_EQ(numel.size(), 161u);
  std::int64_t chunks = 0;
  for (const std::int64_t n : numel) chunks += (n + 65535) / 65536;
  EXPECT_EQ(chunks, 508);
  const std::vector<int> d1 = multi_tensor_launches(numel, 1);
  const std::vector<int> d2 = multi_tensor_launches(numel, 2);
  EXPECT_EQ(std::accumulate(d1.begin(), d1.end(), 0), 3);
  EXPECT_EQ(std::accumulate(d2.begin(), d2.end(), 0), 3);
  const sim::Graph g = load_graph("resnet50", "batch=32,optimizer_impl=foreach");
  const Totals t = updates_of(g);
  EXPECT_EQ(t.kernels, 9);
  // Bytes: buf r1 w1, buf += grad r2 w1, param += buf r2 w1.
  const std::int64_t n = elements_of(apply, 1);
  EXPECT_EQ(t.read, 5 * 4 * n);
  EXPECT_EQ(t.written, 3 * 4 * n);
  // The first launch of the depth-1 list op carries 110 tensors.
  const sim::Op& first = g.ops[static_cast<std::size_t>(g.op_index("update/0_mul_/launch0"))];
  std::int64_t first_elems = 0;
  for (std::size_t t2 = 0; t2 < 110; ++t2) first_elems += numel[t2];
  EXPECT_EQ(first.bytes_read.v, 4 * first_elems);
}

TEST(OptimizerImpl, BadInputIsNamed) {
  try {
    load_graph("rnnlm", "optimizer_impl=tf");
    FAIL();
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer_impl"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_graph("inception_v3", "batch=2,optimizer_impl=fused"), sim::InputError);
}

// apex FusedLAMB (optimizer=lamb,optimizer_impl=fused; csrc/multi_tensor_lamb.cu and
// apex/optimizers/fused_lamb.py): five multi-tensor passes, the global gradient norm, the
// parameter norms, stage 1 (g, p, m, v read; update, m, v written), the update norms and stage 2
// (update, p read; p written): 9 reads and 4 writes of F32 a parameter against fused Adam's 4 and
// 3. torch.optim has no LAMB: per_param and foreach are refused.
TEST(OptimizerImpl, FusedLambRunsApexFivePasses) {
  const std::string gpt = "layers=2,hidden=64,heads=2,seq=16,vocab=100,positions=16,batch=2,";
  const sim::Graph apply = load_graph("gpt", gpt + "optimizer=lamb");
  const sim::Graph lamb = load_graph("gpt", gpt + "optimizer=lamb,optimizer_impl=fused");
  const sim::Graph adam = load_graph("gpt", gpt + "optimizer=adam,optimizer_impl=fused");
  const std::int64_t n = elements_of(apply, 2);
  ASSERT_GT(n, 0);
  const Totals l = updates_of(lamb), a = updates_of(adam);
  EXPECT_EQ(l.read, 9 * 4 * n);
  EXPECT_EQ(l.written, 4 * 4 * n);
  EXPECT_EQ(a.read, 4 * 4 * n);
  EXPECT_EQ(a.written, 3 * 4 * n);
  EXPECT_EQ(l.persistent, a.persistent);  // m, v and the master copy
  std::set<std::string> passes;
  for (const sim::Op& op : lamb.ops)
    if (op.phase == sim::Phase::Update) {
      EXPECT_EQ(op.type, "apex::multi_tensor_lamb");
      passes.insert(op.name.substr(0, op.name.find("/launch")));
    }
  EXPECT_EQ(passes, (std::set<std::string>{"update/0_l2norm_grad", "update/1_l2norm_param",
                                           "update/2_lamb_stage1", "update/3_l2norm_update",
                                           "update/4_lamb_stage2"}));
  EXPECT_THROW(load_graph("gpt", gpt + "optimizer=lamb,optimizer_impl=per_param"), sim::InputError);
  EXPECT_THROW(load_graph("gpt", gpt + "optimizer=lamb,optimizer_impl=foreach"), sim::InputError);
}

// DeepLearningExamples' BertAdam (optimizer=bertadam,optimizer_impl=per_param; BERT/optimization.py
// @ 2a520dd5): one multi_tensor_l2norm over the parameters and its .item(), then per parameter
// after that sync the loop's eager kernels in order, the weight decay's mul and add_ only for
// parameters of two or more dimensions (run_squad.py's no_decay: biases and LayerNorm). Bytes: 19
// parameter-sized F32 reads a decayed parameter, 16 one without decay.
TEST(OptimizerImpl, BertAdamRunsItsEagerLoopAfterTheNormSync) {
  const std::string gpt = "layers=2,hidden=64,heads=2,seq=16,vocab=100,positions=16,batch=2,";
  const sim::Graph apply = load_graph("gpt", gpt + "optimizer=bertadam");
  const sim::Graph b = load_graph("gpt", gpt + "optimizer=bertadam,optimizer_impl=per_param");
  const std::vector<std::string> decayed{"mul", "div", "mul_", "add_", "mul_", "addcmul_", "sqrt",
                                         "add", "div", "mul",  "add_", "mul",  "neg",      "add_"};
  std::vector<std::string> no_decay = decayed;
  no_decay.erase(no_decay.begin() + 9, no_decay.begin() + 11);
  std::int64_t n = 0, read = 0, params = 0, flat = 0;
  for (const sim::Op& u : apply.ops) {
    if (u.phase != sim::Phase::Update) continue;
    ASSERT_EQ(u.type, "ApplyBertAdam");
    const sim::TensorOut& p =
        apply.ops.at(static_cast<std::size_t>(u.inputs.at(0).op)).outputs.at(0);
    const bool is_flat = p.shape.size() == 1;
    const std::int64_t e = p.bytes.v / 4;
    n += e;
    read += e * 4 * (is_flat ? 16 : 19);
    ++params;
    flat += is_flat;
    std::vector<std::string> got;
    for (const sim::Op& k : b.ops)
      if (k.phase == sim::Phase::Update && k.name.rfind(u.name + "/", 0) == 0)
        got.push_back(k.type.substr(6));  // past "aten::"
    EXPECT_EQ(got, is_flat ? no_decay : decayed) << u.name;
  }
  ASSERT_GT(flat, 0);
  ASSERT_GT(params, flat);
  std::int64_t norm_read = 0, kernels = 0, items = 0, item = -1;
  for (std::size_t o = 0; o < b.ops.size(); ++o) {
    const sim::Op& k = b.ops[o];
    if (k.phase != sim::Phase::Update) continue;
    if (k.type == "apex::multi_tensor_l2norm") norm_read += k.bytes_read.v;
    if (k.type == "aten::_local_scalar_dense") {
      ++items;
      item = static_cast<std::int64_t>(o);
    }
    if (k.type.rfind("aten::", 0) == 0 && k.type != "aten::_local_scalar_dense") ++kernels;
  }
  EXPECT_EQ(norm_read, 4 * n);
  EXPECT_EQ(items, 1);
  EXPECT_EQ(kernels, 14 * (params - flat) + 12 * flat);
  std::int64_t loop_read = 0;
  for (const sim::Op& k : b.ops) {
    if (k.phase != sim::Phase::Update || k.type.rfind("aten::", 0) != 0 ||
        k.type == "aten::_local_scalar_dense")
      continue;
    loop_read += k.bytes_read.v;
    if (k.name.size() > 6 && k.name.substr(k.name.size() - 6) == "/0_mul") {
      EXPECT_NE(std::find(k.control_inputs.begin(), k.control_inputs.end(), item),
                k.control_inputs.end())
          << k.name << " is launched before the norm's .item()";
    }
  }
  EXPECT_EQ(loop_read, read);
  for (const char* impl : {"foreach", "fused"})
    EXPECT_THROW(load_graph("gpt", gpt + "optimizer=bertadam,optimizer_impl=" + impl),
                 sim::InputError);
}

}  // namespace
}  // namespace placesim::models

// The training loop's kernels and host syncs around the step (grad_clip, master_weights,
// zero_grad, loss_item, host_sum, cpu_sum, grad_scaler, grad_div): kernels and bytes per option,
// syncs as waits, and the step they lengthen.
#include "models/train_loop.hpp"

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <string>

#include "models/registry.hpp"
#include "sim/cluster.hpp"
#include "sim/error.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"

namespace placesim::models {
namespace {

struct Kernels {
  std::int64_t count = 0, read = 0, written = 0;
};

Kernels of_type(const sim::Graph& g, const std::string& type) {
  Kernels k;
  for (const sim::Op& op : g.ops)
    if (op.type == type) {
      ++k.count;
      k.read += op.bytes_read.v;
      k.written += op.bytes_written.v;
    }
  return k;
}

// Parameters and their elements: what each Adam update (dense, or an embedding's sparse one)
// reads as its variable.
struct Params {
  std::int64_t count = 0, elements = 0;
};
Params params_of(const sim::Graph& g) {
  Params p;
  for (const sim::Op& op : g.ops)
    if (op.type == "ApplyAdam" || op.type == "SparseApplyAdam") {
      const sim::TensorOut& v = g.ops[static_cast<std::size_t>(op.inputs.at(0).op)].outputs.at(0);
      ++p.count;
      p.elements += v.bytes.v / sim::dtype_size(v.dtype);
    }
  return p;
}

const std::string kNmt =
    "layers=2,hidden=256,src_len=6,tgt_len=5,vocab=1000,batch=16,lstm=cudnn,attention_output=false";

TEST(TrainLoop, ClipNormReadsEveryGradientAndScalesIt) {
  const sim::Graph plain = load_graph("nmt", kNmt);
  const Params p = params_of(plain);
  ASSERT_GT(p.count, 10);
  const sim::Graph g = load_graph("nmt", kNmt + ",grad_clip=norm");
  // One norm a gradient plus the total norm; one mul_ a gradient, a read and a write (F32).
  const Kernels norm = of_type(g, "aten::norm"), mul = of_type(g, "aten::mul_");
  EXPECT_EQ(norm.count, p.count + 1);
  EXPECT_EQ(norm.read, p.elements * 4 + p.count * 4);
  EXPECT_EQ(mul.count, p.count);
  EXPECT_EQ(mul.read, p.elements * 4);
  EXPECT_EQ(mul.written, p.elements * 4);
  EXPECT_EQ(of_type(g, "aten::_local_scalar_dense").count, 0);
  EXPECT_EQ(of_type(g, "aten::clamp").count, 1);
  // PyTorch before 1.9 reads the coefficient on the host: every update waits for that read.
  const sim::Graph s = load_graph("nmt", kNmt + ",grad_clip=norm_sync");
  sim::OpId item = -1;
  for (sim::OpId o = 0; o < s.num_ops(); ++o)
    if (s.ops[static_cast<std::size_t>(o)].type == "aten::_local_scalar_dense") item = o;
  ASSERT_GE(item, 0);
  for (const sim::Op& op : s.ops)
    if (op.type == "ApplyAdam" || op.type == "SparseApplyAdam")
      EXPECT_NE(std::find(op.control_inputs.begin(), op.control_inputs.end(), item),
                op.control_inputs.end())
          << op.name;
}

TEST(TrainLoop, ApexClipIsOneNormASyncAndOneScale) {
  // run_squad.py's GradientClipper: multi_tensor_l2norm over the gradients, .item(), then
  // multi_tensor_scale over [l, l]: each gradient read by the norm, read and written by the scale.
  const sim::Graph plain = load_graph("nmt", kNmt);
  const Params p = params_of(plain);
  const sim::Graph g = load_graph("nmt", kNmt + ",grad_clip=apex");
  const Kernels norm = of_type(g, "apex::multi_tensor_l2norm");
  const Kernels scale = of_type(g, "apex::multi_tensor_scale");
  EXPECT_GE(norm.count, 1);
  EXPECT_EQ(norm.read, p.elements * 4);
  EXPECT_EQ(scale.read, p.elements * 4);
  EXPECT_EQ(scale.written, p.elements * 4);
  EXPECT_EQ(of_type(g, "aten::norm").count + of_type(g, "aten::mul_").count, 0);
  sim::OpId item = -1;
  for (sim::OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[static_cast<std::size_t>(o)].type == "aten::_local_scalar_dense") {
      EXPECT_EQ(item, -1);
      item = o;
    }
  ASSERT_GE(item, 0);
  // The scale launches and every update wait for the host's read of the norm.
  for (const sim::Op& op : g.ops)
    if (op.type == "apex::multi_tensor_scale" || op.type == "ApplyAdam" ||
        op.type == "SparseApplyAdam")
      EXPECT_NE(std::find(op.control_inputs.begin(), op.control_inputs.end(), item),
                op.control_inputs.end())
          << op.name;
  // Under apex O2 it reads the F32 master gradients.
  const sim::Graph m =
      load_graph("nmt", kNmt + ",precision=f16,master_weights=apex,grad_clip=apex");
  EXPECT_EQ(of_type(m, "apex::multi_tensor_l2norm").read, p.elements * 4);
  EXPECT_EQ(of_type(m, "aten::_local_scalar_dense").count, 2);
  EXPECT_EQ(g.metadata.at("grad_clip"), "apex");
  EXPECT_THROW(load_graph("nmt", kNmt + ",grad_clip=clipper"), sim::InputError);
}

TEST(TrainLoop, ApexMasterWeightsCopyGradientsInAndWeightsOut) {
  const sim::Graph half = load_graph("nmt", kNmt + ",precision=f16");
  const Params p = params_of(half);
  const sim::Graph g = load_graph("nmt", kNmt + ",precision=f16,master_weights=apex");
  // Unscale: half gradients in (2 bytes), F32 master gradients out (4); after the step the F32
  // master weights in (4), half weights out (2): multi_tensor_scale, in 65,536-element chunks.
  const Kernels scale = of_type(g, "apex::multi_tensor_scale");
  EXPECT_EQ(scale.read, p.elements * 2 + p.elements * 4);
  EXPECT_EQ(scale.written, p.elements * 4 + p.elements * 2);
  EXPECT_GE(scale.count, 2);
  EXPECT_EQ(of_type(g, "aten::_local_scalar_dense").count, 1);  // the overflow flag's .item()
  // Clipping then reads the F32 master gradients.
  const sim::Graph c =
      load_graph("nmt", kNmt + ",precision=f16,master_weights=apex,grad_clip=norm");
  EXPECT_EQ(of_type(c, "aten::mul_").read, p.elements * 4);
  try {
    load_graph("nmt", kNmt + ",master_weights=apex");
    FAIL();
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("master_weights"), std::string::npos) << e.what();
  }
}

TEST(TrainLoop, ZeroGradFillsAndTheBackwardAddsIntoIt) {
  const sim::Graph f32 = load_graph("nmt", kNmt);
  const Params p = params_of(f32);
  const sim::Graph g = load_graph("nmt", kNmt + ",zero_grad=fill");
  const Kernels add = of_type(g, "aten::add_"), zero = of_type(g, "aten::zero_");
  EXPECT_EQ(add.count, p.count);
  EXPECT_EQ(add.read, 2 * p.elements * 4);
  EXPECT_EQ(add.written, p.elements * 4);
  EXPECT_EQ(zero.written, p.elements * 4);
  // apex sets the half gradients to None before the backward: no add_, a half zero_.
  const sim::Graph a =
      load_graph("nmt", kNmt + ",precision=f16,master_weights=apex,zero_grad=fill");
  EXPECT_EQ(of_type(a, "aten::add_").count, 0);
  EXPECT_EQ(of_type(a, "aten::zero_").written, p.elements * 2 + 4);  // + the overflow flag
}

TEST(TrainLoop, HostSyncsLengthenTheStep) {
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto step = [&](const std::string& extra) {
    const sim::Graph g = load_graph("nmt", kNmt + ",optimizer_impl=per_param" + extra);
    const sim::Placement pl = *sim::builtin_placement("single-gpu", g, c);
    return sim::simulate(c, g, pl).step_time.seconds();
  };
  const double base = step("");
  // host_sum=N: N launches, one after another, before the forward can start.
  const double launch =
      c.devices.at(static_cast<std::size_t>(c.gpus().front())).spec.launch_overhead.seconds();
  EXPECT_GE(step(",host_sum=200") - base, 200 * launch);
  // loss.item(): reads the forward's last outputs; every backward op reading no other backward
  // op waits for it (its end: the host learns the value, then launches the backward).
  const sim::Graph g = load_graph("nmt", kNmt + ",loss_item=true");
  sim::OpId item = -1;
  for (sim::OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[static_cast<std::size_t>(o)].type == "aten::_local_scalar_dense") item = o;
  ASSERT_GE(item, 0);
  int waiting = 0;
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Backward) {
      bool root = true;
      for (const sim::TensorRef& r : op.inputs)
        root = root && g.ops[static_cast<std::size_t>(r.op)].phase != sim::Phase::Backward;
      const bool waits = std::find(op.control_inputs.begin(), op.control_inputs.end(), item) !=
                         op.control_inputs.end();
      EXPECT_EQ(root, waits) << op.name;
      waiting += waits ? 1 : 0;
    }
  EXPECT_GT(waiting, 0);
  // Every option costs time; bit-identical on a rerun.
  const std::string all = ",grad_clip=norm_sync,zero_grad=fill,loss_item=true,host_sum=16";
  EXPECT_GT(step(all), base);
  EXPECT_EQ(step(all), step(all));
}

// cpu_sum=N (trainer.py's int(sum(tgt_length - 1)) over a host tensor): N adds on the GPU's host
// CPU, one after another, each its dispatch cost; host_sum's launches and the forward wait for
// the last. On the code before, cpu_sum is refused as unknown by the nmt builder.
TEST(TrainLoop, CpuSumRunsOnTheHostBeforeTheForward) {
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto step = [&](const std::string& extra) {
    const sim::Graph g = load_graph("nmt", kNmt + ",optimizer_impl=per_param" + extra);
    const sim::Placement pl = *sim::builtin_placement("single-gpu", g, c);
    for (sim::OpId o = 0; o < g.num_ops(); ++o) {
      const bool cpu = g.ops[static_cast<std::size_t>(o)].device_kind == sim::DeviceKind::Cpu;
      EXPECT_EQ(c.devices[static_cast<std::size_t>(pl.device_of[static_cast<std::size_t>(o)])]
                        .spec.kind == sim::DeviceKind::Cpu,
                cpu);
    }
    return sim::simulate(c, g, pl).step_time.seconds();
  };
  const sim::Graph g = load_graph("nmt", kNmt + ",cpu_sum=300,host_sum=4");
  int on_cpu = 0;
  sim::OpId last = -1, first_launch = -1;
  for (sim::OpId o = 0; o < g.num_ops(); ++o) {
    const sim::Op& op = g.ops[static_cast<std::size_t>(o)];
    if (op.device_kind == sim::DeviceKind::Cpu) {
      ++on_cpu;
      last = o;
    }
    if (op.name.find("_host_sum0") != std::string::npos) first_launch = o;
  }
  EXPECT_EQ(on_cpu, 300);
  ASSERT_GE(first_launch, 0);
  const auto& after = g.ops[static_cast<std::size_t>(first_launch)].control_inputs;
  EXPECT_NE(std::find(after.begin(), after.end(), last), after.end());
  EXPECT_EQ(g.metadata.at("cpu_sum"), "300");
  const double dispatch =
      c.devices.at(static_cast<std::size_t>(c.cpus().front())).spec.launch_overhead.seconds();
  const double base = step("");
  // (less the launches of ops that wait for no host work, a few us)
  EXPECT_GE(step(",cpu_sum=300") - base, 295 * dispatch);
  EXPECT_LE(step(",cpu_sum=300") - base, 301 * dispatch);
  EXPECT_EQ(step(",cpu_sum=300"), step(",cpu_sum=300"));
}

// grad_scaler=torch (torch.cuda.amp.GradScaler: scale(loss), step(), update()): one mul the
// backward starts from; unscale_'s six 4-byte kernels and _amp_foreach_non_finite_check_and_
// unscale_'s depth-1 multi-tensor launches over every F32 gradient (read and written in place);
// found_inf.item(), a host sync every optimizer kernel waits for (a foreach launch over momentum
// buffers alone too); _amp_update_scale_. On the code before, grad_scaler is an unknown option.
TEST(TrainLoop, GradScalerUnscalesEveryGradientThenSyncsBeforeTheStep) {
  const std::string amp = kNmt + ",precision=f16,grads=f32";
  const Params p = params_of(load_graph("nmt", amp));
  ASSERT_GT(p.count, 10);
  const sim::Graph g = load_graph("nmt", amp + ",grad_scaler=torch");
  EXPECT_EQ(g.metadata.at("grad_scaler"), "torch");
  const Kernels check = of_type(g, "aten::_amp_foreach_non_finite_check_and_unscale_");
  EXPECT_EQ(check.read, p.elements * 4);
  EXPECT_EQ(check.written, p.elements * 4);
  EXPECT_GE(check.count, 1);
  EXPECT_EQ(of_type(g, "aten::_amp_update_scale_").count, 1);
  EXPECT_EQ(of_type(g, "aten::copy_").count, 4);  // double(), float(), the two replicator copies
  EXPECT_EQ(of_type(g, "aten::reciprocal").count, 1);
  EXPECT_EQ(of_type(g, "aten::fill_").count, 1);
  // scaler.scale(loss): every backward op reading no backward op reads the scaled loss.
  sim::OpId scaled = -1;
  for (sim::OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[static_cast<std::size_t>(o)].name.ends_with("grad_scaler_scale_loss")) scaled = o;
  ASSERT_GE(scaled, 0);
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Backward) {
      bool root = true, reads = false;
      for (const sim::TensorRef& r : op.inputs) {
        root = root && (g.ops[static_cast<std::size_t>(r.op)].phase != sim::Phase::Backward);
        reads = reads || r.op == scaled;
      }
      EXPECT_EQ(root, reads) << op.name;
    }
  // The foreach graph: every update launch (momentum-buffer-only ones too) waits for the sync.
  const sim::Graph f = load_graph("nmt", amp + ",optimizer_impl=foreach,grad_scaler=torch");
  EXPECT_EQ(of_type(f, "aten::_amp_foreach_non_finite_check_and_unscale_").read, p.elements * 4);
  sim::OpId item = -1;
  for (sim::OpId o = 0; o < f.num_ops(); ++o)
    if (f.ops[static_cast<std::size_t>(o)].type == "aten::_local_scalar_dense") item = o;
  ASSERT_GE(item, 0);
  int updates = 0;
  for (const sim::Op& op : f.ops)
    if (op.phase == sim::Phase::Update && !op.name.starts_with("train_loop/")) {
      ++updates;
      EXPECT_NE(std::find(op.control_inputs.begin(), op.control_inputs.end(), item),
                op.control_inputs.end())
          << op.name;
    }
  EXPECT_GT(updates, 0);
  // After the sync the host launches the per-parameter update kernels behind an empty queue.
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto step = [&](const std::string& extra) {
    const sim::Graph s = load_graph("nmt", amp + ",optimizer_impl=per_param" + extra);
    return sim::simulate(c, s, *sim::builtin_placement("single-gpu", s, c)).step_time.seconds();
  };
  EXPECT_GT(step(",grad_scaler=torch"), step(""));
  // GradScaler refuses F16 gradients; f16 autocast only; torch's fused optimizers not modelled.
  for (const std::string& bad :
       {kNmt + ",grad_scaler=torch", kNmt + ",precision=f16,grad_scaler=torch",
        amp + ",optimizer_impl=fused,grad_scaler=torch", amp + ",grad_scaler=dynamic",
        amp + ",master_weights=apex,grad_scaler=torch"}) {
    try {
      load_graph("nmt", bad);
      FAIL() << bad;
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("grad_scaler"), std::string::npos) << e.what();
    }
  }
}

// optimizer_impl=fused_apex: apex's FusedAdam without capturable=True has no
// _step_supports_amp_scaling, so GradScaler unscales, syncs on found_inf and then launches the
// same fused kernels as optimizer_impl=fused. On the code before, fused_apex is refused.
TEST(TrainLoop, ApexFusedAdamStepsThroughGradScalersOrdinaryPath) {
  const std::string amp = kNmt + ",precision=f16,grads=f32";
  const Params p = params_of(load_graph("nmt", amp));
  const sim::Graph fused = load_graph("nmt", amp + ",optimizer_impl=fused");
  const sim::Graph g = load_graph("nmt", amp + ",optimizer_impl=fused_apex,grad_scaler=torch");
  const Kernels adam = of_type(g, "apex::multi_tensor_adam");
  EXPECT_EQ(adam.count, of_type(fused, "apex::multi_tensor_adam").count);
  EXPECT_EQ(adam.read, of_type(fused, "apex::multi_tensor_adam").read);
  EXPECT_EQ(of_type(g, "aten::_amp_foreach_non_finite_check_and_unscale_").read, p.elements * 4);
  sim::OpId item = -1;
  for (sim::OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[static_cast<std::size_t>(o)].type == "aten::_local_scalar_dense") item = o;
  ASSERT_GE(item, 0);
  for (const sim::Op& op : g.ops)
    if (op.type == "apex::multi_tensor_adam")
      EXPECT_NE(std::find(op.control_inputs.begin(), op.control_inputs.end(), item),
                op.control_inputs.end())
          << op.name;
}

// grad_div=true (fairseq's `p.grad /= grad_denom` over every parameter): one div_ a gradient,
// read and written in place, before the update reads it; it lengthens the step. On the code
// before, grad_div is an unknown option.
TEST(TrainLoop, GradDivDividesEveryGradientInPlace) {
  const Params p = params_of(load_graph("nmt", kNmt));
  const sim::Graph g = load_graph("nmt", kNmt + ",grad_div=true");
  EXPECT_EQ(g.metadata.at("grad_div"), "true");
  const Kernels div = of_type(g, "aten::div_");
  EXPECT_EQ(div.count, p.count);
  EXPECT_EQ(div.read, p.elements * 4);
  EXPECT_EQ(div.written, p.elements * 4);
  for (const sim::Op& op : g.ops)
    if (op.type == "ApplyAdam" || op.type == "SparseApplyAdam") {
      bool reads = false;
      for (const sim::TensorRef& r : op.inputs)
        reads = reads || g.ops[static_cast<std::size_t>(r.op)].type == "aten::div_";
      EXPECT_TRUE(reads) << op.name;
    }
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto step = [&](const std::string& extra) {
    const sim::Graph s = load_graph("nmt", kNmt + extra);
    return sim::simulate(c, s, *sim::builtin_placement("single-gpu", s, c)).step_time.seconds();
  };
  EXPECT_GT(step(",grad_div=true"), step(""));
  EXPECT_EQ(of_type(load_graph("nmt", kNmt + ",grad_div=false"), "aten::div_").count, 0);
}

// The optimizer step's Python and per-tensor work (Op::host_before, set by optimizer_impl: 6.5 us
// per parameter tensor on top of each launch) is charged where it runs: behind GradScaler's
// found_inf sync, with the GPU's queue empty, it adds to the step; without a sync the host is ahead
// of the GPU and it hides. On the code before, no op has a host_before (it does not compile).
TEST(TrainLoop, OptimizerHostTimeIsExposedOnlyBehindASync) {
  const std::string amp = "batch=32,precision=f16,grads=f32";
  for (const std::string impl : {"foreach", "per_param"}) {
    const sim::Graph g = load_graph("resnet50", amp + ",optimizer_impl=" + impl);
    std::int64_t tensors = 0, host_ns = 0;
    for (const sim::Op& op : g.ops) {
      if (op.type.rfind("Apply", 0) == 0) ADD_FAILURE() << op.name;
      host_ns += op.host_before.ns;
    }
    for (const sim::Op& op : load_graph("resnet50", amp).ops)
      tensors += op.type.rfind("Apply", 0) == 0 ? 1 : 0;
    EXPECT_EQ(tensors, 161);  // ResNet-50's parameter tensors, as torch.optim lists them
    EXPECT_EQ(host_ns, tensors * 6'500) << impl;
  }
  for (const sim::Op& op : load_graph("resnet50", amp).ops) EXPECT_EQ(op.host_before.ns, 0);
  const sim::Cluster c = sim::load_cluster("dgx-a100");
  const auto step = [&](const std::string& extra, bool host) {
    sim::Graph g = load_graph("resnet50", amp + ",optimizer_impl=foreach" + extra);
    if (!host)
      for (sim::Op& op : g.ops) op.host_before = sim::Duration{0};
    return sim::simulate(c, g, *sim::builtin_placement("single-gpu", g, c)).step_time.seconds();
  };
  const double exposed = step(",grad_scaler=torch", true) - step(",grad_scaler=torch", false);
  EXPECT_NEAR(exposed, 161 * 6.5e-6, 0.1 * 161 * 6.5e-6);
  EXPECT_NEAR(step("", true), step("", false), 1e-6);
}

TEST(TrainLoop, BadInputIsNamed) {
  for (const std::string bad : {"grad_clip=always", "master_weights=deepspeed", "zero_grad=yes",
                                "loss_item=1", "host_sum=-3", "host_sum=x", "cpu_sum=-1",
                                "cpu_sum=2x", "grad_div=yes", "optimizer_impl=fused_torch"}) {
    try {
      load_graph("nmt", kNmt + "," + bad);
      FAIL() << bad;
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.substr(0, bad.find('='))), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace placesim::models

#include "calibration/kernel_fit.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <gtest/gtest.h>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "calibration/trace.hpp"
#include "sim/catalog.hpp"
#include "sim/error.hpp"

namespace pc = placesim::calibration;
namespace sim = placesim::sim;

namespace {
std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}
}  // namespace

TEST(WorkEstimate, GemmConvElementwise) {
  const auto mm = pc::estimate_work("aten::mm", {{64, 512}, {512, 1024}}, sim::Dtype::F32);
  EXPECT_EQ(mm.op_class, "gemm");
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 64 * 512 * 1024);
  const auto addmm =
      pc::estimate_work("aten::addmm", {{1024}, {64, 512}, {512, 1024}, {}, {}}, sim::Dtype::F32);
  EXPECT_DOUBLE_EQ(addmm.flops, mm.flops);
  const auto lin =
      pc::estimate_work("aten::linear", {{8, 64, 512}, {1024, 512}, {1024}}, sim::Dtype::F16);
  EXPECT_DOUBLE_EQ(lin.flops, 2.0 * 8 * 64 * 512 * 1024);
  const auto conv =
      pc::estimate_work("aten::conv2d", {{2, 3, 32, 32}, {16, 3, 3, 3}}, sim::Dtype::F32);
  EXPECT_EQ(conv.op_class, "conv");
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 2 * 16 * 32 * 32 * 27);
  const auto add = pc::estimate_work("aten::add_", {{1000}, {1000}, {}}, sim::Dtype::F32);
  EXPECT_EQ(add.op_class, "elementwise");
  EXPECT_DOUBLE_EQ(add.bytes, 3000 * 4.0);
}

TEST(WorkEstimate, DropoutIsItsOwnClassAtTwoPerElement) {
  // A random draw per element is ~10x an add on a CPU; the graph's Dropout counts 2 per element.
  const auto d = pc::estimate_work("aten::bernoulli_", {{512, 64}, {}, {}}, sim::Dtype::F32);
  EXPECT_EQ(d.op_class, "dropout");
  EXPECT_DOUBLE_EQ(d.flops, 2.0 * 512 * 64);
  EXPECT_EQ(pc::op_class_of("aten::dropout"), "dropout");
  EXPECT_EQ(pc::op_class_of("aten::mul"), "elementwise");
  EXPECT_EQ(pc::op_class_of("Dropout"), "dropout");
}

TEST(WorkEstimate, FusedAttentionIsTwoGemmsPerBlockInEitherLayout) {
  // 2 x (batch x heads) x Sq x Skv x (D + Dv): Q K^T and P V.
  const double fwd = 2.0 * 32 * 32768.0 * 32768.0 * (128 + 128);
  const std::vector<std::int64_t> bhsd = {1, 32, 32768, 128}, bshd = {1, 32768, 32, 128};
  const auto sdpa = pc::estimate_work("aten::_scaled_dot_product_flash_attention",
                                      {bhsd, bhsd, bhsd, {}, {}}, sim::Dtype::BF16);
  EXPECT_EQ(sdpa.op_class, "attention");
  EXPECT_DOUBLE_EQ(sdpa.flops, fwd);
  EXPECT_DOUBLE_EQ(sdpa.bytes, 4.0 * 32 * 32768 * 128 * 2);  // q, k, v read, the output written
  const auto flash =
      pc::estimate_work("aten::_flash_attention_forward", {bshd, bshd, bshd}, sim::Dtype::BF16);
  EXPECT_DOUBLE_EQ(flash.flops, fwd);
  // Cross-attention (Sq != Skv) and the backward (the output's gradient first; 2.5x).
  const auto cross =
      pc::estimate_work("aten::scaled_dot_product_attention",
                        {{8, 16, 128, 64}, {8, 16, 1024, 64}, {8, 16, 1024, 64}}, sim::Dtype::F16);
  EXPECT_DOUBLE_EQ(cross.flops, 2.0 * 8 * 16 * 128 * 1024 * (64 + 64));
  const auto bwd = pc::estimate_work("aten::_scaled_dot_product_efficient_attention_backward",
                                     {bhsd, bhsd, bhsd, bhsd, bhsd}, sim::Dtype::BF16);
  EXPECT_EQ(bwd.op_class, "attention");
  EXPECT_DOUBLE_EQ(bwd.flops, 2.5 * fwd);
}

TEST(WorkEstimate, CausalAttentionCountsTheKeptQueryKeyPairs) {
  // is_causal by its position in each schema ("Concrete Inputs" as torch >= 2.0 writes them):
  // query i keeps keys j <= i, Sq (Sq + 1) / 2 pairs of a square call.
  const std::vector<std::int64_t> q = {2, 8, 1024, 64};
  const std::vector<std::string> sdpa_args = {"", "", "", "", "0.", "True", "", "False"};
  const auto f = pc::attention_flops_from_concrete("aten::scaled_dot_product_attention",
                                                   {q, q, q, {}, {}, {}, {}, {}}, sdpa_args);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(*f, 2.0 * 16 * (1024.0 * 1025 / 2) * (64 + 64));
  auto not_causal = sdpa_args;
  not_causal[5] = "False";
  EXPECT_FALSE(pc::attention_flops_from_concrete("aten::scaled_dot_product_attention",
                                                 {q, q, q, {}, {}, {}, {}, {}}, not_causal));
  // More queries than keys: the first Skv rows grow to Skv keys, the rest keep all of them.
  const auto tall = pc::attention_flops_from_concrete("aten::_scaled_dot_product_flash_attention",
                                                      {{1, 1, 6, 4}, {1, 1, 4, 4}, {1, 1, 4, 4}},
                                                      {"", "", "", "0.", "True", "False", ""});
  ASSERT_TRUE(tall.has_value());
  EXPECT_DOUBLE_EQ(*tall, 2.0 * (4 * 5 / 2 + 2 * 4) * (4 + 4));
  // The flash backward: is_causal is argument 11; 2.5 times the forward's count.
  std::vector<std::string> bwd(15, "");
  bwd[11] = "True";
  const auto b = pc::attention_flops_from_concrete(
      "aten::_scaled_dot_product_flash_attention_backward", {q, q, q, q, q, {2, 8, 1024}}, bwd);
  ASSERT_TRUE(b.has_value());
  EXPECT_DOUBLE_EQ(*b, 2.5 * *f);
}

TEST(OpClass, TableKeepsItsPrecedence) {
  // A name under two classes belongs to the first (convolution_backward is listed under conv
  // too); in-place forms share their class; Memcpy/Memset by prefix; anything else elementwise.
  EXPECT_EQ(pc::op_class_of("aten::convolution_backward"), "conv_bwd");
  EXPECT_EQ(pc::op_class_of("aten::convolution"), "conv");
  EXPECT_EQ(pc::op_class_of("aten::addmm"), "gemm");
  EXPECT_EQ(pc::op_class_of("aten::view"), "meta");
  EXPECT_EQ(pc::op_class_of("aten::cudnn_batch_norm_backward"), "norm");
  EXPECT_EQ(pc::op_class_of("aten::_log_softmax"), "reduction");
  EXPECT_EQ(pc::op_class_of("aten::max_pool2d_with_indices"), "pool");
  EXPECT_EQ(pc::op_class_of("aten::max_pool2d_with_indices_backward"), "pool_bwd");
  EXPECT_EQ(pc::op_class_of("aten::lstm_cell"), "rnn");
  EXPECT_EQ(pc::op_class_of("aten::copy_"), "copy");
  EXPECT_EQ(pc::op_class_of("Memcpy HtoD (Pageable -> Device)"), "copy");
  EXPECT_EQ(pc::op_class_of("aten::bernoulli_"), "dropout");
  EXPECT_EQ(pc::op_class_of("aten::__and__"), "elementwise");
  EXPECT_EQ(pc::op_class_of("aten::add_"), "elementwise");
}

TEST(FitOpClass, RecoversAKnownLinearModel) {
  // t = 5 us + F / 10 TFLOP/s + B / 500 GB/s
  std::vector<double> f, b, t;
  for (double n : {64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0}) {
    f.push_back(2 * n * n * n);
    b.push_back(3 * n * n * 4);
    t.push_back(5e-6 + f.back() / 10e12 + b.back() / 500e9);
  }
  const sim::OpClassModel m = pc::fit_op_class(f, b, t);
  EXPECT_NEAR(m.intercept_s, 5e-6, 1e-8);
  EXPECT_NEAR(m.flop_rate, 10e12, 1e10);
  EXPECT_NEAR(m.byte_rate, 500e9, 1e9);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(m.predict_s(f[i], b[i]) / t[i], 1.0, 1e-6);
}

TEST(Calibrate, RocmTraceGivesExactEntriesWithShapes) {
  const pc::Profile p = pc::read_profile(data("mi250_rocm_minitoy.json"));
  const auto samples = pc::op_samples_from_profile(p, "MI250");
  ASSERT_FALSE(samples.empty());
  const pc::CalibrationFit fit = pc::fit_calibration(samples, "mi250");
  ASSERT_EQ(fit.calibration.devices.count("MI250"), 1u);
  const auto& exact = fit.calibration.devices.at("MI250").exact;
  bool saw_shape = false;
  for (const auto& [k, d] : exact) {
    EXPECT_GT(d.ns, 0);
    saw_shape |= k.find("[5,128]") != std::string::npos;
  }
  EXPECT_TRUE(saw_shape);
}

TEST(Calibrate, RocmMi300xFlashAttentionIsAttentionNotElementwise) {
  // Real excerpt (TraceLens evals, MI300X, rocprofiler-sdk): one bf16 SDPA call at sequence 32768,
  // its attn_fwd kernel launched by hipModuleLaunchKernel under aten::_flash_attention_forward.
  // It was classed "elementwise" (one FLOP an element) and fitted at a byte rate with the adds.
  const pc::Profile p = pc::read_profile(data("rocm-mi300x_tracelens_sdpa-bf16_excerpt.json"));
  EXPECT_EQ(p.device_name, "AMD Instinct MI300X");
  const auto s = pc::op_samples_from_profile(p, "");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].device, "Instinct-MI300X");
  EXPECT_EQ(s[0].signature.op_type, "aten::_flash_attention_forward");
  EXPECT_EQ(s[0].work.op_class, "attention");
  EXPECT_DOUBLE_EQ(s[0].work.flops, 2.0 * 32 * 32768.0 * 32768.0 * 256);
  EXPECT_NEAR(s[0].seconds, 0.085232206, 1e-12);
  // 206 TFLOP/s of bf16: the matrix units' order, not a DRAM rate.
  EXPECT_NEAR(s[0].work.flops / s[0].seconds / 1e12, 206.4, 0.1);
}

TEST(Calibrate, DeviceNamesAsTracesPrintThemReachTheCatalog) {
  // calibrate keys a device by its trace name with the vendor word cut and spaces made hyphens
  // ("NVIDIA GeForce RTX 3090" -> "GeForce-RTX-3090"); the catalog must find the part under that
  // key for its peak to bound the fit.
  const std::pair<const char*, const char*> named[] = {
      {"NVIDIA GeForce RTX 3090", "RTX-3090"},
      {"NVIDIA GeForce RTX 4090", "RTX-4090"},
      {"NVIDIA H100 NVL", "H100-NVL-94GB"},
      {"NVIDIA H200 NVL", "H200-NVL-141GB"},
      {"NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"},
      {"NVIDIA RTX A6000", "RTX-A6000"},
      {"NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada-48GB"},
      {"AMD Instinct MI300X", "MI300X-192GB"},
      {"AMD Instinct MI250X", "MI250X-GCD"},
      // Session 33 (h-gh200): Kineto's deviceProperties names of a GH200 and an A30.
      {"NVIDIA GH200 480GB", "GH200-96GB"},
      {"NVIDIA GH200 144G HBM3e", "GH200-144GB"},
      {"NVIDIA A30", "A30-24GB"}};
  for (const auto& [printed, model] : named) {
    const sim::DeviceSpec* s = sim::find_device_model(pc::calibration_key(printed, ""));
    ASSERT_NE(s, nullptr) << printed;
    EXPECT_EQ(s->model, model) << printed;
  }
  // The real ROCm 6.2 trace of an MI250 GCD names it "AMD Radeon Graphics" (104 SMs): no part
  // can be told from that, so it stays unknown and calibrate asks for --device-model.
  // (read_profile reads that generic name as no name at all: Dialects.RocmGenericGpuNameIsNoModel)
  EXPECT_EQ(sim::find_device_model(pc::calibration_key("AMD Radeon Graphics", "")), nullptr);
  EXPECT_EQ(pc::read_profile(data("mi250_rocm_minitoy.json")).device_name, "");
}

TEST(Calibrate, A100AlexnetGpuTimesTieToCpuOps) {
  const pc::Profile p = pc::read_profile(data("a100_alexnet.json"));
  const auto samples = pc::op_samples_from_profile(p, "");
  ASSERT_FALSE(samples.empty());
  EXPECT_EQ(samples[0].device, "A100-PG509-200");
  // GPU work is attributed to at most one CPU op; this HTA sample is cropped, so the CPU ops of
  // the last launches (16% of the GPU time) are not in the file.
  double total = 0, gpu = 0;
  for (const auto& s : samples) total += s.seconds;
  for (const auto& e : p.events)
    if (e.on_gpu()) gpu += static_cast<double>(e.dur_ns) * 1e-9;
  EXPECT_LE(total, gpu * 1.000001);
  EXPECT_GE(total, gpu * 0.8);
}

TEST(Calibrate, NsysKernelsByName) {
  const auto samples = pc::op_samples_from_profile(pc::read_profile(data("a100_saxpy.sqlite")), "");
  EXPECT_EQ(samples.size(), 20u);  // 5 kernels + 15 memcpys
  EXPECT_EQ(samples[0].device, "A100-SXM4-40GB");
}

// torch <= 2.0 writes whole microseconds, so an activity under 1 us reads 0: such a sample has no
// rate and, weighted 1 / t^2 in the relative-error fit, would outweigh its whole class. Dropped on
// the Nsight (kernel-name) and CPU-only paths as the GPU-op path drops ops with no GPU time.
TEST(Calibrate, ZeroDurationActivitiesGiveNoSample) {
  pc::Profile gpu = pc::read_profile(data("a100_saxpy.sqlite"));
  for (auto& e : gpu.events)
    if (e.on_gpu()) {
      e.dur_ns = 0;
      break;
    }
  EXPECT_EQ(pc::op_samples_from_profile(gpu, "").size(), 19u);  // 20 with the zero kept
  pc::Profile cpu = pc::read_profile(data("cpu_torch113_cnn_6steps.json.gz"));
  for (auto& e : cpu.events)
    if (e.kind == pc::EventKind::CpuOp) {
      e.dur_ns = 0;  // the first CPU op is nested in nothing: it was a sample of 0 s
      break;
    }
  const auto kept = pc::op_samples_from_profile(cpu, "");
  ASSERT_FALSE(kept.empty());
  for (const auto& s : kept) EXPECT_GT(s.seconds, 0.0);
}

// An op-name entry (a signature without shapes: traces without record_shapes) is written only
// where its calls agree: a name timing several sizes (HTA's aten::copy_: 2 us to 3.5 ms) says
// nothing about an unseen op of that name and is dropped; one shape repeated (addmm) is kept; a
// name seen twice shows no spread and is dropped; shaped signatures are kept whatever their count.
TEST(Calibrate, OpNameEntryOnlyWhereItsCallsAgree) {
  std::vector<pc::OpSample> s;
  const auto add = [&s](const std::string& name, std::vector<std::vector<std::int64_t>> shapes,
                        std::initializer_list<double> us) {
    for (double t : us) {
      pc::OpSample o;
      o.device = "dev";
      o.signature.op_type = name;
      o.signature.input_shapes = shapes;
      o.seconds = t * 1e-6;
      s.push_back(o);
    }
  };
  add("aten::copy_", {}, {2.0, 3.1, 3500.0, 2.4, 150.0});
  add("aten::addmm", {}, {29.0, 29.1, 29.3});
  add("aten::uniform_", {}, {71.0, 70.0});
  add("aten::mm", {{64, 512}, {512, 1024}}, {16.0});
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic");
  const auto& exact = fit.calibration.devices.at("dev").exact;
  EXPECT_FALSE(exact.contains("aten::copy_:f32"));
  EXPECT_TRUE(exact.contains("aten::addmm:f32"));
  EXPECT_FALSE(exact.contains("aten::uniform_:f32"));
  EXPECT_TRUE(exact.contains("aten::mm[64,512][512,1024]:f32"));
  ASSERT_EQ(fit.names.size(), 4u);
  for (const pc::NameSpread& n : fit.names) {
    if (n.shaped) {
      EXPECT_EQ(n.key, "aten::mm[64,512][512,1024]:f32");
      EXPECT_TRUE(n.kept);
    } else if (n.key == "aten::copy_:f32") {
      EXPECT_FALSE(n.kept);
      EXPECT_EQ(n.samples, 5);
      EXPECT_GT(n.cv, 1.5);
      EXPECT_NEAR(n.max_over_min, 1750.0, 1e-9);
    } else if (n.key == "aten::addmm:f32") {
      EXPECT_TRUE(n.kept);
      EXPECT_LT(n.cv, 0.01);
    } else {
      EXPECT_FALSE(n.kept);
      EXPECT_EQ(n.samples, 2);
    }
  }
  EXPECT_FALSE(pc::name_entry_consistent(3, pc::kNameMaxCv * 1.01));
  EXPECT_TRUE(pc::name_entry_consistent(3, pc::kNameMaxCv));
}

// The same on HTA's real 2-rank ResNet job (no Input Dims): the names that time one op per step
// (max pool backward, the foreach optimizer) keep their entry; copy_, add_ and the convolutions
// and batch norms (one name over every layer's sizes) do not.
TEST(Calibrate, OpNameEntriesOfTheShapelessTwoRankJob) {
  const pc::Profile p = pc::read_profile(data("a100_2rank_nccl_rank0.json.gz"));
  const pc::CalibrationFit fit =
      pc::fit_calibration(pc::op_samples_from_profile(p, "A100-PG509-200"), "2rank");
  const auto& exact = fit.calibration.devices.at("A100-PG509-200").exact;
  for (const char* k : {"aten::copy_:f32", "aten::add_:f32", "aten::cudnn_convolution:f32",
                        "aten::cudnn_batch_norm_backward:f32"})
    EXPECT_FALSE(exact.contains(k)) << k;
  for (const char* k : {"aten::max_pool2d_with_indices_backward:f32", "aten::_foreach_add_:f32"})
    EXPECT_TRUE(exact.contains(k)) << k;
  int kept = 0, names = 0;
  for (const pc::NameSpread& n : fit.names) {
    if (n.shaped) continue;
    ++names;
    kept += n.kept;
    EXPECT_EQ(n.kept, n.samples >= pc::kNameMinSamples && n.cv <= pc::kNameMaxCv) << n.key;
    EXPECT_EQ(exact.contains(n.key), n.kept) << n.key;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, names);
}

TEST(Calibrate, CrossValidationOnSyntheticNoisyGemms) {
  std::vector<pc::OpSample> s;
  std::uint64_t x = 12345;
  for (std::int64_t n : {32, 48, 64, 96, 128, 192, 256, 384, 512, 768}) {
    pc::OpSample o;
    o.device = "dev";
    o.signature.op_type = "aten::mm";
    o.signature.input_shapes = {{n, n}, {n, n}};
    o.work = pc::estimate_work("aten::mm", o.signature.input_shapes, sim::Dtype::F32);
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const double noise = 1.0 + 0.04 * (static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5);
    o.seconds = (4e-6 + o.work.flops / 2e12) * noise;
    s.push_back(o);
  }
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic");
  ASSERT_EQ(fit.classes.size(), 1u);
  EXPECT_EQ(fit.classes[0].signatures, 10);
  EXPECT_GT(fit.classes[0].cv_error, 0.0);
  EXPECT_LT(fit.classes[0].cv_error, 0.05);
  EXPECT_EQ(fit.calibration.devices.at("dev").by_op_type.count("MatMul"), 1u);
  EXPECT_EQ(fit.calibration.devices.at("dev").exact.size(), 10u);
}

// A CPU rig (FitOptions::memory set): GEMMs on the shape-aware model, whose per-matrix and
// per-output-byte terms a grid of mm and bmm shapes made from known coefficients gives back;
// bytes stretched by the cache level of their working set; a "kernel" that moved its bytes faster
// than the fastest cache (a view under a kernel's name) fitted as a fixed cost; the levels copied
// into the calibration.
namespace {
// A CPU rig row of `op` on `shapes`, its work estimated as calibrate does; the caller sets its
// time.
pc::OpSample cpu_sample(const std::string& op, std::vector<std::vector<std::int64_t>> shapes) {
  pc::OpSample o;
  o.device = "cpu0";
  o.signature.op_type = op;
  o.signature.input_shapes = std::move(shapes);
  o.work = pc::estimate_work(op, o.signature.input_shapes, sim::Dtype::F32);
  return o;
}
}  // namespace

TEST(Calibrate, CpuGemmShapeModelAndCacheLevels) {
  const std::vector<sim::MemoryLevel> mem = {
      {"L2", 512e3, 100e9}, {"L3", 32e6, 50e9}, {"DRAM", 0, 10e9}};
  std::vector<pc::OpSample> s;
  auto add = [&](const std::string& op, std::vector<std::vector<std::int64_t>> shapes) {
    pc::OpSample o = cpu_sample(op, std::move(shapes));
    const double st = sim::memory_stretch(mem, o.work.bytes);
    o.seconds = 2e-6 + o.work.flops / 80e9 + o.work.bytes * st / 200e9 +
                o.work.out_bytes * st / 40e9 + (o.work.matrices - 1) * 5e-6;
    s.push_back(o);
  };
  for (std::int64_t m : {64, 512, 2048})
    for (std::int64_t k : {16, 64, 256})
      for (std::int64_t n : {64, 256}) add("aten::mm", {{m, k}, {k, n}});
  for (std::int64_t b : {8, 32, 128}) add("aten::bmm", {{b, 64, 16}, {b, 16, 64}});
  pc::OpSample view;
  view.device = "cpu0";
  view.signature = {"aten::is_same_size", {{2048, 500}, {2048, 500}}, sim::Dtype::F32};
  view.work =
      pc::estimate_work(view.signature.op_type, view.signature.input_shapes, sim::Dtype::F32);
  view.seconds = 2e-6;  // 12 MB in 2 us: 6 TB/s, no cache streams that
  s.push_back(view);
  pc::FitOptions fo;
  fo.memory["cpu0"] = mem;
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic", fo);
  const sim::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  ASSERT_EQ(dc.memory.size(), 3u);
  const sim::OpClassModel& g = dc.by_op_type.at("BatchMatMul");
  EXPECT_NEAR(g.per_matrix_s, 5e-6, 1e-8);
  EXPECT_NEAR(g.flop_rate, 80e9, 80e9 * 1e-4);
  EXPECT_NEAR(g.out_byte_rate, 40e9, 40e9 * 1e-4);
  for (const pc::ClassFitReport& r : fit.classes) {
    if (r.op_class == "gemm") EXPECT_LT(r.cv_error, 1e-6);
    EXPECT_NE(r.op_class, "elementwise");  // the view went to meta
  }
  // The same grid without the memory option: one curve on FLOPs and bytes, which cannot follow it.
  const pc::CalibrationFit plain = pc::fit_calibration(s, "synthetic");
  for (const pc::ClassFitReport& r : plain.classes)
    if (r.op_class == "gemm") EXPECT_GT(r.cv_error, 0.05);
}

// A CPU rig's convolutions pay per weight byte (oneDNN reorders the weights each call), its
// softmax/log-softmax rows and BatchNorm backward rows get curves of their own, and a GPU-style
// fit (no memory levels) keeps the shared classes.
TEST(Calibrate, CpuConvWeightTermAndOwnClasses) {
  const std::vector<sim::MemoryLevel> mem = {
      {"L2", 512e3, 100e9}, {"L3", 32e6, 50e9}, {"DRAM", 0, 10e9}};
  std::vector<pc::OpSample> s;
  auto add = [&](const std::string& op, std::vector<std::vector<std::int64_t>> shapes,
                 double ns_per_elem) {
    pc::OpSample o = cpu_sample(op, std::move(shapes));
    const double st = sim::memory_stretch(mem, o.work.bytes);
    o.seconds = ns_per_elem > 0 ? 5e-6 + ns_per_elem * 1e-9 * o.work.bytes / 8.0
                                : 2e-6 + o.work.flops / 60e9 + o.work.bytes * st / 100e9 +
                                      o.work.out_bytes * st / 3e9;
    s.push_back(o);
  };
  for (std::int64_t c : {16, 64, 256, 512})
    for (std::int64_t hw : {2, 8, 16}) add("aten::conv2d", {{8, c, hw, hw}, {c, c, 3, 3}, {c}}, 0);
  for (std::int64_t n : {128, 512, 2048}) {
    add("aten::_softmax", {{n, 500}, {}, {}}, 1.5);  // an exp per element
    add("aten::sum", {{n, 500}}, 0.1);               // vectorised adds
    add("aten::native_batch_norm", {{8, 64, n / 64, 16}, {64}, {64}}, 3.0);
    add("aten::native_batch_norm_backward", {{8, 64, n / 64, 16}, {8, 64, n / 64, 16}, {64}}, 0.8);
  }
  pc::FitOptions fo;
  fo.memory["cpu0"] = mem;
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic", fo);
  const sim::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  const sim::OpClassModel& conv = dc.by_op_type.at("Conv");
  EXPECT_NEAR(conv.out_byte_rate, 3e9, 3e9 * 1e-3);
  EXPECT_NEAR(conv.flop_rate, 60e9, 60e9 * 1e-3);
  std::set<std::string> classes;
  for (const pc::ClassFitReport& r : fit.classes) classes.insert(r.op_class);
  for (const char* c : {"softmax", "reduction", "norm", "norm_bwd"}) EXPECT_TRUE(classes.count(c));
  // 500 K elements: the softmax curve prices ~15x what the sum curve does.
  const double f = 4.0 * 256e3 * 4, b = 2.0 * 256e3 * 4;
  EXPECT_GT(dc.by_op_type.at("Softmax").predict_s(f, b),
            5.0 * dc.by_op_type.at("ReduceSum").predict_s(f, b));
  EXPECT_NE(dc.by_op_type.at("BatchNormalizationGrad").intercept_s,
            dc.by_op_type.at("BatchNormalization").intercept_s);
  // Without memory levels (a GPU's fit) the shared classes stay.
  const pc::CalibrationFit plain = pc::fit_calibration(s, "synthetic");
  for (const pc::ClassFitReport& r : plain.classes) {
    EXPECT_NE(r.op_class, "softmax");
    EXPECT_NE(r.op_class, "norm_bwd");
  }
}

// A CPU rig's max-pool rows with their window (profile_rig.py's kernel_shape, strides, pads):
// the forward counts kernel area x outputs comparisons, as the ONNX importer counts a MaxPool's,
// so one curve prices LeNet-5's 2x2 windows and the rig's 3x3 ones; the backward scatters
// through the saved indices and is fitted on bytes alone. A malformed window is an input error.
namespace {
std::string pool_row(const char* op, const std::vector<std::vector<std::int64_t>>& shapes, int k,
                     int st, int pad, double us) {
  std::ostringstream o;
  o << R"({"name": ")" << op << R"(", "input_shapes": [)";
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    o << (i ? ", [" : "[");
    for (std::size_t j = 0; j < shapes[i].size(); ++j) o << (j ? ", " : "") << shapes[i][j];
    o << "]";
  }
  o << R"(], "mean_us": )" << us << R"(, "kernel_shape": [)" << k << ", " << k
    << R"(], "strides": [)" << st << ", " << st << R"(], "pads": [)" << pad << ", " << pad << "]}";
  return o.str();
}
std::string write_manifest(const std::string& name, const std::vector<std::string>& rows) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream f(path);
  f << R"({"format": "placesim-rig-manifest", "device_model": "cpu0", "ops": [)";
  for (std::size_t i = 0; i < rows.size(); ++i) f << (i ? ", " : "") << rows[i];
  f << R"(], "memory_levels": [{"level": "DRAM", "bytes": 0, "byte_s": 85e9}]})";
  return path;
}
}  // namespace

TEST(Calibrate, CpuPoolWindowFromRigRows) {
  // Truth: 2 us + 1.4 ns per comparison + 1 ns per byte forward; 2 us + 0.1 ns per byte backward.
  auto fwd_us = [](double comparisons, double bytes) {
    return 2.0 + 1.4e-3 * comparisons + 1e-3 * bytes;
  };
  std::vector<std::string> rows;
  struct Pool {
    std::int64_t n, c, hw;
    int k, st, pad;
  };
  for (const Pool& p :
       {Pool{8, 64, 16, 3, 2, 1}, Pool{8, 128, 8, 3, 2, 1}, Pool{8, 64, 32, 3, 2, 1},
        Pool{4, 16, 32, 3, 2, 1}, Pool{32, 6, 28, 2, 2, 0}, Pool{32, 16, 10, 2, 2, 0},
        Pool{16, 64, 16, 2, 2, 0}}) {
    const std::int64_t o = (p.hw + 2 * p.pad - p.k) / p.st + 1;
    const double in = static_cast<double>(p.n * p.c * p.hw * p.hw);
    const double out = static_cast<double>(p.n * p.c * o * o);
    rows.push_back(pool_row("aten::max_pool2d_with_indices", {{p.n, p.c, p.hw, p.hw}, {}, {}}, p.k,
                            p.st, p.pad, fwd_us(p.k * p.k * out, 4 * (in + out))));
    rows.push_back(pool_row("aten::max_pool2d_with_indices_backward",
                            {{p.n, p.c, o, o}, {p.n, p.c, p.hw, p.hw}, {}, {p.n, p.c, o, o}}, p.k,
                            p.st, p.pad, 2.0 + 1e-4 * 4 * (2 * in + 2 * out)));
  }
  const std::string path = write_manifest("pool_manifest.json", rows);
  const std::vector<pc::OpSample> s = pc::op_samples_from_manifest(path, "");
  ASSERT_EQ(s.size(), 14u);
  // LeNet-5's first pool: 32 x 6 x 14 x 14 outputs of 4 comparisons each.
  EXPECT_TRUE(s[8].work.window);
  EXPECT_DOUBLE_EQ(s[8].work.flops, 4.0 * 32 * 6 * 14 * 14);
  EXPECT_DOUBLE_EQ(s[8].work.bytes, 4.0 * (32 * 6 * 28 * 28 + 32 * 6 * 14 * 14));
  pc::FitOptions fo;
  fo.memory["cpu0"] = pc::cpu_side_from_manifest(path, "")->memory;
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic", fo);
  const sim::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  // The graph's 2x2 MaxPool of LeNet-5's second layer (batch 64, not a rig shape) and the
  // 3x3 stem pool of ResNet-18 at batch 16: within 1 % of the truth.
  const double l_in = 64.0 * 16 * 10 * 10, l_out = l_in / 4;
  EXPECT_NEAR(dc.by_op_type.at("MaxPool").predict_s(4 * l_out, 4 * (l_in + l_out)),
              fwd_us(4 * l_out, 4 * (l_in + l_out)) * 1e-6,
              0.01 * fwd_us(4 * l_out, 4 * (l_in + l_out)) * 1e-6);
  const double r_in = 16.0 * 64 * 32 * 32, r_out = r_in / 4;
  EXPECT_NEAR(dc.by_op_type.at("MaxPool").predict_s(9 * r_out, 4 * (r_in + r_out)),
              fwd_us(9 * r_out, 4 * (r_in + r_out)) * 1e-6,
              0.01 * fwd_us(9 * r_out, 4 * (r_in + r_out)) * 1e-6);
  EXPECT_EQ(dc.by_op_type.at("MaxPoolGrad").flop_rate, 0.0);
  // A window that is not two positive integers names the row.
  const std::string bad = write_manifest(
      "pool_bad.json", {R"({"name": "aten::max_pool2d_with_indices", "input_shapes": )"
                        R"([[8, 64, 16, 16]], "mean_us": 5, "kernel_shape": [0, 3]})"});
  try {
    (void)pc::op_samples_from_manifest(bad, "");
    ADD_FAILURE() << "no error";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0].kernel_shape"), std::string::npos) << e.what();
  }
}

// A CPU rig's BatchNorm forward and softmax rows are fitted on the FLOPs the graphs count for
// the ops their curves price (BatchNormalization 5 per element, Softmax 5, SoftmaxGrad 3; the
// rows' own estimate is 8 and 4): a row's time comes back for the graph's op of its shape.
TEST(Calibrate, CpuRowsCountedAsTheGraphCounts) {
  const std::vector<sim::MemoryLevel> mem = {{"DRAM", 0, 85e9}};
  std::vector<pc::OpSample> s;
  auto add = [&](const std::string& op, std::vector<std::vector<std::int64_t>> shapes,
                 double ns_per_elem) {
    pc::OpSample o = cpu_sample(op, std::move(shapes));
    o.seconds = 3e-6 + ns_per_elem * 1e-9 *
                           pc::estimate_work(op, o.signature.input_shapes, sim::Dtype::F32).bytes /
                           8.0;
    s.push_back(o);
  };
  for (std::int64_t hw : {4, 8, 16, 32}) {
    add("aten::native_batch_norm", {{8, 64, hw, hw}, {64}, {64}}, 1.8);
    add("aten::_softmax", {{8 * hw, 64, 64}, {}, {}}, 1.5);
    add("aten::_softmax_backward_data", {{8 * hw, 64, 64}, {8 * hw, 64, 64}, {}, {}}, 0.6);
  }
  pc::FitOptions fo;
  fo.memory["cpu0"] = mem;
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic", fo);
  const sim::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  // ResNet-18's [8, 64, 16, 16] BatchNorm as the graph counts it: 5 FLOPs and 2 x 4 bytes an
  // element (the row: 8 FLOPs and 4 x (n + 2 x 64) + 4 n bytes).
  const double n = 8.0 * 64 * 16 * 16;
  const double bn_bytes = 4.0 * (2 * n + 128);
  const double bn_true = 3e-6 + 1.8e-9 * bn_bytes / 8.0;
  EXPECT_NEAR(dc.by_op_type.at("BatchNormalization").predict_s(5 * n, bn_bytes), bn_true,
              0.02 * bn_true);
  const double m = 8.0 * 16 * 64 * 64;
  EXPECT_NEAR(dc.by_op_type.at("Softmax").predict_s(5 * m, 8 * m), 3e-6 + 1.5e-9 * m,
              0.03 * (3e-6 + 1.5e-9 * m));
}

// Kernel-time prediction on held-back shapes, on times measured on a real A100 (Vidur's Llama-2-7B
// projection GEMMs). Every 4th row keeps the test fast; the full file gives 7.3 % (calibration.md).
TEST(Calibrate, VidurA100GemmsHeldBackShapes) {
  std::ifstream in(data("a100_llama2-7b_mlp.csv"));
  ASSERT_TRUE(in.good());
  std::string line;
  std::getline(in, line);
  std::vector<std::string> head;
  {
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ',')) head.push_back(f);
  }
  auto col = [&](const std::string& n) {
    return static_cast<std::size_t>(std::find(head.begin(), head.end(), n) - head.begin());
  };
  std::vector<pc::OpSample> samples;
  int row = 0;
  while (std::getline(in, line)) {
    if (row++ % 4 != 0) continue;
    std::vector<std::string> f;
    std::stringstream s(line);
    std::string x;
    while (std::getline(s, x, ',')) f.push_back(x);
    const std::int64_t t = std::stoll(f[col("num_tokens")]),
                       tp = std::stoll(f[col("num_tensor_parallel_workers")]);
    const std::int64_t e = std::stoll(f[col("n_embd")]), xp = std::stoll(f[col("n_expanded_embd")]);
    const std::vector<std::pair<std::string, std::pair<std::int64_t, std::int64_t>>> gemms = {
        {"mlp_up_proj", {e, 2 * xp / tp}},
        {"mlp_down_proj", {xp / tp, e}},
        {"attn_post_proj", {e / tp, e}}};
    for (const auto& [op, kn] : gemms) {
      pc::OpSample o;
      o.device = "A100";
      o.signature = {"aten::mm", {{t, kn.first}, {kn.first, kn.second}}, sim::Dtype::F16};
      o.work = pc::estimate_work("aten::mm", o.signature.input_shapes, sim::Dtype::F16);
      o.seconds = std::stod(f[col("time_stats." + op + ".mean")]) * 1e-3;
      samples.push_back(o);
    }
  }
  ASSERT_GT(samples.size(), 500u);
  const pc::CalibrationFit fit = pc::fit_calibration(samples, "vidur");
  ASSERT_EQ(fit.classes.size(), 1u);
  const auto& r = fit.classes[0];
  EXPECT_GT(r.signatures, 300);
  EXPECT_LT(r.cv_error, 0.12);  // measured 7-8 %
  // Large GEMMs run near the A100's 312 TFLOP/s f16 tensor-core peak, not above it.
  EXPECT_GT(r.model.flop_rate, 100e12);
  EXPECT_LT(r.model.flop_rate, 330e12);
  std::cout << "A100 GEMM leave-one-shape-out error " << 100.0 * r.cv_error << " % over "
            << r.signatures << " shapes\n";
}

TEST(FitOpClass, RateHeldAtThePeakAndSaysSo) {
  // Measurements that claim 54 TFLOP/s (work over-estimated, or the wrong math unit assumed) on a
  // device bounded at 15.7: the fitted rate is the peak, and the note gives both numbers.
  std::vector<double> f, b, t;
  for (double n : {256.0, 512.0, 1024.0, 2048.0, 4096.0}) {
    f.push_back(2 * n * n * n);
    b.push_back(3 * n * n * 4);
    t.push_back(4e-6 + f.back() / 54e12);
  }
  const pc::RateBounds bounds{
      .max_flop_rate = 15.7e12, .max_byte_rate = 900e9, .what = "V100-SXM2-16GB f32"};
  const sim::OpClassModel m = pc::fit_op_class(f, b, t, bounds);
  EXPECT_LE(m.flop_rate, 15.7e12 * (1 + 1e-12));
  EXPECT_GT(m.flop_rate, 15.6e12);
  EXPECT_LE(m.byte_rate, 900e9 * (1 + 1e-12));
  EXPECT_NE(m.clamped.find("V100-SXM2-16GB f32 peak 15.7 TFLOP/s"), std::string::npos) << m.clamped;
  EXPECT_NE(m.clamped.find("unconstrained fit: 54"), std::string::npos) << m.clamped;
  // Monotone: a larger op never takes less time.
  for (std::size_t i = 1; i < f.size(); ++i)
    EXPECT_GT(m.predict_s(f[i], b[i]), m.predict_s(f[i - 1], b[i - 1]));
  // Data within the bounds: the same fit as without them, no note.
  std::vector<double> t2;
  for (std::size_t i = 0; i < f.size(); ++i) t2.push_back(4e-6 + f[i] / 10e12 + b[i] / 500e9);
  const sim::OpClassModel m2 = pc::fit_op_class(f, b, t2, bounds);
  EXPECT_TRUE(m2.clamped.empty()) << m2.clamped;
  EXPECT_NEAR(m2.flop_rate, 10e12, 1e10);
}

TEST(Calibrate, NoFittedRateAbovePeakOnRealGpuTraces) {
  // Every real GPU trace of tests/data (H200 microbenchmarks and ResNet-18 steps, the A100
  // HolisticTraceAnalysis traces) under PyTorch's default math: no op type of the calibration has
  // a rate above its class's peak or the memory bandwidth.
  const std::vector<std::pair<std::vector<std::string>, std::string>> runs = {
      {{"h200_micro.json.gz", "h200_micro_bwd.json.gz"}, "H200-SXM-141GB"},
      {{"h200_resnet18-224px-b64_train.json.gz"}, "H200-SXM-141GB"},
      {{"h200_resnet18-64px-b8_train.json.gz"}, "H200-SXM-141GB"},
      {{"a100_alexnet.json"}, "A100-SXM4-40GB"},
      {{"a100_2rank_nccl_rank0.json.gz"}, "A100-SXM4-40GB"}};
  for (const auto& [files, model] : runs) {
    SCOPED_TRACE(files.front());
    std::vector<pc::OpSample> samples;
    for (const std::string& f : files) {
      auto s = pc::op_samples_from_profile(pc::read_profile(data(f)), model);
      samples.insert(samples.end(), s.begin(), s.end());
    }
    const pc::CalibrationFit fit = pc::fit_calibration(samples, files.front());
    const sim::DeviceSpec* spec = sim::find_device_model(model);
    ASSERT_NE(spec, nullptr);
    double highest = 0;
    for (const auto& [d, p] : spec->peak_flops) highest = std::max(highest, p.per_s);
    for (const auto& r : fit.classes) {
      ASSERT_GT(r.bounds.max_flop_rate, 0) << r.op_class;
      EXPECT_LE(r.model.flop_rate, r.bounds.max_flop_rate * (1 + 1e-12)) << r.op_class;
      EXPECT_LE(r.model.byte_rate, spec->memory_bandwidth.bytes_per_s * (1 + 1e-12)) << r.op_class;
    }
    for (const auto& [type, m] : fit.calibration.devices.at(model).by_op_type) {
      EXPECT_LE(m.flop_rate, highest) << type;
      EXPECT_LE(m.byte_rate, spec->memory_bandwidth.bytes_per_s * (1 + 1e-12)) << type;
    }
  }
}

// The calibration paths the test above does not take: a profile calibrated under the device name
// its trace prints (no --device-model: "NVIDIA H200", "NVIDIA A100-PG509-200"), and a CPU rig's
// shape-aware GEMM fit on a catalog CPU, fed times that claim 5x the CPU's F32 peak.
TEST(Calibrate, EveryFitPathHoldsRatesUnderThePeak) {
  for (const char* f : {"h200_resnet18-64px-b8_train.json.gz", "a100_2rank_nccl_rank0.json.gz"}) {
    SCOPED_TRACE(f);
    const pc::Profile prof = pc::read_profile(data(f));
    const sim::DeviceSpec* spec = sim::find_device_model(prof.device_name);
    ASSERT_NE(spec, nullptr) << prof.device_name << ": no catalog model, so no peak bounds it";
    const pc::CalibrationFit fit = pc::fit_calibration(pc::op_samples_from_profile(prof, ""), f);
    for (const auto& r : fit.classes) {
      ASSERT_GT(r.bounds.max_flop_rate, 0) << r.op_class;
      EXPECT_LE(r.model.flop_rate, r.bounds.max_flop_rate * (1 + 1e-12)) << r.op_class;
      EXPECT_LE(r.model.byte_rate, spec->memory_bandwidth.bytes_per_s * (1 + 1e-12)) << r.op_class;
    }
  }
  const sim::DeviceSpec* cpu = sim::find_device_model("Xeon-E5-2690v3");
  ASSERT_NE(cpu, nullptr);
  const double peak = cpu->peak_for(sim::Dtype::F32).per_s;
  const std::vector<sim::MemoryLevel> mem = {{"L3", 30e6, 50e9}, {"DRAM", 0, 10e9}};
  std::vector<pc::OpSample> s;
  for (std::int64_t m : {64, 512, 2048})
    for (std::int64_t k : {16, 64, 256})
      for (std::int64_t n : {64, 256}) {
        pc::OpSample o;
        o.device = cpu->model;
        o.signature = {"aten::mm", {{m, k}, {k, n}}, sim::Dtype::F32};
        o.work = pc::estimate_work("aten::mm", o.signature.input_shapes, sim::Dtype::F32);
        o.seconds = 2e-6 + o.work.flops / (5 * peak) + o.work.out_bytes / 40e9;
        s.push_back(o);
      }
  pc::FitOptions fo;
  fo.memory[cpu->model] = mem;
  const pc::CalibrationFit fit = pc::fit_calibration(s, "synthetic", fo);
  bool gemm = false;
  for (const auto& r : fit.classes) {
    if (r.op_class != "gemm") continue;
    gemm = true;
    EXPECT_GT(r.model.flop_rate, 0.0);
    EXPECT_LE(r.model.flop_rate, peak * (1 + 1e-9));
    EXPECT_NE(r.model.clamped.find("unconstrained fit"), std::string::npos) << r.model.clamped;
  }
  EXPECT_TRUE(gemm);
  for (const auto& [type, m] : fit.calibration.devices.at(cpu->model).by_op_type)
    EXPECT_LE(m.flop_rate, peak * (1 + 1e-9)) << type;
}

TEST(HostCost, H200BatchEightStepIsHostTimePerLaunch) {
  // The batch-8 ResNet-18 step on the H200 is host-bound (GPU 9 % busy): 5 annotated steps with
  // 302 GPU activities each, median step 16.549 ms (the annotations' durations), so 54.8 us of
  // host time per activity.
  const auto h =
      pc::host_cost_from_profile(pc::read_profile(data("h200_resnet18-64px-b8_train.json.gz")));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->steps, 5);
  EXPECT_DOUBLE_EQ(h->activities_per_step, 302.0);
  EXPECT_NEAR(h->step_s, 16.549e-3, 1e-6);
  EXPECT_NEAR(h->per_activity_s, 16.549e-3 / 302, 1e-8);
  EXPECT_EQ(h->device, "H200");  // the trace's "NVIDIA H200", as the kernel table keys it
  EXPECT_EQ(pc::host_cost_from_profile(
                pc::read_profile(data("h200_resnet18-64px-b8_train.json.gz")), "H200-SXM-141GB")
                ->device,
            "H200-SXM-141GB");
  // No ProfilerStep annotations: no host cost.
  EXPECT_FALSE(pc::host_cost_from_profile(pc::read_profile(data("a100_alexnet.json"))).has_value());
}

TEST(HostCost, ProfilerOverheadComesOutOfAHostBoundStep) {
  // GPT-2 at batch 1 on the H200 rig is host-bound: 5 annotated steps of ~20.7 ms recorded
  // without shapes (~32 ms with them), 12.1-16.5 ms a step unprofiled (three runs,
  // h200_rig_2026-12-04_*results.jsonl). 3,767 framework ops are recorded a step; at the measured
  // 2.3 us each the fitted host step falls to the unprofiled range.
  const pc::Profile plain = pc::read_profile(data("h200_gpt2-124m_sdpa_bf16_b1_train.json.gz"));
  const pc::Profile shapes =
      pc::read_profile(data("h200_gpt2-124m_sdpa_bf16_b1_train_shapes.json.gz"));
  EXPECT_DOUBLE_EQ(pc::profiler_overhead_per_op(plain), 2.3e-6);
  EXPECT_DOUBLE_EQ(pc::profiler_overhead_per_op(shapes), 5.2e-6);
  const auto as_recorded = pc::host_cost_from_profile(plain, "H200-SXM-141GB");
  const auto corrected =
      pc::host_cost_from_profile(plain, "H200-SXM-141GB", pc::profiler_overhead_per_op(plain));
  const auto corrected_shapes =
      pc::host_cost_from_profile(shapes, "H200-SXM-141GB", pc::profiler_overhead_per_op(shapes));
  ASSERT_TRUE(as_recorded && corrected && corrected_shapes);
  EXPECT_GT(as_recorded->step_s, 19e-3);
  EXPECT_GT(corrected->step_s, 11e-3);
  EXPECT_LT(corrected->step_s, 14e-3);
  EXPECT_GT(corrected_shapes->step_s, 11e-3);
  EXPECT_LT(corrected_shapes->step_s, 17e-3);
  // Every per-op host cost shrinks, none below zero.
  for (const auto& [k, v] : corrected->per_class_s) {
    EXPECT_GE(v, 0.0) << k;
    EXPECT_LE(v, as_recorded->per_class_s.at(k)) << k;
  }
}

TEST(HostCost, OpLevelModelFromTheH200Microbenchmarks) {
  // No ProfilerStep#N: the step model has nothing, the op-level model reads each framework op's
  // span. The forward microbenchmark records no autograd graph; the _bwd one does (its conv2d
  // runs a backward on the autograd thread, with 3 AccumulateGrad nodes per call).
  const pc::Profile fwd = pc::read_profile(data("h200_micro.json.gz"));
  const pc::Profile bwd = pc::read_profile(data("h200_micro_bwd.json.gz"));
  EXPECT_FALSE(pc::host_cost_from_profile(fwd).has_value());
  auto f = pc::host_cost_from_ops(fwd, "H200-SXM-141GB");
  const auto b = pc::host_cost_from_ops(bwd, "H200-SXM-141GB");
  ASSERT_TRUE(f && b);
  EXPECT_TRUE(f->op_level && !f->autograd && b->autograd);
  EXPECT_EQ(f->per_parameter_s, 0.0);
  EXPECT_EQ(b->op_spans_s.at("parameter").size(), 210u);
  EXPECT_EQ(b->op_spans_s.at("backward:conv_bwd").size(), 70u);
  // Only a step trace shows the Python loop and the optimizer.
  EXPECT_EQ(b->per_step_s, 0.0);
  EXPECT_EQ(b->optimizer_step_s, 0.0);
  // Recording the autograd graph doubles a convolution's host time (55 -> 113 us median span):
  // the training trace's forward convolutions replace the inference ones when pooled.
  EXPECT_GT(b->per_class_s.at("forward:conv"), 1.5 * f->per_class_s.at("forward:conv"));
  pc::merge_op_host_cost(*f, *b);
  EXPECT_EQ(f->op_spans_s.at("forward:conv"), b->op_spans_s.at("forward:conv"));
  EXPECT_TRUE(f->per_class_s.count("forward:gemm") && f->per_class_s.count("backward:conv_bwd"));
  // What `calibrate --host-from-ops` writes for these two traces (docs/validation.md).
  const sim::HostCalibration c = pc::host_calibration(*f, "micro");
  EXPECT_TRUE(c.per_op_model());
  EXPECT_EQ(c.steps, 0);
  EXPECT_EQ(c.per_op.at("forward:Conv").ns, 115421);
  EXPECT_EQ(c.per_op.at("backward:ConvBackpropFilter").ns, 74566);
  EXPECT_EQ(c.per_phase.at("forward").ns, 19553);
  EXPECT_EQ(c.per_parameter.ns, 19765);
  EXPECT_EQ(c.per_step.ns, 0);
}

TEST(HostCost, PerOpModelFromTheH200BatchEightTrace) {
  // The host side op by op: the main thread's forward ops, the autograd thread's backward nodes,
  // torch 2.11's foreach SGD and 62 AccumulateGrad nodes per step (ResNet-18's 62 parameters).
  const auto h = pc::host_cost_from_profile(
      pc::read_profile(data("h200_resnet18-64px-b8_train.json.gz")), "H200-SXM-141GB");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->optimizer, "foreach");
  EXPECT_EQ(h->parameters, 62);
  for (const char* k : {"forward:conv", "forward:norm", "forward:elementwise", "backward:conv_bwd",
                        "backward:norm", "backward:elementwise"}) {
    ASSERT_TRUE(h->per_class_s.count(k)) << k;
    // Host time per framework op with the profiler on: tens to a few hundred microseconds.
    EXPECT_GT(h->per_class_s.at(k), 5e-6) << k;
    EXPECT_LT(h->per_class_s.at(k), 1e-3) << k;
  }
  // A convolution's dispatch (conv2d > convolution > cudnn_convolution) costs more than a ReLU's.
  EXPECT_GT(h->per_class_s.at("forward:conv"), h->per_class_s.at("forward:elementwise"));
  EXPECT_GT(h->optimizer_step_s, h->per_parameter_s);
  // The parts add up to the step: per-op costs x their counts + optimizer + per step.
  const sim::HostCalibration c = pc::host_calibration(*h, "b8");
  EXPECT_TRUE(c.per_op_model());
  EXPECT_EQ(c.per_op.at("forward:Conv").ns, std::llround(h->per_class_s.at("forward:conv") * 1e9));
  // The backward convolution node prices both of the graphs' gradient ops.
  EXPECT_EQ(c.per_op.at("backward:ConvBackpropFilter"), c.per_op.at("backward:ConvBackpropInput"));
  EXPECT_EQ(c.optimizer, "foreach");
  // It survives the calibration file.
  sim::Calibration cal;
  cal.devices["H200-SXM-141GB"].host = c;
  const std::string yaml = sim::calibration_to_yaml(cal);
  const std::string path = ::testing::TempDir() + "/host_model.yaml";
  std::ofstream(path) << yaml;
  const sim::Calibration back = sim::load_calibration(path);
  const sim::HostCalibration& r = *back.devices.at("H200-SXM-141GB").host;
  EXPECT_EQ(r.per_op, c.per_op);
  EXPECT_EQ(r.per_phase, c.per_phase);
  EXPECT_EQ(r.per_step, c.per_step);
  EXPECT_EQ(r.optimizer_step, c.optimizer_step);
  EXPECT_EQ(r.optimizer, "foreach");
}

TEST(HostCost, PerOpHostTimeByPhase) {
  sim::HostCalibration h{.launch_overhead = sim::Duration{50'000}};
  h.per_op["forward:Conv"] = sim::Duration{150'000};
  h.per_phase["forward"] = sim::Duration{100'000};
  h.per_phase["backward"] = sim::Duration{70'000};
  h.per_parameter = sim::Duration{16'000};
  h.optimizer_step = sim::Duration{620'000};
  auto cal = std::make_shared<sim::Calibration>();
  cal->devices["H200-SXM-141GB"].host = h;
  sim::KernelCostModel km;
  km.set_calibration(cal);
  sim::Device gpu{.name = "gpu0", .spec = *sim::find_device_model("H200-SXM-141GB")};
  gpu.spec.launch_overhead = h.launch_overhead;  // as apply_host_calibration sets it
  sim::Op op;
  op.type = "Conv";
  EXPECT_EQ(km.host_time(op, gpu)->ns, 150'000);
  op.type = "Relu";
  EXPECT_EQ(km.host_time(op, gpu)->ns, 100'000);
  op.phase = sim::Phase::Backward;
  EXPECT_EQ(km.host_time(op, gpu)->ns, 70'000);
  op.phase = sim::Phase::Update;
  EXPECT_EQ(km.host_time(op, gpu)->ns, 16'000);  // the foreach step: once per GPU
  EXPECT_EQ(km.optimizer_host_time(gpu).ns, 620'000);
  op.phase = sim::Phase::Other;  // variables, placeholders: no framework op
  EXPECT_EQ(km.host_time(op, gpu)->ns, 0);
  // A cluster file's own launch_overhead wins over the calibration's model.
  gpu.spec.launch_overhead = sim::Duration{20'000};
  EXPECT_FALSE(km.host_time(op, gpu).has_value());
}

TEST(FitCalibration, NineSyntheticSamplesReturn) {
  // Last session a draft test of fit_calibration on 9 synthetic samples did not return within 15
  // minutes. Nine samples of one class, of mixed classes, with repeated and degenerate shapes:
  // each fit must return (the bounded fit enumerates 8 active sets per class and per held-out
  // shape). Bounded by a future rather than a clock assertion: a hang fails, slowness does not.
  auto make = [](const std::string& op, std::vector<std::int64_t> shape, double s) {
    pc::OpSample x;
    x.device = "H200-SXM-141GB";
    x.signature.op_type = op;
    x.signature.input_shapes = {shape, shape};
    x.seconds = s;
    x.work = pc::estimate_work(op, x.signature.input_shapes, sim::Dtype::F32);
    return x;
  };
  std::vector<std::vector<pc::OpSample>> cases(3);
  for (int i = 0; i < 9; ++i) {
    const std::int64_t n = std::int64_t{64} << i;
    cases[0].push_back(make("aten::mm", {n, n}, 1e-6 * (1 + i)));
    cases[1].push_back(make(i % 3 == 0   ? "aten::mm"
                            : i % 3 == 1 ? "aten::add"
                                         : "aten::sum",
                            {n, 128}, 5e-6 * (1 + i)));
    cases[2].push_back(make("aten::add", {64, 64}, 3e-6));  // nine copies of one shape
  }
  for (const auto& samples : cases) {
    auto f =
        std::async(std::launch::async, [&] { return pc::fit_calibration(samples, "synthetic"); });
    ASSERT_EQ(f.wait_for(std::chrono::minutes(2)), std::future_status::ready);
    const pc::CalibrationFit fit = f.get();
    EXPECT_FALSE(fit.calibration.devices.empty());
  }
}

namespace placesim::calibration {
namespace {

// ResNet-18's last 3x3 convolution at batch 8, 64 px ([8,512,2,2] x [512,512,3,3]): an implicit
// GEMM of 32 x 512 outputs over 4608, 16 tiles of 64x32 on the H200's 132 SMs: one wave of one
// tile's whole reduction, 132 x 2 x 64 x 32 x 4608 FLOPs however few the op has.
TEST(WaveQuantisation, FewerTilesThanSmsCostOneWave) {
  const sim::DeviceSpec* h200 = sim::find_device_model("H200-SXM-141GB");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->sm_count, 132);
  const double f = 2.0 * 32 * 512 * 4608;
  const double wave = 132.0 * 2 * 64 * 32 * 4608;
  // A graph op (output [8,512,2,2]) and the profiled aten op (inputs only) agree.
  EXPECT_DOUBLE_EQ(
      sim::wave_quantised_flops("Conv", {{8, 512, 2, 2}, {512, 512, 3, 3}}, {8, 512, 2, 2}, f, 132),
      wave);
  EXPECT_DOUBLE_EQ(sim::wave_quantised_flops("aten::cudnn_convolution",
                                             {{8, 512, 2, 2}, {512, 512, 3, 3}}, {}, f, 132),
                   wave);
  // The backward: dx (32 x 512 over 4608, one wave) and dw (512 x 4608 over 32: split-K, as
  // cuDNN's wgrad kernels do, so no wave lost).
  EXPECT_DOUBLE_EQ(
      sim::wave_quantised_flops("aten::convolution_backward",
                                {{8, 512, 2, 2}, {8, 512, 2, 2}, {512, 512, 3, 3}}, {}, 2 * f, 132),
      wave + f);
  EXPECT_DOUBLE_EQ(
      sim::wave_quantised_flops("ConvBackpropInput", {{8, 512, 2, 2}, {512, 512, 3, 3}},
                                {8, 512, 2, 2}, f, 132),
      wave);
  EXPECT_DOUBLE_EQ(sim::wave_quantised_flops("ConvBackpropFilter", {{8, 512, 2, 2}, {8, 512, 2, 2}},
                                             {512, 512, 3, 3}, f, 132),
                   f);
  // Many waves: within a few percent of the op's own FLOPs (batch 64, 224 px, layer 1).
  const double big = 2.0 * 64 * 56 * 56 * 64 * 576;
  const double q = sim::wave_quantised_flops("Conv", {{64, 64, 56, 56}, {64, 64, 3, 3}},
                                             {64, 64, 56, 56}, big, 132);
  EXPECT_GE(q, big);
  EXPECT_LT(q, 1.05 * big);
  // Not a convolution, or no SM count: unchanged.
  EXPECT_DOUBLE_EQ(sim::wave_quantised_flops("Relu", {{8, 512, 2, 2}}, {8, 512, 2, 2}, f, 132), f);
  EXPECT_DOUBLE_EQ(
      sim::wave_quantised_flops("Conv", {{8, 512, 2, 2}, {512, 512, 3, 3}}, {8, 512, 2, 2}, f, 0),
      f);
}

// oneDNN's CPU convolutions vectorise over the channels they write, 8 floats at a time with AVX2:
// LeNet-5's 1 -> 6 layer writes 6 of 8 lanes, its input gradient of a 1-channel image 1 of 8.
TEST(LanePadding, ChannelsOfTheWrittenTensorInWholeVectors) {
  const double f = 1e6;
  // Graph ops: y [N,K,P,Q], dx [N,C,H,W], dw [K,C,R,S]; NHWC builders' channels last.
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("Conv", {{32, 1, 28, 28}, {6, 1, 5, 5}}, {32, 6, 28, 28}, f, 8),
      f * 8 / 6);
  EXPECT_DOUBLE_EQ(sim::lane_padded_flops("ConvBackpropInput", {{32, 6, 28, 28}, {6, 1, 5, 5}},
                                          {32, 1, 28, 28}, f, 8),
                   f * 8);
  EXPECT_DOUBLE_EQ(sim::lane_padded_flops("ConvBackpropFilter", {{32, 6, 28, 28}, {32, 1, 28, 28}},
                                          {6, 1, 5, 5}, f, 8),
                   f * 8 / 6);
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("Conv2D", {{8, 32, 32, 64}, {3, 3, 64, 3}}, {8, 32, 32, 3}, f, 8),
      f * 8 / 3);
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("Conv", {{8, 64, 16, 16}, {64, 64, 3, 3}}, {8, 64, 16, 16}, f, 8), f);
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("Conv", {{8, 64, 16, 16}, {20, 64, 3, 3}}, {8, 20, 16, 16}, f, 16),
      f * 32 / 20);
  // Profiled aten ops: the forward on K; the backward's two gradients, half the FLOPs each, on
  // C (input gradient) and K (weight gradient).
  EXPECT_DOUBLE_EQ(sim::lane_padded_flops("aten::mkldnn_convolution",
                                          {{32, 6, 14, 14}, {16, 6, 5, 5}, {16}}, {}, f, 8),
                   f);
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("aten::convolution_backward",
                             {{8, 64, 32, 32}, {8, 3, 32, 32}, {64, 3, 7, 7}}, {}, f, 8),
      f / 2 * 8 / 3 + f / 2);
  // No lanes, not a convolution, a transposed one: unchanged.
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("Conv", {{32, 1, 28, 28}, {6, 1, 5, 5}}, {32, 6, 28, 28}, f, 0), f);
  EXPECT_DOUBLE_EQ(sim::lane_padded_flops("Relu", {{32, 6, 28, 28}}, {32, 6, 28, 28}, f, 8), f);
  EXPECT_DOUBLE_EQ(
      sim::lane_padded_flops("ConvTranspose", {{8, 6, 14, 14}, {6, 6, 2, 2}}, {8, 6, 28, 28}, f, 8),
      f);
}

// Real rows of this project's VM (tests/data/calibration/cpu_rig_rows_2026-12-02.json, torch
// 1.13, one thread): softmax, log-softmax and dropout spend their time on per-element arithmetic
// (an exp or log, a Bernoulli draw), not on bytes, and keep a FLOP term; NLL's backward (a memset
// and a scatter) is not fitted with them. Fitted on bytes alone, the softmax curve priced the
// encoder's [32,64,64] softmax at 45 us for ~230 us measured.
TEST(Calibrate, CpuPerElementClassesKeepTheirFlopTerm) {
  const std::string path = data("cpu_rig_rows_2026-12-02.json");
  const std::vector<OpSample> s = op_samples_from_manifest(path, "");
  const auto cpu = cpu_side_from_manifest(path, "");
  ASSERT_TRUE(cpu.has_value());
  FitOptions fo;
  fo.memory["cpu0"] = cpu->memory;
  const CalibrationFit fit = fit_calibration(s, path, fo);
  const sim::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  // Leave-one-shape-out errors: softmax 34 % (50 % with the NLL backward rows and no FLOP
  // term), dropout 18 %.
  for (const auto& [c, cv] : {std::pair<const char*, double>{"softmax", 0.4}, {"dropout", 0.25}}) {
    const auto r = std::find_if(fit.classes.begin(), fit.classes.end(),
                                [&](const ClassFitReport& x) { return x.op_class == c; });
    ASSERT_NE(r, fit.classes.end()) << c;
    EXPECT_GT(r->model.flop_rate, 0.0) << c;
    EXPECT_LT(r->cv_error, cv) << c;
  }
  // NLL's backward took the reduction curve, not the softmax one.
  const sim::OpClassModel& nll = dc.by_op_type.at("aten::nll_loss_backward");
  EXPECT_NE(nll.flop_rate, dc.by_op_type.at("Softmax").flop_rate);
  EXPECT_EQ(nll.flop_rate, dc.by_op_type.at("ReduceSum").flop_rate);
  // The attention softmax of the encoder at batch 8 ([32,64,64], 5 FLOPs and 8 bytes an element
  // as the graph counts its Softmax, bytes stretched to the level they fit) against the rig's
  // aten::_softmax row of that shape; its gradient likewise (3 FLOPs, 12 bytes).
  const double n = 32.0 * 64 * 64;
  const auto priced = [&](const char* type, double flops, double bytes) {
    return dc.by_op_type.at(type).predict_s(flops, bytes * sim::memory_stretch(dc.memory, bytes));
  };
  const auto row_s = [&](const std::string& op) {
    for (const OpSample& o : s)
      if (o.signature.op_type == op &&
          o.signature.input_shapes[0] == std::vector<std::int64_t>{32, 64, 64})
        return o.seconds;
    return 0.0;
  };
  ASSERT_GT(row_s("aten::_softmax"), 0.0);
  EXPECT_NEAR(priced("Softmax", 5 * n, 8 * n), row_s("aten::_softmax"),
              0.3 * row_s("aten::_softmax"));
  EXPECT_NEAR(priced("SoftmaxGrad", 3 * n, 12 * n), row_s("aten::_softmax_backward_data"),
              0.4 * row_s("aten::_softmax_backward_data"));
  // The encoder's feed-forward dropout at batch 8 ([512,256]: 2 FLOPs and 12 bytes an element as
  // the graph counts it, x read, y and the mask written) against the row of that shape: ~16 ns an
  // element, where a streaming multiply takes ~0.4.
  const double d = 512.0 * 256;
  double row = 0;
  for (const OpSample& o : s)
    if (o.signature.op_type == "aten::dropout" &&
        o.signature.input_shapes[0] == std::vector<std::int64_t>{512, 256})
      row = o.seconds;
  ASSERT_GT(row, 0.0);
  EXPECT_NEAR(priced("Dropout", 2 * d, 12 * d), row, 0.2 * row);
}

// The same file's vector width: the manifest's vector_lanes reaches the calibration (and its YAML
// round trip), and the convolution curves are fitted on lane-padded FLOPs; a bad width names the
// key.
TEST(Calibrate, CpuVectorLanesFromTheManifest) {
  const std::string path = data("cpu_rig_rows_2026-12-02.json");
  const auto cpu = cpu_side_from_manifest(path, "");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu->vector_lanes, 8);
  const std::vector<OpSample> s = op_samples_from_manifest(path, "");
  FitOptions fo;
  fo.memory["cpu0"] = cpu->memory;
  const CalibrationFit plain = fit_calibration(s, path, fo);
  fo.vector_lanes["cpu0"] = cpu->vector_lanes;
  const CalibrationFit fit = fit_calibration(s, path, fo);
  EXPECT_EQ(fit.calibration.devices.at("cpu0").vector_lanes, 8);
  const auto cv = [](const CalibrationFit& f, const char* c) {
    for (const ClassFitReport& r : f.classes)
      if (r.op_class == c) return r.cv_error;
    return -1.0;
  };
  // The backward rows of 1-, 3- and 6-channel layers (input gradients over 1, 3 and 6 channels)
  // follow the other shapes' curve once padded to whole vectors.
  ASSERT_GT(cv(plain, "conv_bwd"), 0.0);
  EXPECT_LT(cv(fit, "conv_bwd"), 0.8 * cv(plain, "conv_bwd"));
  const std::string yaml = sim::calibration_to_yaml(fit.calibration);
  EXPECT_NE(yaml.find("    vector_lanes: 8\n"), std::string::npos);
  const std::string out = ::testing::TempDir() + "lanes_cal.yaml";
  std::ofstream(out) << yaml;
  EXPECT_EQ(sim::load_calibration(out).devices.at("cpu0").vector_lanes, 8);
  std::string bad_yaml = yaml;
  bad_yaml.replace(bad_yaml.find("vector_lanes: 8"), 15, "vector_lanes: 2.5");
  std::ofstream(out) << bad_yaml;
  try {
    (void)sim::load_calibration(out);
    ADD_FAILURE() << "no error";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("devices.cpu0.vector_lanes"), std::string::npos)
        << e.what();
  }
  const std::string bad = ::testing::TempDir() + "lanes_bad.json";
  std::ofstream(bad) << R"({"ops": [], "vector_lanes": 0})";
  try {
    (void)cpu_side_from_manifest(bad, "");
    ADD_FAILURE() << "no error";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vector_lanes"), std::string::npos) << e.what();
  }
}

// The session-15 rig run of this VM (tests/data/calibration/cpu_rig_peak_2026-12-02.json: the
// GEMM and convolution rows of the idle run c_transformer_b8_a, its memory levels, host side and
// the core's make-up): the peak is 8 lanes x 2 FMA pipes (Zen 2) x 2 x the measured 3.34 GHz and
// bounds every fit, where the manifest used to get "no catalog peak" and unbounded rates.
TEST(Calibrate, CpuPeakFromTheManifestBoundsTheFits) {
  const std::string path = data("cpu_rig_peak_2026-12-02.json");
  auto cpu = cpu_side_from_manifest(path, "");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu->fma_units, 2);
  EXPECT_NEAR(cpu->clock_hz, 3.338e9, 0.001e9);
  const RateBounds peak = cpu_peak(*cpu);
  EXPECT_DOUBLE_EQ(peak.max_flop_rate, 8 * 2 * 2 * cpu->clock_hz);
  EXPECT_DOUBLE_EQ(peak.max_byte_rate, 8 * 4 * 2 * cpu->clock_hz);
  const std::vector<OpSample> s = op_samples_from_manifest(path, "");
  FitOptions fo;
  fo.memory["cpu0"] = cpu->memory;
  fo.vector_lanes["cpu0"] = cpu->vector_lanes;
  const auto check = [&](const CalibrationFit& fit, double flop_peak, int want_clamped) {
    int clamped = 0;
    for (const ClassFitReport& r : fit.classes) {
      EXPECT_DOUBLE_EQ(r.bounds.max_flop_rate, flop_peak) << r.op_class;
      EXPECT_LE(r.model.flop_rate, flop_peak * (1 + 1e-9)) << r.op_class;
      EXPECT_LE(r.model.byte_rate, r.bounds.max_byte_rate * (1 + 1e-9)) << r.op_class;
      clamped += r.model.clamped.empty() ? 0 : 1;
    }
    EXPECT_EQ(clamped, want_clamped);
  };
  // At the measured clock (107 GFLOP/s) no fit reaches the peak: the best GEMM row ran at 72.6.
  fo.cpu_peaks["cpu0"] = peak;
  check(fit_calibration(s, path, fo), peak.max_flop_rate, 0);
  // At the clock /proc/cpuinfo gives (2246 MHz, the VM's TSC rate: 71.9 GFLOP/s) the free
  // convolution fits (75 and 85 GFLOP/s) are above it, and are held there.
  cpu->clock_hz = 2245.776e6;
  const RateBounds nominal = cpu_peak(*cpu);
  fo.cpu_peaks["cpu0"] = nominal;
  const CalibrationFit held = fit_calibration(s, path, fo);
  check(held, nominal.max_flop_rate, 2);
  for (const ClassFitReport& r : held.classes)
    if (!r.model.clamped.empty())
      EXPECT_NE(r.model.clamped.find("cpu0 f32 (8 lanes x 2 FMA x 2 x 2.25 GHz)"),
                std::string::npos)
          << r.model.clamped;
  // A manifest without the core's make-up has no peak; a bad one names its key.
  cpu->fma_units = 0;
  EXPECT_EQ(cpu_peak(*cpu).max_flop_rate, 0.0);
  const std::string bad = ::testing::TempDir() + "peak_bad.json";
  for (const std::string& body :
       {std::string(R"({"ops": [], "vector_lanes": 8, "fma_units": 0})"),
        std::string(R"({"ops": [], "vector_lanes": 8, "clock_hz": "3 GHz"})")}) {
    std::ofstream(bad) << body;
    try {
      (void)cpu_side_from_manifest(bad, "");
      ADD_FAILURE() << "no error for " << body;
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(body.find("fma") != std::string::npos ? "fma_units"
                                                                                 : "clock_hz"),
                std::string::npos)
          << e.what();
    }
  }
}

// Writes `body` as a manifest and expects `read` to refuse it with `key` in the message.
template <class Read>
void expect_manifest_error(const std::string& body, const std::string& key, Read read) {
  const std::string path = ::testing::TempDir() + "manifest_bad.json";
  std::ofstream(path) << body;
  try {
    read(path);
    ADD_FAILURE() << "accepted: " << body;
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

// The lead's idle rig run of 2026-12-03 (tests/data/calibration/cpu_rig_sweep_2026-12-03.json:
// ResNet-18 b8, evicted rows; its streaming sweep, /sys L3 32 MiB): an optimizer update streams at
// the sweep's rate at its working set, and ReLU's backward at DRAM's. ResNet-18's last weight
// (512 x 512 x 3 x 3: parameter and gradient read, parameter written, 28.3 MB) fits the /sys L3,
// whose sweep points ran at 72 GB/s; the sweep itself ran at 25.0 GB/s at 24 MB and 23.9 at 48.
// The stem's ReLU backward ([8,64,32,32]: 6.3 MB) took 324 us in the run's step (median of 8),
// where the elementwise curve at L3 priced it at 108 us.
TEST(Calibrate, CpuStreamingOpsAtTheSweepsRateReluBackwardAtDrams) {
  const std::string path = data("cpu_rig_sweep_2026-12-03.json");
  const auto cpu = cpu_side_from_manifest(path, "");
  ASSERT_TRUE(cpu.has_value());
  ASSERT_EQ(cpu->sweep.size(), 12u);
  EXPECT_DOUBLE_EQ(cpu->sweep[8].bytes, 25165824);
  const std::vector<OpSample> s = op_samples_from_manifest(path, "");
  FitOptions fo;
  fo.memory["cpu0"] = cpu->memory;
  fo.sweep["cpu0"] = cpu->sweep;
  fo.cpu_peaks["cpu0"] = cpu_peak(*cpu);
  const CalibrationFit fit = fit_calibration(s, path, fo);
  const sim::DeviceCalibration& dc = fit.calibration.devices.at("cpu0");
  ASSERT_EQ(dc.sweep.size(), 12u);
  const sim::OpClassModel& sgd = dc.by_op_type.at("ApplyGradientDescent");
  EXPECT_TRUE(sgd.sweep);
  // As the cost model prices a curve (chain_estimate): bytes stretched from their source, and
  // never faster than that source's rate.
  const auto priced = [&](const sim::OpClassModel& m, double flops, double bytes,
                          sim::ByteSource src) {
    const double st = sim::cpu_byte_stretch(dc.memory, dc.sweep, bytes, src);
    return std::max(m.predict_s(flops, bytes * st),
                    bytes / sim::cpu_byte_rate(dc.memory, dc.sweep, bytes, src));
  };
  const double w = 512.0 * 512 * 3 * 3;
  const double update = priced(sgd, 2 * w, 12 * w, sim::ByteSource::Sweep);
  EXPECT_GE(update, 12 * w / 25.0e9);
  EXPECT_LE(update, 12 * w / 20.0e9);
  EXPECT_LT(priced(sgd, 2 * w, 12 * w, sim::ByteSource::Levels), 0.6 * update);
  const double n = 8.0 * 64 * 32 * 32;
  const double relu = priced(dc.by_op_type.at("ReluGrad"), n, 12 * n, sim::ByteSource::Dram);
  EXPECT_NEAR(relu, 324e-6, 0.2 * 324e-6);
  // A sweep out of order names its point.
  expect_manifest_error(R"({"ops": [], "vector_lanes": 8, "memory_sweep": [)"
                        R"({"bytes": 2e6, "byte_s": 5e10}, {"bytes": 1e6, "byte_s": 6e10}]})",
                        "memory_sweep[1].bytes",
                        [](const std::string& f) { (void)cpu_side_from_manifest(f, ""); });
}

// A first layer's backward row (profile_rig.py: its input needs no gradient) computes the weight
// gradient alone: half a full backward's FLOPs, no input gradient written. LeNet-5's conv1 took
// 1.13 ms in its step (b32) where the rig's row with the input gradient took 3.4-4.0 ms.
TEST(Calibrate, FirstLayerConvolutionBackwardRowsHaveNoInputGradient) {
  const std::string path = ::testing::TempDir() + "first_layer.json";
  const std::string row =
      R"({"name": "aten::convolution_backward", "input_shapes": [[32, 6, 28, 28], [32, 1, 28, 28],)"
      R"( [6, 1, 5, 5], [], [], [], [], [], [], [], []], "dtype": "f32", "count": 5, "mean_us": 1130)";
  std::ofstream(path) << R"({"ops": [)" << row << "}, " << row << R"(, "input_grad": false}]})";
  const std::vector<OpSample> s = op_samples_from_manifest(path, "");
  ASSERT_EQ(s.size(), 2u);
  const double es = 4, go = 32.0 * 6 * 28 * 28, x = 32.0 * 1 * 28 * 28, wt = 6.0 * 25;
  EXPECT_DOUBLE_EQ(s[0].work.flops, 2 * 2 * 32.0 * 6 * 28 * 28 * 25);
  EXPECT_DOUBLE_EQ(s[1].work.flops, s[0].work.flops / 2);
  EXPECT_DOUBLE_EQ(s[1].work.bytes, (go + x + 2 * wt) * es);
  EXPECT_DOUBLE_EQ(s[0].work.bytes, (go + 2 * x + 2 * wt) * es);
  expect_manifest_error(R"({"ops": [)" + row + R"(, "input_grad": "no"}]})", "ops[0].input_grad",
                        [](const std::string& f) { (void)op_samples_from_manifest(f, ""); });
}

// The lead's idle rig run of 2026-12-03 18:33 UTC (tests/data/calibration/
// cpu_rig_conv_bwd_2026-12-03.json: its 11 convolution backward rows, ResNet-18's and LeNet-5's,
// 16 AVX-512 lanes). The two first-layer rows (input_grad false: ResNet-18's 3 -> 64 stem,
// LeNet-5's 1 -> 6) compute the weight gradient alone, vectorised over the K channels it writes.
// Counted as full backward calls, half their FLOPs were padded to 16 lanes of 3 or 1 input
// channels: the stem "ran" above the core's peak, the fit was held at it (free fit 318 GFLOP/s
// against 234) and missed the rows by 40 % on average (LeNet-5's conv1 row: 347 us, priced 139).
TEST(Calibrate, FirstLayerBackwardRowsPaddedOnTheChannelsTheyWrite) {
  const std::string path = data("cpu_rig_conv_bwd_2026-12-03.json");
  const auto cpu = cpu_side_from_manifest(path, "");
  ASSERT_TRUE(cpu.has_value());
  const std::vector<OpSample> s = op_samples_from_manifest(path, "");
  ASSERT_EQ(
      std::count_if(s.begin(), s.end(), [](const OpSample& o) { return o.work.weight_grad_only; }),
      2);
  FitOptions fo;
  fo.memory["cpu0"] = cpu->memory;
  fo.sweep["cpu0"] = cpu->sweep;
  fo.vector_lanes["cpu0"] = cpu->vector_lanes;
  fo.cpu_peaks["cpu0"] = cpu_peak(*cpu);
  const CalibrationFit fit = fit_calibration(s, path, fo);
  const auto r = std::find_if(fit.classes.begin(), fit.classes.end(),
                              [](const ClassFitReport& c) { return c.op_class == "conv_bwd"; });
  ASSERT_NE(r, fit.classes.end());
  EXPECT_EQ(r->signatures, 11);
  EXPECT_TRUE(r->model.clamped.empty()) << r->model.clamped;
  EXPECT_LT(r->model.flop_rate, fo.cpu_peaks.at("cpu0").max_flop_rate);
  EXPECT_LT(r->fit_error, 0.2);
}

// The host side of the same run: the Python between ops (gap), zero_grad and AccumulateGrad once
// a step, the optimizer's Python per parameter, and no per-op dispatch: the rig's 3.2 us (a
// one-element add from Python) is the Python call, which is in the gap, plus the dispatcher,
// which is in every row's time. Charged per graph op as well, it put 1.09 ms into the encoder's
// predicted step (b8) that no measured class had.
TEST(Calibrate, CpuHostSideChargesNoDispatchPerOp) {
  const std::string path = data("cpu_rig_peak_2026-12-02.json");
  const auto cpu = cpu_side_from_manifest(path, "");
  ASSERT_TRUE(cpu.has_value() && cpu->host.has_value());
  EXPECT_TRUE(cpu->host->cpu);
  EXPECT_EQ(cpu->host->launch_overhead.ns, 0);
  EXPECT_NEAR(cpu->dispatch_us, 3.2, 0.01);  // measured, reported
  EXPECT_EQ(cpu->host->per_step.ns, (1652 + 84 + 185) * 1000);
  EXPECT_EQ(cpu->host->per_parameter.ns, 4133);
}

TEST(KernelFloor, FifthPercentileOfTheProfilesKernels) {
  Profile p;
  for (int i = 1; i <= 40; ++i) {
    TraceEvent e;
    e.kind = EventKind::Kernel;
    e.dur_ns = 1000 * i;  // 1 .. 40 us
    p.events.push_back(e);
  }
  const auto f = kernel_floor_s(p);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(*f, 3e-6);  // element 40 / 20 = 2 of the sorted durations
  p.events.resize(19);
  EXPECT_FALSE(kernel_floor_s(p).has_value());  // too few: the 2 us default stays
}

// The device-side gap between queued kernels (docs/validation.md, "The kernel gap as a device
// property"): calibrate's figure is tools/kernel_gap.py's on the same fitting traces (H200
// ResNet-50 AMP NHWC b256: median 1.12 us of 947 kernel->kernel pairs; A100 AlexNet: mean 1.46
// us of 54, whole-microsecond timestamps).
TEST(KernelGap, CalibrateMeasuresWhatToolsKernelGapPyPrints) {
  const QueuedGaps h200 =
      queued_kernel_gaps(read_profile(data("h200_resnet50_amp_nhwc_b256_train.json.gz")));
  EXPECT_FALSE(h200.whole_us);
  EXPECT_NEAR(static_cast<double>(h200.ns.size()), 947.0, 10.0);
  const auto fit = kernel_gap_of(h200);
  ASSERT_TRUE(fit.has_value());
  EXPECT_FALSE(fit->mean);
  EXPECT_NEAR(static_cast<double>(fit->gap.ns), 1120.0, 100.0);
  const QueuedGaps a100 = queued_kernel_gaps(read_profile(data("a100_alexnet.json")));
  EXPECT_TRUE(a100.whole_us);
  const auto mean = kernel_gap_of(a100);
  ASSERT_TRUE(mean.has_value());
  EXPECT_TRUE(mean->mean);
  EXPECT_NEAR(static_cast<double>(mean->gap.ns), 1460.0, 100.0);
  // The b8 trace queues 8 pairs only: no figure (the cluster's kernel_gap stays).
  EXPECT_FALSE(
      kernel_gap_of(queued_kernel_gaps(read_profile(data("h200_resnet18-64px-b8_train.json.gz")))));
}

// The selection rule on a hand-built stream: only pairs whose second launch returned >= 5 us
// before the first kernel ended count, and only kernel->kernel ones.
TEST(KernelGap, OnlyQueuedKernelPairsOnOneStreamCount) {
  Profile p;
  const auto add = [&](EventKind k, std::int64_t ts, std::int64_t dur, std::int64_t launch,
                       std::int64_t stream) {
    TraceEvent e;
    e.kind = k;
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.stream = stream;
    e.device = 0;
    e.launch = launch;
    p.events.push_back(e);
  };
  add(EventKind::Runtime, 0, 1000, -1, -1);       // 0: launch of every activity
  add(EventKind::Runtime, 20'000, 1000, -1, -1);  // 1: a late launch (21 us)
  add(EventKind::Kernel, 2'000, 10'000, 0, 7);    // [2, 12]
  add(EventKind::Kernel, 13'100, 10'000, 0, 7);   // queued: gap 1.1 us
  add(EventKind::Kernel, 24'000, 10'000, 1, 7);   // launched 21 us > 23.1 - 5: out
  add(EventKind::Memset, 35'500, 1'000, 0, 7);    // kernel -> memset: out
  add(EventKind::Kernel, 38'000, 1'000, 0, 7);    // memset -> kernel: out
  add(EventKind::Kernel, 3'000, 10'000, 0, 9);    // another stream: alone
  add(EventKind::Kernel, 40'000, 1'000, -1, 7);   // no launch linked: out
  const QueuedGaps g = queued_kernel_gaps(p);
  ASSERT_EQ(g.ns.size(), 1u);
  EXPECT_EQ(g.ns[0], 1100);
  EXPECT_FALSE(g.whole_us);
  QueuedGaps many;
  many.ns.assign(kKernelGapMinPairs - 1, 1000);
  EXPECT_FALSE(kernel_gap_of(many).has_value());
  many.ns.push_back(3000);
  many.ns.push_back(-500);  // overlapping pairs count: the median is the middle of all
  many.whole_us = false;
  EXPECT_EQ(kernel_gap_of(many)->gap.ns, 1000);
  many.whole_us = true;
  EXPECT_EQ(kernel_gap_of(many)->gap.ns, 1024);  // (19 x 1000 + 3000 - 500) / 21, rounded
}

}  // namespace
}  // namespace placesim::calibration

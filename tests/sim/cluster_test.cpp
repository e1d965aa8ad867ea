#include "sim/cluster.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "sim/catalog.hpp"
#include "sim/error.hpp"

namespace placesim::sim {
namespace {

std::vector<std::string> link_names(const Cluster& c, const RouteSegment& s) {
  std::vector<std::string> out;
  for (const Hop& h : s.hops) out.push_back(c.links[h.link].name);
  return out;
}

TEST(Catalog, EveryModelHasSourceAndPositiveNumbers) {
  const auto names = device_model_names();
  EXPECT_GE(names.size(), 12u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const std::string& n : names) {
    const DeviceSpec* s = find_device_model(n);
    ASSERT_NE(s, nullptr) << n;
    EXPECT_FALSE(s->source.empty()) << n;
    EXPECT_GT(s->peak_for(Dtype::F32).per_s, 0) << n;
    EXPECT_GT(s->memory_bandwidth.bytes_per_s, 0) << n;
    EXPECT_GT(s->memory_capacity.v, 0) << n;
  }
  // nvidia-smi lists each GK210 die of a K80 board as one "Tesla K80": the name is one die, half
  // the board (8.73 / 2 TFLOP/s F32).
  ASSERT_NE(find_device_model("Tesla K80"), nullptr);
  EXPECT_EQ(find_device_model("Tesla K80")->model, "K80-GK210");
  EXPECT_DOUBLE_EQ(find_device_model("K80-GK210")->peak_for(Dtype::F32).per_s, 4.365e12);
  EXPECT_EQ(find_device_model("K80-GK2100"), nullptr);
  EXPECT_EQ(find_device_model(""), nullptr);
}

// Issue 15 (h-peaks): every Ampere-or-later NVIDIA part and every AMD CDNA part names its own
// dense tensor peaks (dtype -> datasheet figure); none falls back to the F32 CUDA-core rate.
TEST(Catalog, EveryTensorCoreGpuHasItsDatasheetTensorPeaks) {
  for (const std::string& n : device_model_names()) {
    const DeviceSpec* s = find_device_model(n);
    ASSERT_NE(s, nullptr) << n;
    if (s->kind != DeviceKind::Gpu) continue;
    const bool ampere_on = s->arch.vendor == GpuArch::Vendor::Nvidia && s->arch.major >= 8;
    const bool amd = s->arch.vendor == GpuArch::Vendor::Amd;
    if (!ampere_on && !amd) continue;
    const double f32 = s->peak_for(Dtype::F32).per_s;
    for (Dtype d : {Dtype::F16, Dtype::BF16})
      EXPECT_TRUE(s->peak_flops.contains(d)) << n << " " << to_string(d);
    // CDNA 2 (gfx90a) has no TF32 or FP8 units; every NVIDIA sm >= 8.0 and CDNA 3 has TF32.
    if (s->arch.gfx == "gfx90a") continue;
    ASSERT_TRUE(s->peak_flops.contains(Dtype::TF32)) << n;
    // At least the F32 rate (GeForce RTX 3090/4090 run it at 1x: their tensor cores are halved).
    EXPECT_GE(s->peak_for(Dtype::TF32).per_s, f32) << n;
    const bool fp8 = amd || s->arch.major >= 9 || (s->arch.major == 8 && s->arch.minor >= 9);
    EXPECT_EQ(s->peak_flops.contains(Dtype::FP8), fp8) << n;
  }
  // The A10 (sm_86): NVIDIA's datasheet, dense: 31.2 F32, 62.5 TF32, 125 F16/BF16 TFLOP/s.
  const DeviceSpec* a10 = find_device_model("NVIDIA A10");
  ASSERT_NE(a10, nullptr);
  EXPECT_DOUBLE_EQ(a10->peak_for(Dtype::TF32).per_s, 62.5e12);
  EXPECT_DOUBLE_EQ(a10->peak_for(Dtype::BF16).per_s, 125e12);
  EXPECT_DOUBLE_EQ(a10->peak_for(Dtype::F16).per_s, 125e12);
  EXPECT_DOUBLE_EQ(a10->peak_for(Dtype::F32).per_s, 31.2e12);
}

TEST(Catalog, NamesAsToolsPrintThemFindTheirModel) {
  // nvidia-smi -L / the CUDA runtime (Kineto deviceProperties) and /proc/cpuinfo spellings.
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA H200", "H200-SXM-141GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
      {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"},
      {"NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"},
      {"Tesla V100-SXM2-16GB", "V100-SXM2-16GB"},
      {"Tesla V100-SXM2-32GB", "V100-SXM2-32GB"},
      {"Tesla V100-PCIE-16GB", "V100-PCIe-16GB"},
      {"Tesla P100-SXM2-16GB", "P100-SXM2-16GB"},
      {"Tesla K40c", "K40"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},
      {"NVIDIA H100 PCIe", "H100-PCIe-80GB"},
      {"NVIDIA GeForce RTX 4090", "RTX-4090"},
      {"Intel(R) Xeon(R) CPU E5-2698 v4 @ 2.20GHz", "Xeon-E5-2698v4"},
      {"Intel(R) Xeon(R) CPU E5-2690 v3 @ 2.60GHz", "Xeon-E5-2690v3"},
      {"AMD EPYC 7742 64-Core Processor", "EPYC-7742"},
      {"Intel(R) Xeon(R) Platinum 8480C", "Xeon-Platinum-8480C"},
      {"Intel(R) Xeon(R) Platinum 8480+", "Xeon-Platinum-8480C"},
      {"v100-sxm2-16gb", "V100-SXM2-16GB"},
      // Issue 16: parts users run today, as nvidia-smi / Kineto / /proc/cpuinfo print them.
      {"NVIDIA B200", "B200-SXM-180GB"},
      {"NVIDIA GB200", "GB200-186GB"},
      {"NVIDIA GB300", "GB300-288GB"},
      {"NVIDIA H20", "H20-SXM-96GB"},
      {"NVIDIA H800", "H800-SXM5-80GB"},
      {"NVIDIA L40S", "L40S-48GB"},
      {"NVIDIA A10", "A10-24GB"},
      {"NVIDIA L4", "L4-24GB"},
      {"Tesla T4", "T4-16GB"},
      {"AMD EPYC 9654 96-Core Processor", "EPYC-9654"},
      // Session 13 (issues 15/16): nvidia-smi -L / Kineto deviceProperties / MLPerf / ROCm /
      // /proc/cpuinfo spellings of parts the catalog refused before.
      {"NVIDIA H100 NVL", "H100-NVL-94GB"},
      // Session 16: Meta's H100 boards (Kineto traces of pytorch/kineto and pytorch/pytorch).
      {"NVIDIA H100", "H100-SXM5-80GB"},
      {"NVIDIA H200 NVL", "H200-NVL-141GB"},
      {"NVIDIA A100-SXM-80GB", "A100-SXM4-80GB"},
      // Session 33 (issues 15/16): the Grace Hopper GPUs and the A30, as nvidia-smi, CUDA and
      // Kineto print them; the plain catalog key of GH200-96GB also reaches it.
      {"NVIDIA GH200 480GB", "GH200-96GB"},
      {"NVIDIA GH200 144G HBM3e", "GH200-144GB"},
      {"NVIDIA GH200 96GB", "GH200-96GB"},
      {"NVIDIA A30", "A30-24GB"},
      {"NVIDIA A100-PCIE-80GB", "A100-PCIe-80GB"},
      {"NVIDIA GeForce RTX 3090", "RTX-3090"},
      {"NVIDIA RTX A6000", "RTX-A6000"},
      {"NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada-48GB"},
      {"AMD Instinct MI300X", "MI300X-192GB"},
      {"AMD Instinct MI250X", "MI250X-GCD"},
      {"Intel(R) Xeon(R) Platinum 8462Y+", "Xeon-Platinum-8462Y+"},
      {"AMD EPYC 7763 64-Core Processor", "EPYC-7763"},
      // Issue 15 (h-ada): nvidia-smi's name of the Turing TU102 Quadro that Lambda's benchmark ran.
      {"Quadro RTX 8000", "Quadro-RTX-8000"},
      // Issue 16 (h-dgx2): the DGX-2's and DGX-2H's GPUs and host CPU as nvidia-smi and
      // /proc/cpuinfo print them.
      {"Tesla V100-SXM3-32GB", "V100-SXM3-32GB"},
      {"Tesla V100-SXM3-32GB-H", "V100-SXM3-32GB-H"},
      {"Intel(R) Xeon(R) Platinum 8168 CPU @ 2.70GHz", "Xeon-Platinum-8168"},
      // The device keys `calibrate` makes of such names (vendor prefix cut, spaces to hyphens).
      {"GeForce-RTX-4090", "RTX-4090"},
      {"GeForce-RTX-3090", "RTX-3090"},
      {"H100-NVL", "H100-NVL-94GB"},
      {"RTX-6000-Ada-Generation", "RTX-6000-Ada-48GB"},
      {"Instinct-MI300X", "MI300X-192GB"},
  };
  for (const auto& [printed, model] : cases) {
    const DeviceSpec* s = find_device_model(printed);
    ASSERT_NE(s, nullptr) << printed;
    EXPECT_EQ(s->model, model) << printed;
  }
  // Products the catalog does not hold stay unknown rather than matching a neighbour: "H20" must
  // not reach H200, nor "A10G" (AWS's variant, other clocks) A10, nor "L4" L40S, nor the
  // Turing "Quadro RTX 6000" the Ada card; HIP's "AMD Instinct MI250X/MI250" names a GCD of either
  // of two boards (110 or 104 CUs) and stays unknown (docs/catalog.md).
  for (const char* unknown :
       {"NVIDIA A10G", "NVIDIA L40", "NVIDIA B100", "Quadro RTX 6000", "AMD Instinct MI250X/MI250",
        "AMD Instinct MI250", "AMD Instinct MI325X", "NVIDIA H800 NVL"})
    EXPECT_EQ(find_device_model(unknown), nullptr) << unknown;
  EXPECT_NE(find_device_model("NVIDIA H20")->model, find_device_model("NVIDIA H200")->model);
}

TEST(Catalog, RecentPartsCarryTheirDatasheetFigures) {
  // Dense peaks (sparsity figures halved) and memory as each entry's source gives them.
  const auto peak = [](const char* n, Dtype d) { return find_device_model(n)->peak_for(d).per_s; };
  EXPECT_DOUBLE_EQ(peak("NVIDIA H20", Dtype::BF16), 148e12);
  // DGX-2H: "2.1 petaflops" where the DGX-2 has 2 = every clock-bound peak x 1.05; memory as is.
  for (Dtype d : {Dtype::F64, Dtype::F32, Dtype::F16})
    EXPECT_NEAR(peak("Tesla V100-SXM3-32GB-H", d) / peak("Tesla V100-SXM3-32GB", d), 1.05, 1e-12);
  EXPECT_DOUBLE_EQ(peak("Tesla V100-SXM3-32GB", Dtype::F16), 125e12);
  EXPECT_EQ(find_device_model("V100-SXM3-32GB-H")->memory_bandwidth,
            find_device_model("V100-SXM3-32GB")->memory_bandwidth);
  EXPECT_DOUBLE_EQ(peak("NVIDIA H20", Dtype::F64), 1e12);
  EXPECT_DOUBLE_EQ(find_device_model("NVIDIA H20")->memory_bandwidth.bytes_per_s, 4000e9);
  EXPECT_EQ(find_device_model("NVIDIA H20")->memory_capacity.v, std::int64_t{96} << 30);
  EXPECT_EQ(find_device_model("NVIDIA H20")->sm_count, 78);
  EXPECT_DOUBLE_EQ(peak("NVIDIA H800", Dtype::BF16), peak("NVIDIA H100 80GB HBM3", Dtype::BF16));
  EXPECT_DOUBLE_EQ(peak("NVIDIA H800", Dtype::F64), 1e12);
  EXPECT_DOUBLE_EQ(peak("NVIDIA B200", Dtype::BF16), 2250e12);  // 4.5 P with sparsity
  EXPECT_DOUBLE_EQ(peak("NVIDIA GB200", Dtype::FP8), 5000e12);  // 10 P with sparsity
  EXPECT_EQ(find_device_model("NVIDIA B200")->sm_count, 0);     // not in the sources
  EXPECT_DOUBLE_EQ(peak("NVIDIA L40S", Dtype::TF32), 183e12);
  EXPECT_DOUBLE_EQ(peak("NVIDIA L4", Dtype::FP8), 242.5e12);
  // A10: TF32 62.5 dense per NVIDIA's datasheet (h-peaks); T4 has no BF16 units.
  EXPECT_DOUBLE_EQ(peak("NVIDIA A10", Dtype::TF32), 62.5e12);
  EXPECT_DOUBLE_EQ(peak("Tesla T4", Dtype::BF16), 8.1e12);
  EXPECT_DOUBLE_EQ(peak("Tesla T4", Dtype::F16), 65e12);
  const DeviceSpec* epyc = find_device_model("AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(epyc->kind, DeviceKind::Cpu);
  EXPECT_EQ(epyc->worker_threads, 192);
  EXPECT_DOUBLE_EQ(epyc->memory_bandwidth.bytes_per_s, 460.8e9);
}

TEST(Catalog, A100PcieAt250WattsSustainsNinetyPercentOfTheSxm4Peaks) {
  // NVIDIA's launch table for the 250 W A100 PCIe: "Relative Performance (SXM Version) 90%" at the
  // same datasheet peaks (AnandTech, 2020-06-22): every compute peak is 0.9 of the SXM4's, HBM
  // bandwidth is the datasheet's. The 300 W 80GB card has no such figure: its peaks stay.
  const DeviceSpec* pcie = find_device_model("A100-PCIe-40GB");
  const DeviceSpec* sxm = find_device_model("A100-SXM4-40GB");
  const DeviceSpec* pcie80 = find_device_model("A100-PCIe-80GB");
  ASSERT_NE(pcie, nullptr);
  ASSERT_NE(sxm, nullptr);
  ASSERT_NE(pcie80, nullptr);
  for (const Dtype d : {Dtype::F64, Dtype::F32, Dtype::TF32, Dtype::F16, Dtype::BF16}) {
    EXPECT_NEAR(pcie->peak_for(d).per_s / sxm->peak_for(d).per_s, 0.9, 1e-12);
    EXPECT_DOUBLE_EQ(pcie80->peak_for(d).per_s, sxm->peak_for(d).per_s);
  }
  EXPECT_DOUBLE_EQ(pcie->memory_bandwidth.bytes_per_s, sxm->memory_bandwidth.bytes_per_s);
  EXPECT_NE(pcie->source.find("250 W"), std::string::npos);
}

TEST(Catalog, SessionThirteenPartsCarryTheirSourcedFigures) {
  // Dense peaks as each entry's source gives them (with-sparsity figures halved); what no source
  // gave is left to the F32 fallback, not guessed.
  const auto peak = [](const char* n, Dtype d) { return find_device_model(n)->peak_for(d).per_s; };
  EXPECT_DOUBLE_EQ(peak("NVIDIA H100 NVL", Dtype::BF16), 835.5e12);  // 1671 with sparsity
  EXPECT_DOUBLE_EQ(peak("NVIDIA H100 NVL", Dtype::FP8), 1670.5e12);
  EXPECT_DOUBLE_EQ(find_device_model("NVIDIA H100 NVL")->memory_bandwidth.bytes_per_s, 3900e9);
  EXPECT_EQ(find_device_model("NVIDIA H100 NVL")->memory_capacity.v, std::int64_t{94} << 30);
  EXPECT_EQ(find_device_model("NVIDIA H200 NVL")->sm_count, 0);  // not in the sources read
  EXPECT_DOUBLE_EQ(peak("AMD Instinct MI300X", Dtype::BF16), 1307.4e12);
  EXPECT_DOUBLE_EQ(peak("AMD Instinct MI300X", Dtype::TF32), 653.7e12);
  EXPECT_EQ(find_device_model("AMD Instinct MI300X")->sm_count, 304);
  // One MI250X GCD is half the board, as "Tesla K80" is one GK210.
  EXPECT_DOUBLE_EQ(peak("AMD Instinct MI250X", Dtype::F16), 383e12 / 2);
  EXPECT_EQ(find_device_model("AMD Instinct MI250X")->memory_capacity.v, std::int64_t{64} << 30);
  EXPECT_DOUBLE_EQ(peak("NVIDIA GeForce RTX 3090", Dtype::BF16), 71e12);
  EXPECT_DOUBLE_EQ(peak("NVIDIA RTX A6000", Dtype::TF32), 77.4e12);
  // RTX 6000 Ada: tensor rates derived from the AD102 rate per SM (h-ada, docs/catalog.md): F16
  // 4x and TF32 2x its 91.1 F32 (before: no tensor figure, F16 fell back to F32).
  EXPECT_DOUBLE_EQ(peak("NVIDIA RTX 6000 Ada Generation", Dtype::F16), 364.4e12);
  EXPECT_DOUBLE_EQ(peak("NVIDIA RTX 6000 Ada Generation", Dtype::TF32), 182.2e12);
  // L4: 58 SMs (deviceQuery), not the 60 of the full AD104 die.
  EXPECT_EQ(find_device_model("NVIDIA L4")->sm_count, 58);
  const DeviceSpec* x = find_device_model("Intel(R) Xeon(R) Platinum 8462Y+");
  EXPECT_EQ(x->kind, DeviceKind::Cpu);
  EXPECT_EQ(x->worker_threads, 64);
  EXPECT_DOUBLE_EQ(x->peak_for(Dtype::F64).per_s, 32 * 2.8e9 * 32);
  EXPECT_DOUBLE_EQ(find_device_model("AMD EPYC 7763 64-Core Processor")->peak_for(Dtype::F64).per_s,
                   64 * 2.45e9 * 16);
}

TEST(Catalog, EveryGpuHasItsArchitectureAndNoCpuHasOne) {
  // Compute capability (NVIDIA) or gfx target (AMD) of every catalog GPU: the cost model's
  // per-generation curves key on it (docs/cost-model.md), so a GPU without one would silently
  // lose them. A new GPU entry must be added here too.
  const std::map<std::string, std::string> expected = {{"K40", "3.5"},
                                                       {"K80-GK210", "3.7"},
                                                       {"P100-SXM2-16GB", "6.0"},
                                                       {"P100-PCIe-16GB", "6.0"},
                                                       {"V100-SXM2-16GB", "7.0"},
                                                       {"V100-SXM2-32GB", "7.0"},
                                                       {"V100-SXM3-32GB", "7.0"},
                                                       {"V100-SXM3-32GB-H", "7.0"},
                                                       {"V100-PCIe-16GB", "7.0"},
                                                       {"T4-16GB", "7.5"},
                                                       {"Quadro-RTX-8000", "7.5"},
                                                       {"A100-SXM4-40GB", "8.0"},
                                                       {"A100-SXM4-80GB", "8.0"},
                                                       {"A100-PCIe-40GB", "8.0"},
                                                       {"A100-PCIe-80GB", "8.0"},
                                                       {"A30-24GB", "8.0"},
                                                       {"A10-24GB", "8.6"},
                                                       {"RTX-3090", "8.6"},
                                                       {"RTX-A6000", "8.6"},
                                                       {"L4-24GB", "8.9"},
                                                       {"L40S-48GB", "8.9"},
                                                       {"RTX-4090", "8.9"},
                                                       {"RTX-6000-Ada-48GB", "8.9"},
                                                       {"H100-SXM5-80GB", "9.0"},
                                                       {"H100-PCIe-80GB", "9.0"},
                                                       {"H100-NVL-94GB", "9.0"},
                                                       {"H200-SXM-141GB", "9.0"},
                                                       {"H200-NVL-141GB", "9.0"},
                                                       {"GH200-96GB", "9.0"},
                                                       {"GH200-144GB", "9.0"},
                                                       {"H20-SXM-96GB", "9.0"},
                                                       {"H800-SXM5-80GB", "9.0"},
                                                       {"B200-SXM-180GB", "10.0"},
                                                       {"GB200-186GB", "10.0"},
                                                       {"GB300-288GB", "10.3"},
                                                       {"MI250X-GCD", "gfx90a"},
                                                       {"MI300X-192GB", "gfx942"}};
  std::size_t gpus = 0;
  for (const std::string& n : device_model_names()) {
    const DeviceSpec* s = find_device_model(n);
    if (s->kind != DeviceKind::Gpu) {
      EXPECT_EQ(s->arch.vendor, GpuArch::Vendor::None) << n;
      continue;
    }
    ++gpus;
    ASSERT_TRUE(expected.count(n)) << n << " has no expected architecture";
    EXPECT_EQ(to_string(s->arch), expected.at(n)) << n;
    EXPECT_EQ(s->arch.vendor,
              n.rfind("MI", 0) == 0 ? GpuArch::Vendor::Amd : GpuArch::Vendor::Nvidia)
        << n;
  }
  EXPECT_EQ(gpus, expected.size());
  // Hopper is compute capability 9.x on NVIDIA only; 10.0 and an AMD part are not.
  EXPECT_TRUE(find_device_model("H800-SXM5-80GB")->arch.hopper());
  EXPECT_FALSE(find_device_model("B200-SXM-180GB")->arch.hopper());
  EXPECT_FALSE(find_device_model("MI300X-192GB")->arch.hopper());
  EXPECT_FALSE(find_device_model("A10-24GB")->arch.nvidia(8, 0));
  EXPECT_TRUE(find_device_model("A100-PCIe-40GB")->arch.nvidia(8, 0));
}

TEST(Cluster, EveryBuiltinLoadsWithRoutesBetweenAllDevices) {
  const auto names = builtin_cluster_names();
  for (const char* expected : {"paper-2gpu", "paper-4gpu", "dgx1-v100", "dgx-a100", "hgx-h100",
                               "pcie-4090x8", "2x-dgx-a100", "dgx2-v100", "dgx2h-v100"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& n : names) {
    const Cluster c = load_cluster(n);
    EXPECT_EQ(c.name, n);
    for (DeviceId i = 0; i < c.num_devices(); ++i) {
      for (DeviceId j = 0; j < c.num_devices(); ++j) {
        if (i != j) EXPECT_FALSE(c.route(i, j).empty()) << n << " " << i << "->" << j;
      }
    }
  }
}

TEST(Cluster, Paper4gpuPeersBehindOneSwitchAndStagesAcrossBoards) {
  const Cluster c = load_cluster("paper-4gpu");
  ASSERT_EQ(c.gpus().size(), 4u);
  const DeviceId g0 = c.device_index("gpu0"), g1 = c.device_index("gpu1"),
                 g2 = c.device_index("gpu2"), cpu = c.device_index("cpu0");
  const Route& same = c.route(g0, g1);
  ASSERT_EQ(same.segments.size(), 1u);
  EXPECT_EQ(link_names(c, same.segments[0]), (std::vector<std::string>{"plx0-gpu0", "plx0-gpu1"}));
  EXPECT_FALSE(same.segments[0].hops[0].forward);
  EXPECT_TRUE(same.segments[0].hops[1].forward);
  const Route& across = c.route(g0, g2);
  ASSERT_TRUE(across.staged());
  EXPECT_EQ(across.segments[0].to, cpu);
  EXPECT_EQ(across.segments[1].from, cpu);
  EXPECT_EQ(across.segments[1].to, g2);
  EXPECT_DOUBLE_EQ(across.segments[0].bottleneck.bytes_per_s, 15.75e9);
  EXPECT_EQ(across.segments[0].latency.ns, 2100);
}

// The NVLink pattern of dgx1-v100 must be exactly the one `nvidia-smi topo -m` printed on a real
// DGX-1V (tests/data/calibration/dgx1v_nvidia-smi-topo.txt): NV# pairs get one direct hop of
// # x 25 GB/s and peer access; every other GPU pair is staged through host memory.
TEST(Cluster, Dgx1HybridCubeMeshMatchesNvidiaSmiTopo) {
  const Cluster c = load_cluster("dgx1-v100");
  std::ifstream in(std::string(PLACESIM_TEST_DATA) + "/calibration/dgx1v_nvidia-smi-topo.txt");
  ASSERT_TRUE(in) << "missing topo file";
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string head;
    ss >> head;
    if (head.rfind("GPU", 0) != 0) continue;
    if (line.find("CPU Affinity") != std::string::npos) continue;
    const int i = std::stoi(head.substr(3));
    ++rows;
    for (int j = 0; j < 8; ++j) {
      std::string cell;
      ss >> cell;
      if (i == j) continue;
      const DeviceId a = c.device_index("gpu" + std::to_string(i));
      const DeviceId b = c.device_index("gpu" + std::to_string(j));
      const Route& r = c.route(a, b);
      if (cell.rfind("NV", 0) == 0) {
        const int bonded = std::stoi(cell.substr(2));
        ASSERT_EQ(r.segments.size(), 1u) << i << "-" << j;
        EXPECT_EQ(r.segments[0].hops.size(), 1u) << i << "-" << j;
        EXPECT_DOUBLE_EQ(r.segments[0].bottleneck.bytes_per_s, bonded * 25e9) << i << "-" << j;
        EXPECT_TRUE(c.peer_access[a][b]);
      } else {
        EXPECT_EQ(cell, "SYS") << i << "-" << j;
        EXPECT_TRUE(r.staged()) << i << "-" << j;
        EXPECT_FALSE(c.peer_access[a][b]);
      }
    }
  }
  EXPECT_EQ(rows, 8);
}

// On NVSwitch systems every GPU pair, including the two GPUs behind one PCIe switch (also two
// hops apart), must use NVLink.
TEST(Cluster, NvswitchCarriesEveryGpuPair) {
  for (const auto& [name, bw] : {std::pair<std::string, double>{"dgx-a100", 300e9},
                                 {"hgx-h100", 450e9},
                                 {"dgx2-v100", 150e9},
                                 {"dgx2h-v100", 150e9}}) {
    const Cluster c = load_cluster(name);
    for (DeviceId a : c.gpus()) {
      for (DeviceId b : c.gpus()) {
        if (a == b) continue;
        const Route& r = c.route(a, b);
        ASSERT_EQ(r.segments.size(), 1u);
        EXPECT_DOUBLE_EQ(r.segments[0].bottleneck.bytes_per_s, bw) << name << " " << a << "->" << b;
      }
    }
  }
}

TEST(Cluster, YamlRoundTripGivesTheSameCluster) {
  for (const std::string& n : builtin_cluster_names()) {
    const Cluster a = load_cluster(n);
    const Cluster b = parse_cluster_yaml(cluster_to_yaml(a), "roundtrip.yaml");
    ASSERT_EQ(a.devices.size(), b.devices.size()) << n;
    for (std::size_t i = 0; i < a.devices.size(); ++i) {
      const DeviceSpec& x = a.devices[i].spec;
      const DeviceSpec& y = b.devices[i].spec;
      EXPECT_EQ(a.devices[i].name, b.devices[i].name);
      EXPECT_EQ(a.devices[i].host, b.devices[i].host);
      EXPECT_EQ(a.devices[i].node, b.devices[i].node);
      EXPECT_EQ(x.model, y.model);
      EXPECT_EQ(x.peak_flops, y.peak_flops) << n << " " << a.devices[i].name;
      EXPECT_EQ(x.memory_bandwidth, y.memory_bandwidth);
      EXPECT_EQ(x.memory_capacity, y.memory_capacity);
      EXPECT_EQ(x.launch_overhead, y.launch_overhead);
      EXPECT_EQ(x.peer_engines, y.peer_engines);
      EXPECT_EQ(x.worker_threads, y.worker_threads);
      EXPECT_EQ(x.intra_op_threads, y.intra_op_threads);
      EXPECT_EQ(x.reserved_memory, y.reserved_memory) << n << " " << a.devices[i].name;
      EXPECT_EQ(x.copy_issue_overhead, y.copy_issue_overhead);
      EXPECT_EQ(x.dma_setup_latency, y.dma_setup_latency);
      EXPECT_EQ(x.kernel_gap, y.kernel_gap) << n << " " << a.devices[i].name;
    }
    ASSERT_EQ(a.links.size(), b.links.size());
    for (std::size_t l = 0; l < a.links.size(); ++l) {
      EXPECT_EQ(a.links[l].name, b.links[l].name);
      EXPECT_EQ(a.links[l].a, b.links[l].a);
      EXPECT_EQ(a.links[l].b, b.links[l].b);
      EXPECT_EQ(a.links[l].bandwidth, b.links[l].bandwidth);
      EXPECT_EQ(a.links[l].latency, b.links[l].latency);
      EXPECT_EQ(a.links[l].sharing, b.links[l].sharing);
    }
    EXPECT_EQ(a.peer_access, b.peer_access);
    for (DeviceId i = 0; i < a.num_devices(); ++i) {
      for (DeviceId j = 0; j < a.num_devices(); ++j) {
        ASSERT_EQ(a.route(i, j).segments.size(), b.route(i, j).segments.size());
        for (std::size_t s = 0; s < a.route(i, j).segments.size(); ++s) {
          EXPECT_EQ(link_names(a, a.route(i, j).segments[s]),
                    link_names(b, b.route(i, j).segments[s]));
        }
      }
    }
  }
}

std::string error_of(const std::string& yaml) {
  try {
    parse_cluster_yaml(yaml, "c.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kBase = R"(
devices:
  - {name: cpu0, model: Xeon-E5-2690v3}
  - {name: gpu0, model: K80-GK210}
  - {name: gpu1, model: K80-GK210}
switches: [sw0]
links:
  - {between: [cpu0, sw0], bandwidth: 12 GB/s}
  - {between: [gpu0, sw0], bandwidth: 12 GB/s}
  - {between: [gpu1, sw0], bandwidth: 12 GB/s}
)";

TEST(Cluster, ExplicitRoutesOverrideAndPeerAccessNoneStages) {
  EXPECT_EQ(error_of(kBase), "");
  const Cluster c = parse_cluster_yaml(std::string(kBase) + "peer_access: none\n", "c.yaml");
  EXPECT_TRUE(c.route(1, 2).staged());
  EXPECT_EQ(c.devices[1].host, 0);
  // A parallel link and an explicit route that uses it instead of the computed (first) one.
  const std::string y = std::string(kBase) +
                        "  - {between: [gpu1, sw0], bandwidth: 24 GB/s}\n"
                        "routes:\n  - {from: gpu0, to: gpu1, links: [gpu0-sw0, gpu1-sw0#2]}\n";
  const Cluster e = parse_cluster_yaml(y, "c.yaml");
  const Route& r = e.route(1, 2);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(link_names(e, r.segments[0]), (std::vector<std::string>{"gpu0-sw0", "gpu1-sw0#2"}));
  EXPECT_FALSE(r.segments[0].hops[1].forward);
  EXPECT_DOUBLE_EQ(r.segments[0].bottleneck.bytes_per_s, 12e9);
  const Cluster back = parse_cluster_yaml(cluster_to_yaml(e), "back.yaml");
  EXPECT_EQ(link_names(back, back.route(1, 2).segments[0]), link_names(e, r.segments[0]));
  EXPECT_EQ(link_names(back, back.route(2, 1).segments[0]),
            link_names(e, e.route(2, 1).segments[0]));
}

TEST(Cluster, ErrorsNameKeyPathAndLine) {
  std::string y = kBase;
  std::string m = error_of(y.replace(y.rfind("12 GB/s"), 7, "0 GB/s"));
  EXPECT_NE(m.find("c.yaml: links[2].bandwidth (line 10)"), std::string::npos) << m;
  y = kBase;
  m = error_of(y.replace(y.find("[gpu0, sw0]"), 11, "[gpu7, sw0]"));
  EXPECT_NE(m.find("links[1].between[0]"), std::string::npos) << m;
  EXPECT_NE(m.find("gpu7"), std::string::npos) << m;
  y = kBase;
  m = error_of(y.replace(y.find("name: gpu1"), 10, "name: gpu0"));
  EXPECT_NE(m.find("devices[2].name"), std::string::npos) << m;
  y = kBase;
  m = error_of(y.replace(y.find("  - {between: [gpu1"), 42, ""));
  EXPECT_NE(m.find("route"), std::string::npos) << m;
  m = error_of("devices: [\n  {name: a");
  EXPECT_NE(m.find("c.yaml: line"), std::string::npos) << m;
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  y = kBase;
  m = error_of(y.replace(y.find("model: K80-GK210"), 16, "model: K81"));
  EXPECT_NE(m.find("devices[1].model"), std::string::npos) << m;
  y = kBase;
  m = error_of(y.replace(y.find("bandwidth: 12 GB/s"), 18, "bandwdth: 12 GB/s"));
  EXPECT_NE(m.find("unknown key \"bandwdth\""), std::string::npos) << m;
}

TEST(Cluster, UnknownBuiltinListsTheKnownOnes) {
  try {
    load_cluster("paper-3gpu");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("paper-4gpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace placesim::sim

namespace placesim::sim {
namespace {

TEST(Cluster, SmCountAndPeaksPerMathModeOverrideTheCatalogAndRoundTrip) {
  const std::string y =
      "name: t\ndevices:\n"
      "  - {name: cpu0, model: Xeon-E5-2690v3}\n"
      "  - {name: gpu0, model: A100-SXM4-80GB, host: cpu0, sm_count: 98,"
      " peak_flops: {tf32: 120 TFLOP/s, f16: 250 TFLOP/s}}\n"
      "  - {name: gpu1, model: A100-SXM4-80GB, host: cpu0}\n"
      "  - {name: gpu2, kind: gpu, host: cpu0, peak_flops: {f32: 10 TFLOP/s},"
      " memory_bandwidth: 900 GB/s, memory_capacity: 16 GiB, sm_count: 40}\n"
      "links:\n  - {between: [cpu0, gpu0], bandwidth: 10 GB/s}\n  - {between: [cpu0, gpu1], "
      "bandwidth: 10 GB/s}\n  - {between: [cpu0, gpu2], bandwidth: 10 GB/s}\n"
      "peer_access: none\n";
  const Cluster c = parse_cluster_yaml(y, "t.yaml");
  EXPECT_EQ(c.devices[1].spec.sm_count, 98);
  EXPECT_EQ(c.devices[2].spec.sm_count, 108);  // the catalog's
  EXPECT_EQ(c.devices[3].spec.sm_count, 40);
  EXPECT_DOUBLE_EQ(c.devices[1].spec.peak_for(Dtype::TF32).per_s, 120e12);
  EXPECT_DOUBLE_EQ(c.devices[1].spec.peak_for(Dtype::F16).per_s, 250e12);
  EXPECT_DOUBLE_EQ(c.devices[1].spec.peak_for(Dtype::BF16).per_s,
                   c.devices[2].spec.peak_for(Dtype::BF16).per_s);  // not set: the catalog's
  const Cluster b = parse_cluster_yaml(cluster_to_yaml(c), "roundtrip.yaml");
  EXPECT_EQ(b.devices[1].spec.sm_count, 98);
  EXPECT_EQ(b.devices[3].spec.sm_count, 40);
  EXPECT_EQ(b.devices[0].spec.sm_count, 0);
  // Bad values: one line naming the file and the key.
  for (const char* bad : {"sm_count: 0", "sm_count: -3", "sm_count: 1.5", "sm_count: many",
                          "sm_count: 5000", "sm_count: [1]"}) {
    try {
      parse_cluster_yaml(
          std::string("name: t\ndevices:\n  - {name: gpu0, model: H200, ") + bad + "}\n", "t.yaml");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("t.yaml"), std::string::npos) << m;
      EXPECT_NE(m.find("devices[0].sm_count"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  try {
    parse_cluster_yaml("name: t\ndevices:\n  - {name: c, model: Xeon-E5-2690v3, sm_count: 8}\n",
                       "t.yaml");
    ADD_FAILURE() << "sm_count on a CPU";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no sm_count on a CPU"), std::string::npos) << e.what();
  }
}

// `arch` gives explicit specs an architecture (docs/formats.md): an NVIDIA compute capability or
// an AMD gfx target; a catalog model keeps the catalog's, a CPU has none.
TEST(Cluster, ArchOfExplicitSpecsParsesAndRoundTrips) {
  const std::string head =
      "name: t\ndevices:\n  - {name: cpu0, model: Xeon-E5-2690v3}\n"
      "  - {name: gpu0, kind: gpu, host: cpu0, peak_flops: {f32: 60 TFLOP/s},"
      " memory_bandwidth: 3 TB/s, memory_capacity: 80 GiB";
  const std::string tail =
      "}\nlinks:\n  - {between: [cpu0, gpu0], bandwidth: 10 GB/s}\npeer_access: none\n";
  const Cluster none = parse_cluster_yaml(head + tail, "t.yaml");
  EXPECT_EQ(none.devices[1].spec.arch.vendor, GpuArch::Vendor::None);
  for (const auto& [given, vendor] :
       {std::pair{"9.0", GpuArch::Vendor::Nvidia}, std::pair{"10.3", GpuArch::Vendor::Nvidia},
        std::pair{"gfx942", GpuArch::Vendor::Amd}}) {
    const Cluster c = parse_cluster_yaml(head + ", arch: \"" + given + "\"" + tail, "t.yaml");
    EXPECT_EQ(c.devices[1].spec.arch.vendor, vendor) << given;
    EXPECT_EQ(to_string(c.devices[1].spec.arch), given);
    const Cluster back = parse_cluster_yaml(cluster_to_yaml(c), "back.yaml");
    EXPECT_EQ(to_string(back.devices[1].spec.arch), given);
  }
  EXPECT_TRUE(
      parse_cluster_yaml(head + ", arch: 9.0" + tail, "t.yaml").devices[1].spec.arch.hopper());
  // A catalog model writes no arch (it is the catalog's).
  EXPECT_EQ(cluster_to_yaml(load_cluster("dgx-a100")).find("arch:"), std::string::npos);
  for (const char* bad : {"9", "sm_90", "9.", ".5", "9.10", "0.0", "gfx", "gfxzz", "[9, 0]"}) {
    const std::string m = error_of(head + ", arch: " + bad + tail);
    EXPECT_NE(m.find("c.yaml"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m.find("devices[1].arch"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_NE(error_of("name: t\ndevices:\n  - {name: c, model: Xeon-E5-2690v3, arch: \"9.0\"}\n")
                .find("no 'arch' with a catalog model"),
            std::string::npos);
  EXPECT_NE(error_of("name: t\ndevices:\n  - {name: c, kind: cpu, peak_flops: {f32: 1 TFLOP/s},"
                     " memory_bandwidth: 100 GB/s, memory_capacity: 64 GiB, arch: \"9.0\"}\n")
                .find("no arch on a CPU"),
            std::string::npos);
  EXPECT_NE(error_of("name: t\ndevices:\n  - {name: g, model: H100, arch: \"8.0\"}\n")
                .find("the catalog gives H100-SXM5-80GB's: \"9.0\""),
            std::string::npos);
}

TEST(Cluster, FixedCostKeysOverrideTheCatalogAndRoundTrip) {
  const std::string y =
      "name: t\ndevices:\n"
      "  - {name: cpu0, model: Xeon-E5-2690v3, intra_op_threads: 6}\n"
      "  - {name: gpu0, model: K80-GK210, host: cpu0, reserved_memory: 300 MiB,"
      " copy_issue_overhead: 4 us, dma_setup_latency: 1500 ns}\n"
      "  - {name: gpu1, model: K80-GK210, host: cpu0}\n"
      "links:\n  - {between: [cpu0, gpu0], bandwidth: 10 GB/s}\n  - {between: [cpu0, gpu1], "
      "bandwidth: 10 GB/s}\n"
      "peer_access: none\n";
  const Cluster c = parse_cluster_yaml(y, "t.yaml");
  EXPECT_EQ(c.devices[0].spec.intra_op_threads, 6);
  EXPECT_EQ(c.devices[1].spec.reserved_memory.v, 300LL << 20);
  EXPECT_EQ(c.devices[1].spec.copy_issue_overhead.ns, 4000);
  EXPECT_EQ(c.devices[1].spec.dma_setup_latency.ns, 1500);
  // gpu1 keeps the catalog's Kepler defaults (docs/catalog.md).
  EXPECT_EQ(c.devices[2].spec.reserved_memory.v, 1562LL << 20);
  EXPECT_EQ(c.devices[2].spec.copy_issue_overhead.ns, 10'000);
  const Cluster b = parse_cluster_yaml(cluster_to_yaml(c), "roundtrip.yaml");
  EXPECT_EQ(b.devices[1].spec.reserved_memory, c.devices[1].spec.reserved_memory);
  EXPECT_EQ(b.devices[1].spec.dma_setup_latency, c.devices[1].spec.dma_setup_latency);
  EXPECT_EQ(b.devices[0].spec.intra_op_threads, 6);
  EXPECT_THROW(
      parse_cluster_yaml(
          "name: t\ndevices:\n  - {name: gpu0, model: K80-GK210, reserved_memory: -1 MiB}\n",
          "t.yaml"),
      InputError);
  EXPECT_THROW(
      parse_cluster_yaml(
          "name: t\ndevices:\n  - {name: cpu0, model: Xeon-E5-2690v3, intra_op_threads: many}\n",
          "t.yaml"),
      InputError);
}

// `kernel_gap`: the catalog's per-architecture default (sim/kernel_gap.hpp), explicit specs'
// from their `arch`, a cluster file's value per device; written back; bad values one InputError.
TEST(Cluster, KernelGapDefaultsByArchitectureOverridesPerDeviceAndRoundTrips) {
  const std::string head = "name: t\ndevices:\n  - {name: cpu0, model: Xeon-E5-2690v3}\n";
  const std::string tail =
      "links:\n  - {between: [cpu0, g0], bandwidth: 10 GB/s}\n"
      "  - {between: [cpu0, g1], bandwidth: 10 GB/s}\n"
      "  - {between: [cpu0, g2], bandwidth: 10 GB/s}\n"
      "peer_access: none\n";
  const std::string custom =
      "kind: gpu, peak_flops: {f32: 10 TFLOP/s}, memory_bandwidth: 100 GB/s, "
      "memory_capacity: 1 GiB";
  const std::string y = head +
                        "  - {name: g0, model: H100-SXM5-80GB}\n"
                        "  - {name: g1, model: A100-SXM4-80GB, kernel_gap: 2.25 us}\n"
                        "  - {name: g2, " +
                        custom + ", arch: \"9.0\"}\n" + tail;
  const Cluster c = parse_cluster_yaml(y, "t.yaml");
  EXPECT_EQ(c.devices[1].spec.kernel_gap.ns, 1100);  // Hopper, the catalog's
  EXPECT_NE(c.devices[1].spec.kernel_gap_source.find("H200"), std::string::npos);
  EXPECT_EQ(c.devices[2].spec.kernel_gap.ns, 2250);  // the file's, not the A100's 1.5 us
  EXPECT_EQ(c.devices[2].spec.kernel_gap_source, "set in t.yaml");
  EXPECT_EQ(c.devices[3].spec.kernel_gap.ns, 1100);  // explicit specs: their arch's
  EXPECT_EQ(find_device_model("A100-SXM4-80GB")->kernel_gap.ns, 1500);
  EXPECT_EQ(find_device_model("V100-SXM2-16GB")->kernel_gap.ns, 0);  // not measured
  const Cluster b = parse_cluster_yaml(cluster_to_yaml(c), "back.yaml");
  for (std::size_t i = 1; i < 4; ++i)
    EXPECT_EQ(b.devices[i].spec.kernel_gap, c.devices[i].spec.kernel_gap) << i;
  // A catalog value written back keeps the catalog's source; 0 is a value like any other.
  EXPECT_EQ(b.devices[1].spec.kernel_gap_source, c.devices[1].spec.kernel_gap_source);
  std::string zero = y;
  zero.replace(zero.find("kernel_gap: 2.25 us"), 19, "kernel_gap: 0 us");
  EXPECT_EQ(parse_cluster_yaml(zero, "t.yaml").devices[2].spec.kernel_gap.ns, 0);
  const auto error = [&](const std::string& value) {
    std::string bad = y;
    bad.replace(bad.find("2.25 us"), 7, value);
    try {
      parse_cluster_yaml(bad, "bad.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const std::string v : {"-1 us", "nan us", "1.1", "fast"}) {
    const std::string m = error(v);
    EXPECT_NE(m.find("bad.yaml: devices[2].kernel_gap"), std::string::npos) << v << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_NE(error("-1 us").find("negative"), std::string::npos);
  EXPECT_NE(error_of("name: t\ndevices:\n  - {name: c, model: Xeon-E5-2690v3, kernel_gap: 1 us}\n")
                .find("no kernel_gap on a CPU"),
            std::string::npos);
}

// `nccl_version`: the versions and message of `collective --nccl-version`, kept by the writer.
TEST(Cluster, NcclVersionReadsAsTheFlagAndRoundTrips) {
  const std::string base =
      "name: n\ndevices:\n  - {name: cpu0, model: Xeon-E5-2690v3}\n"
      "  - {name: gpu0, model: A100-SXM4-80GB, host: cpu0}\n"
      "links:\n  - {between: [cpu0, gpu0], bandwidth: 10 GB/s}\n";
  EXPECT_EQ(parse_cluster_yaml(base, "t.yaml").nccl_version, 0);
  for (const auto& [text, code] : std::vector<std::pair<std::string, int>>{
           {"2.26.2", 22602}, {"2.19", 21900}, {"2.23.4-1", 22304}, {"22903", 22903}}) {
    const Cluster c = parse_cluster_yaml(base + "nccl_version: " + text + "\n", "t.yaml");
    EXPECT_EQ(c.nccl_version, code) << text;
    EXPECT_EQ(parse_cluster_yaml(cluster_to_yaml(c), "back.yaml").nccl_version, code) << text;
  }
  EXPECT_NE(cluster_to_yaml(parse_cluster_yaml(base + "nccl_version: 2.26.2\n", "t.yaml"))
                .find("nccl_version: 2.26.2"),
            std::string::npos);
  for (const char* bad : {"3.1", "2.x", "\"\"", "[2, 26]", "{v: 2}", ""}) {
    try {
      (void)parse_cluster_yaml(base + "nccl_version: " + bad + "\n", "t.yaml");
      ADD_FAILURE() << "accepted nccl_version: " << bad;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("t.yaml"), std::string::npos) << what;
      EXPECT_NE(what.find("nccl_version (line "), std::string::npos) << what;
      EXPECT_NE(what.find("an NCCL 2.x version"), std::string::npos) << what;
    }
  }
}

TEST(Cluster, TcpLinksPerLinkAndClusterWideRoundTrip) {
  const std::string base =
      "name: eth\ndevices:\n  - {name: cpu0, model: Xeon-E5-2690v3}\n  - {name: cpu1, model: "
      "Xeon-E5-2690v3}\n"
      "switches: [tor]\nlinks:\n"
      "  - {between: [cpu0, tor], bandwidth: 12.5 GB/s, latency: 5 us, kind: eth-100g}\n"
      "  - {between: [cpu1, tor], bandwidth: 12.5 GB/s, latency: 5 us, kind: eth-100g, tcp: "
      "false}\n";
  const Cluster none = parse_cluster_yaml(base, "t.yaml");
  EXPECT_FALSE(none.links[0].tcp);
  // Cluster-wide by kind; a link's own tcp: false wins.
  const Cluster kinds =
      parse_cluster_yaml(base + "tcp: {links: [eth-100g], window: 8 MiB}\n", "t.yaml");
  EXPECT_TRUE(kinds.links[0].tcp);
  EXPECT_FALSE(kinds.links[1].tcp);
  EXPECT_DOUBLE_EQ(kinds.tcp_window_bytes, 8.0 * 1024 * 1024);
  const Cluster all = parse_cluster_yaml(base + "tcp: all\n", "t.yaml");
  EXPECT_TRUE(all.links[0].tcp);
  EXPECT_DOUBLE_EQ(all.tcp_window_bytes, 4194304.0);
  const Cluster back = parse_cluster_yaml(cluster_to_yaml(kinds), "roundtrip.yaml");
  EXPECT_TRUE(back.links[0].tcp);
  EXPECT_FALSE(back.links[1].tcp);
  EXPECT_DOUBLE_EQ(back.tcp_window_bytes, kinds.tcp_window_bytes);
  EXPECT_THROW(parse_cluster_yaml(base + "tcp: some\n", "t.yaml"), InputError);
  EXPECT_THROW(parse_cluster_yaml(base + "tcp: {links: all, window: -1 MiB}\n", "t.yaml"),
               InputError);
  EXPECT_THROW(parse_cluster_yaml(base + "tcp: {linkz: all}\n", "t.yaml"), InputError);
}

}  // namespace
}  // namespace placesim::sim

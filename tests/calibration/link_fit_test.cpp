#include "calibration/link_fit.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "calibration/topo_import.hpp"
#include "sim/error.hpp"

namespace pc = placesim::calibration;
namespace sim = placesim::sim;

namespace {
std::string data(const std::string& f) { return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f; }
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(P2p, ParsesEveryMatrixOfTheA100Box) {
  const auto m = pc::parse_p2p_output(slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt")), "p2p.txt");
  EXPECT_EQ(m.gpus, 4);
  for (const char* k : {"uni_off", "uni_on", "bi_off", "bi_on", "lat_gpu_off", "lat_cpu_off", "lat_gpu_on", "lat_cpu_on"})
    EXPECT_EQ(m.matrix.count(k), 1u) << k;
  EXPECT_DOUBLE_EQ(m.matrix.at("uni_on")[0][1], 275.07);
  EXPECT_DOUBLE_EQ(m.matrix.at("lat_gpu_on")[2][3], 2.32);
  EXPECT_DOUBLE_EQ(m.matrix.at("lat_cpu_off")[3][2], 5.61);
  EXPECT_TRUE(m.can_access[0][1]);
  EXPECT_FALSE(m.can_access[0][2]);
  EXPECT_EQ(m.names[0], "NVIDIA A100 80GB PCIe");
  EXPECT_THROW(pc::parse_p2p_output("nothing here\n", "x.txt"), sim::InputError);
}

TEST(P2p, FitsNvlinkAndPcieClassesOfTheImportedTopology) {
  pc::TopoOptions o;
  o.gpu_model = "A100-PCIe-80GB";
  sim::Cluster c = pc::import_nvidia_smi_topo(slurp(data("a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt")), "a.txt", o).cluster;
  const auto m = pc::parse_p2p_output(slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt")), "p2p.txt");
  const pc::LinkFitReport r = pc::fit_links_from_p2p(m, c);
  std::map<std::string, pc::LinkClassFit> by;
  for (const auto& f : r.classes) by[f.kind] = f;
  ASSERT_EQ(by.count("nvlink3"), 1u);
  EXPECT_EQ(by["nvlink3"].pairs, 4);
  EXPECT_NEAR(by["nvlink3"].new_gb_s, 275.2, 0.5);     // median of 275.07, 275.51, 275.34, 274.11
  EXPECT_NEAR(by["nvlink3"].new_latency_us, 2.28, 0.1);
  EXPECT_DOUBLE_EQ(by["nvlink3"].old_gb_s, 300.0);
  for (const auto& p : r.pairs) EXPECT_NEAR(p.after_gb_s, p.measured_gb_s, 0.05 * p.measured_gb_s) << p.from << "->" << p.to;
  EXPECT_THROW(
      [&] {
        pc::TopoOptions o8;
        o8.gpu_model = "V100-SXM2-16GB";
        sim::Cluster d = pc::import_nvidia_smi_topo(slurp(data("dgx1v_nvidia-smi-topo.txt")), "d.txt", o8).cluster;
        pc::fit_links_from_p2p(m, d);
      }(),
      sim::InputError);
}

TEST(NcclTests, ReadsTheDocumentedTable) {
  const auto pts = pc::parse_nccl_tests(slurp(data("nccl-tests_all_reduce_8xA100_SAMPLE.txt")), "s.txt", "all_reduce");
  ASSERT_EQ(pts.size(), 25u);  // 8 B .. 128 MiB
  EXPECT_EQ(pts[0].ranks, 8);
  EXPECT_DOUBLE_EQ(pts[0].bytes, 8);
  EXPECT_NEAR(pts[0].time_s, 24.10e-6, 1e-9);
  const pc::CollectiveFit f = pc::fit_collective(pts);
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_NEAR(f.rows[0].algbw_gb_s, 131.4, 131.4 * 0.05);
  EXPECT_NEAR(f.rows[0].busbw_gb_s, 131.4 * 1.75, 131.4 * 1.75 * 0.05);
  EXPECT_NEAR(f.rows[0].alpha_us, 24.0, 2.0);
  EXPECT_THROW(pc::parse_nccl_tests("# nothing\n", "e.txt", "all_reduce"), sim::InputError);
  EXPECT_THROW(pc::parse_nccl_tests("8 2 float sum -1 abc 0 0 0 1 2 3 0\n", "e.txt", "all_reduce"), sim::InputError);
}

TEST(NcclTests, RealSuperBenchLogOn8xA100) {
  // A real all_reduce_perf -g 8 log (12 columns: no root), with an NCCL INFO line inside the table
  // and two zero-byte rows; tests/data/README.md has its source.
  const auto pts =
      pc::parse_nccl_tests(slurp(data("superbench_nccl-tests_all_reduce_8xA100.log")), "sb.log", "all_reduce");
  ASSERT_EQ(pts.size(), 34u);  // 0, 0, 4 B .. 8 GiB
  EXPECT_EQ(pts[0].ranks, 8);
  EXPECT_EQ(pts[0].nodes, 1);
  EXPECT_DOUBLE_EQ(pts.back().bytes, 8589934592.0);
  EXPECT_NEAR(pts.back().time_s, 63896e-6, 1e-9);
  EXPECT_NEAR(pts.back().algbw_gb_s, 134.44, 1e-9);
  const pc::CollectiveFit f = pc::fit_collective(pts);
  ASSERT_EQ(f.rows.size(), 1u);
  // Measured busbw at 8 GiB is 235.3 GB/s; the fit over all sizes gives 210.2 GB/s (11.6 % error),
  // alpha 37.3 us against the measured 34-36 us small-message times.
  EXPECT_GT(f.rows[0].busbw_gb_s, 190.0);
  EXPECT_LT(f.rows[0].busbw_gb_s, 240.0);
  EXPECT_GT(f.rows[0].alpha_us, 30.0);
  EXPECT_LT(f.rows[0].alpha_us, 45.0);
}

TEST(NcclTests, RealTwoNodeLogWithoutGroupColumn) {
  // Older nccl-tests rank lines have no "Group" column; ranks and hosts must still be counted.
  const auto pts =
      pc::parse_nccl_tests(slurp(data("perfkit_nccl-tests_all_reduce_2nodes_K80.txt")), "pkb.txt", "all_reduce");
  ASSERT_EQ(pts.size(), 11u);  // 1 MiB .. 1 GiB
  EXPECT_EQ(pts[0].ranks, 2);
  EXPECT_EQ(pts[0].nodes, 2);
  const pc::CollectiveFit f = pc::fit_collective(pts);
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].nodes, 2);
  EXPECT_NEAR(f.rows[0].busbw_gb_s, 0.61, 0.03);  // 2 ranks: busbw = algbw, 0.61 GB/s printed
}

TEST(NcclTests, VidurMeasuredAllReduceOnDgxA100) {
  const auto pts = pc::parse_vidur_collective_csv(slurp(data("a100_dgx_all_reduce.csv")), "vidur.csv");
  EXPECT_EQ(pts.size(), 6u * 994u + 994u);
  const pc::CollectiveFit f = pc::fit_collective(pts);
  EXPECT_EQ(f.rows.size(), 7u);
  for (const auto& r : f.rows) {
    EXPECT_GT(r.algbw_gb_s, 0.0) << r.ranks << "/" << r.nodes;
    if (r.ranks == 8 && r.nodes == 1) {
      // NVSwitch DGX A100: NCCL all-reduce bus bandwidth in the low hundreds of GB/s.
      EXPECT_GT(r.busbw_gb_s, 50.0);
      EXPECT_LT(r.busbw_gb_s, 300.0);
    }
  }
}

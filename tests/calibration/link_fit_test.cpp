#include "calibration/link_fit.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>

#include "calibration/topo_import.hpp"
#include "sim/error.hpp"

#include "tests/common/files.hpp"

namespace pc = placesim::calibration;
namespace sim = placesim::sim;

namespace {
std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}
using placesim::test::slurp;
}  // namespace

TEST(P2p, ParsesEveryMatrixOfTheA100Box) {
  const auto m = pc::parse_p2p_output(
      slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt")), "p2p.txt");
  EXPECT_EQ(m.gpus, 4);
  for (const char* k : {"uni_off", "uni_on", "bi_off", "bi_on", "lat_gpu_off", "lat_cpu_off",
                        "lat_gpu_on", "lat_cpu_on"})
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
  sim::Cluster c = pc::import_nvidia_smi_topo(
                       slurp(data("a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt")), "a.txt", o)
                       .cluster;
  const auto m = pc::parse_p2p_output(
      slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt")), "p2p.txt");
  const pc::LinkFitReport r = pc::fit_links_from_p2p(m, c);
  std::map<std::string, pc::LinkClassFit> by;
  for (const auto& f : r.classes) by[f.kind] = f;
  ASSERT_EQ(by.count("nvlink3"), 1u);
  EXPECT_EQ(by["nvlink3"].pairs, 4);
  EXPECT_NEAR(by["nvlink3"].new_gb_s, 275.2, 0.5);  // median of 275.07, 275.51, 275.34, 274.11
  EXPECT_NEAR(by["nvlink3"].new_latency_us, 2.28, 0.1);
  EXPECT_DOUBLE_EQ(by["nvlink3"].old_gb_s, 300.0);
  for (const auto& p : r.pairs)
    EXPECT_NEAR(p.after_gb_s, p.measured_gb_s, 0.05 * p.measured_gb_s) << p.from << "->" << p.to;
  EXPECT_THROW(
      [&] {
        pc::TopoOptions o8;
        o8.gpu_model = "V100-SXM2-16GB";
        sim::Cluster d =
            pc::import_nvidia_smi_topo(slurp(data("dgx1v_nvidia-smi-topo.txt")), "d.txt", o8)
                .cluster;
        pc::fit_links_from_p2p(m, d);
      }(),
      sim::InputError);
}

TEST(NcclTests, ReadsTheDocumentedTable) {
  const auto pts = pc::parse_nccl_tests(slurp(data("nccl-tests_all_reduce_8xA100_SAMPLE.txt")),
                                        "s.txt", "all_reduce");
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
  EXPECT_THROW(pc::parse_nccl_tests("8 2 float sum -1 abc 0 0 0 1 2 3 0\n", "e.txt", "all_reduce"),
               sim::InputError);
}

TEST(NcclTests, RealSuperBenchLogOn8xA100) {
  // A real all_reduce_perf -g 8 log (12 columns: no root), with an NCCL INFO line inside the table
  // and two zero-byte rows; tests/data/README.md has its source.
  const auto pts = pc::parse_nccl_tests(slurp(data("superbench_nccl-tests_all_reduce_8xA100.log")),
                                        "sb.log", "all_reduce");
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
  const auto pts = pc::parse_nccl_tests(slurp(data("perfkit_nccl-tests_all_reduce_2nodes_K80.txt")),
                                        "pkb.txt", "all_reduce");
  ASSERT_EQ(pts.size(), 11u);  // 1 MiB .. 1 GiB
  EXPECT_EQ(pts[0].ranks, 2);
  EXPECT_EQ(pts[0].nodes, 2);
  const pc::CollectiveFit f = pc::fit_collective(pts);
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].nodes, 2);
  EXPECT_NEAR(f.rows[0].busbw_gb_s, 0.61, 0.03);  // 2 ranks: busbw = algbw, 0.61 GB/s printed
}

TEST(NcclTests, VidurMeasuredAllReduceOnDgxA100) {
  const auto pts =
      pc::parse_vidur_collective_csv(slurp(data("a100_dgx_all_reduce.csv")), "vidur.csv");
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

namespace {

sim::Cluster imported_a100_pcie_box() {
  pc::TopoOptions o;
  o.gpu_model = "A100-PCIe-80GB";
  return pc::import_nvidia_smi_topo(slurp(data("a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt")),
                                    "a.txt", o)
      .cluster;
}

double class_gb_s(const sim::Cluster& c, const std::string& kind) {
  for (const auto& l : c.links)
    if (l.kind == kind) return l.bandwidth.bytes_per_s / 1e9;
  return -1;
}

std::map<std::string, double> bandwidth_by_link(const sim::Cluster& c) {
  std::map<std::string, double> m;
  for (const auto& l : c.links) m[l.name] = l.bandwidth.bytes_per_s;
  return m;
}

// The links whose bandwidth differs between two versions of one cluster, by kind.
std::set<std::string> changed_kinds(const sim::Cluster& before, const sim::Cluster& after) {
  std::set<std::string> k;
  const auto b = bandwidth_by_link(before);
  for (const auto& l : after.links)
    if (b.at(l.name) != l.bandwidth.bytes_per_s) k.insert(l.kind);
  return k;
}

}  // namespace

TEST(P2p, DisabledOnlyMatricesCalibrateTheHostPathNeverNvlink) {
  // The real 4x A100 PCIe output cut to its P2P=Disabled sections (tests/data/README.md): every
  // copy went through host memory, also between the NVLink-bridged pairs 0-1 and 2-3.
  const auto m = pc::parse_p2p_output(
      slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest_p2p-disabled-only.txt")),
      "off.txt");
  EXPECT_EQ(m.matrix.count("uni_on"), 0u);
  ASSERT_EQ(m.matrix.count("uni_off"), 1u);
  const sim::Cluster before = imported_a100_pcie_box();
  sim::Cluster c = before;
  const pc::LinkFitReport r = pc::fit_links_from_p2p(m, c);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0].kind, "pcie4");
  EXPECT_EQ(r.classes[0].pairs, 12);
  EXPECT_NEAR(r.classes[0].new_gb_s, 21.6, 0.2);  // median of the twelve off-diagonal 21.40..21.80
  EXPECT_DOUBLE_EQ(class_gb_s(c, "nvlink3"), 300.0);
  EXPECT_EQ(changed_kinds(before, c), std::set<std::string>{"pcie4"});
  EXPECT_FALSE(r.classes[0].why.empty());
}

TEST(P2p, FullMatricesChangeOnlyTheClassesTheirPathsCrossed) {
  const sim::Cluster before = imported_a100_pcie_box();
  sim::Cluster c = before;
  const auto m = pc::parse_p2p_output(
      slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt")), "p2p.txt");
  pc::fit_links_from_p2p(m, c);
  EXPECT_EQ(changed_kinds(before, c), (std::set<std::string>{"nvlink3", "pcie4"}));
  // The smp and membus links are on the staged paths but never their bottleneck.
  EXPECT_DOUBLE_EQ(class_gb_s(c, "smp"), class_gb_s(before, "smp"));
}

TEST(Vidur, PairwiseNvlinkSendRecvFitsNvlinkNeverPcie) {
  // Vidur's a100_pairwise_nvlink send/recv: 2 GPUs of one node (devices_per_node 2) of a 4-GPU
  // machine with NVLink-bridged pairs, 55-64 MiB.
  const auto pts = pc::parse_vidur_collective_csv(
      slurp(data("vidur_a100_pairwise_nvlink_send_recv_tail.csv")), "sr.csv");
  ASSERT_EQ(pts.size(), 91u);
  EXPECT_EQ(pts[0].ranks, 2);
  EXPECT_EQ(pts[0].nodes, 1);
  EXPECT_EQ(pts[0].collective, "send_recv");
  const sim::Cluster before = imported_a100_pcie_box();
  sim::Cluster c = before;
  const pc::LinkFitReport r = pc::apply_collective_fit(pc::fit_collective(pts), c);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0].kind, "nvlink3");
  EXPECT_EQ(changed_kinds(before, c), std::set<std::string>{"nvlink3"});
  EXPECT_DOUBLE_EQ(class_gb_s(c, "pcie4"), 31.5);
  // 64 MiB in 0.236 ms: ~285 GB/s over the NV12 bridge (300 GB/s nominal).
  EXPECT_GT(r.classes[0].new_gb_s, 150.0);
  EXPECT_LT(r.classes[0].new_gb_s, 320.0);
}

TEST(Vidur, SingleNodeAllReduceNeverSetsInfiniBand) {
  auto pts = pc::parse_vidur_collective_csv(slurp(data("a100_dgx_all_reduce.csv")), "vidur.csv");
  std::vector<pc::CollectivePoint> one_node;
  for (const auto& p : pts)
    if (p.nodes == 1) one_node.push_back(p);
  ASSERT_FALSE(one_node.empty());
  for (const char* name : {"dgx-a100", "2x-dgx-a100"}) {
    const sim::Cluster before = sim::load_cluster(name);
    sim::Cluster c = before;
    const pc::LinkFitReport r = pc::apply_collective_fit(pc::fit_collective(one_node), c);
    ASSERT_EQ(r.classes.size(), 1u) << name;
    EXPECT_EQ(r.classes[0].kind, "nvlink3") << name;
    EXPECT_EQ(changed_kinds(before, c), std::set<std::string>{"nvlink3"}) << name;
  }
  // With its 2-node x 8 rows the same file also fits the NICs of a two-node cluster, and only
  // the classes the two measurements crossed.
  const sim::Cluster before = sim::load_cluster("2x-dgx-a100");
  sim::Cluster c = before;
  const pc::LinkFitReport r = pc::apply_collective_fit(pc::fit_collective(pts), c);
  EXPECT_EQ(changed_kinds(before, c), (std::set<std::string>{"nvlink3", "ib-hdr"}));
}

TEST(NcclTests, TwoNodesOfEightH100FitTheNicsOnly) {
  // NVIDIA/nccl-tests#309: all_reduce_perf_mpi over 16 ranks on bm-h100-01/02, MPI warnings in the
  // header, 13-column table.
  const std::string text = slurp(data("nccl-tests_all_reduce_2x8xH100_issue309.txt"));
  const auto pts = pc::parse_nccl_tests(text, "309.txt", "all_reduce");
  ASSERT_EQ(pts.size(), 32u);  // 8 B .. 16 GiB
  EXPECT_EQ(pts[0].ranks, 16);
  EXPECT_EQ(pts[0].nodes, 2);
  EXPECT_NEAR(pts.back().busbw_gb_s, 469.21, 1e-9);
  // The same output with its "Rank  0" line lacking the leading '#' (as when a launcher's message
  // runs into it) and with the Group column dropped still counts 16 ranks on 2 hosts.
  std::string variant = text;
  const std::string rank0 = "#  Rank  0 Group  0 Pid";
  variant.replace(variant.find(rank0), rank0.size(), "Rank  0 Pid");
  const auto v = pc::parse_nccl_tests(variant, "309b.txt", "all_reduce");
  EXPECT_EQ(v[0].ranks, 16);
  EXPECT_EQ(v[0].nodes, 2);

  const sim::Cluster before = sim::load_cluster(data("2x-hgx-h100.yaml"));
  sim::Cluster c = before;
  const pc::LinkFitReport r = pc::apply_collective_fit(pc::fit_collective(pts), c);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0].kind, "ib-ndr");
  EXPECT_EQ(r.classes[0].links, 16);
  EXPECT_EQ(changed_kinds(before, c), std::set<std::string>{"ib-ndr"});
  // busbw over 8 rails: ~470 / 8 GB/s per NIC (above the 50 GB/s line rate: NVLS trees reduce in
  // the switches, the issue's thread says so).
  EXPECT_GT(r.classes[0].new_gb_s, 45.0);
  EXPECT_LT(r.classes[0].new_gb_s, 65.0);
  // On a single machine the same measurement fits nothing, and says why.
  sim::Cluster one = sim::load_cluster("hgx-h100");
  const pc::LinkFitReport none = pc::apply_collective_fit(pc::fit_collective(pts), one);
  EXPECT_TRUE(none.classes.empty());
  ASSERT_FALSE(none.notes.empty());
}

TEST(NcclTests, MarkdownTablesOfResults) {
  // A real report of a 2-node DGX H100 cluster (tests/data/README.md): two markdown tables,
  // "| Message | Avg ms | algbw GB/s | busbw GB/s |", sizes in MiB/GiB, times in ms.
  const auto pts = pc::parse_nccl_tests(slurp(data("talos_dgx-h100_nccl-tests_report_excerpt.md")),
                                        "t.md", "all_reduce");
  ASSERT_EQ(pts.size(), 28u);
  EXPECT_DOUBLE_EQ(pts[0].bytes, 1048576.0);
  EXPECT_NEAR(pts[0].time_s, 0.03e-3, 1e-12);
  EXPECT_EQ(pts[0].ranks, 8);    // busbw / algbw = 1.75
  EXPECT_EQ(pts[14].ranks, 16);  // 1.875
  EXPECT_DOUBLE_EQ(pts[13].bytes, 8.0 * 1073741824.0);
  const pc::CollectiveFit f = pc::fit_collective(pts);
  EXPECT_EQ(f.rows.size(), 2u);
  // Plain whitespace tables with a header line read the same way.
  const std::string plain =
      "size time algbw busbw\n"
      "1048576 30.1 34.8 60.9\n"
      "1073741824 4070 263.8 461.7\n";
  const auto w = pc::parse_nccl_tests(
      "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "  1048576 262144 float sum -1 30.1 34.8 60.9 0 30.0 34.9 61.1 0\n",
      "w.txt", "all_reduce");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NEAR(w[0].time_s, 30.1e-6, 1e-12);
  const auto pl = pc::parse_nccl_tests(plain, "plain.txt", "all_reduce");
  ASSERT_EQ(pl.size(), 2u);
  EXPECT_NEAR(pl[1].time_s, 4070e-6, 1e-12);
  EXPECT_NEAR(pl[1].busbw_gb_s, 461.7, 1e-9);
  EXPECT_THROW(pc::parse_nccl_tests("| a | b |\n|---|---|\n| x | y |\n", "bad.md", "all_reduce"),
               sim::InputError);
}

// Real outputs as launchers and log collectors print them (tests/data/README.md, issue 16).
TEST(NcclTests, LauncherPrefixesOfRealLogs) {
  // SkyPilot on GKE: Ray's "(head, rank=0, pid=3808) " before mpirun's "[1,0]<stdout>:".
  const auto ray = pc::parse_nccl_tests(
      slurp(data("skypilot_gke-a3ultra_nccl-tests_all_gather_2x8xH200_ray-mpirun-tags.txt")),
      "ray.txt", "all_gather");
  ASSERT_EQ(ray.size(), 24u);  // 1 KiB .. 8 GiB
  EXPECT_EQ(ray[0].ranks, 16);
  EXPECT_EQ(ray[0].nodes, 2);
  EXPECT_NEAR(ray.back().busbw_gb_s, 325.72, 1e-9);
  EXPECT_EQ(ray[0].nccl_version, 0);  // this run states none
  // The same measurement as GCP's own pod printed it, with its "NCCL version" line.
  const auto gcp = pc::parse_nccl_tests(
      slurp(data("gcp_gke-a3ultra_nccl-tests_all_gather_2x8xH200_nccl2266.txt")), "gcp.txt",
      "all_gather");
  ASSERT_EQ(gcp.size(), 24u);
  EXPECT_EQ(gcp[0].nccl_version, 22606);
  // srun -l task labels (" 0: ") and "N/A" in #wrong (-c 0): NVIDIA/nccl-tests#290.
  const auto srun = pc::parse_nccl_tests(
      slurp(data("nccl-tests_issue290_all_reduce_2x8xH100_srun-l.txt")), "290.txt", "all_reduce");
  ASSERT_EQ(srun.size(), 11u);  // 8 MiB .. 8 GiB
  EXPECT_EQ(srun[0].ranks, 16);
  EXPECT_EQ(srun[0].nodes, 2);
  EXPECT_NEAR(srun.back().time_s, 103530e-6, 1e-12);
  // ISO timestamps (kubectl logs --timestamps), pdsh host labels and a markdown-escaped "\#".
  const std::string text = slurp(data("nccl-tests_all_reduce_2x8xH100_issue309.txt"));
  std::istringstream in(text);
  std::string stamped, line;
  for (int i = 0; std::getline(in, line); ++i)
    stamped += (i % 3 == 0   ? "2025-03-01T12:00:0" + std::to_string(i % 10) + ".123456789Z "
                : i % 3 == 1 ? std::string("bm-h100-01: ")
                             : std::string()) +
               (line.rfind("#", 0) == 0 ? "\\" + line : line) + "\n";
  const auto plain = pc::parse_nccl_tests(text, "309.txt", "all_reduce");
  const auto st = pc::parse_nccl_tests(stamped, "stamped.txt", "all_reduce");
  ASSERT_EQ(st.size(), plain.size());
  EXPECT_EQ(st[0].ranks, 16);
  EXPECT_EQ(st[0].nodes, 2);
  for (std::size_t i = 0; i < st.size(); ++i) EXPECT_DOUBLE_EQ(st[i].time_s, plain[i].time_s);
}

// mpirun's aggregated help lines ("8 more processes have sent help message ...") inside the
// table of a real one-process-per-GPU run (tests/data/README.md, session 15): read past, where the
// reader before took them for a malformed row (exit 2); a numeric line of other words still is.
TEST(NcclTests, OpenMpiHelpLinesInsideTheTable) {
  const auto np8 =
      pc::parse_nccl_tests(slurp(data("blog_nccl-tests_all_reduce_8xA100-80GB_mpirun-np8.txt")),
                           "np8.txt", "all_reduce");
  ASSERT_EQ(np8.size(), 30u);  // 8 B .. 4 GiB
  EXPECT_EQ(np8[0].ranks, 8);
  EXPECT_NEAR(np8[0].time_s, 20.26e-6, 1e-12);
  EXPECT_NEAR(np8.back().time_s, 32285e-6, 1e-12);  // the row after the second help line
  const std::string head =
      "#       size         count      type   redop    root     time   algbw"
      "   busbw #wrong     time   algbw   busbw #wrong\n";
  const std::string row =
      "        8192  2048  float  sum  -1  25.84  0.32  0.55  0  24.30  0.34"
      "  0.59  0\n";
  EXPECT_EQ(pc::parse_nccl_tests(head + "1 more process has sent help message x.txt / y\n" + row,
                                 "one.txt", "all_reduce")
                .size(),
            1u);
  EXPECT_THROW(pc::parse_nccl_tests(head + "8 more processes were slow today\n" + row, "bad.txt",
                                    "all_reduce"),
               sim::InputError);
}

TEST(NcclTests, OneMeasurementOfALogOfMany) {
  // -d all: ten data types over 2 Dell XE9680 H200 nodes (Spectrum-X); the float/sum rows stay.
  const auto all = pc::parse_nccl_tests(
      slurp(data("redhat_spectrumx_nccl-tests_all_reduce_2x8xH200_dtype-all.txt")), "d.txt",
      "all_reduce");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_NEAR(all[0].busbw_gb_s, 484.55, 1e-9);
  EXPECT_EQ(all[0].nccl_version, 23004);  // nccl-library=23004
  EXPECT_EQ(all[0].ranks, 16);
  // A log of several binaries ("# Collective test starting: X") gives the one asked for.
  const std::string one = slurp(data("redhat_spectrumx_nccl-tests_all_reduce_2x8xH200.txt"));
  std::string two = one;
  std::string bcast = one;
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"all_reduce_perf", "broadcast_perf"},
        {"     sum      -1", "    none       0"}})
    for (std::size_t at = bcast.find(from); at != std::string::npos; at = bcast.find(from, at))
      bcast.replace(at, from.size(), to);
  two = bcast + one;
  const auto ar = pc::parse_nccl_tests(two, "two.txt", "all_reduce");
  ASSERT_EQ(ar.size(), 25u);
  EXPECT_NEAR(ar.back().busbw_gb_s, 485.66, 1e-9);
  EXPECT_EQ(pc::parse_nccl_tests(two, "two.txt", "broadcast").size(), 25u);
  // Refused, each in one line naming what was found: a collective the log does not hold, and
  // all_gather's rows (redop none) read as all_reduce.
  EXPECT_THROW(pc::parse_nccl_tests(one, "one.txt", "all_gather"), sim::InputError);
  try {
    pc::parse_nccl_tests(slurp(data("gcp_gke-a3ultra_nccl-tests_all_gather_2x8xH200_nccl2266.txt")),
                         "ag.txt", "all_reduce");
    ADD_FAILURE() << "all_gather rows read as all_reduce";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("redop"), std::string::npos) << e.what();
  }
  // The same rank on two hosts: two 1-rank jobs (nccl-tests without MPI=1), not one run.
  EXPECT_THROW(pc::parse_nccl_tests("#   Rank  0 Pid   1320 on ip-a device  0 [0x00] V100\n"
                                    "#   Rank  0 Pid   2066 on ip-b device  0 [0x00] V100\n"
                                    "  8 2 float sum 5.0 0.00 0.00 0 5.0 0.00 0.00 0\n",
                                    "107.txt", "all_reduce"),
               sim::InputError);
}

TEST(P2p, ReadMatricesOfAP2pReadBuildAreKeptApart) {
  // 12 of a DGX-2's 16 V100 (tests/data/README.md): a --p2p_read build prints "(P2P Reads)"
  // bandwidth and latency matrices after the "(P2P Writes)" ones. Before: "line 195: expected
  // matrix row 12, got row 0".
  const auto m = pc::parse_p2p_output(
      slurp(data("dgx2_12xV100_p2pBandwidthLatencyTest_p2p-reads.txt")), "dgx2.txt");
  EXPECT_EQ(m.gpus, 12);
  for (const char* k : {"uni_off", "uni_on", "uni_on_reads", "bi_off", "bi_on", "lat_gpu_off",
                        "lat_gpu_on", "lat_gpu_on_reads", "lat_cpu_on_reads"})
    EXPECT_EQ(m.matrix.count(k), 1u) << k;
  EXPECT_DOUBLE_EQ(m.matrix.at("uni_on")[0][1], 145.57);
  EXPECT_DOUBLE_EQ(m.matrix.at("uni_on_reads")[0][1], 145.50);
  EXPECT_DOUBLE_EQ(m.matrix.at("lat_gpu_on")[0][1], 2.90);
  EXPECT_DOUBLE_EQ(m.matrix.at("lat_gpu_on_reads")[0][1], 9.76);
  // On a DGX-2-like import of those 12 GPUs (NV6 everywhere: one NVSwitch, 150 GB/s ports) the
  // writes fit the ports: 145.57 GB/s.
  std::string t = "        ";
  for (int j = 0; j < 12; ++j) t += "GPU" + std::to_string(j) + "\t";
  t += "CPU Affinity\n";
  for (int i = 0; i < 12; ++i) {
    t += "GPU" + std::to_string(i);
    for (int j = 0; j < 12; ++j) t += i == j ? "\t X " : "\tNV6";
    t += i < 6 ? "\t0-23,48-71\n" : "\t24-47,72-95\n";
  }
  pc::TopoOptions o;
  o.gpu_model = "V100-SXM2-32GB";
  sim::Cluster c = pc::import_nvidia_smi_topo(t, "dgx2.txt", o).cluster;
  const pc::LinkFitReport r = pc::fit_links_from_p2p(m, c);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0].kind, "nvlink2");
  EXPECT_DOUBLE_EQ(r.classes[0].old_gb_s, 150.0);
  EXPECT_NEAR(r.classes[0].new_gb_s, 145.57, 1e-6);
}

TEST(NcclTests, WithoutCollectiveTheOneTheLogNames) {
  // Real alltoall_perf (OCI GB300, 4 GPUs) and reduce_scatter_perf_mpi (2 ranks, RTX 5090) logs
  // read with no collective asked for: the "# Collective test starting:" line names it. Before,
  // both were refused as not all_reduce.
  const auto a2a = pc::parse_nccl_tests(
      slurp(data("oci_gb300_nccl-tests_alltoall_4xGB300_nccl2287.txt")), "a2a.txt", "");
  ASSERT_EQ(a2a.size(), 2u);  // the source printed only the two largest sizes
  EXPECT_EQ(a2a[0].collective, "alltoall");
  EXPECT_EQ(a2a[0].ranks, 4);
  EXPECT_EQ(a2a[0].nccl_version, 22807);  // "NCCL version 2.28.7+cuda13.0"
  EXPECT_NEAR(a2a[1].busbw_gb_s, 627.69, 1e-9);
  const auto rs = pc::parse_nccl_tests(
      slurp(data("rtx5090_nccl-tests_reduce_scatter_mpi_2ranks_nccl2297.txt")), "rs.txt", "");
  ASSERT_EQ(rs.size(), 8u);
  EXPECT_EQ(rs[0].collective, "reduce_scatter");
  EXPECT_EQ(rs[0].ranks, 2);
  // Asked for explicitly, another collective is still refused; several sections name none.
  EXPECT_THROW(
      pc::parse_nccl_tests(slurp(data("oci_gb300_nccl-tests_alltoall_4xGB300_nccl2287.txt")),
                           "a.txt", "all_reduce"),
      sim::InputError);
  EXPECT_EQ(pc::collective_named_in("# Collective test starting: all_reduce_perf\n"
                                    "# Collective test starting: broadcast_perf\n"),
            "");
  EXPECT_EQ(pc::collective_named_in("no section line\n"), "");
}

TEST(NcclTests, CollectiveFromTheFileWithoutTheStartingLine) {
  // Issue 16: a sendrecv_perf output without "# Collective test starting:" was read as
  // all_reduce. Real sendrecv_perf -g 8 on 8x A100 (li-plus/playground): its command line names
  // the binary; without that line, its rows do (redop sum, root -1, in-place results not checked:
  // "N/A", which all_reduce_perf never prints beside a checked out-of-place count).
  const std::string sr = slurp(data("li-plus_nccl-tests_sendrecv_8xA100_g8.txt"));
  const auto pts = pc::parse_nccl_tests(sr, "sr.txt", "");
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_EQ(pts[0].collective, "sendrecv");  // before: "all_reduce"
  const pc::CollectiveGuess cmd = pc::guess_collective(sr, "sr.txt");
  EXPECT_FALSE(cmd.assumed);
  EXPECT_NE(cmd.why.find("command line names sendrecv_perf"), std::string::npos) << cmd.why;
  const pc::CollectiveGuess rows = pc::guess_collective(sr.substr(sr.find('\n') + 1), "sr.txt");
  EXPECT_EQ(rows.collective, "sendrecv");
  EXPECT_NE(rows.why.find("in-place results not checked"), std::string::npos) << rows.why;
  // all_gather's rows (redop none, in-place checked) read as all_gather, not refused as a wrong
  // all_reduce; a real 72-rank GB200 all_reduce by its busbw / algbw = 2(n-1)/n; a 2-rank
  // all_reduce (busbw = algbw, as sendrecv's) is all_reduce assumed, and says so.
  EXPECT_EQ(pc::guess_collective(slurp(data("../bad/nccl-tests-allgather-rows.txt")), "ag.txt")
                .collective,
            "all_gather");
  const pc::CollectiveGuess gb = pc::guess_collective(
      slurp(data("coreweave_nccl-tests_all_reduce_72xGB200_nvl72_nccl2262.txt")), "gb.txt");
  EXPECT_EQ(gb.collective, "all_reduce");
  EXPECT_FALSE(gb.assumed);
  EXPECT_NE(gb.why.find("over 72 ranks"), std::string::npos) << gb.why;
  const pc::CollectiveGuess k80 =
      pc::guess_collective(slurp(data("perfkit_nccl-tests_all_reduce_2nodes_K80.txt")), "k.txt");
  EXPECT_EQ(k80.collective, "all_reduce");
  EXPECT_TRUE(k80.assumed);
}

TEST(NcclTests, FailureReportInARowIsOneLineError) {
  // NVIDIA/nccl-tests#355: the alltoall run died in its first row ("2097152 32768 float none -1
  // node0: Test CUDA failure common.cu:389 ..."). Before: 'got "node0:" and "Test"'.
  try {
    pc::parse_nccl_tests(slurp(data("nccl-tests_issue355_alltoall_2x8xH800_failure-row.txt")),
                         "355.txt", "");
    ADD_FAILURE() << "a failed run read as results";
  } catch (const sim::InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("line 27"), std::string::npos) << w;
    EXPECT_NE(w.find("failure report \"Test CUDA failure common.cu:389"), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  }
}

TEST(NcclTests, RunsOfOneFileAreFittedApart) {
  // Issue 16: real logs hold several runs one after another. Two real runs of one 8x A100-80GB box
  // (the blog's two invocations, -g 8 and mpirun -np 8) pasted into one file: each fitted alone,
  // their busbw agree (226.21 / 229.45 GB/s), so their medians are written. Before: pooled into
  // one fit of 60 points (alpha 28.63 us, fit error 21 %) with no note.
  const std::string g8 = slurp(data("blog_nccl-tests_all_reduce_8xA100-80GB_g8.txt"));
  const std::string np8 = slurp(data("blog_nccl-tests_all_reduce_8xA100-80GB_mpirun-np8.txt"));
  const auto two = pc::parse_nccl_tests(g8 + np8, "two.txt", "all_reduce");
  ASSERT_EQ(two.size(), 60u);
  EXPECT_EQ(two.front().run, 0);
  EXPECT_EQ(two.back().run, 1);
  EXPECT_EQ(two.back().run_line, 50);  // g8's 48 lines, then np8's "# nThread" on its line 2
  const pc::CollectiveFit f = pc::fit_collective(two);
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.run_rows.size(), 2u);
  EXPECT_TRUE(f.refusal.empty());
  EXPECT_EQ(f.rows[0].runs, 2);
  const auto one = [](const std::string& t) {
    return pc::fit_collective(pc::parse_nccl_tests(t, "one.txt", "all_reduce")).rows.at(0);
  };
  const pc::CollectiveFitRow a = one(g8), b = one(np8);
  EXPECT_NEAR(f.rows[0].busbw_gb_s, 0.5 * (a.busbw_gb_s + b.busbw_gb_s), 1e-9);
  EXPECT_NEAR(f.rows[0].alpha_us, 0.5 * (a.alpha_us + b.alpha_us), 1e-9);
  EXPECT_FALSE(f.rows[0].note.empty());
  // --run N keeps one run: the same points as that file alone.
  const auto second = pc::parse_nccl_tests(g8 + np8, "two.txt", "all_reduce", 2);
  ASSERT_EQ(second.size(), 30u);
  EXPECT_NEAR(pc::fit_collective(second).rows.at(0).busbw_gb_s, b.busbw_gb_s, 1e-9);
  EXPECT_THROW(pc::parse_nccl_tests(g8 + np8, "two.txt", "all_reduce", 3), sim::InputError);

  // Runs that disagree (16 H100 over 2 machines: NVIDIA/nccl-tests#290 at 155 GB/s, #309 at 472
  // GB/s): no row, a refusal naming the line where the second run starts. Before: refused as
  // "each rank once (one job) ... several 1-rank jobs", which was not the case.
  const std::string srun = slurp(data("nccl-tests_issue290_all_reduce_2x8xH100_srun-l.txt"));
  const std::string i309 = slurp(data("nccl-tests_all_reduce_2x8xH100_issue309.txt"));
  const pc::CollectiveFit d = pc::fit_collective(pc::parse_nccl_tests(srun + i309, "d.txt", ""));
  EXPECT_TRUE(d.rows.empty());
  EXPECT_EQ(d.refusal_line, 38 + 20);  // srun-l's 38 lines, then #309's "# nThread" line 20
  EXPECT_NE(d.refusal.find("--run"), std::string::npos) << d.refusal;

  // A loop over rank counts (ABCI: 2 then 4 nodes of 8 A100): each run its own ranks and
  // machines. Before: one fit of 48 points as 32 ranks on 4 machines.
  const auto abci =
      pc::parse_nccl_tests(slurp(data("abci_anode_nccl-tests_all_reduce_2x8xA100_nccl284.txt")) +
                               slurp(data("abci_anode_nccl-tests_all_reduce_4x8xA100_nccl284.txt")),
                           "abci.txt", "all_reduce");
  EXPECT_EQ(abci.front().ranks, 16);
  EXPECT_EQ(abci.front().nodes, 2);
  EXPECT_EQ(abci.back().ranks, 32);
  EXPECT_EQ(abci.back().nodes, 4);
  EXPECT_EQ(pc::fit_collective(abci).rows.size(), 2u);

  // Bare result rows of two runs (headers cut): the size going back down starts the second.
  std::string rows;
  std::istringstream in(slurp(data("nccl-tests_all_reduce_8xA100_SAMPLE.txt")));
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] != '#') rows += l + "\n";
  const auto bare = pc::parse_nccl_tests(rows + rows, "bare.txt", "all_reduce");
  EXPECT_EQ(bare.back().run, 1);
  // -d all (each data type's sizes start over) stays one run.
  const auto dall = pc::parse_nccl_tests(
      slurp(data("redhat_spectrumx_nccl-tests_all_reduce_2x8xH200_dtype-all.txt")), "d.txt",
      "all_reduce");
  EXPECT_EQ(dall.back().run, 0);
}

TEST(NcclTests, FitWritesNoBandwidthTheSizesDoNotSupport) {
  // Issue 16. (1) A reduce_scatter_perf_mpi run on 2 RTX 5090 whose busbw is flat at 2.70-2.73
  // GB/s from 32 MiB on: the fit's asymptote (3.39 GB/s before) is capped at the highest measured.
  const pc::CollectiveFit rs = pc::fit_collective(pc::parse_nccl_tests(
      slurp(data("rtx5090_nccl-tests_reduce_scatter_mpi_2ranks_nccl2297.txt")), "rs.txt", ""));
  ASSERT_EQ(rs.rows.size(), 1u);
  EXPECT_NEAR(rs.rows[0].busbw_gb_s, 2.73, 1e-9);
  EXPECT_NEAR(rs.rows[0].max_busbw_gb_s, 2.73, 1e-9);
  EXPECT_NE(rs.rows[0].note.find("capped"), std::string::npos) << rs.rows[0].note;
  // A well-behaved fit is left alone (SuperBench: 235.10 GB/s fitted, 235.26 measured).
  const pc::CollectiveFit sb = pc::fit_collective(pc::parse_nccl_tests(
      slurp(data("superbench_nccl-tests_all_reduce_8xA100.log")), "sb.txt", "all_reduce"));
  EXPECT_TRUE(sb.rows.at(0).note.empty());
  EXPECT_NEAR(sb.rows[0].busbw_gb_s, 235.10, 0.005);

  // (2) NVIDIA/nccl-tests#309 cut to its sizes up to 1 KiB: all latency. Only alpha is written;
  // the NICs keep their bandwidth. Before: ~0.1 GB/s busbw written onto InfiniBand.
  std::string cut;
  std::istringstream in(slurp(data("nccl-tests_all_reduce_2x8xH100_issue309.txt")));
  for (std::string l; std::getline(in, l);) {
    const auto tok = l.find_first_not_of(' ');
    if (tok != std::string::npos && std::isdigit(static_cast<unsigned char>(l[tok])) &&
        std::stod(l.substr(tok)) > 1024)
      continue;
    cut += l + "\n";
  }
  const auto small = pc::parse_nccl_tests(cut, "small.txt", "all_reduce");
  ASSERT_EQ(small.size(), 8u);  // 8 B .. 1 KiB
  const pc::CollectiveFit f = pc::fit_collective(small);
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_TRUE(f.rows[0].latency_only);
  EXPECT_EQ(f.rows[0].busbw_gb_s, 0.0);
  EXPECT_GT(f.rows[0].alpha_us, 0.0);
  sim::Cluster c = sim::load_cluster(data("2x-hgx-h100.yaml"));
  const pc::LinkFitReport r = pc::apply_collective_fit(f, c);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0].kind, "ib-ndr");
  EXPECT_DOUBLE_EQ(r.classes[0].new_gb_s, 50.0);  // kept
  EXPECT_NE(r.classes[0].new_latency_us, r.classes[0].old_latency_us);
  for (const sim::Link& l : c.links)
    if (l.kind == "ib-ndr") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 50e9);
}

// Session 28 (issues 15, 16): nccl-tests and rccl-tests outputs as they occur, from sources not
// stored before (tests/data/README.md). Each holds its correct reading.
TEST(NcclTests, RcclTestsOutputsOfMi300x) {
  // One MI300X node, rank lines with the Group column and a "rccl-tests: Version" line between
  // the header and "# Using devices".
  const auto one = pc::parse_nccl_tests(
      slurp(data("rccl-tests_all_reduce_8xMI300X_aac8_group-ranks.txt")), "r8.txt", "");
  ASSERT_EQ(one.size(), 31u);  // 8 B .. 8 GiB
  EXPECT_EQ(one[0].collective, "all_reduce");
  EXPECT_EQ(one[0].ranks, 8);
  EXPECT_EQ(one[0].nodes, 1);
  EXPECT_NEAR(one.back().busbw_gb_s, 315.69, 1e-9);
  EXPECT_EQ(one[0].nccl_version, 0);  // rccl-tests prints no NCCL version
  // Two nodes, rank lines without the Group column ("#   Rank  8 Pid 366643 on     gpu-56 device
  // 0 [0000:05:00.0]") and RCCL's "Hostname     : gpu-53" block before the table.
  const auto two = pc::parse_nccl_tests(
      slurp(data("rccl-tests_all_reduce_2x8xMI300X_aac10_rank-lines-without-group.txt")), "r16.txt",
      "");
  ASSERT_EQ(two.size(), 32u);  // 8 B .. 16 GiB
  EXPECT_EQ(two[0].ranks, 16);
  EXPECT_EQ(two[0].nodes, 2);
  EXPECT_NEAR(two.back().time_s, 90115e-6, 1e-12);
  const auto guess = pc::guess_collective(
      slurp(data("rccl-tests_all_reduce_2x8xMI300X_aac10_rank-lines-without-group.txt")), "g");
  EXPECT_EQ(guess.collective, "all_reduce");
  EXPECT_FALSE(guess.assumed);
}

TEST(NcclTests, NewerAndOlderHeadersOfRealRuns) {
  // nccl-tests 2.18.3 with NCCL 2.30.3: "unalign: 0" in the setup line, GPUs an old driver names
  // "NVIDIA Graphics Device", 16 ranks on 2 hosts, P2P and SHM off.
  const auto cx8 = pc::parse_nccl_tests(
      slurp(data("cx8_nccl-tests_all_reduce_2x8_graphics-device_p2p-off_nccl2303.txt")), "cx8.txt",
      "");
  ASSERT_EQ(cx8.size(), 24u);  // 1 KiB .. 8 GiB
  EXPECT_EQ(cx8[0].collective, "all_reduce");
  EXPECT_EQ(cx8[0].ranks, 16);
  EXPECT_EQ(cx8[0].nodes, 2);
  EXPECT_EQ(cx8[0].nccl_version, 23003);
  EXPECT_NEAR(cx8.back().busbw_gb_s, 35.08, 1e-9);
  // AWS EKS over EFA, 2 T4 on 2 hosts, NCCL 2.12.7: mpirun tags, NCCL INFO lines inside the
  // table, two 0-byte rows (-b 1 of floats). Over 2 ranks busbw = algbw fits all_reduce and
  // sendrecv alike; its checked in-place results say all_reduce (before: "assumed").
  const std::string efa =
      slurp(data("aws-eks-efa_nccl-tests_all_reduce_2xT4_zero-byte-rows_nccl2127.txt"));
  const auto g = pc::guess_collective(efa, "efa.txt");
  EXPECT_EQ(g.collective, "all_reduce");
  EXPECT_FALSE(g.assumed) << g.why;
  EXPECT_NE(g.why.find("in-place results checked"), std::string::npos) << g.why;
  const auto t4 = pc::parse_nccl_tests(efa, "efa.txt", "");
  ASSERT_EQ(t4.size(), 31u);  // 0, 0, 4 B .. 1 GiB
  EXPECT_EQ(t4[0].bytes, 0.0);
  EXPECT_EQ(t4[0].ranks, 2);
  EXPECT_EQ(t4[0].nodes, 2);
  EXPECT_EQ(t4[0].nccl_version, 21207);
  EXPECT_NEAR(t4.back().busbw_gb_s, 3.11, 1e-9);
}

TEST(P2p, IndentedAndTwoGpuOutputsAsPosted) {
  // 2 H100 PCIe, every line indented by six spaces (a Markdown code block by indentation).
  const auto h = pc::parse_p2p_output(
      slurp(data("h100pcie-x2_p2pBandwidthLatencyTest_indented.txt")), "h100.txt");
  EXPECT_EQ(h.gpus, 2);
  EXPECT_EQ(h.names.at(1), "NVIDIA H100 PCIe");
  EXPECT_TRUE(h.can_access[0][1]);
  EXPECT_DOUBLE_EQ(h.matrix.at("uni_on")[0][1], 256.62);
  EXPECT_DOUBLE_EQ(h.matrix.at("bi_on")[1][0], 509.15);
  EXPECT_DOUBLE_EQ(h.matrix.at("lat_cpu_on")[1][0], 1.75);
  // 2 RTX 6000 Ada on one PCIe Gen4 root: peer access over PCIe.
  const auto r =
      pc::parse_p2p_output(slurp(data("rtx6000ada-x2_p2pBandwidthLatencyTest.txt")), "ada.txt");
  EXPECT_EQ(r.gpus, 2);
  EXPECT_EQ(r.names.at(0), "NVIDIA RTX 6000 Ada Generation");
  EXPECT_DOUBLE_EQ(r.matrix.at("uni_on")[1][0], 26.32);
  EXPECT_DOUBLE_EQ(r.matrix.at("lat_gpu_off")[0][1], 10.90);
}

TEST(P2p, ConnectivityMatrixWhenThePostHasNoAccessLines) {
  // 1 RTX PRO 6000 Blackwell + 8 RTX 5090 on a patched driver (BAR1 P2P): the post keeps the
  // matrices but not the "Device=i CAN Access Peer Device=j" lines, so peer access is the P2P
  // Connectivity Matrix's (its rows "     0\t     1 ..."). Before: no pair with peer access.
  const auto m = pc::parse_p2p_output(
      slurp(data("rtxpro6000-plus-8x5090_p2pBandwidthLatencyTest_tab-rows.txt")), "5090.txt");
  ASSERT_EQ(m.gpus, 9);
  EXPECT_EQ(m.names.at(0), "NVIDIA RTX PRO 6000 Blackwell Workstation Edition");
  EXPECT_EQ(m.names.at(8), "NVIDIA GeForce RTX 5090");
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 9; ++j)
      EXPECT_EQ(m.can_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], i != j);
  EXPECT_DOUBLE_EQ(m.matrix.at("uni_on")[0][1], 55.59);
  EXPECT_DOUBLE_EQ(m.matrix.at("uni_off")[8][7], 43.89);
  EXPECT_DOUBLE_EQ(m.matrix.at("bi_on")[3][7], 110.83);
  EXPECT_DOUBLE_EQ(m.matrix.at("lat_gpu_off")[0][7], 7.98);
  EXPECT_DOUBLE_EQ(m.matrix.at("lat_cpu_on")[8][0], 1.33);
  EXPECT_EQ(m.matrix.count("conn"), 0u);
  // With the access lines they rule, as before; a connectivity cell other than 0 or 1 is refused.
  const auto a = pc::parse_p2p_output(
      slurp(data("a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt")), "a100.txt");
  EXPECT_TRUE(a.can_access[0][1]);
  EXPECT_FALSE(a.can_access[0][2]);
  std::string bad = slurp(data("rtxpro6000-plus-8x5090_p2pBandwidthLatencyTest_tab-rows.txt"));
  bad.replace(bad.find("\t     1"), 7, "\t     7");
  EXPECT_THROW(pc::parse_p2p_output(bad, "bad.txt"), sim::InputError);
}

TEST(NcclTests, GraceHopperRunsAsPosted) {
  // CSCS Alps, 2 GH200 on 2 nodes over Slingshot: a "$ srun ..." line, nccl-tests 2.18.2 with
  // NCCL 2.30.7, 1 MiB .. 128 MiB.
  const auto alps = pc::parse_nccl_tests(
      slurp(data("cscs-alps_nccl-tests_all_reduce_2xGH200_slingshot_nccl2307.txt")), "alps.txt",
      "");
  ASSERT_EQ(alps.size(), 8u);
  EXPECT_EQ(alps[0].collective, "all_reduce");
  EXPECT_EQ(alps[0].ranks, 2);
  EXPECT_EQ(alps[0].nodes, 2);
  EXPECT_EQ(alps[0].nccl_version, 23007);
  EXPECT_NEAR(alps.back().busbw_gb_s, 22.86, 1e-9);
  // NVIDIA/nccl-tests#369: the same kind of system; the 1 MiB row found 96 wrong elements and the
  // run says "FAILED": rows kept as measured (25, 8 B .. 128 MiB), the count carried.
  const auto wrong = pc::parse_nccl_tests(
      slurp(data("nccl-tests_issue369_all_reduce_2xGH200_wrong-rows_nccl2292.txt")), "369.txt", "");
  ASSERT_EQ(wrong.size(), 25u);
  EXPECT_EQ(wrong[17].bytes, 1048576.0);
  EXPECT_EQ(wrong[17].wrong, 96);  // out-of-place 96, in-place 32: the larger
  EXPECT_EQ(wrong[16].wrong, 0);
  EXPECT_EQ(alps[0].wrong, 0);
  EXPECT_EQ(wrong[0].nodes, 2);
  EXPECT_EQ(wrong[0].nccl_version, 22902);
  // The same issue's 2 x 4 run failed before its table: the error quotes the failure report.
  try {
    pc::parse_nccl_tests(
        slurp(data("nccl-tests_issue369_all_reduce_2x4xGH200_cuda-busy-before-table.txt")),
        "busy.txt", "");
    ADD_FAILURE() << "a run without rows read as results";
  } catch (const sim::InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("got no result row (the run failed before its first row: \"gpu-1-1: Test "
                     "CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or "
                     "unavailable'\")"),
              std::string::npos)
        << w;
  }
  // 8 RTX 5090 in one process (-g 8), NCCL_P2P_LEVEL=SYS, NCCL 2.29.7.
  const auto r5090 = pc::parse_nccl_tests(
      slurp(data("rtx5090x8_nccl-tests_all_reduce_g8_p2p-level-sys_nccl2297.txt")), "5090.txt", "");
  ASSERT_EQ(r5090.size(), 25u);
  EXPECT_EQ(r5090[0].ranks, 8);
  EXPECT_EQ(r5090[0].nodes, 1);
  EXPECT_NEAR(r5090.back().busbw_gb_s, 43.86, 1e-9);
}

// Session 30 (issues 15, 16): a p2p file holding two runs, a p2p check printed by another tool,
// a 1-rank run with NCCL INFO lines inside it, an rccl-tests run that checked nothing.
TEST(P2p, TwoRunsInOneFileAreReadOneAtATime) {
  // 8 A100-SXM4-80GB: ./p2pBandwidthLatencyTest, then ./p2pBandwidthLatencyTest --sm_copy, in one
  // paste. Before: refused at the second run's connectivity matrix ("expected P2P Connectivity
  // Matrix row 8, got row 0").
  const std::string text =
      slurp(data("a100sxm80x8_nvmlc_p2pBandwidthLatencyTest_two-runs_sm-copy.txt"));
  const auto first = pc::parse_p2p_output(text, "two.txt");
  EXPECT_EQ(first.runs, 2);
  EXPECT_EQ(first.run, 1);
  EXPECT_EQ(first.run_line, 1);
  ASSERT_EQ(first.gpus, 8);
  EXPECT_EQ(first.names.at(7), "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(first.can_access[7][0]);
  EXPECT_DOUBLE_EQ(first.matrix.at("uni_on")[0][1], 274.23);
  EXPECT_DOUBLE_EQ(first.matrix.at("lat_cpu_on")[7][7], 3.69);
  const auto sm = pc::parse_p2p_output(text, "two.txt", 2);
  EXPECT_EQ(sm.run, 2);
  EXPECT_GT(sm.run_line, 100);
  EXPECT_DOUBLE_EQ(sm.matrix.at("uni_on")[0][1], 205.00);  // SM copies: slower than the CEs'
  EXPECT_DOUBLE_EQ(sm.matrix.at("lat_cpu_on")[7][7], 2.73);
  EXPECT_TRUE(sm.can_access[3][4]);
  EXPECT_THROW(pc::parse_p2p_output(text, "two.txt", 3), sim::InputError);
  // A file of one run reads as before, and --run 2 of it is refused.
  const std::string one = slurp(data("rtx6000ada-x2_p2pBandwidthLatencyTest.txt"));
  EXPECT_EQ(pc::parse_p2p_output(one, "one.txt").runs, 1);
  EXPECT_THROW(pc::parse_p2p_output(one, "one.txt", 2), sim::InputError);
  // Isaac Sim's gpu.foundation plugin prints two of the sample's matrices between its log lines
  // (4 RTX 3090/3090 Ti, IOMMU on): no banner, no device or access lines.
  const auto isaac = pc::parse_p2p_output(
      slurp(data("isaacsim_gpu-foundation_p2p-validation_4x3090-3090ti_iommu.txt")), "isaac.txt");
  EXPECT_EQ(isaac.runs, 1);
  ASSERT_EQ(isaac.gpus, 4);
  EXPECT_EQ(isaac.matrix.size(), 3u);  // uni_on, lat_gpu_on, lat_cpu_on
  EXPECT_DOUBLE_EQ(isaac.matrix.at("uni_on")[3][1], 11.37);
  EXPECT_DOUBLE_EQ(isaac.matrix.at("lat_gpu_on")[2][3], 19.46);
  EXPECT_DOUBLE_EQ(isaac.matrix.at("lat_cpu_on")[3][0], 4.95);
  EXPECT_FALSE(isaac.can_access[0][1]);
}

TEST(NcclTests, OneRankAndUncheckedRunsAsPosted) {
  // 1 GTX 1660 SUPER under WSL, NCCL_DEBUG=INFO lines between the rank line and the table and
  // after the last row, NCCL 2.23.4: 21 rows, 1 rank, busbw 0 (nccl-tests' factor for 1 rank).
  const auto one = pc::parse_nccl_tests(
      slurp(data("wsl_nccl-tests_all_reduce_1xGTX1660S_g1_debug-info_nccl2234.txt")), "1660.txt",
      "");
  ASSERT_EQ(one.size(), 21u);
  EXPECT_EQ(one[0].ranks, 1);
  EXPECT_EQ(one[0].nodes, 1);
  EXPECT_EQ(one[0].nccl_version, 22304);
  EXPECT_EQ(one.back().bytes, 8388608.0);
  EXPECT_DOUBLE_EQ(one.back().busbw_gb_s, 0.0);
  // rccl-tests on 2 x 8 MI300X with validation off: every #wrong cell "N/A", 8 MiB .. 8 GiB.
  const auto na = pc::parse_nccl_tests(
      slurp(data("rccl-tests_all_reduce_2x8xMI300X_validation-0_wrong-na.txt")), "na.txt", "");
  ASSERT_EQ(na.size(), 11u);
  EXPECT_EQ(na[0].ranks, 16);
  EXPECT_EQ(na[0].nodes, 2);
  EXPECT_EQ(na[0].wrong, 0);
  EXPECT_NEAR(na.back().busbw_gb_s, 341.53, 1e-9);
}

namespace {
// Session 33: what a real file read as (rows, collective, ranks, machines, NCCL version).
void expect_read(const std::vector<pc::CollectivePoint>& p, std::size_t rows, const char* coll,
                 int ranks, int nodes, int version) {
  ASSERT_EQ(p.size(), rows);
  EXPECT_EQ(p[0].collective, coll);
  EXPECT_EQ(p[0].ranks, ranks);
  EXPECT_EQ(p[0].nodes, nodes);
  EXPECT_EQ(p[0].nccl_version, version);
}
}  // namespace

// Session 33 (issues 15, 16): real nccl-tests outputs of systems and layouts not held before
// (tests/data/README.md), each held at its reading.
TEST(NcclTests, FilesAsTheyOccurInSession33) {
  // 2 DGX Spark (GB10) over one QSFP link: the prompt, the mpirun command and six "Authorization
  // required" lines before the header; all_gather 1-4 GiB, NCCL 2.28.9.
  const auto spark = pc::parse_nccl_tests(
      slurp(data("dgx-spark_nccl-tests_all_gather_2xGB10_auth-noise_nccl2289.txt")), "gb10.txt",
      "");
  ASSERT_NO_FATAL_FAILURE(expect_read(spark, 3, "all_gather", 2, 2, 22809));
  EXPECT_DOUBLE_EQ(spark[0].time_s, 27211.0e-6);
  EXPECT_NEAR(spark.back().busbw_gb_s, 22.14, 1e-9);
  // NVIDIA/nccl#2441: 2 x 2 H100 NVL over Slingshot, a linear step ("-i 100000": sizes 500000 ..
  // 1500000 bytes, not powers of two).
  const auto nvl = pc::parse_nccl_tests(
      slurp(data("nccl-issue2441_nccl-tests_all_reduce_2x2xH100NVL_linear-step_nccl2305.txt")),
      "nvl.txt", "");
  ASSERT_NO_FATAL_FAILURE(expect_read(nvl, 11, "all_reduce", 4, 2, 23005));
  EXPECT_DOUBLE_EQ(nvl[2].bytes, 700000.0);
  EXPECT_DOUBLE_EQ(nvl[2].time_s, 113.68e-6);
  // The same issue's run with the NCCL commit it bisected to (AMD inter-CPU bandwidth): 700 KB to
  // 1 MB at a third of the rate, the rows as printed.
  const auto bad = pc::parse_nccl_tests(
      slurp(data(
          "nccl-issue2441_nccl-tests_all_reduce_2x2xH100NVL_linear-step_amd-cpu-bw-commit.txt")),
      "bad.txt", "");
  ASSERT_NO_FATAL_FAILURE(expect_read(bad, 11, "all_reduce", 4, 2, 23005));
  EXPECT_DOUBLE_EQ(bad[5].time_s, 343.55e-6);
  EXPECT_GT(bad[5].time_s, 2.0 * nvl[5].time_s);
  // OpenShift, 2 pods of one L40S each over sockets (NCCL_IB_DISABLE=1), then 2 pods of two
  // (-g 2): "# Reducing maxBytes to 15534478677 due to memory limitation" inside the header.
  const auto one = pc::parse_nccl_tests(
      slurp(data("openshift_nccl-tests_all_reduce_2xL40S_sockets_reducing-maxbytes_nccl2273.txt")),
      "l40s1.txt", "");
  ASSERT_NO_FATAL_FAILURE(expect_read(one, 31, "all_reduce", 2, 2, 22703));
  EXPECT_DOUBLE_EQ(one.back().bytes, 8589934592.0);
  EXPECT_NEAR(one.back().busbw_gb_s, 8.11, 1e-9);
  const auto two = pc::parse_nccl_tests(
      slurp(data("openshift_nccl-tests_all_reduce_2x2xL40S_g2_reducing-maxbytes_nccl2273.txt")),
      "l40s2.txt", "");
  ASSERT_NO_FATAL_FAILURE(expect_read(two, 31, "all_reduce", 4, 2, 22703));
  EXPECT_NEAR(two.back().busbw_gb_s, 9.63, 1e-9);
  // 8 H100 NVL + 8 A100 in two pods that never connected: header, 16 rank lines, NCCL's socket
  // retries, no table. The error says what the file holds and how it ends.
  try {
    pc::parse_nccl_tests(
        slurp(data("h100nvl-a100_nccl-tests_all_reduce_2x8_no-table_socket-timeout.txt")),
        "hang.txt", "");
    ADD_FAILURE() << "a file without result rows was read";
  } catch (const sim::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("got no result row (its header lists 16 ranks on 2 host(s), then the "
                        "output ends before its first size; last line: \"6e094e9a088e"),
              std::string::npos)
        << what;
  }
}

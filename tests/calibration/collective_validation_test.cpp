// The collective model against real all-reduce measurements (docs/validation.md, "Collectives"):
// nccl-tests outputs read with calibration/link_fit's reader, and figures from NCCL's issue
// threads (tests/data/collectives/published_allreduce.csv).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "calibration/link_fit.hpp"
#include "sim/cluster.hpp"
#include "sim/collective.hpp"

#include "tests/common/files.hpp"

namespace pc = placesim::calibration;
namespace sim = placesim::sim;

namespace {

using placesim::test::slurp;

double predicted_busbw(const sim::Cluster& c, const std::vector<sim::DeviceId>& ranks, double bytes,
                       int launches, sim::CollAlgo algo = sim::CollAlgo::Auto, int nccl = 0,
                       sim::CollectiveKind kind = sim::CollectiveKind::AllReduce) {
  sim::CollectiveCall call;
  call.kind = kind;
  call.bytes = sim::Bytes{static_cast<std::int64_t>(bytes)};
  call.algo = algo;
  call.nccl_version = nccl;
  const sim::CollectivePrediction p = sim::predict_collective(c, call, ranks, launches);
  const int n = static_cast<int>(ranks.size());
  return bytes / p.time.seconds() / 1e9 * sim::bus_factor(kind, n);
}

// One real nccl-tests all_reduce_perf run (tests/data/calibration, tests/data/README.md) against
// the cluster that describes its machine, with the largest |error| of the model's out-of-place
// busbw the model achieves in each size band (docs/validation.md lists every size): small
// 8 KiB..1 MiB, mid (1 MiB, 64 MiB), large >= 64 MiB. The issue's bounds are 25 % small and 10 %
// large; a bound above them is a miss the docs name.
struct Source {
  const char* name;
  const char* file;
  const char* cluster;  // built-in scenario, or a file under tests/data/calibration
  int ranks, launches;  // launches: nccl-tests -g (GPUs one thread launches for)
  double small, mid, large;
  bool issue_bounds;  // the model meets the issue's bounds (25 % small, 10 % large) on it
  int nccl = 0;       // the NCCL version the run states (NCCL_VERSION_CODE); 0: not stated
  const char* collective = "all_reduce";  // the nccl-tests binary that ran
};
constexpr Source kSources[] = {
    // 8x A100-SXM4-40GB in one process (-g 8), NCCL of 2021; DGX A100 fabric.
    {"SuperBench 8x A100", "superbench_nccl-tests_all_reduce_8xA100.log", "dgx-a100", 8, 8, 0.200,
     0.275, 0.067, true},
    // DGX H100, one process per GPU: NVLS from 1 MiB.
    {"Talos DGX H100", "talos_dgx-h100_nccl-tests_report_excerpt.md", "hgx-h100", 8, 1, 0.009,
     0.230, 0.093, true, 22203},
    // 2x DGX H100 over InfiniBand, NCCL 2.22.3; its 1 MiB..32 MiB rows take 150-480 us (2-3x the
    // NCCL 2.26 run below on the same hardware) and its large sizes ramp slower.
    {"Talos 2x DGX H100", "talos_dgx-h100_nccl-tests_report_excerpt.md", "2x-hgx-h100.yaml", 16, 1,
     0.0, 1.409, 0.223, false, 22203},
    // 2x OCI BM.GPU4.8 (8x A100, 16x 100 Gb/s RoCE each: 2x-dgx-a100's 1.6 Tb/s per node, AMD
    // hosts), an older NCCL that runs the 2-node tree from 1 GiB (238 GB/s) where NCCL 2.19's
    // per-channel tree cap, and the model, keep the ring (187): -16..-21 % from 1 GiB.
    {"OCI 2x BM.GPU4.8 (A100)", "oci_bm-gpu4-8_nccl-tests_all_reduce_2x8xA100.txt", "2x-dgx-a100",
     16, 1, 0.147, 0.058, 0.214, false},
    // 2x HGX H100 with 8 CX-7 NDR each, NCCL 2.26 (NVIDIA/nccl-tests#309), Intel hosts. Small:
    // 128 KiB -22.7 % since the tree LL hold at the network hops (session 30; -17.1 % before).
    {"nccl-tests#309 2x HGX H100", "nccl-tests_all_reduce_2x8xH100_issue309.txt",
     "2x-hgx-h100.yaml", 16, 1, 0.227, 0.159, 0.058, true, 22602},
    // Held out (added 2026-12-02): OCI BM.GPU4.8, 8x A100-SXM4-40GB in one process (-g 8), a
    // second single-node NVSwitch A100 run beside SuperBench's.
    {"OCI 8x A100 (-g 8)", "ocitutorials_nccl-tests_all_reduce_8xA100_g8.txt", "dgx-a100", 8, 8,
     0.173, 0.463, 0.094, true},
    // Held out: 2x OCI BM.GPU.H200.8 (8 H200 on NVSwitch, 8x 400 Gb/s RDMA NICs each), NCCL 2.27.5,
    // 1-16 GiB; against the 2x HGX H100 fabric (H200 has H100's NVLink 4 and 400 Gb/s per GPU).
    {"OCI 2x8 H200", "argonne_oci-howto_nccl-tests_all_reduce_2x8xH200.txt", "2x-hgx-h100.yaml", 16,
     1, 0.0, 0.0, 0.078, true, 22705},
    // Added 2026-12-02 (evening; used to check the tree cap and the tree's network overhead): 2x
    // Azure ND96amsr A100 v4 (8x A100-80GB on NVSwitch, 8x HDR InfiniBand, AMD hosts) on AKS,
    // NCCL of the pytorch:23.03 container.
    {"Azure 2x NDm A100 v4 (IB)", "azure_ndmv4_aks_nccl-tests_all_reduce_2x8xA100.txt",
     "2x-dgx-a100", 16, 1, 0.174, 0.290, 0.072, true},
    // Added 2026-12-02 (evening; checked): 2x OCI BM.GPU.B4.8 (A100-40GB, RoCE), NCCL 2.29.3,
    // 1-4 GiB: the ring's figure.
    {"OCI 2x A100, NCCL 2.29.3", "oci_oke-slurm_nccl-tests_all_reduce_2x8xA100_nccl2293.txt",
     "2x-dgx-a100", 16, 1, 0.0, 0.0, 0.019, true, 22903},
    // Held out (added 2026-12-02, issue 16 formats): 2x Dell XE9680 (8x H200 on NVSwitch, 8x
    // BlueField-3 400 GbE Spectrum-X RoCE NICs each), one process per node (-g 8), NCCL 2.30.4,
    // 1 KiB-16 GiB; 2x-hgx-h100.yaml's fabric (NVLink 4, 400 Gb/s per GPU).
    {"Spectrum-X 2x8 H200 (-g 8)", "redhat_spectrumx_nccl-tests_all_reduce_2x8xH200.txt",
     "2x-hgx-h100.yaml", 16, 8, 0.246, 0.136, 0.085, true, 23004},
    // Held out (same day): 2x OCI BM.GPU.H100.8 (8x H100 on NVSwitch, 16x 200 Gb/s RoCE ports
    // each: 2x-hgx-h100.yaml's 3.2 Tb/s per node), NCCL 2.21.5, 1-16 GiB.
    {"OCI 2x8 H100 (RoCE), NCCL 2.21.5", "ocitutorials_nccl-tests_all_reduce_2x8xH100_nccl2215.txt",
     "2x-hgx-h100.yaml", 16, 1, 0.0, 0.0, 0.047, true, 22105},
    // Held out (same day): all_gather on 2 GCP a3-ultragpu-8g (8x H200, 8x 400 Gb/s
    // GPUDirect-RDMA NICs each), NCCL 2.26.6, 1 KiB-8 GiB, as GCP's own test pod printed it. A
    // miss:
    // its ring reaches 40.7 GB/s per NIC where the model's ring runs at NCCL's 48.5 of 50
    // (docs/validation.md, "nccl-tests outputs as they occur").
    {"GCP a3-ultra 2x8 H200 all_gather",
     "gcp_gke-a3ultra_nccl-tests_all_gather_2x8xH200_nccl2266.txt", "2x-hgx-h100.yaml", 16, 1,
     0.230, 0.293, 0.202, false, 22606, "all_gather"},
    // Held out (added 2026-12-03, session 15; docs/validation.md "Eight more held-out runs").
    // 8x H100 SXM of one node in one process (-g 8), NVLS, 128 MiB-4 GiB (nccl-tests#290).
    {"nccl-tests#290 8x H100 (-g 8)", "nccl-tests_issue290_all_reduce_8xH100_g8.txt", "hgx-h100", 8,
     8, 0.0, 0.0, 0.096, true},
    // 2 nodes of 8 H100 with 8x 400 Gb/s InfiniBand (the page's words), 512 MiB-8 GiB: 384-392
    // GB/s,
    // a ring's figure where the model takes NVLS trees (457 at 8 GiB). A miss.
    {"mpi-operator 2x8 H100 (8x 400G IB)",
     "mpi-operator_nccl-tests_all_reduce_2x8xH100_8x400gIB.txt", "2x-hgx-h100.yaml", 16, 1, 0.0,
     0.0, 0.170, false},
    // 2 Nebius H200 workers of 8 (fabric assumed 8x 400 Gb/s InfiniBand), 1-16 GiB.
    {"Nebius 2x8 H200", "nebius_runai_nccl-tests_all_reduce_2x8xH200.txt", "2x-hgx-h100.yaml", 16,
     1, 0.0, 0.0, 0.064, true},
    // 8x A100-SXM4-80GB in one process (-g 8), NCCL 2.19.3, 8 B-128 MiB. The model is 27-41 % fast
    // at 8-32 MiB (LL128) and 15-19 % at 64-128 MiB: a miss.
    {"8x A100-80GB (-g 8), NCCL 2.19.3", "nccl-tests_all_reduce_8xA100-80GB_g8_nccl2193.txt",
     "dgx-a100", 8, 8, 0.120, 0.412, 0.190, false, 21903},
    // One host of 8 A100-SXM4-80GB twice: in one process (-g 8), and one process per GPU (mpirun
    // -np 8), 8 B-4 GiB. The -g 8 run is the slower one at 1-512 MiB; both misses (the -np 8 run
    // takes 24-32 us at 1-64 KiB where the model's floor is 17.5-19.4).
    {"blog 8x A100-80GB (-g 8)", "blog_nccl-tests_all_reduce_8xA100-80GB_g8.txt", "dgx-a100", 8, 8,
     0.199, 0.347, 0.199, false},
    {"blog 8x A100-80GB (mpirun -np 8)", "blog_nccl-tests_all_reduce_8xA100-80GB_mpirun-np8.txt",
     "dgx-a100", 8, 1, 0.642, 0.223, 0.103, false},
};

struct BandErrors {
  double small = 0, mid = 0, large = 0;
  int n_small = 0, n_mid = 0, n_large = 0;
};

// One measured row: the size and its out-of-place (or only published) bus bandwidth.
struct Measured {
  double bytes, busbw;
};

// Largest |model / measured - 1| per size band. Rows whose time exceeds the next larger size's
// are skipped: a healthy run never moves more bytes in less time, so such a row measured
// something else (a stall, another job).
template <typename Model>
BandErrors band_maxima(const std::vector<Measured>& rows, const Model& model_busbw) {
  BandErrors e;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i + 1 < rows.size() &&
        rows[i].bytes / rows[i].busbw > rows[i + 1].bytes / rows[i + 1].busbw)
      continue;
    const double err = std::fabs(model_busbw(rows[i].bytes) / rows[i].busbw - 1);
    if (rows[i].bytes >= 64.0 * (1 << 20)) {
      e.large = std::max(e.large, err);
      ++e.n_large;
    } else if (rows[i].bytes <= 1 << 20) {
      e.small = std::max(e.small, err);
      ++e.n_small;
    } else {
      e.mid = std::max(e.mid, err);
      ++e.n_mid;
    }
  }
  return e;
}

// The band maxima against the bounds the test holds for a source, and the issue's bounds (25 %
// small, 10 % large) where the model meets them (docs/validation.md names the misses).
void expect_within(const BandErrors& e, const std::string& name, const BandErrors& bound,
                   bool issue_bounds) {
  EXPECT_GT(e.n_large, 0) << name;
  EXPECT_LE(e.small, bound.small) << name << ": 8 KiB..1 MiB";
  EXPECT_LE(e.mid, bound.mid) << name << ": 1..64 MiB";
  EXPECT_LE(e.large, bound.large) << name << ": >= 64 MiB";
  if (issue_bounds) {
    EXPECT_LE(e.small, 0.25) << name;
    EXPECT_LE(e.large, 0.10) << name;
  }
}

BandErrors band_errors(const Source& s, int nccl) {
  const std::string dir = std::string(PLACESIM_TEST_DATA) + "/calibration/";
  std::vector<pc::CollectivePoint> pts;
  for (const pc::CollectivePoint& p :
       pc::parse_nccl_tests(slurp(dir + s.file), s.file, s.collective)) {
    // The version the test states is the one the output names, where it names one.
    if (p.nccl_version > 0) EXPECT_EQ(p.nccl_version, s.nccl) << s.name;
    if (p.ranks == s.ranks && p.bytes >= 8192) pts.push_back(p);
  }
  const std::string cl = std::string(s.cluster).ends_with(".yaml") ? dir + s.cluster : s.cluster;
  const sim::Cluster c = sim::load_cluster(cl);
  const sim::CollectiveKind kind = *sim::parse_collective_kind(s.collective);
  const double factor = sim::bus_factor(kind, s.ranks);
  std::vector<Measured> rows;
  for (const pc::CollectivePoint& p : pts)
    rows.push_back({p.bytes, p.busbw_gb_s > 0 ? p.busbw_gb_s : p.bytes / p.time_s / 1e9 * factor});
  return band_maxima(rows, [&](double bytes) {
    return predicted_busbw(c, c.gpus(), bytes, s.launches, sim::CollAlgo::Auto, nccl, kind);
  });
}

// Each run against the model with the NCCL version it states (--nccl-version; the default tuning,
// NCCL 2.19's, where it states none).
TEST(CollectiveValidation, RealAllReduceRunsWithinTheAchievedBoundsPerSizeBand) {
  for (const Source& s : kSources) {
    const BandErrors e = band_errors(s, s.nccl);
    // The summary of docs/validation.md: largest |error| per band (rows compared).
    std::printf("%-28s small %5.1f %% (%d)  mid %5.1f %% (%d)  large %5.1f %% (%d)", s.name,
                100 * e.small, e.n_small, 100 * e.mid, e.n_mid, 100 * e.large, e.n_large);
    if (s.nccl > 0) {  // and with the default tuning, for the docs' before/now
      const BandErrors d = band_errors(s, 0);
      std::printf("  [default tuning: %5.1f / %5.1f / %5.1f %%]", 100 * d.small, 100 * d.mid,
                  100 * d.large);
    }
    std::printf("\n");
    expect_within(e, s.name, {s.small, s.mid, s.large}, s.issue_bounds);
  }
}

namespace {

// The rows of a CSV under tests/data/collectives (comments and the header skipped), each cut to
// its first `fields` comma-separated fields (the last, a quoted source, may hold commas).
std::vector<std::vector<std::string>> collective_rows(const std::string& file, std::size_t fields) {
  std::istringstream in(slurp(std::string(PLACESIM_TEST_DATA) + "/collectives/" + file));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("id,", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; f.size() < fields && std::getline(ls, x, ',');) f.push_back(x);
    EXPECT_EQ(f.size(), fields) << line;
    if (f.size() == fields) rows.push_back(f);
  }
  return rows;
}

}  // namespace

TEST(CollectiveValidation, PublishedFiguresOfNvSwitchAndInfiniBandSystems) {
  const std::string dir = std::string(PLACESIM_TEST_DATA) + "/collectives/";
  int rows = 0;
  for (const std::vector<std::string>& f : collective_rows("published_allreduce.csv", 8)) {
    const std::string cluster = f[1].find(".yaml") != std::string::npos ? dir + f[1] : f[1];
    const sim::Cluster c = sim::load_cluster(cluster);
    std::vector<sim::DeviceId> ranks;
    if (f[2] == "all")
      ranks = c.gpus();
    else {
      std::stringstream ds(f[2]);
      for (std::string d; std::getline(ds, d, '+');) ranks.push_back(c.device_index(d));
    }
    const auto algo = *sim::parse_coll_algo(f[4]);
    const double bytes = std::stod(f[5]), value = std::stod(f[7]);
    sim::CollectiveCall call;
    call.bytes = sim::Bytes{static_cast<std::int64_t>(bytes)};
    call.algo = algo;
    const sim::CollectivePrediction p = sim::predict_collective(c, call, ranks, std::stoi(f[3]));
    const double model = f[6] == "time_us"
                             ? p.time.seconds() * 1e6
                             : predicted_busbw(c, ranks, bytes, std::stoi(f[3]), algo);
    // Large messages within 10 %, a latency within 25 % (the issue's bounds), but for the known
    // misses docs/validation.md names: two held-out 2-node OCI A100 runs at 10 GiB on either side
    // of the model's ring (222.9 GB/s, between ring and tree; 169.8 with NCCL 2.15.5) and a 4-node
    // H100 cluster's peak (330.9 GB/s against the model's 379.9).
    double bound = f[6] == "time_us" ? 0.25 : 0.10;
    if (f[0] == "oci_a100_2node_10g_d5ige") bound = 0.16;
    if (f[0] == "oci_a100_2node_10g_tf2211") bound = 0.11;
    if (f[0] == "vp_h100_4node_peak") bound = 0.15;  // 4 nodes: the model's ring is 14.8 % above
    EXPECT_LE(std::fabs(model / value - 1), bound)
        << f[0] << ": model " << model << " published " << value;
    ++rows;
  }
  EXPECT_EQ(rows, 17);
}

namespace {

// The cluster with NCCL_P2P_DISABLE=1 (as `collective --p2p off` makes it): no GPU peer access.
sim::Cluster without_peer_access(const std::string& name) {
  sim::Cluster c = sim::load_cluster(name);
  for (auto& row : c.peer_access) std::fill(row.begin(), row.end(), false);
  sim::compute_routes(c);
  return c;
}

}  // namespace

// NCCL with P2P disabled (NCCL_P2P_DISABLE=1): its SHM transport through host memory, against
// the figures NCCL's issue threads state (tests/data/collectives/published_p2p_disabled.csv; the
// rate fraction kShmRateFraction was read from them). Each within 10 %, and far below the same
// GPUs' all-reduce with P2P (NVLink, or PCIe peer to peer inside a switch).
TEST(CollectiveValidation, PublishedFiguresWithP2pDisabled) {
  int rows = 0;
  for (const std::vector<std::string>& f : collective_rows("published_p2p_disabled.csv", 6)) {
    const sim::Cluster c = without_peer_access(f[1]), with = sim::load_cluster(f[1]);
    std::vector<sim::DeviceId> ranks;
    std::stringstream ds(f[2]);
    for (std::string d; std::getline(ds, d, '+');) ranks.push_back(c.device_index(d));
    const double bytes = std::stod(f[3]), value = std::stod(f[4]);
    const double off = predicted_busbw(c, ranks, bytes, 1);
    EXPECT_LE(std::fabs(off / value - 1), 0.10)
        << f[0] << ": model " << off << " published " << value;
    // pcie-4090x8 has no peer access to take away (GeForce): the same figure with and without.
    if (f[1] != "pcie-4090x8") EXPECT_LT(off, predicted_busbw(with, ranks, bytes, 1)) << f[0];
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  // 8 GPUs of a DGX A100: NVLink's ring against the host path (every hop up its PCIe switch into
  // the receiver's socket and down; two GPUs share a switch's x16 uplink).
  const sim::Cluster a100 = sim::load_cluster("dgx-a100"), shm = without_peer_access("dgx-a100");
  const double off = predicted_busbw(shm, shm.gpus(), 1LL << 30, 1);
  EXPECT_LT(off, predicted_busbw(a100, a100.gpus(), 1LL << 30, 1) / 10);
  EXPECT_NEAR(off, 31.5 * 12 / 15.75 / 2 * 0.75, 0.5);  // half an uplink at NCCL's PCIe rate x 3/4
}

// One InfiniBand fabric at 2, 4 and 8 nodes: ABCI 2.0 "Compute Node (A)" hosts (8x A100-SXM4-40GB,
// 4x HDR 200 Gb/s, Intel Xeon hosts), NCCL 2.8.4, all_reduce_perf -b 4 -e 32M, one process per GPU
// (aistabci/abci2.0benchmark; tests/data/README.md). Held out (2026-12-02, session 13). The
// smallest calls time the latency floor as the node count doubles: measured 32.6, 42.0, 51.4 us at
// 8 B (+9.4 us per doubling), the model's double binary tree LL 33.3, 43.3, 53.3 (2 log2(nodes)
// network hops at NCCL's 5 us, +10 us per doubling). From 8 KiB its calls carry far less than 4 HDR
// NICs do elsewhere (33 GB/s busbw at 32 MiB on 2 nodes, 15 on 8; NVIDIA/nccl#1048 and
// nccl-tests#100 reach 86-91 GB/s on 2 nodes with 4 HDR NICs), which the cluster does not explain:
// the bands are the model's honest misses (docs/validation.md, "One fabric at 2, 4 and 8 nodes").
struct NodeSeries {
  int nodes;
  const char* file;     // tests/data/calibration
  const char* cluster;  // tests/data/collectives
  double floor;         // |model / measured - 1| of the 8 B call's time the model achieves
  double small, mid;    // band maxima the model achieves (no rows from 64 MiB)
};
constexpr NodeSeries kAbci[] = {
    {2, "abci_anode_nccl-tests_all_reduce_2x8xA100_nccl284.txt", "2x-abci-anode.yaml", 0.021, 0.548,
     1.174},
    {4, "abci_anode_nccl-tests_all_reduce_4x8xA100_nccl284.txt", "4x-abci-anode.yaml", 0.031, 0.479,
     1.154},
    {8, "abci_anode_nccl-tests_all_reduce_8x8xA100_nccl284.txt", "8x-abci-anode.yaml", 0.038, 0.519,
     2.895},
};

TEST(CollectiveValidation, LatencyFloorAcrossNodeCountsOnOneFabric) {
  for (const NodeSeries& s : kAbci) {
    const std::string file = std::string(PLACESIM_TEST_DATA) + "/calibration/" + s.file;
    const sim::Cluster c =
        sim::load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/" + s.cluster);
    ASSERT_EQ(static_cast<int>(c.gpus().size()), 8 * s.nodes) << s.cluster;
    std::vector<Measured> rows;
    double floor_s = 0;
    for (const pc::CollectivePoint& p : pc::parse_nccl_tests(slurp(file), s.file, "all_reduce")) {
      ASSERT_EQ(p.ranks, 8 * s.nodes) << s.file;
      EXPECT_EQ(p.nodes, s.nodes) << s.file;
      if (p.bytes == 8) floor_s = p.time_s;
      if (p.bytes >= 8192) rows.push_back({p.bytes, p.busbw_gb_s});
    }
    ASSERT_GT(floor_s, 0) << s.file;
    sim::CollectiveCall call;
    call.bytes = sim::Bytes{8};
    const double model_s = sim::predict_collective(c, call, c.gpus(), 1).time.seconds();
    const BandErrors e =
        band_maxima(rows, [&](double bytes) { return predicted_busbw(c, c.gpus(), bytes, 1); });
    std::printf(
        "ABCI %d nodes: 8 B %.2f us (model %.2f, %+.1f %%); small %5.1f %% (%d)  mid %5.1f "
        "%% (%d)\n",
        s.nodes, floor_s * 1e6, model_s * 1e6, 100 * (model_s / floor_s - 1), 100 * e.small,
        e.n_small, 100 * e.mid, e.n_mid);
    EXPECT_LE(std::fabs(model_s / floor_s - 1), s.floor) << s.file;
    EXPECT_LE(e.small, s.small) << s.file;
    EXPECT_LE(e.mid, s.mid) << s.file;
    EXPECT_EQ(e.n_large, 0) << s.file;
  }
}

// Published all-reduce sweeps of one 8-GPU NVSwitch node, tables of bus bandwidth per size
// (tests/data/collectives/published_allreduce_sweeps.csv; tests/data/README.md has the sources),
// against the model with the NCCL version and the algorithm each run used. Bounds: the largest
// |error| per band the model achieves (docs/validation.md, "Published sweeps of one node").
struct Sweep {
  const char* source;  // the CSV's source column
  const char* cluster;
  int launches;        // GPUs one thread launches for (nccl-tests -g)
  int nccl;            // the NCCL version the page states (NCCL_VERSION_CODE)
  sim::CollAlgo algo;  // what the run's NCCL_ALGO left NCCL
  double small, mid, large;
  bool issue_bounds;  // the model meets the issue's bounds (25 % small, 10 % large) on it
};
constexpr Sweep kSweeps[] = {
    // Azure ND A100 v4 (8x A100-SXM4-80GB), NCCL 2.18.5, -g 8, in-place. Its NCCL_ALGO=NVLS
    // leaves no all-reduce algorithm on A100, and NCCL's tuner then restores the ring with every
    // protocol (tuning.cc, "at least set ring algo available"). A miss at 64-128 MiB (+21/+24 %)
    // where SuperBench and OCI on the same GPUs are within 1-9 %: the sources disagree.
    {"azure_nd_a100_v4", "dgx-a100", 8, 21805, sim::CollAlgo::Ring, 0.229, 0.390, 0.239, false},
    // Azure ND H200 v5 (8x H200), NCCL 2.20.5, -g 8, in-place, NCCL_ALGO=NVLS at every size. A
    // miss at 8 KiB-1 MiB: its calls take 30-35 us where the model's NVLS latency and 8 host
    // launches (kNcclLaunchUs, fitted on A100 hosts) give 43-51.
    {"azure_nd_h200_v5", "hgx-h100", 8, 22005, sim::CollAlgo::Nvls, 0.334, 0.291, 0.051, false},
    // stas00/ml-engineering, 8x H200, NCCL 2.27.7: torch.distributed, one process per GPU, each
    // call timed alone after a barrier (15-48 us more per call than nccl-tests' back-to-back
    // calls; not nccl-tests, so outside the issue's bounds by method).
    {"ml_engineering_8xh200", "hgx-h100", 1, 22707, sim::CollAlgo::Auto, 1.138, 0.362, 0.125,
     false},
};

TEST(CollectiveValidation, PublishedSweepsOfOneNvSwitchNode) {
  const std::string path =
      std::string(PLACESIM_TEST_DATA) + "/collectives/published_allreduce_sweeps.csv";
  std::istringstream in(slurp(path));
  std::map<std::string, std::vector<Measured>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("source,", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 4u) << line;
    const double bytes = std::stod(f[2]);
    if (bytes >= 8192) rows[f[0]].push_back({bytes, std::stod(f[3])});
  }
  ASSERT_EQ(rows.size(), std::size(kSweeps));
  for (const Sweep& s : kSweeps) {
    ASSERT_TRUE(rows.count(s.source)) << s.source;
    const sim::Cluster c = sim::load_cluster(s.cluster);
    const BandErrors e = band_maxima(rows[s.source], [&](double bytes) {
      return predicted_busbw(c, c.gpus(), bytes, s.launches, s.algo, s.nccl);
    });
    std::printf("%-24s small %5.1f %% (%d)  mid %5.1f %% (%d)  large %5.1f %% (%d)\n", s.source,
                100 * e.small, e.n_small, 100 * e.mid, e.n_mid, 100 * e.large, e.n_large);
    expect_within(e, s.source, {s.small, s.mid, s.large}, s.issue_bounds);
  }
}

}  // namespace

// The collective model (sim/collective.hpp) and its use in the engine (collective_expand.hpp).
#include "sim/collective.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>

#include "sim/catalog.hpp"
#include "sim/collective_expand.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

#include "sim_fixtures.hpp"

namespace placesim::sim {
namespace {

CollectiveCall all_reduce(std::int64_t bytes) {
  CollectiveCall c;
  c.kind = CollectiveKind::AllReduce;
  c.bytes = Bytes{bytes};
  return c;
}

TEST(Collective, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::AllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::Reduce, 8), 1.0);
}

TEST(Collective, ParsesNamesAsNcclAndNcclTestsSpellThem) {
  EXPECT_EQ(parse_collective_kind("all_reduce"), CollectiveKind::AllReduce);
  EXPECT_EQ(parse_collective_kind("AllGather"), CollectiveKind::AllGather);
  EXPECT_EQ(parse_collective_kind("alltoall"), CollectiveKind::AllToAll);
  EXPECT_EQ(parse_collective_kind("sendrecv"), CollectiveKind::SendRecv);
  EXPECT_FALSE(parse_collective_kind("gather").has_value());
  EXPECT_EQ(parse_coll_proto("ll128"), CollProto::LL128);
  EXPECT_EQ(parse_coll_algo("NVLS"), CollAlgo::Nvls);
}

// DGX A100: each GPU's 12 NVLinks into the switch carry one ring flow each way: 300 GB/s of
// signalling, 240 GB/s as NCCL models NVLink 3 (20 of 25 GB/s per link).
TEST(Collective, RingBandwidthOfDgxA100IsTheNvlinkPortAsNcclModelsIt) {
  const Cluster c = load_cluster("dgx-a100");
  const CollectivePrediction p = predict_collective(c, all_reduce(1LL << 30), c.gpus());
  EXPECT_NEAR(p.fabric_busbw_gbps, 240.0, 1e-6);
  EXPECT_EQ(p.algo, CollAlgo::Ring);
  EXPECT_EQ(p.proto, CollProto::Simple);
  EXPECT_EQ(p.nodes, 1);
}

// Two DGX A100: 8 channels, each leaving a node through its own HDR NIC (25 GB/s, 23.5 as NCCL
// carries it): 188 GB/s, NVLink is not the bottleneck.
TEST(Collective, TwoNodeRingsUseEveryNic) {
  const Cluster c = load_cluster("2x-dgx-a100");
  const CollectivePrediction p = predict_collective(c, all_reduce(1LL << 30), c.gpus());
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.channels, 8);
  EXPECT_NEAR(p.fabric_busbw_gbps, 8 * 23.5, 1e-6);
}

// NCCL 2.19's per-channel tree cap (tuning.cc perChMaxTreeBws, Ampere on 2 nodes 23.6 GB/s per
// channel, one tree channel per NIC) keeps the 2-node tree's estimate under the Simple ring's on
// two DGX A100, so large calls run the ring (188 GB/s bus x 0.99) and a forced tree is capped at
// 8 x 23.6 / 2 GB/s algbw. Without the cap the tuner took the tree at 235 GB/s busbw.
TEST(Collective, TwoNodeA100StaysOnTheRingUnderNcclsTreeCap) {
  const Cluster c = load_cluster("2x-dgx-a100");
  const CollectivePrediction p = predict_collective(c, all_reduce(8LL << 30), c.gpus());
  EXPECT_EQ(p.algo, CollAlgo::Ring);
  EXPECT_EQ(p.proto, CollProto::Simple);
  CollectiveCall tree = all_reduce(8LL << 30);
  tree.algo = CollAlgo::Tree;
  tree.proto = CollProto::Simple;
  const CollectivePrediction t = predict_collective(c, tree, c.gpus());
  EXPECT_LE(t.algbw_gbps, 8 * 23.6 / 2 + 1e-9);
  EXPECT_GT(p.algbw_gbps, t.algbw_gbps);
  // Small calls: the tree's chain steps pay the AMD hosts' 2 us network overhead (NCCL's
  // getNetOverhead): 6.8 + 2 (7 x 2 + 5) = 44.8 us of tree LL latency, and its 2 network hops
  // each hold a channel's 4 KiB at 512 x 8 B per 850 ns (LlTreesAcrossNodesHoldAChunk...).
  const CollectivePrediction s = predict_collective(c, all_reduce(8192), c.gpus());
  EXPECT_EQ(s.algo, CollAlgo::Tree);
  EXPECT_EQ(s.proto, CollProto::LL);
  EXPECT_NEAR(s.latency_us, 44.8 + 2 * 4096 / (512 * 8.0 / 0.85), 1e-9);
}

TEST(Collective, ParsesNcclVersionsAsNcclNumbersThem) {
  EXPECT_EQ(parse_nccl_version("2.23.4"), 22304);
  EXPECT_EQ(parse_nccl_version("2.19"), 21900);
  EXPECT_EQ(parse_nccl_version("2.26.2-1"), 22602);
  EXPECT_EQ(parse_nccl_version("22903"), 22903);
  for (const char* bad : {"", "2.", "3.0", "1.9", "2.x", "2.19.3.1", "abc", "2.100"})
    EXPECT_FALSE(parse_nccl_version(bad).has_value()) << bad;
}

// NCCL 2.23+ tuning (docs/collectives.md, "NCCL versions"): on two DGX A100 (AMD hosts: 2 us
// network overhead, x3 for Simple) a tree Simple call's latency is 8.4 + 2 (7 max(4, 6) + 14) =
// 120.4 us, where NCCL 2.19 said 0 + 2 (7 x 28 + 28) = 448; one node's ring LL carries half of
// the 240 GB/s bus (capped at Ampere's 87.7) where 2.19 took a quarter.
TEST(Collective, NcclVersionsTakeTheirTunersTables) {
  const Cluster c = load_cluster("2x-dgx-a100");
  CollectiveCall tree = all_reduce(1LL << 30);
  tree.algo = CollAlgo::Tree;
  tree.proto = CollProto::Simple;
  EXPECT_NEAR(predict_collective(c, tree, c.gpus()).latency_us, 448.0, 1e-9);
  tree.nccl_version = 22304;
  EXPECT_NEAR(predict_collective(c, tree, c.gpus()).latency_us, 120.4, 1e-9);
  const Cluster one = load_cluster("dgx-a100");
  CollectiveCall ll = all_reduce(1 << 20);
  ll.algo = CollAlgo::Ring;
  ll.proto = CollProto::LL;
  EXPECT_NEAR(predict_collective(one, ll, one.gpus()).algbw_gbps, 60.0 * 8 / 14, 1e-9);
  ll.nccl_version = 22602;
  EXPECT_NEAR(predict_collective(one, ll, one.gpus()).algbw_gbps, 87.7 * 8 / 14, 1e-9);
  // PAT: all-gather with one GPU per node, from 2.23 only; latency 8 + log2(2) x 14 / 3.5 +
  // 2 x 2.8 = 17.6 us, algbw 0.75 of the ring's bus.
  const std::vector<DeviceId> pair{c.device_index("n0-gpu0"), c.device_index("n1-gpu0")};
  CollectiveCall ag;
  ag.kind = CollectiveKind::AllGather;
  ag.bytes = Bytes{1 << 20};
  ag.algo = CollAlgo::Pat;
  EXPECT_THROW(predict_collective(c, ag, pair), InputError);
  ag.nccl_version = 22304;
  const CollectivePrediction pat = predict_collective(c, ag, pair);
  EXPECT_EQ(pat.algo, CollAlgo::Pat);
  EXPECT_NEAR(pat.latency_us, 17.6, 1e-9);
  EXPECT_NEAR(pat.algbw_gbps, 0.75 * pat.fabric_busbw_gbps, 1e-9);
  EXPECT_THROW(predict_collective(c, ag, c.gpus()), InputError);  // 8 GPUs per node: no PAT
  // Ring LL128 with one GPU per node: NCCL 2.19 takes 0.7 of the bus (one HDR NIC, 23.5 GB/s as
  // NCCL carries it), 2.23+ 0.92, under one channel's 20 GB/s LL128 cap.
  CollectiveCall ll128 = all_reduce(1LL << 30);
  ll128.algo = CollAlgo::Ring;
  ll128.proto = CollProto::LL128;
  EXPECT_NEAR(predict_collective(c, ll128, pair).algbw_gbps, 0.7 * 23.5, 1e-9);
  ll128.nccl_version = 22304;
  EXPECT_NEAR(predict_collective(c, ll128, pair).algbw_gbps, 20.0, 1e-9);
}

TEST(Collective, TunerPicksLowLatencyForSmallAndSimpleForLarge) {
  const Cluster c = load_cluster("dgx-a100");
  const CollectivePrediction small = predict_collective(c, all_reduce(8), c.gpus());
  EXPECT_NE(small.proto, CollProto::Simple);
  const CollectivePrediction large = predict_collective(c, all_reduce(1LL << 32), c.gpus());
  EXPECT_EQ(large.proto, CollProto::Simple);
  // Forcing a protocol never beats the tuner's choice.
  for (CollProto p : {CollProto::LL, CollProto::LL128, CollProto::Simple}) {
    CollectiveCall call = all_reduce(1 << 20);
    const Duration best = predict_collective(c, call, c.gpus()).time;
    call.proto = p;
    EXPECT_GE(predict_collective(c, call, c.gpus()).time, best);
  }
  // Time grows with size.
  Duration prev{0};
  for (std::int64_t b = 8; b <= (1LL << 33); b *= 4) {
    const Duration t = predict_collective(c, all_reduce(b), c.gpus()).time;
    EXPECT_GE(t, prev) << b;
    prev = t;
  }
}

TEST(Collective, NvlsOnlyWhereAnNvlink4SwitchReducesInPlace) {
  const Cluster h = load_cluster("hgx-h100");
  const CollectivePrediction p = predict_collective(h, all_reduce(1LL << 32), h.gpus());
  EXPECT_EQ(p.algo, CollAlgo::Nvls);
  const Cluster a = load_cluster("dgx-a100");
  CollectiveCall call = all_reduce(1 << 20);
  call.algo = CollAlgo::Nvls;
  EXPECT_THROW(predict_collective(a, call, a.gpus()), InputError);
}

// NCCL's ring LL bandwidth for all-reduce is a quarter of the bus bandwidth (NCCL 2.19's
// tuning.cc), at most llMaxBw: 240 / 4 = 60 GB/s bus on DGX A100, x 8 / 14 as algbw.
TEST(Collective, RingLlIsAQuarterOfTheBus) {
  const Cluster a = load_cluster("dgx-a100");
  CollectiveCall call = all_reduce(512 << 10);
  call.algo = CollAlgo::Ring;
  call.proto = CollProto::LL;
  EXPECT_NEAR(predict_collective(a, call, a.gpus()).algbw_gbps, 60.0 * 8 / 14, 1e-9);
}

// Across nodes NCCL's LL buffers live in host memory (src/transport/net.cc maps LL to device memory
// never, NVIDIA/nccl#756), and the receiving GPU reads one 8 B LL payload per thread per PCIe round
// trip (~0.85 us): 512 x 8 B / 0.85 us = 4.82 GB/s per channel. A 256 KiB all-gather on 2 nodes of
// 8 H100 (16 ranks; ring LL wants 8 B x 16 x 512 = 64 KiB per channel: 4 channels) still runs
// ring/LL, as NCCL's uncapped estimate chooses, at 4 x 4.82 GB/s bus; one node keeps its NVLink LL.
// A 4 KiB tree/LL all-reduce on 2 DGX A100 (one tree channel) runs at 4.82 GB/s algbw.
TEST(Collective, LlAcrossNodesRunsThroughHostMemory) {
  const double per_channel = 512 * 8.0 / 850.0;
  const Cluster h2 =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/calibration/2x-hgx-h100.yaml");
  CollectiveCall ag;
  ag.kind = CollectiveKind::AllGather;
  ag.bytes = Bytes{256 << 10};
  const CollectivePrediction p = predict_collective(h2, ag, h2.gpus());
  EXPECT_EQ(p.algo, CollAlgo::Ring);
  EXPECT_EQ(p.proto, CollProto::LL);
  EXPECT_NEAR(p.algbw_gbps, 4 * per_channel * 16 / 15, 1e-9);

  const Cluster h1 = load_cluster("hgx-h100");
  ag.proto = CollProto::LL;
  EXPECT_GT(predict_collective(h1, ag, h1.gpus()).algbw_gbps, 10 * per_channel);

  const Cluster a2 = load_cluster("2x-dgx-a100");
  CollectiveCall tree = all_reduce(4 << 10);
  tree.algo = CollAlgo::Tree;
  tree.proto = CollProto::LL;
  EXPECT_NEAR(predict_collective(a2, tree, a2.gpus()).algbw_gbps, per_channel, 1e-9);
}

// A Simple ring channel across nodes is one CTA, which on Hopper moves at most 20.3 GB/s of the
// ring's bus bandwidth, and NCCL 2.20+ runs 16 of them on nodes of 8 GPUs and 8 NICs
// (connect.cc doubles "to reach peak BW on <8 PPN" only while nChannels < 16; NVIDIA's
// nccl-tests#309: NCCL_MIN_CTAS=24 to pass 380 GB/s on 8 x 400 Gb/s). An 8 GiB all-gather on 2
// nodes of 8 H100 under NCCL 2.26 runs its ring at 16 x 20.3 GB/s bus, not the NICs' 8 x 48.5;
// under NCCL 2.19 (more channels: NVIDIA/nccl#1222) and on Blackwell the NICs bound it as before.
TEST(Collective, HopperSimpleRingsAcrossNodesRunSixteenChannelsOfOneCta) {
  const Cluster h2 =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/calibration/2x-hgx-h100.yaml");
  CollectiveCall ag;
  ag.kind = CollectiveKind::AllGather;
  ag.bytes = Bytes{8ULL << 30};
  ag.nccl_version = 22606;
  const CollectivePrediction p = predict_collective(h2, ag, h2.gpus());
  EXPECT_EQ(p.algo, CollAlgo::Ring);
  EXPECT_EQ(p.proto, CollProto::Simple);
  EXPECT_NEAR(p.algbw_gbps * 15 / 16, 16 * 20.3, 1e-9);
  ag.nccl_version = 21903;
  EXPECT_GT(predict_collective(h2, ag, h2.gpus()).algbw_gbps * 15 / 16, 370.0);
  const Cluster b2 =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/2x-hgx-b200.yaml");
  ag.nccl_version = 22606;
  ag.algo = CollAlgo::Ring;
  EXPECT_GT(predict_collective(b2, ag, b2.gpus()).algbw_gbps * 15 / 16, 370.0);
}

// That rate is per slice: a channel's one CTA pays a fixed cost per slice beside the slice's bytes
// at its share of the NICs (8 x 48.5 / 16 = 24.25 GB/s on the nodes the 20.3 was fitted on), and a
// broadcast or reduce chain's slice is one 512 KiB step where a ring's is two (NVIDIA/nccl#391).
// On 4 nodes of 8 H100 under NCCL 2.24 an 8 GiB broadcast or reduce runs its channels at
// 512 KiB / (1 MiB / 20.3 - 1 MiB / 24.25 + 512 KiB / 24.25) = 17.5 GB/s, the ring all-gather at
// 20.3; under NCCL 2.19 neither is capped.
TEST(Collective, HopperSimpleChainsAcrossNodesMoveHalfARingsSlice) {
  const Cluster h4 =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/4x-hgx-h100.yaml");
  const double mib = 1 << 20, share = 8 * 48.5 / 16;
  const double slice_us = mib / (1e3 * 20.3) - mib / (1e3 * share);
  const double chain = mib / 2 / (1e3 * (slice_us + mib / 2 / (1e3 * share)));
  EXPECT_NEAR(chain, 17.46, 0.01);
  CollectiveCall call;
  call.bytes = Bytes{8ULL << 30};
  call.nccl_version = 22403;
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    call.kind = kind;
    const CollectivePrediction p = predict_collective(h4, call, h4.gpus());
    EXPECT_EQ(p.algo, CollAlgo::Ring);
    EXPECT_EQ(p.proto, CollProto::Simple);
    EXPECT_NEAR(p.algbw_gbps, 16 * chain, 1e-6);
  }
  call.kind = CollectiveKind::AllGather;
  EXPECT_NEAR(predict_collective(h4, call, h4.gpus()).algbw_gbps * 31 / 32, 16 * 20.3, 1e-9);
  call.kind = CollectiveKind::Broadcast;
  call.nccl_version = 21903;
  EXPECT_GT(predict_collective(h4, call, h4.gpus()).algbw_gbps, 16 * 20.3);
}

// NVLS_TREE across nodes sends each of its nvlsChannels CTAs' share to the network, and on Hopper
// under NCCL 2.20+ one CTA moves at most 20.3 GB/s there (the ring's rate above): on 4 nodes of 8
// H100 (the tree's bwInter / 2) a 1 GiB all-reduce under NCCL 2.24 runs NVLS_TREE, as NCCL's
// uncapped estimate chooses, at 16 x 20.3 / 2 GB/s algbw; under 2.19 the NICs bound it (8 x 48.5
// / 2); on 2 nodes the node's NVLS (0.9 x 275) stays under 16 x 20.3 and nothing moves.
TEST(Collective, NvlsTreesAcrossHopperNodesRunTheirChannelsAtTheRingsRate) {
  const Cluster h4 =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/4x-hgx-h100.yaml");
  CollectiveCall call = all_reduce(1ULL << 30);
  call.nccl_version = 22403;
  const CollectivePrediction p = predict_collective(h4, call, h4.gpus());
  EXPECT_EQ(p.algo, CollAlgo::Nvls);
  EXPECT_NEAR(p.algbw_gbps, 16 * 20.3 / 2, 1e-9);
  call.nccl_version = 21903;
  EXPECT_GT(predict_collective(h4, call, h4.gpus()).algbw_gbps, 185.0);
  const Cluster h2 =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/calibration/2x-hgx-h100.yaml");
  call.nccl_version = 22606;
  const double v226 = predict_collective(h2, call, h2.gpus()).algbw_gbps;
  call.nccl_version = 21903;
  EXPECT_EQ(v226, predict_collective(h2, call, h2.gpus()).algbw_gbps);
}

// A tree LL call across nodes holds one chunk at every network hop (the proxy posts an LL step once
// every line's flags are set, net.cc sendProxyProgress): the channel's share, at most one LL step
// (8 lines x 512 threads x 8 B = 32 KiB), at one channel's LL rate across nodes (512 x 8 B per
// 850 ns). On 8 ABCI nodes (Intel hosts, 4 NICs: 8 channels) the tree has 2 log2(8) = 6 network
// hops: an 8 KiB call on 2 channels holds 6 x 4 KiB, a forced 1 MiB LL call 6 x 32 KiB, beyond
// NCCL's tree latency (6.8 us + 2 (7 chain steps x 1 us + 3 network hops x 5 us)); the tuner's
// choice does not see it. One node holds nothing.
TEST(Collective, LlTreesAcrossNodesHoldAChunkAtEveryNetworkHop) {
  const double per_channel = 512 * 8.0 / 850.0;  // GB/s
  const Cluster c =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/8x-abci-anode.yaml");
  CollectiveCall call = all_reduce(8 << 10);
  const CollectivePrediction p = predict_collective(c, call, c.gpus());
  ASSERT_EQ(p.algo, CollAlgo::Tree);
  ASSERT_EQ(p.proto, CollProto::LL);
  const double nccl_lat = 6.8 + 2 * (7 * 1.0 + 3 * 5.0);
  EXPECT_NEAR(p.latency_us, nccl_lat + 6 * 4096 / (1e3 * per_channel), 1e-9);
  call = all_reduce(1 << 20);
  call.algo = CollAlgo::Tree;
  call.proto = CollProto::LL;
  EXPECT_NEAR(predict_collective(c, call, c.gpus()).latency_us,
              nccl_lat + 6 * 32768 / (1e3 * per_channel), 1e-9);
  const Cluster one = load_cluster("dgx-a100");
  call = all_reduce(8 << 10);
  call.algo = CollAlgo::Tree;
  call.proto = CollProto::LL;
  EXPECT_NEAR(predict_collective(one, call, one.gpus()).latency_us, 6.8 + 2 * 7 * 0.6, 1e-9);
}

// A broadcast or reduce ring across nodes is a chain (broadcast.h, reduce.h): on 4 nodes of 8 H100
// its 31 hops hold LL128 data for NCCL's per-hop latency (27 NVLink hops x 1.9 us, 4 network hops
// x 4.0 us, of which NCCL's tuner charges one), and each network hop holds one chunk (the
// channel's share, at most one LL128 step's 576,000 B of data) at the channel's rate. LL (8 B
// lines) keeps NCCL's one hop; one node keeps one hop for every protocol.
TEST(Collective, RootedRingsAcrossNodesAreChains) {
  const Cluster c = load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/4x-hgx-h100.yaml");
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    CollectiveCall call;
    call.kind = kind;
    call.bytes = Bytes{1 << 20};
    const CollectivePrediction p = predict_collective(c, call, c.gpus());
    ASSERT_EQ(p.algo, CollAlgo::Ring);
    ASSERT_EQ(p.proto, CollProto::LL128);
    EXPECT_NEAR(p.latency_us,
                14.0 + 4.0 + 27 * 1.9 + 3 * 4.0 + 4 * (1 << 20) / (1e3 * p.algbw_gbps), 1e-9);
    // 64 MiB on 16 channels is 4 MiB each, more than a step: each network hop holds one step.
    call.bytes = Bytes{64LL << 20};
    call.proto = CollProto::LL128;
    const CollectivePrediction big = predict_collective(c, call, c.gpus());
    EXPECT_NEAR(
        big.latency_us,
        18.0 + 27 * 1.9 + 3 * 4.0 + 4 * 120.0 * 640 * 8 * 120 / 128 / (1e3 * big.algbw_gbps / 16),
        1e-9);
    call.bytes = Bytes{8 << 10};
    call.proto = CollProto::LL;
    EXPECT_NEAR(predict_collective(c, call, c.gpus()).latency_us, 6.6 + 2.7, 1e-9);
  }
  const Cluster h = load_cluster("hgx-h100");
  CollectiveCall one;
  one.kind = CollectiveKind::Broadcast;
  one.bytes = Bytes{1 << 20};
  one.proto = CollProto::LL128;
  EXPECT_NEAR(predict_collective(h, one, h.gpus()).latency_us, 14.0 + 1.9, 1e-9);
}

// NCCL runs a small call on fewer channels (64 B per thread, 512 threads: 32 KiB per Simple
// channel): a 64 KiB Simple ring on DGX A100's 24 channels uses 2, a twelfth of the bus; and
// Simple's last slice trails the first by one slice (half a chunk of 64 KiB / (2 x 8)).
TEST(Collective, SmallSimpleCallsRunOnFewerChannels) {
  const Cluster a = load_cluster("dgx-a100");
  CollectiveCall call = all_reduce(64 << 10);
  call.algo = CollAlgo::Ring;
  call.proto = CollProto::Simple;
  const CollectivePrediction p = predict_collective(a, call, a.gpus());
  EXPECT_NEAR(p.algbw_gbps, 240.0 * 2 / 24 * 8 / 14, 1e-9);
  EXPECT_NEAR(p.fill_us, (64 << 10) / 16.0 / 2 / (1e3 * 240.0 / 24), 1e-9);
}

// NCCL's "plateau effect of ring" (x1.4 on Ampere+ for a multi-node Simple ring all-reduce's
// latency) starts once each rank's share of each channel is 64 B (NCCL 2.19 tuning.cc,
// nBytes / (nChannels x nRanks) >= 64): on 2x DGX A100 (16 ranks, 16 channels) at 16 KiB, not at
// 1 KiB (64 B per rank, which the model used to take).
TEST(Collective, RingPlateauStartsAt64BytesPerRankAndChannel) {
  const Cluster c = load_cluster("2x-dgx-a100");
  auto latency = [&](std::int64_t bytes) {
    CollectiveCall call = all_reduce(bytes);
    call.algo = CollAlgo::Ring;
    call.proto = CollProto::Simple;
    return predict_collective(c, call, c.gpus()).latency_us;
  };
  EXPECT_NEAR(latency(8 << 10), latency(1 << 10), 1e-9);
  EXPECT_NEAR(latency(16 << 10), 1.4 * latency(8 << 10), 1e-9);
  EXPECT_NEAR(latency(1 << 20), latency(16 << 10), 1e-9);
}

// NVLS moves rounds of 16 channels x 8 heads chunks (64 KiB each for 64 MiB..1 GiB) through a
// 2-stage pipeline: one round of fill at the NVLS bandwidth (275/370 of 450 x 20.6/25 GB/s).
TEST(Collective, NvlsFillsItsPipelineWithOneRoundOfChunks) {
  const Cluster h = load_cluster("hgx-h100");
  const CollectivePrediction p = predict_collective(h, all_reduce(64LL << 20), h.gpus());
  ASSERT_EQ(p.algo, CollAlgo::Nvls);
  const double algbw = 450 * 20.6 / 25 * 275 / 370;
  EXPECT_NEAR(p.algbw_gbps, algbw, 1e-6);
  EXPECT_NEAR(p.fill_us, 128.0 * 65536 / (1e3 * algbw), 1e-6);
}

// DGX-1's hybrid cube mesh: no ring in rank order is all NVLink, NCCL's rings are. Six NVLink 2
// links per GPU at NCCL's 20 GB/s each: 120 GB/s of ring bus bandwidth, with LL128 (NVLink).
TEST(Collective, HybridCubeMeshRingsStayOnNvlink) {
  const Cluster d = load_cluster("dgx1-v100");
  const CollectivePrediction p = predict_collective(d, all_reduce(1LL << 30), d.gpus());
  EXPECT_NEAR(p.fabric_busbw_gbps, 120.0, 0.5);
  EXPECT_GT(p.channels, 1);
  CollectiveCall ll128 = all_reduce(8 << 20);
  ll128.proto = CollProto::LL128;
  EXPECT_NO_THROW(predict_collective(d, ll128, d.gpus()));
}

// Across nodes every node's GPUs on an NVLink 4 switch allow NVLS_TREE (reported as nvls).
// P2P disabled: every ring hop goes up the sender's PCIe path into the receiver's CPU memory and
// down to the receiver, never over NVLink (docs/collectives.md, "P2P disabled").
TEST(Collective, P2pOffRoutesEveryHopThroughTheReceiversCpu) {
  const Cluster with = load_cluster("dgx-a100");
  Cluster c = with;  // NCCL_P2P_DISABLE=1 as `collective --p2p off` applies it: no peer access
  for (auto& row : c.peer_access) std::fill(row.begin(), row.end(), false);
  compute_routes(c);
  CollectiveCall call;
  call.bytes = Bytes{256 << 20};
  const std::vector<std::vector<Hop>> routes = collective_routes(c, call, c.gpus());
  ASSERT_EQ(routes.size(), 8u);
  for (const std::vector<Hop>& r : routes) {
    bool cpu = false;
    for (const Hop& h : r) {
      const Link& l = c.links[h.link];
      EXPECT_EQ(l.kind.rfind("nvlink", 0), std::string::npos) << l.kind;
      cpu = cpu || l.kind == "membus";
    }
    EXPECT_TRUE(cpu);
  }
  const CollectivePrediction off = predict_collective(c, call, c.gpus());
  EXPECT_LT(predict_collective(with, call, with.gpus()).time.ns * 10, off.time.ns);
  EXPECT_EQ(off.algo, CollAlgo::Ring);
}

// A rooted ring (broadcast, reduce) is a chain: the root's predecessor only receives
// (src/device/broadcast.h, reduce.h), so the ring's closing edge takes no share of the links. Two
// GPUs behind one PCIe 3.0 switch without peer access (the held-out AutoDL 2x RTX 2080 Ti runs,
// docs/validation.md "nccl-tests on a PCIe machine without P2P"): the all-reduce's two SHM flows
// each cross the switch's uplink both ways, half of NCCL's 12 GB/s each; the broadcast's one flow
// has it whole. Both at the SHM transport's 3/4.
TEST(Collective, RootedRingOverShmLeavesTheClosingEdgeIdle) {
  const Cluster c =
      load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/autodl-2x2080ti.yaml");
  const CollectivePrediction ar = predict_collective(c, all_reduce(1LL << 30), c.gpus());
  EXPECT_NEAR(ar.fabric_busbw_gbps, 12.0 / 2 * 0.75, 1e-6);
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    for (int root : {0, 1}) {
      CollectiveCall call = all_reduce(1LL << 30);
      call.kind = kind;
      call.root = root;
      const CollectivePrediction p = predict_collective(c, call, c.gpus());
      EXPECT_NEAR(p.fabric_busbw_gbps, 12.0 * 0.75, 1e-6) << to_string(kind) << " root " << root;
    }
  }
}

TEST(Collective, NvlsTreeAcrossNodesOfNvSwitches) {
  const Cluster c = load_cluster(std::string(PLACESIM_TEST_DATA) + "/calibration/2x-hgx-h100.yaml");
  const CollectivePrediction p = predict_collective(c, all_reduce(8LL << 30), c.gpus());
  EXPECT_EQ(p.algo, CollAlgo::Nvls);
  EXPECT_EQ(p.nodes, 2);
  EXPECT_NEAR(p.algbw_gbps, 450 * 20.6 / 25 * 275 / 370 * 0.9, 1e-6);
}

// NVLS_TREE's chunk (calcCollChunking): NCCL 2.19 starts from one Simple step (512 KiB), NCCL
// 2.23+ from nvlsChunkSize (128 KiB), and from 4 nodes both at most 64 KiB. A 2 GiB call on 2
// nodes of 8 H100 keeps its starting chunk; the fill is two rounds of 16 channels x 8 heads chunks.
TEST(Collective, NvlsTreeChunkFollowsTheNcclVersion) {
  const std::string data = PLACESIM_TEST_DATA;
  const Cluster c = load_cluster(data + "/calibration/2x-hgx-h100.yaml");
  CollectiveCall call = all_reduce(2LL << 30);
  call.nccl_version = 21900;
  const CollectivePrediction old = predict_collective(c, call, c.gpus());
  ASSERT_EQ(old.algo, CollAlgo::Nvls);
  EXPECT_NEAR(old.fill_us, 2 * 128.0 * 524288 / (1e3 * old.algbw_gbps), 1e-6);
  call.nccl_version = 22602;
  const CollectivePrediction now = predict_collective(c, call, c.gpus());
  EXPECT_NEAR(now.fill_us, 2 * 128.0 * 131072 / (1e3 * now.algbw_gbps), 1e-6);
  const Cluster four = load_cluster(data + "/collectives/4x-hgx-h100.yaml");
  call.algo = CollAlgo::Nvls;  // 4 nodes: the ring is faster at 2 GiB (NVLS_TREE at half the NICs)
  const CollectivePrediction p4 = predict_collective(four, call, four.gpus());
  ASSERT_EQ(p4.algo, CollAlgo::Nvls);
  ASSERT_EQ(p4.nodes, 4);
  EXPECT_NEAR(p4.fill_us, 2 * 128.0 * 65536 / (1e3 * p4.algbw_gbps), 1e-6);
}

// Blackwell runs 32 NVLS channels across nodes and 24 on one node (nvls.cc, NVLS_NCHANNELS_SM100
// and _SM100_NVL), Hopper 16: the rounds, and so the fill, grow with them.
TEST(Collective, NvlsChannelsOnBlackwell) {
  const Cluster b = load_cluster(std::string(PLACESIM_TEST_DATA) + "/collectives/2x-hgx-b200.yaml");
  CollectiveCall call = all_reduce(128LL << 20);
  call.nccl_version = 22602;
  const CollectivePrediction two = predict_collective(b, call, b.gpus());
  ASSERT_EQ(two.algo, CollAlgo::Nvls);
  EXPECT_NEAR(two.fill_us, 2 * 32.0 * 8 * 131072 / (1e3 * two.algbw_gbps), 1e-6);
  const std::vector<DeviceId> gpus = b.gpus();
  const std::vector<DeviceId> node0(gpus.begin(), gpus.begin() + 8);
  const CollectivePrediction one = predict_collective(b, all_reduce(1LL << 30), node0);
  ASSERT_EQ(one.algo, CollAlgo::Nvls);
  ASSERT_EQ(one.nodes, 1);
  EXPECT_NEAR(one.fill_us, 24.0 * 8 * 65536 / (1e3 * one.algbw_gbps), 1e-6);
}

// NCCL's GPU generation (its tables' compCapIndex) and Blackwell (NVLS channels) come from the
// device's architecture: a GPU as nvidia-smi prints it, or renamed, is its catalog twin; a GPU
// without an NVIDIA compute capability counts as Volta (0) and not Blackwell.
TEST(Collective, GenerationIsTheArchitecturesNotTheModelNames) {
  const auto spec = [](const char* m) {
    const DeviceSpec* s = find_device_model(m);
    EXPECT_NE(s, nullptr) << m;
    return s != nullptr ? *s : DeviceSpec{};
  };
  for (const auto& [printed, twin] :
       {std::pair{"NVIDIA B200", "B200-SXM-180GB"}, std::pair{"GB200", "GB200-186GB"},
        std::pair{"NVIDIA GB300", "GB300-288GB"}, std::pair{"NVIDIA H200 NVL", "H200-NVL-141GB"},
        std::pair{"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},
        std::pair{"NVIDIA RTX A6000", "RTX-A6000"},
        std::pair{"NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada-48GB"},
        std::pair{"Tesla V100-SXM2-16GB", "V100-SXM2-16GB"}}) {
    EXPECT_EQ(nccl_gpu_generation(spec(printed)), nccl_gpu_generation(spec(twin))) << printed;
    EXPECT_EQ(nccl_blackwell(spec(printed)), nccl_blackwell(spec(twin))) << printed;
  }
  const std::map<std::string, int> generation = {
      {"K80-GK210", 0},    {"V100-SXM2-16GB", 0}, {"T4-16GB", 0},        {"A100-SXM4-40GB", 1},
      {"A10-24GB", 1},     {"RTX-A6000", 1},      {"L40S-48GB", 1},      {"RTX-6000-Ada-48GB", 1},
      {"H20-SXM-96GB", 2}, {"H200-NVL-141GB", 2}, {"B200-SXM-180GB", 2}, {"GB300-288GB", 2},
      {"MI300X-192GB", 0}};
  for (const auto& [m, g] : generation) EXPECT_EQ(nccl_gpu_generation(spec(m.c_str())), g) << m;
  for (const char* m : {"B200-SXM-180GB", "GB200-186GB", "GB300-288GB"})
    EXPECT_TRUE(nccl_blackwell(spec(m))) << m;
  for (const char* m : {"H200-SXM-141GB", "H100-NVL-94GB", "MI300X-192GB"})
    EXPECT_FALSE(nccl_blackwell(spec(m))) << m;
  // A renamed model keeps its generation; explicit specs without `arch` take the default.
  DeviceSpec renamed = spec("H100-SXM5-80GB");
  renamed.model = "my-favourite-gpu";
  EXPECT_EQ(nccl_gpu_generation(renamed), 2);
  DeviceSpec custom;
  custom.model = "custom";
  EXPECT_EQ(nccl_gpu_generation(custom), 0);
  EXPECT_FALSE(nccl_blackwell(custom));
  // End to end: eight H100s renamed still run NVLS; without an architecture they do not.
  Cluster h = load_cluster("hgx-h100");
  for (const DeviceId g : h.gpus()) h.devices[g].spec.model = "renamed";
  EXPECT_EQ(predict_collective(h, all_reduce(1LL << 32), h.gpus()).algo, CollAlgo::Nvls);
  for (const DeviceId g : h.gpus()) h.devices[g].spec.arch = GpuArch{};
  EXPECT_NE(predict_collective(h, all_reduce(1LL << 32), h.gpus()).algo, CollAlgo::Nvls);
}

TEST(Collective, OtherCollectivesAndErrors) {
  const Cluster c = load_cluster("dgx-a100");
  for (CollectiveKind k :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::Broadcast,
        CollectiveKind::Reduce, CollectiveKind::AllToAll}) {
    CollectiveCall call;
    call.kind = k;
    call.bytes = Bytes{1LL << 28};
    const CollectivePrediction p = predict_collective(c, call, c.gpus());
    const double busbw = (1LL << 28) / p.time.seconds() * bus_factor(k, 8) / 1e9;
    EXPECT_GT(busbw, 100.0) << to_string(k);
    EXPECT_LT(busbw, 300.0) << to_string(k);
  }
  CollectiveCall sr;
  sr.kind = CollectiveKind::SendRecv;
  sr.bytes = Bytes{1LL << 30};
  const auto g = c.gpus();
  const CollectivePrediction p = predict_collective(c, sr, {g[0], g[1]});
  EXPECT_NEAR((1LL << 30) / p.time.seconds() / 1e9, 240.0, 5.0);
  EXPECT_THROW(predict_collective(c, sr, g), InputError);                        // 8 ranks
  EXPECT_THROW(predict_collective(c, all_reduce(8), {g[0], g[0]}), InputError);  // twice
  EXPECT_THROW(predict_collective(c, all_reduce(8), {c.device_index("cpu0")}), InputError);
}

// Two ranks of one all-reduce in a graph: rank 1's input is ready 100 us after rank 0's, and
// both rank ops end together, the collective's time after the later input (NCCL's kernels
// wait for their peers); the ops after it on stream 0 wait for it, the others do not.
TEST(Collective, RankOpsInAGraphStartTogetherOnTheNcclStream) {
  const Cluster c = testing::star_cluster(2, "100 GB/s");
  Graph g;
  const OpId a = g.add_op(testing::timed_op("a", 10, 1 << 20));
  const OpId b = g.add_op(testing::timed_op("b", 110, 1 << 20));
  Op r0 = testing::timed_op("ar0", 0, 1 << 20, {a});
  Op r1 = testing::timed_op("ar1", 0, 1 << 20, {b});
  r0.measured.reset();
  r1.measured.reset();
  r0.collective = all_reduce(1 << 20);
  r0.collective->id = "x";
  r1.collective = r0.collective;
  const OpId i0 = g.add_op(std::move(r0));
  g.add_op(std::move(r1));
  g.add_op(testing::timed_op("after0", 5, 4, {i0}));
  g.add_op(testing::timed_op("free0", 500, 4, {a}));
  g.finalize();
  const DeviceId g0 = c.device_index("gpu0"), g1 = c.device_index("gpu1");
  const Placement p{{g0, g1, g0, g1, g0, g0}};
  const ExpandedGraph x = expand_collectives(c, g, p);
  EXPECT_EQ(x.cluster.devices[g0].spec.compute_streams, 2);
  EXPECT_FALSE(x.graph.ops[i0].stream.has_value());  // the engine runs calls beside the streams
  EXPECT_EQ(x.graph.ops[0].stream, 0);
  const CollectivePrediction pred = predict_collective(c, *g.ops[i0].collective, {g0, g1});
  EXPECT_EQ(x.graph.ops[i0].measured, pred.time);
  ASSERT_EQ(x.calls.size(), 1u);
  EXPECT_EQ(x.call_of_op[i0], 0);
  EXPECT_EQ(x.call_of_op[0], -1);
  EXPECT_EQ(x.calls[0].fixed, pred.fixed);
  EXPECT_EQ(x.calls[0].routes.size(), 2u);  // the ring gpu0 -> gpu1 -> gpu0
  const Outcome o = simulate(c, g, p);
  // gpu0: a (launch 2 us + 10 us) then free0 (500 us) on stream 0; the all-reduce on stream 1
  // after b ends on gpu1 (2 + 110 us); after0 after the all-reduce; the step ends with free0.
  EXPECT_GE(o.step_time.ns, 2000 + 10000 + 500000);
  EXPECT_FALSE(o.oom);
  // A placement with both ranks on one GPU is refused.
  EXPECT_THROW(simulate(c, g, Placement{{g0, g1, g0, g0, g0, g0}}), InputError);
  // Bit-identical through the batch oracle.
  BatchOracle oracle(c, g);
  EXPECT_EQ(oracle.evaluate(p).step_time, o.step_time);
  EXPECT_EQ(oracle.evaluate(std::vector<Placement>{p, p}, 2)[1].step_time, o.step_time);
}

// A graph of one call over `ranks`: rank k's op (no inputs) on ranks[k]; `extra` more calls of
// the same kind and size over `extra_ranks` with ids "y<i>".
Graph call_graph(const CollectiveCall& call, int n, int extra = 0, int extra_n = 0) {
  Graph g;
  for (int k = 0; k < n; ++k) {
    Op r = testing::timed_op("x" + std::to_string(k), 0, 64);
    r.measured.reset();
    r.collective = call;
    r.collective->id = "x";
    g.add_op(std::move(r));
  }
  for (int e = 0; e < extra; ++e)
    for (int k = 0; k < extra_n; ++k) {
      Op r = testing::timed_op("y" + std::to_string(e) + "." + std::to_string(k), 0, 64);
      r.measured.reset();
      r.collective = call;
      r.collective->id = "y" + std::to_string(e);
      g.add_op(std::move(r));
    }
  g.finalize();
  return g;
}

// A call alone in a step takes what `placesim collective` predicts (after the host launch): its
// flows, alone on the fabric, end when the model's bandwidth phase does.
TEST(Collective, ALoneCallInTheEngineTakesThePredictedTime) {
  for (const char* name : {"dgx-a100", "hgx-h100", "2x-dgx-a100", "pcie-4090x8", "dgx1-v100"}) {
    const Cluster c = load_cluster(name);
    const std::vector<DeviceId> gpus = c.gpus();
    const int n = static_cast<int>(gpus.size());
    for (CollectiveKind kind :
         {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::AllToAll})
      for (std::int64_t bytes : {std::int64_t{8} << 10, std::int64_t{1} << 20,
                                 std::int64_t{64} << 20, std::int64_t{1} << 30}) {
        CollectiveCall call = all_reduce(bytes);
        call.kind = kind;
        const Graph g = call_graph(call, n);
        const Placement p{gpus};
        const CollectivePrediction pred = predict_collective(c, call, gpus);
        const std::int64_t want = c.devices[gpus[0]].spec.launch_overhead.ns + pred.time.ns;
        const Outcome o = simulate(c, g, p);
        SCOPED_TRACE(std::string(name) + " " + to_string(kind) + " " + std::to_string(bytes));
        EXPECT_NEAR(static_cast<double>(o.step_time.ns), static_cast<double>(want),
                    2.0 + 1e-6 * static_cast<double>(want));
      }
  }
}

// A cluster's nccl_version reaches every call simulated on it that names none: a graph's
// all-reduce on two DGX A100 with `nccl_version: 2.26.2` takes 2.23+'s tables (tree Simple latency
// 120.4 us, not 448; an auto-tuned 32 MiB call: ring network steps 2 (nNodes - 1), not 2 nNodes)
// and ends when the same call with the version of its own does; the call's own version wins over
// the cluster's.
TEST(Collective, GraphCallsTakeTheirClustersNcclVersion) {
  const Cluster base = load_cluster("2x-dgx-a100");
  Cluster v226 = base;
  v226.nccl_version = 22602;
  const std::vector<DeviceId> gpus = base.gpus();
  const int n = static_cast<int>(gpus.size());
  CollectiveCall tree = all_reduce(1LL << 30);
  tree.algo = CollAlgo::Tree;
  tree.proto = CollProto::Simple;
  EXPECT_NEAR(predict_collective(v226, tree, gpus).latency_us, 120.4, 1e-9);
  CollectiveCall pinned = tree;
  pinned.nccl_version = kDefaultNcclVersion;  // the call's own version over the cluster's
  EXPECT_NEAR(predict_collective(v226, pinned, gpus).latency_us, 448.0, 1e-9);
  for (const CollectiveCall& call : {tree, all_reduce(std::int64_t{32} << 20)}) {
    CollectiveCall own = call;
    own.nccl_version = 22602;
    const Graph g = call_graph(call, n);
    const std::int64_t launch = base.devices[gpus[0]].spec.launch_overhead.ns;
    const std::int64_t want = launch + predict_collective(base, own, gpus).time.ns;
    const std::int64_t old = launch + predict_collective(base, call, gpus).time.ns;
    ASSERT_NE(want, old) << "a call whose versions agree tests nothing";
    const Outcome o = simulate(v226, g, Placement{gpus});
    EXPECT_NEAR(static_cast<double>(o.step_time.ns), static_cast<double>(want),
                2.0 + 1e-6 * static_cast<double>(want));
    EXPECT_NEAR(static_cast<double>(simulate(base, g, Placement{gpus}).step_time.ns),
                static_cast<double>(old), 2.0 + 1e-6 * static_cast<double>(old));
  }
}

// Calls that share links slow each other; calls on disjoint links do not.
TEST(Collective, CallsSharingLinksSlowEachOther) {
  const Cluster c = load_cluster("dgx-a100");
  const std::vector<DeviceId> gpus = c.gpus();
  const CollectiveCall call = all_reduce(std::int64_t{256} << 20);
  const CollectivePrediction pred = predict_collective(c, call, gpus);
  const std::int64_t launch = c.devices[gpus[0]].spec.launch_overhead.ns;
  const std::int64_t phase = pred.time.ns - pred.fixed.ns;
  ASSERT_GT(phase, pred.time.ns / 2);
  // Two calls on the same 8 GPUs, both ready at once: one process group, one NCCL stream, so the
  // second runs after the first (not beside it at half of every port): each takes its time
  // alone, the second's launch waiting for the first's end.
  {
    const Graph g = call_graph(call, 8, 1, 8);
    std::vector<DeviceId> dev(gpus);
    dev.insert(dev.end(), gpus.begin(), gpus.end());
    const Outcome o = simulate(c, g, Placement{dev});
    EXPECT_GE(o.step_time.ns, launch + 2 * pred.time.ns - 2);
    EXPECT_LE(o.step_time.ns, 2 * launch + 2 * pred.time.ns + 2);
  }
  // Two 4-GPU calls on disjoint GPUs of the switch: no shared port, each as fast as alone.
  {
    const std::vector<DeviceId> lo(gpus.begin(), gpus.begin() + 4),
        hi(gpus.begin() + 4, gpus.end());
    const Graph g = call_graph(call, 4, 1, 4);
    std::vector<DeviceId> dev(lo);
    dev.insert(dev.end(), hi.begin(), hi.end());
    const Outcome o = simulate(c, g, Placement{dev});
    EXPECT_EQ(o.step_time.ns, launch + predict_collective(c, call, lo).time.ns);
  }
}

// Latency-bound calls show the queue: two 8 KiB all-reduces of one process group take twice one
// call's time; the same two calls in two groups (the second over 7 of the 8 GPUs) overlap.
TEST(Collective, CallsOfOneProcessGroupQueueOnItsStream) {
  const Cluster c = load_cluster("dgx-a100");
  const std::vector<DeviceId> gpus = c.gpus();
  const CollectiveCall call = all_reduce(8192);
  const std::vector<DeviceId> seven(gpus.begin(), gpus.end() - 1);
  const std::int64_t t8 = predict_collective(c, call, gpus).time.ns;
  const std::int64_t t7 = predict_collective(c, call, seven).time.ns;
  const std::int64_t launch = c.devices[gpus[0]].spec.launch_overhead.ns;
  std::vector<DeviceId> same(gpus);
  same.insert(same.end(), gpus.begin(), gpus.end());
  const Outcome queued = simulate(c, call_graph(call, 8, 1, 8), Placement{same});
  EXPECT_GE(queued.step_time.ns, launch + 2 * t8 - 2);
  EXPECT_LE(queued.step_time.ns, 2 * launch + 2 * t8 + 2);
  std::vector<DeviceId> two(gpus);
  two.insert(two.end(), seven.begin(), seven.end());
  const Outcome overlapped = simulate(c, call_graph(call, 8, 1, 7), Placement{two});
  EXPECT_LE(overlapped.step_time.ns, 2 * launch + std::max(t8, t7) + std::min(t8, t7) / 4);
}

// A copy over a GPU's NVLink port while an all-reduce runs takes half the port from it.
TEST(Collective, ACopyBesideACallSlowsIt) {
  const Cluster c = load_cluster("dgx-a100");
  const std::vector<DeviceId> gpus = c.gpus();
  const CollectiveCall call = all_reduce(std::int64_t{1} << 30);
  const CollectivePrediction pred = predict_collective(c, call, gpus);
  Graph g = call_graph(call, 8);
  const OpId src = g.add_op(testing::timed_op("src", 0, std::int64_t{4} << 30));
  g.add_op(testing::timed_op("dst", 0, 4, {src}));
  g.finalize();
  std::vector<DeviceId> dev(gpus);
  dev.push_back(gpus[0]);
  dev.push_back(gpus[1]);
  const Outcome alone = simulate(c, call_graph(call, 8), Placement{gpus});
  const Outcome both = simulate(c, g, Placement{dev});
  // The 4 GiB copy alone on gpu0's 300 GB/s port takes ~14 ms; the call ~6 ms: the call's
  // gpu0 -> switch flow runs at half the port while the copy runs, so the call ends late.
  EXPECT_GT(both.step_time.ns, alone.step_time.ns);
  const std::int64_t phase = pred.time.ns - pred.fixed.ns;
  const Outcome copy_only = [&] {
    Graph h;
    const OpId s = h.add_op(testing::timed_op("src", 0, std::int64_t{4} << 30));
    h.add_op(testing::timed_op("dst", 0, 4, {s}));
    h.finalize();
    return simulate(c, h, Placement{{gpus[0], gpus[1]}});
  }();
  EXPECT_GT(copy_only.step_time.ns, alone.step_time.ns);
  // The call's gpu0 -> gpu1 flow and the copy share both ports: the call's bandwidth phase D
  // doubles, the copy moves half as fast for 2 D, so it ends D later than alone.
  EXPECT_NEAR(static_cast<double>(both.step_time.ns),
              static_cast<double>(copy_only.step_time.ns + phase), 0.01 * phase);
}

TEST(Collective, GraphJsonKeepsTheCall) {
  Graph g;
  Op op = testing::timed_op("ar", 0, 64);
  op.measured.reset();
  CollectiveCall call = all_reduce(4096);
  call.id = "b0";
  call.proto = CollProto::LL128;
  op.collective = call;
  g.add_op(std::move(op));
  g.finalize();
  const Graph back = parse_graph_json(graph_to_json(g), "<test>");
  ASSERT_TRUE(back.ops[0].collective.has_value());
  EXPECT_EQ(*back.ops[0].collective, call);
  EXPECT_THROW(parse_graph_json(
                   R"({"ops":[{"name":"x","collective":{"kind":"gather","bytes":8}}]})", "t.json"),
               InputError);
}

}  // namespace
}  // namespace placesim::sim

// Collective time model: NCCL's tuner (latency + bytes / bandwidth per algorithm x protocol,
// fastest wins) with each algorithm's bandwidth taken from the cluster's fabric by max-min.
// Constants and their sources: docs/collectives.md.
#include "sim/collective.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "sim/collective_expand.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/maxmin.hpp"

namespace placesim::sim {

namespace {

std::string lower_alnum(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// ---- NCCL constants ------------------------------------------------------------------------
// NVIDIA/nccl src/graph/tuning.cc of NCCL 2.19 (ncclTopoTuneModel with NVLS_TREE and MNNVL; read
// from the search index, id 358953574; volcengine/veScale vescale/emulator/nccl/graph/tuning.py
// ports the same tables): latencies in us, index [algo][proto] with algo {tree, ring} and proto
// {LL, LL128, Simple}.
constexpr double kBaseLat[2][3] = {{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}};
enum Hw { kNvlink = 0, kPci = 1, kNet = 2 };
constexpr double kHwLat[3][2][3] = {{{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}},   // NVLink
                                    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},    // PCI
                                    {{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}}};  // network
constexpr double kNvlsLat = 23.0;  // hwLat[NVLINK][NVLS and NVLS_TREE][Simple]
// NCCL 2.23 and later (the tuning.cc that brought PAT; the same constants in NCCL 2.28.3's
// ncclTunerConstantsDefaults: a NCCL 2.2x tuning.cc in the search index, id 15804745244, and
// zhanglin496/nccl-2.28.3-1 @ 850a18f5 : src/graph/tuning.cc): tree Simple's latency fell from
// base 0 + 28 us per NVLink/PCI/network hop to base 8.4 + 4.0 / 4.0 / 14 us, NVLS's NVLink hop rose
// to 25 us, the ring LL bandwidth is half the bus for every collective (a quarter or a third
// before), an all-reduce ring counts 2 (nNodes - 1) network steps (2 nNodes before), Hopper's
// one-node LL bound is 141 GB/s (87.7 before), and PAT runs all-gather and reduce-scatter with one
// GPU per node. docs/collectives.md, "NCCL versions".
constexpr int kNccl223 = 22300;
constexpr double kTreeSimpleBaseLat223 = 8.4;
constexpr double kTreeSimpleHwLat223[3] = {4.0, 4.0, 14.0};  // NVLink, PCI, network
constexpr double kNvlsLat223 = 25.0;
constexpr double kLlMaxBwHopper223 = 141.0;
// PAT (Parallel Aggregated Trees), NCCL 2.23+: all-gather / reduce-scatter, Simple, one GPU per
// node only. tuning.cc: busBw x .75 (not converted to an algorithm bandwidth), latency 8 +
// log2(nNodes) x (the tree's network latency / 3.5) + nRanks x 2.8 us.
constexpr double kPatEfficiency = 0.75, kPatBaseLat = 8.0, kPatPerRankLat = 2.8;
constexpr double kNvlsTreeNetLat = 14.0;  // hwLat[NET][NVLS_TREE][Simple]
// llMaxBws[GPU generation (one node) or CPU vendor (several)][1 node, 2 nodes, >2 nodes], GB/s.
// NCCL 2.19 has Hopper at Ampere's values (later versions raised it to 141 GB/s).
constexpr double kLlMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
// perChMaxRingLL128Bws[Volta, Ampere, Hopper]: one channel's LL128 ring bandwidth, GB/s.
constexpr double kPerChLl128Bw[3] = {20.0, 20.0, 36.7};
// perChMaxTreeBws and perChMaxTreeLL128Bws[GPU generation][1 node, 2 nodes, >2 nodes]: what one
// tree channel carries (GB/s of bus bandwidth). tuning.cc caps every tree protocol at nChannels x
// perChMaxTreeBw, and LL128 trees further at nChannels x perChMaxTreeLL128Bw. On 2 nodes of A100
// with one HDR NIC per channel (24 GB/s) this keeps the tree's estimate (8 x 23.6 / 2 = 94 GB/s
// algbw) under the Simple ring's (192 x 16/30 = 102), so NCCL stays on the ring at large sizes.
constexpr double kPerChMaxTreeBw[3][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
constexpr double kPerChMaxTreeLl128Bw[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
// Tree correction by log2(bytes / 64), 64 B .. 256 MiB, [proto][i] (tuning.cc,
// treeCorrectionFactor[NCCL_NUM_PROTOCOLS][23]).
constexpr int kTreeCorrectionSizes = 23;
constexpr double kTreeCorrection[3][kTreeCorrectionSizes] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// NVLS (NVLink SHARP, in-switch reduction) on 8 H100: peak busbw ~480 GB/s, algbw ~275 GB/s, of an
// effective NVLink bandwidth of 370 GB/s (S. Jeaugey, NCCL maintainer, NVIDIA/nccl-tests#212;
// astra-sim-alibabacloud's calbusbw.h uses H100_NVLS_BW 475): algbw = 275/370 of the link.
constexpr double kNvlsAlgbwPerLinkBw = 275.0 / 370.0;
// NVLS_TREE (NVLS in each node, a tree between nodes): the NVLS part reaches 0.9 of a single
// node's NVLS algbw. Fitted to the two public 2-node H100 runs together (NVIDIA/nccl-tests#309:
// 250 GB/s algbw at 16 GiB; the Talos DGX H100 report: 233 GB/s at 8 GiB; one node reaches
// 272-275): each NVLS_TREE channel splits its warps between the NVLS and the network parts.
constexpr double kNvlsTreeEfficiency = 0.9;

// NCCL's per-launch work split (src/enqueue.cc getAlgoInfo / topoGetAlgoInfo, and computeColl's
// chunking; src/include/comm.h thresholds). Read from NCCL 2.19/2.20's enqueue.cc in the search
// index (id 15876423444); NVIDIA/nccl@01e6dd91 src/enqueue.cc keeps the same loop.
constexpr int kLlThreadThreshold = 8;       // NCCL_LL_THREAD_THRESHOLD (x nRanks for ring)
constexpr int kLl128ThreadThreshold = 8;    // NCCL_LL128_THREAD_THRESHOLD
constexpr int kSimpleThreadThreshold = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
constexpr int kLlMaxThreads = 512, kLl128MaxThreads = 640, kSimpleMaxThreads = 512;
constexpr double kSimpleStepBytes = 4.0 * (1 << 20) / 8;  // NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8
// LL across the network goes through host memory: NCCL's net transport maps every protocol's
// buffer to device memory only for `p!= NCCL_PROTO_LL && resources->useGdr` (src/transport/net.cc,
// send and receive setup; NCCL 2.2x, search-index ids 1945451105, 67132618155), because "the CPU
// polls the flag inside the data to know when data is ready to send ... Since the CPU has to
// access the data directly, it needs to be in CPU memory" (S. Jeaugey, NVIDIA/nccl#756). The
// receiving GPU then reads each 16 B LL line (8 B of data) from host memory over PCIe, one line
// per thread per trip (src/device/prims_ll.h, search-index id 53621764844: `EltPerLine =
// sizeof(uint64_t)/sizeof(T)`, readLLBeginAll then readLLFinish spinning on the line's flags,
// offset += nthreads), so a channel of NCCL_LL_MAX_NTHREADS threads moves 512 x 8 B per PCIe
// read round trip. Round trip: ~850 ns
// measured from a PCIe Gen3 endpoint to host memory and back ("PCIe latency",
// hackingnasdaq.blogspot.com, 2014-05-11). 512 x 8 B / 0.85 us = 4.8 GB/s per channel.
constexpr double kPcieReadRoundTripUs = 0.85;
constexpr double kLlNetChannelGbps = kLlMaxThreads * 8.0 / (kPcieReadRoundTripUs * 1e3);
constexpr int kRingChunkSteps = 4, kRingSliceSteps = 2;  // ALLREDUCE_CHUNKSTEPS, _SLICESTEPS
// A Simple ring channel across nodes is one CTA, and on Hopper one CTA moves at most ~20.3 GB/s of
// a ring's bus bandwidth through the network (copying between the NIC's buffer, its NVLink peer
// and the user buffer). NCCL 2.20+ runs 16 such channels on nodes of 8 Hopper GPUs and 8 NICs:
// ncclTopoPostset doubles the 8 searched rings and doubles again "to reach peak BW on <8 PPN" only
// while `nChannels < 16` (NVIDIA/nccl src/graph/connect.cc @ 0f900e1b; Azure/msccl-executor-nccl
// @ e08231f1 the same), so 8 x 400 Gb/s NICs are not filled: "With 8 400 Gbps NICs your peak would
// be at 400 GB/s. You can get closer to it by tweaking some NCCL settings, e.g., NCCL_MIN_CTAS=24
// may get you above 380 GB/s" (NVIDIA, nccl-tests#309). Fitted on that thread's 4 x 8 H100 default
// all-reduce (324.5-325.0 GB/s busbw at 4-8 GiB over 16 channels; the cluster's 8 nodes reach 391
// with NCCL_MIN_CTAS=24 and 2 QPs, NIC-bound); no scoreboard file. NCCL 2.19 reaches the NICs
// (NVIDIA/nccl#1222: 391 GB/s on 4 nodes with 2.19.3, less with 2.20.3): more channels there
// (its channel rule is not in the search index), so the cap applies from 2.20 on. Hopper only:
// no stored Blackwell run across nodes is a ring (the 2 x 8 B200 all-reduce is NVLS_TREE).
// docs/collectives.md, "Simple rings across Hopper nodes run 16 channels of one CTA".
constexpr double kHopperSimpleNetRingChannelGbps = 20.3;
constexpr int kNccl220 = 22000;
// Rooted rings (broadcast, reduce) across nodes are chains (src/device/broadcast.h, reduce.h: the
// root sends, every other rank receives and forwards to the next, the root's predecessor only
// receives). A chain's data reaches its last rank only after every hop, and two kinds of hop hold
// it: (1) every hop holds LL128 and Simple data for the protocol's per-hop latency (NCCL's own
// hwLat per hop, tuning.cc; its tuner charges nsteps x hwLat for a rooted ring when its search kept
// different channels, `!graphs[a]->sameChannels`, and one hop otherwise, which it still chooses
// with); (2) a network hop sends a step only once the sending GPU has written all of it (net.cc
// sendProxyProgress waits for the step's tail or, for LL/LL128 in host memory, every line's flag),
// so each network hop of the chain holds one chunk: min(one step's data, the channel's share).
// One step's data: LL128 NCCL_LL128_ELEMS_PER_THREAD 120 x NCCL_LL128_MAX_NTHREADS 640 x 8 B per
// step (DEFAULT_LL128_BUFFSIZE / NCCL_STEPS), of which 120/128 is data (calcCollChunking:
// `chunkSize / NCCL_LL128_LINEELEMS * NCCL_LL128_DATAELEMS`); Simple BROADCAST_CHUNKSTEPS =
// REDUCE_CHUNKSTEPS = 1 step of 512 KiB in one slice (SLICESTEPS 1). LL is left at NCCL's one hop:
// it forwards 8 B lines, and the runs' 8 B calls (9-12 us over 31 hops on 4 nodes of 8 H100) are
// what one hop gives, not 31 x 0.6 us.
constexpr double kLl128StepDataBytes = 120.0 * 640 * 8 * 120 / 128;
constexpr double kRootedSimpleChunkBytes = kSimpleStepBytes;  // BROADCAST/REDUCE_CHUNKSTEPS 1
// The Hopper ring rate (kHopperSimpleNetRingChannelGbps) is per slice, and a chain's slice is half
// a ring's. Rings move NCCL_STEPS / 4 = 2 steps (1 MiB) per slice (ALLREDUCE / ALLGATHER /
// REDUCESCATTER_SLICESTEPS), the broadcast and reduce chains 1 step (512 KiB: BROADCAST_SLICESTEPS
// = REDUCE_SLICESTEPS = 1, src/include/collectives.h): "Rings do not need 8 slots (only 4) so they
// actually use 2 slots for each chunk, hence 1MB. Trees and chains (broadcast/reduce), however do
// benefit from more back to back pipelining so they use all 8 slots and their chunk size is 512KB"
// (S. Jeaugey, NVIDIA/nccl#391). The channel's one CTA handles its slices one after another
// (prims_simple.h: wait for the peer's step, copy, fence, post, per slice), and each network slice
// is one message of the proxy (net.cc sendProxyProgress sends the size the GPU posted for the
// slot), so a slice costs a fixed time beside its bytes at the channel's share of the NICs. On the
// cluster the ring rate was fitted on (nccl-tests#309: 8 x 400 Gb/s NICs of 48.5 GB/s per node, 16
// channels) that share is 24.25 GB/s, which leaves 1 MiB / 20.3 - 1 MiB / 24.25 = 8.4 us a slice; a
// chain's 512 KiB slice then moves at 512 KiB / (8.4 us + 512 KiB / 24.25 GB/s) = 17.5 GB/s.
// Nothing new is fitted: the share is the NICs' and the slice cost follows from the ring's fitted
// rate. Only the collectives' full slices are priced (a ring's shrink below one loop:
// docs/collectives.md, "Simple chains across Hopper nodes move half a ring's slice").
// #309's 8 NICs per node at CX7_BW 48.5 GB/s (link_efficiency's) over its 16 channels.
constexpr double kHopperNetChannelShareGbps = 8 * 48.5 / 16;
constexpr double kRingSliceBytes = kRingSliceSteps * kSimpleStepBytes;
constexpr double kHopperNetSliceUs = kRingSliceBytes / (1e3 * kHopperSimpleNetRingChannelGbps) -
                                     kRingSliceBytes / (1e3 * kHopperNetChannelShareGbps);
constexpr double kHopperSimpleNetChainChannelGbps =
    kRootedSimpleChunkBytes /
    (1e3 * (kHopperNetSliceUs + kRootedSimpleChunkBytes / (1e3 * kHopperNetChannelShareGbps)));
// LL across nodes holds one chunk at every network hop too (session 30, issue 16): the LL buffer
// is in host memory and the proxy posts a step only once it has seen every line's flags (net.cc
// sendProxyProgress), so a tree or chain channel's data waits at each network hop for its chunk,
// min(one LL step's data, the channel's share), at the channel's LL rate across nodes
// (kLlNetChannelGbps). One LL step: NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 lines of
// 8 B data (src/init.cc DEFAULT_LL_BUFFSIZE = 8 x 512 x NCCL_STEPS x 16 B lines). Charged on trees
// only, where tree LL adds a channel per 4 KiB (kLlThreadThreshold x 512 threads) and the chunk
// stays at 4 KiB until every channel runs. Rings are left out (their chunk is bytes / (channels x
// ranks)), and so are LL chains (broadcast, reduce): on one channel their chunk reaches a whole
// step, and the 4-node runs hold 1.7-3 us a network hop at 32 KiB, not 32 KiB at this rate (6.8 us;
// docs/validation.md, "Multi-node LL trees hold a chunk at every network hop").
constexpr double kLlStepDataBytes = 8.0 * kLlMaxThreads * 8;
// NVLS channels (comm->nvlsChannels; NCCL 2.2x src/transport/nvls.cc ncclNvlsInit, search-index
// id 10947377014): NVLS_NCHANNELS_SM90 16 on Hopper; on Blackwell (compCap >= 100)
// NVLS_NCHANNELS_SM100 32 when the communicator spans several nodes, NVLS_NCHANNELS_SM100_NVL 24 on
// one node ("a reduced number of channels for single node/MNNVL domain on Blackwell").
constexpr int kNvlsChannelsHopper = 16, kNvlsChannelsBlackwell = 32,
              kNvlsChannelsBlackwellNode = 24;
// NVLS_TREE chunk (src/enqueue.cc). The computeColl(collInfo) of NCCL 2.19-2.21 (search-index ids
// 15876423444, 607027925) starts from one Simple step (512 KiB); the calcCollChunking of NCCL 2.23+
// (search-index ids 15267431004, 5622853762) from comm->nvlsChunkSize, NCCL_NVLS_CHUNKSIZE's
// default 128 KiB (nvls.cc). Both cap it at 64 KiB from 4 nodes up (NCCL_NVLSTREE_MAX_CHUNKSIZE
// default -2: "maxChunkSize = nNodes >= 4 ? 65536 : chunkSize"; id 607027925 and the later ones).
constexpr double kNvlsChunkBytes = 128 * 1024, kNvlsTreeMaxChunkBytes4Nodes = 64 * 1024;
constexpr int kMaxChannels = 32;  // MAXCHANNELS
// NCCL's SHM transport (P2P disabled) moves a hop's bytes at 3/4 of what NCCL's topology model
// gives the PCIe path (PCI_BW 12 GB/s per Gen3 x16): S. Jeaugey, NVIDIA/nccl#406, SHM between GPUs
// achieves "9 or 6" GB/s where a path inside the PCIe switch achieves 12 (9 of 12);
// NVIDIA/nccl#1603, 4x RTX 4090 on one CPU (PCIe 4.0 x16 each, no switch), all-reduce bus bandwidth
// 18 GB/s over SHM, where the model's PCIe 4.0 ring gives 24 (18 of 24). Both in
// tests/data/collectives/published_p2p_disabled.csv (docs/collectives.md, "P2P disabled").
constexpr double kShmRateFraction = 0.75;

// Fraction of a link's signalling rate NCCL's transports carry (its topology model), by the
// cluster's link `kind`. NVIDIA/nccl src/graph/topo.h: SM70/SM80_NVLINK_BW 20 and SM90_NVLINK_BW
// 20.6 GB/s per NVLink of 25 GB/s; SM60 18 of 20; PCI_BW 12 GB/s per Gen3 x16 (15.75 GB/s).
// NICs: astra-sim-alibabacloud calbusbw.h, CX6_BW 23.5 of 25, CX7_BW 48.5 of 50 GB/s.
double link_efficiency(const std::string& kind) {
  const std::string k = lower_alnum(kind);
  if (k.starts_with("nvlink")) {
    if (k == "nvlink1") return 18.0 / 20.0;
    if (k == "nvlink4" || k == "nvlink5") return 20.6 / 25.0;
    return 20.0 / 25.0;
  }
  if (k.starts_with("pcie")) return 12.0 / 15.75;
  if (k.starts_with("ib") || k.starts_with("roce") || k.starts_with("net") || k.starts_with("eth"))
    return k.find("ndr") != std::string::npos || k.find("400") != std::string::npos ? 48.5 / 50.0
                                                                                    : 23.5 / 25.0;
  return 1.0;
}

bool is_nvlink(const Link& l) {
  return lower_alnum(l.kind).starts_with("nvlink");
}

struct Flow {
  DeviceId from, to;
  int channel;
};

// Hops of a flow: the cluster's route, except between nodes, where NCCL sends each channel
// through a NIC of its own (it spreads channels over the NICs nearest each GPU; the cluster's one
// static route per pair would put every GPU behind a PCIe switch on one NIC).
struct NicPlan {
  std::map<std::pair<DeviceId, int>, VertexId> nic;  // (gpu, 0 out / 1 in) -> NIC
};

// Shortest path by hops from `from` to `to` that passes no device other than its ends, links
// tried in id order (deterministic); without NVLink links when `nvlink` is false. Empty when there
// is none.
std::vector<Hop> bfs_path(const Cluster& c, VertexId from, VertexId to, bool nvlink = true) {
  const int nv = static_cast<int>(c.vertices.size());
  std::vector<std::vector<std::pair<LinkId, bool>>> adj(nv);
  for (std::size_t l = 0; l < c.links.size(); ++l) {
    if (!nvlink && is_nvlink(c.links[l])) continue;
    adj[c.links[l].a].push_back({static_cast<LinkId>(l), true});
    adj[c.links[l].b].push_back({static_cast<LinkId>(l), false});
  }
  std::vector<std::pair<LinkId, bool>> via(nv, {-1, true});
  std::vector<bool> seen(nv, false);
  std::vector<VertexId> q{from};
  seen[from] = true;
  for (std::size_t i = 0; i < q.size() && !seen[to]; ++i) {
    const VertexId v = q[i];
    if (v != from && v < c.num_devices()) continue;  // devices never forward
    for (const auto& [l, fwd] : adj[v]) {
      const VertexId w = fwd ? c.links[l].b : c.links[l].a;
      if (seen[w]) continue;
      seen[w] = true;
      via[w] = {l, fwd};
      q.push_back(w);
    }
  }
  std::vector<Hop> path;
  if (!seen[to]) return path;
  for (VertexId v = to; v != from;) {
    const auto [l, fwd] = via[v];
    path.push_back({l, fwd});
    v = fwd ? c.links[l].a : c.links[l].b;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// With P2P disabled (NCCL_P2P_DISABLE=1) a hop between GPUs of one node goes through NCCL's SHM
// transport: the sender's kernel writes into a pinned host buffer, the receiver's kernel reads it
// (NVIDIA/nccl src/transport/shm.cc). The buffer is in the memory of the receiver's CPU (the
// receiving rank allocates it), so the bytes go up the sender's PCIe path, across the CPUs' link
// when the two GPUs hang off different sockets, into that CPU's memory and back down the
// receiver's PCIe path; never over NVLink, never peer to peer through a PCIe switch. Empty when the
// cluster has no such path (a GPU without a host CPU or PCIe path to it).
std::vector<Hop> shm_hops(const Cluster& c, const Flow& f) {
  const DeviceId cpu = c.devices[f.to].host;
  if (cpu < 0) return {};
  std::vector<Hop> up = bfs_path(c, f.from, cpu, false), down = bfs_path(c, cpu, f.to, false);
  if (up.empty() || down.empty()) return {};
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

std::vector<Hop> flow_hops(const Cluster& c, const Flow& f, NicPlan& plan, bool shm = false) {
  std::vector<Hop> hops;
  if (shm && c.devices[f.from].node == c.devices[f.to].node)
    if (std::vector<Hop> h = shm_hops(c, f); !h.empty()) return h;
  if (c.devices[f.from].node != c.devices[f.to].node) {
    // The NIC of each end: nearest to the GPU, least used by earlier channels, lowest id.
    auto pick = [&](DeviceId gpu, int dir) -> VertexId {
      const auto it = plan.nic.find({gpu, dir});
      if (it != plan.nic.end()) return it->second;
      VertexId best = -1;
      std::size_t best_hops = 0;
      int best_use = 0;
      for (VertexId v = c.num_devices(); v < static_cast<VertexId>(c.vertices.size()); ++v) {
        if (c.vertices[v].kind != VertexKind::Nic || c.vertices[v].node != c.devices[gpu].node)
          continue;
        const std::size_t h = bfs_path(c, gpu, v).size();
        if (h == 0) continue;
        int use = 0;
        for (const auto& [k, n] : plan.nic) use += (n == v && k.second == dir) ? 1 : 0;
        if (best < 0 || h < best_hops || (h == best_hops && use < best_use)) {
          best = v;
          best_hops = h;
          best_use = use;
        }
      }
      plan.nic[{gpu, dir}] = best;
      return best;
    };
    const VertexId out = pick(f.from, 0), in = pick(f.to, 1);
    if (out >= 0 && in >= 0) {
      for (const auto& part :
           {bfs_path(c, f.from, out), bfs_path(c, out, in), bfs_path(c, in, f.to)}) {
        if (part.empty()) {
          hops.clear();
          break;
        }
        hops.insert(hops.end(), part.begin(), part.end());
      }
      if (!hops.empty()) return hops;
    }
  }
  for (const RouteSegment& seg : c.route(f.from, f.to).segments)
    hops.insert(hops.end(), seg.hops.begin(), seg.hops.end());
  return hops;
}

// Max-min rates of `flows` over the cluster's links with NCCL's per-class link efficiency.
std::vector<double> maxmin_rates(const Cluster& c, const std::vector<Flow>& flows,
                                 bool shm = false) {
  MaxMinSolver solver;
  std::map<std::pair<LinkId, int>, int> cons;
  auto constraint = [&](LinkId l, int dir) {
    auto [it, fresh] = cons.try_emplace({l, dir}, -1);
    if (fresh)
      it->second = solver.add_constraint(c.links[l].bandwidth.bytes_per_s *
                                         link_efficiency(c.links[l].kind));
    return it->second;
  };
  NicPlan plan;
  std::vector<int> vars;
  for (const Flow& f : flows) {
    std::vector<int> cs;
    double bound = std::numeric_limits<double>::infinity();
    for (const Hop& h : flow_hops(c, f, plan, shm)) {
      const Link& l = c.links[h.link];
      bound = std::min(bound, l.bandwidth.bytes_per_s * link_efficiency(l.kind));
      int id = -1;
      if (l.sharing == SharingPolicy::Shared)
        id = constraint(h.link, 0);
      else if (l.sharing == SharingPolicy::SplitDuplex)
        id = constraint(h.link, h.forward ? 1 : 2);
      if (id >= 0 && std::find(cs.begin(), cs.end(), id) == cs.end()) cs.push_back(id);
    }
    vars.push_back(solver.add_variable(bound, cs));
  }
  solver.solve();
  std::vector<double> r;
  for (int v : vars) r.push_back(solver.value(v));
  return r;
}

struct Topo {
  std::vector<DeviceId> order;                // ranks grouped by node
  std::vector<std::vector<DeviceId>> groups;  // ranks of each node, in call order
  int nodes = 1, ppn = 1;
  Hw intra = kPci;
  int gen = 0;
  bool amd_host = false;
  bool shm = false;         // P2P disabled: GPUs of a node meet through host memory (shm_hops)
  bool nvls = false;        // the ranks of every node on one NVSwitch over NVLink 4+
  double nvls_link_bw = 0;  // smallest effective rank-switch NVLink bandwidth, B/s
  int nvls_channels = kNvlsChannelsHopper;  // comm->nvlsChannels
  int nccl_channels = 2;                    // NCCL's ring channel count (comm->nChannels)
  // Channels of NCCL's searched ring and tree graphs (graphs[a]->nChannels, before ncclTopoPostset
  // doubles comm->nChannels), which its per-channel caps multiply: across nodes one per NIC of a
  // node the rings use (NCCL's search gives each NIC a channel at the NIC's speed and, at 24-48
  // GB/s per NIC, does not duplicate them: search.cc ncclTopoDupChannels); on one node the ring's
  // count (the caps do not bind there).
  int graph_channels = 2;
  int nccl = kDefaultNcclVersion;  // the NCCL version whose tuner chooses (NCCL_VERSION_CODE)
  bool hopper = false;             // every rank of compute capability 9.x
  [[nodiscard]] bool nccl223() const { return nccl >= kNccl223; }
};

// NCCL's latency constants by version (above): base latency and per-hop latency of algorithm `a`
// (0 tree, 1 ring) and protocol `p` (0 LL, 1 LL128, 2 Simple).
double base_lat(const Topo& t, int a, int p) {
  return t.nccl223() && a == 0 && p == 2 ? kTreeSimpleBaseLat223 : kBaseLat[a][p];
}
double hw_lat(const Topo& t, Hw hw, int a, int p) {
  return t.nccl223() && a == 0 && p == 2 ? kTreeSimpleHwLat223[hw] : kHwLat[hw][a][p];
}

// Effective bandwidth (B/s) of the slowest NVLink 4+ port from `group`'s ranks to one switch they
// all reach directly (NVLS needs one); 0 when there is none.
double nvls_port_bw(const Cluster& c, const std::vector<DeviceId>& group) {
  std::map<VertexId, std::pair<int, double>> sw;  // switch -> (ranks, min bw)
  for (DeviceId d : group)
    for (const Link& k : c.links) {
      if (!is_nvlink(k) || (k.a != d && k.b != d)) continue;
      const VertexId o = k.a == d ? k.b : k.a;
      const std::string kind = lower_alnum(k.kind);
      if (c.vertices[o].kind != VertexKind::Switch || (kind != "nvlink4" && kind != "nvlink5"))
        continue;
      auto& e = sw.try_emplace(o, 0, std::numeric_limits<double>::infinity()).first->second;
      ++e.first;
      e.second = std::min(e.second, k.bandwidth.bytes_per_s * link_efficiency(k.kind));
    }
  double best = 0;
  for (const auto& [v, e] : sw)
    if (e.first == static_cast<int>(group.size())) best = std::max(best, e.second);
  return best;
}

// NCCL's ring channel count on one node: its search finds one ring per NVLink of a GPU and
// ncclTopoPostset duplicates them (DGX A100: 12 NVLinks, 24 channels), at most MAXCHANNELS; two
// over PCIe. The cluster's NVLink links are bundles: count = bandwidth / one NVLink's rate.
int nccl_channels(const Cluster& c, DeviceId d, Hw intra) {
  if (intra != kNvlink) return 2;
  double links = 0;
  for (const Link& k : c.links)
    if (is_nvlink(k) && (k.a == d || k.b == d)) {
      const std::string kind = lower_alnum(k.kind);
      const double per_link = kind == "nvlink1" ? 20e9 : kind == "nvlink5" ? 50e9 : 25e9;
      links += k.bandwidth.bytes_per_s / per_link;
    }
  return std::clamp(2 * static_cast<int>(std::lround(links)), 2, kMaxChannels);
}

std::vector<std::vector<DeviceId>> nvlink_rings(const Cluster& c, const std::vector<DeviceId>& g);

// NCCL's P2P transport needs CUDA peer access (NVIDIA/nccl src/transport/p2p.cc,
// p2pCanConnect); where no two ranks of a node have it (peer_access: none, or NCCL_P2P_DISABLE=1
// as `collective --p2p off` and `simulate --parallel ...,p2p=off` apply it) every hop goes
// through host memory (shm_hops). A node with some peer pairs keeps the P2P model.
bool through_host_memory(const Cluster& c, const std::vector<DeviceId>& ranks) {
  bool pairs = false, peer = false;
  for (DeviceId a : ranks)
    for (DeviceId b : ranks)
      if (a != b && c.devices[a].node == c.devices[b].node) {
        pairs = true;
        peer = peer || c.peer_access[a][b];
      }
  return pairs && !peer;
}

Topo analyse(const Cluster& c, const std::vector<DeviceId>& ranks) {
  Topo t;
  std::vector<std::string> node_names;
  std::map<std::string, std::vector<DeviceId>> by_node;
  for (DeviceId d : ranks) {
    const std::string& n = c.devices[d].node;
    if (!by_node.contains(n)) node_names.push_back(n);
    by_node[n].push_back(d);
  }
  t.nodes = static_cast<int>(node_names.size());
  t.ppn = static_cast<int>(ranks.size());
  for (const std::string& n : node_names) {
    t.ppn = std::min(t.ppn, static_cast<int>(by_node[n].size()));
    for (DeviceId d : by_node[n]) t.order.push_back(d);
    t.groups.push_back(by_node[n]);
  }
  t.gen = 2;
  for (DeviceId d : ranks) {
    t.gen = std::min(t.gen, nccl_gpu_generation(c.devices[d].spec));
    const DeviceId h = c.devices[d].host;
    if (h >= 0 && lower_alnum(c.devices[h].spec.model).find("epyc") != std::string::npos)
      t.amd_host = true;
  }
  t.shm = through_host_memory(c, ranks);
  // Intra-node class: NVLink when every same-node pair's route crosses only NVLink.
  bool all_nvlink = ranks.size() > 1;
  for (DeviceId a : ranks)
    for (DeviceId b : ranks) {
      if (a == b || c.devices[a].node != c.devices[b].node) continue;
      for (const RouteSegment& s : c.route(a, b).segments)
        for (const Hop& h : s.hops) all_nvlink = all_nvlink && is_nvlink(c.links[h.link]);
    }
  // NCCL's ring graph is NVLink too where all-NVLink rings exist (hybrid cube mesh).
  t.intra = !t.shm && (all_nvlink || (t.nodes == 1 && !nvlink_rings(c, t.order).empty())) ? kNvlink
                                                                                          : kPci;
  t.nccl_channels = nccl_channels(c, ranks.front(), t.intra);
  // NVLS: in every node, one switch vertex each of its ranks reaches over one NVLink 4+ link.
  if (ranks.size() > 1 && t.gen >= 2 && t.ppn > 1 && !t.shm) {
    t.nvls_link_bw = std::numeric_limits<double>::infinity();
    for (const std::vector<DeviceId>& g : t.groups)
      t.nvls_link_bw = std::min(t.nvls_link_bw, nvls_port_bw(c, g));
    t.nvls = t.nvls_link_bw > 0;
    if (!t.nvls) t.nvls_link_bw = 0;
    const bool blackwell = std::all_of(
        ranks.begin(), ranks.end(), [&](DeviceId d) { return nccl_blackwell(c.devices[d].spec); });
    if (blackwell)
      t.nvls_channels = t.nodes > 1 ? kNvlsChannelsBlackwell : kNvlsChannelsBlackwellNode;
  }
  t.hopper = t.gen == 2 && std::none_of(ranks.begin(), ranks.end(), [&](DeviceId d) {
               return nccl_blackwell(c.devices[d].spec);
             });
  return t;
}

// Rings through every rank of one node over direct GPU-GPU NVLink links only, as NCCL's search
// finds them on a hybrid cube mesh (DGX-1: no ring in rank order is all NVLink): the Hamiltonian
// cycles from the first rank, each way round, in depth-first order over the ranks' order
// (deterministic), at most 64 and what 200,000 search steps find. Empty when there is none
// (NVSwitch, PCIe, more than 16 ranks).
std::vector<std::vector<DeviceId>> nvlink_rings(const Cluster& c, const std::vector<DeviceId>& g) {
  const int n = static_cast<int>(g.size());
  std::vector<std::vector<DeviceId>> rings;
  if (n < 3 || n > 16) return rings;
  std::vector<std::vector<bool>> adj(n, std::vector<bool>(n, false));
  for (const Link& k : c.links)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j && is_nvlink(k) && k.a == g[i] && k.b == g[j]) adj[i][j] = adj[j][i] = true;
  std::vector<int> path{0};
  std::vector<bool> used(n, false);
  used[0] = true;
  constexpr std::size_t kMaxRings = 64;
  // Iterative DFS: next[d] is the next candidate for position d + 1.
  std::vector<int> next{1};
  // A bound on the search: a sparse mesh without a Hamiltonian cycle could take exponential time.
  for (long steps = 0; !path.empty() && rings.size() < kMaxRings && steps < 200000; ++steps) {
    int& cand = next.back();
    while (cand < n && (used[cand] || !adj[path.back()][cand])) ++cand;
    if (cand == n) {
      used[path.back()] = path.size() == 1;
      path.pop_back();
      next.pop_back();
      continue;
    }
    const int v = cand++;
    path.push_back(v);
    used[v] = true;
    next.push_back(1);
    if (static_cast<int>(path.size()) == n) {
      if (adj[v][0]) {
        std::vector<DeviceId> ring;
        for (int i : path) ring.push_back(g[i]);
        rings.push_back(ring);
      }
      used[v] = false;
      path.pop_back();
      next.pop_back();
    }
  }
  return rings;
}

// The rings NCCL's search would keep, packed greedily as it does (ring after ring at the highest
// bandwidth the links have left): the candidate whose slowest link has the most capacity left,
// that capacity taken from each of its links (one direction), until a ring would get less than a
// tenth of the first one's. Link capacity: bandwidth x NCCL's efficiency of the link class.
std::vector<std::vector<DeviceId>> pack_rings(const Cluster& c,
                                              const std::vector<std::vector<DeviceId>>& cand) {
  std::map<std::pair<DeviceId, DeviceId>, double> left;  // directed GPU pair -> capacity left
  for (const Link& k : c.links)
    if (is_nvlink(k)) {
      const double cap = k.bandwidth.bytes_per_s * link_efficiency(k.kind);
      left[{k.a, k.b}] += cap;
      left[{k.b, k.a}] += cap;
    }
  auto bottleneck = [&](const std::vector<DeviceId>& r) {
    double m = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < r.size(); ++i) m = std::min(m, left[{r[i], r[(i + 1) % r.size()]}]);
    return m;
  };
  std::vector<std::vector<DeviceId>> out;
  double first = 0;
  while (!cand.empty() && out.size() < static_cast<std::size_t>(kMaxChannels)) {
    std::size_t best = 0;
    double best_bw = -1;
    for (std::size_t i = 0; i < cand.size(); ++i)
      if (const double b = bottleneck(cand[i]); b > best_bw) best_bw = b, best = i;
    if (out.empty()) first = best_bw;
    if (best_bw <= 0.1 * first) break;
    const std::vector<DeviceId>& r = cand[best];
    for (std::size_t i = 0; i < r.size(); ++i) left[{r[i], r[(i + 1) % r.size()]}] -= best_bw;
    out.push_back(r);
  }
  return out;
}

// NCCL's rings over the fabric, as flows (one per ring edge, tagged with its channel). One
// node: the all-NVLink rings when the GPUs have direct NVLink links (every such ring, sharing the
// links), else one ring in rank order; several nodes: ranks of each node rotated by the channel
// so that every channel leaves a node through a different GPU (and NIC).
std::vector<Flow> ring_flows(const Cluster& c, const Topo& t, int* channels) {
  const int n = static_cast<int>(t.order.size());
  std::vector<std::vector<DeviceId>> rings = t.nodes == 1 && !t.shm
                                                 ? pack_rings(c, nvlink_rings(c, t.order))
                                                 : std::vector<std::vector<DeviceId>>{};
  if (rings.empty()) {
    const int ch = t.nodes > 1 ? std::max(1, t.ppn) : 1;
    for (int k = 0; k < ch; ++k) {
      std::vector<DeviceId> ring;
      for (const std::vector<DeviceId>& g : t.groups) {
        const int per = static_cast<int>(g.size());
        for (int i = 0; i < per; ++i) ring.push_back(g[(i + k) % per]);
      }
      rings.push_back(ring);
    }
  }
  const int ch = static_cast<int>(rings.size());
  *channels = ch;
  std::vector<Flow> flows;
  for (int k = 0; k < ch; ++k)
    for (int i = 0; i < n; ++i) flows.push_back({rings[k][i], rings[k][(i + 1) % n], k});
  return flows;
}

// Bus bandwidth (B/s) of NCCL's rings over the fabric: all channels' flows at once, the sum over
// channels of each channel's slowest flow. A rooted ring (broadcast, reduce; `chain_root` its root)
// is a chain: the root's predecessor only receives (src/device/broadcast.h, reduce.h), so the edge
// into the root carries nothing and takes no share of the links it would cross (with P2P disabled
// the two ends of a 2-GPU ring would otherwise meet on the same PCIe uplink, each at half of it).
double ring_busbw(const Cluster& c, const Topo& t, int* channels, DeviceId chain_root = -1) {
  std::vector<Flow> flows = ring_flows(c, t, channels);
  if (chain_root >= 0) std::erase_if(flows, [&](const Flow& f) { return f.to == chain_root; });
  const std::vector<double> r = maxmin_rates(c, flows, t.shm);
  std::vector<double> slowest(*channels, std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < flows.size(); ++i)
    slowest[flows[i].channel] = std::min(slowest[flows[i].channel], r[i]);
  double sum = 0;
  for (double s : slowest) sum += s;
  return sum;
}

// NICs of the first node that NCCL's rings leave it through (NicPlan's choice): NCCL's ring and
// tree graphs have one channel per such NIC (Topo::graph_channels). 0 when the route between the
// nodes has no NIC vertex.
int ring_nics(const Cluster& c, const Topo& t) {
  int ch = 1;
  NicPlan plan;
  std::set<VertexId> nics;
  for (const Flow& f : ring_flows(c, t, &ch)) {
    if (c.devices[f.from].node != c.devices[t.order.front()].node ||
        c.devices[f.to].node == c.devices[f.from].node)
      continue;
    flow_hops(c, f, plan, t.shm);
    const auto it = plan.nic.find({f.from, 0});
    if (it != plan.nic.end() && it->second >= 0) nics.insert(it->second);
  }
  return static_cast<int>(nics.size());
}

// Point-to-point flows: every ordered pair for all-to-all, the one pair for send/recv.
std::vector<Flow> direct_flows(CollectiveKind kind, const Topo& t,
                               const std::vector<DeviceId>& ranks) {
  std::vector<Flow> flows;
  if (kind == CollectiveKind::SendRecv) {
    flows.push_back({ranks[0], ranks[1], 0});
    return flows;
  }
  for (DeviceId a : t.order)
    for (DeviceId b : t.order)
      if (a != b) flows.push_back({a, b, 0});
  return flows;
}

// The double binary tree's Simple bus bandwidth (GB/s; its algorithm bandwidth is half). On two
// nodes each byte crosses the network once each way (reduced up to the root's node, broadcast
// back), where a ring crosses it 2(n-1)/n times, so the tree runs at up to the NICs' whole
// bandwidth `bus` as algorithm bandwidth ("with Tree, on 2 nodes ... 2x less traffic on the
// network than on the intra-node connections ... can go up to ~2x the network speed", S. Jeaugey,
// NVIDIA/nccl#946; NCCL's search raises a 2-node tree's intra-node bandwidth to up to twice its
// network one, search.cc "increase bwIntra for trees", and its tuner then rates trees on it,
// tuning.cc "nNodes <= 2 ? bwIntra"), as long as each node's chains carry it: every chain edge
// moves each byte once each way, 2(p-1)/p per GPU port as a ring all-reduce of the node does, so
// the node's own ring all-reduce algorithm bandwidth bounds it. Elsewhere the ring's bus. LL and
// LL128 trees, which NCCL runs only below the sizes where bandwidth decides, keep the ring's bus.
struct TreeBus {
  double tuner, fabric;  // NCCL's estimate (chooses), what the fabric gives (times)
};
TreeBus tree_bus(const Cluster& c, const Topo& t, double bus) {
  if (t.nodes != 2) return {bus, bus};
  double intra = std::numeric_limits<double>::infinity();  // one node's ring bus bandwidth
  for (const std::vector<DeviceId>& g : t.groups) {
    if (g.size() < 2) continue;
    int ch = 1;
    intra = std::min(intra, ring_busbw(c, analyse(c, g), &ch) / 1e9);
  }
  const double p = t.ppn;
  const double node_algbw = p > 1 ? intra * p / (2 * (p - 1)) : intra;
  // NCCL's tuner: nChannels x bwIntra, which its search raises to at most twice the network's
  // per channel while the GPUs' intra-node links still carry every channel.
  return {std::min(intra, 2 * bus), 2 * std::min(bus, node_algbw)};
}

int nsteps(CollectiveKind k, int n) {
  if (k == CollectiveKind::AllReduce) return 2 * (n - 1);
  if (k == CollectiveKind::AllGather || k == CollectiveKind::ReduceScatter) return n - 1;
  return n;
}

struct Candidate {
  CollAlgo algo;
  CollProto proto;
  double lat_us, algbw_gbps;
  double fill_us = 0;  // pipeline fill: time the last chunk spends behind the first
  // NCCL's own estimate of the algorithm bandwidth where it differs from what the fabric gives
  // (the 2-node tree): the tuner chooses with it, the call then runs at algbw_gbps. 0: the same.
  double select_gbps = 0;
  // Time NCCL's estimate leaves out and the call takes (a rooted ring's chain across nodes, beyond
  // the one hop the tuner charges): added to the call's latency, not to what the tuner compares.
  double unseen_us = 0;
  // CTAs the pair's kernel runs on each rank, one per channel it uses (the SMs it holds).
  int ctas = 1;
};

// Channels NCCL runs a ring/tree call on (topoGetAlgoInfo): from comm->nChannels, one fewer while
// the call has less than nThreads x threadThreshold bytes per channel (ring LL: 8 B x nRanks per
// thread, 512 threads; LL128: 8 B, 640 threads; Simple: 64 B, 512 threads). On 8 ranks a ring LL
// channel wants 32 KiB, so a 256 KiB call runs on 8 channels and 1 MiB on all of them.
int channels_used(double bytes, int proto, bool ring, int n, int nch) {
  const double per_channel = proto == 0
                                 ? double{kLlMaxThreads} * kLlThreadThreshold * (ring ? n : 1)
                             : proto == 1 ? double{kLl128MaxThreads} * kLl128ThreadThreshold
                                          : double{kSimpleMaxThreads} * kSimpleThreadThreshold;
  return std::clamp(static_cast<int>(bytes / per_channel), 1, nch);
}

// NVLS chunk size (computeColl / calcCollChunking in src/enqueue.cc): NVLS starts at
// nvlsChunkSize (128 KiB) per (channel x head), NVLS_TREE at its version's start (above), at most
// 64 KiB from 4 nodes; both halve for calls too small to keep every (channel x head) busy for
// several rounds.
double nvls_chunk(double bytes, double ops, const Topo& t) {
  if (t.nodes == 1) {
    double c = kNvlsChunkBytes;
    if (bytes < 64 * ops * c) c = 65536;
    if (bytes < 8 * ops * c) c = 32768;
    if (bytes < 2 * ops * c) c = 16384;
    return c;
  }
  double c = t.nccl223() ? kNvlsChunkBytes : kSimpleStepBytes;
  if (t.nodes >= 4) c = std::min(c, kNvlsTreeMaxChunkBytes4Nodes);
  if (bytes < 32 * ops * c && c > 262144) c = 262144;
  if (bytes < 16 * ops * c && c > 131072) c = 131072;
  if (bytes < 4 * ops * c && c > 65536) c = 65536;
  if (bytes < ops * c && c > 32768) c = 32768;
  return c;
}

// The most one ring channel carries across nodes (GB/s of bus bandwidth), infinity where nothing
// but the fabric bounds it: LL through host memory at kLlNetChannelGbps; Simple on Hopper under
// NCCL 2.20+ at kHopperSimpleNetRingChannelGbps (one CTA per channel, 16 channels on 8 NICs), a
// broadcast or reduce `chain` at kHopperSimpleNetChainChannelGbps (half the slice, one slice cost).
double ring_net_channel_gbps(const Topo& t, int p, bool chain = false) {
  if (t.nodes < 2) return std::numeric_limits<double>::infinity();
  if (p == 0) return kLlNetChannelGbps;
  if (p == 2 && t.hopper && t.nccl >= kNccl220)
    return chain ? kHopperSimpleNetChainChannelGbps : kHopperSimpleNetRingChannelGbps;
  return std::numeric_limits<double>::infinity();
}

// NVLS (one node) or NVLS_TREE (several nodes) all-reduce. Data moves in rounds of
// nvlsChannels x nHeads chunks; the pipeline has 2 stages in a node (reduce through the switch,
// multicast back) and 3 across nodes (reduce in the node, the exchange between the nodes,
// multicast): a call takes its bytes at the NVLS bandwidth plus stages - 1 rounds of fill.
Candidate nvls_candidate(const Topo& t, double bus_gbps, double bytes) {
  const bool tree = t.nodes > 1;
  double algbw = t.nvls_link_bw * kNvlsAlgbwPerLinkBw / 1e9;
  double lat = t.nccl223() ? kNvlsLat223 : kNvlsLat;
  double select = 0;
  if (tree) {
    // tuning.cc: NVLS_TREE bandwidth min(bwIntra, nNodes <= 2 ? bwInter : bwInter / 2): the
    // network carries each GPU's 1/ppn share up and down the tree.
    const double intra = algbw * kNvlsTreeEfficiency;
    algbw = std::min(intra, t.nodes <= 2 ? bus_gbps : bus_gbps / 2);
    // Each of the nvlsChannels CTAs sends its share to the network at most at a ring channel's
    // rate across nodes (ring_net_channel_gbps: Hopper, NCCL 2.20+); NCCL's estimate does not
    // know it, so the tuner still chooses with the uncapped figure.
    const double net = t.nvls_channels * ring_net_channel_gbps(t, 2);
    if (const double capped = std::min(intra, t.nodes <= 2 ? net : net / 2); capped < algbw) {
      select = algbw;
      algbw = capped;
    }
    lat += 2 * std::floor(std::log2(t.nodes)) * kNvlsTreeNetLat;
  }
  const double ops = static_cast<double>(t.nvls_channels) * t.ppn;
  const double round = std::min(bytes, ops * nvls_chunk(bytes, ops, t));
  Candidate k{CollAlgo::Nvls, CollProto::Simple, lat, algbw, (tree ? 2 : 1) * round / (1e3 * algbw),
              select};
  k.ctas = t.nvls_channels;
  return k;
}

// What a rooted ring's chain across nodes (n - 1 hops) holds beyond the one hop NCCL's tuner
// charges (kLl128StepDataBytes above). With the channel's rotation the chain crosses every node
// boundary (nodes hops, nodes - 1 with one rank per node), the rest over the node's links: every
// hop's latency for protocol `p` (1 LL128, 2 Simple) and one chunk at the channel's rate (`bw`
// GB/s over `nc` channels) at every network hop.
double rooted_chain_unseen_us(int n, const Topo& t, int p, double bytes, int nc, double bw) {
  const int net_hops = std::min(n - 1, t.nodes);
  const int intra_hops = n - 1 - net_hops;
  double us = intra_hops * hw_lat(t, t.intra, 1, p) + (net_hops - 1) * hw_lat(t, kNet, 1, p);
  const double chunk = std::min(p == 1 ? kLl128StepDataBytes : kRootedSimpleChunkBytes,
                                bytes / static_cast<double>(nc));
  us += net_hops * chunk / (1e3 * bw / nc);
  return us;
}

// What a tree LL call across nodes holds at its 2 log2(nodes) network hops beyond NCCL's estimate:
// one chunk (kLlStepDataBytes above) per hop at one channel's LL rate across nodes, on `nc`
// channels. Nothing for other protocols or on one node.
double ll_tree_hold_us(const Topo& t, int p, double bytes, int nc) {
  if (p != 0 || t.nodes < 2) return 0;
  const double chunk = std::min(kLlStepDataBytes, bytes / static_cast<double>(nc));
  return 2 * std::floor(std::log2(t.nodes)) * chunk / (1e3 * kLlNetChannelGbps);
}

// NCCL's ncclTopoTuneModel for one call: every (algorithm, protocol) with its latency and
// algorithm bandwidth. `bus` is the fabric's ring bus bandwidth in GB/s, `tree_bus` the tree's
// (twice its algorithm bandwidth before NCCL's factors), `nch` NCCL's channels.
std::vector<Candidate> candidates(CollectiveKind kind, int n, const Topo& t, double bus,
                                  TreeBus tree_bus, double bytes) {
  std::vector<Candidate> out;
  const int nch = t.nccl_channels;
  const int idx2 = t.nodes <= 2 ? t.nodes - 1 : 2;
  const double ll_max = t.nccl223() && t.nodes == 1 && t.gen == 2
                            ? kLlMaxBwHopper223
                            : kLlMaxBw[t.nodes == 1 ? t.gen : (t.amd_host ? 1 : 0)][idx2];
  const bool ll128 = t.intra == kNvlink;  // NCCL enables LL128 only over NVLink by default
  const Hw hw = t.nodes == 1 ? t.intra : kNet;
  const double net_overhead = t.nodes > 1 ? (t.amd_host ? 2.0 : 1.0) : 0.0;
  const bool rooted = kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
  for (int p = 0; p < 3; ++p) {
    if (p == 1 && !ll128) continue;
    const CollProto proto = p == 0 ? CollProto::LL : p == 1 ? CollProto::LL128 : CollProto::Simple;
    // Ring. Channels the call runs on carry their share of the fabric (Simple: one ring per
    // channel) or at most NCCL's per-channel LL128 bandwidth; LL is bounded as a whole.
    const int nc = channels_used(bytes, p, true, n, nch);
    double bw = bus;
    if (p == 0)
      bw = std::min(ll_max, bw * (t.nccl223() ? 1.0 / 2
                                  : t.nodes > 1 || kind == CollectiveKind::AllReduce ||
                                          kind == CollectiveKind::Reduce
                                      ? 1.0 / 4
                                      : 1.0 / 3));
    // LL128: at most perChMaxRingLL128Bw per channel of the ring graph (tuning.cc), and of the
    // channels the call runs on. NCCL 2.19 rates it at 0.7 of the bus with one GPU per node (a
    // GPU sending and receiving through its NIC), 0.92 otherwise; 2.23+ at 0.92 always.
    if (p == 1)
      bw = std::min(bw * (t.ppn < 2 && !t.nccl223() ? 0.7 : 0.92),
                    std::min(nc, t.nodes > 1 ? t.graph_channels : nc) * kPerChLl128Bw[t.gen]);
    if (p == 2) bw *= static_cast<double>(nc) / nch;
    // Across nodes a ring channel's network hop may have a rate of its own (ring_net_channel_gbps);
    // NCCL's tuner does not know it and still chooses with its own estimate.
    double ring_select = 0;
    if (const double cap = nc * ring_net_channel_gbps(t, p, rooted); bw > cap) {
      ring_select = bw * n / nsteps(kind, n);
      bw = cap;
    }
    const int steps = nsteps(kind, n);
    double lat = base_lat(t, 1, p);
    if (rooted) {
      lat += hw_lat(t, hw, 1, p);
    } else {
      const double intra = std::max(hw_lat(t, t.intra, 1, p), net_overhead * (p == 2 ? 3 : 1));
      const double inter = hw_lat(t, kNet, t.ppn == 1 ? 0 : 1, p);
      // NCCL 2.19 counts 2 nNodes network steps for an all-reduce ring, 2.23+ 2 (nNodes - 1).
      const int inter_steps = t.nodes == 1 ? 0
                              : kind == CollectiveKind::AllReduce
                                  ? 2 * (t.nccl223() ? t.nodes - 1 : t.nodes)
                                  : t.nodes - 1;
      lat += (steps - inter_steps) * intra + inter_steps * inter;
    }
    // NCCL 2.19+ ncclTopoGetAlgoTime: once each rank's share of each of comm->nChannels is 64 B.
    if (p == 2 && t.nodes > 1 && kind == CollectiveKind::AllReduce &&
        bytes / (static_cast<double>(nch) * n) >= 64)
      lat *= t.gen >= 1 ? 1.4 : 1.9;  // "plateau effect of ring"
    // Simple moves a ring step's chunk (at most 4 steps of 512 KiB per channel) in two slices,
    // and a rank forwards a slice only once all of it has arrived: the last slice trails the
    // first by one slice at the channel's rate (LL and LL128 forward line by line).
    double fill = 0;
    // A rooted ring across nodes is a chain of n - 1 hops, NCCL's tuner charging one (`lat`):
    // what the rest hold is rooted_chain_unseen_us's.
    const bool chain = rooted && t.nodes > 1 && p != 0;
    const double unseen = chain ? rooted_chain_unseen_us(n, t, p, bytes, nc, bw) : 0;
    if (p == 2 && !chain) {
      const double chunk = std::min(kRingChunkSteps * kSimpleStepBytes,
                                    bytes / (static_cast<double>(nc) * (rooted ? 1 : n)));
      fill = chunk / (kRingChunkSteps / kRingSliceSteps) / (1e3 * bw / nc);
    }
    out.push_back({CollAlgo::Ring, proto, lat, bw * n / steps, fill, ring_select, unseen, nc});
    // Double binary tree (all-reduce): half the bus bandwidth as algorithm bandwidth.
    if (kind == CollectiveKind::AllReduce) {
      // tuning.cc: every tree protocol at most nChannels x perChMaxTreeBw, LL128 further at most
      // nChannels x perChMaxTreeLL128Bw (the tree graph's channels, Topo::graph_channels).
      const double tree_cap = t.graph_channels * kPerChMaxTreeBw[t.gen][idx2];
      double tb = std::min(bus * 0.92, tree_cap), tsel = 0;
      if (p == 0) tb = std::min(tb / 3.8, ll_max);
      if (p == 1)
        tb = std::min(tb * (t.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      t.graph_channels * kPerChMaxTreeLl128Bw[t.gen][idx2]);
      if (p == 2) {
        const double used = static_cast<double>(channels_used(bytes, p, false, n, nch)) / nch;
        tsel = std::min(tree_bus.tuner * 0.92, tree_cap) * used;
        tb = std::min(tree_bus.fabric * 0.92, tree_cap) * used;
      }
      const int log_size = static_cast<int>(std::floor(std::log2(std::max(1.0, bytes / 64))));
      if (log_size < kTreeCorrectionSizes) {
        tb *= kTreeCorrection[p][std::max(0, log_size)];
        tsel *= kTreeCorrection[p][std::max(0, log_size)];
      }
      // Across nodes every chain step waits, as a ring step does, for the network proxy's post
      // (NCCL charges rings max(intra hop, net overhead) per step; its tuner leaves trees out).
      const double tintra = std::max(hw_lat(t, t.intra, 0, p), net_overhead * (p == 2 ? 3 : 1));
      const double tlat =
          base_lat(t, 0, p) +
          2 * ((t.ppn - 1) * tintra + std::floor(std::log2(t.nodes)) * hw_lat(t, kNet, 0, p));
      // LL across nodes: each tree channel's network edge carries the call's share of algbw
      // (tb / 2) at most at kLlNetChannelGbps (above); the tuner chooses uncapped.
      const int tree_nc = channels_used(bytes, p, false, n, nch);
      if (p == 0 && t.nodes > 1 && tb > 2 * tree_nc * kLlNetChannelGbps) {
        if (tsel == 0) tsel = tb;
        tb = 2 * tree_nc * kLlNetChannelGbps;
      }
      out.push_back({CollAlgo::Tree, proto, tlat, tb * 0.5, 0, tsel * 0.5,
                     ll_tree_hold_us(t, p, bytes, tree_nc)});
      out.back().ctas = tree_nc;
    }
  }
  if (t.nvls && kind == CollectiveKind::AllReduce) out.push_back(nvls_candidate(t, bus, bytes));
  // PAT (NCCL 2.23+): all-gather and reduce-scatter with one GPU per node, chosen for its
  // logarithmic latency where a ring pays one network hop per rank.
  if (t.nccl223() && t.ppn == 1 && t.nodes > 1 &&
      (kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter))
    out.push_back({CollAlgo::Pat, CollProto::Simple,
                   kPatBaseLat + std::floor(std::log2(t.nodes)) * hw_lat(t, kNet, 0, 2) / 3.5 +
                       n * kPatPerRankLat,
                   bus * kPatEfficiency, 0, 0, 0, nch});
  return out;
}

}  // namespace

std::string to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all-reduce";
    case CollectiveKind::AllGather:
      return "all-gather";
    case CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Reduce:
      return "reduce";
    case CollectiveKind::AllToAll:
      return "all-to-all";
    case CollectiveKind::SendRecv:
      return "send-recv";
  }
  return "?";
}
std::string to_string(CollAlgo a) {
  static const char* names[] = {"auto", "ring", "tree", "nvls", "direct", "pat"};
  return names[static_cast<int>(a)];
}
std::string to_string(CollProto p) {
  static const char* names[] = {"auto", "LL", "LL128", "Simple"};
  return names[static_cast<int>(p)];
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view s) {
  const std::string k = lower_alnum(s);
  for (CollectiveKind c :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::Broadcast, CollectiveKind::Reduce, CollectiveKind::AllToAll,
        CollectiveKind::SendRecv})
    if (lower_alnum(to_string(c)) == k) return c;
  if (k == "alltoall" || k == "a2a") return CollectiveKind::AllToAll;
  if (k == "sendrecv" || k == "p2p") return CollectiveKind::SendRecv;
  return std::nullopt;
}
std::optional<CollAlgo> parse_coll_algo(std::string_view s) {
  const std::string k = lower_alnum(s);
  for (CollAlgo a : {CollAlgo::Auto, CollAlgo::Ring, CollAlgo::Tree, CollAlgo::Nvls,
                     CollAlgo::Direct, CollAlgo::Pat})
    if (to_string(a) == k) return a;
  return std::nullopt;
}
std::optional<int> parse_nccl_version(std::string_view s) {
  const std::string v(s.substr(0, s.find('-')));  // "2.23.4-1": the package revision goes
  std::vector<int> parts;
  for (std::size_t i = 0;;) {
    std::size_t j = i;
    while (j < v.size() && std::isdigit(static_cast<unsigned char>(v[j]))) ++j;
    if (j == i || j - i > 6 || parts.size() == 3) return std::nullopt;
    parts.push_back(std::stoi(v.substr(i, j - i)));
    if (j == v.size()) break;
    if (v[j] != '.') return std::nullopt;
    i = j + 1;
  }
  int code = parts[0];  // one number: NCCL_VERSION_CODE
  if (parts.size() > 1)
    code = parts[0] == 2 && parts[1] < 100 && (parts.size() < 3 || parts[2] < 100)
               ? 20000 + parts[1] * 100 + (parts.size() == 3 ? parts[2] : 0)
               : 0;
  if (code < 20000 || code >= 30000) return std::nullopt;
  return code;
}
std::string nccl_version_expected(std::string_view got) {
  return "an NCCL 2.x version such as 2.19, 2.23.4 or 22304, got \"" + printable(got) + "\"";
}
std::string nccl_version_string(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}
std::optional<CollProto> parse_coll_proto(std::string_view s) {
  const std::string k = lower_alnum(s);
  for (CollProto p : {CollProto::Auto, CollProto::LL, CollProto::LL128, CollProto::Simple})
    if (lower_alnum(to_string(p)) == k) return p;
  return std::nullopt;
}

int nccl_gpu_generation(const DeviceSpec& s) {
  const int cc = s.arch.compute_capability();
  return cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

bool nccl_blackwell(const DeviceSpec& s) {
  return s.arch.compute_capability() >= 100;
}

double bus_factor(CollectiveKind k, int n) {
  if (n <= 1) return k == CollectiveKind::AllReduce ? 0.0 : 1.0;
  switch (k) {
    case CollectiveKind::AllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

CollectivePrediction predict_collective(const Cluster& c, const CollectiveCall& call,
                                        const std::vector<DeviceId>& ranks, int launches) {
  const std::string where = "<collective " + to_string(call.kind) + ">";
  std::set<DeviceId> seen;
  for (DeviceId d : ranks) {
    if (d < 0 || d >= c.num_devices() || c.devices[d].spec.kind != DeviceKind::Gpu)
      throw InputError(where, "devices",
                       "GPUs of cluster " + c.name + ", got a CPU or unknown device");
    if (!seen.insert(d).second)
      throw InputError(where, "devices", "distinct devices, got " + c.devices[d].name + " twice");
  }
  if (ranks.empty()) throw InputError(where, "devices", "at least one GPU, got none");
  if (call.kind == CollectiveKind::SendRecv && ranks.size() != 2)
    throw InputError(
        where, "devices",
        "two devices (sender, receiver) for send-recv, got " + std::to_string(ranks.size()));
  if (call.algo == CollAlgo::Tree && call.kind != CollectiveKind::AllReduce)
    throw InputError(where, "algo",
                     "ring for " + to_string(call.kind) + " (tree is all-reduce only)");
  CollectivePrediction out;
  const int n = static_cast<int>(ranks.size());
  const double bytes = static_cast<double>(call.bytes.v);
  const double launch_us = std::max(0, launches) * kNcclLaunchUs;
  if (n == 1) {  // NCCL copies the buffer locally (out of place) or does nothing: the launch
    out.time = Duration::from_seconds_ceil(launch_us * 1e-6);
    out.fixed = out.time;
    return out;
  }
  Topo t = analyse(c, ranks);
  // The call's own version (collective --nccl-version) wins over the cluster's fabric.
  t.nccl = call.nccl_version > 0 ? call.nccl_version
           : c.nccl_version > 0  ? c.nccl_version
                                 : kDefaultNcclVersion;
  out.nodes = t.nodes;
  if (call.algo == CollAlgo::Nvls && (!t.nvls || call.kind != CollectiveKind::AllReduce))
    throw InputError(
        where, "algo",
        "nvls only for an all-reduce of GPUs that reach one NVLink 4 switch in each node");

  std::vector<Candidate> cand;
  if (call.kind == CollectiveKind::AllToAll || call.kind == CollectiveKind::SendRecv) {
    // Point-to-point: every pair's flow at once (one for send/recv), Simple protocol; the slowest
    // flow ends the call. Latency: one step of the ring's Simple protocol (assumed; NCCL's tuner
    // does not model p2p).
    const std::vector<Flow> flows = direct_flows(call.kind, t, ranks);
    const std::vector<double> r = maxmin_rates(c, flows, t.shm);
    const double slow = *std::min_element(r.begin(), r.end()) * (t.shm ? kShmRateFraction : 1.0);
    const double per_flow = call.kind == CollectiveKind::SendRecv ? bytes : bytes / n;
    const Hw hw = t.nodes == 1 ? t.intra : kNet;
    cand.push_back({CollAlgo::Direct, CollProto::Simple, kBaseLat[1][2] + kHwLat[hw][1][2],
                    bytes / (per_flow / slow) / 1e9});
    cand.back().ctas = t.nccl_channels;
    out.fabric_busbw_gbps = slow / 1e9;
  } else {
    int ch = 1;
    const bool rooted =
        call.kind == CollectiveKind::Broadcast || call.kind == CollectiveKind::Reduce;
    const double bus =
        ring_busbw(c, t, &ch, rooted && call.root >= 0 && call.root < n ? ranks[call.root] : -1) /
        1e9 * (t.shm ? kShmRateFraction : 1.0);
    out.fabric_busbw_gbps = bus;
    out.channels = ch;
    if (t.nodes > 1) t.nccl_channels = std::clamp(2 * ch, 2, kMaxChannels);
    // Across nodes one graph channel per NIC; a cluster whose nodes meet without NIC vertices
    // keeps the rings' own count (one per GPU of a node).
    const int nics = t.nodes > 1 ? ring_nics(c, t) : 0;
    t.graph_channels = t.nodes == 1 ? t.nccl_channels : nics > 0 ? nics : ch;
    cand = candidates(call.kind, n, t, bus, tree_bus(c, t, bus), bytes);
  }
  bool found = false;
  double best = std::numeric_limits<double>::infinity(), best_sel = best;
  for (const Candidate& k : cand) {
    if (call.algo != CollAlgo::Auto && k.algo != call.algo) continue;
    if (call.proto != CollProto::Auto && k.proto != call.proto) continue;
    if (k.algbw_gbps <= 0) continue;
    const double us = k.lat_us + k.unseen_us + bytes / (1e3 * k.algbw_gbps) + k.fill_us;
    // The tuner chooses by its own estimate; the call takes what the fabric gives.
    const double sel =
        k.lat_us + bytes / (1e3 * (k.select_gbps > 0 ? k.select_gbps : k.algbw_gbps)) + k.fill_us;
    if (sel < best_sel) {
      best_sel = sel;
      best = us;
      found = true;
      out.algo = k.algo;
      out.proto = k.proto;
      out.latency_us = k.lat_us + k.unseen_us;
      out.algbw_gbps = k.algbw_gbps;
      out.fill_us = k.fill_us;
      out.ctas = k.ctas;
    }
  }
  if (!found)
    throw InputError(where, "algo/proto",
                     "a pair that applies to " + to_string(call.kind) + " on " + c.name + ", got " +
                         to_string(call.algo) + "/" + to_string(call.proto));
  out.time = Duration::from_seconds_ceil((best + launch_us) * 1e-6);
  out.fixed = std::min(
      out.time, Duration::from_seconds_ceil((out.latency_us + out.fill_us + launch_us) * 1e-6));
  return out;
}

std::vector<std::vector<Hop>> collective_routes(const Cluster& c, const CollectiveCall& call,
                                                const std::vector<DeviceId>& ranks) {
  std::vector<std::vector<Hop>> out;
  if (ranks.size() < 2) return out;
  const Topo t = analyse(c, ranks);
  int channels = 1;
  const std::vector<Flow> flows =
      call.kind == CollectiveKind::AllToAll || call.kind == CollectiveKind::SendRecv
          ? direct_flows(call.kind, t, ranks)
          : ring_flows(c, t, &channels);
  NicPlan plan;  // the same NIC choice, flow by flow, as maxmin_rates makes
  for (const Flow& f : flows) out.push_back(flow_hops(c, f, plan, t.shm));
  return out;
}

}  // namespace placesim::sim

// The cluster: devices (CPUs and GPUs), the fabric between them (switches, host bridges, NICs,
// links), peer-access rules and the routes between every pair of devices. An immutable value
// once built; `load_cluster()` reads the YAML format of docs/formats.md.
//
//   const Cluster c = load_cluster("paper-4gpu");          // a built-in name or a file path
//   const DeviceId g0 = c.device_index("gpu0");
//   const Route& r = c.route(c.device_index("gpu0"), c.device_index("gpu3"));
//   for (const RouteSegment& s : r.segments)               // 2 segments when staged via host
//     for (const Hop& h : s.hops) use(c.links[h.link], h.forward);
//
// Vertices of the fabric are devices, switches, host bridges and NICs. They share one name space
// (`vertices`); devices are the first `devices.size()` vertices, in file order, so DeviceId is
// also a VertexId.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/units.hpp"

namespace placesim::sim {

using DeviceId = std::int32_t;
using VertexId = std::int32_t;
using LinkId = std::int32_t;

enum class DeviceKind { Cpu, Gpu };

/// Element types of tensors and of peak-rate tables.
enum class Dtype { F64, F32, TF32, F16, BF16, FP8, I64, I32, I8, U8, Bool };

std::string to_string(DeviceKind k);
std::string to_string(Dtype d);
/// Parses "f32"/"float32"/"float", "f16"/"half", "bf16", "tf32", "f64"/"double", "fp8",
/// "i64"/"int64", "i32"/"int", "i8", "u8", "bool". Returns nullopt for anything else.
std::optional<Dtype> parse_dtype(std::string_view s);
/// Size of one element in bytes.
std::int64_t dtype_size(Dtype d);

/// What a device can do. Every number in the catalog carries its source (`source`).
/// A GPU's NVLink and PCIe host link: what the datasheet gives, per GPU.
struct GpuInterconnect {
  int nvlinks = 0;         ///< NVLinks per GPU (bridges included); 0 = none
  int nvlink_version = 0;  ///< NVLink generation 1-5; 0 = no NVLink
  double nvlink_gb_s = 0;  ///< one link, GB/s per direction
  int pcie_gen = 0;        ///< PCIe generation of the x16 host link (3-5); 0 = not given
};

/// GPU architecture as the catalog gives it: NVIDIA's CUDA compute capability (major.minor) or
/// AMD's gfx target. The cost model (docs/cost-model.md) and the collective model's NCCL
/// generation (nccl_gpu_generation, docs/collectives.md) decide from it, not from the model name.
/// A device with explicit specs has none unless its cluster file gives `arch` (docs/formats.md).
struct GpuArch {
  enum class Vendor { None, Nvidia, Amd };
  Vendor vendor = Vendor::None;
  int major = 0;    ///< NVIDIA compute capability, e.g. 9 of 9.0 (Hopper)
  int minor = 0;    ///< e.g. 6 of 8.6
  std::string gfx;  ///< AMD gfx target, e.g. "gfx942"; empty on NVIDIA
  /// NVIDIA compute capability `maj`.`min` exactly.
  [[nodiscard]] bool nvidia(int maj, int min) const {
    return vendor == Vendor::Nvidia && major == maj && minor == min;
  }
  /// NVIDIA Hopper: compute capability 9.x.
  [[nodiscard]] bool hopper() const { return vendor == Vendor::Nvidia && major == 9; }
  /// NVIDIA compute capability as CUDA and NCCL write it (10 x major + minor: 90 for 9.0); 0 for
  /// AMD or none.
  [[nodiscard]] int compute_capability() const {
    return vendor == Vendor::Nvidia ? 10 * major + minor : 0;
  }
};
/// The compute capability for NVIDIA ("9.0"), the gfx target for AMD ("gfx942"), "" for none.
std::string to_string(const GpuArch& a);

struct DeviceSpec {
  std::string model;  ///< catalog name, e.g. "V100-SXM2-16GB", or "custom"
  DeviceKind kind = DeviceKind::Gpu;
  std::map<Dtype, FlopRate> peak_flops;  ///< dense peak per dtype (tensor cores where used)
  Bandwidth memory_bandwidth;            ///< DRAM/HBM bandwidth
  Bytes memory_capacity;                 ///< usable device memory (host DRAM for a CPU)
  int compute_streams = 1;               ///< GPU: streams kernels run on; frameworks default to 1
  /// GPU: streaming multiprocessors (catalog; 0 = unknown): one wave of a GEMM-like kernel runs at
  /// most this many thread-block tiles at once (wave quantisation, docs/cost-model.md).
  int sm_count = 0;
  int worker_threads = 1;  ///< CPU: inter-op worker threads running ops
  int h2d_engines = 1;     ///< GPU copy engines by direction (catalog)
  int d2h_engines = 1;
  int peer_engines = 1;            ///< engines usable for peer (GPU->GPU) copies
  Duration launch_overhead{5000};  ///< host-side dispatch time per op on this device
  /// CPU: threads one op may use (its intra-op parallelism); an op alone gets at most
  /// min(1, intra_op_threads / worker_threads) of the socket. 0 = all worker threads (TensorFlow's
  /// and PyTorch's default: the intra-op pool spans every core).
  int intra_op_threads = 0;
  /// GPU: memory of `memory_capacity` no tensor can use (driver/ECC reservation, CUDA context,
  /// library handles and workspaces, the framework's own reserve). OOM = peak + reserved >
  /// capacity.
  Bytes reserved_memory{0};
  /// GPU: host time to issue one copy (framework + cudaMemcpyAsync), on the launching host thread
  /// of the GPU whose copy engine does it.
  Duration copy_issue_overhead{0};
  /// GPU: time from a copy's issue to its first byte on the wire (DMA descriptor setup, doorbell),
  /// added to the route latency of every copy segment its engines run.
  Duration dma_setup_latency{0};
  /// GPU: the device's own idle between two kernels queued back to back on one stream (drain of
  /// the first grid, dispatch of the next); the next kernel starts at max(launch end, previous
  /// kernel's end + kernel_gap) (docs/engine.md). Catalog and explicit `arch`: default_kernel_gap
  /// (sim/kernel_gap.hpp); a cluster file's `kernel_gap` or a calibration's measured one replace
  /// it. `kernel_gap_source` says which.
  Duration kernel_gap{0};
  std::string kernel_gap_source;
  /// GPU interconnect as the catalog gives it (sim/catalog.cpp; `import topo` builds links from
  /// it). Not part of the cluster format: a cluster file gives links, not these.
  GpuInterconnect interconnect;
  /// GPU architecture: the catalog's (sim/catalog.cpp), or `arch` of explicit specs.
  GpuArch arch;
  /// GPU: what a large f16/bf16 cuBLAS GEMM measured on this part reaches, as a fraction of its
  /// catalog F16 peak (above 1 where a board clocks past the rated boost the peak is quoted at),
  /// and the measurement's source. Catalog only, for parts whose generation has no measured curve
  /// (GA102: RTX 3090, RTX A6000); the cost model's gemm_curve prices f16/bf16 matmuls by it
  /// (docs/cost-model.md, "GEMM curves"). nullopt: not measured.
  std::optional<double> half_gemm_e_max;
  std::string half_gemm_source;
  std::string source;  ///< where the numbers came from

  /// Peak rate for `d`, falling back to F32 when the dtype has no entry.
  [[nodiscard]] FlopRate peak_for(Dtype d) const;
};

struct Device {
  std::string name;
  DeviceSpec spec;
  std::string node;  ///< machine the device sits in ("node0")
  /// For a GPU: the CPU device whose host thread launches its kernels and whose memory stages
  /// copies without peer access. For a CPU: itself.
  DeviceId host = -1;
};

enum class VertexKind { Device, Switch, HostBridge, Nic };
std::string to_string(VertexKind k);

struct Vertex {
  std::string name;
  VertexKind kind = VertexKind::Device;
  std::string node;
};

/// How concurrent flows share a link (SimGrid's sharing policies).
///  - Shared:      one capacity for both directions together.
///  - SplitDuplex: each direction has its own capacity (PCIe, NVLink, InfiniBand are full duplex).
///  - FatPipe:     every flow may use the full capacity; flows do not contend (a backplane or
///                 crossbar modelled as non-blocking).
enum class SharingPolicy { Shared, SplitDuplex, FatPipe };
std::string to_string(SharingPolicy p);

struct Link {
  std::string name;         ///< "gpu0-sw0" unless the file names it
  VertexId a = -1, b = -1;  ///< endpoints; "forward" is a -> b
  Bandwidth bandwidth;      ///< per direction
  Duration latency{0};
  SharingPolicy sharing = SharingPolicy::SplitDuplex;
  std::string kind;  ///< free-form class used by sweeps: "pcie3", "nvlink2", "ib", ...
  /// Flows over this link are TCP: they share bottlenecks in proportion to 1 / route latency and
  /// are bound by window / (2 x route latency) (SimGrid CM02; sim/network.hpp).
  bool tcp = false;
};

struct Hop {
  LinkId link = -1;
  bool forward = true;  ///< traversed a -> b
};

/// One copy from `from` to `to` over `hops`.
struct RouteSegment {
  DeviceId from = -1, to = -1;
  std::vector<Hop> hops;
  Duration latency{0};   ///< sum of link latencies on the hops
  Bandwidth bottleneck;  ///< smallest link bandwidth on the hops (no contention)
};

/// The way a tensor travels from one device to another: one segment, or two when the GPUs have
/// no peer access and the copy is staged through the source GPU's host memory.
struct Route {
  std::vector<RouteSegment> segments;
  [[nodiscard]] bool staged() const { return segments.size() > 1; }
  [[nodiscard]] bool empty() const { return segments.empty(); }
};

struct Cluster {
  std::string name;
  std::string source_file;  ///< where it was read from ("<built-in paper-4gpu>")
  std::vector<Device> devices;
  std::vector<Vertex> vertices;  ///< devices first, then switches, bridges, NICs
  std::vector<Link> links;
  /// peer_access[i][j]: GPU i may copy directly to GPU j (symmetric, false on the diagonal
  /// and for CPUs, which need none).
  std::vector<std::vector<bool>> peer_access;
  /// routes[i][j] for devices i != j; empty on the diagonal.
  std::vector<std::vector<Route>> routes;
  /// TCP window (bytes) bounding flows over `tcp` links; SimGrid's network/TCP-gamma default.
  double tcp_window_bytes = 4194304.0;
  /// The fabric's NCCL (NCCL_VERSION_CODE, 22602 for 2.26.2; YAML key `nccl_version`): whose tuner
  /// every collective simulated on this cluster takes unless the call names its own. 0: the
  /// model's default, NCCL 2.19 (docs/collectives.md, "NCCL versions").
  int nccl_version = 0;

  [[nodiscard]] DeviceId device_index(std::string_view name) const;  ///< -1 if absent
  [[nodiscard]] VertexId vertex_index(std::string_view name) const;  ///< -1 if absent
  [[nodiscard]] const Route& route(DeviceId from, DeviceId to) const { return routes[from][to]; }
  [[nodiscard]] int num_devices() const { return static_cast<int>(devices.size()); }
  [[nodiscard]] std::vector<DeviceId> gpus() const;
  [[nodiscard]] std::vector<DeviceId> cpus() const;
};

/// Reads a cluster: a built-in scenario name ("paper-4gpu", see scenarios/clusters/) or a YAML
/// file path. Validates it and computes routes. Throws InputError on bad input.
Cluster load_cluster(const std::string& name_or_path);
/// Parses cluster YAML text; `origin` names the file in error messages.
Cluster parse_cluster_yaml(const std::string& text, const std::string& origin);
/// Writes the cluster as YAML that parse_cluster_yaml reads back to an equal cluster.
std::string cluster_to_yaml(const Cluster& c);
/// Names of the built-in scenarios, sorted.
std::vector<std::string> builtin_cluster_names();

/// (Re)computes `routes` from the links: shortest paths by hop count over the fabric, ties broken
/// by the lower total latency, then by the lexicographically smaller sequence of link ids; GPU
/// pairs without peer access are staged through the source GPU's host. Throws InputError naming
/// the first device with no route to another.
void compute_routes(Cluster& c);

}  // namespace placesim::sim

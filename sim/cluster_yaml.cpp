// The cluster YAML format (docs/formats.md): reader with key-path + line errors, writer, and the
// search for built-in scenarios.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <set>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "sim/catalog.hpp"
#include "sim/cluster.hpp"
#include "sim/collective_call.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/kernel_gap.hpp"

namespace placesim::sim {
namespace {

namespace fs = std::filesystem;

// Reading context: the file name for messages and helpers that turn a YAML node into a typed
// value or a one-line InputError naming the key path and the line.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& path,
                         const std::string& expected) const {
    std::string key = path;
    if (n.IsDefined() && n.Mark().line >= 0) {
      key += (key.empty() ? "line " : " (line ") + std::to_string(n.Mark().line + 1) +
             (path.empty() ? "" : ")");
    }
    throw InputError(origin_, key, expected);
  }
  [[noreturn]] void fail_at(const std::string& path, const std::string& expected) const {
    throw InputError(origin_, path, expected);
  }

  static std::string shown(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return "nothing";
    if (n.IsScalar()) return "\"" + printable(n.Scalar()) + "\"";
    if (n.IsSequence()) return "a list";
    return "a mapping";
  }

  void expect_map(const YAML::Node& n, const std::string& path,
                  std::initializer_list<std::string_view> allowed) const {
    if (!n.IsMap()) fail(n, path, "a mapping, got " + shown(n));
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) fail(kv.first, path, "string keys");
      const std::string k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) {
          if (!list.empty()) list += ", ";
          list += a;
        }
        std::string key = path;
        if (!key.empty()) key += '.';
        key += k;
        fail(kv.first, key,
             "a known key (one of: " + list + "), got unknown key \"" + printable(k) + "\"");
      }
    }
  }

  std::string str(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "a string, got " + shown(n));
    if (n.Scalar().empty()) fail(n, path, "a non-empty string");
    return n.Scalar();
  }

  std::int64_t integer(const YAML::Node& n, const std::string& path, std::int64_t lo,
                       std::int64_t hi) const {
    if (!n.IsScalar()) fail(n, path, "an integer, got " + shown(n));
    std::int64_t v = 0;
    const std::string& s = n.Scalar();
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
      fail(n, path, "an integer, got " + shown(n));
    }
    if (v < lo || v > hi) {
      fail(n, path,
           "an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
               std::to_string(v));
    }
    return v;
  }

  template <typename T, typename Parse>
  T unit(const YAML::Node& n, const std::string& path, Parse parse) const {
    if (!n.IsScalar()) fail(n, path, "a quantity with a unit, got " + shown(n));
    try {
      return parse(n.Scalar());
    } catch (const InputError& e) {
      std::string msg = e.what();
      if (msg.rfind("expected ", 0) == 0) msg = msg.substr(9);
      fail(n, path, msg);
    }
  }

  // Bounds keep every derived time (bytes / bandwidth, FLOPs / peak, summed latencies) far
  // inside the int64 nanosecond range; real hardware sits well within them.
  Bandwidth positive_bandwidth(const YAML::Node& n, const std::string& path) const {
    const Bandwidth b = unit<Bandwidth>(n, path, parse_bandwidth);
    if (!(b.bytes_per_s > 0)) {
      fail(n, path, "a positive bandwidth such as \"12 GB/s\", got " + shown(n));
    }
    if (b.bytes_per_s < 1e6 || b.bytes_per_s > 1e18) {
      fail(n, path, "a bandwidth between 1 MB/s and 1000000 TB/s, got " + shown(n));
    }
    return b;
  }
  Bytes positive_bytes(const YAML::Node& n, const std::string& path) const {
    const Bytes b = unit<Bytes>(n, path, parse_bytes);
    if (b.v <= 0) fail(n, path, "a positive size such as \"16 GiB\", got " + shown(n));
    if (b.v > (std::int64_t{1} << 60)) fail(n, path, "a size up to 1024 PiB, got " + shown(n));
    return b;
  }
  Bytes nonneg_bytes(const YAML::Node& n, const std::string& path) const {
    const Bytes b = unit<Bytes>(n, path, parse_bytes);
    if (b.v < 0) fail(n, path, "a non-negative size such as \"512 MiB\", got " + shown(n));
    if (b.v > (std::int64_t{1} << 60)) fail(n, path, "a size up to 1024 PiB, got " + shown(n));
    return b;
  }
  FlopRate positive_rate(const YAML::Node& n, const std::string& path) const {
    const FlopRate r = unit<FlopRate>(n, path, parse_flop_rate);
    if (!(r.per_s > 0)) fail(n, path, "a positive rate such as \"8.7 TFLOP/s\", got " + shown(n));
    if (r.per_s < 1e9 || r.per_s > 1e21) {
      fail(n, path, "a rate between 1 GFLOP/s and 1000000 PFLOP/s, got " + shown(n));
    }
    return r;
  }
  Duration duration(const YAML::Node& n, const std::string& path) const {
    const Duration d = unit<Duration>(n, path, parse_duration);
    if (d.ns > 1'000'000'000'000) fail(n, path, "a duration up to 1000 s, got " + shown(n));
    return d;
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

std::string idx(const std::string& list, std::size_t i) {
  return list + "[" + std::to_string(i) + "]";
}

void apply_spec_fields(const Reader& rd, const YAML::Node& d, const std::string& path,
                       DeviceSpec& s) {
  if (d["peak_flops"]) {
    const YAML::Node pf = d["peak_flops"];
    if (!pf.IsMap())
      rd.fail(pf, path + ".peak_flops", "a mapping dtype -> rate, got " + Reader::shown(pf));
    for (const auto& kv : pf) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const auto dt = parse_dtype(key);
      if (!dt) {
        rd.fail(kv.first, path + ".peak_flops",
                "a dtype key (f64, f32, tf32, f16, bf16, fp8, i8), got \"" + printable(key) + "\"");
      }
      std::string key_path = path;
      key_path += ".peak_flops.";
      key_path += key;
      s.peak_flops[*dt] = rd.positive_rate(kv.second, key_path);
    }
  }
  if (d["memory_bandwidth"]) {
    s.memory_bandwidth = rd.positive_bandwidth(d["memory_bandwidth"], path + ".memory_bandwidth");
  }
  if (d["memory_capacity"]) {
    s.memory_capacity = rd.positive_bytes(d["memory_capacity"], path + ".memory_capacity");
  }
  if (d["compute_streams"]) {
    s.compute_streams =
        static_cast<int>(rd.integer(d["compute_streams"], path + ".compute_streams", 1, 1024));
  }
  if (d["sm_count"]) {
    // Wave quantisation divides a kernel's tiles by it (docs/cost-model.md): a GPU property.
    if (s.kind != DeviceKind::Gpu)
      rd.fail(d["sm_count"], path + ".sm_count",
              "no sm_count on a CPU (streaming multiprocessors are a GPU's), got " +
                  Reader::shown(d["sm_count"]));
    s.sm_count = static_cast<int>(rd.integer(d["sm_count"], path + ".sm_count", 1, 4096));
  }
  if (d["worker_threads"]) {
    s.worker_threads =
        static_cast<int>(rd.integer(d["worker_threads"], path + ".worker_threads", 1, 1 << 20));
  }
  if (d["copy_engines"]) {
    const YAML::Node ce = d["copy_engines"];
    rd.expect_map(ce, path + ".copy_engines", {"h2d", "d2h", "peer"});
    if (ce["h2d"])
      s.h2d_engines = static_cast<int>(rd.integer(ce["h2d"], path + ".copy_engines.h2d", 0, 64));
    if (ce["d2h"])
      s.d2h_engines = static_cast<int>(rd.integer(ce["d2h"], path + ".copy_engines.d2h", 0, 64));
    if (ce["peer"])
      s.peer_engines = static_cast<int>(rd.integer(ce["peer"], path + ".copy_engines.peer", 0, 64));
  }
  if (d["launch_overhead"]) {
    s.launch_overhead = rd.duration(d["launch_overhead"], path + ".launch_overhead");
  }
  if (d["intra_op_threads"]) {
    s.intra_op_threads =
        static_cast<int>(rd.integer(d["intra_op_threads"], path + ".intra_op_threads", 0, 1 << 20));
  }
  if (d["reserved_memory"]) {
    s.reserved_memory = rd.nonneg_bytes(d["reserved_memory"], path + ".reserved_memory");
  }
  if (d["copy_issue_overhead"]) {
    s.copy_issue_overhead = rd.duration(d["copy_issue_overhead"], path + ".copy_issue_overhead");
  }
  if (d["dma_setup_latency"]) {
    s.dma_setup_latency = rd.duration(d["dma_setup_latency"], path + ".dma_setup_latency");
  }
  if (d["kernel_gap"]) {
    // The device's idle between queued kernels (docs/engine.md): a GPU property.
    const YAML::Node n = d["kernel_gap"];
    if (s.kind != DeviceKind::Gpu)
      rd.fail(n, path + ".kernel_gap",
              "no kernel_gap on a CPU (the gap between queued kernels is a GPU's), got " +
                  Reader::shown(n));
    const Duration g = rd.duration(n, path + ".kernel_gap");
    if (g.ns < 0)
      rd.fail(n, path + ".kernel_gap",
              "a non-negative duration such as \"1.1 us\", got " + Reader::shown(n));
    if (g != s.kernel_gap) s.kernel_gap_source = "set in " + rd.origin();
    s.kernel_gap = g;
  }
  if (d["source"]) s.source = rd.str(d["source"], path + ".source");
}

void check_name(const Reader& rd, const YAML::Node& n, const std::string& path,
                std::set<std::string>& seen, const std::string& name) {
  if (!seen.insert(name).second) {
    rd.fail(n, path, "a unique name, got \"" + printable(name) + "\" a second time");
  }
}

const YAML::Node& require(const Reader& rd, const YAML::Node& parent, const YAML::Node& n,
                          const std::string& path, const std::string& what) {
  if (!n) rd.fail(parent, path, what + " (the key is missing)");
  return n;
}

SharingPolicy parse_sharing(const Reader& rd, const YAML::Node& n, const std::string& path) {
  const std::string s = rd.str(n, path);
  if (s == "shared") return SharingPolicy::Shared;
  if (s == "split-duplex" || s == "split_duplex") return SharingPolicy::SplitDuplex;
  if (s == "fat-pipe" || s == "fat_pipe") return SharingPolicy::FatPipe;
  rd.fail(n, path, "one of shared, split-duplex, fat-pipe, got \"" + printable(s) + "\"");
}

bool parse_bool(const Reader& rd, const YAML::Node& n, const std::string& path) {
  const std::string s = rd.str(n, path);
  if (s == "true" || s == "yes") return true;
  if (s == "false" || s == "no") return false;
  rd.fail(n, path, "true or false, got \"" + printable(s) + "\"");
}

// Top-level `tcp`: `all` (every link carries TCP flows) or {links: all | [kind, ...], window: 4
// MiB}. Returns the kinds marked ("*" = all) and sets the window.
std::set<std::string> parse_tcp(const Reader& rd, const YAML::Node& n, Cluster& c) {
  std::set<std::string> kinds;
  if (n.IsScalar()) {
    if (rd.str(n, "tcp") != "all")
      rd.fail(n, "tcp", "all or a mapping {links: all | [kinds], window: bytes}");
    kinds.insert("*");
    return kinds;
  }
  rd.expect_map(n, "tcp", {"links", "window"});
  if (n["window"])
    c.tcp_window_bytes = static_cast<double>(rd.positive_bytes(n["window"], "tcp.window").v);
  const YAML::Node l = n["links"];
  if (!l) return kinds;
  if (l.IsScalar()) {
    if (rd.str(l, "tcp.links") != "all") rd.fail(l, "tcp.links", "all or a list of link kinds");
    kinds.insert("*");
  } else if (l.IsSequence()) {
    for (std::size_t i = 0; i < l.size(); ++i) kinds.insert(rd.str(l[i], idx("tcp.links", i)));
  } else {
    rd.fail(l, "tcp.links", "all or a list of link kinds, got " + Reader::shown(l));
  }
  return kinds;
}

// `arch` of a GPU with explicit specs: an NVIDIA compute capability "major.minor" ("9.0") or an
// AMD gfx target ("gfx942"), as docs/formats.md gives them.
GpuArch parse_arch(const Reader& rd, const YAML::Node& n, const std::string& path,
                   DeviceKind kind) {
  const std::string a = rd.str(n, path);
  const std::string expected =
      "an NVIDIA compute capability \"major.minor\" (\"9.0\") or an AMD gfx target (\"gfx942\")";
  if (kind != DeviceKind::Gpu)
    rd.fail(n, path,
            "no arch on a CPU (the architecture is a GPU's), got \"" + printable(a) + "\"");
  if (a.size() > 3 && a.starts_with("gfx") && std::all_of(a.begin() + 3, a.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) != 0;
      }))
    return {GpuArch::Vendor::Amd, 0, 0, a};
  const std::size_t dot = a.find('.');
  int major = 0, minor = 0;
  if (dot == std::string::npos) rd.fail(n, path, expected + ", got \"" + printable(a) + "\"");
  const auto [pm, em] = std::from_chars(a.data(), a.data() + dot, major);
  const auto [pn, en] = std::from_chars(a.data() + dot + 1, a.data() + a.size(), minor);
  if (em != std::errc{} || pm != a.data() + dot || en != std::errc{} || pn != a.data() + a.size() ||
      dot == 0 || dot + 1 == a.size() || major < 1 || major > 99 || minor < 0 || minor > 9)
    rd.fail(n, path, expected + ", got \"" + printable(a) + "\"");
  return {GpuArch::Vendor::Nvidia, major, minor, ""};
}

// One device entry: name, kind or catalog model, spec fields, node and the host name (resolved
// once every device is known, in resolve_hosts).
Device parse_device(const Reader& rd, const YAML::Node& d, const std::string& path,
                    std::set<std::string>& names, std::string& host_name) {
  rd.expect_map(d, path,
                {"name",
                 "kind",
                 "model",
                 "node",
                 "host",
                 "peak_flops",
                 "memory_bandwidth",
                 "memory_capacity",
                 "compute_streams",
                 "sm_count",
                 "worker_threads",
                 "copy_engines",
                 "launch_overhead",
                 "intra_op_threads",
                 "reserved_memory",
                 "copy_issue_overhead",
                 "dma_setup_latency",
                 "kernel_gap",
                 "arch",
                 "source"});
  Device dev;
  dev.name = rd.str(require(rd, d, d["name"], path + ".name", "a device name"), path + ".name");
  check_name(rd, d["name"], path + ".name", names, dev.name);
  std::optional<DeviceKind> kind;
  if (d["kind"]) {
    const std::string k = rd.str(d["kind"], path + ".kind");
    if (k == "cpu")
      kind = DeviceKind::Cpu;
    else if (k == "gpu")
      kind = DeviceKind::Gpu;
    else
      rd.fail(d["kind"], path + ".kind", "cpu or gpu, got \"" + printable(k) + "\"");
  }
  if (d["model"]) {
    const std::string m = rd.str(d["model"], path + ".model");
    const DeviceSpec* spec = find_device_model(m);
    if (spec == nullptr) {
      std::string list;
      for (const std::string& n : device_model_names()) list += (list.empty() ? "" : ", ") + n;
      rd.fail(d["model"], path + ".model",
              "a catalog model (" + list + ") or explicit specs without 'model', got \"" +
                  printable(m) + "\"");
    }
    dev.spec = *spec;
    if (kind && *kind != spec->kind) {
      rd.fail(
          d["kind"], path + ".kind",
          to_string(spec->kind) + " as the catalog says for " + m + ", got " + to_string(*kind));
    }
  } else {
    if (!kind) rd.fail(d, path, "either 'model' (from the catalog) or 'kind' with explicit specs");
    dev.spec = DeviceSpec{};
    dev.spec.model = "custom";
    dev.spec.kind = *kind;
    if (*kind == DeviceKind::Cpu) {
      dev.spec.h2d_engines = dev.spec.d2h_engines = dev.spec.peer_engines = 0;
    }
    for (const char* key : {"peak_flops", "memory_bandwidth", "memory_capacity"}) {
      if (!d[key])
        rd.fail(
            d, path + "." + key,
            std::string("'") + key + "' for a device without a catalog model (the key is missing)");
    }
    dev.spec.source = "explicit in " + rd.origin();
    if (d["arch"]) dev.spec.arch = parse_arch(rd, d["arch"], path + ".arch", *kind);
    if (*kind == DeviceKind::Gpu) {
      const KernelGapDefault gap = default_kernel_gap(dev.spec.arch);
      dev.spec.kernel_gap = gap.gap;
      dev.spec.kernel_gap_source = gap.source;
    }
  }
  if (d["model"] && d["arch"])
    rd.fail(d["arch"], path + ".arch",
            "no 'arch' with a catalog model (the catalog gives " + dev.spec.model + "'s: \"" +
                to_string(dev.spec.arch) + "\"); 'arch' goes with explicit specs");
  apply_spec_fields(rd, d, path, dev.spec);
  if (dev.spec.peak_flops.empty() || dev.spec.peak_for(Dtype::F32).per_s <= 0) {
    rd.fail(d, path + ".peak_flops", "a peak rate for f32 at least");
  }
  dev.node = d["node"] ? rd.str(d["node"], path + ".node") : "node0";
  if (d["host"]) host_name = rd.str(d["host"], path + ".host");
  return dev;
}

// Hosts: a GPU's host is named or the first CPU of its node.
void resolve_hosts(const Reader& rd, const YAML::Node& devs,
                   const std::vector<std::string>& host_names, Cluster& c) {
  for (std::size_t i = 0; i < c.devices.size(); ++i) {
    Device& dev = c.devices[i];
    const std::string path = idx("devices", i) + ".host";
    if (dev.spec.kind == DeviceKind::Cpu) {
      if (!host_names[i].empty() && host_names[i] != dev.name) {
        rd.fail(devs[i]["host"], path,
                "no host for a CPU (or itself), got \"" + host_names[i] + "\"");
      }
      dev.host = static_cast<DeviceId>(i);
      continue;
    }
    if (!host_names[i].empty()) {
      const DeviceId h = c.device_index(host_names[i]);
      if (h < 0 || c.devices[static_cast<std::size_t>(h)].spec.kind != DeviceKind::Cpu) {
        rd.fail(devs[i]["host"], path,
                "the name of a CPU device, got \"" + printable(host_names[i]) + "\"");
      }
      dev.host = h;
    } else {
      for (std::size_t j = 0; j < c.devices.size(); ++j) {
        if (c.devices[j].spec.kind == DeviceKind::Cpu && c.devices[j].node == dev.node) {
          dev.host = static_cast<DeviceId>(j);
          break;
        }
      }
      if (dev.host < 0) {
        rd.fail(devs[i], idx("devices", i),
                "a CPU device in node " + dev.node + " to host GPU " + dev.name + " (none found)");
      }
    }
  }
}

// Top-level `devices`: every device, then their hosts.
void parse_devices(const Reader& rd, const YAML::Node& root, std::set<std::string>& names,
                   Cluster& c) {
  const YAML::Node devs = require(rd, root, root["devices"], "devices", "a list of devices");
  if (!devs.IsSequence() || devs.size() == 0) {
    rd.fail(devs, "devices", "a non-empty list of devices, got " + Reader::shown(devs));
  }
  std::vector<std::string> host_names(devs.size());
  c.devices.reserve(devs.size());
  for (std::size_t i = 0; i < devs.size(); ++i) {
    c.devices.push_back(parse_device(rd, devs[i], idx("devices", i), names, host_names[i]));
    c.vertices.push_back({c.devices.back().name, VertexKind::Device, c.devices.back().node});
  }
  resolve_hosts(rd, devs, host_names, c);
}

// Top-level `switches`, `host_bridges`, `nics`: fabric vertices, each a name or {name, node}.
void parse_fabric(const Reader& rd, const YAML::Node& root, std::set<std::string>& names,
                  Cluster& c) {
  const std::array<std::pair<const char*, VertexKind>, 3> fabric{
      {{"switches", VertexKind::Switch},
       {"host_bridges", VertexKind::HostBridge},
       {"nics", VertexKind::Nic}}};
  for (const auto& [key, vk] : fabric) {
    const YAML::Node list = root[key];
    if (!list) continue;
    if (!list.IsSequence()) rd.fail(list, key, "a list, got " + Reader::shown(list));
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string path = idx(key, i);
      const YAML::Node v = list[i];
      Vertex vx;
      vx.kind = vk;
      if (v.IsScalar()) {
        vx.name = rd.str(v, path);
        vx.node = "node0";
        check_name(rd, v, path, names, vx.name);
      } else {
        rd.expect_map(v, path, {"name", "node", "kind", "source"});
        vx.name = rd.str(require(rd, v, v["name"], path + ".name", "a name"), path + ".name");
        check_name(rd, v["name"], path + ".name", names, vx.name);
        vx.node = v["node"] ? rd.str(v["node"], path + ".node") : "node0";
      }
      c.vertices.push_back(std::move(vx));
    }
  }
}

// One `links` entry; an unnamed link is called "a-b" (with "#k" appended while taken).
Link parse_link(const Reader& rd, const YAML::Node& l, const std::string& path, const Cluster& c,
                const std::set<std::string>& link_names) {
  rd.expect_map(l, path, {"name", "between", "bandwidth", "latency", "sharing", "kind", "tcp"});
  Link link;
  const YAML::Node ends = require(rd, l, l["between"], path + ".between", "two endpoint names");
  if (!ends.IsSequence() || ends.size() != 2) {
    rd.fail(ends, path + ".between", "a list of two endpoint names, got " + Reader::shown(ends));
  }
  for (int e = 0; e < 2; ++e) {
    const std::string ep = path + ".between[" + std::to_string(e) + "]";
    const std::string n = rd.str(ends[e], ep);
    const VertexId v = c.vertex_index(n);
    if (v < 0) {
      rd.fail(
          ends[e], ep,
          "the name of a device, switch, host bridge or NIC, got unknown \"" + printable(n) + "\"");
    }
    (e == 0 ? link.a : link.b) = v;
  }
  if (link.a == link.b) rd.fail(ends, path + ".between", "two different endpoints");
  link.bandwidth = rd.positive_bandwidth(
      require(rd, l, l["bandwidth"], path + ".bandwidth", "a bandwidth"), path + ".bandwidth");
  if (l["latency"]) link.latency = rd.duration(l["latency"], path + ".latency");
  if (l["sharing"]) link.sharing = parse_sharing(rd, l["sharing"], path + ".sharing");
  if (l["kind"]) link.kind = rd.str(l["kind"], path + ".kind");
  if (l["tcp"]) link.tcp = parse_bool(rd, l["tcp"], path + ".tcp");
  if (l["name"]) {
    link.name = rd.str(l["name"], path + ".name");
    if (link_names.count(link.name) != 0) {
      rd.fail(l["name"], path + ".name",
              "a unique link name, got \"" + printable(link.name) + "\" a second time");
    }
  } else {
    const std::string base = c.vertices[static_cast<std::size_t>(link.a)].name + "-" +
                             c.vertices[static_cast<std::size_t>(link.b)].name;
    link.name = base;
    for (int k = 2; link_names.count(link.name) != 0; ++k)
      link.name = base + "#" + std::to_string(k);
  }
  return link;
}

// Top-level `links`, then `tcp`: the cluster-wide selection marks links that do not say for
// themselves.
void parse_links(const Reader& rd, const YAML::Node& root, Cluster& c) {
  const YAML::Node links = require(rd, root, root["links"], "links", "a list of links");
  if (!links.IsSequence()) rd.fail(links, "links", "a list of links, got " + Reader::shown(links));
  std::set<std::string> link_names;
  c.links.reserve(links.size());
  for (std::size_t i = 0; i < links.size(); ++i) {
    c.links.push_back(parse_link(rd, links[i], idx("links", i), c, link_names));
    link_names.insert(c.links.back().name);
  }
  if (root["tcp"]) {
    const std::set<std::string> kinds = parse_tcp(rd, root["tcp"], c);
    for (std::size_t i = 0; i < links.size(); ++i)
      if (!links[i]["tcp"] && (kinds.count("*") || kinds.count(c.links[i].kind)))
        c.links[i].tcp = true;
  }
}

// Top-level `peer_access`: "all" (default), "none", or {groups: [[...]], pairs: [[a, b]]}.
void parse_peer_access(const Reader& rd, const YAML::Node& pa, Cluster& c) {
  const std::size_t n = c.devices.size();
  c.peer_access.assign(n, std::vector<bool>(n, false));
  auto set_peer = [&](DeviceId a, DeviceId b) {
    if (a == b) return;
    c.peer_access[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = true;
    c.peer_access[static_cast<std::size_t>(b)][static_cast<std::size_t>(a)] = true;
  };
  const auto gpu_ids = c.gpus();
  auto gpu_by_name = [&](const YAML::Node& node, const std::string& path) {
    const std::string nm = rd.str(node, path);
    const DeviceId d = c.device_index(nm);
    if (d < 0 || c.devices[static_cast<std::size_t>(d)].spec.kind != DeviceKind::Gpu) {
      rd.fail(node, path, "the name of a GPU device, got \"" + printable(nm) + "\"");
    }
    return d;
  };
  if (!pa || (pa.IsScalar() && pa.Scalar() == "all")) {
    for (DeviceId a : gpu_ids)
      for (DeviceId b : gpu_ids) set_peer(a, b);
  } else if (pa.IsScalar() && pa.Scalar() == "none") {
  } else if (pa.IsMap()) {
    rd.expect_map(pa, "peer_access", {"groups", "pairs"});
    for (const char* key : {"groups", "pairs"}) {
      const YAML::Node list = pa[key];
      if (!list) continue;
      const std::string lp = std::string("peer_access.") + key;
      if (!list.IsSequence()) rd.fail(list, lp, "a list of lists of GPU names");
      for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node grp = list[i];
        const std::string gp = idx(lp, i);
        if (!grp.IsSequence() || grp.size() < 2 ||
            (std::string(key) == "pairs" && grp.size() != 2)) {
          rd.fail(grp, gp,
                  std::string(key) == "pairs" ? "a list of two GPU names"
                                              : "a list of at least two GPU names");
        }
        std::vector<DeviceId> ids;
        ids.reserve(grp.size());
        for (std::size_t k = 0; k < grp.size(); ++k) ids.push_back(gpu_by_name(grp[k], idx(gp, k)));
        for (DeviceId a : ids)
          for (DeviceId b : ids) set_peer(a, b);
      }
    }
  } else {
    rd.fail(pa, "peer_access",
            "all, none, or a mapping with groups/pairs, got " + Reader::shown(pa));
  }
}

// One `routes` entry: replaces the computed route of its pair (one segment, as given).
void parse_route(const Reader& rd, const YAML::Node& r, const std::string& path, Cluster& c) {
  rd.expect_map(r, path, {"from", "to", "links"});
  const std::string from =
      rd.str(require(rd, r, r["from"], path + ".from", "a device name"), path + ".from");
  const std::string to =
      rd.str(require(rd, r, r["to"], path + ".to", "a device name"), path + ".to");
  const DeviceId a = c.device_index(from);
  const DeviceId b = c.device_index(to);
  if (a < 0)
    rd.fail(r["from"], path + ".from", "a device name, got unknown \"" + printable(from) + "\"");
  if (b < 0 || b == a)
    rd.fail(r["to"], path + ".to", "another device's name, got \"" + printable(to) + "\"");
  const YAML::Node ls = require(rd, r, r["links"], path + ".links", "a list of link names");
  if (!ls.IsSequence() || ls.size() == 0)
    rd.fail(ls, path + ".links", "a non-empty list of link names");
  std::vector<LinkId> ids;
  ids.reserve(ls.size());
  VertexId at = a;
  for (std::size_t k = 0; k < ls.size(); ++k) {
    const std::string lp = idx(path + ".links", k);
    const std::string ln = rd.str(ls[k], lp);
    LinkId id = -1;
    for (std::size_t q = 0; q < c.links.size(); ++q) {
      if (c.links[q].name == ln) id = static_cast<LinkId>(q);
    }
    if (id < 0) rd.fail(ls[k], lp, "a link name, got unknown \"" + printable(ln) + "\"");
    const Link& lk = c.links[static_cast<std::size_t>(id)];
    if (lk.a != at && lk.b != at) {
      rd.fail(ls[k], lp,
              "a link touching " + c.vertices[static_cast<std::size_t>(at)].name +
                  " (the route must be a connected chain), got " + ln);
    }
    at = lk.a == at ? lk.b : lk.a;
    ids.push_back(id);
  }
  if (at != b) rd.fail(ls, path + ".links", "a chain of links ending at " + to);
  RouteSegment seg;
  seg.from = a;
  seg.to = b;
  at = a;
  double bottleneck = std::numeric_limits<double>::infinity();
  for (LinkId id : ids) {
    const Link& lk = c.links[static_cast<std::size_t>(id)];
    seg.hops.push_back({id, lk.a == at});
    at = lk.a == at ? lk.b : lk.a;
    seg.latency += lk.latency;
    bottleneck = std::min(bottleneck, lk.bandwidth.bytes_per_s);
  }
  seg.bottleneck = Bandwidth{bottleneck};
  c.routes[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)].segments = {seg};
}

// Top-level `routes`: explicit routes replace computed ones for their pair.
void parse_routes(const Reader& rd, const YAML::Node& routes, Cluster& c) {
  if (!routes.IsSequence()) rd.fail(routes, "routes", "a list of routes");
  for (std::size_t i = 0; i < routes.size(); ++i) parse_route(rd, routes[i], idx("routes", i), c);
}

// The document as YAML (NUL bytes and syntax errors reported with their line and column).
YAML::Node load_yaml(const Reader& rd, const std::string& text) {
  if (text.find('\0') != std::string::npos) {
    rd.fail_at("", "a YAML text file, got binary data (a NUL byte)");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    rd.fail_at("line " + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1),
               "valid YAML (" + printable(e.msg, 120) + ")");
  }
  if (!root.IsDefined() || root.IsNull()) {
    rd.fail_at("", "a YAML mapping with 'devices' and 'links', got an empty document");
  }
  return root;
}

}  // namespace

Cluster parse_cluster_yaml(const std::string& text, const std::string& origin) {
  const Reader rd(origin);
  const YAML::Node root = load_yaml(rd, text);
  try {
    rd.expect_map(root, "",
                  {"name", "description", "sources", "devices", "switches", "host_bridges", "nics",
                   "links", "peer_access", "routes", "tcp", "nccl_version"});
    Cluster c;
    c.source_file = origin;
    c.name = root["name"] ? rd.str(root["name"], "name") : fs::path(origin).stem().string();
    if (const YAML::Node v = root["nccl_version"]) {
      // The same versions and message as `collective --nccl-version`.
      if (!v.IsScalar()) rd.fail(v, "nccl_version", "an NCCL 2.x version, got " + Reader::shown(v));
      const std::optional<int> code = parse_nccl_version(v.Scalar());
      if (!code) rd.fail(v, "nccl_version", nccl_version_expected(v.Scalar()));
      c.nccl_version = *code;
    }
    std::set<std::string> names;  // devices and fabric vertices share one namespace
    parse_devices(rd, root, names, c);
    parse_fabric(rd, root, names, c);
    parse_links(rd, root, c);
    parse_peer_access(rd, root["peer_access"], c);
    compute_routes(c);
    if (const YAML::Node routes = root["routes"]) parse_routes(rd, routes, c);
    return c;
  } catch (const YAML::Exception& e) {
    // Conversions inside yaml-cpp (e.g. a bad map access) still name the line.
    rd.fail_at("line " + std::to_string(e.mark.line + 1),
               "a well-formed cluster (" + printable(e.msg, 120) + ")");
  }
}

// ---------------------------------------------------------------------------------------------
// Writer: every number spelled with a unit such that reading it back gives the same value.

namespace {

std::string exact_double(double v) {
  std::array<char, 64> buf{};
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf.data(), buf.size(), "%.*g", prec, v);
    if (std::strtod(buf.data(), nullptr) == v) break;
  }
  return buf.data();
}

template <typename Parse, typename Get>
std::string spell(double v, std::initializer_list<std::pair<double, const char*>> units,
                  Parse parse, Get get) {
  for (const auto& [scale, u] : units) {
    if (std::fabs(v) < scale) continue;
    std::string s = exact_double(v / scale) + " " + u;
    if (get(parse(s)) == v) return s;
  }
  const auto& last = *(units.end() - 1);
  return exact_double(v / last.first) + " " + last.second;
}

std::string spell_bandwidth(Bandwidth b) {
  return spell(b.bytes_per_s, {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1.0, "B/s"}},
               parse_bandwidth, [](Bandwidth x) { return x.bytes_per_s; });
}
std::string spell_rate(FlopRate r) {
  return spell(r.per_s, {{1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1.0, "FLOP/s"}}, parse_flop_rate,
               [](FlopRate x) { return x.per_s; });
}
std::string spell_bytes(Bytes b) {
  constexpr std::array<std::pair<std::int64_t, const char*>, 4> units{
      {{std::int64_t{1} << 40, "TiB"},
       {std::int64_t{1} << 30, "GiB"},
       {std::int64_t{1} << 20, "MiB"},
       {1024, "KiB"}}};
  for (const auto& [scale, u] : units) {
    if (b.v != 0 && b.v % scale == 0) return std::to_string(b.v / scale) + " " + u;
  }
  return std::to_string(b.v) + " B";
}
std::string spell_duration(Duration d) {
  if (d.ns != 0 && d.ns % 1'000'000 == 0) return std::to_string(d.ns / 1'000'000) + " ms";
  if (d.ns != 0 && d.ns % 1000 == 0) return std::to_string(d.ns / 1000) + " us";
  return std::to_string(d.ns) + " ns";
}

}  // namespace

namespace {

// `devices`: every spec field spelled out, the catalog model named when there is one.
void emit_devices(const Cluster& c, YAML::Emitter& out) {
  out << YAML::Key << "devices" << YAML::Value << YAML::BeginSeq;
  for (const Device& d : c.devices) {
    const DeviceSpec& s = d.spec;
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << d.name;
    out << YAML::Key << "kind" << YAML::Value << to_string(s.kind);
    if (find_device_model(s.model) != nullptr)
      out << YAML::Key << "model" << YAML::Value << s.model;
    out << YAML::Key << "node" << YAML::Value << d.node;
    if (s.kind == DeviceKind::Gpu && d.host >= 0) {
      out << YAML::Key << "host" << YAML::Value << c.devices[static_cast<std::size_t>(d.host)].name;
    }
    out << YAML::Key << "peak_flops" << YAML::Value << YAML::BeginMap;
    for (const auto& [dt, r] : s.peak_flops)
      out << YAML::Key << to_string(dt) << YAML::Value << spell_rate(r);
    out << YAML::EndMap;
    out << YAML::Key << "memory_bandwidth" << YAML::Value << spell_bandwidth(s.memory_bandwidth);
    out << YAML::Key << "memory_capacity" << YAML::Value << spell_bytes(s.memory_capacity);
    out << YAML::Key << "compute_streams" << YAML::Value << s.compute_streams;
    if (s.kind == DeviceKind::Gpu && s.sm_count > 0)
      out << YAML::Key << "sm_count" << YAML::Value << s.sm_count;
    if (find_device_model(s.model) == nullptr && s.arch.vendor != GpuArch::Vendor::None)
      out << YAML::Key << "arch" << YAML::Value << to_string(s.arch);
    out << YAML::Key << "worker_threads" << YAML::Value << s.worker_threads;
    out << YAML::Key << "copy_engines" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
        << "h2d" << YAML::Value << s.h2d_engines << YAML::Key << "d2h" << YAML::Value
        << s.d2h_engines << YAML::Key << "peer" << YAML::Value << s.peer_engines << YAML::EndMap;
    out << YAML::Key << "launch_overhead" << YAML::Value << spell_duration(s.launch_overhead);
    out << YAML::Key << "intra_op_threads" << YAML::Value << s.intra_op_threads;
    out << YAML::Key << "reserved_memory" << YAML::Value << spell_bytes(s.reserved_memory);
    out << YAML::Key << "copy_issue_overhead" << YAML::Value
        << spell_duration(s.copy_issue_overhead);
    out << YAML::Key << "dma_setup_latency" << YAML::Value << spell_duration(s.dma_setup_latency);
    if (s.kind == DeviceKind::Gpu)
      out << YAML::Key << "kernel_gap" << YAML::Value << spell_duration(s.kernel_gap);
    if (!s.source.empty()) out << YAML::Key << "source" << YAML::Value << s.source;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// `switches`, `host_bridges`, `nics`, `links` and a non-default `tcp` window.
void emit_fabric_and_links(const Cluster& c, YAML::Emitter& out) {
  const std::array<std::pair<const char*, VertexKind>, 3> fabric{
      {{"switches", VertexKind::Switch},
       {"host_bridges", VertexKind::HostBridge},
       {"nics", VertexKind::Nic}}};
  for (const auto& [key, vk] : fabric) {
    bool any = false;
    for (const Vertex& v : c.vertices) any = any || v.kind == vk;
    if (!any) continue;
    out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const Vertex& v : c.vertices) {
      if (v.kind != vk) continue;
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << v.name
          << YAML::Key << "node" << YAML::Value << v.node << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
  for (const Link& l : c.links) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << l.name;
    out << YAML::Key << "between" << YAML::Value << YAML::Flow << YAML::BeginSeq
        << c.vertices[static_cast<std::size_t>(l.a)].name
        << c.vertices[static_cast<std::size_t>(l.b)].name << YAML::EndSeq;
    out << YAML::Key << "bandwidth" << YAML::Value << spell_bandwidth(l.bandwidth);
    out << YAML::Key << "latency" << YAML::Value << spell_duration(l.latency);
    out << YAML::Key << "sharing" << YAML::Value << to_string(l.sharing);
    if (!l.kind.empty()) out << YAML::Key << "kind" << YAML::Value << l.kind;
    if (l.tcp) out << YAML::Key << "tcp" << YAML::Value << true;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (c.tcp_window_bytes != 4194304.0)
    out << YAML::Key << "tcp" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
        << "window" << YAML::Value
        << spell_bytes(Bytes{static_cast<std::int64_t>(c.tcp_window_bytes)}) << YAML::EndMap;
}

// `peer_access`: explicit pairs, so that any pattern round-trips.
void emit_peer_access(const Cluster& c, YAML::Emitter& out) {
  out << YAML::Key << "peer_access" << YAML::Value;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i < c.peer_access.size(); ++i) {
    for (std::size_t j = i + 1; j < c.peer_access[i].size(); ++j) {
      if (c.peer_access[i][j]) pairs.emplace_back(c.devices[i].name, c.devices[j].name);
    }
  }
  if (pairs.empty()) {
    out << "none";
  } else {
    out << YAML::BeginMap << YAML::Key << "pairs" << YAML::Value << YAML::BeginSeq;
    for (const auto& [a, b] : pairs) out << YAML::Flow << YAML::BeginSeq << a << b << YAML::EndSeq;
    out << YAML::EndSeq << YAML::EndMap;
  }
}

// Routes that differ from what compute_routes() gives were explicit in the source file; write
// them back so the round trip keeps them.
void emit_routes(const Cluster& c, YAML::Emitter& out) {
  Cluster recomputed = c;
  bool have_recomputed = true;
  try {
    compute_routes(recomputed);
  } catch (const InputError&) {
    have_recomputed = false;
  }
  auto same = [](const Route& x, const Route& y) {
    if (x.segments.size() != y.segments.size()) return false;
    for (std::size_t k = 0; k < x.segments.size(); ++k) {
      const auto& hx = x.segments[k].hops;
      const auto& hy = y.segments[k].hops;
      if (hx.size() != hy.size()) return false;
      for (std::size_t h = 0; h < hx.size(); ++h) {
        if (hx[h].link != hy[h].link) return false;
      }
    }
    return true;
  };
  bool any_route = false;
  for (std::size_t i = 0; have_recomputed && i < c.routes.size(); ++i) {
    for (std::size_t j = 0; j < c.routes[i].size(); ++j) {
      const Route& r = c.routes[i][j];
      if (i == j || r.segments.size() != 1 || same(r, recomputed.routes[i][j])) continue;
      if (!any_route) {
        out << YAML::Key << "routes" << YAML::Value << YAML::BeginSeq;
        any_route = true;
      }
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "from" << YAML::Value << c.devices[i].name
          << YAML::Key << "to" << YAML::Value << c.devices[j].name << YAML::Key << "links"
          << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const Hop& h : r.segments[0].hops) out << c.links[static_cast<std::size_t>(h.link)].name;
      out << YAML::EndSeq << YAML::EndMap;
    }
  }
  if (any_route) out << YAML::EndSeq;
}

}  // namespace

std::string cluster_to_yaml(const Cluster& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << c.name;
  emit_devices(c, out);
  emit_fabric_and_links(c, out);
  emit_peer_access(c, out);
  emit_routes(c, out);
  if (c.nccl_version > 0)
    out << YAML::Key << "nccl_version" << YAML::Value << nccl_version_string(c.nccl_version);
  out << YAML::EndMap;
  std::string text = std::string(out.c_str()) + "\n";
  // What is written must read back: an imported or calibrated cluster whose links fall outside
  // the format's ranges is refused here, before any file exists.
  (void)parse_cluster_yaml(text,
                           (c.source_file.empty() ? c.name : c.source_file) + " (as written)");
  return text;
}

// ---------------------------------------------------------------------------------------------
// Finding built-ins.

namespace {

std::vector<fs::path> scenario_dirs() {
#ifdef PLACESIM_SCENARIO_DIR
  const std::string compiled_in = (fs::path(PLACESIM_SCENARIO_DIR) / "clusters").string();
#else
  const std::string compiled_in;
#endif
  return checkout_paths(compiled_in, fs::path("scenarios") / "clusters", 2);
}

}  // namespace

std::vector<std::string> builtin_cluster_names() {
  std::set<std::string> names;
  for (const fs::path& dir : scenario_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
    }
    if (!names.empty()) break;
  }
  return {names.begin(), names.end()};
}

Cluster load_cluster(const std::string& name_or_path) {
  std::error_code ec;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               name_or_path.ends_with(".yaml") || name_or_path.ends_with(".yml");
  if (looks_like_path || fs::exists(name_or_path, ec)) {
    return parse_cluster_yaml(read_text_file(name_or_path), name_or_path);
  }
  for (const fs::path& dir : scenario_dirs()) {
    const fs::path p = dir / (name_or_path + ".yaml");
    if (fs::is_regular_file(p, ec)) {
      Cluster c = parse_cluster_yaml(read_text_file(p.string()), p.string());
      return c;
    }
  }
  std::string list;
  for (const std::string& n : builtin_cluster_names()) list += (list.empty() ? "" : ", ") + n;
  throw InputError("--cluster", printable(name_or_path),
                   "a built-in cluster name (" + (list.empty() ? std::string("none found") : list) +
                       ") or the path of a cluster YAML file");
}

}  // namespace placesim::sim

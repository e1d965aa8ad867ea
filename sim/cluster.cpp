#include "sim/cluster.hpp"

#include <algorithm>
#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::sim {

// ---------------------------------------------------------------------------------------------
// Small enums.

std::string to_string(DeviceKind k) {
  return k == DeviceKind::Cpu ? "cpu" : "gpu";
}

std::string to_string(Dtype d) {
  switch (d) {
    case Dtype::F64:
      return "f64";
    case Dtype::F32:
      return "f32";
    case Dtype::TF32:
      return "tf32";
    case Dtype::F16:
      return "f16";
    case Dtype::BF16:
      return "bf16";
    case Dtype::FP8:
      return "fp8";
    case Dtype::I64:
      return "i64";
    case Dtype::I32:
      return "i32";
    case Dtype::I8:
      return "i8";
    case Dtype::U8:
      return "u8";
    case Dtype::Bool:
      return "bool";
  }
  return "f32";
}

std::optional<Dtype> parse_dtype(std::string_view s) {
  static constexpr std::array<std::pair<std::string_view, Dtype>, 24> kNames{{
      {"f64", Dtype::F64},   {"float64", Dtype::F64}, {"double", Dtype::F64},
      {"f32", Dtype::F32},   {"float32", Dtype::F32}, {"float", Dtype::F32},
      {"tf32", Dtype::TF32}, {"f16", Dtype::F16},     {"float16", Dtype::F16},
      {"half", Dtype::F16},  {"bf16", Dtype::BF16},   {"bfloat16", Dtype::BF16},
      {"fp8", Dtype::FP8},   {"f8", Dtype::FP8},      {"i64", Dtype::I64},
      {"int64", Dtype::I64}, {"long", Dtype::I64},    {"i32", Dtype::I32},
      {"int32", Dtype::I32}, {"int", Dtype::I32},     {"i8", Dtype::I8},
      {"int8", Dtype::I8},   {"u8", Dtype::U8},       {"bool", Dtype::Bool},
  }};
  for (const auto& [name, d] : kNames) {
    if (name == s) return d;
  }
  if (s == "uint8") return Dtype::U8;
  return std::nullopt;
}

std::int64_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::F64:
    case Dtype::I64:
      return 8;
    case Dtype::F32:
    case Dtype::TF32:
    case Dtype::I32:
      return 4;
    case Dtype::F16:
    case Dtype::BF16:
      return 2;
    case Dtype::FP8:
    case Dtype::I8:
    case Dtype::U8:
    case Dtype::Bool:
      return 1;
  }
  return 4;
}

FlopRate DeviceSpec::peak_for(Dtype d) const {
  if (auto it = peak_flops.find(d); it != peak_flops.end()) return it->second;
  if (auto it = peak_flops.find(Dtype::F32); it != peak_flops.end()) return it->second;
  return {};
}

std::string to_string(const GpuArch& a) {
  switch (a.vendor) {
    case GpuArch::Vendor::Nvidia:
      return std::to_string(a.major) + "." + std::to_string(a.minor);
    case GpuArch::Vendor::Amd:
      return a.gfx;
    case GpuArch::Vendor::None:
      break;
  }
  return "";
}

std::string to_string(VertexKind k) {
  switch (k) {
    case VertexKind::Device:
      return "device";
    case VertexKind::Switch:
      return "switch";
    case VertexKind::HostBridge:
      return "host_bridge";
    case VertexKind::Nic:
      return "nic";
  }
  return "device";
}

std::string to_string(SharingPolicy p) {
  switch (p) {
    case SharingPolicy::Shared:
      return "shared";
    case SharingPolicy::SplitDuplex:
      return "split-duplex";
    case SharingPolicy::FatPipe:
      return "fat-pipe";
  }
  return "split-duplex";
}

DeviceId Cluster::device_index(std::string_view n) const {
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].name == n) return static_cast<DeviceId>(i);
  }
  return -1;
}

VertexId Cluster::vertex_index(std::string_view n) const {
  for (std::size_t i = 0; i < vertices.size(); ++i) {
    if (vertices[i].name == n) return static_cast<VertexId>(i);
  }
  return -1;
}

std::vector<DeviceId> Cluster::gpus() const {
  std::vector<DeviceId> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].spec.kind == DeviceKind::Gpu) out.push_back(static_cast<DeviceId>(i));
  }
  return out;
}

std::vector<DeviceId> Cluster::cpus() const {
  std::vector<DeviceId> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].spec.kind == DeviceKind::Cpu) out.push_back(static_cast<DeviceId>(i));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Routing.

namespace {

// Path cost compared lexicographically: hop count, then total latency, then the sequence of link
// ids. Appending one link to two equal-length paths keeps their order, so Dijkstra's greedy
// choice stays exact with this composite cost.
struct PathCost {
  std::int64_t hops = 0;
  std::int64_t latency_ns = 0;
  std::vector<LinkId> links;
  bool infinite = false;
  bool operator<(const PathCost& o) const {
    if (infinite != o.infinite) return !infinite;
    if (infinite) return false;
    if (hops != o.hops) return hops < o.hops;
    if (latency_ns != o.latency_ns) return latency_ns < o.latency_ns;
    return links < o.links;
  }
};

struct EdgeProps {
  LinkId link = -1;
};
using FabricGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                          boost::no_property, EdgeProps>;

// Devices other than the source never forward traffic: a GPU is not a switch.
struct NoTransitThroughDevices {
  const Cluster* c = nullptr;
  VertexId source = -1;
  bool operator()(FabricGraph::vertex_descriptor v) const {
    const auto id = static_cast<VertexId>(v);
    return id == source || c->vertices[static_cast<std::size_t>(id)].kind != VertexKind::Device;
  }
};

RouteSegment make_segment(const Cluster& c, DeviceId from, DeviceId to,
                          const std::vector<LinkId>& links) {
  RouteSegment seg;
  seg.from = from;
  seg.to = to;
  VertexId at = from;
  double bottleneck = std::numeric_limits<double>::infinity();
  for (LinkId l : links) {
    const Link& link = c.links[static_cast<std::size_t>(l)];
    const bool forward = link.a == at;
    seg.hops.push_back({l, forward});
    at = forward ? link.b : link.a;
    seg.latency += link.latency;
    bottleneck = std::min(bottleneck, link.bandwidth.bytes_per_s);
  }
  seg.bottleneck = Bandwidth{links.empty() ? 0.0 : bottleneck};
  return seg;
}

// Best fabric paths from device `src` to every device, never passing through another device.
std::vector<std::optional<std::vector<LinkId>>> shortest_paths_from(const Cluster& c,
                                                                    const FabricGraph& g,
                                                                    DeviceId src) {
  using Filtered = boost::filtered_graph<FabricGraph, boost::keep_all, NoTransitThroughDevices>;
  const Filtered fg(g, boost::keep_all{}, NoTransitThroughDevices{&c, src});
  const std::size_t nv = boost::num_vertices(g);
  std::vector<PathCost> dist(nv);
  std::vector<FabricGraph::vertex_descriptor> pred(nv);
  const PathCost inf{0, 0, {}, true};
  auto weight = boost::make_function_property_map<FabricGraph::edge_descriptor, PathCost>(
      [&](const FabricGraph::edge_descriptor& e) {
        const LinkId l = g[e].link;
        return PathCost{1, c.links[static_cast<std::size_t>(l)].latency.ns, {l}, false};
      });
  auto combine = [](const PathCost& d, const PathCost& w) {
    if (d.infinite || w.infinite) return PathCost{0, 0, {}, true};
    PathCost r{d.hops + w.hops, d.latency_ns + w.latency_ns, d.links, false};
    r.links.insert(r.links.end(), w.links.begin(), w.links.end());
    return r;
  };
  boost::dijkstra_shortest_paths(
      fg, static_cast<FabricGraph::vertex_descriptor>(src),
      boost::predecessor_map(
          boost::make_iterator_property_map(pred.begin(), boost::get(boost::vertex_index, g)))
          .distance_map(
              boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g)))
          .weight_map(weight)
          .distance_compare(std::less<PathCost>())
          .distance_combine(combine)
          .distance_inf(inf)
          .distance_zero(PathCost{}));

  // A device endpoint is reached over one of its own links from a non-device vertex (or from
  // the source directly), so relax those last edges here.
  std::vector<std::optional<std::vector<LinkId>>> out(c.devices.size());
  std::vector<std::optional<PathCost>> best(c.devices.size());
  for (std::size_t l = 0; l < c.links.size(); ++l) {
    const Link& link = c.links[l];
    for (int side = 0; side < 2; ++side) {
      const VertexId from = side == 0 ? link.a : link.b;
      const VertexId to = side == 0 ? link.b : link.a;
      if (to >= static_cast<VertexId>(c.devices.size()) || to == src) continue;
      const bool from_ok =
          from == src || c.vertices[static_cast<std::size_t>(from)].kind != VertexKind::Device;
      if (!from_ok || dist[static_cast<std::size_t>(from)].infinite) continue;
      PathCost cand = combine(dist[static_cast<std::size_t>(from)],
                              PathCost{1, link.latency.ns, {static_cast<LinkId>(l)}, false});
      auto& b = best[static_cast<std::size_t>(to)];
      if (!b || cand < *b) b = std::move(cand);
    }
  }
  for (std::size_t d = 0; d < c.devices.size(); ++d) {
    if (best[d]) out[d] = best[d]->links;
  }
  return out;
}

}  // namespace

void compute_routes(Cluster& c) {
  const std::size_t n = c.devices.size();
  FabricGraph g(c.vertices.size());
  for (std::size_t l = 0; l < c.links.size(); ++l) {
    boost::add_edge(static_cast<std::size_t>(c.links[l].a), static_cast<std::size_t>(c.links[l].b),
                    EdgeProps{static_cast<LinkId>(l)}, g);
  }
  std::vector<std::vector<std::optional<std::vector<LinkId>>>> paths(n);
  for (std::size_t s = 0; s < n; ++s)
    paths[s] = shortest_paths_from(c, g, static_cast<DeviceId>(s));

  if (c.peer_access.size() != n) c.peer_access.assign(n, std::vector<bool>(n, false));
  c.routes.assign(n, std::vector<Route>(n));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const Device& a = c.devices[i];
      const Device& b = c.devices[j];
      const bool both_gpus = a.spec.kind == DeviceKind::Gpu && b.spec.kind == DeviceKind::Gpu;
      Route r;
      if (both_gpus && !c.peer_access[i][j]) {
        const auto h = static_cast<std::size_t>(a.host);
        if (a.host >= 0 && paths[i][h] && paths[h][j]) {
          r.segments.push_back(make_segment(c, static_cast<DeviceId>(i), a.host, *paths[i][h]));
          r.segments.push_back(make_segment(c, a.host, static_cast<DeviceId>(j), *paths[h][j]));
        }
      } else if (paths[i][j]) {
        r.segments.push_back(
            make_segment(c, static_cast<DeviceId>(i), static_cast<DeviceId>(j), *paths[i][j]));
      }
      if (r.empty()) {
        throw InputError(
            c.source_file, "devices[" + std::to_string(i) + "] (" + a.name + ")",
            "a route to every other device over the links, found none to " + b.name +
                (both_gpus && !c.peer_access[i][j]
                     ? " (no peer access, so the copy is staged through host " +
                           (a.host >= 0 ? c.devices[static_cast<std::size_t>(a.host)].name : "?") +
                           ")"
                     : ""));
      }
      c.routes[i][j] = std::move(r);
    }
  }
}

}  // namespace placesim::sim

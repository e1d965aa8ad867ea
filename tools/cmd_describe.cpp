// `placesim describe`: what a cluster or a graph contains, as text or JSON.
//
//   placesim describe --cluster paper-4gpu            # devices, links, bandwidth/latency matrix,
//   routes placesim describe --graph nmt --graph-opt layers=2 --json
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/registry.hpp"
#include "sim/cluster.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {
namespace {

using nlohmann::ordered_json;

struct DescribeArgs {
  std::string cluster, graph, graph_opt;
  bool json = false;
};

// End-to-end figures of a route without contention: the slowest link over all segments and the
// summed latency of every hop (a staged copy pays both segments).
struct RouteSummary {
  double bandwidth = 0.0;
  std::int64_t latency_ns = 0;
  bool staged = false;
  int hops = 0;
};

RouteSummary summarize(const sim::Route& r) {
  RouteSummary s;
  s.staged = r.staged();
  double bw = std::numeric_limits<double>::infinity();
  for (const sim::RouteSegment& seg : r.segments) {
    bw = std::min(bw, seg.bottleneck.bytes_per_s);
    s.latency_ns += seg.latency.ns;
    s.hops += static_cast<int>(seg.hops.size());
  }
  s.bandwidth = r.segments.empty() ? 0.0 : bw;
  return s;
}

std::string route_text(const sim::Cluster& c, const sim::Route& r) {
  std::string out;
  for (std::size_t k = 0; k < r.segments.size(); ++k) {
    const sim::RouteSegment& seg = r.segments[k];
    if (k > 0) out += "  | staged, then ";
    sim::VertexId at = seg.from;
    out += c.vertices[static_cast<std::size_t>(at)].name;
    for (const sim::Hop& h : seg.hops) {
      const sim::Link& l = c.links[static_cast<std::size_t>(h.link)];
      at = h.forward ? l.b : l.a;
      out += " -> " + c.vertices[static_cast<std::size_t>(at)].name;
    }
  }
  return out;
}

void describe_cluster_text(const sim::Cluster& c) {
  std::printf("cluster %s  (%s)\n\n", c.name.c_str(), c.source_file.c_str());
  std::printf("devices (%d):\n", c.num_devices());
  std::printf("  %-12s %-4s %-20s %-7s %-8s %12s %12s %12s %10s %10s %8s %8s\n", "name", "kind",
              "model", "node", "host", "peak f32", "peak f16", "peak bf16", "mem bw", "memory",
              "launch", "gap");
  for (const sim::Device& d : c.devices) {
    const sim::DeviceSpec& s = d.spec;
    std::printf("  %-12s %-4s %-20s %-7s %-8s %12s %12s %12s %10s %10s %8s %8s\n", d.name.c_str(),
                sim::to_string(s.kind).c_str(), s.model.c_str(), d.node.c_str(),
                d.host >= 0 ? c.devices[static_cast<std::size_t>(d.host)].name.c_str() : "-",
                sim::format_flop_rate(s.peak_for(sim::Dtype::F32)).c_str(),
                sim::format_flop_rate(s.peak_for(sim::Dtype::F16)).c_str(),
                sim::format_flop_rate(s.peak_for(sim::Dtype::BF16)).c_str(),
                sim::format_bandwidth(s.memory_bandwidth).c_str(),
                sim::format_bytes(s.memory_capacity).c_str(),
                sim::format_duration(s.launch_overhead).c_str(),
                s.kind == sim::DeviceKind::Gpu ? sim::format_duration(s.kernel_gap).c_str() : "-");
  }
  // Where the GPUs' kernel gaps come from (catalog, cluster file, calibration), once per source.
  std::vector<std::pair<std::string, std::vector<std::string>>> gap_sources;
  for (const sim::Device& d : c.devices) {
    if (d.spec.kind != sim::DeviceKind::Gpu) continue;
    auto it = std::find_if(gap_sources.begin(), gap_sources.end(),
                           [&](const auto& g) { return g.first == d.spec.kernel_gap_source; });
    if (it == gap_sources.end()) it = gap_sources.insert(it, {d.spec.kernel_gap_source, {}});
    it->second.push_back(d.name);
  }
  for (const auto& [src, names] : gap_sources) {
    std::string who = names.front();
    if (names.size() > 4)
      who += ", ..., " + names.back() + " (" + std::to_string(names.size()) + " GPUs)";
    else
      for (std::size_t i = 1; i < names.size(); ++i) who += ", " + names[i];
    std::printf("  gap of %s: %s\n", who.c_str(), src.empty() ? "-" : src.c_str());
  }
  std::printf("\nfabric: %zu switches/bridges/NICs, %zu links:\n",
              c.vertices.size() - c.devices.size(), c.links.size());
  for (const sim::Link& l : c.links) {
    std::printf("  %-26s %-12s <-> %-12s %10s/dir %8s  %-12s %s\n", l.name.c_str(),
                c.vertices[static_cast<std::size_t>(l.a)].name.c_str(),
                c.vertices[static_cast<std::size_t>(l.b)].name.c_str(),
                sim::format_bandwidth(l.bandwidth).c_str(), sim::format_duration(l.latency).c_str(),
                sim::to_string(l.sharing).c_str(), l.kind.c_str());
  }
  const int n = c.num_devices();
  auto matrix = [&](const char* title, auto cell) {
    std::printf("\n%s\n  %-10s", title, "from\\to");
    for (const sim::Device& d : c.devices) std::printf(" %10.10s", d.name.c_str());
    std::printf("\n");
    for (int i = 0; i < n; ++i) {
      std::printf("  %-10.10s", c.devices[static_cast<std::size_t>(i)].name.c_str());
      for (int j = 0; j < n; ++j)
        std::printf(" %10s", i == j ? "-" : cell(summarize(c.route(i, j))).c_str());
      std::printf("\n");
    }
  };
  matrix("bandwidth (bottleneck link of the route, GB/s; * = staged through host memory):",
         [](const RouteSummary& s) {
           char buf[32];
           std::snprintf(buf, sizeof buf, "%.2f%s", s.bandwidth / 1e9, s.staged ? "*" : "");
           return std::string(buf);
         });
  matrix("latency (sum over the route's links, us; * = staged):", [](const RouteSummary& s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%s", static_cast<double>(s.latency_ns) / 1e3,
                  s.staged ? "*" : "");
    return std::string(buf);
  });
  std::printf("\nroutes:\n");
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      std::printf("  %s -> %s: %s\n", c.devices[static_cast<std::size_t>(i)].name.c_str(),
                  c.devices[static_cast<std::size_t>(j)].name.c_str(),
                  route_text(c, c.route(i, j)).c_str());
    }
  }
}

ordered_json describe_cluster_json(const sim::Cluster& c) {
  ordered_json j;
  j["name"] = c.name;
  j["source_file"] = c.source_file;
  ordered_json devs = ordered_json::array();
  for (const sim::Device& d : c.devices) {
    const sim::DeviceSpec& s = d.spec;
    ordered_json peaks = ordered_json::object();
    for (const auto& [dt, r] : s.peak_flops) peaks[sim::to_string(dt)] = r.per_s;
    devs.push_back({{"name", d.name},
                    {"kind", sim::to_string(s.kind)},
                    {"model", s.model},
                    {"node", d.node},
                    {"host", d.host >= 0 ? c.devices[static_cast<std::size_t>(d.host)].name : ""},
                    {"peak_flops_per_s", peaks},
                    {"memory_bandwidth_bytes_per_s", s.memory_bandwidth.bytes_per_s},
                    {"memory_capacity_bytes", s.memory_capacity.v},
                    {"compute_streams", s.compute_streams},
                    {"worker_threads", s.worker_threads},
                    {"copy_engines",
                     {{"h2d", s.h2d_engines}, {"d2h", s.d2h_engines}, {"peer", s.peer_engines}}},
                    {"launch_overhead_ns", s.launch_overhead.ns},
                    {"kernel_gap_ns", s.kernel_gap.ns},
                    {"kernel_gap_source", s.kernel_gap_source},
                    {"source", s.source}});
  }
  j["devices"] = devs;
  ordered_json verts = ordered_json::array();
  for (std::size_t v = c.devices.size(); v < c.vertices.size(); ++v) {
    verts.push_back({{"name", c.vertices[v].name},
                     {"kind", sim::to_string(c.vertices[v].kind)},
                     {"node", c.vertices[v].node}});
  }
  j["fabric"] = verts;
  ordered_json links = ordered_json::array();
  for (const sim::Link& l : c.links) {
    links.push_back({{"name", l.name},
                     {"a", c.vertices[static_cast<std::size_t>(l.a)].name},
                     {"b", c.vertices[static_cast<std::size_t>(l.b)].name},
                     {"bandwidth_bytes_per_s", l.bandwidth.bytes_per_s},
                     {"latency_ns", l.latency.ns},
                     {"sharing", sim::to_string(l.sharing)},
                     {"kind", l.kind}});
  }
  j["links"] = links;
  const int n = c.num_devices();
  ordered_json names = ordered_json::array(), bw = ordered_json::array(),
               lat = ordered_json::array(), staged = ordered_json::array(),
               peer = ordered_json::array();
  ordered_json routes = ordered_json::array();
  for (int a = 0; a < n; ++a) {
    names.push_back(c.devices[static_cast<std::size_t>(a)].name);
    ordered_json brow = ordered_json::array(), lrow = ordered_json::array(),
                 srow = ordered_json::array(), prow = ordered_json::array();
    for (int b = 0; b < n; ++b) {
      prow.push_back(static_cast<bool>(
          c.peer_access[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]));
      if (a == b) {
        brow.push_back(nullptr);
        lrow.push_back(nullptr);
        srow.push_back(false);
        continue;
      }
      const sim::Route& r = c.route(a, b);
      const RouteSummary s = summarize(r);
      brow.push_back(s.bandwidth);
      lrow.push_back(s.latency_ns);
      srow.push_back(s.staged);
      ordered_json segs = ordered_json::array();
      for (const sim::RouteSegment& seg : r.segments) {
        ordered_json hops = ordered_json::array();
        for (const sim::Hop& h : seg.hops)
          hops.push_back(c.links[static_cast<std::size_t>(h.link)].name);
        segs.push_back({{"from", c.devices[static_cast<std::size_t>(seg.from)].name},
                        {"to", c.devices[static_cast<std::size_t>(seg.to)].name},
                        {"links", hops},
                        {"bottleneck_bytes_per_s", seg.bottleneck.bytes_per_s},
                        {"latency_ns", seg.latency.ns}});
      }
      routes.push_back({{"from", c.devices[static_cast<std::size_t>(a)].name},
                        {"to", c.devices[static_cast<std::size_t>(b)].name},
                        {"staged", s.staged},
                        {"segments", segs}});
    }
    bw.push_back(brow);
    lat.push_back(lrow);
    staged.push_back(srow);
    peer.push_back(prow);
  }
  j["matrix"] = {{"devices", names},
                 {"bandwidth_bytes_per_s", bw},
                 {"latency_ns", lat},
                 {"staged", staged},
                 {"peer_access", peer}};
  j["routes"] = routes;
  return j;
}

void describe_graph_text(const sim::Graph& g, const sim::GraphStats& s) {
  std::printf("graph %s\n", g.name.c_str());
  for (const auto& [k, v] : g.metadata) std::printf("  %s: %s\n", k.c_str(), v.c_str());
  std::printf("ops:                 %d (forward %d, backward %d, update %d, other %d)\n", s.ops,
              s.forward_ops, s.backward_ops, s.update_ops,
              s.ops - s.forward_ops - s.backward_ops - s.update_ops);
  std::printf("co-location groups:  %d\n", s.groups);
  std::printf("FLOPs:               %.4g\n", s.flops.v);
  std::printf("bytes read/written:  %s / %s\n", sim::format_bytes(s.bytes_read).c_str(),
              sim::format_bytes(s.bytes_written).c_str());
  std::printf("output tensors:      %s\n", sim::format_bytes(s.output_bytes).c_str());
  std::printf("persistent (params + optimizer state): %s\n",
              sim::format_bytes(s.persistent_bytes).c_str());
  std::printf("critical path:       %d ops (longest chain), %.4g FLOPs (heaviest chain)\n",
              s.longest_path_ops, s.critical_path_flops.v);
  std::map<std::string, std::pair<int, double>> by_type;
  for (const sim::Op& op : g.ops) {
    auto& e = by_type[op.type.empty() ? "(untyped)" : op.type];
    e.first += 1;
    e.second += op.flops.v;
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_type.begin(), by_type.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::printf("op types (most frequent first):\n");
  for (std::size_t i = 0; i < rows.size() && i < 15; ++i) {
    std::printf("  %-28s %8d ops  %12.4g FLOPs\n", rows[i].first.c_str(), rows[i].second.first,
                rows[i].second.second);
  }
  if (rows.size() > 15) std::printf("  ... %zu more types\n", rows.size() - 15);
}

ordered_json describe_graph_json(const sim::Graph& g, const sim::GraphStats& s) {
  ordered_json by_type = ordered_json::object();
  std::map<std::string, int> counts;
  for (const sim::Op& op : g.ops) counts[op.type] += 1;
  for (const auto& [t, n] : counts) by_type[t] = n;
  return {{"name", g.name},
          {"metadata", g.metadata},
          {"ops", s.ops},
          {"forward_ops", s.forward_ops},
          {"backward_ops", s.backward_ops},
          {"update_ops", s.update_ops},
          {"groups", s.groups},
          {"flops", s.flops.v},
          {"bytes_read", s.bytes_read.v},
          {"bytes_written", s.bytes_written.v},
          {"output_bytes", s.output_bytes.v},
          {"persistent_bytes", s.persistent_bytes.v},
          {"longest_path_ops", s.longest_path_ops},
          {"critical_path_flops", s.critical_path_flops.v},
          {"ops_by_type", by_type}};
}

void run_describe(const DescribeArgs& a) {
  if (a.cluster.empty() && a.graph.empty()) {
    throw sim::InputError("<flags>", "", "--cluster NAME_OR_FILE and/or --graph NAME_OR_FILE");
  }
  // Load everything first so that bad input prints nothing but the one-line error.
  std::optional<sim::Cluster> cluster;
  std::optional<sim::Graph> graph;
  if (!a.cluster.empty()) cluster = sim::load_cluster(a.cluster);
  if (!a.graph.empty()) graph = models::load_graph(a.graph, a.graph_opt);
  if (a.json) {
    ordered_json out = ordered_json::object();
    if (cluster) out["cluster"] = describe_cluster_json(*cluster);
    if (graph) out["graph"] = describe_graph_json(*graph, sim::graph_stats(*graph));
    std::cout << out.dump(1) << "\n";
    return;
  }
  if (cluster) describe_cluster_text(*cluster);
  if (cluster && graph) std::printf("\n");
  if (graph) describe_graph_text(*graph, sim::graph_stats(*graph));
}

}  // namespace

void register_describe(CLI::App& app) {
  auto args = std::make_shared<DescribeArgs>();
  CLI::App* cmd = app.add_subcommand("describe", "Show what a cluster or a graph contains");
  cmd->add_option(
         "--cluster", args->cluster,
         "built-in cluster name (" +
             [] {
               std::string s;
               for (const std::string& n : sim::builtin_cluster_names())
                 s += (s.empty() ? "" : ", ") + n;
               return s;
             }() +
             ") or a cluster YAML file")
      ->check(not_a_directory());
  cmd->add_option("--graph", args->graph,
                  "built-in workload name or a graph JSON/ONNX/Chakra ET file")
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", args->graph_opt,
                  "workload options, key=value,... (see build-graph)");
  cmd->add_flag("--json", args->json, "machine-readable JSON on stdout");
  cmd->callback([args] { run_describe(*args); });
}

}  // namespace placesim::tools

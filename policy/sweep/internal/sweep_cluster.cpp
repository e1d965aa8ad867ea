// Cluster transformations for sweeps and the generated single-node templates. The bandwidths
// of the templates are effective (measured) rates, not signalling rates; sources in
// docs/sweeps.md.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "policy/sweep/sweep.hpp"
#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::policy {

namespace {

using sim::Bandwidth;
using sim::Cluster;
using sim::DeviceKind;
using sim::InputError;
using sim::Link;
using sim::Vertex;
using sim::VertexKind;

/// x16 bandwidth per direction, as the built-in clusters spell it: 8 GT/s x 16 lanes x 128b/130b
/// = 15.75 GB/s for PCIe 3.0 (PCI-SIG base specification), doubling per generation.
double pcie_x16_gbps(int gen) {
  return 15.75 * std::pow(2.0, gen - 3);
}

/// One NVLink link per direction: 20 GB/s for NVLink 1 (P100), 25 GB/s for NVLink 2/3/4
/// (V100, A100, H100 datasheets).
double nvlink_link_gbps(int gen) {
  return gen == 1 ? 20.0 : 25.0;
}

int pcie_gen_of(const std::string& kind) {
  if (kind.size() == 5 && kind.compare(0, 4, "pcie") == 0 && kind[4] >= '1' && kind[4] <= '6')
    return kind[4] - '0';
  return 3;  // a bare "pcie" kind: assume the generation of the paper's machines
}

int nvlink_gen_of(const std::string& kind) {
  if (kind.size() == 7 && kind.compare(0, 6, "nvlink") == 0 && kind[6] >= '1' && kind[6] <= '5')
    return kind[6] - '0';
  return 2;
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

const sim::DeviceSpec& catalog_spec(const std::string& model, const std::string& origin,
                                    const std::string& key, DeviceKind kind) {
  const sim::DeviceSpec* s = sim::find_device_model(model);
  if (!s && !model.empty()) {
    // "K80" names K80-GK210: a prefix that names exactly one catalog entry of this kind.
    const sim::DeviceSpec* unique = nullptr;
    int matches = 0;
    for (const auto& n : sim::device_model_names()) {
      const sim::DeviceSpec* d = sim::find_device_model(n);
      if (d && d->kind == kind && n.size() > model.size() &&
          n.compare(0, model.size(), model) == 0 && n[model.size()] == '-') {
        unique = d;
        ++matches;
      }
    }
    if (matches == 1) s = unique;
  }
  if (!s || s->kind != kind) {
    std::string names;
    for (const auto& n : sim::device_model_names()) {
      const sim::DeviceSpec* d = sim::find_device_model(n);
      if (d && d->kind == kind) names += (names.empty() ? "" : ", ") + n;
    }
    throw InputError(origin, key,
                     std::string("a ") + (kind == DeviceKind::Gpu ? "GPU" : "CPU") +
                         " model of the catalog (" + names + "), got \"" + model + "\"");
  }
  return *s;
}

std::string param(const std::map<std::string, std::string>& p, const std::string& k,
                  const std::string& def) {
  auto it = p.find(k);
  return it == p.end() ? def : it->second;
}

int int_param(const std::map<std::string, std::string>& p, const std::string& k, int def,
              const std::string& origin) {
  const std::string v = param(p, k, std::to_string(def));
  int n = 0;
  try {
    std::size_t used = 0;
    n = std::stoi(v, &used);
    if (used != v.size()) n = 0;
  } catch (const std::exception&) {
    n = 0;
  }
  // GPU counts and link counts size the generated cluster (its routes are devices x devices).
  if (n <= 0 || n > 1024)
    throw InputError(origin, "base." + k,
                     "an integer from 1 to 1024, got \"" + sim::printable(v) + "\"");
  return n;
}

/// The PCIe generation a GPU model ships with (its host interface).
int default_pcie_gen(const std::string& model) {
  if (starts_with(model, "H100") || starts_with(model, "H200")) return 5;
  if (starts_with(model, "A100") || starts_with(model, "RTX-4090") || starts_with(model, "L4") ||
      starts_with(model, "A10"))
    return 4;
  return 3;
}

int default_nvlink_gen(const std::string& model) {
  if (starts_with(model, "P100")) return 1;
  if (starts_with(model, "A100")) return 3;
  if (starts_with(model, "H100") || starts_with(model, "H200")) return 4;
  return 2;  // V100, and the hypothetical NVLink of GPUs that never had one (K80)
}

int add_vertex(Cluster& c, const std::string& name, VertexKind kind) {
  c.vertices.push_back(Vertex{name, kind, "node0"});
  return static_cast<int>(c.vertices.size()) - 1;
}

void add_link(Cluster& c, int a, int b, double gbps, std::int64_t latency_ns,
              const std::string& kind) {
  Link l;
  l.name = c.vertices[static_cast<std::size_t>(a)].name + "-" +
           c.vertices[static_cast<std::size_t>(b)].name;
  l.a = a;
  l.b = b;
  l.bandwidth = Bandwidth{gbps * 1e9};
  l.latency = sim::Duration{latency_ns};
  l.sharing = sim::SharingPolicy::SplitDuplex;
  l.kind = kind;
  c.links.push_back(std::move(l));
}

std::vector<bool> is_gpu_vertex(const Cluster& c) {
  std::vector<bool> g(c.vertices.size(), false);
  for (std::size_t i = 0; i < c.devices.size(); ++i)
    g[i] = c.devices[i].spec.kind == DeviceKind::Gpu;
  return g;
}

bool numbered_gpu_names(const Cluster& c) {
  for (const auto& d : c.devices) {
    if (d.spec.kind != DeviceKind::Gpu) continue;
    if (d.name.size() < 4 || d.name.compare(0, 3, "gpu") != 0) return false;
    if (!std::all_of(d.name.begin() + 3, d.name.end(),
                     [](char ch) { return ch >= '0' && ch <= '9'; }))
      return false;
  }
  return true;
}

}  // namespace

Cluster generate_cluster(const std::string& template_name,
                         const std::map<std::string, std::string>& params,
                         const std::string& origin) {
  std::string interconnect;
  if (template_name == "pcie-tree")
    interconnect = "pcie";
  else if (template_name == "nvlink-mesh")
    interconnect = "nvlink";
  else if (template_name == "nvswitch")
    interconnect = "nvswitch";
  else
    throw InputError(origin, "base.template",
                     "pcie-tree, nvlink-mesh or nvswitch, got \"" + template_name + "\"");
  static const std::set<std::string> kKeys = {"gpus",         "gpu_model",       "cpu_model",
                                              "interconnect", "pcie_generation", "gpus_per_switch",
                                              "nvlink_links", "peer_access"};
  for (const auto& [k, v] : params)
    if (!kKeys.count(k))
      throw InputError(origin, "base." + k,
                       "a template parameter (gpus, gpu_model, cpu_model, interconnect, "
                       "pcie_generation, gpus_per_switch, nvlink_links, peer_access)");
  interconnect = param(params, "interconnect", interconnect);
  if (interconnect != "pcie" && interconnect != "nvlink" && interconnect != "nvswitch")
    throw InputError(origin, "base.interconnect",
                     "pcie, nvlink or nvswitch, got \"" + interconnect + "\"");
  const int n = int_param(params, "gpus", 4, origin);
  if (n > 256)
    throw InputError(origin, "base.gpus", "at most 256 GPUs in one node, got " + std::to_string(n));
  const std::string gpu_model = param(params, "gpu_model", "");
  if (gpu_model.empty()) throw InputError(origin, "base.gpu_model", "a GPU model of the catalog");
  const sim::DeviceSpec& gspec = catalog_spec(gpu_model, origin, "base.gpu_model", DeviceKind::Gpu);
  const sim::DeviceSpec& cspec = catalog_spec(param(params, "cpu_model", "Xeon-E5-2698v4"), origin,
                                              "base.cpu_model", DeviceKind::Cpu);
  int pcie_gen = default_pcie_gen(gspec.model);
  if (params.count("pcie_generation")) {
    const std::string g = params.at("pcie_generation");
    if (g != "pcie3" && g != "pcie4" && g != "pcie5")
      throw InputError(origin, "base.pcie_generation", "pcie3, pcie4 or pcie5, got \"" + g + "\"");
    pcie_gen = g[4] - '0';
  }
  const int per_switch = int_param(params, "gpus_per_switch", 2, origin);
  const int nv_gen = default_nvlink_gen(gspec.model);
  const int nv_links =
      int_param(params, "nvlink_links", interconnect == "nvswitch" ? 12 : 2, origin);
  const std::string peer = param(params, "peer_access", "on");
  if (peer != "on" && peer != "off")
    throw InputError(origin, "base.peer_access", "on or off, got \"" + peer + "\"");

  Cluster c;
  c.name = template_name + "-" + std::to_string(n) + "x" + gspec.model;
  c.source_file = "<generated " + template_name + " template>";
  sim::Device cpu;
  cpu.name = "cpu0";
  cpu.spec = cspec;
  cpu.node = "node0";
  cpu.host = 0;
  c.devices.push_back(cpu);
  for (int i = 0; i < n; ++i) {
    sim::Device g;
    g.name = "gpu" + std::to_string(i);
    g.spec = gspec;
    g.node = "node0";
    g.host = 0;
    c.devices.push_back(g);
  }
  for (const auto& d : c.devices) c.vertices.push_back(Vertex{d.name, VertexKind::Device, "node0"});

  // As paper-4gpu: the CPU's memory bus into the root complex (shared by both directions), whose
  // root ports feed one PCIe switch per `per_switch` GPUs, x16 links, 1 us per hop.
  const int rc = add_vertex(c, "rc0", VertexKind::HostBridge);
  add_link(c, 0, rc, cspec.memory_bandwidth.bytes_per_s / 1e9, 100, "membus");
  c.links.back().sharing = sim::SharingPolicy::Shared;
  const std::string pcie_kind = "pcie" + std::to_string(pcie_gen);
  const double pcie_bw = pcie_x16_gbps(pcie_gen);
  const int switches = (n + per_switch - 1) / per_switch;
  for (int s = 0; s < switches; ++s) {
    const int sw = add_vertex(c, "sw" + std::to_string(s), VertexKind::Switch);
    add_link(c, rc, sw, pcie_bw, 1000, pcie_kind);
    for (int i = s * per_switch; i < std::min(n, (s + 1) * per_switch); ++i)
      add_link(c, sw, 1 + i, pcie_bw, 1000, pcie_kind);
  }
  const std::string nv_kind = "nvlink" + std::to_string(nv_gen);
  const double nv_bw = nv_links * nvlink_link_gbps(nv_gen);
  if (interconnect == "nvlink") {
    // DGX-1-like: a full mesh inside each group of four, and GPU i to GPU i+4 across groups.
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        if (i / 4 == j / 4 || j == i + 4) add_link(c, 1 + i, 1 + j, nv_bw, 700, nv_kind);
  } else if (interconnect == "nvswitch") {
    const int nvs = add_vertex(c, "nvswitch0", VertexKind::Switch);
    for (int i = 0; i < n; ++i) add_link(c, 1 + i, nvs, nv_bw, 350, nv_kind);
  }
  const std::size_t nd = c.devices.size();
  c.peer_access.assign(nd, std::vector<bool>(nd, false));
  for (std::size_t i = 1; i < nd; ++i)
    for (std::size_t j = 1; j < nd; ++j) c.peer_access[i][j] = i != j && peer == "on";
  return c;
}

Cluster make_base_cluster(const SweepBase& base, const std::string& origin) {
  if (!base.template_name.empty()) {
    Cluster c = generate_cluster(base.template_name, base.params, origin);
    sim::compute_routes(c);
    return c;
  }
  try {
    return sim::load_cluster(base.cluster);
  } catch (const InputError& e) {
    // load_cluster speaks of --cluster; in a sweep the spec's key is at fault.
    const std::string what = e.what();
    if (what.rfind("--cluster", 0) != 0) throw;
    const std::size_t at = what.find(": expected ");
    throw InputError(origin, "base.cluster",
                     (at == std::string::npos ? what : what.substr(at + 11)) + ", got \"" +
                         sim::printable(base.cluster) + "\"");
  }
}

Cluster with_gpu_count(const Cluster& c, int n, const std::string& origin) {
  const std::vector<sim::DeviceId> gpus = c.gpus();
  const int have = static_cast<int>(gpus.size());
  if (have == 0) throw InputError(origin, "axes.gpus", "a base cluster with GPUs");
  if (n == have) return c;
  const std::vector<bool> gpu_vertex = is_gpu_vertex(c);
  std::vector<int> gpu_pos(c.vertices.size(), -1);  // vertex -> position among the GPUs
  for (int k = 0; k < have; ++k)
    gpu_pos[static_cast<std::size_t>(gpus[static_cast<std::size_t>(k)])] = k;

  Cluster out;
  out.name = c.name + "-" + std::to_string(n) + "gpu";
  out.source_file = c.source_file;
  out.tcp_window_bytes = c.tcp_window_bytes;  // the fabric's settings stay with it
  out.nccl_version = c.nccl_version;

  // New device list: the non-GPU devices and the kept GPUs in their order, then clones.
  std::vector<int> new_of_old(c.vertices.size(), -1);
  std::vector<int> template_of;  // for each new device: the old device it copies
  for (std::size_t d = 0; d < c.devices.size(); ++d) {
    if (gpu_vertex[d] && gpu_pos[d] >= n) continue;
    new_of_old[d] = static_cast<int>(out.devices.size());
    out.devices.push_back(c.devices[d]);
    template_of.push_back(static_cast<int>(d));
  }
  const bool numbered = numbered_gpu_names(c);
  std::vector<std::vector<int>> clone_of(static_cast<std::size_t>(have));  // [gpu pos][replica]
  for (int k = 0; k < have && k < n; ++k)
    clone_of[static_cast<std::size_t>(k)].push_back(
        new_of_old[static_cast<std::size_t>(gpus[static_cast<std::size_t>(k)])]);
  for (int k = have; k < n; ++k) {
    const int t = gpus[static_cast<std::size_t>(k % have)];
    const int r = k / have;
    sim::Device d = c.devices[static_cast<std::size_t>(t)];
    d.name = numbered ? "gpu" + std::to_string(k) : d.name + "." + std::to_string(r);
    clone_of[static_cast<std::size_t>(k % have)].push_back(static_cast<int>(out.devices.size()));
    out.devices.push_back(d);
    template_of.push_back(t);
  }
  for (const auto& d : out.devices)
    out.vertices.push_back(Vertex{d.name, VertexKind::Device, d.node});
  // Hosts were old device ids; CPUs are always kept.
  for (auto& d : out.devices)
    if (d.host >= 0) d.host = new_of_old[static_cast<std::size_t>(d.host)];
  for (std::size_t v = c.devices.size(); v < c.vertices.size(); ++v) {
    new_of_old[v] = static_cast<int>(out.vertices.size());
    out.vertices.push_back(c.vertices[v]);
  }

  auto replica_vertex = [&](int old_gpu, int replica) {
    const auto& cl = clone_of[static_cast<std::size_t>(gpu_pos[static_cast<std::size_t>(old_gpu)])];
    return replica < static_cast<int>(cl.size()) ? cl[static_cast<std::size_t>(replica)] : -1;
  };
  for (const Link& l : c.links) {
    // Replica 0 is the original; replicas r >= 1 copy the links of their template GPU.
    const int max_rep = (n + have - 1) / have;
    for (int r = 0; r < max_rep; ++r) {
      const bool ga = gpu_vertex[static_cast<std::size_t>(l.a)];
      const bool gb = gpu_vertex[static_cast<std::size_t>(l.b)];
      if (r > 0 && !ga && !gb) break;
      const int a = ga ? replica_vertex(l.a, r) : new_of_old[static_cast<std::size_t>(l.a)];
      const int b = gb ? replica_vertex(l.b, r) : new_of_old[static_cast<std::size_t>(l.b)];
      if (a < 0 || b < 0) continue;
      Link nl = l;
      nl.a = a;
      nl.b = b;
      if (r > 0)
        nl.name = out.vertices[static_cast<std::size_t>(a)].name + "-" +
                  out.vertices[static_cast<std::size_t>(b)].name;
      out.links.push_back(std::move(nl));
    }
  }
  // Drop fabric vertices left dangling (a switch whose GPUs were all removed), repeatedly.
  while (true) {
    std::vector<int> degree(out.vertices.size(), 0);
    for (const Link& l : out.links) {
      ++degree[static_cast<std::size_t>(l.a)];
      ++degree[static_cast<std::size_t>(l.b)];
    }
    int drop = -1;
    for (std::size_t v = out.devices.size(); v < out.vertices.size(); ++v)
      if (degree[v] <= 1 && out.vertices[v].kind == VertexKind::Switch) {
        drop = static_cast<int>(v);
        break;
      }
    if (drop < 0) break;
    out.vertices.erase(out.vertices.begin() + drop);
    std::vector<Link> kept;
    for (Link l : out.links) {
      if (l.a == drop || l.b == drop) continue;
      if (l.a > drop) --l.a;
      if (l.b > drop) --l.b;
      kept.push_back(std::move(l));
    }
    out.links = std::move(kept);
  }
  const std::size_t nd = out.devices.size();
  out.peer_access.assign(nd, std::vector<bool>(nd, false));
  auto any_peer = [&](int t) {
    for (std::size_t j = 0; j < c.devices.size(); ++j)
      if (c.peer_access[static_cast<std::size_t>(t)][j]) return true;
    return false;
  };
  for (std::size_t i = 0; i < nd; ++i)
    for (std::size_t j = 0; j < nd; ++j) {
      if (i == j) continue;
      const int ti = template_of[i], tj = template_of[j];
      if (!gpu_vertex[static_cast<std::size_t>(ti)] || !gpu_vertex[static_cast<std::size_t>(tj)])
        continue;
      out.peer_access[i][j] =
          ti != tj ? c.peer_access[static_cast<std::size_t>(ti)][static_cast<std::size_t>(tj)]
                   : any_peer(ti);
    }
  return out;
}

void scale_links(Cluster& c, const std::string& kind_prefix, double factor) {
  for (Link& l : c.links)
    if (starts_with(l.kind, kind_prefix)) l.bandwidth.bytes_per_s *= factor;
}

void set_link_bandwidth(Cluster& c, const std::string& kind_prefix, Bandwidth bw) {
  for (Link& l : c.links)
    if (starts_with(l.kind, kind_prefix)) l.bandwidth = bw;
}

void set_pcie_generation(Cluster& c, const std::string& gen, const std::string& origin) {
  if (gen != "pcie3" && gen != "pcie4" && gen != "pcie5")
    throw InputError(origin, "axes.pcie_generation", "pcie3, pcie4 or pcie5, got \"" + gen + "\"");
  const int to = gen[4] - '0';
  for (Link& l : c.links) {
    if (!starts_with(l.kind, "pcie")) continue;
    // Keeping the ratio keeps the link's width (x8, x16) and its measured efficiency.
    l.bandwidth.bytes_per_s *= pcie_x16_gbps(to) / pcie_x16_gbps(pcie_gen_of(l.kind));
    l.kind = gen;
  }
}

void set_nvlink_links(Cluster& c, int links, const std::string& origin) {
  if (links <= 0) throw InputError(origin, "axes.nvlink_links", "a positive number of links");
  for (Link& l : c.links)
    if (starts_with(l.kind, "nvlink"))
      l.bandwidth = Bandwidth{links * nvlink_link_gbps(nvlink_gen_of(l.kind)) * 1e9};
}

void set_host_link_bandwidth(Cluster& c, Bandwidth bw) {
  auto is_host = [&](int v) {
    return v < c.num_devices() &&
           c.devices[static_cast<std::size_t>(v)].spec.kind == DeviceKind::Cpu;
  };
  for (Link& l : c.links)
    if (is_host(l.a) || is_host(l.b)) l.bandwidth = bw;
}

void set_peer_access(Cluster& c, bool on) {
  const std::size_t nd = c.devices.size();
  c.peer_access.assign(nd, std::vector<bool>(nd, false));
  if (!on) return;
  for (std::size_t i = 0; i < nd; ++i)
    for (std::size_t j = 0; j < nd; ++j)
      c.peer_access[i][j] = i != j && c.devices[i].spec.kind == DeviceKind::Gpu &&
                            c.devices[j].spec.kind == DeviceKind::Gpu &&
                            c.devices[i].node == c.devices[j].node;
}

void set_gpu_memory(Cluster& c, sim::Bytes capacity) {
  for (auto& d : c.devices)
    if (d.spec.kind == DeviceKind::Gpu) d.spec.memory_capacity = capacity;
}

Cluster apply_axes(const SweepBase& base, const Cluster& base_cluster,
                   const std::vector<std::pair<std::string, std::string>>& axis_values,
                   const std::string& origin) {
  auto value_of = [&](const std::string& axis) -> const std::string* {
    for (const auto& [a, v] : axis_values)
      if (a == axis) return &v;
    return nullptr;
  };
  Cluster c;
  if (!base.template_name.empty()) {
    // Template axes regenerate the cluster, so defaults that follow the GPU model (its PCIe and
    // NVLink generations) follow it here too.
    std::map<std::string, std::string> params = base.params;
    bool regenerate = false;
    for (const char* a : {"gpus", "gpu_model", "interconnect"})
      if (const std::string* v = value_of(a)) {
        params[a] = *v;
        regenerate = true;
      }
    c = regenerate ? generate_cluster(base.template_name, params, origin) : base_cluster;
  } else {
    if (value_of("interconnect"))
      throw InputError(origin, "axes.interconnect",
                       "a template base (base.template) to change the interconnect");
    c = base_cluster;
    if (const std::string* v = value_of("gpus")) c = with_gpu_count(c, std::stoi(*v), origin);
    if (const std::string* v = value_of("gpu_model")) {
      const sim::DeviceSpec& s = catalog_spec(*v, origin, "axes.gpu_model", DeviceKind::Gpu);
      for (auto& d : c.devices)
        if (d.spec.kind == DeviceKind::Gpu) d.spec = s;
    }
  }
  if (const std::string* v = value_of("pcie_generation")) set_pcie_generation(c, *v, origin);
  if (const std::string* v = value_of("nvlink_links")) set_nvlink_links(c, std::stoi(*v), origin);
  for (const auto& [a, v] : axis_values) {
    if (starts_with(a, "link_scale.")) {
      std::istringstream is(v);
      is.imbue(std::locale::classic());
      double f = 1.0;
      is >> f;
      scale_links(c, a.substr(11), f);
    } else if (starts_with(a, "link_bandwidth.")) {
      set_link_bandwidth(c, a.substr(15), sim::parse_bandwidth(v));
    }
  }
  if (const std::string* v = value_of("host_link_bandwidth"))
    set_host_link_bandwidth(c, sim::parse_bandwidth(*v));
  if (const std::string* v = value_of("gpu_memory")) set_gpu_memory(c, sim::parse_bytes(*v));
  if (const std::string* v = value_of("peer_access")) set_peer_access(c, *v == "on");
  // Scaled or replaced links must stay in the cluster format's ranges (docs/formats.md).
  for (const sim::Link& l : c.links)
    if (!(l.bandwidth.bytes_per_s >= 1e6 && l.bandwidth.bytes_per_s <= 1e18))
      throw InputError(origin, "axes",
                       "axis values that keep every link from 1 MB/s to 10^18 B/s, got " +
                           std::to_string(l.bandwidth.bytes_per_s) + " B/s on link " + l.name);
  c.routes.clear();
  sim::compute_routes(c);
  return c;
}

}  // namespace placesim::policy

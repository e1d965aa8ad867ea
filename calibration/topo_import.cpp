#include "calibration/topo_import.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "calibration/text_util.hpp"
#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::calibration {

using sim::InputError;

namespace {

// The catalog's interconnect facts of a GPU model (sim/catalog.cpp); none for an unknown name.
sim::GpuInterconnect interconnect_of(const std::string& gpu_model) {
  const sim::DeviceSpec* s = sim::find_device_model(gpu_model);
  return s ? s->interconnect : sim::GpuInterconnect{};
}

}  // namespace

double nvlink_gb_s_per_link(const std::string& gpu_model, std::string* generation) {
  const sim::GpuInterconnect ic = interconnect_of(gpu_model);
  const bool any = ic.nvlink_version > 0 && ic.nvlink_gb_s > 0;
  if (generation) *generation = any ? "nvlink" + std::to_string(ic.nvlink_version) : "";
  return any ? ic.nvlink_gb_s : 0.0;
}

double pcie_x16_gb_s(const std::string& gpu_model, std::string* generation) {
  // x16, per direction, after 128b/130b encoding: Gen3 15.75, Gen4 31.5, Gen5 63 GB/s (PCI-SIG).
  // A model whose entry gives no generation (a CPU, an unknown name) is taken as Gen3.
  const int gen = interconnect_of(gpu_model).pcie_gen;
  const double gb_s = gen == 5 ? 63.0 : gen == 4 ? 31.5 : 15.75;
  if (generation) *generation = "pcie" + std::to_string(gen == 5 || gen == 4 ? gen : 3);
  return gb_s;
}

namespace {

using sim::Bandwidth;
using sim::Cluster;
using sim::Device;
using sim::Duration;
using sim::Link;
using sim::SharingPolicy;
using sim::VertexKind;

std::string default_name(const std::string& origin) {
  std::string stem = std::filesystem::path(origin).stem().string();
  return stem.empty() ? "imported" : stem;
}

const sim::DeviceSpec& catalog_spec(const std::string& model, const std::string& origin,
                                    const char* flag) {
  const sim::DeviceSpec* s = sim::find_device_model(model);
  if (!s) {
    std::string names;
    for (const std::string& n : sim::device_model_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(origin, flag,
                     "a device model from the catalog (" + names + "), got \"" + model + "\"");
  }
  return *s;
}

// Collects vertices and links by name and turns them into a Cluster with CPUs first, then GPUs,
// then switches, host bridges and NICs.
class Builder {
 public:
  Builder(std::string origin, const TopoOptions& o) : origin_(std::move(origin)), opt_(o) {}

  std::vector<std::string> notes;

  void add_cpu(const std::string& name, const sim::DeviceSpec& spec) {
    cpus_.push_back({name, spec});
  }
  void add_gpu(const std::string& name, const sim::DeviceSpec& spec, const std::string& host) {
    gpus_.push_back({name, spec, host});
  }
  void add_vertex(const std::string& name, VertexKind k) { others_.push_back({name, k}); }
  void add_link(const std::string& a, const std::string& b, double gb_s, double latency_us,
                const std::string& kind, SharingPolicy sharing = SharingPolicy::SplitDuplex) {
    links_.push_back({a, b, gb_s, latency_us, kind, sharing});
  }
  void add_peer(const std::string& a, const std::string& b) {
    peers_.insert({std::min(a, b), std::max(a, b)});
  }

  Cluster build(const std::string& name) {
    Cluster c;
    c.name = name;
    c.source_file = origin_;
    for (const auto& [n, spec] : cpus_) {
      Device d;
      d.name = n;
      d.spec = spec;
      d.node = opt_.node;
      c.devices.push_back(d);
    }
    for (const auto& g : gpus_) {
      Device d;
      d.name = g.name;
      d.spec = g.spec;
      d.node = opt_.node;
      c.devices.push_back(d);
    }
    for (std::size_t i = 0; i < c.devices.size(); ++i)
      c.vertices.push_back({c.devices[i].name, VertexKind::Device, opt_.node});
    for (const auto& [n, k] : others_) c.vertices.push_back({n, k, opt_.node});
    for (std::size_t i = 0; i < cpus_.size(); ++i)
      c.devices[i].host = static_cast<sim::DeviceId>(i);
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      const sim::DeviceId h = c.device_index(gpus_[i].host);
      if (h < 0)
        throw InputError(origin_, gpus_[i].name,
                         "a host CPU for every GPU, got none (internal import error)");
      c.devices[cpus_.size() + i].host = h;
    }
    // What the file names must stay distinct and in the cluster format's ranges (docs/formats.md),
    // or the YAML written would be one placesim refuses to read.
    std::set<std::string> names;
    for (const sim::Vertex& v : c.vertices)
      if (!names.insert(v.name).second)
        throw InputError(
            origin_, sim::printable(v.name),
            "distinct device, switch and NIC names, got \"" + sim::printable(v.name) + "\" twice");
    std::set<std::string> used;
    for (const auto& l : links_) {
      if (!(l.gb_s >= 1e-3 && l.gb_s <= 1e9))
        throw InputError(
            origin_, sim::printable(l.a + "-" + l.b),
            "a link bandwidth from 0.001 to 1e9 GB/s, got " + std::to_string(l.gb_s) + " GB/s");
      if (!(l.latency_us >= 0 && l.latency_us <= 1e9))
        throw InputError(
            origin_, sim::printable(l.a + "-" + l.b),
            "a link latency from 0 to 1e9 us, got " + std::to_string(l.latency_us) + " us");
      Link link;
      link.a = c.vertex_index(l.a);
      link.b = c.vertex_index(l.b);
      if (link.a < 0 || link.b < 0)
        throw InputError(origin_, l.a + "-" + l.b,
                         "links between known vertices (internal import error)");
      std::string ln = l.a + "-" + l.b;
      for (int k = 2; used.count(ln); ++k) ln = l.a + "-" + l.b + "-" + std::to_string(k);
      used.insert(ln);
      link.name = ln;
      link.bandwidth = Bandwidth{l.gb_s * 1e9};
      link.latency = Duration{std::llround(l.latency_us * 1000.0)};
      link.sharing = l.sharing;
      link.kind = l.kind;
      c.links.push_back(link);
    }
    const std::size_t n = c.devices.size();
    c.peer_access.assign(n, std::vector<bool>(n, false));
    for (const auto& [a, b] : peers_) {
      const auto i = c.device_index(a), j = c.device_index(b);
      if (i < 0 || j < 0 || i == j) continue;
      c.peer_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = true;
      c.peer_access[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)] = true;
    }
    sim::compute_routes(c);
    return c;
  }

 private:
  struct GpuRec {
    std::string name;
    sim::DeviceSpec spec;
    std::string host;
  };
  struct LinkRec {
    std::string a, b;
    double gb_s, latency_us;
    std::string kind;
    SharingPolicy sharing;
  };
  std::string origin_;
  TopoOptions opt_;
  std::vector<std::pair<std::string, sim::DeviceSpec>> cpus_;
  std::vector<GpuRec> gpus_;
  std::vector<std::pair<std::string, VertexKind>> others_;
  std::vector<LinkRec> links_;
  std::set<std::pair<std::string, std::string>> peers_;
};

// Link latencies are typical one-hop figures; `placesim calibrate-links` replaces them with
// measured ones. PCIe hop ~0.5 us and NVLink ~0.7 us follow the P2P=Enabled latency matrix of
// p2pBandwidthLatencyTest (≈2 us GPU-to-GPU end to end, most of it software).
constexpr double kPcieLatencyUs = 0.5;
constexpr double kNvlinkLatencyUs = 0.7;
constexpr double kSmpLatencyUs = 0.5;
constexpr double kNicLatencyUs = 1.0;
// Two QPI/UPI links at 9.6 GT/s (2 x 19.2 GB/s per direction): the Xeon E5 v4 of DGX-1.
constexpr double kSmpGbS = 38.4;
// EDR InfiniBand, 100 Gbit/s, when the file gives no speed.
constexpr double kDefaultNicGbS = 12.5;
// NVLink-C2C between a Grace CPU and its Hopper/Blackwell GPU: "900 GB/s of bidirectional
// bandwidth" (spheron.network/blog/nvidia-gh200-guide; NVIDIA's Grace Hopper and GB200 figures),
// 450 GB/s per direction, 1 us a hop as scenarios/clusters/gb200-nvl72.yaml assumes for its C2C
// links. Used for a GPU whose `GPU NUMA ID` cell is a number: its memory is a NUMA node of the
// host, which only a coherent chip-to-chip link gives (a PCIe GPU prints N/A).
constexpr double kC2cGbS = 450.0;
constexpr double kC2cLatencyUs = 1.0;

// A GPU-to-NVSwitch hop must be cheaper than a PCIe switch hop: GPU-nvswitch-GPU and
// GPU-PCIe switch-GPU are both two hops, and routing breaks hop ties on latency
// (docs/routing.md), so GPUs behind one PCIe switch would otherwise talk over PCIe.
constexpr double kNvswitchLatencyUs = 0.35;

// NVLinks a GPU has in all (the catalog's interconnect facts): a GPU whose NV# relations add up to
// more than this reaches its peers through NVSwitches, not point-to-point bundles.
int nvlinks_per_gpu(const std::string& m) {
  return interconnect_of(m).nvlinks;
}

// Which GPUs sit on an NVSwitch fabric, and with how many links each.
struct NvSwitchPlan {
  std::vector<bool> on_switch;  // per GPU row
  std::vector<int> port_links;  // links from the GPU into the switch fabric
  std::vector<int> totals;      // sum of the GPU's NV# relations
  int max_links = 0;
  [[nodiscard]] bool any() const {
    return std::find(on_switch.begin(), on_switch.end(), true) != on_switch.end();
  }
  [[nodiscard]] std::string describe(const std::string& model, double per_link) const {
    int n = 0, total = 0, port = 0;
    for (std::size_t k = 0; k < on_switch.size(); ++k)
      if (on_switch[k]) {
        ++n;
        total = std::max(total, totals[k]);
        port = std::max(port, port_links[k]);
      }
    std::ostringstream os;
    os << n << " GPUs reach each other through NVSwitch: up to " << total
       << " NVLinks per GPU in the NV# relations, more than the " << max_links << " a " << model
       << " has; modelled as one non-blocking `nvswitch` with one " << port * per_link
       << " GB/s port per GPU (" << port << " links)";
    return os.str();
  }
};

template <class Rel>
NvSwitchPlan plan_nvswitch(const Rel& rel, const std::vector<int>& gpu_rows, int max_links) {
  NvSwitchPlan p;
  p.max_links = max_links;
  p.on_switch.assign(gpu_rows.size(), false);
  p.port_links.assign(gpu_rows.size(), 0);
  p.totals.assign(gpu_rows.size(), 0);
  if (max_links <= 0) return p;
  for (std::size_t a = 0; a < gpu_rows.size(); ++a) {
    int widest = 0;
    for (std::size_t c = 0; c < gpu_rows.size(); ++c) {
      if (a == c) continue;
      const auto& r =
          rel[static_cast<std::size_t>(gpu_rows[a])][static_cast<std::size_t>(gpu_rows[c])];
      if (r.nvlinks <= 0) continue;
      p.totals[a] += r.nvlinks;
      widest = std::max(widest, r.nvlinks);
    }
    // Through switches, nvidia-smi reports every pair at the GPU's full link count (NV18 on an
    // HGX H100): that is the GPU's port into the fabric.
    p.on_switch[a] = p.totals[a] > max_links;
    p.port_links[a] = std::min(widest, max_links);
  }
  return p;
}

// NIC line rate assumed when the file gives none, and where that figure comes from: the NIC of
// the GPU's reference system as the catalog gives it (sim::reference_nic: DGX-1 EDR 100 Gb/s,
// DGX A100 HDR 200, DGX H100/H200/B200/GB200 NDR 400, ...), else EDR 100 Gb/s as in DGX-1.
double assumed_nic_gbit_s(const std::string& m, std::string* why) {
  const sim::ReferenceNic nic = sim::reference_nic(m);
  if (nic.gbit_s > 0) {
    *why = nic.basis;
    return nic.gbit_s;
  }
  *why = "no reference system for " + m + " in the catalog, so InfiniBand EDR as in DGX-1";
  return kDefaultNicGbS * 8.0;
}

std::string cpu_model_or_default(const TopoOptions& o, const std::string& guessed,
                                 std::vector<std::string>& notes) {
  if (!o.cpu_model.empty()) return o.cpu_model;
  if (!guessed.empty()) return guessed;
  notes.push_back("CPU model not in the file: assumed Xeon-E5-2698v4 (pass --cpu-model)");
  return "Xeon-E5-2698v4";
}

struct Relation {
  enum Kind { Self, NvLink, Pix, Pxb, Phb, Node, Sys } kind = Sys;
  int nvlinks = 0;
};

std::optional<Relation> parse_relation(const std::string& cell) {
  Relation r;
  if (cell == "X")
    r.kind = Relation::Self;
  else if (cell == "PIX")
    r.kind = Relation::Pix;
  else if (cell == "PXB")
    r.kind = Relation::Pxb;
  else if (cell == "PHB")
    r.kind = Relation::Phb;
  else if (cell == "NODE")
    r.kind = Relation::Node;
  else if (cell == "SYS" || cell == "SOC")
    r.kind = Relation::Sys;  // SOC: drivers before 2019
  else if (cell.size() > 2 && cell.rfind("NV", 0) == 0 &&
           std::all_of(cell.begin() + 2, cell.end(),
                       [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
    r.kind = Relation::NvLink;
    if (cell.size() > 5) return std::nullopt;  // more than 999 links: not a real bundle
    r.nvlinks = std::stoi(cell.substr(2));
    if (r.nvlinks < 1) return std::nullopt;  // NV0: no link (a 0 B/s link is no link)
  } else
    return std::nullopt;
  return r;
}

// Two or more relations printed without a space between them ("NODENODE", "PIXPIX", "NODEPIX"):
// nvidia-smi pads every cell to its column's width, and a header wider than that (the 36-NIC
// matrix of an 8x H20 in sglang#14092 pads "NIC12" and "NIC33" so) leaves the next cell glued on.
// The relations in order, or none when `cell` is not a run of at least two relations.
std::vector<std::string> split_glued_relations(const std::string& cell) {
  static const char* const kWords[] = {"NODE", "PIX", "PXB", "PHB", "SYS", "SOC", "X"};
  std::vector<std::string> out;
  std::size_t p = 0;
  while (p < cell.size()) {
    std::size_t len = 0;
    if (cell.compare(p, 2, "NV") == 0) {
      len = 2;
      while (p + len < cell.size() && std::isdigit(static_cast<unsigned char>(cell[p + len])))
        ++len;
      if (len == 2) return {};
    } else {
      for (const char* w : kWords)
        if (cell.compare(p, std::strlen(w), w) == 0) {
          len = std::strlen(w);
          break;
        }
      if (len == 0) return {};
    }
    out.push_back(cell.substr(p, len));
    p += len;
  }
  if (out.size() < 2) return {};
  return out;
}

struct UnionFind {
  std::vector<int> p;
  explicit UnionFind(int n) : p(static_cast<std::size_t>(n)) { std::iota(p.begin(), p.end(), 0); }
  int find(int x) {
    return p[static_cast<std::size_t>(x)] == x
               ? x
               : p[static_cast<std::size_t>(x)] = find(p[static_cast<std::size_t>(x)]);
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) p[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }
};

// nvidia-smi (driver 5xx) underlines the header row with terminal escapes ("\x1b[4mGPU0
// ...\x1b[0m") even when its output is redirected to a file, as on the H200 rig.
std::string strip_ansi(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
      continue;
    }
    out.push_back(line[i]);
  }
  return out;
}

// The matrix of `nvidia-smi topo -m` as printed: column devices, one row of relation cells per
// device, each row's CPU (or NUMA) affinity, and the NIC legend.
struct SmiMatrix {
  std::vector<std::string> columns;  // device names of the matrix, in order
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row_names, affinity;
  std::map<std::string, std::string> nic_legend;  // NIC0 -> mlx5_0
  int header_line = 0;
  int glued_cells = 0;  // printed cells that held two or more relations (split on reading)
  // Columns after the matrix that the header names: "CPU Affinity", "NUMA Affinity", "GPU NUMA
  // ID" (0 when it names none of them).
  std::size_t trailing_columns = 0;
  bool cpu_and_numa = false;
  bool gpu_numa_column = false;
  // Per row: the printed `GPU NUMA ID` when it is a number (a GPU whose memory is a NUMA node of
  // the host: GH200/GB200 with the GPU memory onlined), else "".
  std::vector<std::string> gpu_numa_id;
};

// The columns after the matrix that an `nvidia-smi topo -m` header names.
void read_trailing_header(const std::string& header, SmiMatrix& mx) {
  const bool cpu = header.find("CPU Affinity") != std::string::npos;
  const bool numa = header.find("NUMA Affinity") != std::string::npos;
  const bool gpu_numa = header.find("GPU NUMA ID") != std::string::npos;
  mx.trailing_columns = static_cast<std::size_t>(cpu) + numa + gpu_numa;
  mx.cpu_and_numa = cpu && numa;
  mx.gpu_numa_column = gpu_numa;
}

// The row's `GPU NUMA ID` when every column after the matrix is printed and it is a number
// ("0-71  0  1" on a GH200, cuBB's system check), else "" ("N/A" on PCIe and SXM GPUs).
std::string row_gpu_numa_id(const std::vector<std::string>& tok, std::size_t next,
                            const SmiMatrix& mx) {
  if (!mx.gpu_numa_column || tok.size() <= next || tok.size() - next != mx.trailing_columns)
    return "";
  const std::string& id = tok.back();
  return id.find_first_not_of("0123456789") == std::string::npos ? id : "";
}

// A GPU row's CPU/NUMA affinity from the cells after its relations: the NUMA node ("numa3") when
// printed, else the CPU list. A row with one cell fewer than the header names has an empty CPU
// Affinity cell (GB200, driver 580: "\t\t1\t\tN/A" for the GPUs of the second Grace CPU), so its
// first cell is the NUMA node.
std::string row_affinity(const std::vector<std::string>& tok, std::size_t next,
                         const SmiMatrix& mx) {
  auto digit = [&](std::size_t k) {
    return tok.size() > k && std::isdigit(static_cast<unsigned char>(tok[k][0]));
  };
  if (mx.cpu_and_numa && tok.size() > next && tok.size() - next + 1 == mx.trailing_columns &&
      tok[next].find_first_not_of("0123456789") == std::string::npos)
    return "numa" + tok[next];
  if (digit(next + 1)) return "numa" + tok[next + 1];
  return tok.size() > next ? tok[next] : "";
}

using RelMatrix = std::vector<std::vector<Relation>>;

// What a matrix without GPU columns has instead: another vendor's tool prints the same layout with
// its own device names (ppu-smi topo -m: "PPU0 PPU1 ...",
// tests/data/bad/ppu-smi_topo-mp-po_8xPPU.txt).
std::string other_device_header(const std::string& text) {
  static const std::regex kHead(R"(^\s*([A-Za-z]+)0\s+([A-Za-z]+)1\s)");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, kHead) && m[1] == m[2] && m[1] != "GPU")
      return "none (its header names devices " + sim::printable(m[1].str()) + "0, " +
             sim::printable(m[1].str()) + "1, ...: another vendor's matrix, not NVIDIA GPUs')";
  return "none";
}

SmiMatrix read_smi_matrix(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  SmiMatrix mx;
  int line_no = 0;
  bool in_matrix = false;
  static const std::regex kDevRe(
      "^(GPU\\d+|NIC\\d+|mlx\\d+_\\d+|mlx5_\\d+|ib\\w*\\d+|eth\\d+|bnxt\\w*)$");
  static const std::regex kLegendRe("^\\s*(NIC\\d+)\\s*:\\s*(\\S+)\\s*$");
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    line = strip_ansi(line);
    // Pasted as comments ("#         GPU0    GPU1 ...", "# GPU0     X      NV18 ..."): the matrix
    // after the '#'.
    if (const std::size_t hash = line.find_first_not_of(" \t");
        hash != std::string::npos && line[hash] == '#') {
      const auto after = split_ws(line.substr(hash + 1));
      if (!after.empty() && std::regex_match(after[0], kDevRe)) line = " " + line.substr(hash + 1);
    }
    std::smatch m;
    if (std::regex_match(line, m, kLegendRe)) mx.nic_legend[m[1]] = m[2];
    const auto tok = split_ws(line);
    if (tok.empty()) {
      if (in_matrix && !mx.rows.empty()) in_matrix = false;
      continue;
    }
    if (mx.columns.empty()) {
      std::vector<std::string> cols;
      for (const std::string& t : tok) {
        if (std::regex_match(t, kDevRe))
          cols.push_back(t);
        else
          break;
      }
      if (!cols.empty() && std::regex_match(tok[0], kDevRe) && line.find_first_not_of(" \t") > 0) {
        mx.columns = cols;
        mx.header_line = line_no;
        read_trailing_header(line, mx);
        in_matrix = true;
      }
      continue;
    }
    if (!in_matrix) continue;
    if (!std::regex_match(tok[0], kDevRe)) {
      in_matrix = false;
      continue;
    }
    const std::size_t ncol = mx.columns.size();
    // The relation cells, glued ones split; what follows them is the affinity.
    std::vector<std::string> cells;
    std::size_t next = 1;
    for (; next < tok.size() && cells.size() < ncol; ++next) {
      const auto parts =
          parse_relation(tok[next]) ? std::vector<std::string>{} : split_glued_relations(tok[next]);
      if (parts.empty()) {
        cells.push_back(tok[next]);
        continue;
      }
      cells.insert(cells.end(), parts.begin(), parts.end());
      ++mx.glued_cells;
    }
    if (cells.size() != ncol)
      throw InputError(origin, "line " + std::to_string(line_no),
                       std::to_string(ncol) + " relation cells after the device name, got " +
                           std::to_string(cells.size()));
    mx.row_names.push_back(tok[0]);
    mx.rows.push_back(std::move(cells));
    // The first column after the matrix is the CPU affinity; newer drivers add NUMA affinity.
    mx.affinity.push_back(row_affinity(tok, next, mx));
    mx.gpu_numa_id.push_back(row_gpu_numa_id(tok, next, mx));
  }
  if (mx.columns.empty())
    throw InputError(origin, "",
                     "the matrix of `nvidia-smi topo -m` (a header row GPU0 GPU1 ...), got " +
                         other_device_header(text));
  return mx;
}

// The relation of every pair of column devices. Every column needs its row, in order, except
// that trailing NIC rows may be missing (a paste cut short): the GPU rows hold every GPU-NIC
// relation, and NIC-NIC ones only group NICs.
RelMatrix smi_relations(SmiMatrix& mx, const std::string& origin, std::vector<std::string>& notes) {
  const auto& columns = mx.columns;
  const auto& row_names = mx.row_names;
  const bool prefix = row_names.size() <= columns.size() &&
                      std::equal(row_names.begin(), row_names.end(), columns.begin());
  bool only_nics_missing = prefix;
  for (std::size_t k = row_names.size(); only_nics_missing && k < columns.size(); ++k)
    only_nics_missing = columns[k].rfind("GPU", 0) != 0;
  if (!only_nics_missing)
    throw InputError(origin, "line " + std::to_string(mx.header_line),
                     "one row per column device in the same order, got " +
                         std::to_string(row_names.size()) + " rows for " +
                         std::to_string(columns.size()) + " columns");
  const std::size_t n = columns.size();
  const std::size_t have = row_names.size();
  if (have < n) {
    notes.push_back(std::to_string(n - have) + " NIC row(s) missing from the matrix (" +
                    columns[have] +
                    " on): their relations to GPUs taken from the GPU rows, to other NICs as SYS");
    mx.affinity.resize(n);
  }
  RelMatrix rel(n, std::vector<Relation>(n));
  for (std::size_t i = 0; i < have; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const auto r = parse_relation(mx.rows[i][j]);
      if (!r)
        throw InputError(
            origin, row_names[i] + "/" + columns[j],
            "a relation X, NV#, PIX, PXB, PHB, NODE, SYS or SOC, got \"" + mx.rows[i][j] + "\"");
      rel[i][j] = *r;
    }
  for (std::size_t i = have; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      Relation r;
      r.kind = i == j ? Relation::Self : Relation::Sys;
      if (j < have) r = rel[j][i];
      rel[i][j] = r;
    }
  return rel;
}

bool smi_is_gpu(const SmiMatrix& mx, int i) {
  return mx.columns[static_cast<std::size_t>(i)].rfind("GPU", 0) == 0;
}

// Column device i is a GPU whose row prints a numeric `GPU NUMA ID` (joined to its CPU by
// NVLink-C2C, kC2cGbS).
bool smi_is_c2c_gpu(const SmiMatrix& mx, int i) {
  if (!smi_is_gpu(mx, i)) return false;
  for (std::size_t r = 0; r < mx.row_names.size(); ++r)
    if (mx.row_names[r] == mx.columns[static_cast<std::size_t>(i)])
      return !mx.gpu_numa_id[r].empty();
  return false;
}

// NUMA node of every column device (GPUs by their affinity, NICs by their closest GPU) and the
// PCIe switch groups (components of PIX/PXB).
struct SmiPlacement {
  std::vector<int> numa_id;
  int numas = 1;
  std::map<int, std::vector<int>> switch_groups;  // root -> members
};

SmiPlacement smi_placement(const SmiMatrix& mx, const RelMatrix& rel,
                           std::vector<std::string>& notes) {
  const int n = static_cast<int>(mx.columns.size());
  const auto& affinity = mx.affinity;
  UnionFind numa(n);
  std::map<std::string, int> first_with_affinity;
  for (int i = 0; i < n; ++i) {
    if (!smi_is_gpu(mx, i) || affinity[static_cast<std::size_t>(i)].empty() ||
        affinity[static_cast<std::size_t>(i)] == "N/A")
      continue;
    auto [it, fresh] = first_with_affinity.emplace(affinity[static_cast<std::size_t>(i)], i);
    if (!fresh) numa.unite(i, it->second);
  }
  // Components holding a GPU that its affinity placed: a NIC NODE to GPUs of two such NUMA nodes
  // (GB200 prints NODE from every NIC to every GPU) joins the nearer one, never merges them.
  std::vector<bool> placed(static_cast<std::size_t>(n), false);
  for (const auto& [aff, i] : first_with_affinity)
    placed[static_cast<std::size_t>(numa.find(i))] = true;
  UnionFind sw(n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const auto k = rel[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].kind;
      if (i != j && (k == Relation::Pix || k == Relation::Pxb)) sw.unite(i, j);
    }
  // Same NUMA node, nearest relation first; affinity already says so for GPUs, this places NICs.
  for (const auto kind : {Relation::Pix, Relation::Pxb, Relation::Phb, Relation::Node})
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        if (i == j || rel[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].kind != kind ||
            (smi_is_gpu(mx, i) && smi_is_gpu(mx, j) && !first_with_affinity.empty()))
          continue;
        const int a = numa.find(i), b = numa.find(j);
        if (a == b || (placed[static_cast<std::size_t>(a)] && placed[static_cast<std::size_t>(b)]))
          continue;
        const bool either =
            placed[static_cast<std::size_t>(a)] || placed[static_cast<std::size_t>(b)];
        numa.unite(a, b);
        placed[static_cast<std::size_t>(numa.find(a))] = either;
      }
  std::map<int, int> numa_index;  // root -> numa number, in order of first GPU
  for (int i = 0; i < n; ++i)
    if (smi_is_gpu(mx, i)) numa_index.emplace(numa.find(i), static_cast<int>(numa_index.size()));
  const int gpu_numas = static_cast<int>(numa_index.size());
  SmiPlacement p;
  p.numa_id.assign(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const auto [it, fresh] = numa_index.emplace(numa.find(i), static_cast<int>(numa_index.size()));
    p.numa_id[static_cast<std::size_t>(i)] = it->second;
    // SYS to every GPU (and to every NIC nearer a GPU): on a NUMA node of its own, which holds no
    // GPU and is reached over the smp links, as SYS says. A 1-GPU server's NICs on the other
    // socket (lmdeploy's check_env, tests/data/README.md) are NUMA 1, not the GPU's NUMA 0.
    if (it->second >= gpu_numas)
      notes.push_back(mx.columns[static_cast<std::size_t>(i)] +
                      ": SYS to every GPU, placed on NUMA " + std::to_string(it->second) +
                      (fresh ? " (a NUMA node without GPUs)" : ""));
  }
  p.numas = std::max(1, static_cast<int>(numa_index.size()));
  for (int i = 0; i < n; ++i) p.switch_groups[sw.find(i)].push_back(i);
  return p;
}

// GPU pairs: NV# relations as NVLinks (through one NVSwitch where the pattern says so), peer
// access where NVLink or PCIe allows it.
void add_smi_nvlinks(Builder& b, const SmiMatrix& mx, const RelMatrix& rel,
                     const std::string& model, std::vector<std::string>& notes) {
  const int n = static_cast<int>(mx.columns.size());
  auto gname = [&](int i) { return "gpu" + mx.columns[static_cast<std::size_t>(i)].substr(3); };
  std::string gen;
  double per_link = nvlink_gb_s_per_link(model, &gen);
  if (per_link == 0.0) {
    bool any_nv = false;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        any_nv |=
            rel[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].kind == Relation::NvLink;
    if (any_nv)
      notes.push_back(model + " has no NVLink in the catalog: NV links assumed 25 GB/s each");
    per_link = 25.0;
    gen = "nvlink";
  }
  std::vector<int> gpu_rows;
  for (int i = 0; i < n; ++i)
    if (smi_is_gpu(mx, i)) gpu_rows.push_back(i);
  const NvSwitchPlan plan = plan_nvswitch(rel, gpu_rows, nvlinks_per_gpu(model));
  if (plan.any()) {
    b.add_vertex("nvswitch", VertexKind::Switch);
    for (std::size_t k = 0; k < gpu_rows.size(); ++k) {
      if (!plan.on_switch[k]) continue;
      b.add_link(gname(gpu_rows[k]), "nvswitch", per_link * plan.port_links[k], kNvswitchLatencyUs,
                 gen);
    }
    notes.push_back(plan.describe(model, per_link));
  }
  for (std::size_t a = 0; a < gpu_rows.size(); ++a)
    for (std::size_t c = a + 1; c < gpu_rows.size(); ++c) {
      const int i = gpu_rows[a], j = gpu_rows[c];
      const Relation r = rel[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      if (r.kind == Relation::NvLink && !(plan.on_switch[a] && plan.on_switch[c]))
        b.add_link(gname(i), gname(j), per_link * r.nvlinks, kNvlinkLatencyUs, gen);
      if (r.kind == Relation::NvLink || r.kind == Relation::Pix || r.kind == Relation::Pxb ||
          r.kind == Relation::Phb)
        b.add_peer(gname(i), gname(j));
    }
}

// Hosts: per NUMA node a CPU and its host bridge, the host bridges joined by SMP links.
void add_smi_hosts(Builder& b, int numas, const sim::DeviceSpec& cspec,
                   std::vector<std::string>& notes) {
  for (int k = 0; k < numas; ++k) {
    const std::string cpu = "cpu" + std::to_string(k), hb = "hb" + std::to_string(k);
    b.add_cpu(cpu, cspec);
    b.add_vertex(hb, VertexKind::HostBridge);
    b.add_link(cpu, hb, cspec.memory_bandwidth.bytes_per_s / 1e9, 0.1, "membus");
    for (int j = 0; j < k; ++j)
      b.add_link("hb" + std::to_string(j), hb, kSmpGbS, kSmpLatencyUs, "smp");
  }
  if (numas > 1)
    notes.push_back("NUMA nodes joined by " + std::to_string(kSmpGbS).substr(0, 4) +
                    " GB/s smp links (assumed; calibrate-links fits them)");
}

}  // namespace

TopoImport import_nvidia_smi_topo(const std::string& text, const std::string& origin,
                                  const TopoOptions& o) {
  SmiMatrix mx = read_smi_matrix(text, origin);
  TopoImport out;
  const RelMatrix rel = smi_relations(mx, origin, out.notes);
  if (mx.glued_cells > 0)
    out.notes.push_back(std::to_string(mx.glued_cells) +
                        " matrix cell(s) held two relations with no space between them "
                        "(\"NODEPIX\"): read as two cells");
  const int n = static_cast<int>(mx.columns.size());
  if (o.gpu_model.empty())
    throw InputError(
        origin, "--gpu-model",
        "a GPU model from the catalog (nvidia-smi topo does not name the GPUs), got none");
  const sim::DeviceSpec& gspec = catalog_spec(o.gpu_model, "<flag --gpu-model>", "");
  const std::string& model =
      gspec.model;  // the catalog name, also when given as nvidia-smi prints it

  Builder b(origin, o);
  const SmiPlacement place = smi_placement(mx, rel, out.notes);
  int c2c_gpus = 0;
  for (int i = 0; i < n; ++i) c2c_gpus += smi_is_c2c_gpu(mx, i) ? 1 : 0;
  if (c2c_gpus > 0)
    out.notes.push_back(
        std::to_string(c2c_gpus) +
        " GPU(s) print a GPU NUMA ID (their memory is a NUMA node of the host): "
        "joined to their CPU by NVLink-C2C, 450 GB/s per direction, not PCIe" +
        std::string(o.cpu_model.empty() ? "; CPU assumed Grace (pass --cpu-model)" : ""));
  // Only Grace joins an NVIDIA GPU by NVLink-C2C: the CPU a C2C GPU names, unless given.
  const std::string cpu_model = cpu_model_or_default(o, c2c_gpus > 0 ? "Grace" : "", out.notes);
  const sim::DeviceSpec& cspec = catalog_spec(cpu_model, "<flag --cpu-model>", "");
  auto numa_of = [&](int i) { return place.numa_id[static_cast<std::size_t>(i)]; };
  std::string pgen;
  const double pcie = pcie_x16_gb_s(model, &pgen);
  add_smi_hosts(b, place.numas, cspec, out.notes);
  // PCIe switches: components of PIX/PXB with at least two members.
  std::map<int, std::string> switch_of;
  int nsw = 0;
  for (const auto& [root, members] : place.switch_groups) {
    if (members.size() < 2) continue;
    const std::string s = "sw" + std::to_string(nsw++);
    b.add_vertex(s, VertexKind::Switch);
    b.add_link(s, "hb" + std::to_string(numa_of(root)), pcie, kPcieLatencyUs, pgen);
    for (int m : members) switch_of[m] = s;
  }
  int gpu_count = 0, nic_count = 0;
  // `nvidia-smi topo -m` names NICs but gives no speed.
  std::string nic_why;
  const double nic_gbit = o.nic_gbit_s > 0 ? o.nic_gbit_s : assumed_nic_gbit_s(model, &nic_why);
  const double nic_gb_s = nic_gbit / 8.0;
  for (int i = 0; i < n; ++i) {
    const std::string& name = mx.columns[static_cast<std::size_t>(i)];
    const std::string up = switch_of.count(i) ? switch_of[i] : "hb" + std::to_string(numa_of(i));
    if (smi_is_gpu(mx, i)) {
      const std::string g = "gpu" + name.substr(3);
      b.add_gpu(g, gspec, "cpu" + std::to_string(numa_of(i)));
      if (smi_is_c2c_gpu(mx, i))
        b.add_link(g, "hb" + std::to_string(numa_of(i)), kC2cGbS, kC2cLatencyUs, "c2c");
      else
        b.add_link(g, up, pcie, kPcieLatencyUs, pgen);
      ++gpu_count;
    } else {
      const std::string nic = mx.nic_legend.count(name) ? mx.nic_legend[name] : name;
      b.add_vertex(nic, VertexKind::Nic);
      b.add_link(nic, up, std::min(pcie, nic_gb_s), kNicLatencyUs, "ib");
      ++nic_count;
    }
  }
  add_smi_nvlinks(b, mx, rel, model, out.notes);
  if (gpu_count == 0) throw InputError(origin, "", "at least one GPU row, got none");
  if (nic_count > 0) {
    std::ostringstream os;
    os << nic_count << " NIC(s) at " << nic_gbit << " Gb/s = " << nic_gb_s
       << " GB/s per direction ("
       << (o.nic_gbit_s > 0
               ? std::string("--nic-gbps")
               : "assumed, " + nic_why + ": nvidia-smi gives no NIC speed; pass --nic-gbps")
       << ")";
    out.notes.push_back(os.str());
  }
  out.cluster = b.build(o.name.empty() ? default_name(origin) : o.name);
  out.notes.insert(out.notes.end(), b.notes.begin(), b.notes.end());
  return out;
}

namespace {

struct XmlNode {
  std::string tag;
  std::map<std::string, std::string> attrs;
  std::vector<XmlNode> children;
  int line = 0;
  [[nodiscard]] std::string attr(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? std::string() : it->second;
  }
};

// Enough XML for NCCL's topology files: elements, attributes, comments, declarations.
class XmlParser {
 public:
  XmlParser(const std::string& text, std::string origin) : s_(text), origin_(std::move(origin)) {}
  XmlNode parse() {
    XmlNode root;
    root.tag = "#document";
    std::vector<XmlNode*> stack{&root};
    while (true) {
      const std::size_t lt = s_.find('<', pos_);
      if (lt == std::string::npos) break;
      advance_to(lt);
      if (s_.compare(pos_, 4, "<!--") == 0) {
        const std::size_t e = s_.find("-->", pos_);
        if (e == std::string::npos) fail("a closed comment");
        advance_to(e + 3);
        continue;
      }
      if (s_.compare(pos_, 2, "<?") == 0 || s_.compare(pos_, 2, "<!") == 0) {
        const std::size_t e = s_.find('>', pos_);
        if (e == std::string::npos) fail("a closed declaration");
        advance_to(e + 1);
        continue;
      }
      if (s_.compare(pos_, 2, "</") == 0) {
        const std::size_t e = s_.find('>', pos_);
        if (e == std::string::npos) fail("a closing tag ending in '>'");
        const std::string name = trim(s_.substr(pos_ + 2, e - pos_ - 2));
        if (stack.size() < 2 || stack.back()->tag != name)
          fail("</" + stack.back()->tag + ">, got </" + name + ">");
        stack.pop_back();
        advance_to(e + 1);
        continue;
      }
      ++pos_;
      XmlNode node;
      node.line = line_;
      node.tag = name_token();
      if (node.tag.empty()) fail("an element name after '<'");
      bool self_closing = false;
      while (true) {
        skip_ws();
        if (pos_ >= s_.size()) fail("'>' ending <" + node.tag);
        if (s_[pos_] == '/') {
          if (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '>') fail("'/>'");
          pos_ += 2;
          self_closing = true;
          break;
        }
        if (s_[pos_] == '>') {
          ++pos_;
          break;
        }
        const std::string key = name_token();
        if (key.empty()) fail("an attribute name in <" + node.tag + ">");
        skip_ws();
        if (pos_ >= s_.size() || s_[pos_] != '=') fail("'=' after attribute " + key);
        ++pos_;
        skip_ws();
        if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\''))
          fail("a quoted value for " + key);
        const char q = s_[pos_];
        const std::size_t e = s_.find(q, pos_ + 1);
        if (e == std::string::npos) fail("a closing quote for " + key);
        node.attrs[key] = s_.substr(pos_ + 1, e - pos_ - 1);
        advance_to(e + 1);
      }
      stack.back()->children.push_back(std::move(node));
      if (!self_closing) stack.push_back(&stack.back()->children.back());
      // NCCL's files nest 5 deep; a bound keeps the recursive tree walks off the stack's end.
      if (stack.size() > 64) fail("elements nested at most 64 deep");
    }
    if (stack.size() != 1) fail("</" + stack.back()->tag + "> before the end of the file");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(origin_, "line " + std::to_string(line_), what);
  }
  void advance_to(std::size_t p) {
    for (; pos_ < p && pos_ < s_.size(); ++pos_)
      if (s_[pos_] == '\n') ++line_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) {
      if (s_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  std::string name_token() {
    const std::size_t b = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
            s_[pos_] == '-' || s_[pos_] == ':' || s_[pos_] == '.'))
      ++pos_;
    return s_.substr(b, pos_ - b);
  }
  static std::string trim(std::string t) {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(t.begin());
    return t;
  }
  const std::string& s_;
  std::string origin_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

// PCI device ids (NVIDIA vendor 0x10de) of the GPUs in the catalog.
std::string model_of_pci_device(const std::string& id) {
  static const std::map<std::string, std::string> kIds = {
      {"0x15f8", "P100-PCIe-16GB"}, {"0x15f9", "P100-SXM2-16GB"}, {"0x1db1", "V100-SXM2-16GB"},
      {"0x1db5", "V100-SXM2-32GB"}, {"0x1db4", "V100-PCIe-16GB"}, {"0x20b0", "A100-SXM4-40GB"},
      {"0x20b2", "A100-SXM4-80GB"}, {"0x20f1", "A100-PCIe-40GB"}, {"0x20b5", "A100-PCIe-80GB"},
      {"0x2330", "H100-SXM5-80GB"}, {"0x2331", "H100-PCIe-80GB"}, {"0x2335", "H200-SXM-141GB"},
      {"0x2684", "RTX-4090"}};
  std::string k = id;
  std::transform(k.begin(), k.end(), k.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  auto it = kIds.find(k);
  return it == kIds.end() ? std::string() : it->second;
}

double pcie_link_gb_s(const std::string& speed, const std::string& width, double fallback) {
  // Per-lane GB/s after encoding: 2.5 GT/s 0.25, 5 GT/s 0.5, 8 GT/s 0.985, 16 GT/s 1.969, 32
  // GT/s 3.938.
  double gt = 0.0;
  try {
    gt = speed.empty() ? 0.0 : std::stod(speed);
  } catch (const std::exception&) {
    gt = 0.0;
  }
  int w = 0;
  try {
    w = width.empty() ? 0 : std::stoi(width);
  } catch (const std::exception&) {
    w = 0;
  }
  if (gt <= 0.0 || w <= 0) return fallback;
  const double lane = gt < 3 ? 0.25 : gt < 6 ? 0.5 : gt * 128.0 / 130.0 / 8.0;
  return lane * w;
}

// An integer attribute of an XML element, or an InputError naming the element's line.
int int_attr(const XmlNode& n, const std::string& key, int dflt, const std::string& origin) {
  const std::string v = n.attr(key);
  if (v.empty()) return dflt;
  try {
    std::size_t used = 0;
    const int x = std::stoi(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw InputError(origin, "line " + std::to_string(n.line),
                   "an integer " + key + "=\"...\" in <" + n.tag + ">, got \"" + v + "\"");
}

double num_attr(const XmlNode& n, const std::string& key, const std::string& origin) {
  const std::string v = n.attr(key);
  if (v.empty()) return 0.0;
  try {
    return std::stod(v);
  } catch (const std::exception&) {
    throw InputError(origin, "line " + std::to_string(n.line),
                     "a number " + key + "=\"...\" in <" + n.tag + ">, got \"" + v + "\"");
  }
}

bool is_gpu_class(const std::string& c) {
  return c.rfind("0x0302", 0) == 0 || c.rfind("0x0300", 0) == 0;
}
bool is_nic_class(const std::string& c) {
  return c.rfind("0x0207", 0) == 0 || c.rfind("0x0200", 0) == 0;
}
bool is_bridge_class(const std::string& c) {
  return c.rfind("0x0604", 0) == 0;
}

// What an NCCL topology file says, element by element: the GPUs, NICs and PCIe switches under
// each <cpu>, and the guess at the CPU model from the first <cpu>'s vendor.
struct NcclGpu {
  std::string busid, model, name, host, parent;
  double pcie_gb_s = 0;
  int dev = -1;
  std::vector<std::pair<std::string, int>> nvlinks;  // target busid, count
  std::vector<std::string> nvswitch_targets;
  int nvswitch_links = 0;  // sum of the count= of the NVLinks to NVSwitches
  int line = 0;
};
struct NcclNic {
  std::string name, parent;
  double gb_s;
};
struct NcclSwitch {
  std::string name, parent;
  double gb_s;
};

class NcclReader {
 public:
  NcclReader(const std::string& origin, Builder& b) : origin_(origin), b_(b) {}

  std::vector<NcclGpu> gpus;
  std::vector<NcclNic> nics;
  std::vector<NcclSwitch> switches;
  std::string guessed_cpu;
  int numa = 0, assumed_nic_speeds = 0;

  // One <cpu>: its host bridge, the PCIe tree below it, NICs attached to it directly.
  void read_cpu(const XmlNode& cpu) {
    const std::string id = cpu.attr("numaid").empty() ? std::to_string(numa) : cpu.attr("numaid");
    const std::string cname = "cpu" + id, hb = "hb" + id;
    ++numa;
    if (guessed_cpu.empty()) {
      const std::string vendor = cpu.attr("vendor");
      if (vendor == "AuthenticAMD")
        guessed_cpu = "EPYC-7742";
      else if (vendor == "GenuineIntel" && cpu.attr("modelid") == "143")
        guessed_cpu = "Xeon-Platinum-8480C";
    }
    b_.add_vertex(hb, VertexKind::HostBridge);
    for (const XmlNode& c : cpu.children) {
      if (c.tag == "pci") read_pci(c, hb, cname);
      if (c.tag == "nic")
        for (const XmlNode& net : c.children)
          if (net.tag == "net") {
            const double sp = num_attr(net, "speed", origin_) / 8000.0;
            if (sp <= 0) ++assumed_nic_speeds;
            nics.push_back(
                {net.attr("name").empty() ? "nic" + std::to_string(nics.size()) : net.attr("name"),
                 hb, sp > 0 ? sp : kDefaultNicGbS});
          }
    }
  }

 private:
  // A <pci> element: a bridge (a switch, recursed into), a GPU, a NIC, or anything else (its
  // children read under the same parent).
  void read_pci(const XmlNode& p, const std::string& parent, const std::string& cpu) {
    const std::string cls = p.attr("class");
    const double bw = pcie_link_gb_s(p.attr("link_speed"), p.attr("link_width"), 0.0);
    if (is_bridge_class(cls)) {
      const std::string s = "sw" + std::to_string(switches.size());
      switches.push_back({s, parent, bw});
      for (const XmlNode& c : p.children)
        if (c.tag == "pci") read_pci(c, s, cpu);
      return;
    }
    if (is_gpu_class(cls)) {
      read_gpu(p, parent, cpu, bw);
      return;
    }
    if (is_nic_class(cls)) {
      double nic_bw = 0.0;
      for (const XmlNode& c : p.children)
        if (c.tag == "nic")
          for (const XmlNode& net : c.children)
            if (net.tag == "net") nic_bw = num_attr(net, "speed", origin_) / 8000.0;
      if (nic_bw <= 0) ++assumed_nic_speeds;
      // The NIC's own line rate, capped by its PCIe attachment when the file gives one.
      const double line = nic_bw > 0 ? nic_bw : kDefaultNicGbS;
      nics.push_back(
          {"nic" + std::to_string(nics.size()), parent, bw > 0 ? std::min(bw, line) : line});
      return;
    }
    for (const XmlNode& c : p.children)
      if (c.tag == "pci") read_pci(c, parent, cpu);
  }

  // A GPU's <pci> element and its <gpu dev=...> with <nvlink> children.
  void read_gpu(const XmlNode& p, const std::string& parent, const std::string& cpu, double bw) {
    NcclGpu g;
    g.busid = p.attr("busid");
    g.model = model_of_pci_device(p.attr("device"));
    g.host = cpu;
    g.parent = parent;
    g.pcie_gb_s = bw;
    g.line = p.line;
    for (const XmlNode& c : p.children)
      if (c.tag == "gpu") {
        g.dev = int_attr(c, "dev", -1, origin_);
        for (const XmlNode& l : c.children)
          if (l.tag == "nvlink") {
            const int count = int_attr(l, "count", 1, origin_);
            if (l.attr("tclass").rfind("0x0680", 0) == 0) {
              g.nvswitch_targets.push_back(l.attr("target"));
              g.nvswitch_links += count;
            } else
              g.nvlinks.emplace_back(l.attr("target"), count);
          }
      }
    gpus.push_back(g);
  }

  const std::string& origin_;
  Builder& b_;
};

// A CPU per <cpu> joined to its host bridge, the host bridges joined by SMP links.
void add_nccl_hosts(Builder& b, const XmlNode& system, const sim::DeviceSpec& cspec,
                    std::vector<std::string>& notes) {
  std::vector<std::string> hbs;
  for (const XmlNode& cpu : system.children)
    if (cpu.tag == "cpu") hbs.push_back(cpu.attr("numaid"));
  int k = 0;
  for (const XmlNode& cpu : system.children) {
    if (cpu.tag != "cpu") continue;
    const std::string id = cpu.attr("numaid").empty() ? std::to_string(k) : cpu.attr("numaid");
    b.add_cpu("cpu" + id, cspec);
    b.add_link("cpu" + id, "hb" + id, cspec.memory_bandwidth.bytes_per_s / 1e9, 0.1, "membus");
    for (int j = 0; j < k; ++j) {
      const std::string other = hbs[static_cast<std::size_t>(j)].empty()
                                    ? std::to_string(j)
                                    : hbs[static_cast<std::size_t>(j)];
      b.add_link("hb" + other, "hb" + id, kSmpGbS, kSmpLatencyUs, "smp");
    }
    ++k;
  }
  if (k > 1)
    notes.push_back("NUMA nodes joined by " + std::to_string(kSmpGbS).substr(0, 4) +
                    " GB/s smp links (assumed; calibrate-links fits them)");
}

// Name GPUs by their CUDA index when the file gives it, else in file order; fix their model.
void name_nccl_gpus(std::vector<NcclGpu>& gpus, const TopoOptions& o, const std::string& origin) {
  std::set<int> devs;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    NcclGpu& g = gpus[i];
    if (g.dev < 0) g.dev = static_cast<int>(i);
    if (!devs.insert(g.dev).second)
      throw InputError(origin, "line " + std::to_string(g.line),
                       "distinct GPU dev numbers, got dev " + std::to_string(g.dev) + " twice");
    g.name = "gpu" + std::to_string(g.dev);
    if (!o.gpu_model.empty()) g.model = catalog_spec(o.gpu_model, "<flag --gpu-model>", "").model;
    if (g.model.empty())
      throw InputError(
          origin, "line " + std::to_string(g.line),
          "a GPU the file identifies (pci device id) or --gpu-model, got neither for busid " +
              g.busid);
  }
}

// NVLinks: a bundle to another GPU (count links), or to NVSwitches (one switch vertex for all);
// peer access along them and under a common host bridge (NCCL's PHB or closer).
void add_nccl_nvlinks(Builder& b, const std::vector<NcclGpu>& gpus,
                      const std::map<std::string, std::string>& by_bus,
                      std::vector<std::string>& notes) {
  std::set<std::pair<std::string, std::string>> done;
  bool any_nvlink = false, nvswitch = false;
  for (const NcclGpu& g : gpus) {
    std::string gen;
    const double per = nvlink_gb_s_per_link(g.model, &gen);
    for (const auto& [target, count] : g.nvlinks) {
      if (target == g.busid) {
        notes.push_back(g.name + ": NVLink entry targets its own bus id " + target +
                        " (ignored; no GPU-to-GPU NVLink)");
        continue;
      }
      auto it = by_bus.find(target);
      if (it == by_bus.end()) {
        notes.push_back(g.name + ": NVLink to unknown bus id " + target + " ignored");
        continue;
      }
      const auto key = std::minmax(g.name, it->second);
      if (!done.insert({key.first, key.second}).second) continue;
      b.add_link(g.name, it->second, (per > 0 ? per : 25.0) * count, kNvlinkLatencyUs,
                 gen.empty() ? "nvlink" : gen);
      b.add_peer(g.name, it->second);
      any_nvlink = true;
    }
    if (!g.nvswitch_targets.empty()) {
      if (!nvswitch) b.add_vertex("nvswitch", VertexKind::Switch);
      nvswitch = true;
      // A DGX A100 lists six NVSwitches with count="2" each: 12 links, 300 GB/s per direction.
      b.add_link(g.name, "nvswitch", (per > 0 ? per : 25.0) * static_cast<double>(g.nvswitch_links),
                 kNvswitchLatencyUs, gen.empty() ? "nvlink" : gen, SharingPolicy::SplitDuplex);
      any_nvlink = true;
    }
  }
  if (nvswitch)
    for (const NcclGpu& g : gpus)
      for (const NcclGpu& h : gpus)
        if (g.name < h.name && !g.nvswitch_targets.empty() && !h.nvswitch_targets.empty())
          b.add_peer(g.name, h.name);
  // PCIe peers: GPUs under the same host bridge (NCCL's PHB or closer).
  for (const NcclGpu& g : gpus)
    for (const NcclGpu& h : gpus)
      if (g.name < h.name && g.host == h.host) b.add_peer(g.name, h.name);
  if (!any_nvlink)
    notes.push_back(
        "no usable NVLink in the file (NCCL completes NVLinks from NVML at run time): PCIe only");
}

}  // namespace

TopoImport import_nccl_topo_xml(const std::string& text, const std::string& origin,
                                const TopoOptions& o) {
  const XmlNode doc = XmlParser(text, origin).parse();
  const XmlNode* system = nullptr;
  for (const XmlNode& c : doc.children)
    if (c.tag == "system") system = &c;
  if (!system)
    throw InputError(origin, "system",
                     "an NCCL topology file (<system version=...>), got no <system>");
  TopoImport out;
  Builder b(origin, o);
  NcclReader rd(origin, b);
  for (const XmlNode& cpu : system->children) {
    if (cpu.tag == "cpu") rd.read_cpu(cpu);
  }
  if (rd.assumed_nic_speeds > 0)
    out.notes.push_back(std::to_string(rd.assumed_nic_speeds) +
                        " NIC(s) without a speed= in the file: assumed " +
                        std::to_string(kDefaultNicGbS * 8.0).substr(0, 5) + " Gb/s");
  if (rd.numa == 0) throw InputError(origin, "system.cpu", "at least one <cpu> element, got none");
  if (rd.gpus.empty())
    throw InputError(origin, "system", "at least one GPU (pci class 0x0302/0x0300), got none");

  const std::string cpu_model = cpu_model_or_default(o, rd.guessed_cpu, out.notes);
  const sim::DeviceSpec& cspec = catalog_spec(cpu_model, "<flag --cpu-model>", "");
  add_nccl_hosts(b, *system, cspec, out.notes);
  name_nccl_gpus(rd.gpus, o, origin);
  std::string pgen;
  const double pcie_default = pcie_x16_gb_s(rd.gpus[0].model, &pgen);
  for (const NcclSwitch& s : rd.switches) {
    b.add_vertex(s.name, VertexKind::Switch);
    b.add_link(s.name, s.parent, s.gb_s > 0 ? s.gb_s : pcie_default, kPcieLatencyUs, pgen);
  }
  std::map<std::string, std::string> by_bus;
  for (const NcclGpu& g : rd.gpus) {
    b.add_gpu(g.name, catalog_spec(g.model, origin, ("line " + std::to_string(g.line)).c_str()),
              g.host);
    b.add_link(g.name, g.parent, g.pcie_gb_s > 0 ? g.pcie_gb_s : pcie_default, kPcieLatencyUs,
               pgen);
    by_bus[g.busid] = g.name;
  }
  for (const NcclNic& nic : rd.nics) {
    b.add_vertex(nic.name, VertexKind::Nic);
    b.add_link(nic.name, nic.parent, nic.gb_s, kNicLatencyUs, "ib");
  }
  add_nccl_nvlinks(b, rd.gpus, by_bus, out.notes);
  out.cluster = b.build(o.name.empty() ? default_name(origin) : o.name);
  return out;
}

}  // namespace placesim::calibration

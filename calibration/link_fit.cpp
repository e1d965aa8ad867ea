#include "calibration/link_fit.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "calibration/text_util.hpp"
#include "sim/collective_call.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::calibration {

using sim::InputError;

namespace {

// A finite number spelled in full ("inf", "nan", "1e999" and trailing text are not numbers).
bool parse_double(const std::string& s, double& v) {
  try {
    std::size_t used = 0;
    v = std::stod(s, &used);
    return used == s.size() && std::isfinite(v);
  } catch (const std::exception&) {
    return false;
  }
}

// A small non-negative decimal integer (device index, rank or thread count) up to `max`.
bool parse_index(const std::string& s, int max, int& v) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  v = std::stoi(s);
  return v <= max;
}

// Limits keep every fitted value inside the cluster format's ranges (docs/formats.md): link
// bandwidth 1 MB/s to 10^18 B/s, latency up to 1000 s, message sizes up to 1 PiB.
constexpr int kMaxGpus = 4096;
constexpr double kMinGbS = 1e-3, kMaxGbS = 1e9;
constexpr double kMaxUs = 1e9;
constexpr double kMaxMessageBytes = 1125899906842624.0;

// The fit of `points` must give a link bandwidth and latency the cluster format accepts.
void check_collective_fit(const std::vector<CollectivePoint>& points, const std::string& origin);

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A row of the "P2P Connectivity Matrix": the CUDA sample prints the row index, a tab and one 0
// or 1 per device, 1 where cudaDeviceCanAccessPeer allows it and on the diagonal
// (Samples/5_Domain_Specific/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu of
// NVIDIA/cuda-samples: printf("%6d\t", i), then printf("%6d", access)).
void read_connectivity_row(const std::vector<std::string>& tok,
                           std::vector<std::vector<bool>>& conn, const std::string& origin,
                           int line_no) {
  std::vector<bool> row;
  for (std::size_t i = 1; i < tok.size(); ++i) {
    if (tok[i] != "0" && tok[i] != "1")
      throw InputError(
          origin, "line " + std::to_string(line_no),
          "0 or 1 in the P2P Connectivity Matrix, got \"" + sim::printable(tok[i]) + "\"");
    row.push_back(tok[i] == "1");
  }
  if (tok[0] != std::to_string(conn.size()) || row.size() > static_cast<std::size_t>(kMaxGpus))
    throw InputError(origin, "line " + std::to_string(line_no),
                     "P2P Connectivity Matrix row " + std::to_string(conn.size()) + ", got row " +
                         sim::printable(tok[0]));
  conn.push_back(std::move(row));
}

// Peer access per pair: the "Device=i CAN Access Peer Device=j" lines where the output has them,
// else its P2P Connectivity Matrix (a post cut to the matrices, as the 9-GPU RTX 5090 output in
// tests/data/README.md), else none.
std::vector<std::vector<bool>> peer_access(
    int gpus, const std::vector<std::pair<std::pair<int, int>, bool>>& acc,
    const std::vector<std::vector<bool>>& conn, const std::string& origin) {
  std::vector<std::vector<bool>> can(static_cast<std::size_t>(gpus),
                                     std::vector<bool>(static_cast<std::size_t>(gpus), false));
  for (const auto& [ij, ok] : acc)
    if (ij.first < gpus && ij.second < gpus)
      can[static_cast<std::size_t>(ij.first)][static_cast<std::size_t>(ij.second)] = ok;
  if (!acc.empty() || conn.empty()) return can;
  for (const auto& r : conn)
    if (conn.size() != can.size() || r.size() != can.size())
      throw InputError(origin, "P2P Connectivity Matrix",
                       std::to_string(gpus) + " rows of " + std::to_string(gpus) +
                           " like the bandwidth matrices, got " + std::to_string(conn.size()) +
                           " rows, one of " + std::to_string(r.size()));
  for (std::size_t i = 0; i < can.size(); ++i)
    for (std::size_t j = 0; j < can.size(); ++j) can[i][j] = i != j && conn[i][j];
  return can;
}

}  // namespace

namespace {

// The banner each run of the CUDA sample prints first (cuda-samples
// Samples/5_Domain_Specific/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu, main()).
constexpr const char* kP2pBanner = "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]";

// Offsets and 1-based line numbers where each run starts (the first run also holds what precedes
// its banner); one run from offset 0 when no banner is printed.
std::vector<std::pair<std::size_t, int>> p2p_run_starts(const std::string& text) {
  std::vector<std::pair<std::size_t, int>> starts;
  std::size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    if (std::string_view(text).substr(pos, end - pos).find(kP2pBanner) != std::string_view::npos)
      starts.emplace_back(starts.empty() ? 0 : pos, starts.empty() ? 1 : line);
    pos = end + 1;
    ++line;
  }
  if (starts.empty()) starts.emplace_back(0, 1);
  return starts;
}

// The text of run `run` (1-based; 0 = the first) of a file; m's runs, run and run_line set.
std::string select_p2p_run(const std::string& text, const std::string& origin, int run,
                           P2pMeasurement& m) {
  const auto starts = p2p_run_starts(text);
  const int runs = static_cast<int>(starts.size());
  if (run < 0 || run > runs)
    throw InputError(origin, "--run",
                     "a run from 1 to " + std::to_string(runs) + " (the file holds " +
                         std::to_string(runs) + " p2pBandwidthLatencyTest run(s)), got " +
                         std::to_string(run));
  const std::size_t k = static_cast<std::size_t>(std::max(run, 1) - 1);
  const std::size_t from = starts[k].first;
  const std::size_t to = k + 1 < starts.size() ? starts[k + 1].first : text.size();
  m.runs = runs;
  m.run = static_cast<int>(k) + 1;
  m.run_line = starts[k].second;
  return text.substr(from, to - from);
}

}  // namespace

P2pMeasurement parse_p2p_output(const std::string& text, const std::string& origin, int run) {
  P2pMeasurement m;
  std::istringstream in(select_p2p_run(text, origin, run, m));
  std::string line;
  // Lines may be indented (a Markdown code block by indentation, tests/data/README.md).
  static const std::regex kDevRe(R"(^\s*Device:\s*(\d+),\s*([^,]+),)");
  static const std::regex kAccRe(R"(^\s*Device=(\d+)\s+(CAN|CANNOT)\s+Access Peer Device=(\d+))");
  std::string section;  // current matrix family
  std::string sub;      // "gpu"/"cpu" for latency
  std::vector<std::pair<int, int>> access;
  std::vector<std::pair<std::pair<int, int>, bool>> acc;
  std::vector<std::vector<bool>> conn;  // the P2P Connectivity Matrix, when printed
  int line_no = m.run_line - 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch mt;
    if (std::regex_search(line, mt, kDevRe)) {
      int d = 0;
      if (!parse_index(mt[1], kMaxGpus - 1, d))
        throw InputError(origin, "line " + std::to_string(line_no),
                         "a device index below " + std::to_string(kMaxGpus) + ", got " +
                             sim::printable(mt[1].str()));
      if (static_cast<int>(m.names.size()) <= d) m.names.resize(static_cast<std::size_t>(d) + 1);
      m.names[static_cast<std::size_t>(d)] = mt[2];
      continue;
    }
    if (std::regex_search(line, mt, kAccRe)) {
      int i = 0, j = 0;
      if (!parse_index(mt[1], kMaxGpus - 1, i) || !parse_index(mt[3], kMaxGpus - 1, j))
        throw InputError(origin, "line " + std::to_string(line_no),
                         "device indices below " + std::to_string(kMaxGpus) + ", got \"" +
                             sim::printable(line) + "\"");
      acc.push_back({{i, j}, mt[2] == "CAN"});
      continue;
    }
    const bool uni = line.find("Unidirectional") != std::string::npos;
    const bool bi = line.find("Bidirectional") != std::string::npos;
    const bool lat =
        line.find("Latency") != std::string::npos && line.find("Matrix") != std::string::npos;
    // Builds with --p2p_read add "(P2P Reads)" matrices after the "(P2P Writes)" ones: another
    // measurement of the same pairs, kept under its own key ("uni_on_reads", "lat_gpu_on_reads").
    const std::string reads = line.find("(P2P Reads)") != std::string::npos ? "_reads" : "";
    if ((uni || bi) && line.find("Bandwidth") != std::string::npos) {
      const bool on = line.find("P2P=Enabled") != std::string::npos;
      section = std::string(uni ? "uni_" : "bi_") + (on ? "on" : "off") + reads;
      sub.clear();
      continue;
    }
    if (lat || line.find("P2P Connectivity Matrix") != std::string::npos) {
      section =
          !lat ? "conn"
               : (line.find("P2P=Enabled") != std::string::npos ? "lat_on" : "lat_off") + reads;
      sub.clear();
      continue;
    }
    const auto tok = split_ws(line);
    if (tok.empty() || section.empty()) continue;
    if (tok[0] == "D\\D" || tok[0] == "GPU" || tok[0] == "CPU") {
      if (section.rfind("lat_", 0) == 0) sub = tok[0] == "CPU" ? "cpu" : "gpu";
      continue;
    }
    if (section == "conn" && tok[0].find_first_not_of("0123456789") == std::string::npos) {
      read_connectivity_row(tok, conn, origin, line_no);
      continue;
    }
    double first = 0;
    if (!parse_double(tok[0], first) || tok[0].find('.') != std::string::npos) {
      section.clear();
      continue;
    }
    const std::string key =
        section.rfind("lat_", 0) == 0
            ? "lat_" + (sub.empty() ? std::string("gpu") : sub) + section.substr(3)
            : section;
    std::vector<double> row;
    const bool latency = key.rfind("lat_", 0) == 0;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      double v = 0;
      if (!parse_double(tok[i], v))
        throw InputError(origin, "line " + std::to_string(line_no),
                         "a number in the matrix row, got \"" + sim::printable(tok[i]) + "\"");
      if (latency ? !(v >= 0 && v <= kMaxUs) : !(v >= kMinGbS && v <= kMaxGbS))
        throw InputError(origin, "line " + std::to_string(line_no),
                         latency
                             ? "a latency from 0 to 1e9 us, got " + sim::printable(tok[i])
                             : "a bandwidth from 0.001 to 1e9 GB/s, got " + sim::printable(tok[i]));
      row.push_back(v);
    }
    if (tok.size() - 1 > static_cast<std::size_t>(kMaxGpus))
      throw InputError(origin, "line " + std::to_string(line_no),
                       "at most " + std::to_string(kMaxGpus) + " columns");
    auto& mat = m.matrix[key];
    if (!(first >= 0 && first < kMaxGpus) ||
        static_cast<int>(first) != static_cast<int>(mat.size()))
      throw InputError(origin, "line " + std::to_string(line_no),
                       "matrix row " + std::to_string(mat.size()) + ", got row " + tok[0]);
    mat.push_back(std::move(row));
  }
  if (m.matrix.empty())
    throw InputError(origin, "",
                     "p2pBandwidthLatencyTest output (bandwidth and latency matrices), got none");
  m.gpus = static_cast<int>(m.matrix.begin()->second.size());
  for (const auto& [k, mat] : m.matrix) {
    if (static_cast<int>(mat.size()) != m.gpus)
      throw InputError(origin, k,
                       std::to_string(m.gpus) + " rows like the other matrices, got " +
                           std::to_string(mat.size()));
    for (const auto& r : mat)
      if (static_cast<int>(r.size()) != m.gpus)
        throw InputError(origin, k,
                         "square matrices of " + std::to_string(m.gpus) +
                             " columns, got a row of " + std::to_string(r.size()));
  }
  m.can_access = peer_access(m.gpus, acc, conn, origin);
  return m;
}

namespace {

// A transfer as the measurement made it: the links it crossed, in order, over one or two segments
// (two when it went through host memory).
struct Path {
  std::vector<sim::Hop> hops;
};

Path path_of(const sim::Route& r) {
  Path p;
  for (const auto& seg : r.segments) p.hops.insert(p.hops.end(), seg.hops.begin(), seg.hops.end());
  return p;
}

// The way a copy between two GPUs goes when peer-to-peer is off: into the source GPU's host
// memory, then out of it (what cudaMemcpyPeer does, and what p2pBandwidthLatencyTest measures
// as "P2P=Disabled"), whatever peer access the cluster grants the pair.
Path host_path(const sim::Cluster& c, sim::DeviceId a, sim::DeviceId b) {
  const sim::DeviceId h = c.devices[static_cast<std::size_t>(a)].host;
  if (h < 0 || h == a) return path_of(c.route(a, b));
  Path p = path_of(c.route(a, h));
  const Path q = path_of(c.route(h, b));
  p.hops.insert(p.hops.end(), q.hops.begin(), q.hops.end());
  return p;
}

double link_gb_s(const sim::Cluster& c, sim::LinkId l) {
  return c.links[static_cast<std::size_t>(l)].bandwidth.bytes_per_s / 1e9;
}

// The bottleneck link of a path (smallest bandwidth; first on ties).
sim::LinkId bottleneck(const sim::Cluster& c, const Path& p) {
  sim::LinkId best = -1;
  for (const auto& h : p.hops)
    if (best < 0 || c.links[static_cast<std::size_t>(h.link)].bandwidth <
                        c.links[static_cast<std::size_t>(best)].bandwidth)
      best = h.link;
  return best;
}

double path_gb_s(const sim::Cluster& c, const Path& p) {
  const sim::LinkId b = bottleneck(c, p);
  return b < 0 ? 0.0 : link_gb_s(c, b);
}

// Per-direction ceiling of a link class whose name says its signalling rate: an x16 PCIe link of
// generation 3/4/5 carries at most 15.75/31.5/63 GB/s (PCI-SIG base specifications). A fit above
// it (5 % margin) means the measured transfers did not cross that class: refused, not written.
double class_ceiling_gb_s(const std::string& kind) {
  if (kind == "pcie3") return 15.75;
  if (kind == "pcie4") return 31.5;
  if (kind == "pcie5") return 63.0;
  return 0.0;
}

std::string fmt(double v, int prec = 2) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << v;
  return os.str();
}

// Writes `f.new_gb_s` / `f.new_latency_us` into every link of class `f.kind` (old values from the
// first such link). Returns false, with a note, when the class's ceiling forbids the value.
bool write_class(sim::Cluster& c, LinkClassFit& f, bool set_latency,
                 std::vector<std::string>& notes) {
  const double ceiling = class_ceiling_gb_s(f.kind);
  if (ceiling > 0 && f.new_gb_s > ceiling * 1.05) {
    notes.push_back("not fitted: " + f.kind + " at " + fmt(f.new_gb_s) + " GB/s is above what a " +
                    f.kind + " link carries (" + fmt(ceiling) +
                    " GB/s per direction): the measured transfers cannot have crossed it (is "
                    "--cluster the measured machine?)");
    return false;
  }
  bool first = true;
  for (sim::Link& l : c.links) {
    if (l.kind != f.kind) continue;
    if (first) {
      f.old_gb_s = l.bandwidth.bytes_per_s / 1e9;
      f.old_latency_us = static_cast<double>(l.latency.ns) / 1000.0;
      first = false;
    }
    if (f.new_gb_s > 0) l.bandwidth = sim::Bandwidth{f.new_gb_s * 1e9};
    if (set_latency)
      l.latency = sim::Duration{static_cast<std::int64_t>(std::llround(f.new_latency_us * 1000.0))};
    ++f.links;
  }
  if (!set_latency) f.new_latency_us = f.old_latency_us;  // not measured: kept
  return true;
}

}  // namespace

LinkFitReport fit_links_from_p2p(const P2pMeasurement& m, sim::Cluster& c) {
  LinkFitReport rep;
  const auto gpus = c.gpus();
  if (static_cast<int>(gpus.size()) != m.gpus)
    throw InputError(c.source_file.empty() ? c.name : c.source_file, "devices",
                     std::to_string(m.gpus) + " GPUs as in the p2p measurement, got " +
                         std::to_string(gpus.size()));
  struct Acc {
    std::vector<double> bw, lat;
    int enabled = 0, disabled = 0;
  };
  std::map<std::string, Acc> by_kind;
  const auto uni_on = m.matrix.find("uni_on");
  const auto uni_off = m.matrix.find("uni_off");
  const auto lat_on = m.matrix.find("lat_gpu_on");
  const auto lat_off = m.matrix.find("lat_gpu_off");
  if (uni_on == m.matrix.end() && uni_off == m.matrix.end())
    throw InputError(c.source_file.empty() ? c.name : c.source_file, "p2p",
                     "a unidirectional bandwidth matrix (P2P=Enabled or P2P=Disabled) in the "
                     "measurement, got none");
  if (uni_on == m.matrix.end())
    rep.notes.push_back(
        "only P2P=Disabled matrices: every pair was measured through host memory, so the fit goes "
        "to the "
        "links of the host path (GPU -> host CPU -> GPU), never to NVLink");
  std::vector<Path> paths;
  for (int i = 0; i < m.gpus; ++i)
    for (int j = 0; j < m.gpus; ++j) {
      if (i == j) continue;
      const sim::DeviceId a = gpus[static_cast<std::size_t>(i)],
                          b = gpus[static_cast<std::size_t>(j)];
      const bool peer = c.peer_access[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
      // P2P=Enabled numbers are direct copies where the cluster grants peer access; everything
      // else (no peer access, or only P2P=Disabled measured) went through host memory.
      const bool direct = peer && uni_on != m.matrix.end();
      const auto bw_it = direct ? uni_on : uni_off != m.matrix.end() ? uni_off : uni_on;
      const auto lat_it = direct ? lat_on : lat_off;
      const Path path = direct || !peer ? path_of(c.route(a, b)) : host_path(c, a, b);
      const sim::LinkId bl = bottleneck(c, path);
      if (bl < 0) continue;
      const double bw = bw_it->second[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      Acc& acc = by_kind[c.links[static_cast<std::size_t>(bl)].kind];
      acc.bw.push_back(bw);
      (direct ? acc.enabled : acc.disabled)++;
      if (lat_it != m.matrix.end() && !path.hops.empty())
        acc.lat.push_back(lat_it->second[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] /
                          static_cast<double>(path.hops.size()));
      rep.pairs.push_back({c.devices[static_cast<std::size_t>(a)].name,
                           c.devices[static_cast<std::size_t>(b)].name, bw, path_gb_s(c, path),
                           0.0});
      paths.push_back(path);
    }
  for (const auto& [kind, acc] : by_kind) {
    LinkClassFit f;
    f.kind = kind;
    f.pairs = static_cast<int>(acc.bw.size());
    f.new_gb_s = median(acc.bw);
    f.new_latency_us = median(acc.lat);
    f.why = "bottleneck of " + std::to_string(f.pairs) + " measured GPU pairs' paths (" +
            (acc.enabled ? std::to_string(acc.enabled) + " P2P=Enabled direct" : std::string()) +
            (acc.enabled && acc.disabled ? ", " : "") +
            (acc.disabled ? std::to_string(acc.disabled) + " through host memory" : std::string()) +
            "): median unidirectional bandwidth, latency / hops";
    if (write_class(c, f, !acc.lat.empty(), rep.notes)) rep.classes.push_back(f);
  }
  sim::compute_routes(c);
  for (std::size_t k = 0; k < rep.pairs.size(); ++k) {
    // The same links as measured, now with the fitted numbers.
    rep.pairs[k].after_gb_s = path_gb_s(c, paths[k]);
  }
  for (int i = 0; i < m.gpus; ++i)
    for (int j = 0; j < m.gpus; ++j)
      if (i != j && !m.can_access.empty() &&
          m.can_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] !=
              c.peer_access[static_cast<std::size_t>(gpus[static_cast<std::size_t>(i)])]
                           [static_cast<std::size_t>(gpus[static_cast<std::size_t>(j)])])
        rep.notes.push_back(
            "peer access of GPU " + std::to_string(i) + " -> " + std::to_string(j) +
            " differs between the measurement and the cluster (the cluster's is kept)");
  return rep;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// Where size, time, algbw and busbw sit in a table's rows, from its header (nccl-tests' own
// "#  size count type redop root time algbw busbw #wrong time ..." line, or a markdown header
// such as "| Message | Avg ms | algbw GB/s | busbw GB/s |"). The first time/algbw/busbw columns
// are the out-of-place ones.
struct Columns {
  int size = -1, time = -1, algbw = -1, busbw = -1;
  int type = -1, redop = -1, root = -1;  // nccl-tests' data type, reduction and root columns
  double time_unit_s = 1e-6;             // nccl-tests prints us
  [[nodiscard]] bool usable() const { return size >= 0 && (time >= 0 || algbw >= 0); }
};

Columns columns_from_header(const std::vector<std::string>& cells) {
  Columns c;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string h = lower(cells[i]);
    const int k = static_cast<int>(i);
    if (c.size < 0 && (h.find("size") != std::string::npos ||
                       h.find("message") != std::string::npos || h == "bytes"))
      c.size = k;
    else if (c.algbw < 0 && h.find("algbw") != std::string::npos)
      c.algbw = k;
    else if (c.busbw < 0 && h.find("busbw") != std::string::npos)
      c.busbw = k;
    else if (c.time < 0 && (h.find("time") != std::string::npos ||
                            h.find("latency") != std::string::npos || h.rfind("avg", 0) == 0)) {
      c.time = k;
      if (h.find("ms") != std::string::npos)
        c.time_unit_s = 1e-3;
      else if (h.find("(s)") != std::string::npos)
        c.time_unit_s = 1.0;
    } else if (c.type < 0 && h == "type") {
      c.type = k;
    } else if (c.redop < 0 && (h == "redop" || h == "op")) {
      c.redop = k;
    } else if (c.root < 0 && h == "root") {
      c.root = k;
    }
  }
  return c;
}

// "8589934592", "1.00 MiB", "1 MB", "256MB", "8K", "**8 GB**", "~34 GB": bytes. K/M/G are binary,
// as nccl-tests' -b/-e sizes are (every size it prints is a power of two).
bool parse_size(const std::string& cell, double& bytes) {
  std::string t;
  for (char ch : cell)
    if (ch != '*' && ch != '~' && ch != ',' && ch != ' ') t.push_back(ch);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    return false;
  }
  const std::string unit = lower(t.substr(used));
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib")
    scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib")
    scale = 1024.0 * 1024.0;
  else if (unit == "g" || unit == "gb" || unit == "gib")
    scale = 1024.0 * 1024.0 * 1024.0;
  else
    return false;
  bytes = v * scale;
  return v >= 0;
}

bool parse_cell_number(const std::string& cell, double& v) {
  std::string t;
  for (char ch : cell)
    if (ch != '*' && ch != '~' && ch != ',' && ch != ' ') t.push_back(ch);
  return parse_double(t, v);
}

// Cells of a markdown table row ("| a | b |"), or nothing if the line is not one.
std::vector<std::string> markdown_cells(const std::string& line) {
  std::vector<std::string> cells;
  const std::size_t first = line.find_first_not_of(" \t");
  if (first == std::string::npos || line[first] != '|') return cells;
  std::string cur;
  for (std::size_t i = first + 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(line[i]);
    }
  }
  if (cur.find_first_not_of(" \t") != std::string::npos) cells.push_back(cur);
  for (auto& c : cells) {
    const std::size_t b = c.find_first_not_of(" \t"), e = c.find_last_not_of(" \t");
    c = b == std::string::npos ? std::string() : c.substr(b, e - b + 1);
  }
  return cells;
}

// What launchers and log collectors put before the text nccl-tests printed, removed one after
// another: mpirun --tag-output rank tags ("[1,0]<stdout>:", "[0]"; only digits and commas:
// "[bm-h100-01:29250] 15 more processes ..." is Open MPI's own), Ray's "(head, rank=0, pid=3808) "
// (SkyPilot), srun -l task labels (" 0: "), ISO timestamps (kubectl logs --timestamps, journald
// exports: "2025-03-01T12:00:00.123456Z ") and pdsh host labels ("node005: ") before a '#' or a
// number. A markdown-escaped "\#" (a tracker's rendering of nccl-tests' comment marker) is read
// as '#'.
std::string strip_prefixes(const std::string& line) {
  static const std::regex kTag(R"(^\s*\[[0-9,]+\](?:<stdout>)?:?)");
  static const std::regex kRay(R"(^\s*\([^()]*\bpid=\d+[^()]*\) ?)");
  static const std::regex kTime(
      R"(^\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]? ?)");
  static const std::regex kSrun(R"(^\s*\d+: ?(?=\s*(?:[#|]|\d|\\#|$)))");
  static const std::regex kHost(R"(^\s*[A-Za-z][\w.-]*: (?=\s*(?:\\?#|\d)))");
  std::string s = line;
  for (int pass = 0; pass < 6; ++pass) {
    std::smatch m;
    bool cut = false;
    for (const std::regex* re : {&kTag, &kRay, &kTime, &kSrun, &kHost})
      if (std::regex_search(s, m, *re) && m.length(0) > 0) {
        s = s.substr(static_cast<std::size_t>(m.length(0)));
        cut = true;
        break;
      }
    if (!cut) break;
  }
  const std::size_t first = s.find_first_not_of(" \t");
  if (first != std::string::npos && s.compare(first, 2, "\\#") == 0) s.erase(first, 1);
  return s;
}

// Ranks from the ratio busbw / algbw that nccl-tests prints: 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all. 0 when the ratio says nothing (1 rank, send/recv).
int ranks_from_bus_ratio(const std::string& coll, const std::vector<double>& ratios) {
  if (ratios.empty()) return 0;
  std::vector<double> r = ratios;
  std::sort(r.begin(), r.end());
  const double m = r[r.size() / 2];
  const bool ar =
      coll.find("all_reduce") != std::string::npos || coll.find("allreduce") != std::string::npos;
  const bool frac = coll.find("gather") != std::string::npos ||
                    coll.find("reduce_scatter") != std::string::npos ||
                    coll.find("alltoall") != std::string::npos;
  double n = 0;
  if (ar && m > 1.0 + 1e-3 && m < 2.0) n = 2.0 / (2.0 - m);
  if (frac && m > 0.0 && m < 1.0) n = 1.0 / (1.0 - m);
  return n >= 2 ? static_cast<int>(std::lround(n)) : 0;
}

// Tables that name no ranks: each markdown table is its own measurement, its rank count from
// its busbw / algbw; machines unknown (0).
void infer_table_ranks(std::vector<CollectivePoint>& out,
                       std::vector<std::pair<std::size_t, std::size_t>> blocks,
                       const std::string& collective) {
  if (blocks.empty()) blocks.emplace_back(0, out.size());
  for (const auto& [b, e] : blocks) {
    std::vector<double> ratios;
    for (std::size_t k = b; k < e; ++k)
      if (out[k].algbw_gb_s >= 1.0 && out[k].busbw_gb_s > 0)
        ratios.push_back(out[k].busbw_gb_s / out[k].algbw_gb_s);
    const int n = ranks_from_bus_ratio(collective, ratios);
    for (std::size_t k = b; k < e; ++k) {
      out[k].ranks = n;
      out[k].nodes = 0;
    }
  }
}

}  // namespace

namespace {

// nccl-tests output read line by line: the result rows (its own table, a markdown table or a
// whitespace table) as points, and what the header lines say of ranks and hosts.
class NcclTestsReader {
 public:
  NcclTestsReader(const std::string& origin, const std::string& collective)
      : origin_(origin), collective_(collective) {}

  void read_line(const std::string& line) {
    ++line_no_;
    // "./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8", "mpirun ... all_reduce_perf_mpi": the
    // binaries a command line names.
    static const std::regex kBinaryRe(
        R"(\b(all_reduce|all_gather|reduce_scatter|alltoall|sendrecv|broadcast|reduce|gather|)"
        R"(scatter|hypercube)_perf)");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kBinaryRe);
         it != std::sregex_iterator(); ++it)
      binaries_.insert((*it)[1].str());
    if (read_setup_line(line)) return;
    const auto cells = markdown_cells(line);
    if (!cells.empty()) {
      read_markdown_row(cells);
      return;
    }
    close_markdown();
    read_plain_line(line);
  }

  // The collective the lines read so far ran, from what they say of it (the caller has found no
  // "Collective test starting" line): a command line naming one X_perf binary; else the rows of
  // nccl-tests' own table: redop "none" (all_gather, alltoall, broadcast) or a reduction op
  // (all_reduce, reduce_scatter, reduce, sendrecv), a root (broadcast, reduce), an in-place
  // half it could not check (alltoall, sendrecv: "#wrong" N/A beside a checked out-of-place
  // count), and busbw / algbw over the ranks of the header (2(n-1)/n all_reduce, (n-1)/n
  // reduce_scatter, 1 sendrecv; src/*.cu GetBw of NVIDIA/nccl-tests). Else all_reduce, assumed.
  [[nodiscard]] CollectiveGuess guess() const {
    if (binaries_.size() == 1)
      return {*binaries_.begin(), "its command line names " + *binaries_.begin() + "_perf", false};
    std::string redop, root;
    int unchecked = 0, checked = 0;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      if (redop.empty() && !rows_[i].redop.empty()) {
        redop = rows_[i].redop;
        root = rows_[i].root;
      }
      unchecked += rows_[i].in_place_checked == 0;
      checked += rows_[i].in_place_checked == 1;
      if (out_[i].algbw_gb_s >= 1.0 && out_[i].busbw_gb_s > 0)
        ratios.push_back(out_[i].busbw_gb_s / out_[i].algbw_gb_s);
    }
    const Run& run = runs_.front();
    const long long n = !run.rank_hosts.empty()
                            ? run.rank_hosts.rbegin()->first + 1LL
                            : static_cast<long long>(run.threads) * run.gpus_per_thread;
    double ratio = 0;
    if (!ratios.empty()) {
      std::sort(ratios.begin(), ratios.end());
      ratio = ratios[ratios.size() / 2];
    }
    const bool in_place_na = unchecked > 0 && checked == 0;
    const bool rooted = !root.empty() && root != "-1";
    const std::string cols = "redop " + redop + ", root " + root;
    if (redop == "none") {
      if (rooted) return {"broadcast", cols, false};
      if (in_place_na) return {"alltoall", cols + ", in-place results not checked (N/A)", false};
      return {"all_gather", cols + ", in-place results checked", false};
    }
    if (!redop.empty()) {
      if (rooted) return {"reduce", cols, false};
      if (in_place_na) return {"sendrecv", cols + ", in-place results not checked (N/A)", false};
      const auto near = [&](double want) { return std::fabs(ratio / want - 1.0) < 0.03; };
      // Over 2 ranks all_reduce's 2(n-1)/n is sendrecv's 1; in-place results it checked rule
      // sendrecv out (AWS's 2 x T4 EFA log, tests/data/README.md, session 28).
      if ((n > 2 || (n == 2 && checked > 0)) && ratio > 0) {
        const double nn = static_cast<double>(n);
        const std::string over =
            " over " + std::to_string(n) + " ranks" + (n == 2 ? ", in-place results checked" : "");
        if (near(2.0 * (nn - 1) / nn))
          return {"all_reduce", cols + ", busbw = algbw x 2(n-1)/n" + over, false};
        if (near((nn - 1) / nn))
          return {"reduce_scatter", cols + ", busbw = algbw x (n-1)/n" + over, false};
        if (near(1.0)) return {"sendrecv", cols + ", busbw = algbw" + over, false};
      }
    }
    return {"all_reduce",
            "assumed: nothing in the file tells all_reduce from sendrecv or the others (pass "
            "--collective to name it)",
            true};
  }

  // Why a file has no result row: a failure report, else a run whose header and rank lines were
  // printed and whose output then ends (a hang killed by a timeout: the H100 NVL + A100 log of
  // tests/data/README.md ends in NCCL's socket retries), else nothing to add.
  [[nodiscard]] std::string why_no_row() const {
    if (!failure_.empty())
      return " (the run failed before its first row: \"" + sim::printable(failure_, 120) + "\")";
    std::size_t ranks = 0;
    std::set<std::string> hosts;
    for (const Run& r : runs_) {
      ranks = std::max(ranks, r.rank_hosts.empty()
                                  ? std::size_t{0}
                                  : static_cast<std::size_t>(r.rank_hosts.rbegin()->first + 1));
      hosts.insert(r.hosts.begin(), r.hosts.end());
    }
    if (ranks == 0) return "";
    return " (its header lists " + std::to_string(ranks) + " ranks on " +
           std::to_string(hosts.size()) +
           " host(s), then the output ends before its first size; last line: \"" +
           sim::printable(last_line_, 120) + "\")";
  }

  // The points with their ranks and nodes: the "Rank N" lines, else nThread x nGpus of a single
  // process, else (tables without them) what busbw / algbw implies; nodes: distinct hosts of the
  // rank lines, else unknown (0), resolved against the cluster when the fit is applied.
  std::vector<CollectivePoint> finish() {
    close_markdown();
    if (out_.empty())
      throw InputError(origin_, "",
                       "nccl-tests results (its own output, or a markdown or whitespace table with "
                       "size and time or algbw "
                       "columns), got no result row" +
                           why_no_row());
    keep_the_requested_rows();
    // Each run its own ranks and machines (a loop over -g or -np prints one header per run);
    // runs numbered from 0 in the order their kept rows appear.
    std::map<int, int> run_index;
    bool any_ranks = false;
    for (std::size_t i = 0; i < out_.size(); ++i) {
      const Run& run = runs_[static_cast<std::size_t>(rows_[i].run)];
      const long long ranks_ll = !run.rank_hosts.empty()
                                     ? run.rank_hosts.rbegin()->first + 1LL
                                     : static_cast<long long>(run.threads) * run.gpus_per_thread;
      if (ranks_ll > kMaxGpus)
        throw InputError(
            origin_, "",
            "at most " + std::to_string(kMaxGpus) + " ranks, got " + std::to_string(ranks_ll));
      CollectivePoint& p = out_[i];
      p.ranks = static_cast<int>(ranks_ll);
      p.nodes = run.hosts.empty() ? (p.ranks > 0 ? 1 : 0) : static_cast<int>(run.hosts.size());
      p.nccl_version = nccl_version_;
      p.run = run_index.emplace(rows_[i].run, static_cast<int>(run_index.size())).first->second;
      p.run_line = run.first_line;
      any_ranks = any_ranks || p.ranks > 0;
    }
    if (!any_ranks) infer_table_ranks(out_, md_tables_, collective_);
    check_collective_fit(out_, origin_);
    return std::move(out_);
  }

 private:
  [[nodiscard]] std::string where() const { return "line " + std::to_string(line_no_); }

  // Keeps the rows of one measurement: the section of the collective asked for when the log holds
  // several binaries' results, and of several data types or reduction ops (-d all, -o all) those
  // of nccl-tests' default (float, sum) or else the first row's. Refuses a collective whose rows
  // say it is another one (all_gather's redop "none" read as all_reduce).
  void keep_the_requested_rows() {
    std::set<std::string> sections;
    for (const RowInfo& r : rows_) sections.insert(r.section);
    if (sections.size() > 1 || (sections.size() == 1 && !sections.begin()->empty())) {
      std::string found;
      bool any = false;
      for (const std::string& sec : sections) {
        found += (found.empty() ? "" : ", ") + (sec.empty() ? std::string("(unnamed)") : sec);
        any = any || same_collective(sec, collective_);
      }
      if (!any)
        throw InputError(origin_, "",
                         "results of " + collective_ + " (pass --collective to name another), " +
                             "got the sections " + sim::printable(found));
      keep_if([&](const RowInfo& r) { return same_collective(r.section, collective_); });
    }
    std::string key;  // type and op of the rows kept; rows of tables that print none stay
    std::set<std::string> keys;
    for (const RowInfo& r : rows_) {
      if (r.type.empty()) continue;
      const std::string k = r.type + " " + r.redop;
      keys.insert(k);
      if (key.empty() || (r.type == "float" && key.rfind("float ", 0) != 0)) key = k;
    }
    if (keys.contains("float sum")) key = "float sum";
    if (keys.size() > 1)
      keep_if([&](const RowInfo& r) { return r.type.empty() || r.type + " " + r.redop == key; });
    if (!key.empty()) check_reduction(key.substr(key.find(' ') + 1));
  }

  // all_reduce_perf, reduce_scatter_perf and reduce_perf print a reduction op (sum, prod, ...);
  // all_gather, alltoall, broadcast, gather and scatter print "none".
  void check_reduction(const std::string& redop) const {
    if (redop.empty() || rows_.empty()) return;
    const std::string c = lower(collective_);
    const bool reduces = c.find("reduce") != std::string::npos;
    const bool none = redop == "none";
    const bool knows = reduces || c.find("gather") != std::string::npos ||
                       c.find("alltoall") != std::string::npos ||
                       c.find("broadcast") != std::string::npos ||
                       c.find("scatter") != std::string::npos;
    if (knows && reduces == none)
      throw InputError(origin_, "line " + std::to_string(rows_.front().line),
                       "rows of " + collective_ +
                           (reduces ? " (redop sum, prod, ...)" : " (redop none)") +
                           ", got redop \"" + sim::printable(redop) +
                           "\" (another collective's output: pass --collective)");
  }

  // "all_reduce_perf_mpi" names all_reduce; "" (rows before any section line) names whatever
  // was asked.
  static bool same_collective(const std::string& section, const std::string& collective) {
    if (section.empty()) return true;
    auto norm = [](std::string x) {
      x = lower(x);
      for (const char* suffix : {"_mpi", "_perf"})
        if (x.size() > std::string(suffix).size() && x.ends_with(suffix))
          x.resize(x.size() - std::string(suffix).size());
      std::string y;
      for (char ch : x)
        if (ch != '_' && ch != '-') y.push_back(ch);
      return y;
    };
    return norm(section) == norm(collective);
  }

  template <typename Pred>
  void keep_if(Pred keep) {
    std::vector<CollectivePoint> out;
    std::vector<RowInfo> rows;
    std::vector<std::size_t> new_index(out_.size() + 1, 0);
    for (std::size_t i = 0; i < out_.size(); ++i) {
      new_index[i] = out.size();
      if (keep(rows_[i])) {
        out.push_back(out_[i]);
        rows.push_back(rows_[i]);
      }
    }
    new_index[out_.size()] = out.size();
    std::vector<std::pair<std::size_t, std::size_t>> tables;
    for (const auto& [b, e] : md_tables_)
      if (new_index[e] > new_index[b]) tables.emplace_back(new_index[b], new_index[e]);
    out_ = std::move(out);
    rows_ = std::move(rows);
    md_tables_ = std::move(tables);
  }

  // "nThread 1 nGpus 8 ..." and "#  Rank  0 Group  0 Pid 29262 on bm-h100-01 device 0 ...".
  bool read_setup_line(const std::string& line) {
    static const std::regex kNgpusRe(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
    // With or without the leading '#' (a launcher's message can end on the same line, or eat
    // it), with or without the Group column (nccl-tests before 2.11).
    static const std::regex kRankRe(
        R"((?:^|[#\s:\]])Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+))");
    std::smatch mt;
    if (std::regex_search(line, mt, kNgpusRe)) {
      new_run_if_rows();
      if (!parse_index(mt[1], kMaxGpus, runs_.back().threads) ||
          !parse_index(mt[2], kMaxGpus, runs_.back().gpus_per_thread))
        throw InputError(origin_, where(),
                         "nThread and nGpus up to " + std::to_string(kMaxGpus) + ", got \"" +
                             sim::printable(line) + "\"");
      return true;
    }
    if (std::regex_search(line, mt, kRankRe)) {
      int rank = 0;
      if (!parse_index(mt[1], kMaxGpus - 1, rank))
        throw InputError(origin_, where(),
                         "a rank below " + std::to_string(kMaxGpus) + ", got \"" +
                             sim::printable(mt[1].str()) + "\"");
      // One job names each rank once. The same rank on two hosts: processes that each ran a job
      // of their own (nccl-tests built without MPI=1 under mpirun), whose rows are not one run's.
      new_run_if_rows();
      const auto [it, added] = runs_.back().rank_hosts.emplace(rank, mt[2].str());
      if (!added && it->second != mt[2].str())
        throw InputError(origin_, where(),
                         "each rank once (one job), got Rank " + std::to_string(rank) + " on " +
                             sim::printable(it->second) + " and on " + sim::printable(mt[2].str()) +
                             " (several 1-rank jobs: nccl-tests built without MPI=1?)");
      runs_.back().hosts.insert(mt[2]);
      return true;
    }
    return read_version_or_section(line);
  }

  // "NCCL version 2.30.4+cuda13.2", "# nccl-tests version 2.18.3 nccl-headers=23004
  // nccl-library=23004" (the library's NCCL_VERSION_CODE) and "# Collective test starting:
  // all_reduce_perf" (nccl-tests 2.14 and later; several in one log of many binaries).
  bool read_version_or_section(const std::string& line) {
    static const std::regex kVersionRe(R"(NCCL version (2\.\d{1,3}\.\d{1,3}))");
    static const std::regex kLibraryRe(R"(nccl-library=(\d{5}))");
    static const std::regex kSectionRe(R"(Collective test starting:\s*(\S+))");
    std::smatch mt;
    if (std::regex_search(line, mt, kLibraryRe) || std::regex_search(line, mt, kVersionRe)) {
      if (const auto v = sim::parse_nccl_version(mt[1].str())) nccl_version_ = *v;
      return true;
    }
    if (std::regex_search(line, mt, kSectionRe)) {
      new_run_if_rows();
      section_ = mt[1].str();
      return true;
    }
    // "# Avg bus bandwidth : 433.477": the footer that ends a run.
    if (line.find("Avg bus bandwidth") != std::string::npos) {
      new_run_if_rows();
      runs_.back().first_line = 0;  // the next run starts at its own first line
      return true;
    }
    return false;
  }

  // A markdown table line: its header, the |---| rule, or a result row.
  void read_markdown_row(const std::vector<std::string>& cells) {
    if (!in_markdown_) {
      new_run_if_rows();  // each markdown table is a run of its own
      in_markdown_ = true;
      table_start_ = out_.size();
      md_cols_ = columns_from_header(cells);
      return;
    }
    if (cells[0].find_first_not_of("-: ") == std::string::npos) return;  // |---|---:|
    double bytes = 0;
    // A row may have fewer cells than its header: no size cell, no result.
    if (!md_cols_.usable() || md_cols_.size >= static_cast<int>(cells.size()) ||
        !parse_size(cells[static_cast<std::size_t>(md_cols_.size)], bytes))
      return;
    auto num = [&](int col) {
      double v = 0;
      if (col >= 0 && col < static_cast<int>(cells.size()) &&
          parse_cell_number(cells[static_cast<std::size_t>(col)], v))
        return v;
      return 0.0;
    };
    add_point(bytes, num(md_cols_.time) * md_cols_.time_unit_s, num(md_cols_.algbw),
              num(md_cols_.busbw));
  }

  void close_markdown() {
    if (in_markdown_ && out_.size() > table_start_)
      md_tables_.emplace_back(table_start_, out_.size());
    in_markdown_ = false;
    md_cols_ = Columns{};
  }

  // Any other line: a header (nccl-tests' own or a whitespace table's), a comment, launcher
  // chatter, or a result row.
  void read_plain_line(const std::string& line) {
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) return;
    // A header line: nccl-tests' own ("#  size count type redop root time algbw busbw #wrong ..."),
    // or that of a plain whitespace table ("size time algbw busbw").
    const bool comment = line[first] == '#';
    {
      const auto tok = split_ws(comment ? line.substr(first + 1) : line);
      if (!tok.empty() && lower(tok[0]) == "size" &&
          (line.find("algbw") != std::string::npos || line.find("time") != std::string::npos)) {
        raw_cols_ = columns_from_header(tok);
        return;
      }
    }
    if (comment) return;
    // nccl-tests' failure report on a line of its own ("gpu-1-1: Test CUDA failure common.cu:1304
    // 'CUDA-capable device(s) is/are busy or unavailable'", NVIDIA/nccl-tests#369): kept for the
    // "no result row" error of a run that failed before its table.
    static const std::regex kFailureRe(R"(\bTest (CUDA |NCCL )?failure\b)");
    if (failure_.empty() && std::regex_search(line, kFailureRe)) failure_ = line.substr(first);
    last_line_ = line.substr(first);
    const auto tok = split_ws(line);
    double size = 0;
    if (tok.empty() || !parse_double(tok[0], size) ||
        tok[0].find_first_not_of("0123456789") != std::string::npos)
      return;
    if (open_mpi_help_aggregate(tok)) return;
    read_result_row(tok, size);
  }

  // Open MPI's aggregated help line, which mpirun prints on the ranks' stdout wherever the table
  // has got to: "8 more processes have sent help message help-mtl-ofi.txt / OFI call fail" (its
  // orte_base_help_aggregate). It starts with a number but is no result row.
  static bool open_mpi_help_aggregate(const std::vector<std::string>& tok) {
    return tok.size() >= 6 && tok[1] == "more" && (tok[2] == "process" || tok[2] == "processes") &&
           (tok[3] == "has" || tok[3] == "have") && tok[4] == "sent" && tok[5] == "help";
  }

  void read_result_row(const std::vector<std::string>& tok, double size) {
    Columns cols = raw_cols_;
    if (!cols.usable() || cols.time < 0) {
      cols = Columns{};
      cols.size = 0;
      // Without a header: size count type redop root time algbw busbw #wrong ... (13 or more),
      // no root (12, nccl-tests before 2.10), gathers without redop and root (11).
      cols.time = tok.size() >= 13 ? 5 : tok.size() == 12 ? 4 : tok.size() == 11 ? 3 : -1;
      cols.algbw = cols.time + 1;
      cols.busbw = cols.time + 2;
      cols.type = cols.time >= 3 ? 2 : -1;
      cols.redop = cols.time >= 4 ? 3 : -1;
      cols.root = cols.time >= 5 ? 4 : -1;
    }
    // Before any header, a numeric line that is no result row is launcher chatter; after one, it is
    // a malformed row.
    if (cols.time < 0 && !raw_cols_.usable()) return;
    if (cols.time < 0 || static_cast<int>(tok.size()) <= std::max(cols.time, cols.algbw))
      throw InputError(origin_, where(),
                       "an nccl-tests result row (size count type [redop] [root] time algbw busbw "
                       "#wrong ...), got " +
                           std::to_string(tok.size()) + " columns");
    failed_row(tok);
    const std::string& t_cell = tok[static_cast<std::size_t>(cols.time)];
    double t = 0, algbw = 0, busbw = 0;
    if (!parse_double(t_cell, t) || t <= 0 ||
        (cols.algbw >= 0 && !parse_double(tok[static_cast<std::size_t>(cols.algbw)], algbw)))
      throw InputError(
          origin_, where(),
          "a positive time and an algbw in GB/s, got \"" + t_cell + "\" and \"" +
              (cols.algbw >= 0 ? tok[static_cast<std::size_t>(cols.algbw)] : std::string()) + "\"");
    if (cols.busbw >= 0 && cols.busbw < static_cast<int>(tok.size()))
      parse_double(tok[static_cast<std::size_t>(cols.busbw)], busbw);
    auto cell = [&](int col) {
      return col >= 0 && col < static_cast<int>(tok.size()) ? tok[static_cast<std::size_t>(col)]
                                                            : std::string();
    };
    // nccl-tests' "#wrong" cells follow each busbw: a count where it checked the result, "N/A"
    // where it did not (-c 0, or the in-place half of sendrecv and alltoall, which it cannot
    // check: "We don't support in-place sendrecv", src/sendrecv.cu).
    const std::string out_wrong = cell(cols.busbw >= 0 ? cols.busbw + 1 : -1);
    const std::string in_wrong = cell(cols.busbw >= 0 ? cols.busbw + 5 : -1);
    const int in_place_checked = out_wrong.empty() || in_wrong.empty() || out_wrong == "N/A" ? -1
                                 : in_wrong == "N/A"                                         ? 0
                                                                                             : 1;
    const std::size_t kept = out_.size();
    add_point(size, t * cols.time_unit_s, algbw, busbw, cell(cols.type), cell(cols.redop),
              cell(cols.root), in_place_checked);
    // Elements the check found wrong (NVIDIA/nccl-tests#369's 1 MiB row: 96 and 32, "4 FAILED"):
    // the row's time is kept as measured, and the count carried for the caller to say so.
    double w_out = 0, w_in = 0;
    parse_double(out_wrong, w_out);
    parse_double(in_wrong, w_in);
    const double w = std::max(w_out, w_in);
    if (out_.size() > kept && w >= 1 && w <= kMaxMessageBytes) out_.back().wrong = std::llround(w);
  }

  // A row cut by nccl-tests' own failure report ("2097152 32768 float none -1 node0: Test CUDA
  // failure common.cu:389 'an illegal memory access was encountered'", NVIDIA/nccl-tests#355):
  // the run stopped there.
  void failed_row(const std::vector<std::string>& tok) const {
    for (std::size_t i = 1; i + 2 < tok.size(); ++i)
      if (tok[i] == "Test" && tok[i + 2].rfind("failure", 0) == 0) {
        std::string report;
        for (std::size_t k = i; k < tok.size(); ++k) report += (k > i ? " " : "") + tok[k];
        throw InputError(origin_, where(),
                         "a result row, got nccl-tests' failure report \"" +
                             sim::printable(report) + "\" (the run stopped at " + tok[0] +
                             " B; its rows before this line are complete)");
      }
  }

  void add_point(double bytes, double time_s, double algbw, double busbw,
                 const std::string& type = "", const std::string& redop = "",
                 const std::string& root = "", int in_place_checked = -1) {
    // Ranges before use: a NaN, an infinity or an absurd value would fit a link the cluster
    // format cannot hold (issue 18).
    if (!(bytes >= 0 && bytes <= kMaxMessageBytes) || !(time_s >= 0 && time_s <= kMaxUs * 1e-6) ||
        !(algbw >= 0 && algbw <= kMaxGbS) || !(busbw >= 0 && busbw <= kMaxGbS))
      throw InputError(
          origin_, where(),
          "a size up to 1 PiB, a time up to 1e9 us and bandwidths from 0 to 1e9 GB/s, got " +
              std::to_string(bytes) + " B, " + std::to_string(time_s) + " s, " +
              std::to_string(algbw) + " and " + std::to_string(busbw) + " GB/s");
    CollectivePoint p;
    p.collective = collective_;
    p.bytes = bytes;
    p.time_s = time_s > 0 ? time_s : (algbw > 0 ? bytes / (algbw * 1e9) : 0.0);
    p.algbw_gb_s = algbw > 0 ? algbw : (p.time_s > 0 ? bytes / p.time_s / 1e9 : 0.0);
    p.busbw_gb_s = busbw;
    if (p.time_s > 0) {
      // A size below the previous one of the same data type and op: another run begins (several
      // runs pasted one after another with their headers cut; -d all's types each start over).
      Run& run = runs_.back();
      const std::string key = type + " " + redop;
      const auto last = run.last_bytes.find(key);
      if (last != run.last_bytes.end() && bytes < last->second) {
        Run next = run;  // no header of its own: the same ranks and hosts
        next.first_line = line_no_;
        next.has_rows = false;
        next.last_bytes.clear();
        runs_.push_back(next);
      }
      runs_.back().last_bytes[key] = bytes;
      runs_.back().has_rows = true;
      if (runs_.back().first_line == 0) runs_.back().first_line = line_no_;
      out_.push_back(p);
      rows_.push_back(RowInfo{type, redop, root, section_, line_no_,
                              static_cast<int>(runs_.size()) - 1, in_place_checked});
    }
  }

  // A run header (nThread, Rank, "Collective test starting", a markdown table) or footer ("Avg bus
  // bandwidth") after result rows: what follows is another run.
  void new_run_if_rows() {
    if (!runs_.back().has_rows) {
      if (runs_.back().first_line == 0) runs_.back().first_line = line_no_;
      return;
    }
    Run next;
    next.first_line = line_no_;
    runs_.push_back(next);
  }

  // Where a point came from: its data type and reduction op (nccl-tests' own rows), the
  // "Collective test starting" section it sits in, and its line.
  struct RowInfo {
    std::string type, redop, root, section;
    int line = 0;
    int run = 0;                // index into runs_
    int in_place_checked = -1;  // 1 in-place #wrong a count, 0 "N/A" (out-of-place a count), -1
  };
  // One run of the binary: what its header said of ranks and hosts, where it starts.
  struct Run {
    std::map<int, std::string> rank_hosts;  // "Rank N ... on HOST"
    std::set<std::string> hosts;
    int threads = 1, gpus_per_thread = 0;
    int first_line = 0;  // its first header line, else its first row
    bool has_rows = false;
    std::map<std::string, double> last_bytes;  // per "type redop": the last size read
  };

  const std::string& origin_;
  const std::string& collective_;
  std::set<std::string> binaries_;  // collectives whose X_perf binary a line names
  std::string failure_;             // the first failure report outside a row, for "no result row"
  std::string last_line_;           // the last line outside a comment, for "no result row"
  std::vector<CollectivePoint> out_;
  std::vector<RowInfo> rows_;  // parallel to out_
  std::vector<Run> runs_ = std::vector<Run>(1);
  std::string section_;
  int nccl_version_ = 0;
  int line_no_ = 0;
  Columns raw_cols_;  // from nccl-tests' own header line
  Columns md_cols_;   // of the markdown table being read
  bool in_markdown_ = false;
  std::size_t table_start_ = 0;  // first point of the current markdown table
  std::vector<std::pair<std::size_t, std::size_t>> md_tables_;  // [begin, end) of points per table
};

}  // namespace

std::string collective_named_in(const std::string& text) {
  static const std::regex kSectionRe(R"(Collective test starting:\s*(\S+))");
  std::set<std::string> named;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kSectionRe);
       it != std::sregex_iterator(); ++it) {
    std::string c = lower((*it)[1].str());
    for (const char* suffix : {"_mpi", "_perf"})
      if (c.size() > std::string(suffix).size() && c.ends_with(suffix))
        c.resize(c.size() - std::string(suffix).size());
    named.insert(c);
  }
  return named.size() == 1 ? *named.begin() : std::string();
}

namespace {

void read_lines(NcclTestsReader& reader, const std::string& text) {
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    reader.read_line(strip_prefixes(raw));
  }
}

}  // namespace

CollectiveGuess guess_collective(const std::string& text, const std::string& origin) {
  const std::string named = collective_named_in(text);
  if (!named.empty()) return {named, "its \"Collective test starting\" line names it", false};
  if (text.find("Collective test starting") != std::string::npos)
    return {"all_reduce",
            "assumed: its \"Collective test starting\" lines name several binaries; all_reduce's "
            "section is read (pass --collective to name another)",
            true};
  const std::string any;
  NcclTestsReader reader(origin, any);
  read_lines(reader, text);
  return reader.guess();
}

std::vector<CollectivePoint> parse_nccl_tests(const std::string& text, const std::string& origin,
                                              const std::string& collective, int run) {
  // No collective asked for: the one the file shows it ran (guess_collective), else nccl-tests'
  // first binary, all_reduce.
  const std::string named =
      collective.empty() ? guess_collective(text, origin).collective : collective;
  NcclTestsReader reader(origin, named);
  read_lines(reader, text);
  std::vector<CollectivePoint> pts = reader.finish();
  if (run <= 0) return pts;
  const int runs = pts.back().run + 1;
  if (run > runs)
    throw InputError(origin, "--run " + std::to_string(run),
                     "a run the file holds (" + std::to_string(runs) + " run(s) of " +
                         pts.front().collective + "), got run " + std::to_string(run));
  std::erase_if(pts, [&](const CollectivePoint& p) { return p.run != run - 1; });
  for (auto& p : pts) p.run = 0;
  return pts;
}

std::vector<CollectivePoint> parse_vidur_collective_csv(const std::string& text,
                                                        const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line))
    throw InputError(origin, "line 1", "a CSV header, got an empty file");
  std::vector<std::string> head;
  {
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ',')) head.push_back(f);
  }
  auto col = [&](const std::string& name) -> int {
    for (std::size_t i = 0; i < head.size(); ++i)
      if (head[i] == name) return static_cast<int>(i);
    return -1;
  };
  int t_col = -1;
  for (std::size_t i = 0; i < head.size(); ++i)
    if (head[i].rfind("time_stats.", 0) == 0 && head[i].size() > 5 &&
        head[i].substr(head[i].size() - 5) == ".mean")
      t_col = static_cast<int>(i);
  const int w_col = col("num_workers"), s_col = col("size"), c_col = col("collective"),
            d_col = col("devices_per_node");
  if (t_col < 0 || w_col < 0 || s_col < 0)
    throw InputError(origin, "line 1",
                     "Vidur columns time_stats.<op>.mean, num_workers and size, got \"" +
                         line.substr(0, 80) + "\"");
  std::vector<CollectivePoint> out;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream s(line);
    std::string x;
    while (std::getline(s, x, ',')) f.push_back(x);
    if (static_cast<int>(f.size()) <= std::max({t_col, w_col, s_col, c_col, d_col}))
      throw InputError(origin, "line " + std::to_string(line_no),
                       std::to_string(head.size()) + " fields, got " + std::to_string(f.size()));
    CollectivePoint p;
    double t_ms = 0, w = 0, sz = 0, dpn = 0;
    if (!parse_double(f[static_cast<std::size_t>(t_col)], t_ms) ||
        !parse_double(f[static_cast<std::size_t>(w_col)], w) ||
        !parse_double(f[static_cast<std::size_t>(s_col)], sz) || t_ms <= 0 ||
        t_ms > kMaxUs / 1000 || w < 1 || w > kMaxGpus || w != std::floor(w) || sz < 0 ||
        sz > kMaxMessageBytes)
      throw InputError(origin, "line " + std::to_string(line_no),
                       "a time in (0, 1e6] ms, num_workers a whole number from 1 to " +
                           std::to_string(kMaxGpus) + " and a size up to 1 PiB, got \"" +
                           sim::printable(line, 80) + "\"");
    p.collective = c_col >= 0 ? f[static_cast<std::size_t>(c_col)] : "all_reduce";
    p.ranks = static_cast<int>(w);
    p.nodes = (d_col >= 0 && parse_double(f[static_cast<std::size_t>(d_col)], dpn) && dpn >= 1)
                  ? std::max(1, static_cast<int>(w / dpn))
                  : 1;
    p.bytes = sz;
    p.time_s = t_ms * 1e-3;
    p.algbw_gb_s = sz / p.time_s / 1e9;
    out.push_back(p);
  }
  if (out.empty()) throw InputError(origin, "", "at least one measurement row, got none");
  check_collective_fit(out, origin);
  return out;
}

namespace {

double bus_factor(const std::string& coll, int n) {
  if (n <= 1) return 1.0;
  const double nn = n;
  if (coll.find("all_reduce") != std::string::npos || coll.find("allreduce") != std::string::npos)
    return 2.0 * (nn - 1) / nn;
  if (coll.find("gather") != std::string::npos ||
      coll.find("reduce_scatter") != std::string::npos ||
      coll.find("alltoall") != std::string::npos)
    return (nn - 1) / nn;
  return 1.0;
}

}  // namespace

namespace {

// t = alpha + n * inv by least squares on relative error, alpha >= 0, inv > 0 where possible.
std::pair<double, double> fit_alpha_inv(const std::vector<const CollectivePoint*>& pts) {
  double s11 = 0, s1n = 0, snn = 0, s1t = 0, snt = 0;
  for (const CollectivePoint* p : pts) {
    const double w = 1.0 / (p->time_s * p->time_s);
    s11 += w;
    s1n += w * p->bytes;
    snn += w * p->bytes * p->bytes;
    s1t += w * p->time_s;
    snt += w * p->bytes * p->time_s;
  }
  const double det = s11 * snn - s1n * s1n;
  double alpha = 0, inv = 0;
  if (std::abs(det) > 1e-300) {
    alpha = (s1t * snn - s1n * snt) / det;
    inv = (s11 * snt - s1n * s1t) / det;
  }
  if (alpha < 0 || inv <= 0) {
    // Fall back to one term: a negative intercept (sizes too close together to separate the two
    // terms, or noise) means pure bandwidth, t = n * inv through the origin.
    alpha = std::max(alpha, 0.0);
    inv = snn > 0 ? (snt - alpha * s1n) / snn : 0;
  }
  return {alpha, inv};
}

}  // namespace

namespace {

// Sizes must reach the bandwidth regime before a bandwidth is written: the largest at least this
// many times n_half = alpha x algbw, the size at which the latency and bandwidth terms are equal
// (at 4 x n_half the bandwidth term is 80 % of the time).
constexpr double kBandwidthRegime = 4.0;
// The spread of one nccl-tests measurement on a quiet machine (run to run, a few %): a fitted
// busbw may exceed the highest measured one by this much beyond what the fit itself explains, and
// runs of one measurement agree when their fitted busbw are within twice this of their median.
constexpr double kNoise = 0.05;
constexpr double kRunsAgree = 2 * kNoise;

std::string fmt_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  return fmt(b) + " " + units[u];
}

// What the measurement supports: a bandwidth only where the sizes reach the bandwidth regime
// (else alpha alone), and never above the highest measured busbw by more than the fit itself
// explains -- the latency share left at the largest size, n_half / largest, the asymptote's
// own excess over a measured point -- plus kNoise (capped there). Not the fit's mean error: a
// worse fit would be let extrapolate further. Both say why in r.note.
void guard_bandwidth(CollectiveFitRow& r, double alpha_s, double inv) {
  const double factor = bus_factor(r.collective, r.ranks);
  if (alpha_s > 0 && inv > 0 && r.max_bytes < kBandwidthRegime * alpha_s / inv) {
    r.note = "bandwidth not written, latency only: the sizes reach " + fmt_bytes(r.max_bytes) +
             ", below " + fmt(kBandwidthRegime) +
             " x alpha x algbw = " + fmt_bytes(kBandwidthRegime * alpha_s / inv) +
             " (the fitted busbw " + fmt(r.busbw_gb_s) +
             " GB/s would be an extrapolation from the latency regime)";
    r.latency_only = true;
    r.algbw_gb_s = r.busbw_gb_s = 0;
    return;
  }
  const double excess = (1.0 + (inv > 0 ? alpha_s / inv / r.max_bytes : 0.0)) * (1.0 + kNoise);
  if (r.max_busbw_gb_s > 0 && r.busbw_gb_s > r.max_busbw_gb_s * excess) {
    r.note = "fitted busbw " + fmt(r.busbw_gb_s) + " GB/s is " +
             fmt(100.0 * (r.busbw_gb_s / r.max_busbw_gb_s - 1.0), 0) +
             " % above every measured busbw (max " + fmt(r.max_busbw_gb_s) +
             "), more than the fit's latency term and run-to-run noise explain (" +
             fmt(100.0 * (excess - 1.0), 0) + " %): capped at " + fmt(r.max_busbw_gb_s) + " GB/s";
    r.busbw_gb_s = r.max_busbw_gb_s;
    r.algbw_gb_s = r.busbw_gb_s / factor;
  }
}

// One measurement (one run): alpha from t = alpha + n * inv over every size, least squares on
// relative error (weights 1/t^2) -- the small sizes fix it. Bandwidth: the same fit over the sizes
// within 1/64 of the largest (at least three), where NCCL runs its bandwidth protocol: over all
// sizes the latency-bound protocols (LL, LL128) pull the slope down (the SuperBench log: 210 GB/s
// over all sizes against 235 GB/s measured at 8 GiB). Then guard_bandwidth.
CollectiveFitRow fit_points(const std::vector<const CollectivePoint*>& all) {
  const auto [alpha, inv_all] = fit_alpha_inv(all);
  CollectiveFitRow r;
  r.collective = all.front()->collective;
  r.ranks = all.front()->ranks;
  r.nodes = all.front()->nodes;
  const double factor = bus_factor(r.collective, r.ranks);
  for (const CollectivePoint* p : all) {
    r.max_bytes = std::max(r.max_bytes, p->bytes);
    r.max_busbw_gb_s =
        std::max(r.max_busbw_gb_s, p->busbw_gb_s > 0 ? p->busbw_gb_s : p->algbw_gb_s * factor);
  }
  std::vector<const CollectivePoint*> big;
  for (const CollectivePoint* p : all)
    if (p->bytes >= r.max_bytes / 64.0) big.push_back(p);
  double inv = inv_all;
  if (big.size() >= 3) {
    const double inv_big = fit_alpha_inv(big).second;
    if (inv_big > 0) inv = inv_big;
  }
  r.alpha_us = alpha * 1e6;
  r.algbw_gb_s = inv > 0 ? 1.0 / inv / 1e9 : 0.0;
  r.busbw_gb_s = r.algbw_gb_s * factor;
  r.points = static_cast<int>(all.size());
  double err = 0;
  for (const CollectivePoint* p : all)
    err += std::abs(alpha + p->bytes * inv - p->time_s) / p->time_s;
  r.mean_rel_error = err / static_cast<double>(all.size());
  guard_bandwidth(r, alpha, inv);
  return r;
}

// Several runs of one measurement, each fitted alone: their medians when their busbw agree within
// kRunsAgree, else no row and fit.refusal says which runs disagree.
void combine_runs(const std::vector<CollectiveFitRow>& per, CollectiveFit& fit) {
  CollectiveFitRow c = per.front();
  c.run = -1;
  c.runs = static_cast<int>(per.size());
  c.points = 0;
  c.note.clear();
  std::vector<double> alpha, bw;
  const CollectiveFitRow* lo = nullptr;
  const CollectiveFitRow* hi = nullptr;
  std::string lines;
  for (const CollectiveFitRow& r : per) {
    c.points += r.points;
    c.mean_rel_error = std::max(c.mean_rel_error, r.mean_rel_error);
    c.max_bytes = std::max(c.max_bytes, r.max_bytes);
    c.max_busbw_gb_s = std::max(c.max_busbw_gb_s, r.max_busbw_gb_s);
    lines += (lines.empty() ? "" : ", ") + std::to_string(r.run_line);
    alpha.push_back(r.alpha_us);
    if (r.busbw_gb_s <= 0) continue;
    bw.push_back(r.busbw_gb_s);
    if (!lo || r.busbw_gb_s < lo->busbw_gb_s) lo = &r;
    if (!hi || r.busbw_gb_s > hi->busbw_gb_s) hi = &r;
  }
  const double med = median(bw);
  const std::string what = c.collective + " on " + std::to_string(c.ranks) + " GPUs / " +
                           std::to_string(c.nodes) + " machine(s)";
  if (!bw.empty() && hi->busbw_gb_s - lo->busbw_gb_s > kRunsAgree * med) {
    if (fit.refusal.empty()) {
      const CollectiveFitRow* first = hi->run < lo->run ? hi : lo;
      const CollectiveFitRow* later = first == hi ? lo : hi;
      fit.refusal_line = later->run_line;
      fit.refusal = "runs of " + what + " that agree (within " + fmt(100.0 * kRunsAgree) +
                    " % in busbw) or one run, got " + std::to_string(per.size()) +
                    " runs (starting at lines " + lines + ") whose fits disagree: run " +
                    std::to_string(first->run + 1) + " " + fmt(first->busbw_gb_s) + " GB/s, run " +
                    std::to_string(later->run + 1) + " " + fmt(later->busbw_gb_s) +
                    " GB/s busbw; pass --run N to fit one";
    }
    return;
  }
  c.alpha_us = median(alpha);
  c.busbw_gb_s = med;
  c.algbw_gb_s = med / bus_factor(c.collective, c.ranks);
  c.latency_only = bw.empty();
  c.note = std::to_string(per.size()) + " runs (starting at lines " + lines +
           ") agree: each fitted alone, their median alpha and busbw written";
  fit.rows.push_back(c);
}

}  // namespace

CollectiveFit fit_collective(const std::vector<CollectivePoint>& points) {
  CollectiveFit fit;
  std::map<std::tuple<std::string, int, int>, std::map<int, std::vector<const CollectivePoint*>>>
      groups;
  for (const auto& p : points) groups[{p.collective, p.ranks, p.nodes}][p.run].push_back(&p);
  for (const auto& [k, runs] : groups) {
    if (runs.size() == 1) {
      fit.rows.push_back(fit_points(runs.begin()->second));
      continue;
    }
    std::vector<CollectiveFitRow> per;
    for (const auto& [run, pts] : runs) {
      per.push_back(fit_points(pts));
      per.back().run = run;
      per.back().run_line = pts.front()->run_line;
      fit.run_rows.push_back(per.back());
    }
    combine_runs(per, fit);
  }
  return fit;
}

namespace {

// The GPUs of the cluster grouped by machine (Device::node), machines in order of first GPU.
std::vector<std::vector<sim::DeviceId>> gpus_by_node(const sim::Cluster& c) {
  std::vector<std::vector<sim::DeviceId>> out;
  std::map<std::string, std::size_t> index;
  for (sim::DeviceId g : c.gpus()) {
    const std::string& n = c.devices[static_cast<std::size_t>(g)].node;
    auto [it, fresh] = index.emplace(n, out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(g);
  }
  return out;
}

// The transfers of one measured collective as the cluster would carry them, and the fit they
// imply. Within one machine: one ring over the first `ranks` GPUs (ring all-reduce, all-gather,
// reduce-scatter; a send/recv is its first edge); every edge carries busbw, so a link carrying
// L edges in one direction needs busbw x L. Across machines: NCCL runs one ring per NIC rail
// (GPU i of every machine talks to GPU i of the next), so busbw = G x (per-rail bandwidth) with
// G GPUs per machine, and a link carrying L rail edges needs busbw x L / G.
struct CollectiveRoutes {
  std::vector<std::pair<sim::DeviceId, sim::DeviceId>> edges;
  double parallel = 1;  // G for the rails, 1 for a single ring
  std::string shape;    // for the report
};

std::optional<CollectiveRoutes> collective_routes(const sim::Cluster& c, const CollectiveFitRow& r,
                                                  std::string& why_not) {
  const auto nodes = gpus_by_node(c);
  CollectiveRoutes cr;
  const int ranks = r.ranks;
  if (ranks < 2) {
    why_not = "rank count unknown or 1 (pass --ranks)";
    return std::nullopt;
  }
  const bool pairwise = r.collective.find("send") != std::string::npos ||
                        r.collective.find("recv") != std::string::npos;
  if (r.nodes <= 1) {
    if (nodes.empty() || static_cast<int>(nodes[0].size()) < ranks) {
      why_not = std::to_string(ranks) + " GPUs on one machine, the cluster's first machine has " +
                std::to_string(nodes.empty() ? 0 : nodes[0].size());
      return std::nullopt;
    }
    for (int i = 0; i < ranks; ++i) {
      cr.edges.emplace_back(nodes[0][static_cast<std::size_t>(i)],
                            nodes[0][static_cast<std::size_t>((i + 1) % ranks)]);
      if (pairwise) break;
    }
    cr.shape =
        pairwise ? "one GPU pair" : "a ring over " + std::to_string(ranks) + " GPUs of one machine";
    return cr;
  }
  const int m = r.nodes;
  if (static_cast<int>(nodes.size()) < m || ranks % m != 0) {
    why_not = std::to_string(ranks) + " ranks on " + std::to_string(m) +
              " machines, the cluster has " + std::to_string(nodes.size()) + " machine(s)" +
              (ranks % m ? " and the ranks do not split evenly" : "");
    return std::nullopt;
  }
  const int g = ranks / m;
  for (int j = 0; j < m; ++j)
    if (static_cast<int>(nodes[static_cast<std::size_t>(j)].size()) < g) {
      why_not = std::to_string(g) + " GPUs per machine, machine " + std::to_string(j) +
                " of the cluster has " + std::to_string(nodes[static_cast<std::size_t>(j)].size());
      return std::nullopt;
    }
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < m; ++j) {
      if (m == 2 && j == 1 && pairwise) break;
      cr.edges.emplace_back(
          nodes[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)],
          nodes[static_cast<std::size_t>((j + 1) % m)][static_cast<std::size_t>(i)]);
    }
  cr.parallel = g;
  cr.shape = std::to_string(g) + " rails (GPU i of each of " + std::to_string(m) +
             " machines to GPU i of the next)";
  return cr;
}

// Fits one measured collective onto the class that limits its transfers in the cluster: every
// edge is routed, the load of each link direction counted, and the link with the least
// bandwidth per edge is the one the measurement saw.
void fit_row(const CollectiveFitRow& r, sim::Cluster& c, LinkFitReport& rep) {
  const std::string what = r.collective + " on " + std::to_string(r.ranks) + " GPUs / " +
                           std::to_string(r.nodes) + " machine(s)";
  std::string why_not;
  const auto cr = collective_routes(c, r, why_not);
  if (!cr) {
    rep.notes.push_back(what + ": not fitted: " + why_not);
    return;
  }
  std::map<std::pair<sim::LinkId, bool>, int> load;
  std::vector<Path> paths;
  for (const auto& [a, b] : cr->edges) {
    paths.push_back(path_of(c.route(a, b)));
    for (const auto& h : paths.back().hops) ++load[{h.link, h.forward}];
  }
  sim::LinkId worst = -1;
  int worst_load = 0;
  double worst_share = 0;
  for (const auto& [key, n] : load) {
    const double share = link_gb_s(c, key.first) / n;
    if (worst < 0 || share < worst_share) {
      worst = key.first;
      worst_load = n;
      worst_share = share;
    }
  }
  if (worst < 0) {
    rep.notes.push_back(what + ": not fitted: its transfers cross no link of the cluster");
    return;
  }
  LinkClassFit f;
  f.kind = c.links[static_cast<std::size_t>(worst)].kind;
  f.pairs = static_cast<int>(cr->edges.size());
  // Across machines NCCL spreads its rails over all NICs of a machine, whatever one static route
  // per GPU pair says (docs/routing.md: no multipath): a NIC's link carries ceil(rails / NICs).
  int per_link = worst_load;
  std::string spread;
  if (cr->parallel > 1) {
    const sim::Link& wl = c.links[static_cast<std::size_t>(worst)];
    const auto is_nic = [&](sim::VertexId v) {
      return c.vertices[static_cast<std::size_t>(v)].kind == sim::VertexKind::Nic;
    };
    if (is_nic(wl.a) || is_nic(wl.b)) {
      const std::string& node = c.devices[static_cast<std::size_t>(cr->edges[0].first)].node;
      int nics = 0;
      for (const auto& v : c.vertices) nics += v.kind == sim::VertexKind::Nic && v.node == node;
      const int rails = static_cast<int>(cr->parallel);
      const int even = nics > 0 ? (rails + nics - 1) / nics : worst_load;
      if (even != worst_load)
        spread = "; NCCL spreads " + std::to_string(rails) + " rails over the machine's " +
                 std::to_string(nics) + " NICs, " + std::to_string(even) +
                 " per NIC (the cluster's static routes put " + std::to_string(worst_load) +
                 " on " + wl.name + ")";
      per_link = even;
    }
  }
  f.new_gb_s = r.busbw_gb_s * per_link / cr->parallel;
  // A ring all-reduce takes 2(n-1) steps, a gather n-1; each pays one edge's latency, split over
  // the edge's hops.
  const bool ar = r.collective.find("all_reduce") != std::string::npos ||
                  r.collective.find("allreduce") != std::string::npos;
  const int steps = std::max(1, (ar ? 2 : 1) * (r.ranks - 1));
  std::size_t hops = 1;
  for (const Path& p : paths)
    if (std::any_of(p.hops.begin(), p.hops.end(),
                    [&](const sim::Hop& h) { return h.link == worst; })) {
      hops = std::max<std::size_t>(1, p.hops.size());
      break;
    }
  f.new_latency_us = r.alpha_us / steps / static_cast<double>(hops);
  std::set<std::string> crossed;
  for (const auto& [key, n] : load)
    crossed.insert(c.links[static_cast<std::size_t>(key.first)].kind);
  std::string crossed_s;
  for (const auto& k : crossed) crossed_s += (crossed_s.empty() ? "" : ", ") + k;
  f.why = what + " (busbw " +
          (r.latency_only ? std::string("not measured") : fmt(r.busbw_gb_s) + " GB/s") +
          ", alpha " + fmt(r.alpha_us) + " us) as " + cr->shape + "; its transfers cross " +
          crossed_s + "; the least bandwidth per transfer is on " +
          c.links[static_cast<std::size_t>(worst)].name + " (" + f.kind + ", " +
          std::to_string(worst_load) + " transfer(s) per direction)" + spread;
  if (r.latency_only) f.why += "; latency only (the sizes do not reach the bandwidth regime)";
  if (write_class(c, f, r.alpha_us > 0, rep.notes)) {
    if (r.latency_only) f.new_gb_s = f.old_gb_s;  // not measured: kept
    if (f.new_gb_s > 1.05 * f.old_gb_s)
      rep.notes.push_back(
          f.kind + " fitted at " + fmt(f.new_gb_s) + " GB/s, above the cluster's " +
          fmt(f.old_gb_s) +
          " GB/s: in-switch reductions (NVLS, SHARP) let busbw exceed the wire rate; a ring-only "
          "measurement (NCCL_ALGO=Ring) fits the wire");
    rep.classes.push_back(f);
  }
  sim::compute_routes(c);
}

void check_collective_fit(const std::vector<CollectivePoint>& points, const std::string& origin) {
  for (const CollectiveFitRow& r : fit_collective(points).rows) {
    const std::string key = r.collective + " on " + std::to_string(r.ranks) + " GPUs";
    // apply_collective_fit writes busbw into links and alpha / (2(n-1)) into their latency.
    // A fit of 0 (no size dependence) is not applied; any other value becomes a link bandwidth.
    if (!(r.busbw_gb_s == 0 || (r.busbw_gb_s >= kMinGbS && r.busbw_gb_s <= kMaxGbS)))
      throw InputError(origin, sim::printable(key),
                       "measurements whose fitted bus bandwidth is from 0.001 to 1e9 GB/s, got " +
                           std::to_string(r.busbw_gb_s) + " GB/s");
    if (!(r.alpha_us >= 0 && r.alpha_us <= kMaxUs))
      throw InputError(origin, sim::printable(key),
                       "measurements whose fitted latency is from 0 to 1e9 us, got " +
                           std::to_string(r.alpha_us) + " us");
  }
}

}  // namespace

LinkFitReport apply_collective_fit(const CollectiveFit& fit, sim::Cluster& c) {
  LinkFitReport rep;
  // Within a machine first (the intra-node fabric), then across machines (NICs and the network),
  // each from the measurement with the most ranks.
  const CollectiveFitRow* intra = nullptr;
  const CollectiveFitRow* inter = nullptr;
  const auto per_node = gpus_by_node(c);
  const int gpn = per_node.empty() ? 0 : static_cast<int>(per_node[0].size());
  std::vector<CollectiveFitRow> rows = fit.rows;
  for (auto& r : rows)
    if (r.nodes <= 0 && r.ranks > 0 && gpn > 0) {
      // Tables that do not say: as few machines as the ranks fit on.
      r.nodes = (r.ranks + gpn - 1) / gpn;
      rep.notes.push_back(r.collective + " on " + std::to_string(r.ranks) +
                          " GPUs: machines not given, taken as " + std::to_string(r.nodes) + " (" +
                          std::to_string(gpn) + " GPUs per machine in the cluster)");
    }
  for (const auto& r : rows) {
    if (!r.note.empty())
      rep.notes.push_back(r.collective + " on " + std::to_string(r.ranks) + " GPUs / " +
                          std::to_string(r.nodes) + " machine(s): " + r.note);
    // A row without bandwidth is written only where the latency is what it measured.
    if (r.busbw_gb_s <= 0 && !(r.latency_only && r.alpha_us > 0)) continue;
    const CollectiveFitRow*& slot = r.nodes <= 1 ? intra : inter;
    if (!slot || r.ranks > slot->ranks) slot = &r;
  }
  for (const auto& r : rows)
    if (&r != intra && &r != inter)
      rep.notes.push_back(r.collective + " on " + std::to_string(r.ranks) + " GPUs / " +
                          std::to_string(r.nodes) +
                          " machine(s): fitted (see the table) but not written: a larger "
                          "measurement of the same path is used");
  if (intra) fit_row(*intra, c, rep);
  if (inter) fit_row(*inter, c, rep);
  if (!intra && !inter)
    rep.notes.push_back("no measurement with a rank count and a bandwidth: nothing to fit");
  return rep;
}

}  // namespace placesim::calibration

#include "calibration/link_fit.hpp"
#include "calibration/text_util.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>

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
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
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

}  // namespace

P2pMeasurement parse_p2p_output(const std::string& text, const std::string& origin) {
  P2pMeasurement m;
  std::istringstream in(text);
  std::string line;
  static const std::regex dev_re(R"(^Device:\s*(\d+),\s*([^,]+),)");
  static const std::regex acc_re(R"(^Device=(\d+)\s+(CAN|CANNOT)\s+Access Peer Device=(\d+))");
  std::string section;     // current matrix family
  std::string sub;         // "gpu"/"cpu" for latency
  std::vector<std::pair<int, int>> access;
  std::vector<std::pair<std::pair<int, int>, bool>> acc;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch mt;
    if (std::regex_search(line, mt, dev_re)) {
      int d = 0;
      if (!parse_index(mt[1], kMaxGpus - 1, d))
        throw InputError(origin, "line " + std::to_string(line_no),
                         "a device index below " + std::to_string(kMaxGpus) + ", got " + sim::printable(mt[1].str()));
      if (static_cast<int>(m.names.size()) <= d) m.names.resize(static_cast<std::size_t>(d) + 1);
      m.names[static_cast<std::size_t>(d)] = mt[2];
      continue;
    }
    if (std::regex_search(line, mt, acc_re)) {
      int i = 0, j = 0;
      if (!parse_index(mt[1], kMaxGpus - 1, i) || !parse_index(mt[3], kMaxGpus - 1, j))
        throw InputError(origin, "line " + std::to_string(line_no),
                         "device indices below " + std::to_string(kMaxGpus) + ", got \"" + sim::printable(line) + "\"");
      acc.push_back({{i, j}, mt[2] == "CAN"});
      continue;
    }
    const bool uni = line.find("Unidirectional") != std::string::npos;
    const bool bi = line.find("Bidirectional") != std::string::npos;
    const bool lat = line.find("Latency") != std::string::npos && line.find("Matrix") != std::string::npos;
    if ((uni || bi) && line.find("Bandwidth") != std::string::npos) {
      const bool on = line.find("P2P=Enabled") != std::string::npos;
      section = std::string(uni ? "uni_" : "bi_") + (on ? "on" : "off");
      sub.clear();
      continue;
    }
    if (lat) {
      section = line.find("P2P=Enabled") != std::string::npos ? "lat_on" : "lat_off";
      sub.clear();
      continue;
    }
    const auto tok = split_ws(line);
    if (tok.empty() || section.empty()) continue;
    if (tok[0] == "D\\D" || tok[0] == "GPU" || tok[0] == "CPU") {
      if (section.rfind("lat_", 0) == 0) sub = tok[0] == "CPU" ? "cpu" : "gpu";
      continue;
    }
    double first = 0;
    if (!parse_double(tok[0], first) || tok[0].find('.') != std::string::npos) {
      section.clear();
      continue;
    }
    const std::string key = section.rfind("lat_", 0) == 0
                                ? "lat_" + (sub.empty() ? std::string("gpu") : sub) + section.substr(3)
                                : section;
    std::vector<double> row;
    const bool latency = key.rfind("lat_", 0) == 0;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      double v = 0;
      if (!parse_double(tok[i], v))
        throw InputError(origin, "line " + std::to_string(line_no), "a number in the matrix row, got \"" + sim::printable(tok[i]) + "\"");
      if (latency ? !(v >= 0 && v <= kMaxUs) : !(v >= kMinGbS && v <= kMaxGbS))
        throw InputError(origin, "line " + std::to_string(line_no),
                         latency ? "a latency from 0 to 1e9 us, got " + sim::printable(tok[i])
                                 : "a bandwidth from 0.001 to 1e9 GB/s, got " + sim::printable(tok[i]));
      row.push_back(v);
    }
    if (tok.size() - 1 > static_cast<std::size_t>(kMaxGpus))
      throw InputError(origin, "line " + std::to_string(line_no), "at most " + std::to_string(kMaxGpus) + " columns");
    auto& mat = m.matrix[key];
    if (!(first >= 0 && first < kMaxGpus) || static_cast<int>(first) != static_cast<int>(mat.size()))
      throw InputError(origin, "line " + std::to_string(line_no),
                       "matrix row " + std::to_string(mat.size()) + ", got row " + tok[0]);
    mat.push_back(std::move(row));
  }
  if (m.matrix.empty())
    throw InputError(origin, "", "p2pBandwidthLatencyTest output (bandwidth and latency matrices), got none");
  m.gpus = static_cast<int>(m.matrix.begin()->second.size());
  for (const auto& [k, mat] : m.matrix) {
    if (static_cast<int>(mat.size()) != m.gpus)
      throw InputError(origin, k, std::to_string(m.gpus) + " rows like the other matrices, got " + std::to_string(mat.size()));
    for (const auto& r : mat)
      if (static_cast<int>(r.size()) != m.gpus)
        throw InputError(origin, k, "square matrices of " + std::to_string(m.gpus) + " columns, got a row of " + std::to_string(r.size()));
  }
  m.can_access.assign(static_cast<std::size_t>(m.gpus), std::vector<bool>(static_cast<std::size_t>(m.gpus), false));
  for (const auto& [ij, can] : acc)
    if (ij.first < m.gpus && ij.second < m.gpus)
      m.can_access[static_cast<std::size_t>(ij.first)][static_cast<std::size_t>(ij.second)] = can;
  return m;
}

namespace {

// The bottleneck link's index on a route (smallest bandwidth; first on ties) and the hop count.
std::pair<sim::LinkId, int> bottleneck(const sim::Cluster& c, const sim::Route& r) {
  sim::LinkId best = -1;
  int hops = 0;
  for (const auto& seg : r.segments)
    for (const auto& h : seg.hops) {
      ++hops;
      if (best < 0 || c.links[static_cast<std::size_t>(h.link)].bandwidth < c.links[static_cast<std::size_t>(best)].bandwidth)
        best = h.link;
    }
  return {best, hops};
}

double route_gb_s(const sim::Cluster& c, const sim::Route& r) {
  const auto [b, hops] = bottleneck(c, r);
  return b < 0 ? 0.0 : c.links[static_cast<std::size_t>(b)].bandwidth.bytes_per_s / 1e9;
}

}  // namespace

LinkFitReport fit_links_from_p2p(const P2pMeasurement& m, sim::Cluster& c) {
  LinkFitReport rep;
  const auto gpus = c.gpus();
  if (static_cast<int>(gpus.size()) != m.gpus)
    throw InputError(c.source_file.empty() ? c.name : c.source_file, "devices",
                     std::to_string(m.gpus) + " GPUs as in the p2p measurement, got " + std::to_string(gpus.size()));
  struct Acc {
    std::vector<double> bw, lat;
  };
  std::map<std::string, Acc> by_kind;
  const auto uni_on = m.matrix.find("uni_on");
  const auto uni_off = m.matrix.find("uni_off");
  const auto lat_on = m.matrix.find("lat_gpu_on");
  const auto lat_off = m.matrix.find("lat_gpu_off");
  for (int i = 0; i < m.gpus; ++i)
    for (int j = 0; j < m.gpus; ++j) {
      if (i == j) continue;
      const sim::DeviceId a = gpus[static_cast<std::size_t>(i)], b = gpus[static_cast<std::size_t>(j)];
      const bool peer = c.peer_access[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
      const auto bw_it = peer && uni_on != m.matrix.end() ? uni_on : uni_off;
      const auto lat_it = peer && lat_on != m.matrix.end() ? lat_on : lat_off;
      if (bw_it == m.matrix.end()) continue;
      const double bw = bw_it->second[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      const sim::Route& r = c.route(a, b);
      const auto [bl, hops] = bottleneck(c, r);
      if (bl < 0) continue;
      Acc& acc = by_kind[c.links[static_cast<std::size_t>(bl)].kind];
      acc.bw.push_back(bw);
      if (lat_it != m.matrix.end() && hops > 0)
        acc.lat.push_back(lat_it->second[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] / hops);
      rep.pairs.push_back({c.devices[static_cast<std::size_t>(a)].name, c.devices[static_cast<std::size_t>(b)].name, bw,
                           route_gb_s(c, r), 0.0});
    }
  for (const auto& [kind, acc] : by_kind) {
    LinkClassFit f;
    f.kind = kind;
    f.pairs = static_cast<int>(acc.bw.size());
    f.new_gb_s = median(acc.bw);
    f.new_latency_us = median(acc.lat);
    bool first = true;
    for (sim::Link& l : c.links) {
      if (l.kind != kind) continue;
      if (first) {
        f.old_gb_s = l.bandwidth.bytes_per_s / 1e9;
        f.old_latency_us = static_cast<double>(l.latency.ns) / 1000.0;
        first = false;
      }
      if (f.new_gb_s > 0) l.bandwidth = sim::Bandwidth{f.new_gb_s * 1e9};
      if (!acc.lat.empty()) l.latency = sim::Duration{static_cast<std::int64_t>(std::llround(f.new_latency_us * 1000.0))};
    }
    rep.classes.push_back(f);
  }
  sim::compute_routes(c);
  for (auto& p : rep.pairs) p.after_gb_s = route_gb_s(c, c.route(c.device_index(p.from), c.device_index(p.to)));
  for (int i = 0; i < m.gpus; ++i)
    for (int j = 0; j < m.gpus; ++j)
      if (i != j && !m.can_access.empty() && m.can_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] !=
                                                  c.peer_access[static_cast<std::size_t>(gpus[static_cast<std::size_t>(i)])]
                                                               [static_cast<std::size_t>(gpus[static_cast<std::size_t>(j)])])
        rep.notes.push_back("peer access of GPU " + std::to_string(i) + " -> " + std::to_string(j) +
                            " differs between the measurement and the cluster (the cluster's is kept)");
  return rep;
}

std::vector<CollectivePoint> parse_nccl_tests(const std::string& text, const std::string& origin,
                                              const std::string& collective) {
  std::vector<CollectivePoint> out;
  std::istringstream in(text);
  std::string line;
  int ranks_lines = 0, gpus_per_thread = 0, threads = 1, line_no = 0;
  std::set<std::string> hosts;
  static const std::regex ngpus_re(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
  // nccl-tests before 2.11 print no "Group" column ("#   Rank  0 Pid 9192 on host device 0 ...").
  static const std::regex rank_re(R"(^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+))");
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch mt;
    if (std::regex_search(line, mt, ngpus_re)) {
      if (!parse_index(mt[1], kMaxGpus, threads) || !parse_index(mt[2], kMaxGpus, gpus_per_thread))
        throw InputError(origin, "line " + std::to_string(line_no),
                         "nThread and nGpus up to " + std::to_string(kMaxGpus) + ", got \"" + sim::printable(line) + "\"");
      continue;
    }
    if (std::regex_search(line, mt, rank_re)) {
      ++ranks_lines;
      hosts.insert(mt[1]);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const auto tok = split_ws(line);
    double size = 0;
    if (tok.empty() || !parse_double(tok[0], size)) continue;
    // With redop and root (reductions, nccl-tests >= 2.10): 13 columns; without root: 12;
    // gathers without redop/root: 11 (older releases).
    std::size_t time_col = 0;
    if (tok.size() >= 13) time_col = 5;
    else if (tok.size() == 12) time_col = 4;
    else if (tok.size() == 11) time_col = 3;
    else
      throw InputError(origin, "line " + std::to_string(line_no),
                       "an nccl-tests result row (size count type [redop] [root] time algbw busbw #wrong ...), got " +
                           std::to_string(tok.size()) + " columns");
    CollectivePoint p;
    p.collective = collective;
    p.bytes = size;
    double t_us = 0, algbw = 0;
    if (!parse_double(tok[time_col], t_us) || !parse_double(tok[time_col + 1], algbw) || t_us <= 0 ||
        t_us > kMaxUs || algbw < 0 || size < 0 || size > kMaxMessageBytes)
      throw InputError(origin, "line " + std::to_string(line_no),
                       "a size up to 1 PiB, a time in (0, 1e9] us and an algbw >= 0 GB/s, got \"" +
                           sim::printable(tok[0]) + "\", \"" + sim::printable(tok[time_col]) + "\" and \"" +
                           sim::printable(tok[time_col + 1]) + "\"");
    p.time_s = t_us * 1e-6;
    p.algbw_gb_s = algbw;
    out.push_back(p);
  }
  if (out.empty()) throw InputError(origin, "", "nccl-tests output with at least one result row, got none");
  const long long ranks_ll = ranks_lines > 0 ? ranks_lines : static_cast<long long>(threads) * gpus_per_thread;
  if (ranks_ll > kMaxGpus)
    throw InputError(origin, "", "at most " + std::to_string(kMaxGpus) + " ranks, got " + std::to_string(ranks_ll));
  const int ranks = static_cast<int>(ranks_ll);
  for (auto& p : out) {
    p.ranks = ranks;
    p.nodes = std::max<int>(1, static_cast<int>(hosts.size()));
  }
  check_collective_fit(out, origin);
  return out;
}

std::vector<CollectivePoint> parse_vidur_collective_csv(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw InputError(origin, "line 1", "a CSV header, got an empty file");
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
    if (head[i].rfind("time_stats.", 0) == 0 && head[i].size() > 5 && head[i].substr(head[i].size() - 5) == ".mean")
      t_col = static_cast<int>(i);
  const int w_col = col("num_workers"), s_col = col("size"), c_col = col("collective"), d_col = col("devices_per_node");
  if (t_col < 0 || w_col < 0 || s_col < 0)
    throw InputError(origin, "line 1", "Vidur columns time_stats.<op>.mean, num_workers and size, got \"" + line.substr(0, 80) + "\"");
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
      throw InputError(origin, "line " + std::to_string(line_no), std::to_string(head.size()) + " fields, got " + std::to_string(f.size()));
    CollectivePoint p;
    double t_ms = 0, w = 0, sz = 0, dpn = 0;
    if (!parse_double(f[static_cast<std::size_t>(t_col)], t_ms) || !parse_double(f[static_cast<std::size_t>(w_col)], w) ||
        !parse_double(f[static_cast<std::size_t>(s_col)], sz) || t_ms <= 0 || t_ms > kMaxUs / 1000 || w < 1 ||
        w > kMaxGpus || w != std::floor(w) || sz < 0 || sz > kMaxMessageBytes)
      throw InputError(origin, "line " + std::to_string(line_no),
                       "a time in (0, 1e6] ms, num_workers a whole number from 1 to " + std::to_string(kMaxGpus) +
                           " and a size up to 1 PiB, got \"" + sim::printable(line, 80) + "\"");
    p.collective = c_col >= 0 ? f[static_cast<std::size_t>(c_col)] : "all_reduce";
    p.ranks = static_cast<int>(w);
    p.nodes = (d_col >= 0 && parse_double(f[static_cast<std::size_t>(d_col)], dpn) && dpn >= 1) ? std::max(1, static_cast<int>(w / dpn)) : 1;
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
  if (coll.find("all_reduce") != std::string::npos || coll.find("allreduce") != std::string::npos) return 2.0 * (nn - 1) / nn;
  if (coll.find("gather") != std::string::npos || coll.find("reduce_scatter") != std::string::npos ||
      coll.find("alltoall") != std::string::npos)
    return (nn - 1) / nn;
  return 1.0;
}

}  // namespace

CollectiveFit fit_collective(const std::vector<CollectivePoint>& points) {
  CollectiveFit fit;
  std::map<std::tuple<std::string, int, int>, std::vector<const CollectivePoint*>> groups;
  for (const auto& p : points) groups[{p.collective, p.ranks, p.nodes}].push_back(&p);
  for (const auto& [k, pts] : groups) {
    // t = alpha + n * inv_bw, least squares on relative error (weights 1/t^2), alpha, inv_bw >= 0.
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
      // Fall back to one term: pure bandwidth through the largest message.
      alpha = std::max(alpha, 0.0);
      if (inv <= 0) inv = snn > 0 ? (snt - alpha * s1n) / snn : 0;
    }
    CollectiveFitRow r;
    std::tie(r.collective, r.ranks, r.nodes) = k;
    r.alpha_us = alpha * 1e6;
    r.algbw_gb_s = inv > 0 ? 1.0 / inv / 1e9 : 0.0;
    r.busbw_gb_s = r.algbw_gb_s * bus_factor(r.collective, r.ranks);
    r.points = static_cast<int>(pts.size());
    double err = 0;
    for (const CollectivePoint* p : pts) err += std::abs(alpha + p->bytes * inv - p->time_s) / p->time_s;
    r.mean_rel_error = err / static_cast<double>(pts.size());
    fit.rows.push_back(r);
  }
  return fit;
}

namespace {

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
                       "measurements whose fitted latency is from 0 to 1e9 us, got " + std::to_string(r.alpha_us) + " us");
  }
}

}  // namespace

LinkFitReport apply_collective_fit(const CollectiveFit& fit, sim::Cluster& c) {
  LinkFitReport rep;
  const CollectiveFitRow* best = nullptr;
  for (const auto& r : fit.rows)
    if (r.nodes == 1 && (!best || r.ranks > best->ranks)) best = &r;
  if (!best) {
    rep.notes.push_back("no single-node measurement: the cluster's links are left as they were");
    return rep;
  }
  const auto gpus = c.gpus();
  std::map<std::string, int> kinds;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < gpus.size(); ++j)
      if (i != j) {
        const auto [bl, hops] = bottleneck(c, c.route(gpus[i], gpus[j]));
        if (bl >= 0) ++kinds[c.links[static_cast<std::size_t>(bl)].kind];
      }
  if (kinds.empty()) {
    rep.notes.push_back("the cluster has no GPU-to-GPU routes: nothing to calibrate");
    return rep;
  }
  const auto top = std::max_element(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  LinkClassFit f;
  f.kind = top->first;
  f.pairs = top->second;
  f.new_gb_s = best->busbw_gb_s;
  // A ring all-reduce takes 2(n-1) steps; each pays one link latency.
  const int steps = std::max(1, 2 * (best->ranks - 1));
  f.new_latency_us = best->alpha_us / steps;
  bool first = true;
  for (sim::Link& l : c.links) {
    if (l.kind != f.kind) continue;
    if (first) {
      f.old_gb_s = l.bandwidth.bytes_per_s / 1e9;
      f.old_latency_us = static_cast<double>(l.latency.ns) / 1000.0;
      first = false;
    }
    if (f.new_gb_s > 0) l.bandwidth = sim::Bandwidth{f.new_gb_s * 1e9};
    l.latency = sim::Duration{static_cast<std::int64_t>(std::llround(f.new_latency_us * 1000.0))};
  }
  rep.classes.push_back(f);
  rep.notes.push_back("used " + best->collective + " on " + std::to_string(best->ranks) + " GPUs: busbw " +
                      std::to_string(best->busbw_gb_s) + " GB/s, alpha " + std::to_string(best->alpha_us) + " us");
  sim::compute_routes(c);
  return rep;
}

}  // namespace placesim::calibration

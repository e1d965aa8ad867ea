// Sweep specs, grid expansion, the CSV and its journal, and the parallel (oneTBB) and
// distributed (Comm) runner. Evaluating a point is the caller's evaluator.
#include "policy/sweep/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "models/nccl_p2p.hpp"
#include "models/parallel.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::policy {

namespace {

using sim::InputError;

const std::vector<std::string> kPlainAxes = {
    "gpus",         "gpu_model",           "interconnect", "pcie_generation",
    "nvlink_links", "host_link_bandwidth", "peer_access",  "gpu_memory"};
const std::vector<std::string> kPrefixAxes = {"link_scale.", "link_bandwidth."};

/// Other spellings users write for the axes; the CSV uses the canonical name.
std::string canonical_axis(const std::string& name) {
  static const std::map<std::string, std::string> kAliases = {
      {"gpu_count", "gpus"},
      {"num_gpus", "gpus"},
      {"n_gpus", "gpus"},
      {"gpu", "gpu_model"},
      {"model", "gpu_model"},
      {"pcie_gen", "pcie_generation"},
      {"pcie", "pcie_generation"},
      {"nvlink_lanes", "nvlink_links"},
      {"nvlinks", "nvlink_links"},
      {"host_bandwidth", "host_link_bandwidth"},
      {"host_link", "host_link_bandwidth"},
      {"peer", "peer_access"},
      {"p2p", "peer_access"},
      {"memory", "gpu_memory"},
      {"memory_capacity", "gpu_memory"},
      {"gpu_memory_capacity", "gpu_memory"}};
  if (auto it = kAliases.find(name); it != kAliases.end()) return it->second;
  for (const auto& [alias, canon] :
       {std::pair<std::string, std::string>{"link_bw.", "link_bandwidth."},
        {"bandwidth.", "link_bandwidth."},
        {"bandwidth_scale.", "link_scale."},
        {"scale.", "link_scale."}})
    if (name.size() > alias.size() && name.compare(0, alias.size(), alias) == 0)
      return canon + name.substr(alias.size());
  return name;
}

bool is_known_axis(const std::string& name) {
  if (std::find(kPlainAxes.begin(), kPlainAxes.end(), name) != kPlainAxes.end()) return true;
  for (const auto& p : kPrefixAxes)
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0) return true;
  return false;
}

std::string scalar(const YAML::Node& n, const std::string& origin, const std::string& key) {
  if (!n.IsScalar()) throw InputError(origin, key, "a scalar value");
  return n.Scalar();
}

bool parse_positive_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 6) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  out = std::stoi(s);
  return out > 0;
}

bool parse_positive_double(const std::string& s, double& out) {
  std::istringstream is(s);
  is.imbue(std::locale::classic());
  is >> out;
  return is && is.eof() && std::isfinite(out) && out > 0.0;
}

/// Checks one axis value where it can be checked without other engineers' catalogs.
void check_axis_value(const std::string& axis, const std::string& v, const std::string& origin,
                      const std::string& key) {
  int i = 0;
  double d = 0.0;
  auto fail = [&](const std::string& what) {
    throw InputError(origin, key, what + ", got \"" + v + "\"");
  };
  if (axis == "gpus" || axis == "nvlink_links") {
    // A cluster's routes are a devices x devices table: the GPU count is bounded before use.
    const int max = axis == "gpus" ? 1024 : 64;
    if (!parse_positive_int(v, i) || i > max) fail("an integer from 1 to " + std::to_string(max));
  } else if (axis == "gpu_model") {
    if (v.empty()) fail("a GPU catalog name");
  } else if (axis == "interconnect") {
    if (v != "pcie" && v != "nvlink" && v != "nvswitch") fail("pcie, nvlink or nvswitch");
  } else if (axis == "pcie_generation") {
    if (v != "pcie3" && v != "pcie4" && v != "pcie5") fail("pcie3, pcie4 or pcie5");
  } else if (axis == "peer_access") {
    if (v != "on" && v != "off") fail("on or off");
  } else if (axis == "host_link_bandwidth" || axis.rfind("link_bandwidth.", 0) == 0) {
    try {
      if (sim::parse_bandwidth(v).bytes_per_s <= 0) fail("a positive bandwidth");
    } catch (const InputError& e) {
      fail(std::string("a bandwidth such as \"16 GB/s\" (") + e.what() + ")");
    }
  } else if (axis == "gpu_memory") {
    try {
      if (sim::parse_bytes(v).v <= 0) fail("a positive size");
    } catch (const InputError& e) {
      fail(std::string("a size such as \"16 GiB\" (") + e.what() + ")");
    }
  } else if (axis.rfind("link_scale.", 0) == 0) {
    if (!parse_positive_double(v, d) || d < 1e-6 || d > 1e6)
      fail("a factor from 1e-6 to 1e6 such as 0.5 or 2");
  }
}

std::string normalize_bool(const std::string& v) {
  if (v == "true" || v == "yes" || v == "on") return "on";
  if (v == "false" || v == "no" || v == "off") return "off";
  return v;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string csv_escape(const std::string& f) {
  std::string s = f;
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"') q += '"';
    q += ch;
  }
  return q + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string s;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ',';
    s += csv_escape(fields[i]);
  }
  return s;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

const std::vector<std::string> kResultColumns = {"step_time_s",
                                                 "oom",
                                                 "unreachable",
                                                 "peak_memory_bytes",
                                                 "peak_memory_device",
                                                 "busiest_device",
                                                 "busiest_utilization",
                                                 "most_loaded_link",
                                                 "most_loaded_link_busy",
                                                 "most_loaded_link_bytes",
                                                 "chosen",
                                                 "error"};

/// Rows already known: key -> full line, plus the order they were read in.
struct KnownRows {
  std::map<std::string, std::string> by_key;
  std::vector<std::string> order;
  void add(const std::string& key, const std::string& line) {
    if (by_key.emplace(key, line).second) order.push_back(key);
  }
};

/// A row's result columns as csv_row writes them: a row with an error has empty numbers, any other
/// a finite non-negative step time, 0/1 flags and counts; anything else (a journal edited or
/// damaged on disk) would be copied into the final CSV, so it is an input error.
void check_result_fields(const std::vector<std::string>& f, const std::vector<std::string>& header,
                         const std::string& path, std::size_t line_no) {
  const std::size_t r = header.size() - kResultColumns.size();
  const bool ok = f.back().empty();
  auto bad = [&](std::size_t c, const std::string& what) {
    throw InputError(path, "line " + std::to_string(line_no) + ", column " + header[c],
                     what + " as placesim writes it, got \"" + sim::printable(f[c]) +
                         "\"; delete the file to evaluate the sweep again");
  };
  auto number = [&](std::size_t c, bool integer) {
    const std::string& v = f[c];
    if (v.empty() || v.size() > 32 || v.find_first_not_of("0123456789.") != std::string::npos ||
        (integer && v.find('.') != std::string::npos) || v.front() == '.' ||
        std::count(v.begin(), v.end(), '.') > 1)
      bad(c, integer ? "a non-negative integer" : "a finite non-negative number");
  };
  if (!ok) {
    for (std::size_t c : {r, r + 1, r + 2, r + 3, r + 6, r + 8, r + 9})
      if (!f[c].empty()) bad(c, "an empty field in a row with an error");
    return;
  }
  number(r, false);
  for (std::size_t c : {r + 1, r + 2})
    if (f[c] != "0" && f[c] != "1") bad(c, "0 or 1");
  number(r + 3, true);
  number(r + 6, false);
  if (!f[r + 7].empty()) {
    number(r + 8, false);
    number(r + 9, true);
  } else if (!f[r + 8].empty() || !f[r + 9].empty()) {
    bad(r + 8, "an empty field when no link is named");
  }
}

/// Reads a CSV (or journal) written by this code. A missing file is empty; a header that differs
/// is an error; a last line cut short by an interruption (no newline, wrong field count) is
/// dropped.
void read_rows(const std::string& path, const std::vector<std::string>& header,
               std::size_t key_columns, bool drop_errors, KnownRows& rows) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  const std::string content = sim::read_text_file(path);  // InputError for a directory
  std::size_t pos = 0;
  std::size_t line_no = 0;
  const std::string expected_header = csv_line(header);
  while (pos < content.size()) {
    const std::size_t nl = content.find('\n', pos);
    if (nl == std::string::npos) break;  // unterminated: interrupted while writing
    std::string line = content.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line_no == 1) {
      if (line != expected_header)
        throw InputError(path, "line 1",
                         "the columns of this sweep (" + expected_header +
                             "); the file belongs to another spec: pick another -o or delete it, "
                             "got \"" +
                             line + "\"");
      continue;
    }
    auto fields = split_csv_line(line);
    if (!fields || fields->size() != header.size()) continue;
    check_result_fields(*fields, header, path, line_no);
    if (drop_errors && !fields->back().empty()) continue;
    std::vector<std::string> key(fields->begin(), fields->begin() + key_columns);
    rows.add(csv_line(key), line);
  }
}

void write_atomic(const std::string& path, const std::string& text) {
  sim::write_file_atomic(path, text);  // "<path>.tmp.<pid>", a killed run's leftover removed
}

/// Progress bar with ETA; redraws in place on a terminal, prints a line every few seconds
/// otherwise (logs stay short).
class Progress {
 public:
  Progress(std::ostream* out, std::size_t total, std::size_t already)
      : out_(out),
        total_(total),
        done_(already),
        start_done_(already),
        start_(std::chrono::steady_clock::now()),
        tty_(isatty(STDERR_FILENO) != 0) {}

  void advance(std::size_t n) {
    done_ += n;
    if (!out_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_print = std::chrono::duration<double>(now - last_print_).count();
    if (done_ < total_ && since_print < (tty_ ? 0.2 : 5.0)) return;
    last_print_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const std::size_t fresh = done_ - start_done_;
    const double eta =
        fresh ? elapsed / static_cast<double>(fresh) * static_cast<double>(total_ - done_) : 0.0;
    const int width = 30;
    const int filled = total_ ? static_cast<int>(width * done_ / total_) : width;
    std::ostringstream line;
    line << "[" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done_
         << "/" << total_ << " points, " << fixed(elapsed, 1) << " s elapsed, ETA " << fixed(eta, 1)
         << " s";
    *out_ << (tty_ ? "\r" : "") << line.str() << (tty_ && done_ < total_ ? "" : "\n") << std::flush;
  }

 private:
  std::ostream* out_;
  std::size_t total_, done_, start_done_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_{};
  bool tty_;
};

std::string encode_results(const std::vector<std::pair<std::size_t, std::string>>& rows) {
  std::string s;
  for (const auto& [i, line] : rows) s += std::to_string(i) + "\t" + line + "\n";
  return s;
}

std::vector<std::pair<std::size_t, std::string>> decode_results(const std::string& s) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::istringstream is(s);
  std::string line;
  while (std::getline(is, line)) {
    const auto tab = line.find('\t');
    out.emplace_back(std::stoull(line.substr(0, tab)), line.substr(tab + 1));
  }
  return out;
}

}  // namespace

std::vector<std::string> sweep_axis_names() {
  std::vector<std::string> v = kPlainAxes;
  v.insert(v.end(), kPrefixAxes.begin(), kPrefixAxes.end());
  return v;
}

std::vector<std::string> SweepPoint::key_fields() const {
  std::vector<std::string> k;
  for (const auto& [axis, value] : axis_values) k.push_back(value);
  k.push_back(workload_label);
  k.push_back(method_label);
  return k;
}

std::string SweepPoint::key() const {
  return csv_line(key_fields());
}

SweepSpec load_sweep_spec(const std::string& path) {
  return parse_sweep_spec(sim::read_text_file(path), path);
}

namespace {
SweepSpec parse_sweep_spec_unchecked(const std::string& yaml_text, const std::string& origin);
}  // namespace

SweepSpec parse_sweep_spec(const std::string& yaml_text, const std::string& origin) {
  try {
    return parse_sweep_spec_unchecked(yaml_text, origin);
  } catch (const YAML::Exception& e) {
    // A key or value of the wrong YAML type (a list used as a key, a map as a name).
    throw InputError(origin, "line " + std::to_string(e.mark.line + 1),
                     "a well-formed sweep spec (" + e.msg + ")");
  }
}

namespace {
YAML::Node load_root(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError(origin, "line " + std::to_string(e.mark.line + 1),
                     "valid YAML (" + e.msg + ")");
  }
  if (!root.IsMap())
    throw InputError(origin, "", "a YAML mapping with base, axes, workloads, methods");
  static const std::set<std::string> kTop = {"name",   "question",  "base",    "cluster", "axes",
                                             "points", "workloads", "methods", "plot"};
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (!kTop.count(k))
      throw InputError(
          origin, k,
          "one of name, question, base (or cluster), axes, points, workloads, methods, plot");
  }
  return root;
}

// `base:` (or `cluster:`): a cluster name, or {cluster: NAME} or {template: T, params...}.
SweepBase parse_base(const YAML::Node& root, const std::string& origin) {
  if (root["base"] && root["cluster"])
    throw InputError(origin, "cluster", "either base or cluster, not both");
  const YAML::Node base = root["base"] ? root["base"] : root["cluster"];
  if (!base) throw InputError(origin, "base", "a base cluster (built-in name, file, or template)");
  SweepBase out;
  if (base.IsScalar()) {
    out.cluster = base.Scalar();
    return out;
  }
  if (!base.IsMap())
    throw InputError(origin, "base", "a cluster name or a mapping with cluster or template");
  for (const auto& kv : base) {
    const std::string k = kv.first.as<std::string>();
    const std::string v = scalar(kv.second, origin, "base." + k);
    if (k == "template")
      out.template_name = v;
    else if (k == "cluster")
      out.cluster = v;
    else
      out.params[k] = k == "peer_access" ? normalize_bool(v) : v;
  }
  if (out.template_name.empty() == out.cluster.empty())
    throw InputError(origin, "base", "exactly one of base.cluster or base.template");
  if (!out.cluster.empty() && !out.params.empty())
    throw InputError(origin, "base." + out.params.begin()->first,
                     "no template parameters with base.cluster");
  return out;
}

// `axes:` as written: {name: [values], ...} or [{name: N, values: [...]}, ...].
std::vector<std::pair<std::string, YAML::Node>> axis_entries(const YAML::Node& axes_node,
                                                             const std::string& origin) {
  std::vector<std::pair<std::string, YAML::Node>> axes;
  if (axes_node.IsMap()) {
    for (const auto& kv : axes_node) axes.emplace_back(kv.first.as<std::string>(), kv.second);
  } else if (axes_node.IsSequence()) {
    for (std::size_t i = 0; i < axes_node.size(); ++i) {
      const YAML::Node& n = axes_node[i];
      if (!n.IsMap() || !n["name"] || !n["values"] || n.size() != 2)
        throw InputError(origin, "axes[" + std::to_string(i) + "]",
                         "a mapping {name: AXIS, values: [...]}");
      axes.emplace_back(scalar(n["name"], origin, "axes[" + std::to_string(i) + "].name"),
                        n["values"]);
    }
  } else {
    throw InputError(origin, "axes", "a mapping from axis name to a list of values");
  }
  return axes;
}

std::vector<SweepAxis> parse_axes(const YAML::Node& axes_node, const std::string& origin) {
  std::vector<SweepAxis> out;
  for (const auto& [name, values] : axis_entries(axes_node, origin)) {
    SweepAxis a;
    const std::string key = "axes." + name;
    a.name = canonical_axis(name);
    for (const auto& prev : out)
      if (prev.name == a.name)
        throw InputError(origin, key, "each axis once, got " + a.name + " twice");
    if (!is_known_axis(a.name))
      throw InputError(origin, key,
                       "an axis among " + join(sweep_axis_names(), ", ") +
                           " (prefixes take a link kind, e.g. link_scale.pcie)");
    if (!values.IsSequence() || values.size() == 0)
      throw InputError(origin, key, "a non-empty list of values");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::string v = scalar(values[i], origin, key + "[" + std::to_string(i) + "]");
      if (a.name == "peer_access") v = normalize_bool(v);
      check_axis_value(a.name, v, origin, key + "[" + std::to_string(i) + "]");
      if (!seen.insert(v).second)
        throw InputError(origin, key + "[" + std::to_string(i) + "]",
                         "distinct values, got \"" + v + "\" twice");
      a.values.push_back(v);
    }
    out.push_back(std::move(a));
  }
  return out;
}

// `points:`: explicit points instead of the grid, each a value for every declared axis.
std::vector<std::map<std::string, std::string>> parse_points(const YAML::Node& pts,
                                                             const std::vector<SweepAxis>& axes,
                                                             const std::string& origin) {
  if (!pts.IsSequence() || pts.size() == 0)
    throw InputError(origin, "points", "a non-empty list of mappings axis -> value");
  if (axes.empty())
    throw InputError(origin, "points", "an axes section declaring the axes the points use");
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string key = "points[" + std::to_string(i) + "]";
    if (!pts[i].IsMap()) throw InputError(origin, key, "a mapping axis -> value");
    std::map<std::string, std::string> p;
    for (const auto& kv : pts[i]) {
      const std::string axis = canonical_axis(kv.first.as<std::string>());
      if (std::none_of(axes.begin(), axes.end(),
                       [&](const SweepAxis& a) { return a.name == axis; }))
        throw InputError(origin, key + "." + axis, "an axis declared under axes");
      std::string v = scalar(kv.second, origin, key + "." + axis);
      if (axis == "peer_access") v = normalize_bool(v);
      check_axis_value(axis, v, origin, key + "." + axis);
      p[axis] = v;
    }
    for (const auto& a : axes)
      if (!p.count(a.name)) throw InputError(origin, key, "a value for axis " + a.name);
    out.push_back(std::move(p));
  }
  return out;
}

// One entry of `workloads:`: a name, or {graph, options, parallel, label}.
SweepWorkload parse_workload(const YAML::Node& n, const std::string& origin,
                             const std::string& key) {
  SweepWorkload w;
  std::string written_parallel;  // the label shows p2p=off too
  if (n.IsScalar()) {
    w.graph = n.Scalar();
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string k = kv.first.as<std::string>();
      if (k == "options" && kv.second.IsMap()) {
        // {layers: 4, batch: 64} is the same as "layers=4,batch=64".
        for (const auto& o : kv.second)
          w.options += (w.options.empty() ? "" : ",") + o.first.as<std::string>() + "=" +
                       scalar(o.second, origin, key + ".options." + o.first.as<std::string>());
        continue;
      }
      const std::string v = scalar(kv.second, origin, key + "." + k);
      if (k == "graph" || k == "name" || k == "workload")
        w.graph = v;
      else if (k == "options")
        w.options = v;
      else if (k == "label")
        w.label = v;
      else if (k == "parallel") {
        // Checked here; a sweep simulates one graph per point, not accumulate's two. p2p=on|off
        // (NCCL_P2P_DISABLE) is taken out first, as simulate does; the evaluator applies it.
        std::string layout = v;
        w.p2p = models::take_p2p(layout, origin + ": " + key + ".parallel");
        if (layout.empty())
          throw InputError(origin, key + ".parallel",
                           "a layout besides p2p (\"dp=all,p2p=off\"), got \"" + v + "\"");
        if (models::parse_parallel(layout, origin + ": " + key + ".parallel").accumulate > 1)
          throw InputError(
              origin, key + ".parallel",
              "no accumulate in a sweep (simulate --parallel takes it), got \"" + v + "\"");
        w.parallel = layout;
        written_parallel = v;
      } else
        throw InputError(origin, key + "." + k, "graph, options, parallel or label");
    }
  } else {
    throw InputError(origin, key, "a workload name or a mapping {graph, options, label}");
  }
  if (w.graph.empty()) throw InputError(origin, key + ".graph", "a graph name or file");
  if (w.label.empty()) {
    w.label = w.options.empty() ? w.graph : w.graph + "(" + w.options + ")";
    if (!w.parallel.empty()) w.label += "[" + written_parallel + "]";
  }
  return w;
}

std::vector<SweepWorkload> parse_workloads(const YAML::Node& wl, const std::string& origin) {
  if (!wl || !wl.IsSequence() || wl.size() == 0)
    throw InputError(origin, "workloads",
                     "a non-empty list of workloads (name or {graph, options, label})");
  std::vector<SweepWorkload> out;
  std::set<std::string> labels;
  for (std::size_t i = 0; i < wl.size(); ++i) {
    const std::string key = "workloads[" + std::to_string(i) + "]";
    SweepWorkload w = parse_workload(wl[i], origin, key);
    if (!labels.insert(w.label).second)
      throw InputError(origin, key, "distinct workload labels, got \"" + w.label + "\" twice");
    out.push_back(std::move(w));
  }
  return out;
}

// One entry of `methods:`: a method name, or {best_of: [name, ...]}.
SweepMethod parse_method(const YAML::Node& n, const std::string& origin, const std::string& key) {
  SweepMethod m;
  if (n.IsScalar()) {
    m.candidates = {n.Scalar()};
    m.label = n.Scalar();
  } else if (n.IsMap() && n.size() == 1 && (n["best_of"] || n["best-of"])) {
    const YAML::Node c = n["best_of"] ? n["best_of"] : n["best-of"];
    if (!c.IsSequence() || c.size() < 2)
      throw InputError(origin, key + ".best_of", "a list of at least two baselines");
    for (std::size_t j = 0; j < c.size(); ++j)
      m.candidates.push_back(scalar(c[j], origin, key + ".best_of[" + std::to_string(j) + "]"));
    m.label = "best-of(" + join(m.candidates, "|") + ")";
  } else {
    throw InputError(origin, key, "a baseline name or {best_of: [baseline, ...]}");
  }
  for (const auto& c : m.candidates)
    if (c.empty()) throw InputError(origin, key, "non-empty method names");
  return m;
}

std::vector<SweepMethod> parse_methods(const YAML::Node& ms, const std::string& origin) {
  if (!ms || !ms.IsSequence() || ms.size() == 0)
    throw InputError(origin, "methods", "a non-empty list of placement methods");
  std::vector<SweepMethod> out;
  std::set<std::string> labels;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const std::string key = "methods[" + std::to_string(i) + "]";
    SweepMethod m = parse_method(ms[i], origin, key);
    if (!labels.insert(m.label).second)
      throw InputError(origin, key, "distinct methods, got \"" + m.label + "\" twice");
    out.push_back(std::move(m));
  }
  return out;
}

// `plot: {x: AXIS}`: the axis along the line charts.
std::string parse_plot(const YAML::Node& plot, const std::vector<SweepAxis>& axes,
                       const std::string& origin) {
  if (!plot.IsMap() || plot.size() != 1 || !plot["x"])
    throw InputError(origin, "plot", "a mapping {x: AXIS}");
  std::string x = scalar(plot["x"], origin, "plot.x");
  if (std::none_of(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.name == x; }))
    throw InputError(origin, "plot.x", "one of the axes, got \"" + x + "\"");
  return x;
}

// One function per top-level key, called in the order the checks always ran.
SweepSpec parse_sweep_spec_unchecked(const std::string& yaml_text, const std::string& origin) {
  const YAML::Node root = load_root(yaml_text, origin);
  SweepSpec spec;
  spec.origin = origin;
  if (root["name"]) spec.name = scalar(root["name"], origin, "name");
  if (root["question"]) spec.question = scalar(root["question"], origin, "question");
  spec.base = parse_base(root, origin);
  if (const YAML::Node axes = root["axes"]) spec.axes = parse_axes(axes, origin);
  if (const YAML::Node pts = root["points"]) spec.points = parse_points(pts, spec.axes, origin);
  spec.workloads = parse_workloads(root["workloads"], origin);
  spec.methods = parse_methods(root["methods"], origin);
  if (const YAML::Node plot = root["plot"]) spec.plot_x = parse_plot(plot, spec.axes, origin);
  return spec;
}
}  // namespace

std::vector<SweepPoint> expand_points(const SweepSpec& spec) {
  // The grid's size is a product: checked before anything is allocated for it.
  constexpr double kMaxPoints = 1e6;
  double grid = spec.points.empty() ? 1.0 : static_cast<double>(spec.points.size());
  if (spec.points.empty())
    for (const auto& a : spec.axes) grid *= static_cast<double>(a.values.size());
  grid *= static_cast<double>(spec.workloads.size()) * static_cast<double>(spec.methods.size());
  if (grid > kMaxPoints)
    throw InputError(spec.origin, spec.points.empty() ? "axes" : "points",
                     "at most 1000000 points (axes x workloads x methods), got " + fixed(grid, 0));
  std::vector<std::vector<std::pair<std::string, std::string>>> combos;
  if (!spec.points.empty()) {
    for (const auto& p : spec.points) {
      std::vector<std::pair<std::string, std::string>> c;
      for (const auto& a : spec.axes) c.emplace_back(a.name, p.at(a.name));
      combos.push_back(std::move(c));
    }
  } else {
    std::vector<std::size_t> idx(spec.axes.size(), 0);
    while (true) {
      std::vector<std::pair<std::string, std::string>> c;
      for (std::size_t a = 0; a < spec.axes.size(); ++a)
        c.emplace_back(spec.axes[a].name, spec.axes[a].values[idx[a]]);
      combos.push_back(std::move(c));
      // Odometer: the last axis varies fastest.
      std::size_t a = spec.axes.size();
      while (a > 0) {
        --a;
        if (++idx[a] < spec.axes[a].values.size()) break;
        idx[a] = 0;
        if (a == 0) {
          a = spec.axes.size() + 1;
          break;
        }
      }
      if (spec.axes.empty() || a == spec.axes.size() + 1) break;
    }
  }
  std::vector<SweepPoint> points;
  std::set<std::string> keys;
  for (const auto& c : combos)
    for (std::size_t w = 0; w < spec.workloads.size(); ++w)
      for (std::size_t m = 0; m < spec.methods.size(); ++m) {
        SweepPoint p;
        p.index = points.size();
        p.axis_values = c;
        p.workload = w;
        p.method = m;
        p.workload_label = spec.workloads[w].label;
        p.method_label = spec.methods[m].label;
        if (!keys.insert(p.key()).second)
          throw InputError(spec.origin, "points", "distinct points, got " + p.key() + " twice");
        points.push_back(std::move(p));
      }
  return points;
}

std::vector<std::string> csv_header(const SweepSpec& spec) {
  std::vector<std::string> h;
  for (const auto& a : spec.axes) h.push_back(a.name);
  h.push_back("workload");
  h.push_back("method");
  h.insert(h.end(), kResultColumns.begin(), kResultColumns.end());
  return h;
}

std::string csv_row(const SweepPoint& point, const PointResult& r) {
  std::vector<std::string> f = point.key_fields();
  const bool ok = r.error.empty();
  f.push_back(ok ? fixed(r.step_time.seconds(), 9) : "");
  f.push_back(ok ? (r.oom ? "1" : "0") : "");
  f.push_back(ok ? (r.unreachable ? "1" : "0") : "");
  f.push_back(ok ? std::to_string(r.peak_memory.v) : "");
  f.push_back(r.peak_memory_device);
  f.push_back(r.busiest_device);
  f.push_back(ok ? fixed(r.busiest_utilization, 4) : "");
  f.push_back(r.most_loaded_link);
  f.push_back(ok && !r.most_loaded_link.empty() ? fixed(r.most_loaded_link_busy, 4) : "");
  f.push_back(ok && !r.most_loaded_link.empty() ? std::to_string(r.most_loaded_link_bytes.v) : "");
  f.push_back(r.chosen);
  f.push_back(r.error);
  // The writer applies the reader's rules (check_result_fields): a result that would not read
  // back (a NaN utilization, a negative time) becomes an error row instead of a damaged CSV.
  std::vector<std::string> header(f.size() - kResultColumns.size(), "");
  header.insert(header.end(), kResultColumns.begin(), kResultColumns.end());
  try {
    check_result_fields(f, header, "<sweep result>", 0);
  } catch (const InputError& e) {
    PointResult bad;
    bad.error = std::string("result not representable in the CSV: ") + e.what();
    return csv_row(point, bad);
  }
  return csv_line(f);
}

std::optional<std::vector<std::string>> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  std::size_t i = 0;
  while (true) {
    cur.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return std::nullopt;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cur += '"';
            i += 2;
          } else {
            ++i;
            break;
          }
        } else {
          cur += line[i++];
        }
      }
      if (i < line.size() && line[i] != ',') return std::nullopt;
    } else {
      while (i < line.size() && line[i] != ',') {
        if (line[i] == '"') return std::nullopt;
        cur += line[i++];
      }
    }
    out.push_back(cur);
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return out;
}

namespace {

/// Rank 0's list of the points left to evaluate (point indices, one a line; most expensive
/// first with a cost hint), or "!" and the error that stops the sweep. `known` gets the rows
/// already in the CSV and its journal.
std::string points_left(const std::vector<SweepPoint>& points,
                        const std::vector<std::string>& header, std::size_t key_columns,
                        const std::string& csv_path, const std::string& journal_path,
                        const SweepRunOptions& options, KnownRows& known) {
  try {
    read_rows(csv_path, header, key_columns, options.retry_errors, known);
    read_rows(journal_path, header, key_columns, options.retry_errors, known);
  } catch (const InputError& e) {
    return std::string("!") + e.what();
  }
  std::vector<std::size_t> left;
  for (const auto& p : points)
    if (!known.by_key.count(p.key())) left.push_back(p.index);
  if (options.cost_hint) {
    // Most expensive first; ties keep point order. A point whose cost cannot be guessed (its
    // cluster cannot be built: its row will record the error) counts as free. Nothing may
    // escape here: the other ranks are waiting in run_sweep's broadcast.
    std::vector<double> cost(points.size(), 0.0);
    for (std::size_t i : left) {
      try {
        cost[i] = options.cost_hint(points[i]);
      } catch (const std::exception&) {
      }
    }
    std::stable_sort(left.begin(), left.end(),
                     [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  }
  std::ostringstream os;
  for (std::size_t i : left) os << i << "\n";
  return os.str();
}

/// One rank's part of run_sweep once every rank knows what is left (`todo`): the evaluation on
/// this rank's threads, rank 0's journal and work queue, and the final CSV.
class SweepRun {
 public:
  SweepRun(const std::vector<SweepPoint>& points, const std::vector<std::size_t>& todo,
           const PointEvaluator& evaluate, const Comm& comm, const SweepRunOptions& options,
           std::size_t skipped)
      : points_(points),
        todo_(todo),
        evaluate_(evaluate),
        comm_(comm),
        root_(comm.rank() == 0),
        progress_(root_ ? options.progress : nullptr, points.size(), skipped),
        arena_(options.threads > 0 ? options.threads : tbb::task_arena::automatic),
        threads_(std::max(1, arena_.max_concurrency())),
        // The positions in `todo` this run may evaluate: all, or the first `stop_after` (tests
        // of resume).
        to_hand_out_(options.stop_after ? std::min(options.stop_after, todo.size()) : todo.size()) {
  }

  /// Rank 0: the journal, rows in the order they finish, each flushed, so a killed run loses
  /// nothing.
  void open_journal(const std::string& journal_path, const std::vector<std::string>& header) {
    const bool fresh = !std::filesystem::exists(journal_path);
    journal_.open(journal_path, std::ios::binary | std::ios::app);
    if (!journal_) throw InputError(journal_path, "", "a writable path next to the sweep CSV");
    if (fresh) journal_ << csv_line(header) << "\n" << std::flush;
  }

  /// Evaluates this rank's share; returns the number of points evaluated (all ranks' on rank 0).
  std::size_t run() {
    if (comm_.size() == 1) {
      evaluate_range(0, to_hand_out_);
      return to_hand_out_;
    }
    if (root_) {
      serve_queue();
      if (fresh_rows_.size() != to_hand_out_)
        throw std::logic_error("run_sweep: " + std::to_string(fresh_rows_.size()) + " rows for " +
                               std::to_string(to_hand_out_) + " points handed out");
      return to_hand_out_;
    }
    return work_for_root();
  }

  [[nodiscard]] bool stopped() const { return to_hand_out_ < todo_.size(); }

  /// Rank 0: the CSV in point order, from this run's rows and those known before.
  void write_csv(const std::string& csv_path, const std::string& journal_path,
                 const std::vector<std::string>& header, const KnownRows& known) {
    journal_.close();
    std::string text = csv_line(header) + "\n";
    std::set<std::string> written;
    for (const auto& p : points_) {
      if (auto it = fresh_rows_.find(p.index); it != fresh_rows_.end()) {
        text += it->second + "\n";
      } else {
        text += known.by_key.at(p.key()) + "\n";
      }
      written.insert(p.key());
    }
    // Rows of points the spec no longer lists (an axis value removed) are kept, after the rest.
    for (const auto& k : known.order)
      if (!written.count(k)) text += known.by_key.at(k) + "\n";
    write_atomic(csv_path, text);
    std::filesystem::remove(journal_path);
  }

 private:
  // Evaluates todo[begin, end) on this rank's threads; on rank 0 each row is journaled as it
  // finishes. Returns the rows in position order.
  std::vector<std::string> evaluate_range(std::size_t begin, std::size_t end) {
    std::vector<std::string> lines(end - begin);
    arena_.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(begin, end, 1),
          [&](const tbb::blocked_range<std::size_t>& r) {
            for (std::size_t k = r.begin(); k != r.end(); ++k) {
              const SweepPoint& p = points_[todo_[k]];
              PointResult res;
              try {
                res = evaluate_(p);
              } catch (const InputError& e) {
                res = PointResult{};
                res.error = e.what();
              }
              lines[k - begin] = csv_row(p, res);
              if (root_) {
                const std::lock_guard lock(journal_mutex_);
                journal_ << lines[k - begin] << "\n" << std::flush;
                fresh_rows_[todo_[k]] = lines[k - begin];
                progress_.advance(1);
              }
            }
          },
          tbb::simple_partitioner());
    });
    return lines;
  }

  // The next chunk of the queue: guided, a quarter of what is left per rank, at least
  // `at_least` points; empty when all is handed out.
  std::pair<std::size_t, std::size_t> take(std::size_t at_least) {
    const std::lock_guard lock(queue_mutex_);
    const auto size = static_cast<std::size_t>(comm_.size());
    const std::size_t left = to_hand_out_ - next_;
    const std::size_t want = (left + 4 * size - 1) / (4 * size);
    const std::size_t n = std::min(left, std::max(want, at_least));
    next_ += n;
    return {next_ - n, next_};
  }

  // Rank 0 of several. The work queue. Points differ in cost (GPU count, method: HEFT costs 2.3x
  // the expert on bench_throughput.yaml), so a fixed deal leaves one rank idle at the end of
  // every round of collectives (80% efficiency on 2 ranks with 4 rounds, 66-69% with 20). Here a
  // rank asks for more when it is done: guided chunks, a quarter of what is left per rank and at
  // least one point per thread, so requests are few at first and the last chunks are single
  // points. The main thread only serves requests (waiting politely between them, no core spent)
  // while a second thread evaluates rank 0's own chunks, so a request never waits for a chunk.
  void serve_queue() {
    std::exception_ptr local_error;
    std::thread local([&] {
      try {
        const auto mine = static_cast<std::size_t>(threads_);
        for (auto [b, e] = take(mine); b < e; std::tie(b, e) = take(mine)) evaluate_range(b, e);
      } catch (...) {
        local_error = std::current_exception();
      }
    });
    try {
      for (int working = comm_.size() - 1; working > 0;)
        if (!answer_request()) --working;
    } catch (...) {
      // Stop handing out chunks, so that rank 0's own thread ends with its current one.
      {
        const std::lock_guard lock(queue_mutex_);
        next_ = to_hand_out_;
      }
      local.join();
      throw;
    }
    local.join();
    if (local_error) std::rethrow_exception(local_error);
  }

  // Rank 0: one request, "R<threads>\n<rows of the previous chunk>"; journals the rows and
  // answers with the next chunk, or "D" (done; returns false).
  bool answer_request() {
    auto [from, message] = comm_.receive();
    const std::size_t eol = message.find('\n');
    if (message.empty() || message[0] != 'R' || eol == std::string::npos)
      throw std::logic_error("run_sweep: unexpected message from rank " + std::to_string(from));
    const std::size_t their_threads = std::stoull(message.substr(1, eol - 1));
    {
      const std::lock_guard lock(journal_mutex_);
      for (auto& [i, line] : decode_results(message.substr(eol + 1))) {
        journal_ << line << "\n";
        fresh_rows_[i] = std::move(line);
        progress_.advance(1);
      }
      journal_.flush();
    }
    const auto [b, e] = take(std::max<std::size_t>(1, their_threads));
    if (b == e) {
      comm_.send(from, "D");
      return false;
    }
    comm_.send(from, "C" + std::to_string(b) + " " + std::to_string(e));
    return true;
  }

  // Another rank: asks rank 0 for chunks (sending the rows of the last one) until it says done.
  std::size_t work_for_root() {
    std::size_t evaluated = 0;
    std::vector<std::pair<std::size_t, std::string>> rows;
    for (;;) {
      comm_.send(0, "R" + std::to_string(threads_) + "\n" + encode_results(rows));
      rows.clear();
      const auto [from, message] = comm_.receive();
      if (message == "D") break;
      std::size_t b = 0, e = 0;
      std::istringstream is(message.substr(1));
      if (from != 0 || message.empty() || message[0] != 'C' || !(is >> b >> e) || b > e ||
          e > todo_.size())
        throw std::logic_error("run_sweep: unexpected message from rank " + std::to_string(from));
      const std::vector<std::string> lines = evaluate_range(b, e);
      for (std::size_t k = b; k < e; ++k) rows.emplace_back(todo_[k], lines[k - b]);
      evaluated += e - b;
    }
    return evaluated;
  }

  const std::vector<SweepPoint>& points_;
  const std::vector<std::size_t>& todo_;
  const PointEvaluator& evaluate_;
  const Comm& comm_;
  const bool root_;
  std::ofstream journal_;
  std::mutex journal_mutex_;
  std::map<std::size_t, std::string> fresh_rows_;  // point index -> line, on rank 0
  Progress progress_;
  tbb::task_arena arena_;
  const int threads_;
  const std::size_t to_hand_out_;
  std::mutex queue_mutex_;
  std::size_t next_ = 0;
};

}  // namespace

SweepRunStats run_sweep(const SweepSpec& spec, const PointEvaluator& evaluate,
                        const std::string& csv_path, const SweepRunOptions& options) {
  const Comm single;
  const Comm& comm = options.comm ? *options.comm : single;
  // Ranks start at different times (each loads LibTorch and builds its graphs first): without
  // this barrier the sweep's time would include waiting for the slowest rank's start-up, which
  // the process's own wall time already reports. A gather makes rank 0, which reports, wait.
  if (comm.size() > 1) (void)comm.gather(std::string());
  const auto t0 = std::chrono::steady_clock::now();
  const bool root = comm.rank() == 0;

  const std::vector<SweepPoint> points = expand_points(spec);
  const std::vector<std::string> header = csv_header(spec);
  const std::size_t key_columns = spec.axes.size() + 2;
  const std::string journal_path = csv_path + ".partial";

  SweepRunStats stats;
  stats.total = points.size();

  // Rank 0 decides what is left; the others learn it from the broadcast (they may not see the
  // same file system).
  KnownRows known;
  std::string todo_text;
  if (root)
    todo_text = points_left(points, header, key_columns, csv_path, journal_path, options, known);
  todo_text = comm.broadcast(todo_text);
  if (!todo_text.empty() && todo_text[0] == '!') throw InputError(todo_text.substr(1));
  std::vector<std::size_t> todo;
  {
    std::istringstream is(todo_text);
    std::size_t i = 0;
    while (is >> i) todo.push_back(i);
  }
  stats.skipped = points.size() - todo.size();

  SweepRun run(points, todo, evaluate, comm, options, stats.skipped);
  if (root) run.open_journal(journal_path, header);
  stats.evaluated = run.run();
  stats.completed = !run.stopped() || stats.evaluated + stats.skipped >= stats.total;
  if (root && stats.completed) run.write_csv(csv_path, journal_path, header, known);
  stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace placesim::policy

// Topology sweeps: a spec (base cluster, axes, workloads, placement methods) expands into an
// ordered list of points; each point is evaluated by an injected evaluator (the real one builds
// the transformed cluster, the graph and the placement, then calls sim::simulate) and becomes
// one CSV row. Rows are journaled as points finish, so an interrupted sweep resumes where it
// stopped; the final CSV is written atomically in point order, identical for any thread or rank
// count.
//
//   const SweepSpec spec = load_sweep_spec("scenarios/sweeps/nmt_nvlink_vs_pcie.yaml");
//   const std::vector<SweepPoint> points = expand_points(spec);
//   SimulationEvaluator eval(spec);                              // sweep_eval.cpp
//   SweepRunOptions opt;  opt.threads = 2;
//   run_sweep(spec, [&](const SweepPoint& p) { return eval(p); }, "out.csv", opt);
//
// The spec format is in docs/sweeps.md.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/comm/comm.hpp"
#include "sim/cluster.hpp"
#include "sim/units.hpp"

namespace placesim::policy {

/// One axis of the grid: its name (see docs/sweeps.md for the accepted names, e.g. "gpus",
/// "gpu_model", "link_scale.pcie", "peer_access") and its values as written in the spec.
struct SweepAxis {
  std::string name;
  std::vector<std::string> values;
};

struct SweepWorkload {
  std::string label;    ///< CSV value; the graph name unless the spec names it
  std::string graph;    ///< models::load_graph name or path
  std::string options;  ///< models::load_graph options ("layers=4,batch=64")
  /// Data-parallel layout ("dp=8", models/parallel.hpp): the graph is replicated onto the first
  /// dp GPUs of each point's cluster with DDP's gradient all-reduce, and that placement is used
  /// (the point's method is not). Empty: the graph as it is.
  std::string parallel;
  /// `p2p=off` in the spec's `parallel` (taken out of `parallel` above): NCCL_P2P_DISABLE=1, the
  /// point's cluster copy loses every GPU's peer access (models/nccl_p2p.hpp), as in simulate.
  bool p2p = true;
};

/// A placement strategy: one baseline, or the best (lowest step time, fitting in memory first)
/// of several, reported with the one that won.
struct SweepMethod {
  std::string label;                    ///< CSV value: "heft" or "best-of(scotch|metis|heft)"
  std::vector<std::string> candidates;  ///< one entry for a plain baseline
};

/// How the base cluster is made: a built-in name or file (`cluster`), or a generated template
/// (`template_name` non-empty) with its parameters.
struct SweepBase {
  std::string cluster;                        ///< load_cluster() argument when no template
  std::string template_name;                  ///< "pcie-tree", "nvlink-mesh", "nvswitch"
  std::map<std::string, std::string> params;  ///< template parameters as written
};

struct SweepSpec {
  std::string origin;  ///< the file, for error messages
  std::string name;
  std::string question;
  SweepBase base;
  std::vector<SweepAxis> axes;  ///< grid axes in file order (last varies fastest)
  /// Explicit points instead of a full grid: each maps every axis name to a value.
  std::vector<std::map<std::string, std::string>> points;
  std::vector<SweepWorkload> workloads;
  std::vector<SweepMethod> methods;
  std::string plot_x;  ///< axis along the line charts; empty: the last one
};

/// One point: a value for every axis, a workload and a method. `index` is its position in
/// the expansion; `key()` identifies it in a CSV (resume matches keys, not indices).
struct SweepPoint {
  std::size_t index = 0;
  std::vector<std::pair<std::string, std::string>> axis_values;  ///< in axis order
  std::size_t workload = 0;                                      ///< index into spec.workloads
  std::size_t method = 0;                                        ///< index into spec.methods
  std::string workload_label;
  std::string method_label;
  [[nodiscard]] std::vector<std::string> key_fields() const;
  [[nodiscard]] std::string key() const;
};

/// What a point produced. `error` is non-empty when the point could not be evaluated (for
/// example a method that cannot place the graph on that cluster); such rows are kept.
struct PointResult {
  sim::Duration step_time;
  bool oom = false;
  bool unreachable = false;
  sim::Bytes peak_memory;  ///< largest per-device peak
  std::string peak_memory_device;
  std::string busiest_device;  ///< highest compute utilization
  double busiest_utilization = 0.0;
  std::string most_loaded_link;        ///< longest busy time; empty when no copy ran
  double most_loaded_link_busy = 0.0;  ///< busy time / step time
  sim::Bytes most_loaded_link_bytes;
  std::string chosen;  ///< the winning candidate of a best-of method
  std::string error;
};

using PointEvaluator = std::function<PointResult(const SweepPoint&)>;

/// Reads a spec file. Throws sim::InputError naming the file and key for anything malformed
/// (unknown axis, empty value list, value that does not parse, points naming unknown axes).
SweepSpec load_sweep_spec(const std::string& path);
SweepSpec parse_sweep_spec(const std::string& yaml_text, const std::string& origin);

/// The points in their deterministic order: grid (or listed points) in axis order, last axis
/// fastest; within a grid point every workload, within a workload every method.
std::vector<SweepPoint> expand_points(const SweepSpec& spec);

/// The CSV header: axis names, workload, method, then the result columns.
std::vector<std::string> csv_header(const SweepSpec& spec);
/// One CSV line (without newline) for a point and its result.
std::string csv_row(const SweepPoint& point, const PointResult& result);
/// Splits one CSV line (RFC 4180 quoting, no embedded newlines). Returns nullopt if malformed.
std::optional<std::vector<std::string>> split_csv_line(const std::string& line);

struct SweepRunOptions {
  int threads = 0;                   ///< oneTBB threads per rank; <= 0: oneTBB's default
  const Comm* comm = nullptr;        ///< nullptr: one process (policy/comm/comm.hpp)
  std::ostream* progress = nullptr;  ///< progress bar with ETA (rank 0 only); nullptr: none
  /// Stop after this many newly evaluated points without writing the final CSV, as if the run
  /// had been killed (tests of resume). 0: no limit.
  std::size_t stop_after = 0;
  /// Evaluate again the points whose rows carry an error (e.g. after installing what was missing).
  bool retry_errors = false;
  /// A guess of each point's relative cost (any unit). When given, points are handed out most
  /// expensive first, so that a sweep ends on its cheapest points and no worker is left with a
  /// long one while the others idle (longest processing time first). The CSV does not change.
  std::function<double(const SweepPoint&)> cost_hint;
};

struct SweepRunStats {
  std::size_t total = 0;      ///< points in the expansion
  std::size_t skipped = 0;    ///< already in the CSV or its journal
  std::size_t evaluated = 0;  ///< evaluated by this run, all ranks
  double wall_s = 0.0;
  bool completed = false;  ///< the final CSV was written
};

/// Evaluates the points not yet in `csv_path` (or its journal `csv_path + ".partial"`) and
/// writes `csv_path` in point order. Every rank calls it with the same spec; on several ranks
/// rank 0 hands out chunks of the points left to do on request (a work queue: guided chunks, a
/// quarter of what is left per rank, shrinking to one point) and journals the rows that come
/// back; only rank 0 touches files. Throws sim::InputError if an existing CSV has other columns
/// than this spec's.
SweepRunStats run_sweep(const SweepSpec& spec, const PointEvaluator& evaluate,
                        const std::string& csv_path, const SweepRunOptions& options = {});

// Cluster transformations (sweep_cluster.cpp). Each returns a new cluster with routes
// recomputed by the caller (apply_axes does it).

/// The base cluster of a spec: loaded, or generated from its template.
sim::Cluster make_base_cluster(const SweepBase& base, const std::string& origin);
/// Generates a template cluster ("pcie-tree", "nvlink-mesh", "nvswitch"); see docs/sweeps.md.
sim::Cluster generate_cluster(const std::string& template_name,
                              const std::map<std::string, std::string>& params,
                              const std::string& origin);
/// Applies the axis values of a point to a base cluster (structure first, then devices, then
/// links) and recomputes routes. Throws sim::InputError for a value that cannot be applied.
sim::Cluster apply_axes(const SweepBase& base, const sim::Cluster& base_cluster,
                        const std::vector<std::pair<std::string, std::string>>& axis_values,
                        const std::string& origin);
/// N GPUs with the structure of `c`: keeps the first N, or clones GPUs (and their links) as
/// described in docs/sweeps.md.
sim::Cluster with_gpu_count(const sim::Cluster& c, int n, const std::string& origin);
/// Multiplies the bandwidth of every link whose kind starts with `kind_prefix`.
void scale_links(sim::Cluster& c, const std::string& kind_prefix, double factor);
/// Sets the bandwidth of every link whose kind starts with `kind_prefix`.
void set_link_bandwidth(sim::Cluster& c, const std::string& kind_prefix, sim::Bandwidth bw);
/// Moves every PCIe link to generation `gen` ("pcie3", "pcie4", "pcie5"), keeping its width.
void set_pcie_generation(sim::Cluster& c, const std::string& gen, const std::string& origin);
/// Sets every NVLink connection to `links` bonded links of its generation.
void set_nvlink_links(sim::Cluster& c, int links, const std::string& origin);
/// Sets the bandwidth of the host links: those touching a CPU device (its memory bus into the
/// root complex, which every staged copy and host transfer crosses).
void set_host_link_bandwidth(sim::Cluster& c, sim::Bandwidth bw);
void set_peer_access(sim::Cluster& c, bool on);
void set_gpu_memory(sim::Cluster& c, sim::Bytes capacity);

/// The distinct combinations of axis values of a spec (one per grid point or listed point,
/// whatever its workloads and methods), in expansion order. With `sample` > 0, that many of them
/// drawn without replacement by `seed` (std::mt19937_64, the same on every platform), still in
/// expansion order; all of them when the spec has no more. Each comes with its ordinal in the
/// full list, so a combination's file name does not depend on the sample (sweep_write.cpp).
struct ClusterPoint {
  std::size_t ordinal = 0;
  std::vector<std::pair<std::string, std::string>> axis_values;
};
std::vector<ClusterPoint> cluster_points(const SweepSpec& spec, std::size_t sample,
                                         std::uint64_t seed);

/// Builds the cluster of each of `cluster_points(spec, sample, seed)` (apply_axes) and writes it
/// as YAML (sim::cluster_to_yaml, temp file + rename) to `dir`/NNN_AXIS-VALUE_....yaml, creating
/// `dir`; the cluster's name is the file's stem. Nothing is written unless every cluster builds
/// (a value that cannot be applied throws sim::InputError naming the spec first). Returns the
/// paths written, in order.
std::vector<std::string> write_sweep_clusters(const SweepSpec& spec, const std::string& dir,
                                              std::size_t sample, std::uint64_t seed);

/// Whether any method of the spec is a short RL run (`rl:...`), which needs LibTorch. Throws
/// sim::InputError for a malformed one, as SimulationEvaluator does.
bool uses_rl(const SweepSpec& spec);

/// The real evaluator (sweep_eval.cpp): builds the point's cluster (cached per axis values),
/// takes the workload's graph (all loaded up front), makes the placement with make_placement
/// (the best of the candidates for a best-of method) and simulates it. Thread-safe.
class SimulationEvaluator {
 public:
  /// Loads the base cluster and every workload; throws sim::InputError naming the spec.
  explicit SimulationEvaluator(const SweepSpec& spec);
  ~SimulationEvaluator();
  SimulationEvaluator(const SimulationEvaluator&) = delete;
  SimulationEvaluator& operator=(const SimulationEvaluator&) = delete;
  [[nodiscard]] PointResult operator()(const SweepPoint& point) const;
  /// What a point costs to evaluate, roughly: the graph's ops x the cluster's devices x the
  /// method's candidates (an rl: candidate counts its iterations x 16 samples). For
  /// SweepRunOptions::cost_hint; builds (and caches) the point's cluster.
  [[nodiscard]] double cost_hint(const SweepPoint& point) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The axis names parse_sweep_spec accepts (prefixes end in '.').
std::vector<std::string> sweep_axis_names();

}  // namespace placesim::policy

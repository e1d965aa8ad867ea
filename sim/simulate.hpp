// The oracle: simulate one placed training step. A pure function over immutable values.
//
//   const Cluster c = load_cluster("paper-4gpu");
//   const Graph g = read_graph_json("nmt.json");
//   const Placement p = *builtin_placement("single-gpu", g, c);
//   const Outcome o = simulate(c, g, p);                      // default options, roofline costs
//   std::cout << o.step_time.seconds() << (o.oom ? " OOM" : "") << "\n";
//
//   BatchOracle oracle(c, g, SimOptions{}, KernelCostModel{});  // shares per-graph precomputation
//   std::vector<Outcome> r = oracle.evaluate(placements);       // oneTBB; bit-identical to serial
//
//   StepGraphBuilder b(c);            // a huge step op by op, never holding a Graph (~100 B/op)
//   for (const Op& op : generated_ops) b.add_op(op);   // inputs name earlier ops only
//   const StepGraph step = std::move(b).finish();
//   const Outcome big = simulate(step, placement);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

class TraceSink;
struct Prepared;

struct SimOptions {
  bool stop_at_first_oom = false;  ///< end the simulation at the first allocation over capacity
  bool record_critical_path = true;
  TraceSink* trace = nullptr;  ///< optional Chrome-trace sink (not thread-safe; one per simulate)
  /// Threads one simulation may use (docs/engine.md, "Parallel engine"): 0 = oneTBB's default,
  /// 1 = sequential. Results are bit-identical on any count (sim_wall_s aside).
  int threads = 0;
};

struct DeviceOutcome {
  std::string name;
  Duration busy;             ///< time any compute stream / worker was busy (union)
  double utilization = 0.0;  ///< busy / step time
  Bytes peak_memory;
  Bytes memory_capacity;  ///< the device's whole memory, reserved part included
  Bytes reserved_memory;  ///< part of it no tensor can use (DeviceSpec)
  bool oom = false;
  int ops = 0;
};

struct LinkOutcome {
  std::string name;
  Bytes bytes;    ///< bytes carried, both directions
  Duration busy;  ///< time at least one flow was active on it
};

struct OomInfo {
  DeviceId device = -1;
  std::string device_name;
  Bytes needed;    ///< peak demand of tensors + reserved memory
  Bytes capacity;  ///< the device's whole memory
  Bytes reserved;  ///< reserved memory included in `needed`
};

/// An item on the critical path: an op run or a copy.
struct PathItem {
  /// Issue: the host-side cudaMemcpyAsync of a copy segment, on its GPU's launching thread.
  enum class Kind { Op, Copy, Launch, Issue } kind = Kind::Op;
  std::string name;      ///< op name, or "<tensor> -> <device>" for a copy
  DeviceId device = -1;  ///< device of the op / destination of the copy
  SimTime start = 0, end = 0;
};

struct Outcome {
  Duration step_time;
  bool oom = false;
  bool unreachable = false;          ///< a needed copy had no route
  std::vector<OomInfo> oom_devices;  ///< every device over capacity (first = earliest)
  std::vector<DeviceOutcome> devices;
  std::vector<LinkOutcome> links;
  std::int64_t transfers = 0;  ///< copies (staged copies count their segments)
  Bytes transferred;
  std::int64_t events = 0;
  std::vector<PathItem> critical_path;
  double sim_wall_s = 0.0;  ///< wall time of simulate() itself (not deterministic)
};

/// Simulates one step. Never throws for an expected outcome (OOM, unreachable); throws
/// InputError if the placement does not fit the graph/cluster (size mismatch, constraint broken).
Outcome simulate(const Cluster& cluster, const Graph& graph, const Placement& placement,
                 const SimOptions& options = {}, const KernelCostModel& costs = {});

/// The simulation's compact, placement-independent view of one step on one cluster: per op only
/// what the engine reads (tensor bytes, CSR input/consumer/control edges, kernel and launch
/// times per device cost class, stream pin, device-kind constraint, persistent memory), about
/// 100 bytes per op, with 32-bit indices (fewer than 2^31 ops, tensors and input edges; an
/// InputError beyond). It borrows the cluster (and the graph, when built from one).
class StepGraph {
 public:
  StepGraph(const Cluster& cluster, const Graph& graph, const KernelCostModel& costs = {});
  // It borrows the cluster and the graph: a temporary would dangle, so refuse them at compile
  // time (as BatchOracle does).
  StepGraph(Cluster&&, const Graph&, const KernelCostModel& = {}) = delete;
  StepGraph(const Cluster&, Graph&&, const KernelCostModel& = {}) = delete;
  StepGraph(Cluster&&, Graph&&, const KernelCostModel& = {}) = delete;
  StepGraph(StepGraph&&) noexcept;
  StepGraph& operator=(StepGraph&&) noexcept;
  ~StepGraph();
  [[nodiscard]] int num_ops() const;
  /// Bytes held by its arrays (capacity), for memory accounting.
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  friend class StepGraphBuilder;
  friend Outcome simulate(const StepGraph&, const Placement&, const SimOptions&);
  explicit StepGraph(std::unique_ptr<Prepared> p);
  std::unique_ptr<Prepared> p_;
};

/// Builds a StepGraph op by op without a Graph, so a generator of a huge step never holds the
/// ~700 bytes per op of Ops with names and attributes. Each op's inputs and control inputs must
/// name earlier ops (ids are given in order, so id order is the topological order); ops are
/// named "op<id>" in errors, traces and the critical path. Collective ops need a Graph.
class StepGraphBuilder {
 public:
  explicit StepGraphBuilder(const Cluster& cluster, KernelCostModel costs = {});
  StepGraphBuilder(Cluster&&, KernelCostModel = {}) = delete;  // the step borrows the cluster
  ~StepGraphBuilder();
  StepGraphBuilder(const StepGraphBuilder&) = delete;
  StepGraphBuilder& operator=(const StepGraphBuilder&) = delete;
  /// Reserves for `ops` ops with `inputs` input edges in all (optional; avoids regrowth).
  void reserve(std::size_t ops, std::size_t inputs);
  /// Adds an op (its name, type, layer and group are not kept); returns its id. Throws
  /// InputError for an input that is not an earlier op's output, or a collective op.
  OpId add_op(const Op& op);
  /// Adds ops in order, as add_op one by one (same ids, same errors), pricing them in parallel
  /// on the calling oneTBB arena: the way a generator of a huge step feeds the builder.
  void add_ops(std::span<const Op> ops);
  /// A batch's prices (kernel and host ns per op and priced device), from price_ops.
  struct PricedOps {
    std::vector<std::int64_t> kernel, host;
  };
  /// Prices `ops` into `out` for add_priced_ops: const and pure, so one thread may price the
  /// next batch while another files this one (on the calling oneTBB arena, in parallel).
  void price_ops(std::span<const Op> ops, PricedOps& out) const;
  /// Files ops priced by price_ops, as add_op one by one (same ids, same errors).
  void add_priced_ops(std::span<const Op> ops, const PricedOps& priced);
  /// The generator's promise, from the next op filed on: no op reads a tensor of, or is a
  /// control successor of, an op below `w` (w at most the ops filed, never decreasing); with
  /// `sources_done`, every op has an input or a control input. An op that breaks it is refused
  /// with an InputError naming it (a bug of the generator, never a silent wrong answer). Ops
  /// below the watermark have their consumers and successors final: simulate_while_building()
  /// simulates them while later ones are filed (docs/engine.md, "Parallel engine").
  void set_watermark(OpId w, bool sources_done);
  /// Consumers of tensor `t` as the builder knows them now (consumer op, input slot), ascending:
  /// final once the watermark has passed its op. For tests of the incremental lists.
  [[nodiscard]] std::vector<std::pair<OpId, int>> consumers_so_far(int t) const;
  [[nodiscard]] StepGraph finish() &&;

 private:
  friend struct StreamedBuild;  // simulate_while_building (simulate.cpp)
  struct State;
  std::unique_ptr<State> s_;
};

/// A step and its outcome from simulate_while_building().
struct BuiltStep {
  StepGraph step;
  Outcome outcome;
  bool overlapped = false;  ///< simulated while building (false: built, then simulated)
  double build_s = 0.0;     ///< wall seconds until the step was built (not deterministic)
};

/// Sizes a generator knows before building: the loop's arrays are reserved to them so that the
/// builder never reallocates what the loop reads (more than declared: the run falls back).
struct StepSize {
  std::int64_t ops = 0, tensors = 0, inputs = 0;
};

/// Builds a step with `build` (which files exactly `size.ops` ops into the builder, pushing op
/// o's device onto `placement.device_of` before filing it, and declares watermarks) and
/// simulates it. With options.threads != 1 the event loop runs on the calling thread while
/// `build` runs on another and waits, before any event that needs an op's consumers, until the
/// watermark has passed the op: the outcome is bit-identical to simulate(step, placement,
/// options) of the finished step (docs/engine.md, "Parallel engine"). Falls back to building,
/// then simulating, where the overlap cannot be exact: stop_at_first_oom, a trace, one thread,
/// an op with its own host time or a DataLoader op, more ops or tensors than `size`.
BuiltStep simulate_while_building(const Cluster& cluster, const KernelCostModel& costs,
                                  const StepSize& size, const Placement& placement,
                                  const std::function<void(StepGraphBuilder&)>& build,
                                  const SimOptions& options);

/// Simulates one step of a StepGraph on the cluster it was built for: the same engine and
/// results as simulate() on the graph it was built from.
Outcome simulate(const StepGraph& step, const Placement& placement, const SimOptions& options = {});

/// Evaluates many placements of one graph on one cluster in parallel (oneTBB), sharing the
/// per-graph precomputation (kernel times per op × device kind, consumer lists). Results are
/// bit-identical to calling simulate() one by one, on any thread count (sim_wall_s aside).
/// The oracle borrows `cluster` and `graph` (no copy: a graph is ~700 bytes per op): both must
/// outlive it and stay unchanged.
class BatchOracle {
 public:
  BatchOracle(const Cluster& cluster, const Graph& graph, SimOptions options = {},
              KernelCostModel costs = {});
  // A temporary cluster or graph would dangle: refuse them at compile time.
  BatchOracle(Cluster&&, const Graph&, SimOptions = {}, KernelCostModel = {}) = delete;
  BatchOracle(const Cluster&, Graph&&, SimOptions = {}, KernelCostModel = {}) = delete;
  BatchOracle(Cluster&&, Graph&&, SimOptions = {}, KernelCostModel = {}) = delete;
  ~BatchOracle();
  BatchOracle(const BatchOracle&) = delete;
  BatchOracle& operator=(const BatchOracle&) = delete;

  [[nodiscard]] Outcome evaluate(const Placement& p) const;
  /// `max_threads` <= 0 uses oneTBB's default.
  [[nodiscard]] std::vector<Outcome> evaluate(const std::vector<Placement>& ps,
                                              int max_threads = 0) const;
  [[nodiscard]] const Cluster& cluster() const;
  [[nodiscard]] const Graph& graph() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// JSON report of an outcome (keys in docs/formats.md: step_time_s, oom, devices, links, ...).
std::string outcome_to_json(const Outcome& o, int indent = 2);

}  // namespace placesim::sim

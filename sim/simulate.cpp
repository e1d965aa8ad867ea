// simulate(), BatchOracle and outcome_to_json. The semantics are documented in docs/engine.md;
// the short version is in the comments of StepRun below.
#include "sim/simulate.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>
#include <thread>

#include "sim/collective_expand.hpp"
#include "sim/cpu_share.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/network.hpp"
#include "sim/trace.hpp"

namespace placesim::sim {

// A CPU op of this type is one input-pipeline worker process (a DataLoader worker, added by the
// data-parallel transform's loader_workers, models/parallel.cpp): it runs on one thread, at most
// 1/worker_threads of its socket, whatever the CPU's intra_op_threads.
constexpr std::string_view kLoaderType = "DataLoader";

/// Everything about a (cluster, graph, cost model) that does not depend on the placement, in flat
/// arrays: the simulation's compact view of the graph (per op only what the engine reads, no
/// names or attributes). Shared read-only by every run of a BatchOracle. Indices are 32-bit:
/// ops, tensors and input edges each below 2^31 (checked, InputError beyond).
struct Prepared {
  const Cluster* cluster = nullptr;
  // Names only (placement errors, traces, the critical path) and the topological order; null for
  // a step built op by op (StepGraphBuilder): ops are then named "op<id>", in id order.
  const Graph* graph = nullptr;
  int n_ops = 0, n_tensors = 0, n_dev = 0;

  std::vector<std::int32_t>
      out_begin;  // n_ops + 1: tensors of op o are [out_begin[o], out_begin[o+1])
  std::vector<std::int64_t> tensor_bytes;
  std::vector<std::int32_t> tensor_op;
  std::vector<std::int32_t> cons_begin, cons;  // per tensor: distinct consumer ops, ascending
  std::vector<std::int32_t> cons_slot;         // per cons entry: its index into `ins`
  std::vector<std::int32_t> in_begin, ins;     // per op: distinct input tensors
  std::vector<std::int32_t> ctl_begin, ctl;    // per op: distinct control successors
  std::vector<std::int32_t> n_pred;   // per op: distinct input tensors + control predecessors
  std::vector<std::int32_t> rank;     // position in the topological order
  std::vector<std::int32_t> pinned;   // Op::stream or -1
  std::vector<std::int8_t> kind_req;  // -1 any, 0 CPU, 1 GPU
  // Ops with persistent memory (parameters, optimizer state), ascending: few in most graphs.
  std::vector<std::pair<std::int32_t, std::int64_t>> persistent;
  // CPU ops of type "DataLoader" (one input-pipeline worker process each, models/parallel.hpp),
  // ascending: each runs on one thread, at most 1/worker_threads of its socket.
  std::vector<std::int32_t> loader_ops;

  std::vector<std::int32_t> dev_class;  // device -> cost class
  std::vector<std::int64_t> kernel_ns;  // class * n_ops + op
  // class * n_ops + op: host time of launching the op under a per-op host model
  // (KernelCostModel::host_time), -1 = the device's launch_overhead. Empty when no op has one.
  std::vector<std::int64_t> host_ns;
  std::vector<std::int64_t> step_host_ns;  // per device: host remainder paid once per step
  std::vector<std::int64_t> opt_host_ns;   // per device: foreach optimizer step, once per step
  std::vector<std::uint8_t> is_update;     // per op: Phase::Update (bytes: read while filed)

  std::vector<bool> is_gpu;
  std::vector<std::int32_t> streams, workers;
  std::vector<std::int64_t> launch_ns;
  std::vector<std::int64_t> capacity;  // usable: memory_capacity - reserved_memory
  std::vector<std::int64_t> reserved;
  std::vector<std::int64_t> issue_ns, dma_ns;  // per GPU: copy issue cost, DMA setup latency
  std::vector<std::int64_t> gap_ns;            // per GPU: DeviceSpec::kernel_gap
  std::vector<double> cpu_cap;                 // per CPU: share of the socket one op can use
  std::vector<std::int32_t> engines;           // device * 3 + kind (H2D, D2H, peer)

  Prepared(const Cluster& c, const Graph& g, const KernelCostModel& costs);
  explicit Prepared(const Cluster& c) : cluster(&c), n_dev(c.num_devices()) {}

  [[nodiscard]] std::string op_name(std::int32_t op) const {
    return graph ? graph->ops[op].name : "op" + std::to_string(op);
  }
  [[nodiscard]] OpId topo_at(std::int32_t i) const { return graph ? graph->topo_order[i] : i; }
  /// Consumers per tensor (the transpose of `ins`) and control successors from `pred` (distinct
  /// control predecessors per op, CSR by `pred_begin`).
  void transpose_edges(const std::vector<std::int32_t>& pred,
                       const std::vector<std::int32_t>& pred_begin);
  void device_parameters(const Cluster& c, const KernelCostModel& costs);

  /// The host time of launching `op` on device `d`: its own, or the device's launch overhead.
  [[nodiscard]] std::int64_t launch_host_ns(std::int32_t op, DeviceId d) const {
    const std::int64_t h =
        host_ns.empty() ? -1 : host_ns[static_cast<std::size_t>(dev_class[d]) * n_ops + op];
    return h < 0 ? launch_ns[d] : h;
  }

 private:
  void index_tensors(const Graph& g);
  void index_inputs(const Graph& g);
  void index_control(const Graph& g);
  void index_op_attributes(const Graph& g);
  void cost_classes(const Cluster& c, const Graph& g, const KernelCostModel& costs);
};

namespace {

bool same_cost_inputs(const Device& a, const Device& b) {
  return a.spec.model == b.spec.model && a.spec.kind == b.spec.kind &&
         a.spec.peak_flops == b.spec.peak_flops &&
         a.spec.memory_bandwidth == b.spec.memory_bandwidth &&
         a.spec.half_gemm_e_max == b.spec.half_gemm_e_max;
}

/// True when every op costs the same on `a` and `b`: KernelCostModel reads a device's cost
/// inputs, its launch overhead (host_model) and its calibration entry, nothing else.
bool cost_twins(const Device& a, const Device& b, const KernelCostModel& costs) {
  return same_cost_inputs(a, b) && a.spec.launch_overhead == b.spec.launch_overhead &&
         costs.calibration_for(a) == costs.calibration_for(b);
}

/// Throws if `count` does not fit the engine's 32-bit indices.
void check_index_limit(const std::string& origin, const char* what, std::size_t count) {
  constexpr std::size_t kMax = 2147483647;  // INT32_MAX: ids and CSR offsets are int32
  if (count >= kMax)
    throw InputError(origin, what,
                     "fewer than 2^31 - 1 " + std::string(what) + " (32-bit indices), got " +
                         std::to_string(count));
}

}  // namespace

Prepared::Prepared(const Cluster& c, const Graph& g, const KernelCostModel& costs)
    : cluster(&c), graph(&g) {
  n_dev = c.num_devices();
  if (n_dev > 32767)
    throw InputError("<cluster " + c.name + ">", "devices", "at most 32767 devices");
  check_index_limit("<graph " + g.name + ">", "ops", g.ops.size());
  n_ops = g.num_ops();
  if (static_cast<int>(g.topo_order.size()) != n_ops)
    throw InputError("<graph " + g.name + ">", "", "a finalized graph (call Graph::finalize)");
  index_tensors(g);
  index_inputs(g);
  index_control(g);  // transposes the edges
  index_op_attributes(g);
  cost_classes(c, g, costs);
  device_parameters(c, costs);
}

void Prepared::index_tensors(const Graph& g) {
  std::size_t total = 0;
  for (const Op& op : g.ops) total += op.outputs.size();
  check_index_limit("<graph " + g.name + ">", "tensors", total);
  out_begin.resize(n_ops + 1);
  for (int o = 0; o < n_ops; ++o)
    out_begin[o + 1] = out_begin[o] + static_cast<std::int32_t>(g.ops[o].outputs.size());
  n_tensors = out_begin[n_ops];
  tensor_bytes.resize(n_tensors);
  tensor_op.resize(n_tensors);
  for (int o = 0; o < n_ops; ++o)
    for (std::size_t k = 0; k < g.ops[o].outputs.size(); ++k) {
      tensor_bytes[out_begin[o] + k] = g.ops[o].outputs[k].bytes.v;
      tensor_op[out_begin[o] + k] = o;
    }
}

// Inputs (distinct tensors) and, transposed, consumers per tensor.
void Prepared::index_inputs(const Graph& g) {
  std::size_t total = 0;
  for (const Op& op : g.ops) total += op.inputs.size();
  check_index_limit("<graph " + g.name + ">", "input edges", total);
  in_begin.assign(n_ops + 1, 0);
  ins.reserve(total);
  std::vector<std::int32_t> tmp;
  for (int o = 0; o < n_ops; ++o) {
    tmp.clear();
    for (const TensorRef& r : g.ops[o].inputs) tmp.push_back(out_begin[r.op] + r.output);
    std::sort(tmp.begin(), tmp.end());
    tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
    ins.insert(ins.end(), tmp.begin(), tmp.end());
    in_begin[o + 1] = static_cast<std::int32_t>(ins.size());
  }
  ins.shrink_to_fit();
}

void Prepared::transpose_edges(const std::vector<std::int32_t>& pred,
                               const std::vector<std::int32_t>& pred_begin) {
  std::vector<std::int32_t> count(n_tensors + 1, 0);
  for (std::int32_t t : ins) ++count[t + 1];
  cons_begin.assign(n_tensors + 1, 0);
  for (int t = 0; t < n_tensors; ++t) cons_begin[t + 1] = cons_begin[t] + count[t + 1];
  cons.resize(ins.size());
  cons_slot.resize(ins.size());
  std::vector<std::int32_t> fill(cons_begin.begin(), cons_begin.end() - 1);
  for (int o = 0; o < n_ops; ++o)
    for (int i = in_begin[o]; i < in_begin[o + 1]; ++i) {
      cons_slot[fill[ins[i]]] = i;
      cons[fill[ins[i]]++] = o;
    }
  std::vector<std::int32_t> ctl_count(n_ops + 1, 0);
  for (std::int32_t p : pred) ++ctl_count[p + 1];
  ctl_begin.assign(n_ops + 1, 0);
  for (int o = 0; o < n_ops; ++o) ctl_begin[o + 1] = ctl_begin[o] + ctl_count[o + 1];
  ctl.resize(pred.size());
  fill.assign(ctl_begin.begin(), ctl_begin.end() - 1);
  for (int o = 0; o < n_ops; ++o)  // ascending o: each successor list comes out ascending
    for (int i = pred_begin[o]; i < pred_begin[o + 1]; ++i) ctl[fill[pred[i]]++] = o;
}

// Control edges, as successor lists (CSR) and predecessor counts.
void Prepared::index_control(const Graph& g) {
  n_pred.assign(n_ops, 0);
  std::vector<std::int32_t> tmp;
  std::vector<std::int32_t> pred;  // distinct predecessors, op by op
  std::vector<std::int32_t> pred_begin(n_ops + 1, 0);
  for (int o = 0; o < n_ops; ++o) {
    tmp.assign(g.ops[o].control_inputs.begin(), g.ops[o].control_inputs.end());
    std::sort(tmp.begin(), tmp.end());
    tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
    n_pred[o] = (in_begin[o + 1] - in_begin[o]) + static_cast<std::int32_t>(tmp.size());
    pred.insert(pred.end(), tmp.begin(), tmp.end());
    pred_begin[o + 1] = static_cast<std::int32_t>(pred.size());
  }
  transpose_edges(pred, pred_begin);
}

void Prepared::index_op_attributes(const Graph& g) {
  rank.resize(n_ops);
  for (int i = 0; i < n_ops; ++i) rank[g.topo_order[i]] = i;
  pinned.resize(n_ops);
  kind_req.resize(n_ops);
  is_update.resize(n_ops);
  for (int o = 0; o < n_ops; ++o) {
    const Op& op = g.ops[o];
    pinned[o] = op.stream ? *op.stream : -1;
    kind_req[o] = !op.device_kind ? -1 : (*op.device_kind == DeviceKind::Gpu ? 1 : 0);
    is_update[o] = op.phase == Phase::Update;
    if (op.persistent.v > 0) persistent.emplace_back(o, op.persistent.v);
    if (op.type == kLoaderType) loader_ops.push_back(o);
  }
}

// Kernel times once per distinct device (cost class), not per device.
void Prepared::cost_classes(const Cluster& c, const Graph& g, const KernelCostModel& costs) {
  dev_class.assign(n_dev, -1);
  std::vector<DeviceId> reps;
  auto host_of = [&](int o, DeviceId d) {
    const auto h = costs.host_time(g.ops[o], c.devices[d]);
    return h ? std::max<std::int64_t>(0, h->ns) : std::int64_t{-1};
  };
  for (int d = 0; d < n_dev; ++d) {
    for (std::size_t k = 0; k < reps.size() && dev_class[d] < 0; ++k) {
      // Devices share a class only if every op costs the same on both (a calibration keyed by
      // device name can make two devices of one model differ). Twins do by construction; others
      // are compared op by op, in parallel (the ops are independent; the answer is an AND).
      const Device &rep = c.devices[reps[k]], &dev = c.devices[d];
      if (!same_cost_inputs(rep, dev)) continue;
      const bool equal = cost_twins(rep, dev, costs) ||
                         tbb::parallel_reduce(
                             tbb::blocked_range<int>(0, n_ops, 1024), true,
                             [&](const tbb::blocked_range<int>& r, bool eq) {
                               for (int o = r.begin(); o != r.end() && eq; ++o)
                                 eq =
                                     costs.op_time(g.ops[o], rep) == costs.op_time(g.ops[o], dev) &&
                                     host_of(o, reps[k]) == host_of(o, d);
                               return eq;
                             },
                             std::logical_and<>());
      if (equal) dev_class[d] = static_cast<std::int32_t>(k);
    }
    if (dev_class[d] < 0) {
      dev_class[d] = static_cast<std::int32_t>(reps.size());
      reps.push_back(d);
    }
  }
  kernel_ns.resize(reps.size() * static_cast<std::size_t>(n_ops));
  host_ns.resize(reps.size() * static_cast<std::size_t>(n_ops));
  // Pricing is pure: ops price in parallel, each into its own slot.
  for (std::size_t k = 0; k < reps.size(); ++k)
    tbb::parallel_for(
        tbb::blocked_range<int>(0, n_ops, 1024), [&](const tbb::blocked_range<int>& r) {
          for (int o = r.begin(); o != r.end(); ++o) {
            kernel_ns[k * n_ops + o] =
                std::max<std::int64_t>(0, costs.op_time(g.ops[o], c.devices[reps[k]]).ns);
            host_ns[k * n_ops + o] = host_of(o, reps[k]);
          }
        });
  const bool any_host =
      std::any_of(host_ns.begin(), host_ns.end(), [](std::int64_t h) { return h >= 0; });
  if (!any_host) std::vector<std::int64_t>().swap(host_ns);  // every launch costs the default
}

void Prepared::device_parameters(const Cluster& c, const KernelCostModel& costs) {
  step_host_ns.resize(n_dev);
  opt_host_ns.resize(n_dev);
  is_gpu.resize(n_dev);
  streams.resize(n_dev);
  workers.resize(n_dev);
  launch_ns.resize(n_dev);
  capacity.resize(n_dev);
  reserved.resize(n_dev);
  issue_ns.resize(n_dev);
  dma_ns.resize(n_dev);
  gap_ns.resize(n_dev);
  cpu_cap.resize(n_dev);
  engines.resize(3 * n_dev);
  for (int d = 0; d < n_dev; ++d) {
    step_host_ns[d] = std::max<std::int64_t>(0, costs.step_host_time(c.devices[d]).ns);
    opt_host_ns[d] = std::max<std::int64_t>(0, costs.optimizer_host_time(c.devices[d]).ns);
    const DeviceSpec& s = c.devices[d].spec;
    is_gpu[d] = s.kind == DeviceKind::Gpu;
    streams[d] = std::max(1, s.compute_streams);
    workers[d] = std::max(1, s.worker_threads);
    launch_ns[d] = std::max<std::int64_t>(0, s.launch_overhead.ns);
    reserved[d] = is_gpu[d] ? std::max<std::int64_t>(0, s.reserved_memory.v) : 0;
    capacity[d] = s.memory_capacity.v - reserved[d];
    issue_ns[d] = is_gpu[d] ? std::max<std::int64_t>(0, s.copy_issue_overhead.ns) : 0;
    dma_ns[d] = is_gpu[d] ? std::max<std::int64_t>(0, s.dma_setup_latency.ns) : 0;
    gap_ns[d] = is_gpu[d] ? std::max<std::int64_t>(0, s.kernel_gap.ns) : 0;
    cpu_cap[d] = s.intra_op_threads <= 0
                     ? 1.0
                     : std::min(1.0, static_cast<double>(s.intra_op_threads) / workers[d]);
    engines[3 * d + 0] = std::max(1, s.h2d_engines);
    engines[3 * d + 1] = std::max(1, s.d2h_engines);
    engines[3 * d + 2] = std::max(1, s.peer_engines);
  }
}

/// Shared by a builder filing a step and the event loop simulating it while it is filed
/// (simulate_while_building; docs/engine.md, "Parallel engine"). The builder writes an op's arrays,
/// then publishes counts with release stores; the loop reads only below what it acquired.
struct StreamSync {
  std::int32_t total = 0;                   // ops declared (StepSize)
  std::size_t inputs = 0;                   // input edges declared (StepSize)
  const DeviceId* device_of = nullptr;      // the placement, filled before each op is filed
  std::vector<const std::int64_t*> kernel;  // per priced device: kernel ns per op (reserved)
  std::vector<std::int32_t> dev_class;      // device -> its priced device's index
  std::atomic<std::int32_t> filed{0};       // ops whose own arrays are written
  std::atomic<std::int32_t> watermark{0};   // ops whose consumers and successors are final
  std::atomic<std::int32_t> sources{-1};    // ops filed when no source can follow; -1 before
  std::atomic<bool> abort{false};           // the loop must leave: fall back (or an error)
  std::atomic<bool> detached{false};        // the loop no longer reads the builder's arrays
  std::atomic<std::uint32_t> version{0};    // bumped after every change above (waited on)
  void bump() {
    version.fetch_add(1, std::memory_order_acq_rel);
    version.notify_all();
  }
};

namespace {

/// Thrown by the event loop when it must leave a streamed run (simulate_while_building then
/// builds the whole step and simulates it sequentially).
struct StreamAborted {};

void check_placement(const Prepared& P, const Placement& p) {
  const std::string where = "<placement>";
  if (static_cast<int>(p.device_of.size()) != P.n_ops)
    throw InputError(where, "",
                     "one device per op (" + std::to_string(P.n_ops) + " ops), got " +
                         std::to_string(p.device_of.size()));
  for (int o = 0; o < P.n_ops; ++o) {
    const DeviceId d = p.device_of[o];
    if (d < 0 || d >= P.n_dev)
      throw InputError(
          where, "op \"" + P.op_name(o) + "\"",
          "a device index in [0, " + std::to_string(P.n_dev) + "), got " + std::to_string(d));
    if (P.kind_req[o] >= 0 && (P.kind_req[o] == 1) != P.is_gpu[d])
      throw InputError(where, "op \"" + P.op_name(o) + "\"",
                       std::string("a ") + (P.kind_req[o] == 1 ? "GPU" : "CPU") +
                           " device, got \"" + P.cluster->devices[d].name + "\"");
    // An op the framework refuses on that device (an fp8 matmul without FP8 tensor cores).
    if (P.graph)
      check_runnable(P.graph->ops[o], P.cluster->devices[d].spec, P.cluster->devices[d].name,
                     where);
  }
}

// Event kinds.
enum : std::int32_t {
  kLaunchEnd = 0,
  kKernelStart = 1,
  kKernelEnd = 2,
  kLatencyDone = 3,
  kCopyIssued = 4,
  kCollFlows = 5  // a collective call's fixed time has passed: its flows start
};
enum : int { kH2D = 0, kD2H = 1, kPeer = 2 };

/// Raw pointers into a Prepared's arrays, for the event loop (StepRun::view).
struct PreparedView {
  const Cluster* cluster = nullptr;
  const Graph* graph = nullptr;
  int n_dev = 0, n_ops = 0;
  const std::int32_t *out_begin = nullptr, *tensor_op = nullptr, *cons_begin = nullptr,
                     *cons = nullptr, *cons_slot = nullptr, *ins = nullptr, *in_begin = nullptr,
                     *ctl_begin = nullptr, *ctl = nullptr, *n_pred = nullptr, *rank = nullptr,
                     *pinned = nullptr, *streams = nullptr, *workers = nullptr, *engines = nullptr,
                     *dev_class = nullptr, *loader_begin = nullptr, *loader_end = nullptr;
  const std::int64_t *tensor_bytes = nullptr, *launch_ns = nullptr, *capacity = nullptr,
                     *reserved = nullptr, *issue_ns = nullptr, *dma_ns = nullptr, *gap_ns = nullptr,
                     *step_host_ns = nullptr, *opt_host_ns = nullptr, *host_ns = nullptr;
  const std::int8_t* kind_req = nullptr;
  const std::uint8_t *is_update = nullptr, *is_gpu = nullptr;
  const double* cpu_cap = nullptr;

  [[nodiscard]] std::string op_name(std::int32_t op) const {
    return graph ? graph->ops[op].name : "op" + std::to_string(op);
  }
  [[nodiscard]] OpId topo_at(std::int32_t i) const { return graph ? graph->topo_order[i] : i; }
  [[nodiscard]] std::int64_t launch_host_ns(std::int32_t op, DeviceId d) const {
    const std::int64_t h =
        host_ns ? host_ns[static_cast<std::size_t>(dev_class[d]) * n_ops + op] : -1;
    return h < 0 ? launch_ns[d] : h;
  }
};

/// One simulated step. Item ids for the critical path: op kernel = op, launch = n_ops + op,
/// copy segment s = 2 * n_ops + 2 * s, host-side issue of segment s = 2 * n_ops + 2 * s + 1
/// (independent of the number of segments, which grows while a streamed step is filed).
class StepRun {
 public:
  /// `calls`: the collective calls of an expanded graph (collective_expand.hpp), or null.
  StepRun(const Prepared& P, const SimOptions& opt, const ExpandedGraph* calls = nullptr)
      : P_(P), opt_(opt), net_(*P.cluster), cpus_(P.n_dev), coll_(calls) {
    engine_.add_model(&net_);   // model 0: completions of transfers come first at one instant
    engine_.add_model(&cpus_);  // model 1: CPU ops sharing their socket
  }

  /// Simulates one placement. A StepRun may be reused: its buffers keep their capacity, so a
  /// warm run allocates almost nothing.
  Outcome run(const Placement& placement);
  /// Takes V_'s pointers into P_ (each run: a builder may have reserved since).
  void view();
  /// Simulates a step while a builder files it (simulate_while_building): returns when the
  /// queue is empty; throws StreamAborted when the builder asks it to leave. view() must have
  /// been taken before the builder's thread started (it reads counts the builder writes).
  void run_streamed(StreamSync& sync);
  /// After the builder finished: the memory of persistent state, then the outcome.
  Outcome finish_streamed();

  void on_event(Engine& e, const Event& ev);
  void on_resource(Engine& e, int model);

 private:
  // 16 bytes: copies outnumber ops on a spread placement.
  struct Copy {
    std::int32_t tensor;
    std::int32_t refs;  // consumers on dst not yet finished
    std::int32_t seg;   // its first segment; a staged copy's second follows it
    std::int16_t dst;   // a DeviceId (Prepared caps devices at 32767)
    std::int8_t nseg;
  };
  // One per route segment of a copy (1, or 2 when staged through host memory): 12 bytes.
  struct Seg {
    std::int32_t copy;
    std::int32_t pool;  // engine pool or -1
    std::int16_t slot;  // engine slot taken (trace; the schema caps engines per pool)
    std::int8_t k;      // segment index in the route
  };
  // Per segment, only while recording the critical path or a trace.
  struct SegPath {
    SimTime ready = 0, flow_start = 0;
    std::int32_t ready_pred = -1;
  };
  struct ReadyEntry {
    SimTime t;
    std::int32_t rank, op;
    bool operator>(const ReadyEntry& o) const { return t != o.t ? t > o.t : rank > o.rank; }
  };

  void reset_ops(const Placement* placement);
  /// Copies of tensors [t0, t1) (their consumers final), after those of tensors below t0.
  void build_copies(std::int32_t t0, std::int32_t t1);
  /// Streamed: ops [o0, o1) are filed: their device, predecessors missing, tensors' devices.
  void setup_ops(std::int32_t o0, std::int32_t o1);
  /// Streamed: waits until the watermark passes `op` (its consumers and successors final).
  [[gnu::always_inline]] void need(std::int32_t op) {
    if (op >= w_) [[unlikely]]
      wait_for(op);
  }
  [[gnu::cold]] void wait_for(std::int32_t op);
  void absorb(std::int32_t w);
  void settle_memory();
  void reset_collectives();
  void reset_devices();
  [[nodiscard]] Outcome outcome();
  [[nodiscard]] std::vector<PathItem> critical_path() const;
  // Inlined where it is hot (kernel and copy starts), whatever the other callers.
  [[gnu::always_inline]] inline void alloc(DeviceId d, std::int64_t b);
  void release(DeviceId d, std::int64_t b) {
    cur_mem_[d] -= b;
    if (opt_.trace) opt_.trace->memory(d, engine_.now(), cur_mem_[d]);
  }
  void credit(std::int32_t op, std::int32_t pred_item);
  void make_ready(std::int32_t op, std::int32_t pred_item);
  void dispatch(DeviceId d);
  void launch_end(std::int32_t op);
  void kernel_start(std::int32_t op);
  void kernel_end(std::int32_t op);
  void tensor_unref(std::int32_t t);
  void request_segment(std::int32_t seg, std::int32_t pred);
  void request_engine(std::int32_t seg, std::int32_t pred);
  void copy_issued(std::int32_t seg);
  void cpu_begin(std::int32_t op);
  [[nodiscard]] std::int32_t issue_item(std::int32_t seg) const { return 2 * n_ + 2 * seg + 1; }
  void begin_segment(std::int32_t seg, std::int32_t pred);
  void segment_done(std::int32_t seg);
  // Collective calls; cold so that graphs without them keep the hot path's inlining.
  [[gnu::cold]] void coll_rank_start(std::int32_t op, std::int32_t launch);
  [[gnu::cold]] void coll_flows(std::int32_t call);
  [[gnu::cold]] void coll_flow_done(std::int32_t flow);
  [[gnu::cold]] void coll_end(std::int32_t call);
  /// A GPU kernel `op` of `ns` alone starting now beside the collectives running on its GPU: its
  /// duration there, or -1 when its stream was held up since its start was scheduled (it is
  /// scheduled again, once the kernel before it ends).
  [[gnu::cold]] std::int64_t beside_calls(std::int32_t op, std::int64_t ns);
  void busy_up(DeviceId d);
  void busy_down(DeviceId d);
  void finish_item(std::int32_t item, SimTime end);
  [[nodiscard]] bool stream_dep(std::int32_t producer, std::int32_t consumer) const {
    // A GPU input produced on the same stream is usable once the producer is enqueued: stream
    // order guarantees it runs first (this is how TensorFlow and PyTorch launch ahead).
    const DeviceId d = dev_[producer];
    if (dev_[consumer] != d || !V_.is_gpu[d]) return false;
    if (single_stream_[d]) return true;
    const auto pp = V_.pinned[producer], pc = V_.pinned[consumer];
    return pp >= 0 && pc >= 0 && pp % V_.streams[d] == pc % V_.streams[d];
  }
  [[nodiscard]] std::int64_t kernel_time(std::int32_t op) const {
    return kern_[static_cast<std::size_t>(dev_class_[dev_[op]])][op];
  }
  [[nodiscard]] const RouteSegment& segment_of(std::int32_t seg) const {
    const Copy& c = copies_[segs_[seg].copy];
    return V_.cluster->route(tdev_[c.tensor], c.dst).segments[segs_[seg].k];
  }
  [[nodiscard]] bool oom_stop() const { return opt_.stop_at_first_oom && !oom_order_.empty(); }
  std::string tensor_name(std::int32_t t) const;
  std::string segment_name(std::int32_t seg) const;

  const Prepared& P_;
  // What the loop reads of P_, as raw pointers taken once per run: a builder filing a streamed
  // step appends to P_'s vectors (their headers change on every op), so reading through them
  // would share cache lines with the filing thread on every access.
  PreparedView V_;
  std::vector<std::uint8_t> is_gpu_;  // V_.is_gpu's storage (P_'s is a vector<bool>)
  std::int32_t n_ = 0;                // ops (a streamed step: the declared total)
  // Kernel ns per op of each cost class, and each device's class: P_'s flat arrays, or a
  // streamed step's per priced device (filed while the loop runs).
  std::vector<const std::int64_t*> kern_;
  std::vector<std::int32_t> dev_class_;
  StreamSync* sync_ = nullptr;  // streamed: shared with the builder
  std::int32_t w_ = 0;          // ops whose consumers and successors may be read (n_ unstreamed)
  std::int32_t f_ = 0;          // streamed: ops set up (setup_ops)
  std::int32_t tw_ = 0;         // streamed: tensors whose copies are built
  // Streamed: persistent memory is known only at the end, so the loop counts allocations and
  // keeps per device its dynamic peak each time it rose (allocation number, bytes); the peaks
  // and OOM order of the whole run follow from them exactly (settle_memory).
  bool deferred_mem_ = false;
  std::int64_t alloc_seq_ = 0;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> rises_;
  std::vector<std::int64_t> cap_;  // capacity the loop checks (unbounded while deferred)
  std::vector<std::int32_t> seen_, on_dev_, copy_at_;  // build_copies' scratch per device
  std::chrono::steady_clock::time_point wall0_;
  std::vector<std::int16_t> dev_;    // op -> device (compact: fewer cache misses)
  std::vector<std::int16_t> tdev_;   // tensor -> producer's device
  std::vector<bool> single_stream_;  // GPU with one compute stream
  const SimOptions& opt_;
  Engine engine_;
  FlowNetwork net_;
  CpuShare cpus_;

  // Ops.
  std::vector<std::int32_t> missing_;
  std::vector<std::int32_t> op_stream_;
  std::vector<SimTime> ready_time_;
  std::vector<std::int32_t> ready_pred_;
  // Tensors.
  std::vector<std::int32_t> tensor_refs_;  // local consumers + outgoing copies not yet done
  std::vector<std::int32_t> copy_begin_;   // per tensor, into copies_
  std::vector<std::int32_t> in_copy_;      // per input slot (`ins`): the copy it reads, -1 = local
  std::vector<Copy> copies_;
  std::vector<Seg> segs_;
  std::vector<SegPath> seg_path_;  // empty unless track_
  // Devices.
  std::vector<std::vector<ReadyEntry>> ready_;
  std::vector<bool> launcher_busy_;
  std::vector<bool> step_paid_;              // per GPU: the per-step host remainder was charged
  std::vector<bool> opt_paid_;               // per GPU: the foreach optimizer's step was charged
  std::vector<std::int32_t> launcher_last_;  // last launch item per GPU
  std::vector<std::vector<std::int32_t>> issue_q_;  // per GPU: copy segments waiting to be issued
  std::vector<std::size_t> issue_head_;
  std::vector<SimTime> stream_free_;  // device * max_streams + s
  std::vector<std::int32_t> stream_last_;
  std::vector<std::vector<std::int32_t>> free_slots_;  // CPU workers
  std::vector<std::int32_t> worker_last_;              // last item that freed a worker, per CPU
  std::vector<std::int32_t> busy_count_;
  std::vector<SimTime> busy_since_, busy_total_;
  std::vector<std::int32_t> ops_done_;
  std::vector<std::int64_t> cur_mem_, peak_mem_;
  std::vector<bool> oom_;
  std::vector<DeviceId> oom_order_;
  // Copy engines: pool = device * 3 + kind.
  std::vector<std::int32_t> pool_free_;
  std::vector<std::vector<std::int32_t>> pool_slots_;
  std::vector<std::vector<std::int32_t>> pool_queue_;
  std::vector<std::size_t> pool_head_;
  // Critical path and trace times: per item (op kernel, launch, copy segment, issue), sized only
  // when track_ (record_critical_path or a trace), so a plain run keeps no per-item state.
  bool track_ = false;
  std::vector<std::int32_t> pred_;
  std::vector<SimTime> item_start_, item_end_;
  std::int32_t last_item_ = -1;
  SimTime end_time_ = 0;
  int max_streams_ = 1;
  std::int64_t transfers_ = 0;
  std::int64_t transferred_ = 0;
  bool unreachable_ = false;
  std::vector<std::int32_t> done_scratch_;
  // Collective calls (null without collectives): per call, ranks started, flows left, the rank
  // whose start completed it, when its flows started; per flow (numbered across calls) its call.
  const ExpandedGraph* coll_;
  std::vector<std::int32_t> coll_started_, coll_left_, coll_last_, coll_flow_call_;
  std::vector<std::int32_t> coll_flow_begin_;
  std::vector<SimTime> coll_flow_start_;
  // Collectives beside kernels (docs/engine.md, "Collectives beside kernels"): per GPU the SMs
  // (CTAs) and device-memory bytes/s of the calls running on it; per stream the time kernels
  // started beside calls were stretched by so far, and per op that sum when its start was set.
  std::vector<std::int32_t> coll_ctas_;
  std::vector<std::int64_t> coll_hbm_;
  std::vector<SimTime> stream_shift_, op_shift_;
};

void StepRun::build_copies(std::int32_t t0, std::int32_t t1) {
  const std::size_t first_copy = copies_.size();
  for (std::int32_t t = t0; t < t1; ++t) {
    const DeviceId src = tdev_[t];
    const std::size_t first = copies_.size();
    std::int32_t local = 0;
    for (int i = V_.cons_begin[t]; i < V_.cons_begin[t + 1]; ++i) {
      const DeviceId d = dev_[V_.cons[i]];
      if (d == src) {
        ++local;
        continue;
      }
      if (seen_[d] != t) {
        seen_[d] = t;
        on_dev_[d] = 0;
        copies_.push_back({t, 0, 0, static_cast<std::int16_t>(d), 0});
      }
      ++on_dev_[d];
    }
    // Copies of a tensor in ascending destination order (deterministic, independent of consumers).
    std::sort(copies_.begin() + static_cast<std::ptrdiff_t>(first), copies_.end(),
              [](const Copy& a, const Copy& b) { return a.dst < b.dst; });
    for (std::size_t k = first; k < copies_.size(); ++k) {
      Copy& c = copies_[k];
      c.refs = on_dev_[c.dst];
      const Route& r = V_.cluster->route(src, c.dst);
      c.nseg = static_cast<std::int8_t>(r.segments.size());
    }
    tensor_refs_.push_back(local + static_cast<std::int32_t>(copies_.size() - first));
    copy_begin_.push_back(static_cast<std::int32_t>(copies_.size()));
    // Each consumer's input slot learns which copy it reads, so an op's end releases its inputs
    // without searching (the search was the engine's hottest cache-missing loop).
    for (std::size_t k = first; k < copies_.size(); ++k)
      copy_at_[copies_[k].dst] = static_cast<std::int32_t>(k);
    for (int i = V_.cons_begin[t]; i < V_.cons_begin[t + 1]; ++i) {
      const DeviceId d = dev_[V_.cons[i]];
      in_copy_[V_.cons_slot[i]] = d == src ? -1 : copy_at_[d];
    }
  }
  // Segments of a copy are consecutive, copies in order: ids only grow with (copy, k), as the
  // engine's tie-breaking by id expects.
  std::size_t n_segs = segs_.size();
  for (std::size_t k = first_copy; k < copies_.size(); ++k) {
    copies_[k].seg = static_cast<std::int32_t>(n_segs);
    n_segs += static_cast<std::size_t>(copies_[k].nseg);
  }
  if (2 * static_cast<std::size_t>(n_) + 2 * n_segs >= 2147483647) {
    if (sync_) throw StreamAborted{};  // the whole step's run says how many (its error)
    throw InputError("<placement>", "",
                     "fewer than 2^31 - 1 ops, launches and copy segments with their issues "
                     "(32-bit item ids), got " +
                         std::to_string(2 * n_ + 2 * n_segs));
  }
  segs_.resize(n_segs);
  if (track_) {
    const std::size_t items = 2 * static_cast<std::size_t>(n_) + 2 * n_segs;
    pred_.resize(items, -1);
    item_start_.resize(items, 0);
    item_end_.resize(items, 0);
    seg_path_.resize(n_segs, SegPath{});
  }
  for (std::size_t c = first_copy; c < copies_.size(); ++c)
    for (int k = 0; k < copies_[c].nseg; ++k) {
      const auto id = static_cast<std::int32_t>(copies_[c].seg + k);
      Seg& s = segs_[id];
      s = {static_cast<std::int32_t>(c), -1, -1, static_cast<std::int8_t>(k)};
      const RouteSegment& rs = segment_of(id);
      const bool from_gpu = V_.is_gpu[rs.from], to_gpu = V_.is_gpu[rs.to];
      if (from_gpu && to_gpu)
        s.pool = 3 * rs.from + kPeer;
      else if (from_gpu)
        s.pool = 3 * rs.from + kD2H;
      else if (to_gpu)
        s.pool = 3 * rs.to + kH2D;
    }
}

inline void StepRun::alloc(DeviceId d, std::int64_t b) {
  cur_mem_[d] += b;
  ++alloc_seq_;
  if (opt_.trace) opt_.trace->memory(d, engine_.now(), cur_mem_[d]);
  if (cur_mem_[d] > peak_mem_[d]) {
    peak_mem_[d] = cur_mem_[d];
    if (deferred_mem_) rises_[d].emplace_back(alloc_seq_, cur_mem_[d]);
  }
  if (cur_mem_[d] > cap_[d] && !oom_[d]) {
    oom_[d] = true;
    oom_order_.push_back(d);
    if (opt_.stop_at_first_oom) engine_.stop();
  }
}

// The item's start and predecessor were recorded when it began (when track_).
void StepRun::finish_item(std::int32_t item, SimTime end) {
  if (track_) item_end_[item] = end;
  if (end >= end_time_) {
    end_time_ = end;
    last_item_ = item;
  }
}

void StepRun::credit(std::int32_t op, std::int32_t pred_item) {
  if (--missing_[op] == 0) make_ready(op, pred_item);
}

void StepRun::make_ready(std::int32_t op, std::int32_t pred_item) {
  const DeviceId d = dev_[op];
  if (track_) {
    ready_time_[op] = engine_.now();
    ready_pred_[op] = pred_item;
  }
  ready_.at(d).push_back({engine_.now(), V_.rank[op], op});
  std::push_heap(ready_[d].begin(), ready_[d].end(), std::greater<>());
  dispatch(d);
}

void StepRun::dispatch(DeviceId d) {
  auto& heap = ready_[d];
  const SimTime now = engine_.now();
  if (V_.is_gpu[d]) {
    if (launcher_busy_[d]) return;
    if (issue_head_[d] < issue_q_[d].size()) {
      // Copies are issued before pending launches: they unblock consumers on other devices.
      const std::int32_t seg = issue_q_[d][issue_head_[d]++];
      launcher_busy_[d] = true;
      if (track_) {
        const std::int32_t item = issue_item(seg);
        const SegPath& sp = seg_path_[seg];
        pred_[item] =
            (sp.ready == now || launcher_last_[d] < 0) ? sp.ready_pred : launcher_last_[d];
        item_start_[item] = now;
      }
      engine_.schedule(now + V_.issue_ns[d], Priority::LaunchEnd, kCopyIssued, seg);
      return;
    }
    if (heap.empty()) return;
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const std::int32_t op = heap.back().op;
    heap.pop_back();
    launcher_busy_[d] = true;
    if (track_) {
      const std::int32_t item = n_ + op;
      // The launch waited either for its last input or for the launcher; on a tie, the input.
      pred_[item] =
          (ready_time_[op] == now || launcher_last_[d] < 0) ? ready_pred_[op] : launcher_last_[d];
      item_start_[item] = now;
    }
    std::int64_t host = V_.launch_host_ns(op, d);
    if (!step_paid_[d]) {
      // The per-step host remainder (Python loop, zero_grad) delays the step's first launch.
      host += V_.step_host_ns[d];
      step_paid_[d] = true;
    }
    if (V_.is_update[op] && !opt_paid_[d]) {
      // A foreach optimizer's Python and dispatch come before its first kernel.
      host += V_.opt_host_ns[d];
      opt_paid_[d] = true;
    }
    engine_.schedule(now + host, Priority::LaunchEnd, kLaunchEnd, op);
    return;
  }
  auto& slots = free_slots_[d];
  while (!slots.empty() && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const std::int32_t op = heap.back().op;
    heap.pop_back();
    const std::int32_t worker = slots.back();
    slots.pop_back();
    op_stream_[op] = worker;
    const std::int32_t launch = n_ + op;
    // The dispatch cost: the device's launch_overhead, or a CPU host model's per-op cost plus,
    // on the step's first op, the host time no graph op stands for (KernelCostModel::host_time).
    std::int64_t host = V_.launch_host_ns(op, d);
    if (!step_paid_[d]) {
      host += V_.step_host_ns[d];
      step_paid_[d] = true;
    }
    const SimTime ks = now + host;
    if (track_) {
      pred_[launch] =
          (ready_time_[op] == now || worker_last_[d] < 0) ? ready_pred_[op] : worker_last_[d];
      item_start_[launch] = now;
      pred_[op] = launch;
      item_start_[op] = ks;
    }
    finish_item(launch, ks);
    if (opt_.trace) opt_.trace->launch(d, V_.op_name(op), now, ks);
    // A CPU op holds its worker for the dispatch cost and the op itself; its outputs are
    // allocated when the worker takes it.
    for (int t = V_.out_begin[op]; t < V_.out_begin[op + 1]; ++t) alloc(d, V_.tensor_bytes[t]);
    busy_up(d);
    if (ks == now)
      cpu_begin(op);
    else
      engine_.schedule(ks, Priority::KernelStart, kKernelStart, op);
  }
}

void StepRun::cpu_begin(std::int32_t op) {
  // The op's kernel time is its work at the whole socket; the socket is shared (cpu_share.hpp).
  const DeviceId d = dev_[op];
  if (track_) item_start_[op] = engine_.now();
  const bool loader = std::binary_search(V_.loader_begin, V_.loader_end, op);
  const double cap = loader ? std::min(1.0, 1.0 / V_.workers[d]) : V_.cpu_cap[d];
  cpus_.start(engine_.now(), d, static_cast<double>(kernel_time(op)), cap, op);
}

void StepRun::launch_end(std::int32_t op) {
  need(op);  // its consumers on the same stream
  const DeviceId d = dev_[op];
  const SimTime now = engine_.now();
  const std::int32_t item = n_ + op;
  finish_item(item, now);
  if (opt_.trace) opt_.trace->launch(d, V_.op_name(op), item_start_[item], now);
  launcher_busy_[d] = false;
  launcher_last_[d] = item;
  if (coll_ && coll_->call_of_op[op] >= 0) {  // a collective rank op: no stream slot to wait for
    coll_rank_start(op, item);
    dispatch(d);
    return;
  }

  int s = 0;
  const int ns = V_.streams[d];
  if (V_.pinned[op] >= 0) {
    s = V_.pinned[op] % ns;
  } else {
    for (int k = 1; k < ns; ++k)
      if (stream_free_[d * max_streams_ + k] < stream_free_[d * max_streams_ + s]) s = k;
  }
  op_stream_[op] = s;
  const std::size_t si = static_cast<std::size_t>(d) * max_streams_ + s;
  const SimTime start = std::max(now, stream_free_[si]);
  if (track_) pred_[op] = (start > now && stream_last_[si] >= 0) ? stream_last_[si] : item;
  // The stream's next kernel may start the GPU's kernel gap after this one ends (its own drain and
  // dispatch, even when the next is already queued); an op that launches no kernel costs nothing.
  const std::int64_t kt = kernel_time(op);
  stream_free_[si] = start + kt + (kt > 0 ? V_.gap_ns[d] : 0);
  stream_last_[si] = op;
  if (coll_) op_shift_[op] = stream_shift_[si];
  // Consumers on the same stream may be launched now.
  for (int t = V_.out_begin[op]; t < V_.out_begin[op + 1]; ++t)
    for (int i = V_.cons_begin[t]; i < V_.cons_begin[t + 1]; ++i)
      if (stream_dep(op, V_.cons[i])) credit(V_.cons[i], item);
  if (start == now)
    kernel_start(op);
  else
    engine_.schedule(start, Priority::KernelStart, kKernelStart, op);
  dispatch(d);
}

void StepRun::kernel_start(std::int32_t op) {
  const DeviceId d = dev_[op];
  if (!V_.is_gpu[d]) {
    cpu_begin(op);
    return;
  }
  std::int64_t ns = kernel_time(op);
  if (coll_) [[unlikely]] {
    ns = beside_calls(op, ns);
    if (ns < 0) return;
  }
  for (int t = V_.out_begin[op]; t < V_.out_begin[op + 1]; ++t) alloc(d, V_.tensor_bytes[t]);
  busy_up(d);
  if (track_) item_start_[op] = engine_.now();
  engine_.schedule(engine_.now() + ns, Priority::KernelEnd, kKernelEnd, op);
}

std::int64_t StepRun::beside_calls(std::int32_t op, std::int64_t ns) {
  const DeviceId d = dev_[op];
  const std::size_t si = static_cast<std::size_t>(d) * max_streams_ + op_stream_[op];
  if (op_shift_[op] != stream_shift_[si]) {
    // A kernel before it on its stream was stretched after this start was set: it ends later.
    engine_.schedule(engine_.now() + (stream_shift_[si] - op_shift_[op]), Priority::KernelStart,
                     kKernelStart, op);
    op_shift_[op] = stream_shift_[si];
    return -1;
  }
  if (coll_ctas_[d] == 0 && coll_hbm_[d] == 0) return ns;
  const double f = beside_call_stretch(V_.graph->ops[op], V_.cluster->devices[d].spec,
                                       coll_ctas_[d], static_cast<double>(coll_hbm_[d]));
  const auto longer = static_cast<std::int64_t>(std::llround(static_cast<double>(ns) * f));
  if (longer <= ns) return ns;
  // The kernels queued behind it on its stream start that much later (their starts were set
  // from stream_free_ before this one started; beside_calls moves each once it comes up).
  stream_shift_[si] += longer - ns;
  stream_free_[si] += longer - ns;
  op_shift_[op] = stream_shift_[si];
  return longer;
}

void StepRun::busy_up(DeviceId d) {
  if (busy_count_[d]++ == 0) busy_since_[d] = engine_.now();
}

void StepRun::busy_down(DeviceId d) {
  if (--busy_count_[d] == 0) busy_total_[d] += engine_.now() - busy_since_[d];
}

void StepRun::tensor_unref(std::int32_t t) {
  if (--tensor_refs_[t] == 0) release(tdev_[t], V_.tensor_bytes[t]);
}

void StepRun::kernel_end(std::int32_t op) {
  need(op);  // its consumers, copies and control successors
  const DeviceId d = dev_[op];
  const SimTime now = engine_.now();
  finish_item(op, now);
  if (opt_.trace)
    opt_.trace->kernel(d, op_stream_[op], V_.op_name(op), V_.graph ? V_.graph->ops[op].type : "",
                       item_start_[op], now);
  busy_down(d);
  ++ops_done_[d];

  // Inputs: release the local tensor or the received copy.
  for (int i = V_.in_begin[op]; i < V_.in_begin[op + 1]; ++i) {
    const std::int32_t c = in_copy_[i];
    if (c < 0) {
      tensor_unref(V_.ins[i]);
    } else if (--copies_[c].refs == 0) {
      release(d, V_.tensor_bytes[copies_[c].tensor]);
    }
  }
  // Outputs: local consumers, outgoing copies; unconsumed outputs die now.
  for (int t = V_.out_begin[op]; t < V_.out_begin[op + 1]; ++t) {
    if (tensor_refs_[t] == 0) release(d, V_.tensor_bytes[t]);
    for (int i = V_.cons_begin[t]; i < V_.cons_begin[t + 1]; ++i) {
      const std::int32_t c = V_.cons[i];
      if (dev_[c] == d && !stream_dep(op, c)) credit(c, op);
    }
    for (int c = copy_begin_[t]; c < copy_begin_[t + 1]; ++c) {
      if (copies_[c].nseg == 0) {
        unreachable_ = true;
        continue;
      }
      request_segment(copies_[c].seg, op);
    }
  }
  for (int i = V_.ctl_begin[op]; i < V_.ctl_begin[op + 1]; ++i) credit(V_.ctl[i], op);

  if (!V_.is_gpu[d]) {
    free_slots_[d].push_back(op_stream_[op]);
    worker_last_[d] = op;
    dispatch(d);
  }
}

void StepRun::request_segment(std::int32_t seg, std::int32_t pred) {
  const Seg& s = segs_[seg];
  if (track_) seg_path_[seg] = {engine_.now(), 0, pred};
  // A copy run by a GPU's engine is first issued (cudaMemcpyAsync) on that GPU's host thread.
  if (s.pool >= 0 && V_.issue_ns[s.pool / 3] > 0) {
    const DeviceId g = s.pool / 3;
    issue_q_[g].push_back(seg);
    dispatch(g);
    return;
  }
  request_engine(seg, pred);
}

void StepRun::copy_issued(std::int32_t seg) {
  const DeviceId g = segs_[seg].pool / 3;
  const SimTime now = engine_.now();
  const std::int32_t item = issue_item(seg);
  finish_item(item, now);
  if (opt_.trace) opt_.trace->launch(g, "issue " + segment_name(seg), item_start_[item], now);
  launcher_busy_[g] = false;
  launcher_last_[g] = item;
  if (track_) seg_path_[seg] = {now, 0, item};
  request_engine(seg, item);
  dispatch(g);
}

void StepRun::request_engine(std::int32_t seg, std::int32_t pred) {
  const Seg& s = segs_[seg];
  if (s.pool < 0 || pool_free_[s.pool] > 0) {
    begin_segment(seg, pred);
  } else {
    pool_queue_[s.pool].push_back(seg);
  }
}

void StepRun::begin_segment(std::int32_t seg, std::int32_t pred) {
  Seg& s = segs_[seg];
  const SimTime now = engine_.now();
  if (s.pool >= 0) {
    --pool_free_[s.pool];
    s.slot = static_cast<std::int16_t>(pool_slots_[s.pool].back());
    pool_slots_[s.pool].pop_back();
  }
  const std::int32_t item = 2 * n_ + 2 * seg;
  if (track_) {
    pred_[item] = pred;
    item_start_[item] = now;
  }
  const Copy& c = copies_[s.copy];
  const RouteSegment& rs = segment_of(seg);
  // The destination buffer (or the staging buffer in host memory) exists while the copy runs.
  alloc(rs.to, V_.tensor_bytes[c.tensor]);
  const std::int64_t latency = rs.latency.ns + (s.pool >= 0 ? V_.dma_ns[s.pool / 3] : 0);
  if (latency > 0) {
    engine_.schedule(now + latency, Priority::LatencyDone, kLatencyDone, seg);
  } else {
    if (track_) seg_path_[seg].flow_start = now;
    net_.start(now, rs.hops, static_cast<double>(V_.tensor_bytes[c.tensor]), seg);
  }
}

void StepRun::segment_done(std::int32_t seg) {
  const Seg& s = segs_[seg];
  const SimTime now = engine_.now();
  const std::int32_t item = 2 * n_ + 2 * seg;
  finish_item(item, now);
  Copy& c = copies_[s.copy];
  const RouteSegment& rs = segment_of(seg);
  ++transfers_;
  transferred_ += V_.tensor_bytes[c.tensor];
  if (opt_.trace) {
    const std::string name = segment_name(seg);
    const DeviceId owner = s.pool >= 0 ? s.pool / 3 : rs.from;
    const std::int32_t producer = V_.tensor_op[c.tensor];
    const TraceSink::CopyOf of{producer, c.tensor - V_.out_begin[producer], c.dst, s.k, c.nseg};
    opt_.trace->copy(owner, static_cast<TraceSink::EngineKind>(s.pool >= 0 ? s.pool % 3 : 0),
                     s.pool >= 0 ? s.slot : -1, name, V_.tensor_bytes[c.tensor], item_start_[item],
                     now, of);
    for (const Hop& h : rs.hops)
      opt_.trace->link_flow(h.link, name, V_.tensor_bytes[c.tensor], seg_path_[seg].flow_start, now,
                            h.forward);
  }
  if (s.pool >= 0) {
    ++pool_free_[s.pool];
    pool_slots_[s.pool].push_back(s.slot);
    auto& q = pool_queue_[s.pool];
    if (pool_head_[s.pool] < q.size()) {
      const std::int32_t next = q[pool_head_[s.pool]++];
      const std::int32_t p =
          !track_ ? -1 : (seg_path_[next].ready == now ? seg_path_[next].ready_pred : item);
      begin_segment(next, p);
    }
  }
  const bool last = s.k + 1 == c.nseg;
  if (s.k == 0)
    tensor_unref(c.tensor);  // the source buffer is no longer read
  else
    release(rs.from, V_.tensor_bytes[c.tensor]);  // the host staging buffer
  if (!last) {
    request_segment(seg + 1, item);
    return;
  }
  for (int i = V_.cons_begin[c.tensor]; i < V_.cons_begin[c.tensor + 1]; ++i)
    if (dev_[V_.cons[i]] == c.dst) credit(V_.cons[i], item);
}

// A rank op's kernel starts when launched (NCCL's kernel waits on the GPU for its peers); the
// call starts when its last rank has, and moves its bytes after its fixed time (latency, fill).
void StepRun::coll_rank_start(std::int32_t op, std::int32_t launch) {
  const DeviceId d = dev_[op];
  op_stream_[op] = V_.streams[d] - 1;  // the NCCL stream (collective_expand.cpp)
  for (int t = V_.out_begin[op]; t < V_.out_begin[op + 1]; ++t) alloc(d, V_.tensor_bytes[t]);
  busy_up(d);
  if (track_) {
    item_start_[op] = engine_.now();
    pred_[op] = launch;
  }
  const std::int32_t call = coll_->call_of_op[op];
  coll_ctas_[d] += coll_->calls[call].ctas;  // its CTAs hold SMs from launch, waiting for peers
  if (++coll_started_[call] < static_cast<std::int32_t>(coll_->calls[call].ops.size())) return;
  coll_last_[call] = op;
  engine_.schedule(engine_.now() + coll_->calls[call].fixed.ns, Priority::LatencyDone, kCollFlows,
                   call);
}

void StepRun::coll_flows(std::int32_t call) {
  const ExpandedCall& k = coll_->calls[call];
  if (k.routes.empty()) {
    coll_end(call);
    return;
  }
  coll_left_[call] = static_cast<std::int32_t>(k.routes.size());
  coll_flow_start_[call] = engine_.now();
  for (OpId op : k.ops) coll_hbm_[dev_[op]] += std::llround(k.hbm_bytes_per_s);
  for (std::size_t i = 0; i < k.routes.size(); ++i)
    net_.start(engine_.now(), k.routes[i], k.bytes[i],
               -1 - (coll_flow_begin_[call] + static_cast<std::int32_t>(i)));
}

void StepRun::coll_flow_done(std::int32_t flow) {
  const std::int32_t call = coll_flow_call_[flow];
  if (opt_.trace) {
    const ExpandedCall& k = coll_->calls[call];
    const std::size_t i = static_cast<std::size_t>(flow - coll_flow_begin_[call]);
    const std::string& name = V_.graph->ops[k.ops.front()].collective->id;
    const auto bytes = static_cast<std::int64_t>(k.bytes[i]);
    for (const Hop& h : k.routes[i])
      opt_.trace->link_flow(h.link, name, bytes, coll_flow_start_[call], engine_.now(), h.forward);
  }
  if (--coll_left_[call] == 0) coll_end(call);
}

// Every rank op of the call ends now; each waited for the rank that started last.
void StepRun::coll_end(std::int32_t call) {
  const std::int32_t cause = track_ ? pred_[coll_last_[call]] : -1;
  const ExpandedCall& k = coll_->calls[call];
  for (OpId op : k.ops) {
    coll_ctas_[dev_[op]] -= k.ctas;
    if (!k.routes.empty()) coll_hbm_[dev_[op]] -= std::llround(k.hbm_bytes_per_s);
  }
  // Through the queue at this instant rather than by calling kernel_end(): a third call site
  // would change how the compiler inlines the engine's hottest path for every graph.
  for (OpId op : coll_->calls[call].ops) {
    if (track_) pred_[op] = cause;
    engine_.schedule(engine_.now(), Priority::KernelEnd, kKernelEnd, op);
  }
}

void StepRun::on_event(Engine& /*e*/, const Event& ev) {
  switch (ev.kind) {
    case kLaunchEnd:
      launch_end(ev.index);
      break;
    case kKernelStart:
      kernel_start(ev.index);
      break;
    case kKernelEnd:
      kernel_end(ev.index);
      break;
    case kCopyIssued:
      copy_issued(ev.index);
      break;
    case kCollFlows:
      coll_flows(ev.index);
      break;
    case kLatencyDone: {
      const Seg& s = segs_[ev.index];
      if (track_) seg_path_[ev.index].flow_start = engine_.now();
      const RouteSegment& rs = segment_of(ev.index);
      net_.start(engine_.now(), rs.hops,
                 static_cast<double>(V_.tensor_bytes[copies_[s.copy].tensor]), ev.index);
      break;
    }
    default:
      assert(false);
  }
}

void StepRun::on_resource(Engine& /*e*/, int model) {
  // Copy the tags: finishing one may start flows or CPU ops, which does not touch completed(),
  // but keep the loop independent of that. Completions at one instant are handled in tag order
  // (collective flows, then copy segments by id; CPU ops by id), not in the models' slot order,
  // which depends on the history of slot reuse: the same-instant order stays a property of the
  // work itself, as the event queue's (docs/engine.md, "Same-instant order").
  if (model == 0) {
    const auto done = net_.completed();
    done_scratch_.assign(done.begin(), done.end());
    std::sort(done_scratch_.begin(), done_scratch_.end());
    for (std::int32_t tag : done_scratch_) {
      if (tag >= 0)
        segment_done(tag);
      else
        coll_flow_done(-1 - tag);  // a collective's flow (coll_flows)
    }
  } else {
    const auto done = cpus_.completed();
    done_scratch_.assign(done.begin(), done.end());
    std::sort(done_scratch_.begin(), done_scratch_.end());
    for (std::int32_t op : done_scratch_) kernel_end(op);
  }
}

std::string StepRun::tensor_name(std::int32_t t) const {
  const std::int32_t op = V_.tensor_op[t];
  const int k = t - V_.out_begin[op];
  if (V_.graph && !V_.graph->ops[op].outputs[k].name.empty())
    return V_.graph->ops[op].outputs[k].name;
  return V_.op_name(op) + ":" + std::to_string(k);
}

std::string StepRun::segment_name(std::int32_t seg) const {
  const Copy& c = copies_[segs_[seg].copy];
  std::string name = tensor_name(c.tensor) + " -> " + V_.cluster->devices[c.dst].name;
  if (c.nseg > 1) {
    // Staged: say which half and through which host memory.
    const RouteSegment& rs = segment_of(seg);
    const DeviceId host = segs_[seg].k == 0 ? rs.to : rs.from;
    name += " (" + std::to_string(segs_[seg].k + 1) + "/" + std::to_string(c.nseg) + " via " +
            V_.cluster->devices[host].name + ")";
  }
  return name;
}

void StepRun::view() {
  const Prepared& P = P_;
  PreparedView& v = V_;
  v.cluster = P.cluster;
  v.graph = P.graph;
  v.n_dev = P.n_dev;
  v.n_ops = P.n_ops;
  v.out_begin = P.out_begin.data();
  v.tensor_op = P.tensor_op.data();
  v.cons_begin = P.cons_begin.data();
  v.cons = P.cons.data();
  v.cons_slot = P.cons_slot.data();
  v.ins = P.ins.data();
  v.in_begin = P.in_begin.data();
  v.ctl_begin = P.ctl_begin.data();
  v.ctl = P.ctl.data();
  v.n_pred = P.n_pred.data();
  v.rank = P.rank.data();
  v.pinned = P.pinned.data();
  v.streams = P.streams.data();
  v.workers = P.workers.data();
  v.engines = P.engines.data();
  v.dev_class = P.dev_class.data();
  v.loader_begin = P.loader_ops.data();
  v.loader_end = P.loader_ops.data() + P.loader_ops.size();
  v.tensor_bytes = P.tensor_bytes.data();
  v.launch_ns = P.launch_ns.data();
  v.capacity = P.capacity.data();
  v.reserved = P.reserved.data();
  v.issue_ns = P.issue_ns.data();
  v.dma_ns = P.dma_ns.data();
  v.gap_ns = P.gap_ns.data();
  v.step_host_ns = P.step_host_ns.data();
  v.opt_host_ns = P.opt_host_ns.data();
  v.host_ns = P.host_ns.empty() ? nullptr : P.host_ns.data();
  v.kind_req = P.kind_req.data();
  v.is_update = P.is_update.data();
  is_gpu_.assign(P.is_gpu.begin(), P.is_gpu.end());
  v.is_gpu = is_gpu_.data();
  v.cpu_cap = P.cpu_cap.data();
}

Outcome StepRun::run(const Placement& placement) {
  wall0_ = std::chrono::steady_clock::now();
  view();
  sync_ = nullptr;
  n_ = P_.n_ops;
  w_ = n_;
  deferred_mem_ = false;
  reset_ops(&placement);
  reset_collectives();
  reset_devices();
  build_copies(0, P_.n_tensors);

  // Persistent state is resident from t = 0.
  for (const auto& [o, bytes] : P_.persistent) alloc(dev_[o], bytes);
  for (int i = 0; i < P_.n_ops && !oom_stop(); ++i) {
    const OpId o = V_.topo_at(i);
    if (missing_[o] == 0) make_ready(o, -1);
  }
  if (!oom_stop()) engine_.run(*this);

  Outcome out = outcome();
  out.sim_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  return out;
}

// The sequential run's steps, as the builder files the step: per-op state as ops are filed,
// copies as the watermark passes their tensors, ops made ready at t = 0 once no source can
// follow, persistent memory at the end (settle_memory). Every decision is the sequential one.
void StepRun::run_streamed(StreamSync& sync) {
  wall0_ = std::chrono::steady_clock::now();
  sync_ = &sync;
  n_ = sync.total;
  w_ = 0;
  f_ = 0;
  tw_ = 0;
  deferred_mem_ = true;
  kern_ = sync.kernel;
  dev_class_ = sync.dev_class;
  reset_ops(nullptr);
  reset_collectives();
  reset_devices();
  cap_.assign(V_.n_dev, std::numeric_limits<std::int64_t>::max());
  for (;;) {  // until no source (op without inputs) can follow: they are all ready at t = 0
    const std::uint32_t v = sync.version.load(std::memory_order_acquire);
    if (sync.abort.load(std::memory_order_acquire)) throw StreamAborted{};
    if (sync.sources.load(std::memory_order_acquire) >= 0) break;
    sync.version.wait(v, std::memory_order_acquire);
  }
  absorb(sync.watermark.load(std::memory_order_acquire));
  const std::int32_t sources = sync.sources.load(std::memory_order_acquire);
  if (f_ < sources) setup_ops(f_, sources), f_ = sources;
  for (int o = 0; o < sources; ++o)
    if (missing_[o] == 0) make_ready(o, -1);
  engine_.run(*this);
}

void StepRun::wait_for(std::int32_t op) {
  for (;;) {
    const std::uint32_t v = sync_->version.load(std::memory_order_acquire);
    if (sync_->abort.load(std::memory_order_acquire)) throw StreamAborted{};
    const std::int32_t w = sync_->watermark.load(std::memory_order_acquire);
    if (w > w_) absorb(w);
    if (op < w_) return;
    sync_->version.wait(v, std::memory_order_acquire);
  }
}

// Loads of the builder's counts: the watermark first, then the ops filed (published before it).
void StepRun::absorb(std::int32_t w) {
  const std::int32_t f = sync_->filed.load(std::memory_order_acquire);
  if (f > f_) {
    setup_ops(f_, f);
    f_ = f;
  }
  if (w > w_) {
    const std::int32_t t1 = V_.out_begin[w];  // the tensors of ops below w
    build_copies(tw_, t1);
    tw_ = t1;
    w_ = w;
  }
}

void StepRun::setup_ops(std::int32_t o0, std::int32_t o1) {
  for (std::int32_t o = o0; o < o1; ++o) {
    const DeviceId d = sync_->device_of[o];
    // A bad placement: the whole step's run reports it (after the builder's own errors).
    if (d < 0 || d >= V_.n_dev || (V_.kind_req[o] >= 0 && (V_.kind_req[o] == 1) != V_.is_gpu[d]))
      throw StreamAborted{};
    dev_[o] = static_cast<std::int16_t>(d);
    missing_[o] = V_.n_pred[o];
    for (int t = V_.out_begin[o]; t < V_.out_begin[o + 1]; ++t)
      tdev_.push_back(static_cast<std::int16_t>(d));
  }
}

Outcome StepRun::finish_streamed() {
  view();  // the builder has finished: its arrays are final (and may have moved once detached)
  if (f_ < n_) setup_ops(f_, n_);
  f_ = n_;
  settle_memory();
  Outcome out = outcome();
  out.sim_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  return out;
}

// What run() gets by allocating persistent state at t = 0 and checking each allocation against
// the capacity: the persistent allocations in op order first, then every later allocation adds
// the device's persistent total, so a device first passes its capacity at the first rise of its
// dynamic peak above capacity - persistent, and the peak is persistent + the dynamic peak.
void StepRun::settle_memory() {
  const int nd = V_.n_dev;
  std::vector<std::int64_t> pers(nd, 0);
  for (const auto& [o, bytes] : P_.persistent) {
    const DeviceId d = dev_[o];
    pers[d] += bytes;
    if (pers[d] > V_.capacity[d] && !oom_[d]) {
      oom_[d] = true;
      oom_order_.push_back(d);
    }
  }
  std::vector<std::pair<std::int64_t, DeviceId>> later;
  for (DeviceId d = 0; d < nd; ++d) {
    if (!oom_[d])
      for (const auto& [seq, bytes] : rises_[d])
        if (bytes + pers[d] > V_.capacity[d]) {
          later.emplace_back(seq, d);
          oom_[d] = true;
          break;
        }
    peak_mem_[d] = std::max(peak_mem_[d] + pers[d], pers[d]);
    cur_mem_[d] += pers[d];
  }
  std::sort(later.begin(), later.end());
  for (const auto& [seq, d] : later) oom_order_.push_back(d);
}

void StepRun::reset_ops(const Placement* placement) {
  const int n = n_, nd = V_.n_dev;
  if (placement) {
    dev_.assign(placement->device_of.begin(), placement->device_of.end());
    tdev_.resize(P_.n_tensors);
    for (int t = 0; t < P_.n_tensors; ++t) tdev_[t] = dev_[V_.tensor_op[t]];
    missing_.assign(P_.n_pred.begin(), P_.n_pred.end());
    in_copy_.resize(P_.ins.size());
    kern_.resize(P_.kernel_ns.size() / std::max<std::size_t>(1, n));
    for (std::size_t c = 0; c < kern_.size(); ++c) kern_[c] = P_.kernel_ns.data() + c * n;
    dev_class_ = P_.dev_class;
    cap_ = P_.capacity;
  } else {  // streamed: set up as ops are filed
    dev_.assign(n, 0);
    tdev_.clear();
    missing_.assign(n, 0);
    in_copy_.assign(sync_->inputs, -1);
  }
  single_stream_.resize(nd);
  max_streams_ = 1;
  for (int d = 0; d < nd; ++d) {
    max_streams_ = std::max(max_streams_, V_.streams[d]);
    single_stream_[d] = V_.is_gpu[d] && V_.streams[d] == 1;
  }
  engine_.reset();
  net_.reset();
  cpus_.reset();
  copies_.clear();
  segs_.clear();
  copy_begin_.assign(1, 0);
  tensor_refs_.clear();
  seen_.assign(nd, -1);
  on_dev_.assign(nd, 0);
  copy_at_.assign(nd, -1);
  alloc_seq_ = 0;
  rises_.assign(deferred_mem_ ? nd : 0, {});
  oom_order_.clear();
  last_item_ = -1;
  end_time_ = 0;
  transfers_ = 0;
  transferred_ = 0;
  unreachable_ = false;
  op_stream_.assign(n, 0);
  track_ = opt_.record_critical_path || opt_.trace != nullptr;
  ready_time_.assign(track_ ? n : 0, 0);
  ready_pred_.assign(track_ ? n : 0, -1);
}

void StepRun::reset_collectives() {
  if (!coll_) return;
  const std::size_t nc = coll_->calls.size();
  coll_started_.assign(nc, 0);
  coll_left_.assign(nc, 0);
  coll_last_.assign(nc, -1);
  coll_flow_start_.assign(nc, 0);
  coll_flow_begin_.assign(nc + 1, 0);
  coll_flow_call_.clear();
  coll_ctas_.assign(V_.n_dev, 0);
  coll_hbm_.assign(V_.n_dev, 0);
  stream_shift_.assign(static_cast<std::size_t>(V_.n_dev) * max_streams_, 0);
  op_shift_.assign(n_, 0);
  for (std::size_t c = 0; c < nc; ++c) {
    coll_flow_begin_[c + 1] =
        coll_flow_begin_[c] + static_cast<std::int32_t>(coll_->calls[c].routes.size());
    coll_flow_call_.insert(coll_flow_call_.end(), coll_->calls[c].routes.size(),
                           static_cast<std::int32_t>(c));
  }
}

void StepRun::reset_devices() {
  const int nd = V_.n_dev;
  // Ops and launches; build_copies adds copy segments and issues.
  const std::size_t items = track_ ? 2 * static_cast<std::size_t>(n_) : 0;
  pred_.assign(items, -1);
  item_start_.assign(items, 0);
  item_end_.assign(items, 0);
  seg_path_.clear();

  ready_.resize(nd);
  for (auto& r : ready_) r.clear();
  launcher_busy_.assign(nd, false);
  step_paid_.assign(nd, false);
  opt_paid_.assign(nd, false);
  launcher_last_.assign(nd, -1);
  issue_q_.resize(nd);
  for (auto& q : issue_q_) q.clear();
  issue_head_.assign(nd, 0);
  stream_free_.assign(static_cast<std::size_t>(nd) * max_streams_, 0);
  stream_last_.assign(static_cast<std::size_t>(nd) * max_streams_, -1);
  free_slots_.resize(nd);
  for (auto& f : free_slots_) f.clear();
  worker_last_.assign(nd, -1);
  for (int d = 0; d < nd; ++d)
    if (!V_.is_gpu[d])
      for (int w = V_.workers[d] - 1; w >= 0; --w) free_slots_[d].push_back(w);
  busy_count_.assign(nd, 0);
  busy_since_.assign(nd, 0);
  busy_total_.assign(nd, 0);
  ops_done_.assign(nd, 0);
  cur_mem_.assign(nd, 0);
  peak_mem_.assign(nd, 0);
  oom_.assign(nd, false);
  pool_free_.assign(3 * nd, 0);
  pool_slots_.resize(3 * nd);
  pool_queue_.resize(3 * nd);
  for (auto& v : pool_slots_) v.clear();
  for (auto& v : pool_queue_) v.clear();
  pool_head_.assign(3 * nd, 0);
  for (int p = 0; p < 3 * nd; ++p) {
    pool_free_[p] = V_.engines[p];
    for (int s = V_.engines[p] - 1; s >= 0; --s) pool_slots_[p].push_back(s);
  }
  engine_.queue().reserve(64);
}

Outcome StepRun::outcome() {
  const int nd = V_.n_dev;
  Outcome out;
  out.step_time = Duration{end_time_};
  if (opt_.stop_at_first_oom && !oom_order_.empty()) out.step_time = Duration{engine_.now()};
  out.unreachable = unreachable_;
  out.oom = !oom_order_.empty();
  for (DeviceId d : oom_order_)
    out.oom_devices.push_back({d, V_.cluster->devices[d].name, Bytes{peak_mem_[d] + V_.reserved[d]},
                               Bytes{V_.capacity[d] + V_.reserved[d]}, Bytes{V_.reserved[d]}});
  out.devices.resize(nd);
  const double step = static_cast<double>(out.step_time.ns);
  for (int d = 0; d < nd; ++d) {
    DeviceOutcome& o = out.devices[d];
    o.name = V_.cluster->devices[d].name;
    // An op cut short by stop_at_first_oom still counts up to the stop.
    if (busy_count_[d] > 0) busy_total_[d] += engine_.now() - busy_since_[d];
    o.busy = Duration{busy_total_[d]};
    o.utilization = step > 0 ? static_cast<double>(busy_total_[d]) / step : 0.0;
    o.peak_memory = Bytes{peak_mem_[d]};
    o.memory_capacity = Bytes{V_.capacity[d] + V_.reserved[d]};
    o.reserved_memory = Bytes{V_.reserved[d]};
    o.oom = oom_[d];
    o.ops = ops_done_[d];
  }
  const auto& lb = net_.link_bytes();
  const auto& lbusy = net_.link_busy();
  out.links.resize(V_.cluster->links.size());
  for (std::size_t l = 0; l < out.links.size(); ++l) {
    out.links[l].name = V_.cluster->links[l].name;
    out.links[l].bytes = Bytes{static_cast<std::int64_t>(lb[l])};
    out.links[l].busy = Duration{lbusy[l]};
  }
  out.transfers = transfers_;
  out.transferred = Bytes{transferred_};
  out.events = engine_.events_processed();
  if (opt_.record_critical_path && last_item_ >= 0) out.critical_path = critical_path();
  return out;
}

std::vector<PathItem> StepRun::critical_path() const {
  const std::int32_t n = n_;
  const std::size_t items = 2 * static_cast<std::size_t>(n) + 2 * segs_.size();
  // The chain is followed back sequentially (cheap); naming its items ("op<id>", a copy's
  // tensor and route) is most of the cost on a huge step's 10^6 items, and runs in parallel.
  std::vector<std::int32_t> chain;
  for (std::int32_t it = last_item_; it >= 0; it = pred_[it]) {
    chain.push_back(it);
    if (chain.size() > items) break;  // guards a cycle bug
  }
  std::reverse(chain.begin(), chain.end());
  std::vector<PathItem> path(chain.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chain.size(), 1024),
                    [&](const tbb::blocked_range<std::size_t>& r) {
                      for (std::size_t i = r.begin(); i != r.end(); ++i) {
                        const std::int32_t it = chain[i];
                        PathItem& p = path[i];
                        p.start = item_start_[it];
                        p.end = item_end_[it];
                        if (it < 2 * n) {
                          p.kind = it < n ? PathItem::Kind::Op : PathItem::Kind::Launch;
                          const std::int32_t op = it < n ? it : it - n;
                          p.name = V_.op_name(op);
                          p.device = dev_[op];
                        } else if ((it - 2 * n) % 2 == 0) {
                          const std::int32_t seg = (it - 2 * n) / 2;
                          p.kind = PathItem::Kind::Copy;
                          p.name = segment_name(seg);
                          p.device = segment_of(seg).to;
                        } else {
                          const std::int32_t seg = (it - 2 * n) / 2;
                          p.kind = PathItem::Kind::Issue;
                          p.name = segment_name(seg);
                          p.device = segs_[seg].pool / 3;
                        }
                      }
                    });
  return path;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct BatchOracle::Impl {
  Impl(const Cluster& c, const Graph& g) : cluster(c), graph(g) {}
  // Borrowed, not copied: the caller keeps both alive (simulate.hpp). A copy of a 1M-op graph
  // was ~690 MB, as much as the caller's own.
  const Cluster& cluster;
  const Graph& graph;
  SimOptions options;
  KernelCostModel costs;
  std::unique_ptr<Prepared> prepared;
  bool collectives = false;  // collective times depend on the placement: simulate() each
  // One reusable run per worker thread: warm buffers, no allocation per placement. Which thread
  // evaluates which placement cannot change a result (each run starts from a full reset).
  mutable tbb::enumerable_thread_specific<std::unique_ptr<StepRun>> runs;
  StepRun& local() const {
    auto& r = runs.local();
    if (!r) r = std::make_unique<StepRun>(*prepared, options);
    return *r;
  }
};

BatchOracle::BatchOracle(const Cluster& cluster, const Graph& graph, SimOptions options,
                         KernelCostModel costs)
    : impl_(std::make_unique<Impl>(cluster, graph)) {
  impl_->options = options;
  impl_->options.trace = nullptr;  // a sink is not thread-safe
  impl_->costs = std::move(costs);
  impl_->prepared = std::make_unique<Prepared>(impl_->cluster, impl_->graph, impl_->costs);
  impl_->collectives = has_collectives(impl_->graph);
}

BatchOracle::~BatchOracle() = default;

const Cluster& BatchOracle::cluster() const {
  return impl_->cluster;
}
const Graph& BatchOracle::graph() const {
  return impl_->graph;
}

Outcome BatchOracle::evaluate(const Placement& p) const {
  check_placement(*impl_->prepared, p);
  if (impl_->collectives)
    return simulate(impl_->cluster, impl_->graph, p, impl_->options, impl_->costs);
  return impl_->local().run(p);
}

std::vector<Outcome> BatchOracle::evaluate(const std::vector<Placement>& ps,
                                           int max_threads) const {
  for (const Placement& p : ps) check_placement(*impl_->prepared, p);
  std::vector<Outcome> out(ps.size());
  auto body = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, ps.size(), 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t i = r.begin(); i != r.end(); ++i) {
                          out[i] = impl_->collectives
                                       ? simulate(impl_->cluster, impl_->graph, ps[i],
                                                  impl_->options, impl_->costs)
                                       : impl_->local().run(ps[i]);
                        }
                      });
  };
  if (max_threads > 0) {
    tbb::task_arena arena(max_threads);
    arena.execute(body);
  } else {
    body();
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// StepGraph and its op-by-op builder.

StepGraph::StepGraph(std::unique_ptr<Prepared> p) : p_(std::move(p)) {}
StepGraph::StepGraph(const Cluster& cluster, const Graph& graph, const KernelCostModel& costs) {
  if (has_collectives(graph))
    throw InputError("<graph " + graph.name + ">", "",
                     "a graph without collective ops for a StepGraph (simulate(cluster, graph, "
                     "...) expands them per placement), got collective ops");
  p_ = std::make_unique<Prepared>(cluster, graph, costs);
}
StepGraph::StepGraph(StepGraph&&) noexcept = default;
StepGraph& StepGraph::operator=(StepGraph&&) noexcept = default;
StepGraph::~StepGraph() = default;
int StepGraph::num_ops() const {
  return p_->n_ops;
}

std::size_t StepGraph::memory_bytes() const {
  const Prepared& P = *p_;
  auto b = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  return b(P.out_begin) + b(P.tensor_bytes) + b(P.tensor_op) + b(P.cons_begin) + b(P.cons) +
         b(P.cons_slot) + b(P.in_begin) + b(P.ins) + b(P.ctl_begin) + b(P.ctl) + b(P.n_pred) +
         b(P.rank) + b(P.pinned) + b(P.kind_req) + b(P.persistent) + b(P.loader_ops) +
         b(P.kernel_ns) + b(P.host_ns) + b(P.is_update);
}

struct StepGraphBuilder::State {
  KernelCostModel costs;
  std::unique_ptr<Prepared> p;
  std::vector<std::int32_t> pred, pred_begin{0};  // distinct control predecessors per op
  // Per cost class, per op so far. A device starts in the class of the first earlier device with
  // the same cost inputs and leaves it for a class of its own at the first op that costs
  // differently on it (the values before that op are its old class's): exact for every device.
  std::vector<std::vector<std::int64_t>> kernel, host;  // host: empty until some op has one
  bool any_host = false;
  std::vector<std::int32_t> tmp;
  // Per device: an earlier device that every op costs the same on (same cost inputs, launch
  // overhead and calibration entry: all KernelCostModel reads), or -1. A 1,024-GPU cluster then
  // prices each op once per distinct device, not 1,024 times.
  std::vector<std::int32_t> twin;
  std::string where(int o) const { return "op " + std::to_string(o); }
  // Priced devices (twin < 0), ascending, and a batch's prices: op i, priced device j at
  // i * priced.size() + j (kernel; host, -1 = the device's launch overhead).
  std::vector<DeviceId> priced;
  std::vector<std::int64_t> kbuf, hbuf;
  // The generator's watermark (set_watermark): no op filed from now on reads below it.
  std::int32_t declared = 0;
  bool sources_done = false;
  // Streamed (simulate_while_building): the loop reads P's arrays below the published counts
  // while this thread appends to them, so they are reserved and never reallocated while it reads
  // (one that would be leaves the loop first: leave()). Consumers per tensor and control
  // successors per op are linked lists over the input slots and control edges, appended in op
  // order (so ascending), copied into P's CSR arrays when the watermark passes their op.
  StreamSync* sync = nullptr;
  std::int32_t fixed = 0;  // ops whose consumers and successors are in the CSR arrays
  std::vector<std::int32_t> cons_head, cons_tail, slot_next, slot_op;  // per tensor; per slot
  std::vector<std::int32_t> ctl_head, ctl_tail, pred_next, pred_op;    // per op; per control edge
  std::vector<std::vector<std::int64_t>> skernel, shost;               // per priced device, per op
  void check(const Op& op, int o) const;
  /// Streamed: the loop stops reading (it falls back); waits until it has.
  void leave();
  /// Streamed: leaves the loop if `v` cannot take `more` elements without reallocating.
  template <class V>
  void room(const V& v, std::size_t more = 1) {
    if (sync && !sync->detached.load(std::memory_order_acquire) && v.size() + more > v.capacity())
      leave();
  }
  void append_streamed(const Op& op, int o, const std::int64_t* k, const std::int64_t* h);
  /// Index into `priced` of the device device `d` costs as (itself or its twin).
  [[nodiscard]] std::int32_t priced_class(DeviceId d) const {
    const DeviceId r = twin[d] >= 0 ? twin[d] : d;
    return static_cast<std::int32_t>(std::lower_bound(priced.begin(), priced.end(), r) -
                                     priced.begin());
  }
  /// Streamed: copies the lists of ops [fixed, declared) into the CSR arrays and publishes.
  void publish();
  /// Prices `op` on every priced device into k[j], h[j]: pure, so ops price in parallel.
  void price(const Op& op, std::int64_t* k, std::int64_t* h) const;
  /// Files op o's prices into the cost classes (sequential: classes split in op order).
  void add_costs(int o, const std::int64_t* k, const std::int64_t* h);
  void append(const Op& op, const std::int64_t* k, const std::int64_t* h);
};

StepGraphBuilder::StepGraphBuilder(const Cluster& cluster, KernelCostModel costs)
    : s_(std::make_unique<State>()) {
  s_->costs = std::move(costs);
  s_->p = std::make_unique<Prepared>(cluster);
  Prepared& P = *s_->p;
  if (P.n_dev > 32767)
    throw InputError("<cluster " + cluster.name + ">", "devices", "at most 32767 devices");
  P.out_begin.push_back(0);
  P.in_begin.push_back(0);
  P.dev_class.assign(P.n_dev, -1);
  for (int d = 0; d < P.n_dev; ++d) {
    for (int r = 0; r < d && P.dev_class[d] < 0; ++r)
      if (same_cost_inputs(cluster.devices[r], cluster.devices[d])) P.dev_class[d] = P.dev_class[r];
    if (P.dev_class[d] < 0) {
      P.dev_class[d] = static_cast<std::int32_t>(s_->kernel.size());
      s_->kernel.emplace_back();
      s_->host.emplace_back();
    }
  }
  s_->twin.assign(P.n_dev, -1);
  for (int d = 0; d < P.n_dev; ++d) {
    const Device& dd = cluster.devices[d];
    for (int r = 0; r < d && s_->twin[d] < 0; ++r) {
      const Device& rr = cluster.devices[r];
      if (s_->twin[r] < 0 && cost_twins(rr, dd, s_->costs)) s_->twin[d] = r;
    }
    if (s_->twin[d] < 0) s_->priced.push_back(d);
  }
}
StepGraphBuilder::~StepGraphBuilder() = default;

void StepGraphBuilder::reserve(std::size_t ops, std::size_t inputs) {
  Prepared& P = *s_->p;
  for (auto* v : {&P.out_begin, &P.tensor_op, &P.in_begin, &P.n_pred, &P.rank, &P.pinned})
    v->reserve(ops + 1);
  P.tensor_bytes.reserve(ops);
  P.kind_req.reserve(ops);
  P.is_update.reserve(ops);
  P.ins.reserve(inputs);
  s_->pred_begin.reserve(ops + 1);
  for (auto& k : s_->kernel) k.reserve(ops);
}

void StepGraphBuilder::State::check(const Op& op, int o) const {
  const Prepared& P = *p;
  // Far below the 32-bit limits (always, but in a test of them) skip the checks' strings.
  constexpr std::size_t kFar = std::size_t{1} << 30;
  if (static_cast<std::size_t>(o) >= kFar || P.tensor_bytes.size() >= kFar ||
      P.ins.size() >= kFar || op.outputs.size() >= kFar || op.inputs.size() >= kFar) {
    check_index_limit("<step builder>", "ops", static_cast<std::size_t>(o) + 1);
    check_index_limit("<step builder>", "tensors", P.tensor_bytes.size() + op.outputs.size());
    check_index_limit("<step builder>", "input edges", P.ins.size() + op.inputs.size());
  }
  if (op.collective)
    throw InputError(
        "<step builder>", where(o),
        "no collective op (collectives need a Graph), got \"" + op.collective->id + "\"");
  for (const TensorOut& t : op.outputs)
    if (t.bytes.v < 0)
      throw InputError("<step builder>", where(o),
                       "output bytes >= 0, got " + std::to_string(t.bytes.v));
  for (const TensorRef& r : op.inputs)
    if (r.op < 0 || r.op >= o || r.output < 0 ||
        r.output >= P.out_begin[r.op + 1] - P.out_begin[r.op])
      throw InputError("<step builder>", where(o),
                       "inputs that are outputs of earlier ops, got op " + std::to_string(r.op) +
                           " output " + std::to_string(r.output));
  for (OpId c : op.control_inputs)
    if (c < 0 || c >= o)
      throw InputError("<step builder>", where(o),
                       "control inputs that are earlier ops, got op " + std::to_string(c));
  // The generator's promise (set_watermark): a break of it is the generator's bug.
  for (const TensorRef& r : op.inputs)
    if (r.op < declared)
      throw InputError("<step builder>", where(o),
                       "inputs at or above the watermark " + std::to_string(declared) +
                           " (set_watermark), got op " + std::to_string(r.op));
  for (OpId c : op.control_inputs)
    if (c < declared)
      throw InputError("<step builder>", where(o),
                       "control inputs at or above the watermark " + std::to_string(declared) +
                           " (set_watermark), got op " + std::to_string(c));
  if (sources_done && op.inputs.empty() && op.control_inputs.empty())
    throw InputError("<step builder>", where(o),
                     "an input or a control input (set_watermark: no source after its "
                     "sources_done), got none");
}

void StepGraphBuilder::State::price(const Op& op, std::int64_t* k, std::int64_t* h) const {
  const Cluster& c = *p->cluster;
  for (std::size_t j = 0; j < priced.size(); ++j) {
    const Device& dev = c.devices[priced[j]];
    k[j] = std::max<std::int64_t>(0, costs.op_time(op, dev).ns);
    const auto h_opt = costs.host_time(op, dev);
    h[j] = h_opt ? std::max<std::int64_t>(0, h_opt->ns) : -1;
  }
}

void StepGraphBuilder::State::add_costs(int o, const std::int64_t* kp, const std::int64_t* hp) {
  Prepared& P = *p;
  // Twins follow their device's class; finish() files them.
  for (std::size_t j = 0; j < priced.size(); ++j) {
    const DeviceId d = priced[j];
    const std::int64_t k = kp[j], h = hp[j];
    if (h >= 0 && !any_host) {  // the first op with its own host time: -1 for the ops before
      any_host = true;
      for (std::size_t x = 0; x < host.size(); ++x) host[x].assign(kernel[x].size(), -1);
    }
    auto cls = static_cast<std::size_t>(P.dev_class[d]);
    if (static_cast<int>(kernel[cls].size()) == o) {  // the first device of its class at this op
      kernel[cls].push_back(k);
      if (any_host) host[cls].push_back(h);
      continue;
    }
    if (kernel[cls][o] == k && (any_host ? host[cls][o] : -1) == h) continue;
    // Costs differently from its class from this op on: a class of its own.
    const std::size_t nc = kernel.size();
    kernel.emplace_back(kernel[cls].begin(), kernel[cls].begin() + o);
    host.emplace_back();
    if (any_host) host[nc].assign(host[cls].begin(), host[cls].begin() + o);
    kernel[nc].push_back(k);
    if (any_host) host[nc].push_back(h);
    P.dev_class[d] = static_cast<std::int32_t>(nc);
  }
}

OpId StepGraphBuilder::add_op(const Op& op) {
  State& S = *s_;
  S.kbuf.resize(S.priced.size());
  S.hbuf.resize(S.priced.size());
  S.price(op, S.kbuf.data(), S.hbuf.data());
  S.append(op, S.kbuf.data(), S.hbuf.data());
  return S.p->n_ops - 1;
}

void StepGraphBuilder::add_ops(std::span<const Op> ops) {
  State& S = *s_;
  PricedOps priced;
  priced.kernel.swap(S.kbuf);  // reuse the buffers' capacity
  priced.host.swap(S.hbuf);
  price_ops(ops, priced);
  add_priced_ops(ops, priced);
  S.kbuf.swap(priced.kernel);
  S.hbuf.swap(priced.host);
}

void StepGraphBuilder::price_ops(std::span<const Op> ops, PricedOps& out) const {
  const State& S = *s_;
  const std::size_t np = S.priced.size();
  out.kernel.resize(ops.size() * np);
  out.host.resize(ops.size() * np);
  // Pricing (the cost model: roofline, calibration look-ups by string) is most of a builder's
  // time and pure: ops price in parallel, then file in order, exactly as add_op one by one.
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, ops.size(), 256),
                    [&](const tbb::blocked_range<std::size_t>& r) {
                      for (std::size_t i = r.begin(); i != r.end(); ++i)
                        S.price(ops[i], out.kernel.data() + i * np, out.host.data() + i * np);
                    });
}

void StepGraphBuilder::add_priced_ops(std::span<const Op> ops, const PricedOps& priced) {
  State& S = *s_;
  const std::size_t np = S.priced.size();
  if (priced.kernel.size() != ops.size() * np || priced.host.size() != ops.size() * np)
    throw std::invalid_argument("StepGraphBuilder::add_priced_ops: prices of another batch");
  for (std::size_t i = 0; i < ops.size(); ++i)
    S.append(ops[i], priced.kernel.data() + i * np, priced.host.data() + i * np);
}

void StepGraphBuilder::State::append(const Op& op, const std::int64_t* kp, const std::int64_t* hp) {
  Prepared& P = *p;
  const int o = P.n_ops;
  check(op, o);
  if (sync) {
    append_streamed(op, o, kp, hp);
    return;
  }
  for (const TensorOut& t : op.outputs) {
    P.tensor_bytes.push_back(t.bytes.v);
    P.tensor_op.push_back(o);
  }
  P.out_begin.push_back(static_cast<std::int32_t>(P.tensor_bytes.size()));
  tmp.clear();
  for (const TensorRef& r : op.inputs) tmp.push_back(P.out_begin[r.op] + r.output);
  std::sort(tmp.begin(), tmp.end());
  tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
  P.ins.insert(P.ins.end(), tmp.begin(), tmp.end());
  P.in_begin.push_back(static_cast<std::int32_t>(P.ins.size()));
  std::int32_t n_pred = static_cast<std::int32_t>(tmp.size());
  tmp.assign(op.control_inputs.begin(), op.control_inputs.end());
  std::sort(tmp.begin(), tmp.end());
  tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
  pred.insert(pred.end(), tmp.begin(), tmp.end());
  pred_begin.push_back(static_cast<std::int32_t>(pred.size()));
  P.n_pred.push_back(n_pred + static_cast<std::int32_t>(tmp.size()));
  P.rank.push_back(o);  // ids are in topological order
  P.pinned.push_back(op.stream ? *op.stream : -1);
  P.kind_req.push_back(!op.device_kind ? -1 : (*op.device_kind == DeviceKind::Gpu ? 1 : 0));
  P.is_update.push_back(op.phase == Phase::Update);
  if (op.persistent.v > 0) P.persistent.emplace_back(o, op.persistent.v);
  if (op.type == kLoaderType) P.loader_ops.push_back(o);
  add_costs(o, kp, hp);
  ++P.n_ops;
}

void StepGraphBuilder::State::append_streamed(const Op& op, int o, const std::int64_t* kp,
                                              const std::int64_t* hp) {
  Prepared& P = *p;
  if (o >= sync->total) leave();  // more ops than declared: the loop's arrays are too small
  room(P.tensor_bytes, op.outputs.size());
  room(P.tensor_op, op.outputs.size());
  room(P.out_begin);
  for (const TensorOut& t : op.outputs) {
    P.tensor_bytes.push_back(t.bytes.v);
    P.tensor_op.push_back(o);
    cons_head.push_back(-1);
    cons_tail.push_back(-1);
  }
  P.out_begin.push_back(static_cast<std::int32_t>(P.tensor_bytes.size()));
  tmp.clear();
  for (const TensorRef& r : op.inputs) tmp.push_back(P.out_begin[r.op] + r.output);
  std::sort(tmp.begin(), tmp.end());
  tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
  room(P.ins, tmp.size());
  room(P.in_begin);
  for (std::int32_t t : tmp) {  // appended in op order: each tensor's list stays ascending
    const auto i = static_cast<std::int32_t>(P.ins.size());
    P.ins.push_back(t);
    slot_next.push_back(-1);
    slot_op.push_back(o);
    (cons_head[t] < 0 ? cons_head[t] : slot_next[cons_tail[t]]) = i;
    cons_tail[t] = i;
  }
  P.in_begin.push_back(static_cast<std::int32_t>(P.ins.size()));
  const auto n_in = static_cast<std::int32_t>(tmp.size());
  tmp.assign(op.control_inputs.begin(), op.control_inputs.end());
  std::sort(tmp.begin(), tmp.end());
  tmp.erase(std::unique(tmp.begin(), tmp.end()), tmp.end());
  ctl_head.push_back(-1);
  ctl_tail.push_back(-1);
  for (std::int32_t q : tmp) {
    const auto j = static_cast<std::int32_t>(pred.size());
    pred.push_back(q);
    pred_next.push_back(-1);
    pred_op.push_back(o);
    (ctl_head[q] < 0 ? ctl_head[q] : pred_next[ctl_tail[q]]) = j;
    ctl_tail[q] = j;
  }
  pred_begin.push_back(static_cast<std::int32_t>(pred.size()));
  for (auto* v : {&P.n_pred, &P.rank, &P.pinned}) room(*v);
  room(P.kind_req);
  room(P.is_update);
  P.n_pred.push_back(n_in + static_cast<std::int32_t>(tmp.size()));
  P.rank.push_back(o);
  P.pinned.push_back(op.stream ? *op.stream : -1);
  P.kind_req.push_back(!op.device_kind ? -1 : (*op.device_kind == DeviceKind::Gpu ? 1 : 0));
  P.is_update.push_back(op.phase == Phase::Update ? 1 : 0);
  if (op.persistent.v > 0) P.persistent.emplace_back(o, op.persistent.v);  // read at the end
  if (op.type == kLoaderType) {
    leave();  // the loop looks loader ops up in a list that grows: not while it reads
    P.loader_ops.push_back(o);
  }
  // Prices per priced device (a class each: exact, as every device costs as its priced twin).
  for (std::size_t j = 0; j < priced.size(); ++j) {
    room(skernel[j]);
    skernel[j].push_back(kp[j]);
    if (hp[j] >= 0 && !any_host) {  // the loop runs without per-op host times: leave it
      leave();
      any_host = true;
      for (auto& h : shost) h.assign(static_cast<std::size_t>(o), -1);
    }
  }
  if (any_host)
    for (std::size_t j = 0; j < priced.size(); ++j) shost[j].push_back(hp[j]);
  ++P.n_ops;
}

void StepGraphBuilder::State::leave() {
  sync->abort.store(true, std::memory_order_release);
  sync->bump();
  sync->detached.wait(false, std::memory_order_acquire);
}

void StepGraphBuilder::State::publish() {
  Prepared& P = *p;
  for (; fixed < declared; ++fixed) {
    const std::int32_t o = fixed;
    for (int t = P.out_begin[o]; t < P.out_begin[o + 1]; ++t) {
      for (std::int32_t i = cons_head[t]; i >= 0; i = slot_next[i]) {
        room(P.cons);
        room(P.cons_slot);
        P.cons.push_back(slot_op[i]);
        P.cons_slot.push_back(i);
      }
      room(P.cons_begin);
      P.cons_begin.push_back(static_cast<std::int32_t>(P.cons.size()));
    }
    for (std::int32_t j = ctl_head[o]; j >= 0; j = pred_next[j]) {
      room(P.ctl);
      P.ctl.push_back(pred_op[j]);
    }
    room(P.ctl_begin);
    P.ctl_begin.push_back(static_cast<std::int32_t>(P.ctl.size()));
  }
  const std::int32_t filed = std::min(P.n_ops, sync->total);
  sync->filed.store(filed, std::memory_order_release);
  if (sources_done && sync->sources.load(std::memory_order_relaxed) < 0)
    sync->sources.store(filed, std::memory_order_release);
  sync->watermark.store(std::min(fixed, filed), std::memory_order_release);
  sync->bump();
}

void StepGraphBuilder::set_watermark(OpId w, bool sources_done) {
  State& S = *s_;
  if (w < S.declared || w > S.p->n_ops)
    throw InputError("<step builder>", "watermark",
                     "a watermark from the last one (" + std::to_string(S.declared) +
                         ") to the ops filed (" + std::to_string(S.p->n_ops) + "), got " +
                         std::to_string(w));
  S.declared = w;
  S.sources_done = S.sources_done || sources_done;
  if (S.sync) S.publish();
}

std::vector<std::pair<OpId, int>> StepGraphBuilder::consumers_so_far(int t) const {
  const State& S = *s_;
  const Prepared& P = *S.p;
  std::vector<std::pair<OpId, int>> out;
  if (t < 0 || t >= static_cast<int>(P.tensor_bytes.size())) return out;
  if (S.sync) {  // the incremental lists
    for (std::int32_t i = S.cons_head[t]; i >= 0; i = S.slot_next[i])
      out.emplace_back(S.slot_op[i], i);
    return out;
  }
  for (int o = 0; o < P.n_ops; ++o)
    for (int i = P.in_begin[o]; i < P.in_begin[o + 1]; ++i)
      if (P.ins[i] == t) out.emplace_back(o, i);
  return out;
}

StepGraph StepGraphBuilder::finish() && {
  Prepared& P = *s_->p;
  P.n_tensors = static_cast<int>(P.tensor_bytes.size());
  if (s_->sync) {  // streamed: CSR arrays built as the watermark passed; a class per priced device
    State& S = *s_;
    S.declared = P.n_ops;
    S.publish();
    S.sync = nullptr;
    for (auto* v : {&S.cons_head, &S.cons_tail, &S.slot_next, &S.slot_op, &S.ctl_head, &S.ctl_tail,
                    &S.pred_next, &S.pred_op, &S.pred, &S.pred_begin})
      std::vector<std::int32_t>().swap(*v);  // the lists are in the CSR arrays now
    const std::size_t n = static_cast<std::size_t>(P.n_ops);
    P.kernel_ns.reserve(S.priced.size() * n);
    for (auto& k : S.skernel) {
      P.kernel_ns.insert(P.kernel_ns.end(), k.begin(), k.end());
      std::vector<std::int64_t>().swap(k);
    }
    if (S.any_host) {
      P.host_ns.reserve(S.priced.size() * n);
      for (auto& h : S.shost) {
        P.host_ns.insert(P.host_ns.end(), h.begin(), h.end());
        std::vector<std::int64_t>().swap(h);
      }
    }
    for (int d = 0; d < P.n_dev; ++d) P.dev_class[d] = S.priced_class(d);
    P.device_parameters(*P.cluster, S.costs);
    return StepGraph(std::move(S.p));
  }
  // Class-major flat arrays, one class at a time so the peak stays near the result.
  P.kernel_ns.reserve(s_->kernel.size() * static_cast<std::size_t>(P.n_ops));
  for (auto& k : s_->kernel) {
    P.kernel_ns.insert(P.kernel_ns.end(), k.begin(), k.end());
    std::vector<std::int64_t>().swap(k);
  }
  if (s_->any_host) {
    P.host_ns.reserve(s_->host.size() * static_cast<std::size_t>(P.n_ops));
    for (auto& h : s_->host) {
      P.host_ns.insert(P.host_ns.end(), h.begin(), h.end());
      std::vector<std::int64_t>().swap(h);
    }
  }
  for (int d = 0; d < P.n_dev; ++d)  // ascending: a twin's device is earlier and no twin
    if (s_->twin[d] >= 0) P.dev_class[d] = P.dev_class[s_->twin[d]];
  P.transpose_edges(s_->pred, s_->pred_begin);
  P.device_parameters(*P.cluster, s_->costs);
  return StepGraph(std::move(s_->p));
}

namespace {
/// Runs f() on `threads` oneTBB threads (0: the default arena).
template <class F>
auto in_arena(int threads, F&& f) {
  if (threads <= 0) return f();
  tbb::task_arena arena(threads);
  return arena.execute(std::forward<F>(f));
}
}  // namespace

Outcome simulate(const StepGraph& step, const Placement& placement, const SimOptions& options) {
  const Prepared& P = *step.p_;
  check_placement(P, placement);
  return in_arena(options.threads, [&] {  // the critical path's items are named in parallel
    StepRun run(P, options);
    return run.run(placement);
  });
}

namespace {
Outcome simulate_in_arena(const Cluster& cluster, const Graph& graph, const Placement& placement,
                          const SimOptions& options, const KernelCostModel& costs) {
  if (has_collectives(graph)) {  // collective rank ops become timed ops on an NCCL stream
    const ExpandedGraph x = expand_collectives(cluster, graph, placement);
    const Prepared prepared(x.cluster, x.graph, costs);
    check_placement(prepared, placement);
    StepRun run(prepared, options, &x);
    return run.run(placement);
  }
  const Prepared prepared(cluster, graph, costs);
  check_placement(prepared, placement);
  StepRun run(prepared, options);
  return run.run(placement);
}
}  // namespace

Outcome simulate(const Cluster& cluster, const Graph& graph, const Placement& placement,
                 const SimOptions& options, const KernelCostModel& costs) {
  return in_arena(options.threads,
                  [&] { return simulate_in_arena(cluster, graph, placement, options, costs); });
}

namespace {
nlohmann::json path_item_json(const PathItem& p) {
  const char* kind = p.kind == PathItem::Kind::Op      ? "op"
                     : p.kind == PathItem::Kind::Copy  ? "copy"
                     : p.kind == PathItem::Kind::Issue ? "issue"
                                                       : "launch";
  return {{"kind", kind},
          {"name", p.name},
          {"device", p.device},
          {"start_s", static_cast<double>(p.start) * 1e-9},
          {"end_s", static_cast<double>(p.end) * 1e-9}};
}

/// The critical path as nlohmann's dump(indent) writes it as the value of a top-level key,
/// rendered in parallel chunks: a huge step's path (10^6 items, hundreds of MB) was a fifth of
/// the process, sequential. Each item is dumped alone and re-indented to its depth (2), which
/// is byte for byte what dump() of the whole document writes (tests/sim/simulate_test.cpp).
std::string path_json(const std::vector<PathItem>& path, int indent) {
  if (path.empty()) return "[]";
  const std::string item_pad = indent >= 0 ? "\n" + std::string(2 * indent, ' ') : "";
  constexpr std::size_t kChunk = 4096;
  const std::size_t chunks = (path.size() + kChunk - 1) / kChunk;
  std::vector<std::string> text(chunks);
  tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
    std::string& out = text[c];
    const std::size_t end = std::min(path.size(), (c + 1) * kChunk);
    for (std::size_t i = c * kChunk; i < end; ++i) {
      if (i > 0) out += ',';
      out += item_pad;
      const std::string item = path_item_json(path[i]).dump(indent);
      for (char ch : item) {
        if (ch == '\n') {
          out += item_pad;  // one level deeper than a top-level dump: 2 * indent more
        } else {
          out += ch;
        }
      }
    }
  });
  std::size_t total = 2 + (indent >= 0 ? 1 + static_cast<std::size_t>(indent) : 0);
  for (const std::string& t : text) total += t.size();
  std::string out;
  out.reserve(total);
  out += '[';
  for (const std::string& t : text) out += t;
  if (indent >= 0) out += "\n" + std::string(indent, ' ');
  out += ']';
  return out;
}
}  // namespace

std::string outcome_to_json(const Outcome& o, int indent) {
  using nlohmann::json;
  json j;
  j["step_time_s"] = o.step_time.seconds();
  j["step_time_ns"] = o.step_time.ns;
  j["oom"] = o.oom;
  j["unreachable"] = o.unreachable;
  json ooms = json::array();
  for (const OomInfo& x : o.oom_devices)
    ooms.push_back({{"device", x.device_name},
                    {"needed_bytes", x.needed.v},
                    {"capacity_bytes", x.capacity.v},
                    {"reserved_bytes", x.reserved.v}});
  j["oom_devices"] = std::move(ooms);
  json devs = json::array();
  for (const DeviceOutcome& d : o.devices)
    devs.push_back({{"name", d.name},
                    {"busy_s", d.busy.seconds()},
                    {"utilization", d.utilization},
                    {"peak_memory_bytes", d.peak_memory.v},
                    {"memory_capacity_bytes", d.memory_capacity.v},
                    {"reserved_memory_bytes", d.reserved_memory.v},
                    {"oom", d.oom},
                    {"ops", d.ops}});
  j["devices"] = std::move(devs);
  json links = json::array();
  for (const LinkOutcome& l : o.links)
    links.push_back({{"name", l.name}, {"bytes", l.bytes.v}, {"busy_s", l.busy.seconds()}});
  j["links"] = std::move(links);
  j["transfers"] = o.transfers;
  j["transferred_bytes"] = o.transferred.v;
  j["events"] = o.events;
  j["sim_wall_s"] = o.sim_wall_s;
  // Keys are sorted, so "critical_path" is the first: spliced in right after the opening brace.
  const std::string rest = j.dump(indent);
  const std::string pad = indent >= 0 ? "\n" + std::string(indent, ' ') : "";
  const std::string path = path_json(o.critical_path, indent);
  std::string out;
  out.reserve(rest.size() + path.size() + pad.size() + 20);
  out += '{';
  out += pad;
  out += indent >= 0 ? "\"critical_path\": " : "\"critical_path\":";
  out += path;
  out += ',';
  out.append(rest, 1);  // rest opens with '{' and its newline and pad come next
  return out;
}

}  // namespace placesim::sim

namespace placesim::sim {

struct StreamedBuild {
  static BuiltStep run(const Cluster& cluster, const KernelCostModel& costs, const StepSize& size,
                       const Placement& placement,
                       const std::function<void(StepGraphBuilder&)>& build,
                       const SimOptions& options);
};

BuiltStep StreamedBuild::run(const Cluster& cluster, const KernelCostModel& costs,
                             const StepSize& size, const Placement& placement,
                             const std::function<void(StepGraphBuilder&)>& build,
                             const SimOptions& options) {
  constexpr std::int64_t kMax = 2147483646;
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  StepGraphBuilder b(cluster, costs);
  const int threads =
      options.threads > 0 ? options.threads : tbb::this_task_arena::max_concurrency();
  const bool fits = size.ops > 0 && size.ops < kMax && size.tensors >= 0 && size.tensors < kMax &&
                    size.inputs >= 0 && size.inputs < kMax;
  // The overlap needs a second thread; it cannot be exact when an OOM stops the run (all
  // persistent memory is allocated at t = 0) or a trace records absolute memory.
  if (threads < 2 || !fits || options.stop_at_first_oom || options.trace != nullptr ||
      placement.device_of.capacity() <
          static_cast<std::size_t>(std::max<std::int64_t>(0, size.ops))) {
    if (fits) b.reserve(static_cast<std::size_t>(size.ops), static_cast<std::size_t>(size.inputs));
    in_arena(options.threads, [&] { build(b); });
    BuiltStep r{std::move(b).finish(), {}, false, since()};
    r.outcome = simulate(r.step, placement, options);
    return r;
  }
  StepGraphBuilder::State& S = *b.s_;
  Prepared& P = *S.p;
  const auto ops = static_cast<std::size_t>(size.ops);
  const auto tensors = static_cast<std::size_t>(size.tensors);
  const auto inputs = static_cast<std::size_t>(size.inputs);
  b.reserve(ops, inputs);
  P.tensor_bytes.reserve(tensors);
  P.tensor_op.reserve(tensors);
  P.cons_begin.reserve(tensors + 1);
  P.cons_begin.assign(1, 0);
  P.cons.reserve(inputs);
  P.cons_slot.reserve(inputs);
  P.ctl_begin.reserve(ops + 1);
  P.ctl_begin.assign(1, 0);
  P.ctl.reserve(ops);  // control edges: one per op at most in the generators that stream
  S.skernel.assign(S.priced.size(), {});
  S.shost.assign(S.priced.size(), {});
  StreamSync sync;
  sync.total = static_cast<std::int32_t>(size.ops);
  sync.inputs = P.ins.capacity();  // the loop's per-slot array: every slot the builder can file
  sync.device_of = placement.device_of.data();
  for (auto& k : S.skernel) {
    k.reserve(ops);
    sync.kernel.push_back(k.data());
  }
  for (int d = 0; d < P.n_dev; ++d) sync.dev_class.push_back(S.priced_class(d));
  P.device_parameters(cluster, S.costs);
  S.sync = &sync;

  StepRun run(P, options);
  // P's per-op arrays are reserved: their data stay where they are while filed. Taken here, not
  // on the loop's side once the builder runs: view() also reads P.n_ops, which the builder
  // increments (a data race ThreadSanitizer reported; the loop never uses that count).
  run.view();
  std::exception_ptr error;
  double build_s = 0;
  std::thread builder([&] {
    try {
      tbb::task_arena arena(std::max(1, threads - 1));  // generating, pricing, filing
      arena.execute([&] { build(b); });
      if (P.n_ops != sync.total) S.leave();  // the loop's arrays were sized for sync.total ops
      b.set_watermark(P.n_ops, true);
    } catch (...) {
      error = std::current_exception();
      sync.abort.store(true, std::memory_order_release);
      sync.bump();
    }
    build_s = since();
  });
  bool left = false;
  std::exception_ptr loop_error;
  try {
    in_arena(threads, [&] { run.run_streamed(sync); });
  } catch (const StreamAborted&) {
    left = true;
  } catch (...) {
    loop_error = std::current_exception();
  }
  sync.detached.store(true, std::memory_order_release);
  sync.detached.notify_all();
  builder.join();
  if (error) std::rethrow_exception(error);
  if (loop_error) std::rethrow_exception(loop_error);
  BuiltStep r{std::move(b).finish(), {}, false, build_s};
  if (left || sync.abort.load(std::memory_order_acquire)) {  // fall back: the sequential run
    r.outcome = simulate(r.step, placement, options);
    return r;
  }
  r.outcome = in_arena(threads, [&] { return run.finish_streamed(); });
  r.overlapped = true;
  return r;
}

BuiltStep simulate_while_building(const Cluster& cluster, const KernelCostModel& costs,
                                  const StepSize& size, const Placement& placement,
                                  const std::function<void(StepGraphBuilder&)>& build,
                                  const SimOptions& options) {
  return StreamedBuild::run(cluster, costs, size, placement, build, options);
}

}  // namespace placesim::sim

#include "calibration/validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "calibration/kernel_fit.hpp"
#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"

namespace placesim::calibration {

using sim::InputError;

namespace {

bool contains(const std::string& s, const char* p) {
  return s.find(p) != std::string::npos;
}

bool is_sync_call(const std::string& n) {
  return contains(n, "Synchronize") || n == "cudaMemcpy" || n == "hipMemcpy" ||
         n == "cudaStreamQuery" || n == "cudaEventQuery";
}
bool is_wait_event(const std::string& n) {
  return contains(n, "StreamWaitEvent");
}
bool is_record_event(const std::string& n) {
  return contains(n, "EventRecord");
}
bool is_nccl(const TraceEvent& e) {
  return e.kind == EventKind::Kernel && (contains(e.name, "nccl") || contains(e.name, "rccl"));
}
// A collective run by the host: torch's gloo backend records `gloo:all_reduce`, `gloo:broadcast`,
// ... on its worker threads (a framework op in torch 1.13's bare list, a user annotation later).
bool is_host_collective(const TraceEvent& e) {
  return (e.kind == EventKind::CpuOp || e.kind == EventKind::Annotation) &&
         e.name.rfind("gloo:", 0) == 0;
}

double union_busy_s(std::vector<std::pair<std::int64_t, std::int64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  std::int64_t total = 0, cur_b = 0, cur_e = -1;
  bool open = false;
  for (const auto& [b, e] : iv) {
    if (!open || b > cur_e) {
      if (open) total += cur_e - cur_b;
      cur_b = b;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_b;
  return static_cast<double>(total) * 1e-9;
}

// The catalog entry of the profiled GPU: --device-model when the catalog has it, else the
// trace's name (calibration_key), else A100-SXM4-40GB's figures with a note (a ROCm or a new part
// was replayed on them silently: the roofline and peak bounds of ops the calibration prices).
sim::DeviceSpec gpu_spec_for(const Profile& p, const std::string& device_model,
                             std::vector<std::string>& notes) {
  const sim::DeviceSpec* s = device_model.empty() ? nullptr : sim::find_device_model(device_model);
  if (!s && !p.device_name.empty()) s = sim::find_device_model(calibration_key(p.device_name, ""));
  if (!s) {
    s = sim::find_device_model("A100-SXM4-40GB");
    const std::string named =
        !device_model.empty()    ? "--device-model " + device_model + " is not in the catalog"
        : !p.device_name.empty() ? "GPU \"" + p.device_name + "\" is not in the catalog"
                                 : "the trace names no GPU (pass --device-model)";
    notes.push_back(p.source + ": " + named +
                    ": the replay's GPUs take A100-SXM4-40GB's figures "
                    "(peaks and memory rate for ops priced by the calibration's curves)");
  }
  sim::DeviceSpec spec = s ? *s : sim::DeviceSpec{};
  spec.kind = sim::DeviceKind::Gpu;
  spec.launch_overhead = sim::Duration{0};
  // Replay never allocates; a large capacity keeps the outcome free of OOM.
  spec.memory_capacity = sim::Bytes{std::int64_t{1} << 50};
  return spec;
}

sim::DeviceSpec cpu_spec(int threads) {
  const sim::DeviceSpec* s = sim::find_device_model("Xeon-E5-2698v4");
  sim::DeviceSpec spec = s ? *s : sim::DeviceSpec{};
  spec.kind = sim::DeviceKind::Cpu;
  spec.worker_threads = std::max(1, threads);
  spec.launch_overhead = sim::Duration{0};
  spec.memory_capacity = sim::Bytes{std::int64_t{1} << 50};
  return spec;
}

// One rank's collectives of one process group, in launch order: NCCL kernels, or (CPU-only
// traces) the host collectives of its gloo worker threads in start order.
struct NcclSeq {
  int rank = 0;
  std::vector<sim::OpId> ops;
  std::vector<std::vector<sim::OpId>> deps;  // their other inputs
  std::vector<std::int64_t> dur;
  std::vector<std::string> key;  // collective name / elements / dtype, when recorded
};
struct RankBuild {
  std::map<std::string, NcclSeq> nccl;  // process group name ("" when not recorded) -> kernels
  NcclSeq host;                         // host collectives (gloo), all groups in start order
  sim::OpId start = -1;                 // several ranks: the rank's start (its clock's offset)
};

std::string nccl_key(const TraceEvent& k) {
  std::string key;
  for (const char* a :
       {"Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype"})
    if (auto it = k.args.find(a); it != k.args.end()) key += it->second + "|";
  return key;
}

std::string gpu_device_name(std::size_t nranks, std::size_t r, int device) {
  return (nranks > 1 ? "r" + std::to_string(r) + "_" : std::string()) + "gpu" +
         std::to_string(device);
}

// The host items a thread's chain is built from: runtime calls, or, in a trace without GPU
// activity, the outermost framework ops of each thread (op-level CPU replay).
std::map<std::string, std::vector<const TraceEvent*>> host_items(const Profile& p, std::int64_t lo,
                                                                 std::int64_t hi, bool cpu_only) {
  std::map<std::string, std::vector<const TraceEvent*>> threads;
  std::map<std::string, std::int64_t> open_until;
  for (const TraceEvent& e : p.events) {
    if (e.ts_ns < lo || e.ts_ns >= hi) continue;
    if (!cpu_only && e.kind == EventKind::Runtime) threads[e.pid + "/" + e.tid].push_back(&e);
    if (cpu_only && (e.kind == EventKind::CpuOp || is_host_collective(e))) {
      const std::string th = e.pid + "/" + e.tid;
      auto it = open_until.find(th);
      if (it != open_until.end() && e.ts_ns < it->second) continue;  // nested in an outer op
      open_until[th] = e.end_ns();
      threads[th].push_back(&e);
    }
  }
  return threads;
}

// A device of the replay cluster as it is met: a CPU per host thread, a GPU per device id.
struct DevPlan {
  std::string name;
  sim::DeviceSpec spec;
  int rank;
};

// What build_replay accumulates over the ranks besides the ReplayGraph itself.
struct ReplayState {
  ReplayGraph& rg;
  std::vector<RankBuild> rb;
  std::vector<DevPlan> cpus, gpus;
  std::vector<int> rank_cpu_of;           // rank -> index of its main thread's CPU
  std::vector<std::int32_t> op_dev_slot;  // >=0 cpu index, <0 -(gpu index+1)
  std::map<std::string, StreamBusy> streams;

  // A new op on device slot `slot`, built in place: an Op is large, and moving it through
  // add_op(Op) by value cost a third of the replay's instructions.
  sim::Op& new_op(int slot) {
    op_dev_slot.push_back(slot);
    return rg.graph.ops.emplace_back();
  }
};

// Per host thread: its chain and the stream state its event record/wait calls refer to.
struct ThreadState {
  sim::OpId prev = -1;
  std::int64_t cursor = 0;
  sim::OpId last_launched = -1;
  std::pair<int, std::int64_t> last_launched_stream{-1, -1};
  sim::OpId recorded = -1;
  std::pair<int, std::int64_t> recorded_stream{-1, -1};
  bool record_fresh = false;  // a cudaEventRecord since the last wait
  sim::OpId pending_wait = -1;
  std::pair<int, std::int64_t> pending_wait_stream{-1, -1};
  // A wait without a record (DDP/NCCL): the streams' last launches at the wait.
  bool inferred_wait = false;
  std::map<std::pair<int, std::int64_t>, sim::OpId> inferred_from;
  std::size_t next_boundary = 0;  // main thread: next step whose first op is still to come
  int mark = -1;                  // main thread: step whose first op is the next host op
};

// Rank r's steps [first_step, first_step + num_steps) of its profile.
std::vector<ReplayStep> step_windows(const Profile& p, std::size_t r, std::size_t first_step,
                                     std::size_t num_steps) {
  const auto all_steps = profile_steps(p);
  if (first_step + num_steps > all_steps.size())
    throw InputError(
        p.source, "ProfilerStep",
        "steps " + std::to_string(first_step) + ".." + std::to_string(first_step + num_steps - 1) +
            " as in the first profile, got " + std::to_string(all_steps.size()) + " steps");
  std::vector<ReplayStep> rsteps;
  rsteps.reserve(num_steps);
  for (std::size_t s = 0; s < num_steps; ++s) {
    const StepWindow& w = all_steps[first_step + s];
    ReplayStep st;
    st.name = w.name;
    st.rank = static_cast<int>(r);
    st.begin_ns = w.begin_ns;
    st.end_ns = w.end_ns;
    st.next_begin_ns =
        first_step + s + 1 < all_steps.size() ? all_steps[first_step + s + 1].begin_ns : -1;
    st.annotated = w.name != "trace";
    rsteps.push_back(st);
  }
  return rsteps;
}

// The calibration's entry for the profile's device (--device-model, else the trace's device
// name as calibrate keys it), or null with a note.
const sim::DeviceCalibration* device_calibration(const Profile& p, const ValidateOptions& opt,
                                                 std::vector<std::string>& notes) {
  if (!opt.calibration) return nullptr;
  std::string key = opt.device_model;
  if (key.empty() && p.device_name.empty()) {
    // What calibrate writes for CPU traces; a GPU trace without a GPU name is never "cpu".
    if (p.has_gpu_activity()) {
      notes.push_back(p.source +
                      ": the trace names no GPU (no deviceProperties) and --device-model is not "
                      "given: every kernel keeps its measured time");
      return nullptr;
    }
    key = "cpu";
  }
  if (key.empty()) {
    key = p.device_name;
    for (const char* prefix : {"NVIDIA ", "Tesla ", "AMD "})
      if (key.rfind(prefix, 0) == 0) key = key.substr(std::string(prefix).size());
    std::replace(key.begin(), key.end(), ' ', '-');
  }
  if (auto it = opt.calibration->devices.find(key); it != opt.calibration->devices.end())
    return &it->second;
  // The trace's name and the calibration's key may spell one catalog model two ways ("H200" from
  // "NVIDIA H200", H200-SXM-141GB from calibrate --device-model): the catalog's names decide.
  if (const auto [dc, k] = sim::find_calibration_of_model(*opt.calibration, key); dc) {
    notes.push_back(p.source + ": the trace's device \"" + key + "\" takes the calibration's \"" +
                    k + "\" (one catalog model, " + sim::find_device_model(key)->model + ")");
    return dc;
  }
  notes.push_back(p.source + ": the calibration has no device \"" + key +
                  "\" (pass --device-model): every kernel keeps its measured time");
  return nullptr;
}

// A framework op's calibrated time in seconds: its exact signature, else its class model on the
// recorded shapes; -1 when the calibration has neither. `by_name`: priced by an op-name entry
// (exact, no shapes: the rule "exact-name").
double calibrated_s(const sim::DeviceCalibration& dcal, const TraceEvent& fo, bool& by_name) {
  const sim::Signature sig{fo.name, fo.input_dims, dtype_from_profiler(fo.input_types)};
  by_name = false;
  if (auto ex = dcal.exact.find(sig.key()); ex != dcal.exact.end()) {
    by_name = fo.input_dims.empty();
    return ex->second.seconds();
  }
  if (auto m = dcal.by_op_type.find(fo.name);
      m != dcal.by_op_type.end() && !fo.input_dims.empty()) {
    const WorkEstimate we = estimate_work(fo.name, fo.input_dims, sig.dtype);
    return m->second.predict_s(we.flops, we.bytes);
  }
  return -1;
}

void count_calibrated(ReplayStep& rs, bool calibrated, bool by_name) {
  ++(calibrated ? rs.calibrated_ops : rs.fallback_ops);
  rs.name_ops += calibrated && by_name;
}

// One rank's replay: every host thread a chain of host ops on its own CPU (runtime calls, or
// framework ops in a CPU-only trace, with the gaps between them as host work), every GPU activity
// an op on its stream after the call that launched it, synchronisations as edges.
class RankReplay {
 public:
  RankReplay(ReplayState& st, const std::vector<Profile>& ranks, std::size_t r,
             const ValidateOptions& opt)
      : st_(st),
        nranks_(ranks.size()),
        r_(r),
        p_(ranks[r]),
        opt_(opt),
        rsteps_(st.rg.steps[r]),
        lo_(rsteps_.front().begin_ns),
        hi_(rsteps_.back().end_ns),
        rp_(ranks.size() > 1 ? "r" + std::to_string(r) + "/" : "") {
    // The thread of the step annotation is the main thread; it runs to the step's end.
    for (const TraceEvent& e : p_.events)
      if (e.kind == EventKind::Annotation && e.name == rsteps_.front().name && e.ts_ns == lo_)
        main_thread_ = e.pid + "/" + e.tid;
    any_gpu_ = p_.has_gpu_activity();
    for (const TraceEvent& e : p_.events)
      if (e.on_gpu()) {
        if (e.correlation >= 0) gpu_by_corr_[e.correlation].push_back(&e);
        if (e.op >= 0) gpu_ns_of_op_[e.op] += e.dur_ns;
      }
    kernel_keyed_ = kernel_keyed(p_);
    dcal_ = device_calibration(p_, opt_, st_.rg.notes);
    if (any_gpu_) gpu_spec_ = gpu_spec_for(p_, opt_.device_model, st_.rg.notes);
  }

  void run() {
    assign_thread_cpus();
    if (nranks_ > 1) add_rank_start();
    add_carried_in();
    // All threads' calls in time order, so that stream order across threads is launch order.
    std::vector<std::pair<const TraceEvent*, std::string>> ordered;
    for (const auto& [th, calls] : threads_) {
      tstate_[th].cursor = lo_;
      for (const TraceEvent* c : calls) ordered.emplace_back(c, th);
    }
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.first->ts_ns < b.first->ts_ns; });
    for (const auto& [c, th] : ordered) on_call(*c, th);
    // The main thread runs through the remaining boundaries to the last step's end.
    ThreadState& mts = tstate_[main_thread_];
    cur_ = &mts;
    cpu_slot_ = slot_of_thread_.at(main_thread_);
    on_main_ = true;
    reach(hi_);
    cur_step_ = rsteps_.size() - 1;
    if (mts.cursor < hi_ || mts.prev < 0 || mts.mark >= 0)
      host_op("HostWork", "step-tail", hi_ - mts.cursor, hi_);
  }

 private:
  std::size_t step_of(std::int64_t ts) const {
    std::size_t s = 0;
    while (s + 1 < rsteps_.size() && ts >= rsteps_[s + 1].begin_ns) ++s;
    return s;
  }

  // One CPU device per host thread, the step's main thread first: host ops are measured wall
  // times of distinct threads, so they must not share one socket's compute (the engine divides a
  // CPU among the ops running on it, sim/cpu_share.hpp).
  void assign_thread_cpus() {
    threads_ = host_items(p_, lo_, hi_, !any_gpu_);
    if (!main_thread_.empty()) threads_[main_thread_];
    const int rank_cpu = static_cast<int>(st_.cpus.size());
    st_.rank_cpu_of.push_back(rank_cpu);
    cpu_slot_ = rank_cpu;
    auto add_thread_cpu = [&](const std::string& th) {
      const int k = static_cast<int>(slot_of_thread_.size());
      slot_of_thread_.emplace(th, static_cast<int>(st_.cpus.size()));
      st_.cpus.push_back(
          {"cpu" + std::to_string(r_) + (k == 0 ? std::string() : "-t" + std::to_string(k)),
           cpu_spec(1), static_cast<int>(r_)});
    };
    if (!main_thread_.empty()) add_thread_cpu(main_thread_);
    for (const auto& [th, calls] : threads_)
      if (!slot_of_thread_.contains(th)) add_thread_cpu(th);
    if (slot_of_thread_.empty()) add_thread_cpu("");
    if (main_thread_.empty()) main_thread_ = slot_of_thread_.begin()->first;
    threads_[main_thread_];
  }

  // GPU activities queued before the profiler's window opened: no runtime call of the trace
  // launched them and they start before its first call (the window of
  // v100pcie_rmsnorm-triton-square_cuda-only.json opens on the previous iteration's last kernel,
  // 174 us, which the next kernel waited for). Each is replayed first on its stream with its
  // measured time, after the rank's start; before, they were dropped from the replay and from the
  // measured GPU busy time both.
  void add_carried_in() {
    std::int64_t first_call = hi_;
    for (const auto& [th, calls] : threads_)
      for (const TraceEvent* c : calls) first_call = std::min(first_call, c->ts_ns);
    const sim::OpId after = nranks_ > 1 ? st_.rb[r_].start : -1;
    int n = 0;
    std::int64_t ns = 0;
    for (const TraceEvent& k : p_.events) {
      if (!k.on_gpu() || k.launch >= 0 || k.ts_ns < lo_ || k.ts_ns >= first_call) continue;
      cur_step_ = step_of(k.ts_ns);
      ThreadState none;  // no host thread's record/wait state is touched
      add_gpu_op(k, after, none);
      ++n;
      ns += k.dur_ns;
    }
    if (n > 0) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.3f", static_cast<double>(ns) * 1e-6);
      st_.rg.notes.push_back(p_.source + ": " + std::to_string(n) +
                             " GPU activities launched before the trace's window (" + ms +
                             " ms) replayed first on their streams, as measured");
    }
  }

  // Several ranks: every thread of the rank starts after the rank's start op, whose duration
  // align_rank_clocks sets once the collectives are matched (the ranks' clocks are not one).
  void add_rank_start() {
    cur_ = &tstate_[main_thread_];
    cpu_slot_ = slot_of_thread_.at(main_thread_);
    on_main_ = false;
    const sim::OpId s = host_op("HostWork", "rank-start", 0, lo_);
    --rsteps_[0].host_ops;
    st_.rb[r_].start = s;
    for (const auto& [th, calls] : threads_) tstate_[th].prev = s;
  }

  // A host op on the current thread's chain.
  sim::OpId host_op(const std::string& type, const std::string& name, std::int64_t dur,
                    std::int64_t meas_end) {
    sim::Op& op = st_.new_op(cpu_slot_);
    op.name = rp_ + "h" + std::to_string(seq_++) + ":" + name;
    op.type = type;
    op.device_kind = sim::DeviceKind::Cpu;
    op.measured = sim::Duration{std::max<std::int64_t>(0, dur)};
    if (cur_->prev >= 0) op.control_inputs.push_back(cur_->prev);
    cur_->prev = static_cast<sim::OpId>(st_.rg.graph.ops.size() - 1);
    st_.rg.measured_end_ns.push_back(meas_end - lo_);
    ++rsteps_[cur_step_].host_ops;
    if (on_main_) {
      if (cur_->mark >= 0) rsteps_[static_cast<std::size_t>(cur_->mark)].first_op = cur_->prev;
      cur_->mark = -1;
      st_.rg.main_tail.resize(nranks_, -1);
      st_.rg.main_tail[r_] = cur_->prev;
    }
    return cur_->prev;
  }

  // Main thread: host work up to each step boundary before `ts`, the boundary marked.
  void reach(std::int64_t ts) {
    if (!on_main_) return;
    while (cur_->next_boundary < rsteps_.size() && rsteps_[cur_->next_boundary].begin_ns <= ts) {
      const std::int64_t b = rsteps_[cur_->next_boundary].begin_ns;
      if (cur_->cursor < b) {
        cur_step_ = cur_->next_boundary == 0 ? 0 : cur_->next_boundary - 1;
        host_op("HostWork", "cpu", b - cur_->cursor, b);
        cur_->cursor = b;
      }
      cur_->mark = static_cast<int>(cur_->next_boundary);
      ++cur_->next_boundary;
    }
  }

  // One host item of thread `th`, after the host work since the thread's previous one.
  void on_call(const TraceEvent& c, const std::string& th) {
    ThreadState& ts = tstate_[th];
    cur_ = &ts;
    cpu_slot_ = slot_of_thread_.at(th);
    on_main_ = th == main_thread_;
    reach(c.ts_ns);
    cur_step_ = step_of(c.ts_ns);
    if (!on_main_ && !any_gpu_ && is_host_collective(c))
      issue_gap(c);
    else if (c.ts_ns > ts.cursor)
      host_gap(ts.cursor, c.ts_ns);
    ts.cursor = std::max(ts.cursor, c.end_ns());
    if (c.kind != EventKind::Runtime) {
      on_cpu_op(c);
      return;
    }
    const auto git = gpu_by_corr_.find(c.correlation);
    const bool launches = c.correlation >= 0 && git != gpu_by_corr_.end();
    if (is_sync_call(c.name) && !launches) {
      on_sync(c);
      return;
    }
    on_runtime(c, ts, launches ? &git->second : nullptr);
  }

  // The current thread's idle time [from, to) before its next item: host work as measured, except
  // on the main thread of a CPU-only trace where a host collective of another thread ended in
  // it (DDP's reducer waits for its gloo all-reduce): a zero-time wait for the collective that
  // ended last, then the rest of the gap as measured.
  void host_gap(std::int64_t from, std::int64_t to) {
    sim::OpId awaited = -1;
    std::int64_t awaited_end = from;
    if (on_main_ && !any_gpu_)
      for (const auto& [end, op] : collective_ends_)
        if (end > awaited_end && end <= to) {
          awaited = op;
          awaited_end = end;
        }
    if (awaited >= 0) {
      const sim::OpId w = host_op("Wait", "collective", 0, awaited_end);
      st_.rg.graph.ops[static_cast<std::size_t>(w)].control_inputs.push_back(awaited);
      ++rsteps_[cur_step_].inferred_waits;
      if (to > awaited_end) host_op("HostWork", "cpu", to - awaited_end, to);
      return;
    }
    host_op("HostWork", "cpu", to - from, to);
  }

  // A worker thread's host collective is issued by the main thread (DDP's reducer enqueues the
  // gloo all-reduce from a gradient hook): the worker's idle time before it is not work, so it
  // starts at its measured offset after the start of the main-thread op that was running when it
  // started (after the end of the main thread's last op when none was).
  void issue_gap(const TraceEvent& c) {
    const ThreadState& m = tstate_[main_thread_];
    sim::OpId anchor = m.prev;
    std::int64_t offset = c.ts_ns - m.cursor;
    if (main_item_.op >= 0 && main_item_.start <= c.ts_ns && c.ts_ns < main_item_.end) {
      anchor = main_item_.pred;
      offset = c.ts_ns - main_item_.start;
    }
    const sim::OpId g = host_op("HostWork", "issue", std::max<std::int64_t>(0, offset), c.ts_ns);
    if (anchor >= 0) st_.rg.graph.ops[static_cast<std::size_t>(g)].control_inputs.push_back(anchor);
  }

  // CPU-only trace: with a calibration, the op takes its calibrated time (exact signature, else
  // its class model on the recorded shapes), as calibrate keys CPU samples. A host collective
  // keeps its measured time and is matched across ranks (match_collectives_across_ranks).
  void on_cpu_op(const TraceEvent& c) {
    if (is_host_collective(c)) {
      const sim::OpId id = host_op("HostCollective", c.name, c.dur_ns, c.end_ns());
      const sim::Op& op = st_.rg.graph.ops[static_cast<std::size_t>(id)];
      NcclSeq& q = st_.rb[r_].host;
      q.rank = static_cast<int>(r_);
      q.ops.push_back(id);
      q.deps.push_back(op.control_inputs);
      q.dur.push_back(c.dur_ns);
      std::string key = c.name;
      for (const auto& d : c.input_dims)
        for (std::int64_t x : d) {
          key += '|';
          key += std::to_string(x);
        }
      q.key.push_back(key);
      rsteps_[cur_step_].host_collectives.push_back(id);
      collective_ends_.emplace_back(c.end_ns(), id);
      return;
    }
    std::int64_t dur = c.dur_ns;
    if (opt_.calibration) {
      bool by_name = false;
      const double pred = dcal_ ? calibrated_s(*dcal_, c, by_name) : -1;
      if (pred > 0) dur = std::llround(pred * 1e9);
      count_calibrated(rsteps_[cur_step_], pred > 0, by_name);
    }
    const sim::OpId pred = cur_->prev;
    const sim::OpId id = host_op("CpuOp", c.name, dur, c.end_ns());
    if (on_main_) main_item_ = {id, pred, c.ts_ns, c.end_ns()};
    ++rsteps_[cur_step_].framework_ops;
  }

  // A synchronising call that launched nothing: wait for the GPU activity that finished last
  // before the call returned. A blocking call (not a query) also waits for every stream's last
  // activity that had finished by then: where the GPU was idle at the call this costs nothing as
  // measured, but with calibrated (longer) kernels the host must still wait for them.
  void on_sync(const TraceEvent& c) {
    // Per stream, the latest activity that had ended by then: a stream runs in order, so its
    // measured ends grow along its history (an event sync in a pipelined loop waits for the
    // previous step's work while this step's is already queued).
    sim::OpId target = -1;
    std::int64_t target_end = -1;
    std::vector<sim::OpId> done_by_return;
    for (const auto& [ks, ops] : stream_history_) {
      std::int64_t e = -1;
      sim::OpId op = -1;
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
        e = st_.rg.measured_end_ns[static_cast<std::size_t>(*it)] + lo_;
        if (e <= c.end_ns() + 2000) {
          op = *it;
          break;
        }
      }
      if (op < 0) continue;
      done_by_return.push_back(op);
      if (e > target_end) {
        target = op;
        target_end = e;
      }
    }
    std::int64_t dur = c.dur_ns;
    if (target >= 0 && target_end > c.ts_ns) dur = c.end_ns() - target_end;
    const bool waited = target >= 0 && target_end > c.ts_ns;
    const sim::OpId s = host_op("Sync", c.name, waited ? 0 : dur, waited ? target_end : c.end_ns());
    auto& ins = st_.rg.graph.ops[static_cast<std::size_t>(s)].control_inputs;
    if (waited) ins.push_back(target);
    if (!contains(c.name, "Query"))
      for (sim::OpId d : done_by_return)
        if (std::find(ins.begin(), ins.end(), d) == ins.end()) ins.push_back(d);
    if (waited) host_op("SyncReturn", c.name, std::max<std::int64_t>(0, dur), c.end_ns());
  }

  // A runtime call: its host op, the event record/wait state it changes, the GPU activities it
  // launched (`launched`, null when none) and, for a blocking copy, the wait for the copy.
  void on_runtime(const TraceEvent& c, ThreadState& ts,
                  const std::vector<const TraceEvent*>* launched) {
    std::int64_t own_end = 0;
    if (launched)
      for (const TraceEvent* k : *launched) own_end = std::max(own_end, k->end_ns());
    const bool blocking_copy =
        launched && own_end > 0 && own_end <= c.end_ns() && !contains(c.name, "Launch");
    const std::int64_t launch_part =
        blocking_copy ? std::clamp<std::int64_t>(launched->front()->ts_ns - c.ts_ns, 0, c.dur_ns)
                      : c.dur_ns;
    const sim::OpId launch = host_op(blocking_copy ? "RuntimeLaunch" : "Runtime", c.name,
                                     launch_part, c.ts_ns + launch_part);
    if (is_record_event(c.name)) {
      ts.recorded = ts.last_launched;
      ts.recorded_stream = ts.last_launched_stream;
      ts.record_fresh = true;
    }
    if (is_wait_event(c.name)) {
      if (ts.record_fresh) {
        ts.pending_wait = ts.recorded;
        ts.pending_wait_stream = ts.recorded_stream;
      } else {
        // No record since the last wait (the record was made where the profiler did not see
        // it, e.g. by NCCL or the DDP reducer): the next launch waits for the last work
        // launched on any other stream before this wait.
        ts.inferred_wait = true;
        ts.inferred_from = last_on_stream_;
      }
      ts.record_fresh = false;
    }
    if (!launched) return;
    for (const TraceEvent* k : *launched) add_gpu_op(*k, launch, ts);
    if (blocking_copy) {
      // The call returned after its copy: the host waits for it, then finishes the call.
      const sim::OpId copy_op = ts.last_launched;
      const sim::OpId ret = host_op("RuntimeReturn", c.name, c.end_ns() - own_end, c.end_ns());
      st_.rg.graph.ops[static_cast<std::size_t>(ret)].control_inputs.push_back(copy_op);
    }
  }

  // The (device, stream) of a GPU activity, its device added to the cluster when first met and
  // the stream numbered on its device.
  std::pair<int, int> gpu_slot_and_stream(const TraceEvent& k) {
    auto dit = gpu_slot_of_device_.find(k.device);
    if (dit == gpu_slot_of_device_.end()) {
      dit = gpu_slot_of_device_.emplace(k.device, static_cast<int>(st_.gpus.size())).first;
      st_.gpus.push_back({gpu_device_name(nranks_, r_, k.device), gpu_spec_, static_cast<int>(r_)});
    }
    const auto skey = std::make_pair(k.device, k.stream);
    auto sit = stream_index_.find(skey);
    if (sit == stream_index_.end()) {
      int count = 0;
      for (const auto& [kk, v] : stream_index_) count += kk.first == k.device;
      sit = stream_index_.emplace(skey, count).first;
    }
    return {dit->second, sit->second};
  }

  // A GPU activity's duration: measured, or with a calibration its framework op's calibrated
  // time shared among the op's activities as measured (NCCL kernels keep theirs). A trace without
  // framework ops (Nsight; Kineto without CPU activity) was calibrated per kernel name and copy
  // size (kernel_keyed_signature): each activity takes its own entry.
  std::int64_t gpu_duration(const TraceEvent& k, bool nccl, ReplayStep& rs) const {
    std::int64_t dur = k.dur_ns;
    if (opt_.calibration && !nccl) {
      double pred = -1;
      auto tot = gpu_ns_of_op_.find(k.op);
      bool by_name = false;
      if (dcal_ && kernel_keyed_) {
        const sim::Signature sig = kernel_keyed_signature(k);
        if (auto ex = dcal_->exact.find(sig.key()); ex != dcal_->exact.end()) {
          pred = ex->second.seconds();
          by_name = sig.input_shapes.empty();
          dur = std::llround(pred * 1e9);
        }
      } else if (dcal_ && k.op >= 0 && tot != gpu_ns_of_op_.end() && tot->second > 0) {
        pred = calibrated_s(*dcal_, p_.events[static_cast<std::size_t>(k.op)], by_name);
        if (pred > 0)
          dur = std::llround(static_cast<double>(k.dur_ns) * pred * 1e9 /
                             static_cast<double>(tot->second));
      }
      count_calibrated(rs, pred > 0, by_name);
    }
    return dur;
  }

  // One GPU activity launched by `launch`: after the stream's previous activity and the event
  // the thread waits for.
  void add_gpu_op(const TraceEvent& k, sim::OpId launch, ThreadState& ts) {
    const auto [gpu_slot, stream] = gpu_slot_and_stream(k);
    const bool nccl = is_nccl(k);  // a scan of the (long) kernel name: once
    const auto skey = std::make_pair(k.device, k.stream);
    ReplayStep& rs = rsteps_[cur_step_];
    const auto id = static_cast<sim::OpId>(st_.rg.graph.ops.size());
    sim::Op& op = st_.new_op(-(gpu_slot + 1));
    op.name = rp_ + "g" + std::to_string(seq_++) + ":" + k.name.substr(0, 60);
    op.type = k.kind == EventKind::Kernel ? (nccl ? "NcclKernel" : "Kernel")
                                          : (k.kind == EventKind::Memcpy ? "Memcpy" : "Memset");
    op.device_kind = sim::DeviceKind::Gpu;
    op.measured = sim::Duration{std::max<std::int64_t>(0, gpu_duration(k, nccl, rs))};
    op.stream = stream;
    if (launch >= 0) op.control_inputs.push_back(launch);
    if (auto lit = last_on_stream_.find(skey); lit != last_on_stream_.end())
      op.control_inputs.push_back(lit->second);
    if (ts.pending_wait >= 0 && ts.pending_wait_stream != skey)
      op.control_inputs.push_back(ts.pending_wait);
    ts.pending_wait = -1;
    if (ts.inferred_wait) {
      sim::OpId latest = -1;
      for (const auto& [other, o] : ts.inferred_from)
        if (other != skey && other.first == skey.first) latest = std::max(latest, o);
      if (latest >= 0) {
        op.control_inputs.push_back(latest);
        ++rs.inferred_waits;
      }
      ts.inferred_wait = false;
      ts.inferred_from.clear();
    }
    std::sort(op.control_inputs.begin(), op.control_inputs.end());
    op.control_inputs.erase(std::unique(op.control_inputs.begin(), op.control_inputs.end()),
                            op.control_inputs.end());
    const std::vector<sim::OpId> deps = op.control_inputs;
    st_.rg.measured_end_ns.push_back(k.end_ns() - lo_);
    rs.gpu_ops.push_back(id);
    rs.gpu_end_ns = std::max(rs.gpu_end_ns, k.end_ns());
    if (k.op >= 0) rs.ops_with_gpu.insert(k.op);
    last_on_stream_[skey] = id;
    stream_history_[skey].push_back(id);
    ts.last_launched = id;
    ts.last_launched_stream = skey;
    if (nccl) {
      const auto pg = k.args.find("Process Group Name");
      NcclSeq& q = st_.rb[r_].nccl[pg == k.args.end() ? std::string() : pg->second];
      q.rank = static_cast<int>(r_);
      q.ops.push_back(id);
      q.deps.push_back(deps);
      q.dur.push_back(k.dur_ns);
      q.key.push_back(nccl_key(k));
    }
    const std::string dname = gpu_device_name(nranks_, r_, k.device);
    const std::string sname = dname + "/stream" + std::to_string(k.stream);
    StreamBusy& sb = st_.streams[sname];
    sb.stream = sname;
    sb.measured_s += static_cast<double>(k.dur_ns) * 1e-9;
    ++sb.ops;
    rs.measured_intervals[dname].push_back({k.ts_ns, k.end_ns()});
  }

  ReplayState& st_;
  std::size_t nranks_;
  std::size_t r_;
  const Profile& p_;
  const ValidateOptions& opt_;
  std::vector<ReplayStep>& rsteps_;
  std::int64_t lo_, hi_;
  std::string rp_;  // op name prefix of the rank ("r1/"; none with one rank)
  std::string main_thread_;
  bool any_gpu_ = false;
  bool kernel_keyed_ = false;  // no framework op: GPU activities are calibrated by kernel name
  std::map<std::int64_t, std::vector<const TraceEvent*>> gpu_by_corr_;
  std::map<std::int64_t, std::int64_t> gpu_ns_of_op_;  // framework op -> GPU ns of its activities
  const sim::DeviceCalibration* dcal_ = nullptr;
  sim::DeviceSpec gpu_spec_;  // the catalog entry every GPU of this rank is replayed on
  std::map<std::string, std::vector<const TraceEvent*>> threads_;
  std::map<std::string, int> slot_of_thread_;
  std::map<std::pair<int, std::int64_t>, int> stream_index_;  // (device, stream) -> index on device
  std::map<int, int> gpu_slot_of_device_;
  std::map<std::pair<int, std::int64_t>, sim::OpId> last_on_stream_;
  std::map<std::pair<int, std::int64_t>, std::vector<sim::OpId>> stream_history_;
  int seq_ = 0;
  std::vector<std::pair<std::int64_t, sim::OpId>> collective_ends_;  // host collectives so far
  struct MainItem {
    sim::OpId op = -1, pred = -1;  // the main thread's last framework op and the op before it
    std::int64_t start = 0, end = 0;
  } main_item_;
  std::map<std::string, ThreadState> tstate_;
  ThreadState* cur_ = nullptr;  // the current thread's state
  int cpu_slot_ = 0;            // the current thread's CPU device
  bool on_main_ = false;
  std::size_t cur_step_ = 0;  // step of the current call
};

// The i-th collective of `part` (one sequence per rank) matched across the ranks while their
// recorded keys agree: each waits for every rank's predecessors and lasts the shortest measured
// duration among the ranks (the rank that arrived last waited least).
void match_sequences(std::vector<NcclSeq*> part, const std::string& noun, const std::string& scope,
                     ReplayGraph& rg) {
  std::size_t n = part[0]->ops.size();
  for (const NcclSeq* q : part) n = std::min(n, q->ops.size());
  std::size_t i = 0;
  for (; i < n; ++i) {
    bool agree = true;
    for (const NcclSeq* q : part) agree &= q->key[i] == part[0]->key[i];
    if (!agree) {
      rg.notes.push_back(noun + " " + std::to_string(i) + scope + " differs between ranks (" +
                         part[0]->key[i] +
                         " on the first): later ones are not matched across ranks");
      break;
    }
    std::int64_t shortest = part[0]->dur[i];
    for (const NcclSeq* q : part) shortest = std::min(shortest, q->dur[i]);
    for (NcclSeq* q : part) {
      sim::Op& op = rg.graph.ops[static_cast<std::size_t>(q->ops[i])];
      op.measured = sim::Duration{shortest};
      for (const NcclSeq* o : part)
        if (o != q)
          for (sim::OpId d : o->deps[i]) op.control_inputs.push_back(d);
      std::sort(op.control_inputs.begin(), op.control_inputs.end());
      op.control_inputs.erase(std::unique(op.control_inputs.begin(), op.control_inputs.end()),
                              op.control_inputs.end());
    }
    ++rg.nccl_matched;
    rg.nccl_matched_ops.insert(part[0]->ops[i]);
  }
  if (i == n &&
      std::any_of(part.begin(), part.end(), [&](const NcclSeq* q) { return q->ops.size() != n; }))
    rg.notes.push_back("ranks ran different numbers of " + noun + "s" + scope + ": " +
                       std::to_string(n) + " matched");
}

// Collectives matched across ranks: NCCL kernels per process group (ranks of several groups,
// e.g. tensor- and data-parallel, issue each group's collectives in its own order), the i-th
// kernel of a group on every rank that has the group, as long as the recorded collective name,
// sizes and dtype agree (a mismatch means the traces cover different collectives: matching
// stops there); host (gloo) collectives of CPU-only traces by start order and name.
void match_nccl_across_ranks(ReplayState& st) {
  std::set<std::string> groups;
  for (const auto& b : st.rb)
    for (const auto& [pg, q] : b.nccl) groups.insert(pg);
  for (const std::string& pg : groups) {
    std::vector<NcclSeq*> part;
    for (auto& b : st.rb)
      if (auto it = b.nccl.find(pg); it != b.nccl.end()) part.push_back(&it->second);
    if (part.size() >= 2)
      match_sequences(part, "NCCL kernel", " of process group \"" + pg + "\"", st.rg);
  }
  std::vector<NcclSeq*> host;
  for (auto& b : st.rb)
    if (!b.host.ops.empty()) host.push_back(&b.host);
  if (host.size() >= 2) match_sequences(host, "host collective", "", st.rg);
}

// The ranks' clocks are not one (each trace counts from its own start): a collective ends on
// every rank at about the same moment, so the first matched collective (earliest measured end)
// fixes each rank's start relative to the others: a rank whose trace shows it ending later after
// its step start started that much earlier. Without a matched collective the ranks start together.
void align_rank_clocks(ReplayState& st) {
  ReplayGraph& rg = st.rg;
  const NcclSeq* first = nullptr;
  std::vector<const NcclSeq*> seqs;
  for (const auto& b : st.rb) {
    for (const auto& [pg, q] : b.nccl) seqs.push_back(&q);
    seqs.push_back(&b.host);
  }
  auto end_of = [&](sim::OpId op) { return rg.measured_end_ns[static_cast<std::size_t>(op)]; };
  for (const NcclSeq* q : seqs)
    if (!q->ops.empty() && rg.nccl_matched_ops.contains(q->ops[0]) &&
        (!first || end_of(q->ops[0]) < end_of(first->ops[0])))
      first = q;
  if (!first) return;
  // The sequences of the other ranks whose first op was matched with first's.
  std::map<int, std::int64_t> end_by_rank;
  for (const NcclSeq* q : seqs) {
    if (q->ops.empty()) continue;
    const sim::Op& op = rg.graph.ops[static_cast<std::size_t>(q->ops[0])];
    const bool same =
        q == first ||
        std::any_of(op.control_inputs.begin(), op.control_inputs.end(), [&](sim::OpId d) {
          const auto& fd = first->deps[0];
          return std::find(fd.begin(), fd.end(), d) != fd.end();
        });
    if (same) end_by_rank.emplace(q->rank, end_of(q->ops[0]));
  }
  std::int64_t latest = 0;
  for (const auto& [r, e] : end_by_rank) latest = std::max(latest, e);
  for (const auto& [r, e] : end_by_rank)
    if (st.rb[static_cast<std::size_t>(r)].start >= 0)
      rg.graph.ops[static_cast<std::size_t>(st.rb[static_cast<std::size_t>(r)].start)].measured =
          sim::Duration{latest - e};
}

// Cluster: the CPUs, then the GPUs, each GPU on a PCIe link to its rank's CPU.
void build_replay_cluster(const ReplayState& st, sim::Cluster& c) {
  c.name = "replay";
  c.source_file = "<replay>";
  std::map<std::string, int> streams_per_gpu;
  for (const auto& [name, sb] : st.streams) {
    const auto slash = name.rfind('/');
    ++streams_per_gpu[name.substr(0, slash)];
  }
  c.devices.reserve(st.cpus.size() + st.gpus.size());
  for (const DevPlan& d : st.cpus) {
    sim::Device dev;
    dev.name = d.name;
    dev.spec = d.spec;
    dev.node = "node" + std::to_string(d.rank);
    c.devices.push_back(dev);
  }
  for (const DevPlan& d : st.gpus) {
    sim::Device dev;
    dev.name = d.name;
    dev.spec = d.spec;
    dev.spec.compute_streams = std::max(1, streams_per_gpu[d.name]);
    dev.node = "node" + std::to_string(d.rank);
    dev.host = st.rank_cpu_of[static_cast<std::size_t>(d.rank)];
    c.devices.push_back(dev);
  }
  for (std::size_t i = 0; i < st.cpus.size(); ++i)
    c.devices[i].host = static_cast<sim::DeviceId>(i);
  for (const auto& dev : c.devices)
    c.vertices.push_back({dev.name, sim::VertexKind::Device, dev.node});
  // Per rank one host switch that its CPUs (one per host thread) and GPUs hang off, the ranks'
  // switches on one network switch: every device reaches every other through switches. Replay ops
  // exchange no tensors, so the links only make the cluster well formed.
  auto add_link = [&](sim::VertexId from, sim::VertexId to, const std::string& name, double bw,
                      const char* kind) {
    sim::Link l;
    l.a = from;
    l.b = to;
    l.name = name;
    l.bandwidth = sim::Bandwidth{bw};
    l.kind = kind;
    c.links.push_back(l);
  };
  const auto first_switch = static_cast<sim::VertexId>(c.vertices.size());
  const std::size_t nranks = st.rank_cpu_of.size();
  for (std::size_t r = 0; r < nranks; ++r)
    c.vertices.push_back(
        {"host" + std::to_string(r), sim::VertexKind::Switch, "node" + std::to_string(r)});
  for (std::size_t i = 0; i < c.devices.size(); ++i) {
    const bool gpu = i >= st.cpus.size();
    const int rank = gpu ? st.gpus[i - st.cpus.size()].rank : st.cpus[i].rank;
    add_link(static_cast<sim::VertexId>(i), first_switch + rank,
             c.devices[i].name + (gpu ? "-pcie" : "-host"), gpu ? 16e9 : 100e9,
             gpu ? "pcie" : "membus");
  }
  if (nranks > 1) {
    c.vertices.push_back({"net", sim::VertexKind::Switch, "node0"});
    for (std::size_t r = 0; r < nranks; ++r)
      add_link(first_switch + static_cast<sim::VertexId>(r),
               static_cast<sim::VertexId>(c.vertices.size() - 1),
               "host" + std::to_string(r) + "-net", 12.5e9, "net");
  }
  c.peer_access.assign(c.devices.size(), std::vector<bool>(c.devices.size(), false));
  sim::compute_routes(c);
}

}  // namespace

ReplayGraph build_replay(const std::vector<Profile>& ranks, std::size_t step,
                         const ValidateOptions& opt) {
  return build_replay(ranks, step, 1, opt);
}

ReplayGraph build_replay(const std::vector<Profile>& ranks, std::size_t first_step,
                         std::size_t num_steps, const ValidateOptions& opt) {
  ReplayGraph rg;
  rg.graph.name = "replay";
  ReplayState st{.rg = rg, .rb = std::vector<RankBuild>(ranks.size())};
  if (num_steps == 0) num_steps = 1;
  rg.steps.resize(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    rg.steps[r] = step_windows(ranks[r], r, first_step, num_steps);
    RankReplay(st, ranks, r, opt).run();
  }
  if (ranks.size() > 1) {
    match_nccl_across_ranks(st);
    align_rank_clocks(st);
  }
  rg.graph.finalize("<replay>");
  build_replay_cluster(st, rg.cluster);
  rg.device_of.resize(st.op_dev_slot.size());
  for (std::size_t i = 0; i < st.op_dev_slot.size(); ++i)
    rg.device_of[i] = st.op_dev_slot[i] >= 0
                          ? st.op_dev_slot[i]
                          : static_cast<sim::DeviceId>(st.cpus.size()) + (-st.op_dev_slot[i] - 1);
  for (auto& [n, sb] : st.streams) rg.streams.push_back(sb);
  return rg;
}

namespace {

// Simulated start/end of every op, from the engine's Chrome-trace sink (each op is one complete
// event named after it).
std::vector<std::pair<std::int64_t, std::int64_t>> op_times(const ReplayGraph& rg,
                                                            const sim::TraceSink& sink) {
  std::vector<std::pair<std::int64_t, std::int64_t>> t(static_cast<std::size_t>(rg.graph.num_ops()),
                                                       {-1, -1});
  const nlohmann::json j = nlohmann::json::parse(sink.to_json());
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", std::string()) != "X" || !e.contains("name") || !e["name"].is_string())
      continue;
    const sim::OpId id = rg.graph.op_index(e["name"].get<std::string>());
    if (id < 0) continue;
    const std::int64_t ts = std::llround(e["ts"].get<double>() * 1000.0);
    const std::int64_t dur = std::llround(e.value("dur", 0.0) * 1000.0);
    t[static_cast<std::size_t>(id)] = {ts, ts + dur};
  }
  return t;
}

// The number of steps replayed: the first profile's, cut to the common prefix of every rank's
// (noted) and to --max-steps.
std::size_t common_steps(const std::vector<Profile>& ranks, std::size_t first_count,
                         const ValidateOptions& opt, ValidationReport& rep) {
  std::size_t n = first_count;
  // Ranks whose profilers recorded different numbers of steps: the common prefix is replayed.
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const std::size_t k = profile_steps(ranks[r]).size();
    if (k < n) {
      rep.notes.push_back(ranks[r].source + ": " + std::to_string(k) + " steps against " +
                          std::to_string(n) + " in the first profile: the first " +
                          std::to_string(k) + " are replayed");
      n = k;
    }
  }
  if (opt.max_steps > 0) n = std::min<std::size_t>(n, static_cast<std::size_t>(opt.max_steps));
  return n;
}

// A replay simulated: the graph's outcome and every op's simulated start and end.
struct ReplayRun {
  const ReplayGraph& rg;
  sim::Outcome outcome;
  std::vector<std::pair<std::int64_t, std::int64_t>> t;
  [[nodiscard]] std::int64_t start(sim::OpId id) const {
    return id >= 0 ? t[static_cast<std::size_t>(id)].first : -1;
  }
  [[nodiscard]] std::int64_t end(sim::OpId id) const {
    return id >= 0 ? t[static_cast<std::size_t>(id)].second : -1;
  }
};

// Rank r's step s (of n): measured against predicted period, GPU span and busy time per GPU.
RankStep rank_step(const ReplayRun& run, std::size_t r, std::size_t s, std::size_t n) {
  const ReplayGraph& rg = run.rg;
  const ReplayStep& st = rg.steps[r][s];
  RankStep rs;
  rs.rank = static_cast<int>(r);
  rs.measured_period_s =
      static_cast<double>((st.next_begin_ns >= 0 ? st.next_begin_ns : st.end_ns) - st.begin_ns) *
      1e-9;
  const std::int64_t p0 = run.start(st.first_op);
  const std::int64_t p1 =
      s + 1 < n ? run.start(rg.steps[r][s + 1].first_op) : run.end(rg.main_tail[r]);
  // The last replayed step ends where its annotation ends; a later step's start is not
  // replayed.
  if (s + 1 == n && st.next_begin_ns >= 0)
    rs.measured_period_s = static_cast<double>(st.end_ns - st.begin_ns) * 1e-9;
  rs.predicted_period_s = p0 >= 0 && p1 >= p0 ? static_cast<double>(p1 - p0) * 1e-9 : 0.0;
  // Without step annotations the step is the whole trace: it ends with the last activity.
  if (!st.annotated && s + 1 == n && p0 >= 0)
    rs.predicted_period_s =
        std::max(rs.predicted_period_s, static_cast<double>(run.outcome.step_time.ns - p0) * 1e-9);
  if (!st.gpu_ops.empty()) {
    rs.measured_gpu_span_s = static_cast<double>(st.gpu_end_ns - st.begin_ns) * 1e-9;
    std::int64_t pe = 0;
    for (sim::OpId g : st.gpu_ops) pe = std::max(pe, run.end(g));
    rs.predicted_gpu_span_s = p0 >= 0 ? static_cast<double>(pe - p0) * 1e-9 : 0.0;
  }
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> pred_iv;
  for (sim::OpId g : st.gpu_ops)
    pred_iv[rg.cluster.devices[static_cast<std::size_t>(rg.device_of[static_cast<std::size_t>(g)])]
                .name]
        .push_back(run.t[static_cast<std::size_t>(g)]);
  for (const auto& [dn, iv] : st.measured_intervals) {
    DeviceBusy b;
    b.device = dn;
    b.measured_s = union_busy_s(iv);
    b.predicted_s = union_busy_s(pred_iv[dn]);
    rs.devices.push_back(b);
  }
  return rs;
}

// Step s (of n) over every rank: the job's step is its slowest rank's.
StepValidation validate_step(const ReplayRun& run, const std::string& name, std::size_t s,
                             std::size_t n) {
  const ReplayGraph& rg = run.rg;
  StepValidation v;
  v.name = name;
  for (std::size_t r = 0; r < rg.steps.size(); ++r) {
    const ReplayStep& st = rg.steps[r][s];
    RankStep rs = rank_step(run, r, s, n);
    v.gpu_ops += static_cast<int>(st.gpu_ops.size());
    v.host_ops += st.host_ops;
    v.framework_ops += st.framework_ops + static_cast<int>(st.ops_with_gpu.size());
    v.calibrated_ops += st.calibrated_ops;
    v.fallback_ops += st.fallback_ops;
    v.name_ops += st.name_ops;
    v.inferred_waits += st.inferred_waits;
    v.annotated_s = std::max(
        v.annotated_s, st.annotated ? static_cast<double>(st.end_ns - st.begin_ns) * 1e-9 : 0.0);
    // The job's step is its slowest rank's.
    if (rs.measured_period_s > v.measured_s || r == 0) {
      v.measured_s = rs.measured_period_s;
      v.slowest_rank = static_cast<int>(r);
    }
    v.predicted_s = std::max(v.predicted_s, rs.predicted_period_s);
    v.measured_gpu_span_s = std::max(v.measured_gpu_span_s, rs.measured_gpu_span_s);
    v.predicted_gpu_span_s = std::max(v.predicted_gpu_span_s, rs.predicted_gpu_span_s);
    v.ranks.push_back(std::move(rs));
  }
  v.ops = v.gpu_ops + v.host_ops;
  v.nccl_matched = 0;  // collectives of this step matched across ranks (counted once)
  for (const auto& rsteps : rg.steps)
    for (const auto* ops : {&rsteps[s].gpu_ops, &rsteps[s].host_collectives})
      for (sim::OpId g : *ops) v.nccl_matched += static_cast<int>(rg.nccl_matched_ops.count(g));
  v.compared = v.measured_s > 0 && v.predicted_s > 0;
  v.error = v.compared ? (v.predicted_s - v.measured_s) / v.measured_s : 0.0;
  return v;
}

// The five largest error contributors along the critical path: how much each op's end drifted
// from its measured end compared with the op before it.
std::vector<ErrorContributor> error_contributors(const ReplayRun& run) {
  std::int64_t prev_drift = 0;
  std::vector<ErrorContributor> contrib;
  for (const sim::PathItem& it : run.outcome.critical_path) {
    if (it.kind != sim::PathItem::Kind::Op) continue;
    const sim::OpId id = run.rg.graph.op_index(it.name);
    if (id < 0) continue;
    const std::int64_t drift = it.end - run.rg.measured_end_ns[static_cast<std::size_t>(id)];
    if (drift != prev_drift)
      contrib.push_back({it.name, static_cast<double>(drift - prev_drift) * 1e-9});
    prev_drift = drift;
  }
  std::stable_sort(contrib.begin(), contrib.end(),
                   [](const ErrorContributor& a, const ErrorContributor& b) {
                     return std::abs(a.shift_s) > std::abs(b.shift_s);
                   });
  if (contrib.size() > 5) contrib.resize(5);
  return contrib;
}

// Warnings on the whole replay: no framework op tied to a call, or a calibration that matched
// nothing.
void add_coverage_warnings(const ValidateOptions& opt, ValidationReport& rep) {
  int fw = 0, cal = 0, fb = 0;
  for (const StepValidation& v : rep.steps) {
    fw += v.framework_ops;
    cal += v.calibrated_ops;
    fb += v.fallback_ops;
  }
  if (fw == 0)
    rep.warnings.push_back(
        "0 framework ops replayed at op level (no op is tied to a replayed call): the replay is "
        "runtime calls and host gaps only");
  if (opt.calibration && cal == 0)
    rep.warnings.push_back("0 of " + std::to_string(cal + fb) +
                           " GPU activities / CPU ops took a calibrated time (the calibration's "
                           "signatures match no op of the "
                           "trace): the prediction uses measured kernel times only");
}

}  // namespace

ValidationReport validate_profiles(const std::vector<Profile>& ranks, const ValidateOptions& opt) {
  if (ranks.empty()) throw InputError("<flag --profile>", "", "at least one profile, got none");
  ValidationReport rep;
  for (const Profile& p : ranks) {
    rep.sources.push_back(p.source);
    for (const std::string& m : p.missing) rep.notes.push_back(p.source + ": " + m);
  }
  const auto steps = profile_steps(ranks[0]);
  const std::size_t n = common_steps(ranks, steps.size(), opt, rep);
  // Consecutive steps are replayed in one simulation: GPU work queued in step N carries into
  // step N+1, as it ran.
  ReplayGraph rg = build_replay(ranks, 0, n, opt);
  for (const std::string& m : rg.notes) rep.notes.push_back(m);
  sim::Placement pl;
  pl.device_of = rg.device_of;
  sim::SimOptions so;
  so.record_critical_path = true;
  sim::TraceSink sink(rg.cluster);
  so.trace = &sink;
  ReplayRun run{.rg = rg,
                .outcome = sim::simulate(rg.cluster, rg.graph, pl, so, sim::KernelCostModel{})};
  run.t = op_times(rg, sink);
  double err = 0, steady_meas = 0, steady_pred = 0;
  int err_n = 0, steady_n = 0;
  for (std::size_t s = 0; s < n; ++s) {
    StepValidation v = validate_step(run, steps[s].name, s, n);
    if (!v.compared)
      rep.warnings.push_back(v.name + ": no comparison (measured " + std::to_string(v.measured_s) +
                             " s, predicted " + std::to_string(v.predicted_s) +
                             " s): no error reported");
    if (v.compared) {
      err += std::abs(v.error);
      ++err_n;
      if (s > 0 || n == 1) {
        steady_meas += v.measured_s;
        steady_pred += v.predicted_s;
        ++steady_n;
      }
    }
    rep.steps.push_back(std::move(v));
  }
  // Streams (whole replay) and the largest error contributors along the critical path.
  if (!rep.steps.empty()) {
    rep.steps.front().streams = rg.streams;
    rep.contributors = error_contributors(run);
  }
  rep.compared_steps = err_n;
  rep.mean_abs_error = err_n > 0 ? err / err_n : 0.0;
  if (steady_n > 0) {
    rep.steady_measured_s = steady_meas / steady_n;
    rep.steady_predicted_s = steady_pred / steady_n;
    rep.steady_steps = steady_n;
  }
  add_coverage_warnings(opt, rep);
  return rep;
}

std::string validation_to_json(const ValidationReport& r) {
  using oj = nlohmann::ordered_json;
  oj j;
  j["sources"] = r.sources;
  j["compared_steps"] = r.compared_steps;
  j["mean_abs_error"] = r.compared_steps > 0 ? oj(r.mean_abs_error) : oj(nullptr);
  oj steady;
  steady["steps"] = r.steady_steps;
  steady["measured_period_s"] = r.steady_measured_s;
  steady["predicted_period_s"] = r.steady_predicted_s;
  steady["error"] = r.steady_measured_s > 0 && r.steady_predicted_s > 0
                        ? oj((r.steady_predicted_s - r.steady_measured_s) / r.steady_measured_s)
                        : oj(nullptr);
  j["steady_state"] = steady;
  oj steps = oj::array();
  for (const StepValidation& s : r.steps) {
    oj x;
    x["name"] = s.name;
    x["measured_s"] = s.measured_s;
    x["annotated_s"] = s.annotated_s;
    x["predicted_s"] = s.predicted_s;
    x["error"] = s.compared ? oj(s.error) : oj(nullptr);
    x["slowest_rank"] = s.slowest_rank;
    x["measured_gpu_span_s"] = s.measured_gpu_span_s;
    x["predicted_gpu_span_s"] = s.predicted_gpu_span_s;
    x["ops"] = s.ops;
    x["gpu_ops"] = s.gpu_ops;
    x["host_ops"] = s.host_ops;
    x["framework_ops"] = s.framework_ops;
    x["nccl_matched"] = s.nccl_matched;
    x["calibrated_ops"] = s.calibrated_ops;
    x["fallback_ops"] = s.fallback_ops;
    x["name_ops"] = s.name_ops;
    x["inferred_waits"] = s.inferred_waits;
    oj rk = oj::array();
    oj db = oj::object();
    for (const RankStep& q : s.ranks) {
      rk.push_back({{"rank", q.rank},
                    {"measured_period_s", q.measured_period_s},
                    {"predicted_period_s", q.predicted_period_s},
                    {"measured_gpu_span_s", q.measured_gpu_span_s},
                    {"predicted_gpu_span_s", q.predicted_gpu_span_s}});
      for (const DeviceBusy& b : q.devices)
        db[b.device] = {{"measured_busy_s", b.measured_s}, {"predicted_busy_s", b.predicted_s}};
    }
    x["ranks"] = rk;
    x["devices"] = db;
    oj st = oj::array();
    for (const StreamBusy& b : s.streams)
      st.push_back({{"stream", b.stream}, {"measured_busy_s", b.measured_s}, {"ops", b.ops}});
    x["streams"] = st;
    steps.push_back(x);
  }
  j["steps"] = steps;
  oj c = oj::array();
  for (const ErrorContributor& e : r.contributors)
    c.push_back({{"item", e.item}, {"shift_s", e.shift_s}});
  j["error_contributors"] = c;
  j["notes"] = r.notes;
  j["warnings"] = r.warnings;
  return j.dump(2) + "\n";
}

std::string validation_to_text(const ValidationReport& r) {
  std::string out;
  char buf[512];
  for (const std::string& s : r.sources) out += "profile: " + s + "\n";
  std::snprintf(buf, sizeof buf, "%-18s %12s %12s %12s %8s %12s %12s %6s %6s %6s\n", "step",
                "period meas", "annotated", "period pred", "error", "GPU span m", "GPU span p",
                "gpu", "host", "fw ops");
  out += buf;
  for (const StepValidation& s : r.steps) {
    char e[16];
    if (s.compared)
      std::snprintf(e, sizeof e, "%+7.2f%%", 100.0 * s.error);
    else
      std::snprintf(e, sizeof e, "%8s", "n/a");
    std::snprintf(buf, sizeof buf,
                  "%-18s %9.3f ms %9.3f ms %9.3f ms %s %9.3f ms %9.3f ms %6d %6d %6d\n",
                  s.name.c_str(), s.measured_s * 1e3, s.annotated_s * 1e3, s.predicted_s * 1e3, e,
                  s.measured_gpu_span_s * 1e3, s.predicted_gpu_span_s * 1e3, s.gpu_ops, s.host_ops,
                  s.framework_ops);
    out += buf;
    if (s.ranks.size() > 1)
      for (const RankStep& q : s.ranks) {
        std::snprintf(buf, sizeof buf,
                      "    rank %-3d period measured %9.3f ms  predicted %9.3f ms%s\n", q.rank,
                      q.measured_period_s * 1e3, q.predicted_period_s * 1e3,
                      q.rank == s.slowest_rank ? "  (slowest)" : "");
        out += buf;
      }
    for (const RankStep& q : s.ranks)
      for (const DeviceBusy& b : q.devices) {
        std::snprintf(buf, sizeof buf,
                      "    device %-12s busy measured %10.3f ms  predicted %10.3f ms\n",
                      b.device.c_str(), b.measured_s * 1e3, b.predicted_s * 1e3);
        out += buf;
      }
    if (s.calibrated_ops + s.fallback_ops > 0) {
      std::snprintf(buf, sizeof buf,
                    "    calibrated times %d (%d by op name), measured (no match) %d\n",
                    s.calibrated_ops, s.name_ops, s.fallback_ops);
      out += buf;
    }
    if (s.inferred_waits > 0 || s.nccl_matched > 0) {
      std::snprintf(buf, sizeof buf, "    inferred waits %d, collectives matched across ranks %d\n",
                    s.inferred_waits, s.nccl_matched);
      out += buf;
    }
    for (const StreamBusy& b : s.streams) {
      std::snprintf(buf, sizeof buf, "    %-28s busy %10.3f ms  %5d ops (whole replay)\n",
                    b.stream.c_str(), b.measured_s * 1e3, b.ops);
      out += buf;
    }
  }
  for (const ErrorContributor& e : r.contributors) {
    std::snprintf(buf, sizeof buf, "error contributor %+9.3f ms  %s\n", e.shift_s * 1e3,
                  e.item.c_str());
    out += buf;
  }
  if (r.steady_steps > 0) {
    std::snprintf(
        buf, sizeof buf,
        "steady-state period over %d step(s): measured %.3f ms, predicted %.3f ms, error %+.2f%%\n",
        r.steady_steps, r.steady_measured_s * 1e3, r.steady_predicted_s * 1e3,
        100.0 * (r.steady_predicted_s - r.steady_measured_s) / r.steady_measured_s);
    out += buf;
  }
  if (r.compared_steps > 0) {
    std::snprintf(buf, sizeof buf, "mean |error| over %d compared steps: %.2f%%\n",
                  r.compared_steps, 100.0 * r.mean_abs_error);
    out += buf;
  } else {
    out += "no step compared: no error\n";
  }
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace placesim::calibration

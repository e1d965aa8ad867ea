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

namespace placesim::calibration {

using sim::InputError;

namespace {

bool contains(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

bool is_sync_call(const std::string& n) {
  return contains(n, "Synchronize") || n == "cudaMemcpy" || n == "hipMemcpy" || n == "cudaStreamQuery" ||
         n == "cudaEventQuery";
}
bool is_wait_event(const std::string& n) { return contains(n, "StreamWaitEvent"); }
bool is_record_event(const std::string& n) { return contains(n, "EventRecord"); }
bool is_nccl(const TraceEvent& e) { return e.kind == EventKind::Kernel && (contains(e.name, "nccl") || contains(e.name, "rccl")); }

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

sim::DeviceSpec gpu_spec_for(const Profile& p) {
  std::string n = p.device_name;
  for (const char* prefix : {"NVIDIA ", "Tesla "})
    if (n.rfind(prefix, 0) == 0) n = n.substr(std::string(prefix).size());
  std::replace(n.begin(), n.end(), ' ', '-');
  const sim::DeviceSpec* s = sim::find_device_model(n);
  if (!s) s = sim::find_device_model("A100-SXM4-40GB");
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

struct RankBuild {
  std::vector<sim::OpId> nccl_ops;                       // in launch order
  std::vector<std::vector<sim::OpId>> nccl_deps;         // their other inputs
  std::vector<std::int64_t> nccl_dur;
};

}  // namespace

ReplayGraph build_replay(const std::vector<Profile>& ranks, std::size_t step, const ValidateOptions& opt) {
  ReplayGraph rg;
  sim::Graph& g = rg.graph;
  g.name = "replay";
  std::vector<RankBuild> rb(ranks.size());
  struct DevPlan {
    std::string name;
    sim::DeviceSpec spec;
    int rank;
  };
  std::vector<DevPlan> cpus, gpus;
  std::vector<int> rank_cpu_of;  // rank -> index of its main thread's CPU
  std::vector<std::int32_t> op_dev_slot;  // >=0 cpu index, <0 -(gpu index+1)
  std::int64_t measured_max = 0;
  double annotated_max = 0;
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> dev_intervals;
  std::map<std::string, StreamBusy> streams;

  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const Profile& p = ranks[r];
    const auto steps = profile_steps(p);
    if (step >= steps.size())
      throw InputError(p.source, "ProfilerStep", "step " + std::to_string(step) + " as in the first profile, got " +
                                                     std::to_string(steps.size()) + " steps");
    const StepWindow w = steps[step];
    if (w.name != "trace") annotated_max = std::max(annotated_max, static_cast<double>(w.end_ns - w.begin_ns) * 1e-9);
    const std::string rp = ranks.size() > 1 ? "r" + std::to_string(r) + "/" : "";
    // The thread of the step annotation is the main thread; it runs to the step's end.
    std::string main_thread;
    for (const TraceEvent& e : p.events)
      if (e.kind == EventKind::Annotation && e.name == w.name && e.ts_ns == w.begin_ns) main_thread = e.pid + "/" + e.tid;

    std::map<std::int64_t, std::vector<const TraceEvent*>> gpu_by_corr;
    for (const TraceEvent& e : p.events)
      if (e.on_gpu() && e.correlation >= 0) gpu_by_corr[e.correlation].push_back(&e);
    // Calibration: ext id -> (framework op, GPU ns of its activities).
    std::map<std::int64_t, const TraceEvent*> cpu_op_of_ext;
    if (opt.calibration)
      for (const TraceEvent& e : p.events)
        if (e.kind == EventKind::CpuOp && e.external_id >= 0) cpu_op_of_ext[e.external_id] = &e;
    std::map<std::int64_t, std::int64_t> gpu_ns_of_ext;
    if (opt.calibration)
      for (const TraceEvent& e : p.events)
        if (e.kind == EventKind::Runtime && e.external_id >= 0)
          if (auto it = gpu_by_corr.find(e.correlation); it != gpu_by_corr.end())
            for (const TraceEvent* k : it->second) gpu_ns_of_ext[e.external_id] += k->dur_ns;
    const sim::DeviceCalibration* dcal = nullptr;
    if (opt.calibration) {
      std::string key = opt.device_model;
      if (key.empty()) {
        key = p.device_name;
        for (const char* prefix : {"NVIDIA ", "Tesla ", "AMD "})
          if (key.rfind(prefix, 0) == 0) key = key.substr(std::string(prefix).size());
        std::replace(key.begin(), key.end(), ' ', '-');
      }
      if (auto it = opt.calibration->devices.find(key); it != opt.calibration->devices.end()) dcal = &it->second;
    }

    // Runtime calls of the step, per host thread.
    std::map<std::string, std::vector<const TraceEvent*>> threads;
    for (const TraceEvent& e : p.events)
      if (e.kind == EventKind::Runtime && e.ts_ns >= w.begin_ns && e.ts_ns < w.end_ns) threads[e.pid + "/" + e.tid].push_back(&e);
    if (!main_thread.empty()) threads[main_thread];
    // One CPU device per host thread, the step's main thread first: host ops are measured wall
    // times of distinct threads, so they must not share one socket's compute (the engine divides a
    // CPU among the ops running on it, sim/cpu_share.hpp).
    std::map<std::string, int> slot_of_thread;
    const int rank_cpu = static_cast<int>(cpus.size());
    rank_cpu_of.push_back(rank_cpu);
    auto add_thread_cpu = [&](const std::string& th) {
      const int k = static_cast<int>(slot_of_thread.size());
      slot_of_thread.emplace(th, static_cast<int>(cpus.size()));
      cpus.push_back({"cpu" + std::to_string(r) + (k == 0 ? std::string() : "-t" + std::to_string(k)), cpu_spec(1),
                      static_cast<int>(r)});
    };
    if (!main_thread.empty()) add_thread_cpu(main_thread);
    for (const auto& [th, calls] : threads)
      if (!slot_of_thread.contains(th)) add_thread_cpu(th);
    if (slot_of_thread.empty()) add_thread_cpu("");

    std::map<std::pair<int, std::int64_t>, int> stream_index;      // (device, stream) -> index on device
    std::map<int, int> gpu_slot_of_device;
    std::map<std::pair<int, std::int64_t>, sim::OpId> last_on_stream;
    auto add_op = [&](sim::Op op, int slot) {
      op_dev_slot.push_back(slot);
      return g.add_op(std::move(op));
    };
    int seq = 0;
    // Per host thread: its chain and the stream state its event record/wait calls refer to.
    struct ThreadState {
      sim::OpId prev = -1;
      std::int64_t cursor = 0;
      sim::OpId last_launched = -1;
      std::pair<int, std::int64_t> last_launched_stream{-1, -1};
      sim::OpId recorded = -1;
      std::pair<int, std::int64_t> recorded_stream{-1, -1};
      sim::OpId pending_wait = -1;
      std::pair<int, std::int64_t> pending_wait_stream{-1, -1};
    };
    std::map<std::string, ThreadState> tstate;
    // All threads' calls in time order, so that stream order across threads is launch order.
    std::vector<std::pair<const TraceEvent*, std::string>> ordered;
    for (const auto& [th, calls] : threads) {
      tstate[th].cursor = w.begin_ns;
      for (const TraceEvent* c : calls) ordered.push_back({c, th});
    }
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first->ts_ns < b.first->ts_ns; });
    sim::OpId* chain = nullptr;  // the current thread's last host op
    int cpu_slot = rank_cpu;     // the current thread's CPU device
    auto host_op = [&](const std::string& type, const std::string& name, std::int64_t dur) {
      sim::Op op;
      op.name = rp + "h" + std::to_string(seq++) + ":" + name;
      op.type = type;
      op.device_kind = sim::DeviceKind::Cpu;
      op.measured = sim::Duration{std::max<std::int64_t>(0, dur)};
      if (*chain >= 0) op.control_inputs.push_back(*chain);
      *chain = add_op(std::move(op), cpu_slot);
      rg.measured_end_ns.push_back(0);
      ++rg.host_ops;
      return *chain;
    };
    for (const auto& [c, th] : ordered) {
      ThreadState& ts = tstate[th];
      sim::OpId& prev = ts.prev;
      std::int64_t& cursor = ts.cursor;
      sim::OpId& last_launched = ts.last_launched;
      auto& last_launched_stream = ts.last_launched_stream;
      sim::OpId& recorded = ts.recorded;
      auto& recorded_stream = ts.recorded_stream;
      sim::OpId& pending_wait = ts.pending_wait;
      auto& pending_wait_stream = ts.pending_wait_stream;
      chain = &prev;
      cpu_slot = slot_of_thread.at(th);
        if (c->ts_ns > cursor) {
          const sim::OpId h = host_op("HostWork", "cpu", c->ts_ns - cursor);
          rg.measured_end_ns[static_cast<std::size_t>(h)] = c->ts_ns - w.begin_ns;
        }
        cursor = std::max(cursor, c->end_ns());
        const auto git = gpu_by_corr.find(c->correlation);
        const bool launches = git != gpu_by_corr.end();
        std::int64_t own_end = 0;
        if (launches)
          for (const TraceEvent* k : git->second) own_end = std::max(own_end, k->end_ns());
        const bool blocking_copy = launches && own_end > 0 && own_end <= c->end_ns() && !contains(c->name, "Launch");
        if (is_sync_call(c->name) && !launches) {
          // Wait for the GPU activity that finished last before the call returned.
          sim::OpId target = -1;
          std::int64_t target_end = -1;
          for (const auto& [ks, op] : last_on_stream) {
            const std::int64_t e = rg.measured_end_ns[static_cast<std::size_t>(op)] + w.begin_ns;
            if (e <= c->end_ns() + 2000 && e > target_end) {
              target = op;
              target_end = e;
            }
          }
          std::int64_t dur = c->dur_ns;
          if (target >= 0 && target_end > c->ts_ns) dur = c->end_ns() - target_end;
          const bool waited = target >= 0 && target_end > c->ts_ns;
          const sim::OpId s = host_op("Sync", c->name, waited ? 0 : dur);
          rg.measured_end_ns[static_cast<std::size_t>(s)] = (waited ? target_end : c->end_ns()) - w.begin_ns;
          if (waited) {
            g.ops[static_cast<std::size_t>(s)].control_inputs.push_back(target);
            host_op("SyncReturn", c->name, std::max<std::int64_t>(0, dur));
          }
          rg.measured_end_ns[static_cast<std::size_t>(prev)] = c->end_ns() - w.begin_ns;
          continue;
        }
        const std::int64_t launch_part = blocking_copy ? std::clamp<std::int64_t>(git->second.front()->ts_ns - c->ts_ns, 0, c->dur_ns) : c->dur_ns;
        const sim::OpId launch = host_op(blocking_copy ? "RuntimeLaunch" : "Runtime", c->name, launch_part);
        rg.measured_end_ns[static_cast<std::size_t>(launch)] = c->ts_ns + launch_part - w.begin_ns;
        if (is_record_event(c->name)) {
          recorded = last_launched;
          recorded_stream = last_launched_stream;
        }
        if (is_wait_event(c->name)) {
          pending_wait = recorded;
          pending_wait_stream = recorded_stream;
        }
        if (!launches) continue;
        for (const TraceEvent* k : git->second) {
          auto dit = gpu_slot_of_device.find(k->device);
          if (dit == gpu_slot_of_device.end()) {
            dit = gpu_slot_of_device.emplace(k->device, static_cast<int>(gpus.size())).first;
            gpus.push_back({(ranks.size() > 1 ? "r" + std::to_string(r) + "_" : std::string()) + "gpu" + std::to_string(k->device),
                            gpu_spec_for(p), static_cast<int>(r)});
          }
          const auto skey = std::make_pair(k->device, k->stream);
          auto sit = stream_index.find(skey);
          if (sit == stream_index.end()) {
            int count = 0;
            for (const auto& [kk, v] : stream_index) count += kk.first == k->device;
            sit = stream_index.emplace(skey, count).first;
          }
          sim::Op op;
          op.name = rp + "g" + std::to_string(seq++) + ":" + k->name.substr(0, 60);
          op.type = k->kind == EventKind::Kernel ? (is_nccl(*k) ? "NcclKernel" : "Kernel")
                                                 : (k->kind == EventKind::Memcpy ? "Memcpy" : "Memset");
          op.device_kind = sim::DeviceKind::Gpu;
          std::int64_t dur = k->dur_ns;
          if (dcal && c->external_id >= 0 && !is_nccl(*k)) {
            auto cit = cpu_op_of_ext.find(c->external_id);
            auto tot = gpu_ns_of_ext.find(c->external_id);
            if (cit != cpu_op_of_ext.end() && tot != gpu_ns_of_ext.end() && tot->second > 0) {
              const TraceEvent& fo = *cit->second;
              sim::Signature sig{fo.name, fo.input_dims, dtype_from_profiler(fo.input_types)};
              double pred = -1;
              if (auto ex = dcal->exact.find(sig.key()); ex != dcal->exact.end()) pred = ex->second.seconds();
              else if (auto m = dcal->by_op_type.find(fo.name); m != dcal->by_op_type.end() && !fo.input_dims.empty()) {
                const WorkEstimate we = estimate_work(fo.name, fo.input_dims, sig.dtype);
                pred = m->second.predict_s(we.flops, we.bytes);
              }
              if (pred > 0) {
                dur = std::llround(static_cast<double>(k->dur_ns) * pred * 1e9 / static_cast<double>(tot->second));
                ++rg.calibrated_ops;
              }
            }
          }
          op.measured = sim::Duration{std::max<std::int64_t>(0, dur)};
          op.stream = sit->second;
          op.control_inputs.push_back(launch);
          if (auto lit = last_on_stream.find(skey); lit != last_on_stream.end()) op.control_inputs.push_back(lit->second);
          if (pending_wait >= 0 && pending_wait_stream != skey) op.control_inputs.push_back(pending_wait);
          pending_wait = -1;
          std::sort(op.control_inputs.begin(), op.control_inputs.end());
          op.control_inputs.erase(std::unique(op.control_inputs.begin(), op.control_inputs.end()), op.control_inputs.end());
          const std::vector<sim::OpId> deps = op.control_inputs;
          const sim::OpId id = add_op(std::move(op), -(dit->second + 1));
          rg.measured_end_ns.push_back(k->end_ns() - w.begin_ns);
          measured_max = std::max(measured_max, k->end_ns() - w.begin_ns);
          last_on_stream[skey] = id;
          last_launched = id;
          last_launched_stream = skey;
          ++rg.gpu_ops;
          if (is_nccl(*k)) {
            rb[r].nccl_ops.push_back(id);
            rb[r].nccl_deps.push_back(deps);
            rb[r].nccl_dur.push_back(k->dur_ns);
          }
          const std::string sname = rp + "gpu" + std::to_string(k->device) + "/stream" + std::to_string(k->stream);
          StreamBusy& sb = streams[sname];
          sb.stream = sname;
          sb.measured_s += static_cast<double>(k->dur_ns) * 1e-9;
          ++sb.ops;
          dev_intervals[rp + "gpu" + std::to_string(k->device)].push_back({k->ts_ns, k->end_ns()});
        }
        if (blocking_copy) {
          // The call returned after its copy: the host waits for it, then finishes the call.
          const sim::OpId copy_op = last_launched;
          const sim::OpId ret = host_op("RuntimeReturn", c->name, c->end_ns() - own_end);
          g.ops[static_cast<std::size_t>(ret)].control_inputs.push_back(copy_op);
          rg.measured_end_ns[static_cast<std::size_t>(ret)] = c->end_ns() - w.begin_ns;
        }
    }
    for (auto& [th, ts] : tstate) {
      chain = &ts.prev;
      cpu_slot = slot_of_thread.at(th);
      if (th == main_thread && ts.cursor < w.end_ns) {
        const sim::OpId h = host_op("HostWork", "step-tail", w.end_ns - ts.cursor);
        rg.measured_end_ns[static_cast<std::size_t>(h)] = w.end_ns - w.begin_ns;
      }
      measured_max = std::max(measured_max, (th == main_thread ? w.end_ns : ts.cursor) - w.begin_ns);
    }
  }
  // NCCL kernels matched across ranks by order.
  if (ranks.size() > 1) {
    std::size_t n = rb[0].nccl_ops.size();
    for (const auto& b : rb) n = std::min(n, b.nccl_ops.size());
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t shortest = rb[0].nccl_dur[i];
      for (const auto& b : rb) shortest = std::min(shortest, b.nccl_dur[i]);
      for (std::size_t r = 0; r < rb.size(); ++r) {
        sim::Op& op = g.ops[static_cast<std::size_t>(rb[r].nccl_ops[i])];
        op.measured = sim::Duration{shortest};
        for (std::size_t s = 0; s < rb.size(); ++s)
          if (s != r)
            for (sim::OpId d : rb[s].nccl_deps[i]) op.control_inputs.push_back(d);
        std::sort(op.control_inputs.begin(), op.control_inputs.end());
        op.control_inputs.erase(std::unique(op.control_inputs.begin(), op.control_inputs.end()), op.control_inputs.end());
      }
      ++rg.nccl_matched;
    }
  }
  g.finalize("<replay>");

  // Cluster: the CPUs, then the GPUs, each GPU on a PCIe link to its rank's CPU.
  sim::Cluster& c = rg.cluster;
  c.name = "replay";
  c.source_file = "<replay>";
  std::map<std::string, int> streams_per_gpu;
  for (const auto& [name, sb] : streams) {
    const auto slash = name.rfind('/');
    ++streams_per_gpu[name.substr(0, slash)];
  }
  for (const DevPlan& d : cpus) {
    sim::Device dev;
    dev.name = d.name;
    dev.spec = d.spec;
    dev.node = "node" + std::to_string(d.rank);
    c.devices.push_back(dev);
  }
  for (const DevPlan& d : gpus) {
    sim::Device dev;
    dev.name = d.name;
    dev.spec = d.spec;
    const std::string key = (ranks.size() > 1 ? "r" + std::to_string(d.rank) + "/" : std::string()) +
                            d.name.substr(d.name.find("gpu"));
    dev.spec.compute_streams = std::max(1, streams_per_gpu[key]);
    dev.node = "node" + std::to_string(d.rank);
    dev.host = rank_cpu_of[static_cast<std::size_t>(d.rank)];
    c.devices.push_back(dev);
  }
  for (std::size_t i = 0; i < cpus.size(); ++i) c.devices[i].host = static_cast<sim::DeviceId>(i);
  for (const auto& dev : c.devices) c.vertices.push_back({dev.name, sim::VertexKind::Device, dev.node});
  // Per rank one host switch that its CPUs (one per host thread) and GPUs hang off, the ranks'
  // switches on one network switch: every device reaches every other through switches. Replay ops
  // exchange no tensors, so the links only make the cluster well formed.
  auto add_link = [&](sim::VertexId from, sim::VertexId to, const std::string& name, double bw, const char* kind) {
    sim::Link l;
    l.a = from;
    l.b = to;
    l.name = name;
    l.bandwidth = sim::Bandwidth{bw};
    l.kind = kind;
    c.links.push_back(l);
  };
  const auto first_switch = static_cast<sim::VertexId>(c.vertices.size());
  for (std::size_t r = 0; r < rank_cpu_of.size(); ++r)
    c.vertices.push_back({"host" + std::to_string(r), sim::VertexKind::Switch, "node" + std::to_string(r)});
  for (std::size_t i = 0; i < c.devices.size(); ++i) {
    const bool gpu = i >= cpus.size();
    const int rank = gpu ? gpus[i - cpus.size()].rank : cpus[i].rank;
    add_link(static_cast<sim::VertexId>(i), first_switch + rank, c.devices[i].name + (gpu ? "-pcie" : "-host"),
             gpu ? 16e9 : 100e9, gpu ? "pcie" : "membus");
  }
  if (rank_cpu_of.size() > 1) {
    c.vertices.push_back({"net", sim::VertexKind::Switch, "node0"});
    for (std::size_t r = 0; r < rank_cpu_of.size(); ++r)
      add_link(first_switch + static_cast<sim::VertexId>(r), static_cast<sim::VertexId>(c.vertices.size() - 1),
               "host" + std::to_string(r) + "-net", 12.5e9, "net");
  }
  c.peer_access.assign(c.devices.size(), std::vector<bool>(c.devices.size(), false));
  sim::compute_routes(c);
  rg.device_of.resize(op_dev_slot.size());
  for (std::size_t i = 0; i < op_dev_slot.size(); ++i)
    rg.device_of[i] = op_dev_slot[i] >= 0 ? op_dev_slot[i] : static_cast<sim::DeviceId>(cpus.size()) + (-op_dev_slot[i] - 1);
  rg.measured_s = static_cast<double>(measured_max) * 1e-9;
  rg.annotated_s = annotated_max;
  for (auto& [n, sb] : streams) rg.streams.push_back(sb);
  for (auto& [n, iv] : dev_intervals) rg.measured_device_busy_s.push_back({n, union_busy_s(iv)});
  return rg;
}

ValidationReport validate_profiles(const std::vector<Profile>& ranks, const ValidateOptions& opt) {
  if (ranks.empty()) throw InputError("<flag --profile>", "", "at least one profile, got none");
  ValidationReport rep;
  for (const Profile& p : ranks) {
    rep.sources.push_back(p.source);
    for (const std::string& m : p.missing) rep.notes.push_back(p.source + ": " + m);
  }
  const auto steps = profile_steps(ranks[0]);
  std::size_t n = steps.size();
  if (opt.max_steps > 0) n = std::min<std::size_t>(n, static_cast<std::size_t>(opt.max_steps));
  double err = 0;
  for (std::size_t s = 0; s < n; ++s) {
    ReplayGraph rg = build_replay(ranks, s, opt);
    sim::Placement pl;
    pl.device_of = rg.device_of;
    sim::SimOptions so;
    so.record_critical_path = true;
    const sim::Outcome o = sim::simulate(rg.cluster, rg.graph, pl, so, sim::KernelCostModel{});
    StepValidation v;
    v.name = steps[s].name;
    v.measured_s = rg.measured_s;
    v.annotated_s = rg.annotated_s;
    v.predicted_s = o.step_time.seconds();
    v.error = v.measured_s > 0 ? (v.predicted_s - v.measured_s) / v.measured_s : 0.0;
    v.ops = rg.graph.num_ops();
    v.gpu_ops = rg.gpu_ops;
    v.host_ops = rg.host_ops;
    v.nccl_matched = rg.nccl_matched;
    v.calibrated_ops = rg.calibrated_ops;
    v.streams = rg.streams;
    v.measured_device_busy_s = rg.measured_device_busy_s;
    for (const auto& d : o.devices) v.predicted_device_busy_s.push_back({d.name, d.busy.seconds()});
    // Contributors: along the simulated critical path, how much each op's end drifted from its
    // measured end compared with the op before it.
    std::int64_t prev_drift = 0;
    std::vector<ErrorContributor> contrib;
    for (const sim::PathItem& it : o.critical_path) {
      if (it.kind != sim::PathItem::Kind::Op) continue;
      const sim::OpId id = rg.graph.op_index(it.name);
      if (id < 0) continue;
      const std::int64_t meas_end = rg.measured_end_ns[static_cast<std::size_t>(id)];
      const std::int64_t drift = it.end - meas_end;
      if (drift != prev_drift) contrib.push_back({it.name, static_cast<double>(drift - prev_drift) * 1e-9});
      prev_drift = drift;
    }
    std::stable_sort(contrib.begin(), contrib.end(),
                     [](const ErrorContributor& a, const ErrorContributor& b) { return std::abs(a.shift_s) > std::abs(b.shift_s); });
    if (contrib.size() > 5) contrib.resize(5);
    v.contributors = std::move(contrib);
    err += std::abs(v.error);
    rep.steps.push_back(std::move(v));
  }
  rep.mean_abs_error = rep.steps.empty() ? 0.0 : err / static_cast<double>(rep.steps.size());
  return rep;
}

std::string validation_to_json(const ValidationReport& r) {
  nlohmann::ordered_json j;
  j["sources"] = r.sources;
  j["mean_abs_error"] = r.mean_abs_error;
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const StepValidation& s : r.steps) {
    nlohmann::ordered_json x;
    x["name"] = s.name;
    x["measured_s"] = s.measured_s;
    x["annotated_s"] = s.annotated_s;
    x["predicted_s"] = s.predicted_s;
    x["error"] = s.error;
    x["ops"] = s.ops;
    x["gpu_ops"] = s.gpu_ops;
    x["host_ops"] = s.host_ops;
    x["nccl_matched"] = s.nccl_matched;
    x["calibrated_ops"] = s.calibrated_ops;
    nlohmann::ordered_json st = nlohmann::ordered_json::array();
    for (const StreamBusy& b : s.streams) st.push_back({{"stream", b.stream}, {"measured_busy_s", b.measured_s}, {"ops", b.ops}});
    x["streams"] = st;
    nlohmann::ordered_json db = nlohmann::ordered_json::object();
    for (const auto& [n, v] : s.measured_device_busy_s) db[n]["measured_busy_s"] = v;
    for (const auto& [n, v] : s.predicted_device_busy_s) db[n]["predicted_busy_s"] = v;
    x["devices"] = db;
    nlohmann::ordered_json c = nlohmann::ordered_json::array();
    for (const ErrorContributor& e : s.contributors) c.push_back({{"item", e.item}, {"shift_s", e.shift_s}});
    x["error_contributors"] = c;
    steps.push_back(x);
  }
  j["steps"] = steps;
  j["notes"] = r.notes;
  return j.dump(2) + "\n";
}

std::string validation_to_text(const ValidationReport& r) {
  std::string out;
  char buf[512];
  for (const std::string& s : r.sources) out += "profile: " + s + "\n";
  std::snprintf(buf, sizeof buf, "%-18s %12s %12s %12s %8s %6s %6s\n", "step", "measured", "annotated", "predicted", "error",
                "gpu", "host");
  out += buf;
  for (const StepValidation& s : r.steps) {
    std::snprintf(buf, sizeof buf, "%-18s %10.3f ms %10.3f ms %10.3f ms %+7.2f%% %6d %6d\n", s.name.c_str(), s.measured_s * 1e3,
                  s.annotated_s * 1e3, s.predicted_s * 1e3, 100.0 * s.error, s.gpu_ops, s.host_ops);
    out += buf;
    for (const StreamBusy& b : s.streams) {
      std::snprintf(buf, sizeof buf, "    %-28s busy %10.3f ms  %5d ops\n", b.stream.c_str(), b.measured_s * 1e3, b.ops);
      out += buf;
    }
    for (const auto& [n, v] : s.predicted_device_busy_s) {
      double meas = 0;
      for (const auto& [mn, mv] : s.measured_device_busy_s)
        if (mn == n) meas = mv;
      std::snprintf(buf, sizeof buf, "    device %-12s busy measured %10.3f ms  predicted %10.3f ms\n", n.c_str(), meas * 1e3, v * 1e3);
      out += buf;
    }
    for (const ErrorContributor& e : s.contributors) {
      std::snprintf(buf, sizeof buf, "    error contributor %+9.3f ms  %s\n", e.shift_s * 1e3, e.item.c_str());
      out += buf;
    }
  }
  std::snprintf(buf, sizeof buf, "mean |error| over %zu steps: %.2f%%\n", r.steps.size(), 100.0 * r.mean_abs_error);
  out += buf;
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace placesim::calibration

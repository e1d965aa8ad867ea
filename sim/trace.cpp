#include "sim/trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "sim/io_util.hpp"

namespace placesim::sim {

namespace {
// Track ids inside a device's process. Streams and workers keep their index as tid, as Kineto
// writes a GPU's stream id as the tid of its kernels.
constexpr std::int32_t kLaunchTid = 1000000;
constexpr std::int32_t kEngineTid = 2000;    // + kind * 100 + slot
constexpr std::int32_t kHostCopyTid = 3000;  // + lane (overlapping copies without an engine)

double us(SimTime ns) {
  return static_cast<double>(ns) / 1000.0;
}

const char* memcpy_name(int tid) {
  if (tid >= kHostCopyTid) return "Memcpy HtoH (Host -> Host)";
  static const char* names[] = {"Memcpy HtoD (Host -> Device)", "Memcpy DtoH (Device -> Host)",
                                "Memcpy PtoP (Device -> Device)"};
  return names[std::clamp((tid - kEngineTid) / 100, 0, 2)];
}

}  // namespace

TraceSink::TraceSink(const Cluster& c) : cluster_(&c) {}

void TraceSink::describe(const Graph& g, const KernelCostModel* costs) {
  graph_ = &g;
  costs_ = costs;
}

void TraceSink::set_process_prefix(std::string prefix, int pid_offset) {
  prefix_ = std::move(prefix);
  pid_offset_ = pid_offset;
}

void TraceSink::launch(DeviceId d, std::string_view op, SimTime start, SimTime end) {
  events_.push_back({Kind::Launch, d, kLaunchTid, start, end - start, std::string(op), -1, {}, {}});
}

void TraceSink::kernel(DeviceId d, int stream, std::string_view op, std::string_view /*type*/,
                       SimTime start, SimTime end) {
  events_.push_back({Kind::Kernel, d, stream, start, end - start, std::string(op), -1, {}, {}});
}

void TraceSink::copy(DeviceId d, EngineKind kind, int slot, std::string_view name,
                     std::int64_t bytes, SimTime start, SimTime end, CopyOf of) {
  const std::int32_t tid =
      slot < 0 ? kHostCopyTid : kEngineTid + static_cast<int>(kind) * 100 + slot;
  events_.push_back({Kind::Copy, d, tid, start, end - start, std::string(name), bytes, of, {}});
}

void TraceSink::link_flow(LinkId l, std::string_view /*name*/, std::int64_t bytes, SimTime start,
                          SimTime end, bool forward) {
  flows_.push_back({l, forward, start, end, bytes});
  // The engine reports a segment's links right after the segment itself.
  if (!events_.empty() && events_.back().kind == Kind::Copy) {
    std::string& r = events_.back().route;
    r += (r.empty() ? "" : ", ") + cluster_->links[static_cast<std::size_t>(l)].name;
  }
}

void TraceSink::memory(DeviceId d, SimTime t, std::int64_t bytes) {
  if (!memory_.empty() && memory_.back().d == d && memory_.back().t == t) {
    memory_.back().bytes = bytes;
    return;
  }
  memory_.push_back({d, t, bytes});
}

std::string TraceSink::track_name(std::int32_t pid, std::int32_t tid) const {
  const bool gpu = cluster_->devices[static_cast<std::size_t>(pid)].spec.kind == DeviceKind::Gpu;
  if (tid == kLaunchTid) return gpu ? "host launch thread" : "dispatch";
  if (tid >= kHostCopyTid) return "copies (no engine) " + std::to_string(tid - kHostCopyTid);
  if (tid >= kEngineTid) {
    static const char* kinds[] = {"H2D", "D2H", "peer"};
    const int k = (tid - kEngineTid) / 100, slot = (tid - kEngineTid) % 100;
    return std::string(kinds[std::clamp(k, 0, 2)]) + " copy engine " + std::to_string(slot);
  }
  return (gpu ? "stream " : "worker ") + std::to_string(tid);
}

namespace {

using nlohmann::json;

// Copies that use no engine may overlap on one device: each gets the lowest lane free at its
// start, so that every track holds properly nested (here: disjoint) slices.
std::vector<std::int32_t> lanes_for(
    const std::vector<std::tuple<SimTime, SimTime, std::size_t>>& spans, std::size_t n) {
  std::vector<std::int32_t> lane(n, 0);
  std::vector<SimTime> lane_end;
  for (const auto& [s, e, i] : spans) {
    std::size_t k = 0;
    while (k < lane_end.size() && lane_end[k] > s) ++k;
    if (k == lane_end.size())
      lane_end.push_back(e);
    else
      lane_end[k] = e;
    lane[i] = static_cast<std::int32_t>(k);
  }
  return lane;
}

json flow(char ph, std::int64_t id, std::int32_t pid, std::int32_t tid, SimTime ts, const char* cat,
          const char* name) {
  json j = {{"ph", std::string(1, ph)},
            {"id", id},
            {"pid", pid},
            {"tid", tid},
            {"ts", us(ts)},
            {"cat", cat},
            {"name", name}};
  if (ph == 'f') j["bp"] = "e";
  return j;
}

}  // namespace

// Cross-references between the recorded events, built once per to_json().
struct TraceSink::Index {
  std::vector<std::int32_t> tid;      ///< per event (lanes for copies without an engine)
  std::vector<std::int64_t> corr;     ///< per event: correlation id, -1 = none
  std::vector<std::size_t> launched;  ///< per launch event: the kernel/copy it launched
  std::map<std::string, std::size_t> kernel_of;
  std::map<std::tuple<std::int32_t, std::int32_t, DeviceId>, std::vector<std::size_t>> copies_of;
};

bool TraceSink::is_gpu(std::int32_t d) const {
  return cluster_->devices[static_cast<std::size_t>(d)].spec.kind == DeviceKind::Gpu;
}

TraceSink::Index TraceSink::index() const {
  // Lanes of the copies without an engine, per device.
  Index ix;
  std::vector<std::int32_t>& tid = ix.tid;
  tid.resize(events_.size());
  {
    std::map<std::int32_t, std::vector<std::tuple<SimTime, SimTime, std::size_t>>> spans;
    for (std::size_t i = 0; i < events_.size(); ++i) {
      tid[i] = events_[i].tid;
      if (events_[i].kind == Kind::Copy && events_[i].tid == kHostCopyTid)
        spans[events_[i].pid].push_back({events_[i].ts, events_[i].ts + events_[i].dur, i});
    }
    for (auto& [pid, v] : spans) {
      std::sort(v.begin(), v.end());
      const auto lane = lanes_for(v, events_.size());
      for (const auto& sp : v) tid[std::get<2>(sp)] = kHostCopyTid + lane[std::get<2>(sp)];
    }
  }
  // Launch -> kernel/copy correlation, by name on one device (op names and copy names are unique).
  std::map<std::pair<std::int32_t, std::string>, std::size_t> launch_of;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const Ev& e = events_[i];
    if (e.kind == Kind::Launch) launch_of[{e.pid, e.name}] = i;
    if (e.kind == Kind::Kernel) ix.kernel_of[e.name] = i;
    if (e.kind == Kind::Copy && e.of.producer >= 0) {
      auto& v = ix.copies_of[{e.of.producer, e.of.output, e.of.dst}];
      v.resize(static_cast<std::size_t>(std::max<int>(e.of.segments, 1)), events_.size());
      v[static_cast<std::size_t>(std::clamp(e.of.segment, 0, e.of.segments - 1))] = i;
    }
  }
  std::vector<std::int64_t>& corr = ix.corr;
  corr.assign(events_.size(), -1);
  std::vector<std::size_t>& launched = ix.launched;
  launched.assign(events_.size(), events_.size());
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const Ev& e = events_[i];
    if (e.kind == Kind::Launch || !is_gpu(e.pid)) continue;
    const std::string key = e.kind == Kind::Kernel ? e.name : "issue " + e.name;
    const auto it = launch_of.find({e.pid, key});
    if (it == launch_of.end()) {
      // A copy engine's copy whose issue costs nothing on this cluster: still a cudaMemcpyAsync
      // (of 0 ns, drawn below) on the GPU's launch thread, so that every GPU activity has a launch.
      if (e.kind == Kind::Copy && e.tid >= kEngineTid && e.tid < kHostCopyTid)
        corr[i] = static_cast<std::int64_t>(events_.size() + i) + 1;
      continue;
    }
    corr[i] = corr[it->second] = static_cast<std::int64_t>(it->second) + 1;
    launched[it->second] = i;
  }

  return ix;
}

void TraceSink::emit_metadata(const Index& ix, nlohmann::json& evs) const {
  const std::size_t nd = cluster_->devices.size();
  const std::vector<std::int32_t>& tid = ix.tid;
  const std::vector<std::int64_t>& corr = ix.corr;
  for (std::size_t d = 0; d <= nd; ++d) {
    const bool links = d == nd;
    const std::string name = links
                                 ? "links"
                                 : cluster_->devices[d].name +
                                       (is_gpu(static_cast<std::int32_t>(d)) ? " (GPU)" : " (CPU)");
    evs.push_back({{"ph", "M"},
                   {"name", "process_name"},
                   {"pid", static_cast<std::int32_t>(d) + pid_offset_},
                   {"tid", 0},
                   {"args", {{"name", prefix_ + name}}}});
    evs.push_back({{"ph", "M"},
                   {"name", "process_sort_index"},
                   {"pid", static_cast<std::int32_t>(d) + pid_offset_},
                   {"tid", 0},
                   {"args", {{"sort_index", static_cast<std::int32_t>(d) + pid_offset_}}}});
  }
  std::set<std::pair<std::int32_t, std::int32_t>> tracks;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    tracks.insert({events_[i].pid, tid[i]});
    if (corr[i] > static_cast<std::int64_t>(events_.size()))
      tracks.insert({events_[i].pid, kLaunchTid});
  }
  for (const auto& [pid, t] : tracks) {
    evs.push_back({{"ph", "M"},
                   {"name", "thread_name"},
                   {"pid", pid_of(pid)},
                   {"tid", t},
                   {"args", {{"name", track_name(pid, t)}}}});
    evs.push_back({{"ph", "M"},
                   {"name", "thread_sort_index"},
                   {"pid", pid_of(pid)},
                   {"tid", t},
                   {"args", {{"sort_index", t == kLaunchTid ? -1 : t}}}});
  }
}

nlohmann::json TraceSink::op_args(const std::string& name, std::int32_t d) const {
  json a = {{"op", name}};
  if (!graph_) return a;
  const OpId id = graph_->op_index(name);
  if (id < 0) return a;
  const Op& op = graph_->ops[static_cast<std::size_t>(id)];
  a["op type"] = op.type;
  a["phase"] = to_string(op.phase);
  a["flops"] = op.flops.v;
  a["bytes read"] = op.bytes_read.v;
  a["bytes written"] = op.bytes_written.v;
  if (!op.layer.empty()) a["layer"] = op.layer;
  if (costs_)
    a["priced by"] =
        pricing_rule(costs_->estimate(op, cluster_->devices[static_cast<std::size_t>(d)]), op);
  return a;
}

void TraceSink::emit_slices(const Index& ix, nlohmann::json& evs) const {
  const std::vector<std::int32_t>& tid = ix.tid;
  const std::vector<std::int64_t>& corr = ix.corr;
  const std::vector<std::size_t>& launched = ix.launched;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const Ev& e = events_[i];
    json j = {
        {"ph", "X"}, {"pid", pid_of(e.pid)}, {"tid", tid[i]}, {"ts", us(e.ts)}, {"dur", us(e.dur)}};
    const bool g = is_gpu(e.pid);
    if (e.kind == Kind::Launch) {
      const bool issue = e.name.rfind("issue ", 0) == 0;
      if (!g) {
        j["name"] = e.name;
        j["cat"] = "cpu_op";
        j["args"] = op_args(e.name, e.pid);
        j["args"]["dispatch"] = true;
        evs.push_back(std::move(j));
        continue;
      }
      json rt = j;
      rt["cat"] = "cuda_runtime";
      rt["name"] = issue ? "cudaMemcpyAsync" : "cudaLaunchKernel";
      rt["args"] = {{issue ? "copy" : "op", issue ? e.name.substr(6) : e.name}};
      if (corr[i] >= 0) {
        rt["args"]["correlation"] = corr[i];
        rt["args"]["External id"] = corr[i];
      }
      if (!issue) {
        // The framework op around its launch call, as Kineto nests aten::* around cudaLaunchKernel.
        j["cat"] = "cpu_op";
        j["name"] = e.name;
        j["args"] = op_args(e.name, e.pid);
        if (corr[i] >= 0) j["args"]["External id"] = corr[i];
        evs.push_back(std::move(j));
      }
      evs.push_back(std::move(rt));
      if (launched[i] < events_.size()) {
        const std::size_t k = launched[i];
        evs.push_back(flow('s', corr[i], pid_of(e.pid), tid[i], e.ts, "ac2g", "ac2g"));
        evs.push_back(
            flow('f', corr[i], pid_of(events_[k].pid), tid[k], events_[k].ts, "ac2g", "ac2g"));
      }
      continue;
    }
    if (e.kind == Kind::Kernel) {
      j["name"] = e.name;
      j["cat"] = g ? "kernel" : "cpu_op";
      j["args"] = op_args(e.name, e.pid);
      j["args"][g ? "stream" : "worker"] = e.tid;
      j["args"]["device"] = e.pid;
    } else {
      if (corr[i] > static_cast<std::int64_t>(events_.size())) {
        evs.push_back({{"ph", "X"},
                       {"pid", pid_of(e.pid)},
                       {"tid", kLaunchTid},
                       {"ts", us(e.ts)},
                       {"dur", 0.0},
                       {"cat", "cuda_runtime"},
                       {"name", "cudaMemcpyAsync"},
                       {"args",
                        {{"copy", e.name},
                         {"correlation", corr[i]},
                         {"External id", corr[i]},
                         {"issue cost", "0 ns (the cluster sets no copy issue time)"}}}});
        evs.push_back(flow('s', corr[i], pid_of(e.pid), kLaunchTid, e.ts, "ac2g", "ac2g"));
        evs.push_back(flow('f', corr[i], pid_of(e.pid), tid[i], e.ts, "ac2g", "ac2g"));
      }
      j["name"] = memcpy_name(tid[i]);
      j["cat"] = "gpu_memcpy";
      j["args"] = {{"copy", e.name},
                   {"bytes", e.bytes},
                   {"route", e.route},
                   {"device", e.pid},
                   {"stream", tid[i]}};
      if (e.of.producer >= 0 && graph_)
        j["args"]["producer"] = graph_->ops[static_cast<std::size_t>(e.of.producer)].name;
      if (e.of.dst >= 0)
        j["args"]["to"] = cluster_->devices[static_cast<std::size_t>(e.of.dst)].name;
      if (e.dur > 0)
        j["args"]["memory bandwidth (GB/s)"] =
            static_cast<double>(e.bytes) / static_cast<double>(e.dur);
    }
    if (corr[i] >= 0) {
      j["args"]["correlation"] = corr[i];
      j["args"]["External id"] = corr[i];
    }
    evs.push_back(std::move(j));
  }
}

void TraceSink::emit_dependencies(const Index& ix, nlohmann::json& evs) const {
  const std::vector<std::int32_t>& tid = ix.tid;
  // Data and control dependencies: producer kernel -> (copy segments ->) consumer kernel.
  std::int64_t next_id = 2 * static_cast<std::int64_t>(events_.size()) + 1;
  const auto arrow = [&](std::size_t from, std::size_t to, const char* name) {
    const std::int64_t id = next_id++;
    evs.push_back(
        flow('s', id, pid_of(events_[from].pid), tid[from], events_[from].ts, "dep", name));
    evs.push_back(flow('f', id, pid_of(events_[to].pid), tid[to], events_[to].ts, "dep", name));
  };
  if (graph_) {
    std::set<std::tuple<std::int32_t, std::int32_t, DeviceId>> drawn;
    for (OpId c = 0; c < graph_->num_ops(); ++c) {
      const Op& op = graph_->ops[static_cast<std::size_t>(c)];
      const auto kc = ix.kernel_of.find(op.name);
      if (kc == ix.kernel_of.end()) continue;
      const DeviceId dc = events_[kc->second].pid;
      for (const TensorRef& in : op.inputs) {
        const auto kp = ix.kernel_of.find(graph_->ops[static_cast<std::size_t>(in.op)].name);
        if (kp == ix.kernel_of.end()) continue;
        if (events_[kp->second].pid == dc) {
          arrow(kp->second, kc->second, "data");
          continue;
        }
        const auto ch = ix.copies_of.find({in.op, in.output, dc});
        if (ch == ix.copies_of.end() || ch->second.back() >= events_.size()) continue;
        if (drawn.insert(ch->first).second) {
          std::size_t prev = kp->second;
          for (std::size_t s : ch->second) {
            if (s >= events_.size()) break;
            arrow(prev, s, "data");
            prev = s;
          }
        }
        arrow(ch->second.back(), kc->second, "data");
      }
      for (OpId p : op.control_inputs) {
        const auto kp = ix.kernel_of.find(graph_->ops[static_cast<std::size_t>(p)].name);
        if (kp != ix.kernel_of.end()) arrow(kp->second, kc->second, "control");
      }
    }
  }
}

void TraceSink::emit_counters(nlohmann::json& evs) const {
  const std::int32_t links_pid = static_cast<std::int32_t>(cluster_->devices.size()) + pid_offset_;
  // Memory counters per device.
  for (const Mem& m : memory_)
    evs.push_back({{"ph", "C"},
                   {"pid", pid_of(m.d)},
                   {"tid", 0},
                   {"ts", us(m.t)},
                   {"name", "memory"},
                   {"args", {{"allocated bytes", m.bytes}}}});
  // Link counters: sum of the mean rates of the flows active on each direction.
  std::map<LinkId, std::map<SimTime, std::pair<double, double>>> deltas;  // rate changes
  std::map<LinkId, std::map<SimTime, int>> count;
  for (const LinkFlow& f : flows_) {
    const double rate =
        f.end > f.start ? static_cast<double>(f.bytes) / static_cast<double>(f.end - f.start) : 0.0;
    auto& d = deltas[f.link];
    (f.forward ? d[f.start].first : d[f.start].second) += rate;
    (f.forward ? d[f.end].first : d[f.end].second) -= rate;
    count[f.link][f.start] += 1;
    count[f.link][f.end] -= 1;
  }
  for (const auto& [l, d] : deltas) {
    const Link& link = cluster_->links[static_cast<std::size_t>(l)];
    const std::string a = cluster_->vertices[static_cast<std::size_t>(link.a)].name;
    const std::string b = cluster_->vertices[static_cast<std::size_t>(link.b)].name;
    double fwd = 0, rev = 0;
    int n = 0;
    const auto& cnt = count.at(l);
    for (const auto& [t, r] : d) {
      fwd += r.first;
      rev += r.second;
      n += cnt.at(t);
      // Bytes per ns = GB/s. Rounded to the byte per second so that sums that cancel read 0.
      const double f = n == 0 ? 0.0 : std::max(0.0, std::round(fwd * 1e9) / 1e9);
      const double rv = n == 0 ? 0.0 : std::max(0.0, std::round(rev * 1e9) / 1e9);
      evs.push_back(
          {{"ph", "C"},
           {"pid", links_pid},
           {"tid", 0},
           {"ts", us(t)},
           {"name", link.name},
           {"args",
            {{a + "->" + b + " GB/s", f},
             {b + "->" + a + " GB/s", rv},
             {"flows", n},
             {"utilisation %", 100.0 * std::max(f, rv) * 1e9 / link.bandwidth.bytes_per_s}}}});
    }
  }
}

std::string TraceSink::to_json() const {
  const Index ix = index();
  json evs = json::array();
  emit_metadata(ix, evs);
  emit_slices(ix, evs);
  emit_dependencies(ix, evs);
  emit_counters(evs);
  json root = {{"schemaVersion", 1},
               {"traceName", "placesim simulated step"},
               {"distributedInfo", {{"rank", 0}, {"world_size", 1}}},
               {"displayTimeUnit", "ns"},
               {"traceEvents", std::move(evs)}};
  return root.dump();
}

void TraceSink::write(const std::string& path) const {
  write_file_atomic(path, to_json());
}

}  // namespace placesim::sim

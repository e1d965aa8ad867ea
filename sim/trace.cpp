#include "sim/trace.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"

namespace placesim::sim {

namespace {
// Track ids inside a device's process.
constexpr std::int32_t kLaunchTid = 0;
constexpr std::int32_t kStreamTid = 1;       // + stream index
constexpr std::int32_t kEngineTid = 1000;    // + kind * 100 + slot
constexpr std::int32_t kHostCopyTid = 999;

double us(SimTime ns) { return static_cast<double>(ns) / 1000.0; }
}  // namespace

TraceSink::TraceSink(const Cluster& c) {
  for (const Device& d : c.devices) {
    device_names_.push_back(d.name);
    is_gpu_.push_back(d.spec.kind == DeviceKind::Gpu);
  }
  for (const Link& l : c.links) link_names_.push_back(l.name);
}

void TraceSink::launch(DeviceId d, std::string_view op, SimTime start, SimTime end) {
  events_.push_back({'X', d, kLaunchTid, 0, start, end - start, std::string(op), "launch", -1});
}

void TraceSink::kernel(DeviceId d, int stream, std::string_view op, std::string_view type,
                       SimTime start, SimTime end) {
  events_.push_back(
      {'X', d, kStreamTid + stream, 0, start, end - start, std::string(op), std::string(type), -1});
}

void TraceSink::copy(DeviceId d, EngineKind kind, int slot, std::string_view name,
                     std::int64_t bytes, SimTime start, SimTime end) {
  const std::int32_t tid = slot < 0 ? kHostCopyTid : kEngineTid + static_cast<int>(kind) * 100 + slot;
  events_.push_back({'X', d, tid, 0, start, end - start, std::string(name), "copy", bytes});
}

void TraceSink::link_flow(LinkId l, std::string_view name, std::int64_t bytes, SimTime start,
                          SimTime end) {
  const auto pid = static_cast<std::int32_t>(device_names_.size());
  const std::int64_t id = next_async_++;
  events_.push_back({'b', pid, l, id, start, 0, std::string(name), "transfer", bytes});
  events_.push_back({'e', pid, l, id, end, 0, std::string(name), "transfer", -1});
}

std::string TraceSink::track_name(std::int32_t pid, std::int32_t tid) const {
  if (pid == static_cast<std::int32_t>(device_names_.size()))
    return tid < static_cast<std::int32_t>(link_names_.size()) ? link_names_[tid] : "link";
  const bool gpu = is_gpu_[pid];
  if (tid == kLaunchTid) return gpu ? "host launch thread" : "dispatch";
  if (tid == kHostCopyTid) return "copies (no engine)";
  if (tid >= kEngineTid) {
    static const char* kinds[] = {"H2D", "D2H", "peer"};
    const int k = (tid - kEngineTid) / 100, slot = (tid - kEngineTid) % 100;
    return std::string(kinds[k]) + " copy engine " + std::to_string(slot);
  }
  return (gpu ? "stream " : "worker ") + std::to_string(tid - kStreamTid);
}

std::string TraceSink::to_json() const {
  using nlohmann::json;
  json evs = json::array();
  std::set<std::pair<std::int32_t, std::int32_t>> tracks;
  for (const Ev& e : events_) tracks.insert({e.pid, e.tid});
  for (std::size_t d = 0; d <= device_names_.size(); ++d) {
    const bool links = d == device_names_.size();
    evs.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"tid", 0},
                   {"args", {{"name", links ? std::string("links") : device_names_[d]}}}});
    evs.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", d}, {"tid", 0},
                   {"args", {{"sort_index", d}}}});
  }
  for (const auto& [pid, tid] : tracks) {
    evs.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid},
                   {"args", {{"name", track_name(pid, tid)}}}});
    evs.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
                   {"args", {{"sort_index", tid}}}});
  }
  for (const Ev& e : events_) {
    json j = {{"ph", std::string(1, e.ph)}, {"pid", e.pid}, {"tid", e.tid}, {"ts", us(e.ts)},
              {"name", e.name}, {"cat", e.cat}};
    if (e.ph == 'X') j["dur"] = us(e.dur);
    if (e.ph != 'X') j["id"] = e.id;
    if (e.bytes >= 0) j["args"] = {{"bytes", e.bytes}};
    evs.push_back(std::move(j));
  }
  json root = {{"traceEvents", std::move(evs)}, {"displayTimeUnit", "ns"}};
  return root.dump();
}

void TraceSink::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "a writable path for the trace");
    out << to_json();
    if (!out.flush()) throw InputError(path, "", "a writable path for the trace (write failed)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(path, "", "a writable path for the trace (rename failed)");
  }
}

}  // namespace placesim::sim

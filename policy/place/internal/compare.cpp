#include "policy/place/compare.hpp"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

CompareRow evaluate_row(const std::string& method, const sim::Graph& g, const sim::Cluster& c,
                        const sim::Placement& p, const MethodOptions& options,
                        double method_wall_s) {
  CompareRow row;
  row.method = method;
  row.method_wall_s = method_wall_s;
  sim::SimOptions so;
  so.record_critical_path = false;
  const sim::Outcome o = sim::simulate(c, g, p, so, options.costs);
  row.step_time_s = o.step_time.seconds();
  row.oom = o.oom;
  row.unreachable = o.unreachable;
  double fullest = -1.0;
  for (const sim::DeviceOutcome& d : o.devices) {
    // The reserved part (context, workspaces) is occupied too: report what the device holds.
    const std::int64_t held = d.peak_memory.v + d.reserved_memory.v;
    const double ratio = d.memory_capacity.v > 0
                             ? static_cast<double>(held) / static_cast<double>(d.memory_capacity.v)
                             : 0.0;
    if (ratio > fullest) {
      fullest = ratio;
      row.fullest_device = d.name;
      row.peak_memory = sim::Bytes{held};
      row.capacity = d.memory_capacity;
    }
  }
  const std::set<sim::DeviceId> used(p.device_of.begin(), p.device_of.end());
  row.devices_used = static_cast<int>(used.size());
  return row;
}

void fill_speedups(std::vector<CompareRow>& rows, const sim::Graph& g, const sim::Cluster& c,
                   const MethodOptions& options) {
  std::optional<CompareRow> base;
  for (const CompareRow& r : rows)
    if (r.method == "single-gpu" && r.error.empty()) base = r;
  if (!base) {
    const auto p = sim::builtin_placement("single-gpu", g, c);
    if (!p) return;
    base = evaluate_row("single-gpu", g, c, *p, options, 0.0);
  }
  for (CompareRow& r : rows) {
    r.speedup.reset();
    if (r.error.empty() && !base->oom && !r.oom && !r.unreachable && r.step_time_s > 0)
      r.speedup = base->step_time_s / r.step_time_s;
  }
}

std::vector<CompareRow> compare_methods(const sim::Graph& g, const sim::Cluster& c,
                                        const std::vector<std::string>& methods,
                                        const MethodOptions& options,
                                        std::vector<CompareRow> extra) {
  std::vector<CompareRow> rows;
  for (const std::string& m : methods) {
    const auto t0 = std::chrono::steady_clock::now();
    sim::Placement p;
    try {
      p = make_placement(m, g, c, options);
    } catch (const sim::InputError& e) {
      CompareRow row;
      row.method = m;
      row.error = e.what();
      rows.push_back(row);
      continue;
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows.push_back(evaluate_row(m, g, c, p, options, wall));
  }
  for (CompareRow& r : extra) rows.push_back(std::move(r));
  fill_speedups(rows, g, c, options);
  return rows;
}

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string memory_cell(const CompareRow& r) {
  if (r.fullest_device.empty()) return "-";
  return r.fullest_device + " " + sim::format_bytes(r.peak_memory) + " / " +
         sim::format_bytes(r.capacity);
}

}  // namespace

std::string format_compare_table(const std::vector<CompareRow>& rows) {
  const std::vector<std::string> head = {
      "method",  "step time (s)",  "OOM", "fullest device (peak / capacity)", "speedup vs 1 GPU",
      "devices", "method time (s)"};
  std::vector<std::vector<std::string>> cells;
  for (const CompareRow& r : rows) {
    if (!r.error.empty()) {
      cells.push_back({r.method, "error: " + r.error, "", "", "", "", ""});
      continue;
    }
    cells.push_back({r.method, fixed(r.step_time_s, 4),
                     r.oom ? "OOM" : (r.unreachable ? "unreachable" : "no"), memory_cell(r),
                     r.speedup ? fixed(*r.speedup, 2) + "x" : "-", std::to_string(r.devices_used),
                     fixed(r.method_wall_s, 3)});
  }
  std::vector<std::size_t> width(head.size());
  for (std::size_t i = 0; i < head.size(); ++i) width[i] = head[i].size();
  for (const auto& row : cells)
    if (row[1].rfind("error: ", 0) != 0)
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::ostringstream out;
  const auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out << row[i];
      if (i + 1 < row.size())
        out << std::string(width[i] - std::min(width[i], row[i].size()) + 2, ' ');
    }
    out << "\n";
  };
  line(head);
  for (const auto& row : cells) {
    if (row[1].rfind("error: ", 0) == 0) {
      out << row[0] << std::string(width[0] - std::min(width[0], row[0].size()) + 2, ' ') << row[1]
          << "\n";
      continue;
    }
    line(row);
  }
  return out.str();
}

std::string compare_to_csv(const std::vector<CompareRow>& rows) {
  std::ostringstream out;
  out << "method,step_time_s,oom,unreachable,fullest_device,peak_memory_bytes,capacity_bytes,"
         "speedup_vs_single_gpu,devices_used,method_wall_s,error\n";
  const auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (const char ch : s) {
      if (ch == '"') q.push_back('"');
      q.push_back(ch);
    }
    q.push_back('"');
    return q;
  };
  for (const CompareRow& r : rows) {
    out << quote(r.method) << ',';
    if (r.error.empty()) {
      out << fixed(r.step_time_s, 9) << ',' << (r.oom ? "true" : "false") << ','
          << (r.unreachable ? "true" : "false") << ',' << quote(r.fullest_device) << ','
          << r.peak_memory.v << ',' << r.capacity.v << ','
          << (r.speedup ? fixed(*r.speedup, 6) : "") << ',' << r.devices_used << ','
          << fixed(r.method_wall_s, 6) << ",\n";
    } else {
      out << ",,,,,,,,," << quote(r.error) << "\n";
    }
  }
  return out.str();
}

std::string compare_to_json(const std::vector<CompareRow>& rows, int indent) {
  nlohmann::json arr = nlohmann::json::array();
  for (const CompareRow& r : rows) {
    nlohmann::json j;
    j["method"] = r.method;
    if (!r.error.empty()) {
      j["error"] = r.error;
    } else {
      j["step_time_s"] = r.step_time_s;
      j["oom"] = r.oom;
      j["unreachable"] = r.unreachable;
      j["fullest_device"] = r.fullest_device;
      j["peak_memory_bytes"] = r.peak_memory.v;
      j["capacity_bytes"] = r.capacity.v;
      j["speedup_vs_single_gpu"] = r.speedup ? nlohmann::json(*r.speedup) : nlohmann::json(nullptr);
      j["devices_used"] = r.devices_used;
      j["method_wall_s"] = r.method_wall_s;
    }
    arr.push_back(j);
  }
  return arr.dump(indent) + "\n";
}

}  // namespace placesim::policy

// `placesim calibrate`, `placesim calibrate-links` and `placesim validate`: fit kernel and link
// models from real profiles and benchmark outputs, and replay profiled steps through the engine.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/kernel_fit.hpp"
#include "calibration/link_fit.hpp"
#include "calibration/pytorch_et.hpp"
#include "calibration/trace.hpp"
#include "calibration/validate.hpp"
#include "sim/catalog.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"
#include "sim/units.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {

struct CalibrateArgs {
  std::vector<std::string> profiles;
  std::vector<std::string> ets;  ///< --et: the execution trace of the i-th profile's step
  std::string output, device_model, math_mode = "torch";
  bool json = false;
  bool host_from_ops = false;  ///< op-level host model from traces without ProfilerStep#N
  std::string profiler_overhead = "none";  ///< --profiler-overhead: none, auto or a duration
  bool host_only = false;  ///< --host-only: write the host model alone, no kernel tables
};

// --profiler-overhead for one profile: seconds per recorded framework op.
double profiler_overhead_s(const calibration::Profile& prof, const CalibrateArgs& a) {
  if (a.profiler_overhead == "none") return 0.0;
  if (a.profiler_overhead == "auto") return calibration::profiler_overhead_per_op(prof);
  try {
    return sim::parse_duration(a.profiler_overhead).seconds();
  } catch (const std::exception&) {
    throw sim::InputError("--profiler-overhead", "",
                          "none, auto or a duration per recorded op (\"5 us\"), got \"" +
                              sim::printable(a.profiler_overhead, 40) + "\"");
  }
}

// --host-only: keep each device's host model and drop what prices kernels (exact signatures,
// class fits, the fitted roofline, the profile's kernel floor), so that a host-bound step's host
// cost can be applied to a graph whose kernels the cost model's own rules price. A device without
// a host model is dropped; none left is an error naming the profile.
void keep_host_only(sim::Calibration& cal, const CalibrateArgs& a) {
  for (auto it = cal.devices.begin(); it != cal.devices.end();) {
    if (!it->second.host) {
      it = cal.devices.erase(it);
      continue;
    }
    sim::DeviceCalibration host_only;
    host_only.host = std::move(it->second.host);
    it->second = std::move(host_only);
    ++it;
  }
  if (cal.devices.empty())
    throw sim::InputError(a.profiles.size() == 1 ? a.profiles[0] : "<flag --profile>", "",
                          "--host-only: a host model (ProfilerStep#N annotations, or "
                          "--host-from-ops), got none");
}

struct LinksArgs {
  std::string p2p, nccl_tests, vidur_csv, cluster, output,
      collective;            // empty: the one the file names
  int ranks = 0, nodes = 0;  // overrides for tables that do not say
  int run = 0;               // nccl-tests: fit only this run of the file (1-based; 0 = all)
  bool json = false;
};

struct ValidateArgs {
  std::vector<std::string> profiles;
  std::string calibration, device_model, output, trace;
  bool json = false;
  int max_steps = 0;
};

// Results are collected and printed at the end, so that an error on the third profile leaves
// stdout empty (the contract: an error prints one line on stderr and nothing else). One command
// runs per process, on one thread; the printf-style helpers below append here from every step.
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
std::string g_out;
// Likewise: notes come out only once the command succeeded.
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
std::vector<std::string> g_notes;
void outf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void outf(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) g_out.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}
void flush_notes() {
  for (const std::string& n : g_notes) note(n);
  g_notes.clear();
}
void flush_out() {
  flush_notes();
  std::fputs(g_out.c_str(), stdout);
  g_out.clear();
}

/// Reads a profile, refusing Nsight Systems' own report format with the command that converts it.
calibration::Profile read_profile_checked(const std::string& path) {
  const auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".nsys-rep") || ends_with(".qdrep"))
    throw sim::InputError(
        path, "",
        "a Kineto JSON or an Nsight Systems SQLite export, got an Nsight Systems report; "
        "run `nsys export --type sqlite " +
            path + "` and pass the .sqlite file");
  calibration::Profile p = calibration::read_profile(path);
  if (p.events.empty())
    throw sim::InputError(
        path, "",
        "a profile with timed events (Kineto JSON or Nsight Systems SQLite export), got none");
  calibration::require_measured_work(p);
  return p;
}

/// A trace with GPU activity but no GPU name (no deviceProperties/computeProperties header, as in
/// excerpts and some exporters) would be filed under the CPU's key "cpu": its kernel times and
/// launch overhead would then price CPU ops. Without --device-model it is refused.
void refuse_unnamed_gpu(const calibration::Profile& p, const std::string& path,
                        const std::string& device_model) {
  if (!p.device_name.empty() || !device_model.empty() || !p.has_gpu_activity()) return;
  // ROCm's generic "AMD Radeon Graphics" is read as no name (trace.cpp): say that it was there.
  const bool generic = std::any_of(p.missing.begin(), p.missing.end(), [](const std::string& m) {
    return m.find("\"AMD Radeon Graphics\"") != std::string::npos;
  });
  throw sim::InputError(
      path, "deviceProperties",
      std::string("the name of the GPU its kernels ran on (Kineto's "
                  "deviceProperties, computeProperties before torch 1.10), got ") +
          (generic ? "ROCm's generic \"AMD Radeon Graphics\", which names no "
                     "model"
                   : "none") +
          "; pass --device-model MODEL");
}

bool is_manifest(const std::string& path) {
  // profile_rig.py manifests are JSON objects with "format": "placesim-rig-manifest".
  if (path.size() < 5 || path.substr(path.size() - 5) != ".json") return false;
  const std::string text = sim::read_text_file(path);
  return text.find("\"placesim-rig-manifest\"") != std::string::npos;
}

// What the reader linked: every GPU activity to its launch and to the framework op that issued
// it, and what stayed unlinked, per kind; a note on stderr when nothing could be linked.
void print_links(const std::string& path, const calibration::Profile& prof) {
  const calibration::LinkReport& l = prof.links;
  if (l.gpu == 0) return;
  const bool has_ops = std::any_of(
      prof.events.begin(), prof.events.end(),
      [](const calibration::TraceEvent& e) { return e.kind == calibration::EventKind::CpuOp; });
  if (!has_ops) {
    // Nsight exports: no framework ops by design; a Kineto trace without CPU activity has none
    // either. Samples are keyed by kernel name.
    outf("  links: %d of %d GPU activities tied to their launch; %s\n", l.gpu_to_launch, l.gpu,
         prof.dialect == "nsys-sqlite"
             ? "the format has no framework ops"
             : "the trace has no framework ops (no CPU activity recorded): keyed by kernel name");
    return;
  }
  outf(
      "  links: %d of %d GPU activities (%.1f%%) tied to the framework op that launched them; %d "
      "to a launch",
      l.gpu_to_op, l.gpu, 100.0 * l.gpu_linked_fraction(), l.gpu_to_launch);
  if (l.by_flow > 0) outf(" (%d by ac2g flow)", l.by_flow);
  outf("\n");
  std::string unl;
  for (const auto& [k, n] : l.without_launch)
    unl += " " + k + " " + std::to_string(n) + " without launch;";
  for (const auto& [k, n] : l.without_op)
    unl += " " + k + " " + std::to_string(n) + " launched outside any op;";
  if (!unl.empty()) outf("  unlinked:%s\n", unl.c_str());
  if (l.by_external_id > 0 || l.external_id_disagrees > 0 || l.external_id_is_correlation > 0)
    outf(
        "  External id: %d calls tied by it (no enclosing op on their thread), %d ignored (the op "
        "they name "
        "does not enclose the call), %d equal to the call's correlation id (torch <= 2.0, ROCm "
        "traces) and "
        "unused\n",
        l.by_external_id, l.external_id_disagrees, l.external_id_is_correlation);
  if (l.gpu_to_op == 0)
    g_notes.push_back(path + ": 0 of " + std::to_string(l.gpu) +
                      " GPU activities could be tied to a framework op");
}

// Several profiles of one device: the largest host cost per launch is kept, because a step that is
// partly GPU-bound (ResNet-18 at batch 64 on an H200: GPU 68 % busy) waits on the GPU as well and
// so spreads less host time over more launches than a host-bound one (docs/validation.md).
// Op-level host costs (traces without steps) of each device, pooled over its profiles.
struct OpLevelHost {
  calibration::HostCost cost;
  std::string profiles;
};

void keep_host_cost(std::map<std::string, sim::HostCalibration>& hosts,
                    std::map<std::string, OpLevelHost>& op_level, const calibration::HostCost& h,
                    const std::string& profile) {
  auto it = hosts.find(h.device);
  // A step trace's model holds what an op-level one lacks (Python, optimizer): it wins.
  const bool have_steps = it != hosts.end() && (it->second.steps > 0 || it->second.cpu);
  if (h.op_level) {
    auto [o, fresh] = op_level.try_emplace(h.device, OpLevelHost{h, profile});
    if (!fresh) {
      calibration::merge_op_host_cost(o->second.cost, h);
      o->second.profiles += " + " + profile;
    }
    if (have_steps) {
      g_notes.push_back(h.device + ": op-level host cost of " + profile +
                        " not used: a step trace's host model (" + it->second.profile + ") wins");
      return;
    }
    hosts[h.device] = calibration::host_calibration(o->second.cost, o->second.profiles);
    return;
  }
  sim::HostCalibration c = calibration::host_calibration(h, profile);
  if (it != hosts.end() && !have_steps) {
    g_notes.push_back(h.device + ": the step trace " + profile + "'s host model replaces the " +
                      "op-level one of " + it->second.profile);
    it->second = std::move(c);
    return;
  }
  if (it == hosts.end()) {
    hosts.emplace(h.device, std::move(c));
    return;
  }
  const sim::HostCalibration& kept =
      c.launch_overhead > it->second.launch_overhead ? c : it->second;
  g_notes.push_back(h.device + ": host cost per launch from " + it->second.profile + " (" +
                    sim::format_duration(it->second.launch_overhead) + ") and " + profile + " (" +
                    sim::format_duration(c.launch_overhead) + "); keeping the larger, " +
                    kept.profile);
  if (&kept == &c) it->second = std::move(c);
}

// The profile's shortest kernel (kernel_floor_s) under its device; several profiles of one device:
// the shortest floor (their kernels all ran there).
void keep_kernel_floor(std::map<std::string, sim::Duration>& floors,
                       const calibration::Profile& prof, const std::string& device_model) {
  const auto f = calibration::kernel_floor_s(prof);
  if (!f) return;
  const std::string dev = calibration::calibration_key(prof.device_name, device_model);
  const sim::Duration d = sim::Duration::from_seconds_ceil(*f);
  auto [it, fresh] = floors.emplace(dev, d);
  if (!fresh) it->second = std::min(it->second, d);
}

void apply_kernel_floors(const std::map<std::string, sim::Duration>& floors,
                         sim::Calibration& cal) {
  for (const auto& [dev, d] : floors)
    if (auto it = cal.devices.find(dev); it != cal.devices.end()) {
      it->second.min_kernel = d;
      outf(
          "device %s: shortest kernel %s (5th percentile of the profile's kernels; the kernel "
          "floor of every rule)\n",
          dev.c_str(), sim::format_duration(d).c_str());
    }
}

// The profile's queued kernel->kernel gaps (queued_kernel_gaps) under its device, pooled over its
// profiles (their kernels all ran there).
void keep_kernel_gaps(std::map<std::string, calibration::QueuedGaps>& gaps,
                      const calibration::Profile& prof, const std::string& device_model) {
  if (!prof.has_gpu_activity()) return;
  const calibration::QueuedGaps g = calibration::queued_kernel_gaps(prof);
  const std::string dev = calibration::calibration_key(prof.device_name, device_model);
  auto [it, fresh] = gaps.emplace(dev, g);
  if (fresh) return;
  it->second.ns.insert(it->second.ns.end(), g.ns.begin(), g.ns.end());
  it->second.whole_us = it->second.whole_us && g.whole_us;
}

void apply_kernel_gaps(const std::map<std::string, calibration::QueuedGaps>& gaps,
                       sim::Calibration& cal) {
  for (const auto& [dev, g] : gaps) {
    auto it = cal.devices.find(dev);
    if (it == cal.devices.end()) continue;
    const auto fit = calibration::kernel_gap_of(g);
    if (!fit) {
      outf(
          "device %s: kernel gap not measured (%zu queued kernel->kernel pairs, fewer than %zu; "
          "the cluster's kernel_gap stays)\n",
          dev.c_str(), g.ns.size(), calibration::kKernelGapMinPairs);
      continue;
    }
    it->second.kernel_gap = fit->gap;
    outf(
        "device %s: kernel gap %s (%s of %zu kernel->kernel pairs on one stream whose launch "
        "returned >= %.0f us before the previous kernel ended; simulate --calibration applies it "
        "as kernel_gap)\n",
        dev.c_str(), sim::format_duration(fit->gap).c_str(),
        fit->mean ? "mean, whole-microsecond timestamps," : "median", fit->pairs,
        static_cast<double>(calibration::kQueuedMarginNs) * 1e-3);
  }
}

// A rig manifest's CPU side: its memory hierarchy (the class fits use it) and host model.
void keep_cpu_side(const calibration::ManifestCpu& cpu,
                   std::map<std::string, std::vector<sim::MemoryLevel>>& memory,
                   std::map<std::string, std::vector<sim::MemoryLevel>>& sweep,
                   std::map<std::string, sim::HostCalibration>& hosts,
                   std::map<std::string, int>& lanes,
                   std::map<std::string, calibration::RateBounds>& peaks) {
  if (cpu.vector_lanes > 0) {
    outf("  vector lanes of %s: %d floats (convolutions on lane-padded channels)\n",
         cpu.device.c_str(), cpu.vector_lanes);
    lanes[cpu.device] = cpu.vector_lanes;
  }
  if (const calibration::RateBounds p = calibration::cpu_peak(cpu); p.max_flop_rate > 0) {
    outf(
        "  peak of %s: %.4g GFLOP/s = %s, clock from %s; %.4g GB/s (two vector loads a "
        "cycle); they bound its fits\n",
        cpu.device.c_str(), p.max_flop_rate * 1e-9, p.what.c_str(), cpu.clock_source.c_str(),
        p.max_byte_rate * 1e-9);
    peaks[cpu.device] = p;
  }
  if (!cpu.memory.empty()) {
    std::string line;
    for (const sim::MemoryLevel& l : cpu.memory) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.3g GB/s", line.empty() ? "" : ", ", l.name.c_str(),
                    l.byte_s * 1e-9);
      line += buf;
      if (l.bytes > 0)
        line += " (<= " + std::to_string(static_cast<long long>(l.bytes) >> 10) + " KiB)";
    }
    outf("  memory of %s: %s\n", cpu.device.c_str(), line.c_str());
    memory[cpu.device] = cpu.memory;
    if (!cpu.sweep.empty()) {
      outf(
          "  streaming sweep of %s: %zu points, %.3g GB/s at %.3g MB to %.3g GB/s at %.3g MB "
          "(elementwise, copies and updates priced at it by working set)\n",
          cpu.device.c_str(), cpu.sweep.size(), cpu.sweep.front().byte_s * 1e-9,
          cpu.sweep.front().bytes * 1e-6, cpu.sweep.back().byte_s * 1e-9,
          cpu.sweep.back().bytes * 1e-6);
      sweep[cpu.device] = cpu.sweep;
    }
  }
  if (cpu.host) {
    outf(
        "  host of %s: %.3g us dispatch per op measured, not charged (its Python is in the "
        "step's gap, its dispatcher in the rows), %s per parameter, %s per step (Python between "
        "ops, zero_grad, AccumulateGrad) from %s\n",
        cpu.device.c_str(), cpu.dispatch_us, sim::format_duration(cpu.host->per_parameter).c_str(),
        sim::format_duration(cpu.host->per_step).c_str(), cpu.host->profile.c_str());
    hosts[cpu.device] = *cpu.host;
  }
}

// The host half of one profile: the step model where it has ProfilerStep#N labels, else (with
// --host-from-ops) the op-level model from its framework-op spans.
void keep_profile_host(const calibration::Profile& prof, const std::string& p,
                       const CalibrateArgs& a, std::map<std::string, sim::HostCalibration>& hosts,
                       std::map<std::string, OpLevelHost>& op_level) {
  const double overhead = profiler_overhead_s(prof, a);
  std::optional<calibration::HostCost> h =
      calibration::host_cost_from_profile(prof, a.device_model, overhead);
  if (h && overhead > 0)
    g_notes.push_back(
        p + ": " + std::to_string(std::llround(overhead * 1e9)) +
        " ns of profiler cost taken out per recorded framework op (--profiler-overhead)");
  if (!h && a.host_from_ops) h = calibration::host_cost_from_ops(prof, a.device_model);
  if (!h) return;
  if (h->op_level) {
    outf(
        "  host: no ProfilerStep annotations: op-level host model from %zu framework-op "
        "classes' spans, %.1f us per parameter (AccumulateGrad)\n",
        h->per_class_s.size(), h->per_parameter_s * 1e6);
    g_notes.push_back(
        p +
        ": host model from framework-op spans only (no ProfilerStep#N): the Python between "
        "ops, zero_grad, optimizer.step and the step's tail are not in it (per_step and "
        "optimizer_step 0); ops of a class it did not run cost its phase's median");
  } else {
    outf(
        "  host: %d steps, median %.3f ms, %.0f GPU activities launched per step: %.1f us of "
        "host time per "
        "activity (a host-bound step's launch_overhead per GPU op, docs/validation.md)\n",
        h->steps, h->step_s * 1e3, h->activities_per_step, h->per_activity_s * 1e6);
  }
  keep_host_cost(hosts, op_level, *h, p);
}

// Op-name entries (signatures without shapes) per device: how many were kept and why the others
// were not written (their calls disagree: one name, several sizes), the largest by time first.
void print_name_entries(const std::vector<calibration::NameSpread>& names) {
  std::map<std::string, std::vector<const calibration::NameSpread*>> by_device;
  for (const auto& n : names)
    if (!n.shaped) by_device[n.device].push_back(&n);
  for (auto& [dev, v] : by_device) {
    std::stable_sort(v.begin(), v.end(),
                     [](const auto* a, const auto* b) { return a->total_s > b->total_s; });
    int kept = 0, few = 0;
    for (const auto* n : v) {
      kept += n->kept;
      few += !n->kept && n->samples < calibration::kNameMinSamples;
    }
    const int wide = static_cast<int>(v.size()) - kept - few;
    outf(
        "device %s: %zu op names without input shapes: kept %d (calls agree: CV <= %.2f over >= "
        "%d calls), dropped %d with a wider spread and %d with fewer calls (their ops fall to the "
        "next rule)\n",
        dev.c_str(), v.size(), kept, calibration::kNameMaxCv, calibration::kNameMinSamples, wide,
        few);
    std::string dropped;
    int shown = 0;
    for (const auto* n : v) {
      if (n->kept || n->samples < calibration::kNameMinSamples) continue;
      if (shown++ == 6) {
        dropped += ", ...";
        break;
      }
      char buf[96];
      std::snprintf(buf, sizeof buf, " (CV %.2f, max/min %.3g, %d calls)", n->cv, n->max_over_min,
                    n->samples);
      dropped += (dropped.empty() ? "" : ", ") + n->key + buf;
    }
    if (!dropped.empty())
      g_notes.push_back(dev +
                        ": op-name entries not written, one name timing several sizes: " + dropped);
  }
}

// calibrate --json's "op_names": every exact key's spread (NameSpread).
nlohmann::ordered_json op_names_json(const std::vector<calibration::NameSpread>& names) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& n : names)
    out.push_back({{"device", n.device},
                   {"key", n.key},
                   {"calls", n.samples},
                   {"cv", n.cv},
                   {"max_over_min", n.max_over_min},
                   {"total_s", n.total_s},
                   {"shaped", n.shaped},
                   {"kept", n.kept}});
  return out;
}

// The fitted class table, and notes on the fits a peak decided or none could bound.
void print_fit_classes(const calibration::CalibrationFit& fit) {
  outf("%-16s %-12s %6s %12s %12s %12s %10s %10s\n", "device", "class", "shapes", "intercept",
       "FLOP/s", "B/s", "fit err", "CV err");
  for (const auto& r : fit.classes) {
    char cv[32];
    if (r.cv_error >= 0)
      std::snprintf(cv, sizeof cv, "%9.1f%%", 100.0 * r.cv_error);
    else
      std::snprintf(cv, sizeof cv, "%10s", "n/a (<3)");
    outf("%-16s %-12s %6d %10.2f us %12.3g %12.3g %9.1f%% %s\n", r.device.c_str(),
         r.op_class.c_str(), r.signatures, r.model.intercept_s * 1e6, r.model.flop_rate,
         r.model.byte_rate, 100.0 * r.fit_error, cv);
  }
  // A fit that a peak decided, or one no peak could bound, is worth a look before it is used.
  for (const auto& r : fit.classes) {
    if (!r.model.clamped.empty())
      g_notes.push_back(r.device + " " + r.op_class + ": " + r.model.clamped);
    else if (r.bounds.max_flop_rate <= 0)
      g_notes.push_back(r.device + " " + r.op_class +
                        ": no catalog peak for this device (nor fma_units and clock_hz in "
                        "its rig manifest), rates not bounded");
  }
}

void run_calibrate(const CalibrateArgs& a) {
  std::vector<calibration::OpSample> samples;
  std::map<std::string, sim::HostCalibration> hosts;
  std::map<std::string, OpLevelHost> op_level;
  std::map<std::string, sim::Duration> floors;  // device -> its shortest kernel (kernel_floor_s)
  std::map<std::string, calibration::QueuedGaps> gaps;  // device -> queued kernel->kernel gaps
  std::map<std::string, std::vector<sim::MemoryLevel>> memory, sweep;
  std::map<std::string, int> lanes;  // device -> SIMD width in floats (a rig manifest's)
  std::map<std::string, calibration::RateBounds> peaks;  // device -> a rig manifest's CPU peaks
  std::string sources;
  for (const std::string& p : a.profiles) {
    sources += (sources.empty() ? "" : ", ") + p;
    if (is_manifest(p)) {
      auto s = calibration::op_samples_from_manifest(p, a.device_model);
      outf("%s: rig manifest, %zu op rows\n", p.c_str(), s.size());
      samples.insert(samples.end(), s.begin(), s.end());
      if (auto cpu = calibration::cpu_side_from_manifest(p, a.device_model))
        keep_cpu_side(*cpu, memory, sweep, hosts, lanes, peaks);
      continue;
    }
    const calibration::Profile prof = read_profile_checked(p);
    refuse_unnamed_gpu(prof, p, a.device_model);
    auto s = calibration::op_samples_from_profile(prof, a.device_model);
    if (const std::size_t k = static_cast<std::size_t>(&p - a.profiles.data()); k < a.ets.size()) {
      // The execution trace's ops, with its shapes, timed by this profile (pytorch_et.hpp).
      s = calibration::op_samples_from_et(calibration::import_pytorch_et(a.ets[k], p),
                                          a.device_model);
      outf("%s: %zu op samples from the execution trace %s\n", p.c_str(), s.size(),
           a.ets[k].c_str());
    }
    outf("%s: %s, %zu events, %zu op samples%s%s\n", p.c_str(), prof.dialect.c_str(),
         prof.events.size(), s.size(), prof.device_name.empty() ? "" : ", device ",
         prof.device_name.c_str());
    for (const std::string& m : prof.missing) g_notes.push_back(p + ": " + m);
    print_links(p, prof);
    if (s.empty()) g_notes.push_back(p + ": 0 op samples (nothing to calibrate from this profile)");
    keep_profile_host(prof, p, a, hosts, op_level);
    keep_kernel_floor(floors, prof, a.device_model);
    keep_kernel_gaps(gaps, prof, a.device_model);
    samples.insert(samples.end(), s.begin(), s.end());
  }
  // One profile: name it (the error is about that file); several: the flag.
  if (samples.empty())
    throw sim::InputError(a.profiles.size() == 1 ? a.profiles[0] : "<flag --profile>", "",
                          "profiles with at least one op that has a measured time, got none (" +
                              std::to_string(a.profiles.size()) +
                              " profile(s) read: no framework op, kernel or copy with a duration)");
  calibration::FitOptions fo;
  fo.memory = memory;
  fo.sweep = sweep;
  fo.vector_lanes = lanes;
  fo.cpu_peaks = peaks;
  if (const auto m = sim::MathMode::parse(a.math_mode))
    fo.math = *m;
  else
    throw sim::InputError("<flag --math-mode>", "",
                          "torch, tf32 or f32, got \"" + a.math_mode + "\"");
  calibration::CalibrationFit fit = calibration::fit_calibration(samples, sources, fo);
  for (auto& [dev, h] : hosts) {
    outf(
        "device %s: launch_overhead %s per %s op from %s's host side (simulate --calibration "
        "applies it)\n",
        dev.c_str(), sim::format_duration(h.launch_overhead).c_str(), h.cpu ? "CPU" : "GPU",
        h.profile.c_str());
    fit.calibration.devices[dev].host = std::move(h);
  }
  if (a.host_only) {
    keep_host_only(fit.calibration, a);
    fit.classes.clear();
    fit.names.clear();
    outf("--host-only: host models written, kernel tables, floors and gaps left out\n");
  } else {
    apply_kernel_floors(floors, fit.calibration);
    apply_kernel_gaps(gaps, fit.calibration);
  }
  for (const auto& [dev, dc] : fit.calibration.devices) {
    outf("device %s: %zu exact signatures, %zu op types with a fitted model\n", dev.c_str(),
         dc.exact.size(), dc.by_op_type.size());
    // simulate looks calibrations up by device name, then by catalog model: a name as the trace
    // prints it ("NVIDIA H200") is neither, even when the catalog knows the product.
    const sim::DeviceSpec* known = sim::find_device_model(dev);
    if ((!known || known->model != dev) && a.device_model.empty())
      g_notes.push_back(
          "\"" + dev + "\" is not a catalog model name; pass --device-model " +
          (known ? known->model : std::string("MODEL")) +
          " (or a device name of your cluster) so that simulate --calibration finds it");
  }
  print_name_entries(fit.names);
  if (!a.host_only) print_fit_classes(fit);
  sim::write_file_atomic(a.output, sim::calibration_to_yaml(fit.calibration));
  outf("wrote %s\n", a.output.c_str());
  if (!a.json) return flush_out();
  g_out.clear();
  flush_notes();
  nlohmann::ordered_json j = {{"output", a.output},
                              {"samples", fit.samples},
                              {"classes", nlohmann::ordered_json::array()},
                              {"op_names", op_names_json(fit.names)}};
  for (const auto& r : fit.classes)
    j["classes"].push_back({{"device", r.device},
                            {"class", r.op_class},
                            {"shapes", r.signatures},
                            {"intercept_s", r.model.intercept_s},
                            {"flop_rate", r.model.flop_rate},
                            {"byte_rate", r.model.byte_rate},
                            {"fit_error", r.fit_error},
                            {"cv_error", r.cv_error >= 0 ? nlohmann::ordered_json(r.cv_error)
                                                         : nlohmann::ordered_json()}});
  std::cout << j.dump(1) << "\n";
}

void print_link_report(const calibration::LinkFitReport& r) {
  outf("%-10s %6s %6s %14s %14s %14s %14s\n", "link kind", "pairs", "links", "old GB/s",
       "fitted GB/s", "old lat us", "fitted lat us");
  for (const auto& c : r.classes)
    outf("%-10s %6d %6d %14.2f %14.2f %14.3f %14.3f\n", c.kind.c_str(), c.pairs, c.links,
         c.old_gb_s, c.new_gb_s, c.old_latency_us, c.new_latency_us);
  for (const auto& c : r.classes)
    outf("changed %d %s link(s): %.2f -> %.2f GB/s, %.3f -> %.3f us: %s\n", c.links, c.kind.c_str(),
         c.old_gb_s, c.new_gb_s, c.old_latency_us, c.new_latency_us, c.why.c_str());
  for (const auto& p : r.pairs)
    outf("  %s -> %s: measured %.2f GB/s, cluster path %.2f -> %.2f GB/s\n", p.from.c_str(),
         p.to.c_str(), p.measured_gb_s, p.before_gb_s, p.after_gb_s);
  for (const auto& n : r.notes) g_notes.push_back(n);
}

// The fit per measurement (and per run where a row combines several runs), with the highest
// busbw measured beside the fitted one.
void print_collective_fit(const calibration::CollectiveFit& fit) {
  outf("%-12s %5s %5s %7s %10s %12s %12s %9s %14s\n", "collective", "ranks", "nodes", "points",
       "alpha us", "algbw GB/s", "busbw GB/s", "fit err", "max busbw");
  const auto row = [](const calibration::CollectiveFitRow& r, const std::string& name) {
    outf("%-12s %5d %5d %7d %10.2f %12.2f %12.2f %8.1f%% %14.2f\n", name.c_str(), r.ranks, r.nodes,
         r.points, r.alpha_us, r.algbw_gb_s, r.busbw_gb_s, 100.0 * r.mean_rel_error,
         r.max_busbw_gb_s);
  };
  for (const auto& r : fit.run_rows)
    row(r, "  run " + std::to_string(r.run + 1) + " (line " + std::to_string(r.run_line) + ")");
  for (const auto& r : fit.rows) row(r, r.collective);
}

void run_links(const LinksArgs& a) {
  const int given = !a.p2p.empty() + !a.nccl_tests.empty() + !a.vidur_csv.empty();
  if (given != 1)
    throw sim::InputError(
        "<flags>", "",
        "exactly one of --p2p, --nccl-tests or --vidur-csv, got " + std::to_string(given));
  sim::Cluster c = sim::load_cluster(a.cluster);
  calibration::LinkFitReport rep;
  const std::string input = !a.p2p.empty()         ? a.p2p
                            : a.nccl_tests.empty() ? a.vidur_csv
                                                   : a.nccl_tests;
  if (!a.p2p.empty()) {
    const auto m = calibration::parse_p2p_output(sim::read_text_file(a.p2p), a.p2p, a.run);
    if (m.runs > 1)
      g_notes.push_back(a.p2p + ": holds " + std::to_string(m.runs) +
                        " p2pBandwidthLatencyTest runs; read run " + std::to_string(m.run) +
                        " (from line " + std::to_string(m.run_line) + "; --run N reads another)");
    rep = calibration::fit_links_from_p2p(m, c);
  } else {
    const std::string text = sim::read_text_file(input);
    if (!a.nccl_tests.empty() && a.collective.empty()) {
      // Which collective ran, and how the file says so (or that nothing does).
      const calibration::CollectiveGuess g = calibration::guess_collective(text, input);
      g_notes.push_back(input + ": read as " + g.collective + " (" + g.why + ")");
    }
    auto pts = a.nccl_tests.empty()
                   ? calibration::parse_vidur_collective_csv(text, input)
                   : calibration::parse_nccl_tests(text, input, a.collective, a.run);
    for (auto& p : pts) {
      if (a.ranks > 0) p.ranks = a.ranks;
      if (a.nodes > 0) p.nodes = a.nodes;
    }
    const calibration::CollectiveFit fit = calibration::fit_collective(pts);
    if (!fit.refusal.empty())
      throw sim::InputError(input, "line " + std::to_string(fit.refusal_line), fit.refusal);
    print_collective_fit(fit);
    rep = calibration::apply_collective_fit(fit, c);
  }
  print_link_report(rep);
  if (rep.classes.empty()) {
    // Writing the cluster back unchanged would look like a calibration: say why nothing fitted.
    std::string why;
    for (const auto& n : rep.notes) why += (why.empty() ? "" : "; ") + n;
    throw sim::InputError(input, "",
                          "a measurement that crosses links of " + a.cluster +
                              ", got nothing to fit (" + (why.empty() ? "no usable rows" : why) +
                              "); " + a.output + " not written");
  }
  sim::write_file_atomic(a.output, sim::cluster_to_yaml(c));
  outf("wrote %s\n", a.output.c_str());
  if (!a.json) return flush_out();
  g_out.clear();
  flush_notes();
  nlohmann::ordered_json j = {{"output", a.output},
                              {"classes", nlohmann::ordered_json::array()},
                              {"pairs", nlohmann::ordered_json::array()}};
  for (const auto& k : rep.classes)
    j["classes"].push_back({{"kind", k.kind},
                            {"pairs", k.pairs},
                            {"old_gb_s", k.old_gb_s},
                            {"fitted_gb_s", k.new_gb_s},
                            {"old_latency_us", k.old_latency_us},
                            {"fitted_latency_us", k.new_latency_us}});
  for (const auto& p : rep.pairs)
    j["pairs"].push_back({{"from", p.from},
                          {"to", p.to},
                          {"measured_gb_s", p.measured_gb_s},
                          {"before_gb_s", p.before_gb_s},
                          {"after_gb_s", p.after_gb_s}});
  std::cout << j.dump(1) << "\n";
}

// Kineto's category for each kind the reader knows, so the measured half reads like the original.
const char* kineto_category(calibration::EventKind k) {
  using calibration::EventKind;
  switch (k) {
    case EventKind::CpuOp:
      return "cpu_op";
    case EventKind::Runtime:
      return "cuda_runtime";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "gpu_memcpy";
    case EventKind::Memset:
      return "gpu_memset";
    case EventKind::Sync:
      return "cuda_sync";
    case EventKind::Annotation:
      return "user_annotation";
    case EventKind::GpuAnnotation:
      return "gpu_user_annotation";
    case EventKind::Other:
      break;
  }
  return "other";
}

/// `validate --trace OUT`: the first step as measured (processes "measured: ...", the events of
/// the step's window, shifted to start at 0) and as predicted (processes "predicted: ...", the
/// simulated replay with sim::TraceSink's layout) in one Chrome trace.
void write_validation_trace(const std::vector<calibration::Profile>& ranks,
                            const calibration::ValidateOptions& o, const std::string& path) {
  using nlohmann::json;
  const calibration::ReplayGraph rg = calibration::build_replay(ranks, 0, o);
  sim::TraceSink sink(rg.cluster);
  sink.describe(rg.graph);
  sink.set_process_prefix("predicted: ", 0);
  sim::Placement pl;
  pl.device_of = rg.device_of;
  sim::SimOptions so;
  so.trace = &sink;
  sim::simulate(rg.cluster, rg.graph, pl, so, sim::KernelCostModel{});
  json doc = json::parse(sink.to_json());
  json& evs = doc["traceEvents"];
  std::map<std::string, int> pids;  // "rank/pid" -> pid in the merged trace
  const int base = static_cast<int>(rg.cluster.devices.size()) + 1000;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto steps = calibration::profile_steps(ranks[r]);
    if (steps.empty()) continue;
    const calibration::StepWindow w = steps.front();
    for (const calibration::TraceEvent& e : ranks[r].events) {
      if (e.kind == calibration::EventKind::Other || e.end_ns() < w.begin_ns || e.ts_ns > w.end_ns)
        continue;
      // GPU activities, syncs and GPU annotations by device; host events by process.
      const bool dev = e.device >= 0;
      const std::string key =
          std::to_string(r) + "/" + (dev ? "gpu" + std::to_string(e.device) : e.pid);
      auto [it, added] = pids.try_emplace(key, base + static_cast<int>(pids.size()));
      if (added) {
        const std::string name = "measured: rank " + std::to_string(r) + " " +
                                 (dev ? "GPU " + std::to_string(e.device) : "host " + e.pid);
        evs.push_back({{"ph", "M"},
                       {"name", "process_name"},
                       {"pid", it->second},
                       {"tid", 0},
                       {"args", {{"name", name}}}});
        evs.push_back({{"ph", "M"},
                       {"name", "process_sort_index"},
                       {"pid", it->second},
                       {"tid", 0},
                       {"args", {{"sort_index", it->second}}}});
      }
      json args = json::object();
      for (const auto& [k, v] : e.args) args[k] = v;
      if (e.correlation >= 0) args["correlation"] = e.correlation;
      if (e.external_id >= 0) args["External id"] = e.external_id;
      if (dev) {
        args["device"] = e.device;
        args["stream"] = e.stream;
        if (e.bytes > 0) args["bytes"] = e.bytes;
      }
      std::int64_t tid = 0;
      try {
        tid = dev ? e.stream : std::stoll(e.tid);
      } catch (const std::exception&) {
        tid = static_cast<std::int64_t>(std::hash<std::string>{}(e.tid) % 100000);
      }
      evs.push_back({{"ph", "X"},
                     {"cat", kineto_category(e.kind)},
                     {"name", e.name},
                     {"pid", it->second},
                     {"tid", tid},
                     {"ts", static_cast<double>(e.ts_ns - w.begin_ns) / 1000.0},
                     {"dur", static_cast<double>(e.dur_ns) / 1000.0},
                     {"args", std::move(args)}});
    }
  }
  doc["traceName"] = "placesim validate: measured and predicted";
  sim::write_file_atomic(path, doc.dump());
}

void run_validate(const ValidateArgs& a) {
  std::vector<calibration::Profile> ranks;
  for (const std::string& p : a.profiles) {
    ranks.push_back(read_profile_checked(p));
    if (ranks.back().events.empty())
      throw sim::InputError(p, "traceEvents",
                            "at least one timed event (ph X) to replay, got none");
  }
  calibration::ValidateOptions o;
  o.device_model = a.device_model;
  o.max_steps = a.max_steps;
  if (!a.calibration.empty())
    o.calibration = std::make_shared<const sim::Calibration>(sim::load_calibration(a.calibration));
  const calibration::ValidationReport r = calibration::validate_profiles(ranks, o);
  if (!a.trace.empty()) write_validation_trace(ranks, o, a.trace);
  // Notes go to stderr with the text report; the JSON report keeps them as a field.
  calibration::ValidationReport shown = r;
  if (!a.json) shown.notes.clear();
  const std::string text =
      a.json ? calibration::validation_to_json(shown) : calibration::validation_to_text(shown);
  if (!a.output.empty()) {
    sim::write_file_atomic(a.output, text);
    if (!quiet()) std::fprintf(stderr, "wrote %s\n", a.output.c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  if (!a.json)
    for (const std::string& n : r.notes) note(n);
  for (const std::string& w : r.warnings) note(w);
}

}  // namespace

void register_calibrate(CLI::App& app) {
  {
    auto a = std::make_shared<CalibrateArgs>();
    CLI::App* cmd = app.add_subcommand(
        "calibrate", "Fit kernel-time models (exact table + per-op-class fit) from profiles");
    cmd->add_option("--profile", a->profiles,
                    "Kineto/PyTorch trace (.json/.json.gz), Nsight Systems SQLite export, or "
                    "profile_rig.py manifest; repeatable")
        ->required()
        ->check(input_file());
    cmd->add_option("--et", a->ets,
                    "PyTorch execution trace of the n-th --profile's step: its ops' shapes "
                    "(torch 1.13's profiler records none); repeatable")
        ->check(input_file());
    cmd->add_option("--device-model", a->device_model,
                    "calibration key of the profiled device (default: from the trace)");
    cmd->add_option(
        "--math-mode", a->math_mode,
        "framework math that bounds F32 conv/matmul rates: torch (default: TF32 convs), tf32, f32");
    cmd->add_option("-o,--output", a->output, "calibration YAML to write")->required();
    cmd->add_flag("--host-from-ops", a->host_from_ops,
                  "a trace without ProfilerStep#N annotations (an op microbenchmark) gives a "
                  "host model from its framework ops' spans (no per-step Python or optimizer)");
    cmd->add_option("--profiler-overhead", a->profiler_overhead,
                    "the profiler's host cost per recorded framework op to take out of the host "
                    "model: none (default: as recorded), auto (5.2 us with shapes, 2.3 us "
                    "without; measured on an H200 rig, torch 2.11) or a duration");
    cmd->add_flag("--host-only", a->host_only,
                  "write each device's host model alone (no exact signatures, class fits or "
                  "kernel floor): a host-bound step's host cost for graphs the rules price");
    cmd->add_flag("--json", a->json, "print the fitted classes as JSON instead of a table");
    cmd->callback([a] { run_calibrate(*a); });
  }
  {
    auto a = std::make_shared<LinksArgs>();
    CLI::App* cmd = app.add_subcommand(
        "calibrate-links", "Fit link bandwidth/latency from p2p or collective benchmarks");
    cmd->add_option("--p2p", a->p2p, "p2pBandwidthLatencyTest output")->check(input_file());
    cmd->add_option("--nccl-tests", a->nccl_tests, "nccl-tests output (e.g. all_reduce_perf)")
        ->check(input_file());
    cmd->add_option("--vidur-csv", a->vidur_csv,
                    "Vidur collective profiling CSV (time in ms, size in bytes)")
        ->check(input_file());
    cmd->add_option(
        "--collective", a->collective,
        "collective the nccl-tests binary ran (default: the one the file shows it ran: its "
        "\"Collective test starting\" line, command line or rows; else all_reduce, said)");
    cmd->add_option("--ranks", a->ranks, "GPUs the collective ran on, for tables that do not say")
        ->check(positive_number());
    cmd->add_option("--nodes", a->nodes,
                    "machines the collective ran on, for tables that do not say")
        ->check(positive_number());
    cmd->add_option("--run", a->run,
                    "of an nccl-tests or p2pBandwidthLatencyTest file holding several runs, fit "
                    "only the N-th (from 1)")
        ->check(positive_number());
    cmd->add_option("--cluster", a->cluster, "cluster to calibrate (built-in name or YAML)")
        ->required()
        ->check(not_a_directory());
    cmd->add_option("-o,--output", a->output, "calibrated cluster YAML to write")->required();
    cmd->add_flag("--json", a->json, "print the fit as JSON instead of a table");
    cmd->callback([a] { run_links(*a); });
  }
  {
    auto a = std::make_shared<ValidateArgs>();
    CLI::App* cmd = app.add_subcommand(
        "validate", "Replay profiled steps through the simulator: predicted vs measured");
    cmd->add_option("--profile", a->profiles,
                    "trace of one rank; repeat for several ranks of one job")
        ->required()
        ->check(input_file());
    cmd->add_option("--calibration", a->calibration,
                    "use calibrated kernel times instead of the measured ones")
        ->check(input_file());
    cmd->add_option("--device-model", a->device_model,
                    "calibration key of the GPUs (default: from the trace)");
    cmd->add_option("--max-steps", a->max_steps, "validate at most this many steps (0 = all)")
        ->check(non_negative_number());
    cmd->add_flag("--json", a->json, "JSON report instead of text");
    cmd->add_option("-o,--output", a->output, "write the report to this file instead of stdout");
    cmd->add_option(
        "--trace", a->trace,
        "write the first step measured and predicted side by side as one Chrome/Perfetto trace");
    cmd->callback([a] { run_validate(*a); });
  }
}

}  // namespace placesim::tools

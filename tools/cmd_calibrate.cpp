// `placesim calibrate`, `placesim calibrate-links` and `placesim validate`: fit kernel and link
// models from real profiles and benchmark outputs, and replay profiled steps through the engine.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calibration/kernel_fit.hpp"
#include "calibration/link_fit.hpp"
#include "calibration/trace.hpp"
#include "calibration/validate.hpp"
#include "sim/catalog.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {

struct CalibrateArgs {
  std::vector<std::string> profiles;
  std::string output, device_model, math_mode = "torch";
};

struct LinksArgs {
  std::string p2p, nccl_tests, vidur_csv, cluster, output, collective = "all_reduce";
};

struct ValidateArgs {
  std::vector<std::string> profiles;
  std::string calibration, device_model, output;
  bool json = false;
  int max_steps = 0;
};

bool is_manifest(const std::string& path) {
  // profile_rig.py manifests are JSON objects with "format": "placesim-rig-manifest".
  if (path.size() < 5 || path.substr(path.size() - 5) != ".json") return false;
  const std::string text = sim::read_text_file(path);
  return text.find("\"placesim-rig-manifest\"") != std::string::npos;
}

void run_calibrate(const CalibrateArgs& a) {
  std::vector<calibration::OpSample> samples;
  std::string sources;
  for (const std::string& p : a.profiles) {
    sources += (sources.empty() ? "" : ", ") + p;
    if (is_manifest(p)) {
      auto s = calibration::op_samples_from_manifest(p, a.device_model);
      std::printf("%s: rig manifest, %zu op rows\n", p.c_str(), s.size());
      samples.insert(samples.end(), s.begin(), s.end());
      continue;
    }
    const calibration::Profile prof = calibration::read_profile(p);
    auto s = calibration::op_samples_from_profile(prof, a.device_model);
    std::printf("%s: %s, %zu events, %zu op samples%s%s\n", p.c_str(), prof.dialect.c_str(), prof.events.size(), s.size(),
                prof.device_name.empty() ? "" : ", device ", prof.device_name.c_str());
    for (const std::string& m : prof.missing) std::printf("  note: %s\n", m.c_str());
    if (const auto h = calibration::host_cost_from_profile(prof))
      std::printf("  host: %d steps, median %.3f ms, %.0f GPU activities launched per step: %.1f us of host time per "
                  "activity (a host-bound step's launch_overhead per GPU op, docs/validation.md)\n",
                  h->steps, h->step_s * 1e3, h->activities_per_step, h->per_activity_s * 1e6);
    samples.insert(samples.end(), s.begin(), s.end());
  }
  if (samples.empty())
    throw sim::InputError("<flag --profile>", "", "profiles with at least one op that has a measured time, got none");
  calibration::FitOptions fo;
  if (const auto m = sim::MathMode::parse(a.math_mode)) fo.math = *m;
  else throw sim::InputError("<flag --math-mode>", "", "torch, tf32 or f32, got \"" + a.math_mode + "\"");
  const calibration::CalibrationFit fit = calibration::fit_calibration(samples, sources, fo);
  for (const auto& [dev, dc] : fit.calibration.devices) {
    std::printf("device %s: %zu exact signatures, %zu op types with a fitted model\n", dev.c_str(), dc.exact.size(),
                dc.by_op_type.size());
    // simulate looks calibrations up by device name, then by catalog model.
    if (!sim::find_device_model(dev) && a.device_model.empty())
      std::printf("  note: \"%s\" is not a catalog model; pass --device-model MODEL (or a device name of your cluster) "
                  "so that simulate --calibration finds it\n",
                  dev.c_str());
  }
  std::printf("%-16s %-12s %6s %12s %12s %12s %10s %10s\n", "device", "class", "shapes", "intercept", "FLOP/s", "B/s",
              "fit err", "CV err");
  for (const auto& r : fit.classes) {
    char cv[32];
    if (r.cv_error >= 0) std::snprintf(cv, sizeof cv, "%9.1f%%", 100.0 * r.cv_error);
    else std::snprintf(cv, sizeof cv, "%10s", "n/a (<3)");
    std::printf("%-16s %-12s %6d %10.2f us %12.3g %12.3g %9.1f%% %s\n", r.device.c_str(), r.op_class.c_str(), r.signatures,
                r.model.intercept_s * 1e6, r.model.flop_rate, r.model.byte_rate, 100.0 * r.fit_error, cv);
  }
  // A fit that a peak decided, or one no peak could bound, is worth a look before it is used.
  for (const auto& r : fit.classes) {
    if (!r.model.clamped.empty())
      std::fprintf(stderr, "calibrate: %s %s: %s\n", r.device.c_str(), r.op_class.c_str(), r.model.clamped.c_str());
    else if (r.bounds.max_flop_rate <= 0)
      std::fprintf(stderr, "calibrate: %s %s: no catalog peak for this device, rates not bounded\n", r.device.c_str(),
                   r.op_class.c_str());
  }
  sim::write_file_atomic(a.output, sim::calibration_to_yaml(fit.calibration));
  std::printf("wrote %s\n", a.output.c_str());
}

void print_link_report(const calibration::LinkFitReport& r) {
  std::printf("%-10s %6s %14s %14s %14s %14s\n", "link kind", "pairs", "old GB/s", "fitted GB/s", "old lat us", "fitted lat us");
  for (const auto& c : r.classes)
    std::printf("%-10s %6d %14.2f %14.2f %14.3f %14.3f\n", c.kind.c_str(), c.pairs, c.old_gb_s, c.new_gb_s, c.old_latency_us,
                c.new_latency_us);
  for (const auto& p : r.pairs)
    std::printf("  %s -> %s: measured %.2f GB/s, cluster route %.2f -> %.2f GB/s\n", p.from.c_str(), p.to.c_str(),
                p.measured_gb_s, p.before_gb_s, p.after_gb_s);
  for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
}

void run_links(const LinksArgs& a) {
  const int given = !a.p2p.empty() + !a.nccl_tests.empty() + !a.vidur_csv.empty();
  if (given != 1)
    throw sim::InputError("<flags>", "", "exactly one of --p2p, --nccl-tests or --vidur-csv, got " + std::to_string(given));
  sim::Cluster c = sim::load_cluster(a.cluster);
  calibration::LinkFitReport rep;
  if (!a.p2p.empty()) {
    const auto m = calibration::parse_p2p_output(sim::read_text_file(a.p2p), a.p2p);
    rep = calibration::fit_links_from_p2p(m, c);
  } else {
    const std::string path = a.nccl_tests.empty() ? a.vidur_csv : a.nccl_tests;
    const auto pts = a.nccl_tests.empty()
                         ? calibration::parse_vidur_collective_csv(sim::read_text_file(path), path)
                         : calibration::parse_nccl_tests(sim::read_text_file(path), path, a.collective);
    const calibration::CollectiveFit fit = calibration::fit_collective(pts);
    std::printf("%-12s %5s %5s %7s %10s %12s %12s %9s\n", "collective", "ranks", "nodes", "points", "alpha us", "algbw GB/s",
                "busbw GB/s", "fit err");
    for (const auto& r : fit.rows)
      std::printf("%-12s %5d %5d %7d %10.2f %12.2f %12.2f %8.1f%%\n", r.collective.c_str(), r.ranks, r.nodes, r.points,
                  r.alpha_us, r.algbw_gb_s, r.busbw_gb_s, 100.0 * r.mean_rel_error);
    rep = calibration::apply_collective_fit(fit, c);
  }
  print_link_report(rep);
  sim::write_file_atomic(a.output, sim::cluster_to_yaml(c));
  std::printf("wrote %s\n", a.output.c_str());
}

void run_validate(const ValidateArgs& a) {
  std::vector<calibration::Profile> ranks;
  for (const std::string& p : a.profiles) ranks.push_back(calibration::read_profile(p));
  calibration::ValidateOptions o;
  o.device_model = a.device_model;
  o.max_steps = a.max_steps;
  if (!a.calibration.empty()) o.calibration = std::make_shared<const sim::Calibration>(sim::load_calibration(a.calibration));
  const calibration::ValidationReport r = calibration::validate_profiles(ranks, o);
  const std::string text = a.json ? calibration::validation_to_json(r) : calibration::validation_to_text(r);
  if (!a.output.empty()) {
    sim::write_file_atomic(a.output, text);
    std::printf("wrote %s\n", a.output.c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
}

}  // namespace

void register_calibrate(CLI::App& app) {
  {
    auto a = std::make_shared<CalibrateArgs>();
    CLI::App* cmd = app.add_subcommand("calibrate", "Fit kernel-time models (exact table + per-op-class fit) from profiles");
    cmd->add_option("--profile", a->profiles,
                    "Kineto/PyTorch trace (.json/.json.gz), Nsight Systems SQLite export, or profile_rig.py manifest; repeatable")
        ->required();
    cmd->add_option("--device-model", a->device_model, "calibration key of the profiled device (default: from the trace)");
    cmd->add_option("--math-mode", a->math_mode,
                    "framework math that bounds F32 conv/matmul rates: torch (default: TF32 convs), tf32, f32");
    cmd->add_option("-o,--output", a->output, "calibration YAML to write")->required();
    cmd->callback([a] { run_calibrate(*a); });
  }
  {
    auto a = std::make_shared<LinksArgs>();
    CLI::App* cmd = app.add_subcommand("calibrate-links", "Fit link bandwidth/latency from p2p or collective benchmarks");
    cmd->add_option("--p2p", a->p2p, "p2pBandwidthLatencyTest output");
    cmd->add_option("--nccl-tests", a->nccl_tests, "nccl-tests output (e.g. all_reduce_perf)");
    cmd->add_option("--vidur-csv", a->vidur_csv, "Vidur collective profiling CSV (time in ms, size in bytes)");
    cmd->add_option("--collective", a->collective, "collective the nccl-tests binary ran (default all_reduce)");
    cmd->add_option("--cluster", a->cluster, "cluster to calibrate (built-in name or YAML)")->required();
    cmd->add_option("-o,--output", a->output, "calibrated cluster YAML to write")->required();
    cmd->callback([a] { run_links(*a); });
  }
  {
    auto a = std::make_shared<ValidateArgs>();
    CLI::App* cmd = app.add_subcommand("validate", "Replay profiled steps through the simulator: predicted vs measured");
    cmd->add_option("--profile", a->profiles, "trace of one rank; repeat for several ranks of one job")->required();
    cmd->add_option("--calibration", a->calibration, "use calibrated kernel times instead of the measured ones");
    cmd->add_option("--device-model", a->device_model, "calibration key of the GPUs (default: from the trace)");
    cmd->add_option("--max-steps", a->max_steps, "validate at most this many steps (0 = all)");
    cmd->add_flag("--json", a->json, "JSON report instead of text");
    cmd->add_option("-o,--output", a->output, "write the report to this file instead of stdout");
    cmd->callback([a] { run_validate(*a); });
  }
}

}  // namespace placesim::tools

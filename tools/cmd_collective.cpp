// `placesim collective`: one collective over GPUs of a cluster at a range of sizes, printed as
// nccl-tests prints it (docs/collectives.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "calibration/link_fit.hpp"
#include "models/nccl_p2p.hpp"
#include "sim/cluster.hpp"
#include "sim/collective.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {

struct CollectiveArgs {
  std::string cluster, op = "all-reduce", devices, min_bytes = "8", max_bytes = "128MiB";
  std::string dtype = "f32", algo = "auto", proto = "auto", nccl_version, compare, p2p = "on";
  double step_factor = 2;
  int root = 0;
  int gpus_per_thread = 1;
  int run = 0;            // --run: one run of the --compare file (from 1); 0 = every run
  bool op_given = false;  // --op on the command line (else, with --compare, the file's own)
  bool json = false;
};

// nccl-tests' spelling of a dtype.
const char* nccl_type(sim::Dtype d) {
  switch (d) {
    case sim::Dtype::F64:
      return "double";
    case sim::Dtype::F16:
      return "half";
    case sim::Dtype::BF16:
      return "bfloat16";
    case sim::Dtype::I64:
      return "int64";
    case sim::Dtype::I32:
      return "int32";
    case sim::Dtype::I8:
      return "int8";
    case sim::Dtype::U8:
      return "uint8";
    case sim::Dtype::FP8:
      return "fp8";
    default:
      return "float";
  }
}

// "8", "128M", "16GiB", "1 GB": a bare number is bytes; K/M/G alone are powers of 1024 as in
// nccl-tests' -b/-e.
sim::Bytes parse_size(const std::string& text, const std::string& flag) {
  std::string t;
  for (char c : text)
    if (c != ' ') t.push_back(c);
  try {
    std::size_t pos = 0;
    const double v = std::stod(t, &pos);
    const std::string unit = t.substr(pos);
    double scale = 0;
    if (unit.empty() || unit == "B")
      scale = 1;
    else if (unit == "K" || unit == "k")
      scale = 1024.0;
    else if (unit == "M")
      scale = 1024.0 * 1024;
    else if (unit == "G")
      scale = 1024.0 * 1024 * 1024;
    if (scale > 0 && v >= 0 && v * scale < 9e18)
      return sim::Bytes{static_cast<std::int64_t>(v * scale)};
    return sim::parse_bytes(t);
  } catch (const sim::InputError&) {
  } catch (const std::exception&) {
  }
  throw sim::InputError("<flag " + flag + ">", "",
                        "a size such as 8, 128M or 16GiB, got \"" + text + "\"");
}

std::vector<sim::DeviceId> parse_devices(const sim::Cluster& c, const std::string& list) {
  if (list.empty()) return c.gpus();
  std::vector<sim::DeviceId> out;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    const sim::DeviceId d = c.device_index(name);
    if (d < 0)
      throw sim::InputError("<flag --devices>", "",
                            "device names of cluster " + c.name + ", got \"" + name + "\"");
    out.push_back(d);
  }
  return out;
}

// The call the flags describe (kind, algorithm, protocol, NCCL version); bytes and root are set
// per row.
sim::CollectiveCall call_from_flags(const CollectiveArgs& a) {
  sim::CollectiveCall call;
  const auto kind = sim::parse_collective_kind(a.op);
  if (!kind)
    throw sim::InputError("<flag --op>", "",
                          "all-reduce, all-gather, reduce-scatter, broadcast, reduce, "
                          "all-to-all or send-recv, got \"" +
                              a.op + "\"");
  call.kind = *kind;
  const auto algo = sim::parse_coll_algo(a.algo);
  if (!algo)
    throw sim::InputError("<flag --algo>", "",
                          "auto, ring, tree, nvls, direct or pat, got \"" + a.algo + "\"");
  call.algo = *algo;
  const auto proto = sim::parse_coll_proto(a.proto);
  if (!proto)
    throw sim::InputError("<flag --proto>", "",
                          "auto, LL, LL128 or Simple, got \"" + a.proto + "\"");
  call.proto = *proto;
  if (!a.nccl_version.empty()) {
    const auto v = sim::parse_nccl_version(a.nccl_version);
    if (!v)
      throw sim::InputError("<flag --nccl-version>", "",
                            sim::nccl_version_expected(a.nccl_version));
    call.nccl_version = *v;
  }
  return call;
}

// A real nccl-tests output beside the prediction (--compare): its rows of the op, over as many
// GPUs as the prediction's, with the NCCL version the output states unless --nccl-version names
// one; one list per run of the file (docs/collectives.md, "Against a real output").
struct Measured {
  std::vector<std::vector<calibration::CollectivePoint>> runs;
  std::vector<int> run_lines;  // where each run starts in the file
  std::string origin, collective_note, ranks_note;
  std::string wrong_note;  // the compared rows whose results nccl-tests found wrong
};

// The op of a --compare file: the one its content shows (calibration::guess_collective) when --op
// is not given; with --op, a file that shows another is refused.
void op_from_file(CollectiveArgs& a, const std::string& text, std::string& note) {
  const calibration::CollectiveGuess g = calibration::guess_collective(text, a.compare);
  const auto file_kind = sim::parse_collective_kind(g.collective);
  if (!a.op_given) {
    if (!file_kind)
      throw sim::InputError(a.compare, "",
                            "an output of a collective `collective` predicts (all_reduce, "
                            "all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv), "
                            "got " +
                                g.collective + " (" + g.why + ")");
    a.op = sim::to_string(*file_kind);
    note = g.collective + " (" + g.why + ")";
    return;
  }
  const auto op_kind = sim::parse_collective_kind(a.op);
  if (!g.assumed && op_kind && file_kind != op_kind)
    throw sim::InputError(a.compare, "",
                          "an output of " + a.op + " (--op), got one of " + g.collective + " (" +
                              g.why + "); leave --op out to compare it as what it is");
}

Measured read_measured(const CollectiveArgs& a, const std::string& text, sim::CollectiveCall& call,
                       int n) {
  Measured m;
  if (a.compare.empty()) return m;
  m.origin = a.compare;
  std::string coll = sim::to_string(call.kind);  // "all-reduce": nccl-tests' binary all_reduce
  std::replace(coll.begin(), coll.end(), '-', '_');
  if (call.kind == sim::CollectiveKind::AllToAll) coll = "alltoall";
  if (call.kind == sim::CollectiveKind::SendRecv) coll = "sendrecv";
  std::string found;  // rank counts of the file's tables
  std::map<int, std::size_t> run_index;
  for (const calibration::CollectivePoint& p :
       calibration::parse_nccl_tests(text, a.compare, coll, a.run)) {
    // A table that does not say its ranks (no Rank lines, no nThread/nGpus, busbw / algbw
    // silent): taken as the run over the GPUs predicted, and said so.
    if (p.ranks == 0 && m.ranks_note.empty())
      m.ranks_note = "the file does not say its rank count: taken as the " + std::to_string(n) +
                     " GPUs predicted";
    if (p.ranks == n || p.ranks == 0) {
      const auto [it, added] = run_index.emplace(p.run, m.runs.size());
      if (added) {
        m.runs.emplace_back();
        m.run_lines.push_back(p.run_line);
      }
      m.runs[it->second].push_back(p);
      if (p.wrong > 0)
        m.wrong_note += std::string(m.wrong_note.empty() ? "" : ", ") +
                        std::to_string(static_cast<long long>(p.bytes)) + " B (" +
                        std::to_string(p.wrong) + ")";
    } else if (found.find(" " + std::to_string(p.ranks) + " ") == std::string::npos) {
      found += " " + std::to_string(p.ranks) + " ";
    }
  }
  if (m.runs.empty())
    throw sim::InputError(a.compare, "",
                          "a run over the " + std::to_string(n) +
                              " GPUs predicted (--devices), got runs of" + found + "ranks");
  if (a.nccl_version.empty() && m.runs.front().front().nccl_version > 0)
    call.nccl_version = m.runs.front().front().nccl_version;
  return m;
}

// The largest |model / measured - 1| of busbw per size band (docs/validation.md's bands).
void print_band_errors(const std::vector<std::pair<double, double>>& size_err) {
  double band[3] = {0, 0, 0};
  int rows[3] = {0, 0, 0};
  for (const auto& [bytes, err] : size_err) {
    if (bytes < 8192) continue;
    const int b = bytes <= (1 << 20) ? 0 : bytes < 64.0 * (1 << 20) ? 1 : 2;
    band[b] = std::max(band[b], std::fabs(err));
    ++rows[b];
  }
  std::printf(
      "# largest |busbw error|: 8 KiB-1 MiB %.1f %% (%d rows), 1-64 MiB %.1f %% (%d), "
      ">= 64 MiB %.1f %% (%d)\n",
      100 * band[0], rows[0], 100 * band[1], rows[1], 100 * band[2], rows[2]);
}

// What the rows of one table share: the call, its ranks and the columns' conventions.
struct RowSpec {
  const sim::Cluster& cluster;
  sim::CollectiveCall& call;
  const std::vector<sim::DeviceId>& ranks;
  sim::Dtype dtype;
  int gpus_per_thread = 1, root = 0;
};

// nccl-tests rounds every size down to whole elements (per rank for the gathers and all-to-all).
bool per_rank_count(sim::CollectiveKind k) {
  return k == sim::CollectiveKind::AllGather || k == sim::CollectiveKind::ReduceScatter ||
         k == sim::CollectiveKind::AllToAll;
}

// One predicted row at `bytes`, printed (or appended to `rows`) beside the measured busbw `meas`
// (0: none); returns the busbw error (0 without a measurement).
double predict_row(const RowSpec& r, std::int64_t bytes, double meas, int run, bool json,
                   nlohmann::json& rows) {
  const int n = static_cast<int>(r.ranks.size());
  r.call.bytes = sim::Bytes{bytes};
  const sim::CollectivePrediction p =
      sim::predict_collective(r.cluster, r.call, r.ranks, r.gpus_per_thread);
  const double t = p.time.seconds();
  const double algbw = t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0.0;
  const double busbw = algbw * sim::bus_factor(r.call.kind, n);
  // nccl-tests' count: elements per rank for the gathers, reduce-scatter and all-to-all.
  const std::int64_t count =
      bytes / sim::dtype_size(r.dtype) / (per_rank_count(r.call.kind) ? n : 1);
  const double err = meas > 0 ? busbw / meas - 1 : 0.0;
  if (json) {
    rows.push_back({{"bytes", bytes},
                    {"count", count},
                    {"type", nccl_type(r.dtype)},
                    {"time_s", t},
                    {"algbw_gbps", algbw},
                    {"busbw_gbps", busbw},
                    {"algo", sim::to_string(p.algo)},
                    {"proto", sim::to_string(p.proto)}});
    if (meas > 0) {
      rows.back()["measured_busbw_gbps"] = meas;
      rows.back()["busbw_error"] = err;
    }
    if (run > 0) rows.back()["run"] = run;
    return err;
  }
  // nccl-tests prints the reduction op for the reducing binaries and for sendrecv_perf (which
  // loops over the ops it does not use), "none" for the others.
  const bool prints_op = r.call.kind == sim::CollectiveKind::AllReduce ||
                         r.call.kind == sim::CollectiveKind::Reduce ||
                         r.call.kind == sim::CollectiveKind::ReduceScatter ||
                         r.call.kind == sim::CollectiveKind::SendRecv;
  const bool rooted =
      r.call.kind == sim::CollectiveKind::Broadcast || r.call.kind == sim::CollectiveKind::Reduce;
  std::printf(" %12lld  %12lld  %8s  %6s  %6d  %9.2f  %8.2f  %8.2f  %s/%s",
              static_cast<long long>(bytes), static_cast<long long>(count), nccl_type(r.dtype),
              prints_op ? "sum" : "none", rooted ? r.root : -1, t * 1e6, algbw, busbw,
              sim::to_string(p.algo).c_str(), sim::to_string(p.proto).c_str());
  if (meas > 0) std::printf("  %8.2f  %+5.1f %%", meas, 100 * err);
  std::printf("\n");
  return err;
}

void run_collective(const CollectiveArgs& given) {
  CollectiveArgs a = given;
  Measured measured;
  std::string text;
  if (!a.compare.empty()) {
    text = sim::read_text_file(a.compare);
    op_from_file(a, text, measured.collective_note);
  }
  sim::Cluster cluster = sim::load_cluster(a.cluster);
  if (!models::parse_p2p(a.p2p, "<flag --p2p>", "")) models::disable_peer_access(cluster);
  sim::CollectiveCall call = call_from_flags(a);
  const auto dtype = sim::parse_dtype(a.dtype);
  if (!dtype)
    throw sim::InputError("<flag --dtype>", "",
                          "a dtype such as f32, f16, bf16, got \"" + a.dtype + "\"");
  const std::vector<sim::DeviceId> ranks = parse_devices(cluster, a.devices);
  const int n = static_cast<int>(ranks.size());
  if (a.root < 0 || a.root >= std::max(1, n))
    throw sim::InputError(
        "<flag --root>", "",
        "a rank index below " + std::to_string(n) + ", got " + std::to_string(a.root));
  call.root = a.root;
  const std::string note = measured.collective_note;
  measured = read_measured(a, text, call, n);
  measured.collective_note = note;
  const sim::Bytes lo = parse_size(a.min_bytes, "--min-bytes");
  const sim::Bytes hi = parse_size(a.max_bytes, "--max-bytes");
  if (hi.v < lo.v)
    throw sim::InputError("<flag --max-bytes>", "",
                          "a size not below --min-bytes, got " + a.max_bytes);
  if (!(a.step_factor > 1.0))
    throw sim::InputError("<flag --step-factor>", "",
                          "a factor above 1, got " + std::to_string(a.step_factor));
  const std::int64_t align = sim::dtype_size(*dtype) * (per_rank_count(call.kind) ? n : 1);
  const RowSpec spec{cluster, call, ranks, *dtype, a.gpus_per_thread, a.root};
  const bool compare = !measured.runs.empty();

  nlohmann::json rows = nlohmann::json::array();
  if (!a.json) {
    std::printf("# placesim collective: %s on %s, %d GPUs (simulated)\n",
                sim::to_string(call.kind).c_str(), cluster.name.c_str(), n);
    if (compare) {
      std::printf("# beside %s (sizes from it; measured: its out-of-place busbw)\n",
                  measured.origin.c_str());
      if (!measured.collective_note.empty())
        std::printf("# its collective: %s\n", measured.collective_note.c_str());
      if (!measured.ranks_note.empty()) std::printf("# %s\n", measured.ranks_note.c_str());
      if (!measured.wrong_note.empty())
        std::printf("# its rows with wrong elements (#wrong), compared as measured: %s\n",
                    measured.wrong_note.c_str());
    }
    std::printf("#\n#%12s  %12s  %8s  %6s  %6s  %9s  %8s  %8s  %s%s\n", "size", "count", "type",
                "redop", "root", "time", "algbw", "busbw", "algo/proto",
                compare ? "  measured  error" : "");
    std::printf("#%12s  %12s  %8s  %6s  %6s  %9s  %8s  %8s%s\n", "(B)", "(elements)", "", "", "",
                "(us)", "(GB/s)", "(GB/s)", compare ? "              (GB/s)" : "");
  }
  if (!compare) {
    double size = static_cast<double>(lo.v);
    for (int row = 0; row < 200 && size <= static_cast<double>(hi.v) + 0.5; ++row) {
      predict_row(spec, static_cast<std::int64_t>(size) / align * align, 0, 0, a.json, rows);
      size *= a.step_factor;
    }
  }
  // Each run of the file its own table and band line: runs of one file are separate
  // measurements (another day, another -g), whose errors a pooled maximum would hide.
  const std::size_t runs = measured.runs.size();
  for (std::size_t k = 0; k < runs; ++k) {
    const int label = runs > 1 ? static_cast<int>(k) + 1 : 0;
    if (label > 0 && !a.json)
      std::printf("# run %d of %zu (from line %d of %s)\n", label, runs, measured.run_lines[k],
                  measured.origin.c_str());
    std::vector<std::pair<double, double>> size_err;
    for (const calibration::CollectivePoint& m : measured.runs[k]) {
      const double meas = m.busbw_gb_s > 0
                              ? m.busbw_gb_s
                              : m.bytes / m.time_s / 1e9 * sim::bus_factor(call.kind, n);
      const double err =
          predict_row(spec, static_cast<std::int64_t>(m.bytes), meas, label, a.json, rows);
      if (meas > 0) size_err.emplace_back(m.bytes, err);
    }
    if (!a.json) print_band_errors(size_err);
  }
  if (runs > 1 && !a.json)
    std::printf("# %zu runs of %d GPUs compared apart (--run N prints one)\n", runs, n);
  if (a.json) std::cout << rows.dump(2) << "\n";
}

}  // namespace

void register_collective(CLI::App& app) {
  auto args = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand(
      "collective",
      "Predict one collective (all-reduce, ...) at a range of sizes, as nccl-tests prints it");
  cmd->add_option("--cluster", args->cluster, "cluster YAML file or built-in scenario name")
      ->required();
  CLI::Option* op = cmd->add_option(
      "--op", args->op,
      "all-reduce, all-gather, reduce-scatter, broadcast, reduce, all-to-all, send-recv "
      "(default all-reduce; with --compare, the collective the file shows it ran)");
  cmd->add_option("--devices", args->devices, "comma-separated GPU names (default: every GPU)");
  cmd->add_option("--min-bytes,-b", args->min_bytes,
                  "smallest size (nccl-tests -b): 8, 128M, 16GiB");
  cmd->add_option("--max-bytes,-e", args->max_bytes, "largest size (nccl-tests -e)");
  cmd->add_option("--step-factor,-f", args->step_factor,
                  "size multiplier between rows (nccl-tests -f)");
  cmd->add_option("--dtype", args->dtype, "element type: f32, f16, bf16, f64, i32, ...");
  cmd->add_option("--root", args->root, "root rank of broadcast/reduce");
  cmd->add_option(
         "--gpus-per-thread,-g", args->gpus_per_thread,
         "GPUs one host thread launches for (nccl-tests -g; 8 for one process driving 8 GPUs)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--algo", args->algo,
                  "force an algorithm: ring, tree, nvls, direct, pat (NCCL_ALGO)");
  cmd->add_option("--nccl-version", args->nccl_version,
                  "NCCL version whose tuner chooses (over the cluster's nccl_version; 2.19 by "
                  "default; 2.23+ has other tree latencies, ring LL bandwidth and PAT)");
  cmd->add_option("--proto", args->proto, "force a protocol: LL, LL128, Simple (NCCL_PROTO)");
  cmd->add_option("--p2p", args->p2p,
                  "off: NCCL_P2P_DISABLE=1, every hop between GPUs of a node through host "
                  "memory (NCCL's SHM transport); on by default");
  cmd->add_option(
      "--compare", args->compare,
      "a real nccl-tests output of the op: predict at its sizes and print its busbw and "
      "the error beside each row, and the largest error per size band, per run of the file");
  cmd->add_option("--run", args->run,
                  "of a --compare file holding several runs, compare only the N-th (from 1)")
      ->check(positive_number());
  cmd->add_flag("--json", args->json,
                "print a JSON list of rows (bytes, time_s, algbw_gbps, busbw_gbps)");
  cmd->callback([args, op] {
    args->op_given = op->count() > 0;
    run_collective(*args);
  });
}

}  // namespace placesim::tools

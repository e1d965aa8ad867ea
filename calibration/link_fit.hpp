// Link calibration: readers of CUDA-samples p2pBandwidthLatencyTest output, nccl-tests output and
// Vidur's measured collective CSVs, and the fits that write measured bandwidths and latencies into
// a cluster.
//
//   using namespace placesim::calibration;
//   P2pMeasurement m = parse_p2p_output(read_text("p2p.txt"), "p2p.txt");
//   sim::Cluster c = sim::load_cluster("box.yaml");
//   LinkFitReport r = fit_links_from_p2p(m, c);        // c's links updated in place
//   std::vector<CollectivePoint> pts = parse_nccl_tests(read_text("ar.txt"), "ar.txt",
//   "all_reduce"); CollectiveFit f = fit_collective(pts);             // t(n) = alpha + n / algbw,
//   per rank count
//
// Link model fitted (docs/calibration.md): each GPU pair's measured unidirectional bandwidth (P2P
// enabled where the cluster gives the pair peer access, else disabled) and latency are attributed
// to the class (`Link::kind`) of the bottleneck link on the path the measurement took (the direct
// route, or through the source GPU's host memory for P2P=Disabled numbers); a class gets the median
// over its pairs, and every link of that class gets it (latency split evenly over the path's
// hops). Classes no measured path crossed are left alone.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/cluster.hpp"

namespace placesim::calibration {

struct P2pMeasurement {
  int gpus = 0;
  std::vector<std::string> names;  ///< "NVIDIA A100 80GB PCIe" per device, when printed
  std::vector<std::vector<bool>>
      can_access;  ///< "Device=i CAN Access Peer Device=j", else the P2P Connectivity Matrix
  /// Matrices by name: uni_off, uni_on, bi_off, bi_on (GB/s); lat_gpu_off, lat_cpu_off,
  /// lat_gpu_on, lat_cpu_on (us); "(P2P Reads)" matrices of --p2p_read builds as uni_on_reads,
  /// lat_gpu_on_reads, lat_cpu_on_reads (read, not fitted). Absent sections are absent keys.
  std::map<std::string, std::vector<std::vector<double>>> matrix;
  /// Runs: a file may hold several runs one after another (p2pBandwidthLatencyTest, then
  /// p2pBandwidthLatencyTest --sm_copy), each starting at the sample's banner line "[P2P
  /// (Peer-to-Peer) GPU Bandwidth Latency Test]". One is read: `run` of parse_p2p_output (1-based),
  /// else the first. runs = banners in the file (1 without any), run_line = where the read one
  /// starts.
  int runs = 1, run = 1, run_line = 1;
};
P2pMeasurement parse_p2p_output(const std::string& text, const std::string& origin, int run = 0);

struct LinkClassFit {
  std::string kind;
  int pairs = 0;
  double old_gb_s = 0, new_gb_s = 0;
  double old_latency_us = 0, new_latency_us = 0;
  int links = 0;    ///< links of the class rewritten
  std::string why;  ///< which measured transfers crossed the class, and how it was fitted
};
struct LinkFitReport {
  std::vector<LinkClassFit> classes;
  /// Per measured pair: measured GB/s vs the cluster's route bottleneck before and after.
  struct Pair {
    std::string from, to;
    double measured_gb_s = 0, before_gb_s = 0, after_gb_s = 0;
  };
  std::vector<Pair> pairs;
  std::vector<std::string> notes;
};
/// GPU i of the measurement is the cluster's i-th GPU (sim::Cluster::gpus() order). Updates the
/// links of `cluster` and recomputes its routes. Throws InputError when the GPU counts differ.
LinkFitReport fit_links_from_p2p(const P2pMeasurement& m, sim::Cluster& cluster);

struct CollectivePoint {
  std::string collective;  ///< "all_reduce", "all_gather", ...
  int ranks = 0;           ///< GPUs taking part (0 = unknown)
  int nodes = 1;           ///< machines (0 = unknown: a table that does not say)
  double bytes = 0;        ///< message size
  double time_s = 0;       ///< out-of-place time
  double algbw_gb_s = 0;   ///< as printed (nccl-tests) or bytes / time
  double busbw_gb_s = 0;   ///< as printed (0 = not printed)
  int nccl_version = 0;    ///< NCCL_VERSION_CODE the output states (22304 for 2.23.4); 0 = none
  int run = 0;             ///< which run of the file (0, 1, ...; docs/calibration.md, "Runs")
  int run_line = 0;        ///< the line where that run starts (0 = not from a file)
  long long wrong = 0;     ///< nccl-tests' "#wrong" count of the row (the larger half; 0 = none)
};
/// nccl-tests results (`*_perf -b 8 -e 128M -f 2`): its own output (columns size count type
/// [redop root] time algbw busbw #wrong, out-of-place then in-place, placed by its header line when
/// present), and markdown or whitespace tables of such results with a header naming size and time
/// (us, ms or s by the header) or algbw, busbw (sizes may carry K/M/G units). `collective` names
/// the binary that ran when the output does not ("# Collective test starting: X_perf" sections of
/// a log of several binaries are kept only for it; rows whose redop says another collective, such
/// as all_gather's "none" asked for as all_reduce, are refused). Of -d all / -o all outputs the
/// float/sum rows are kept (else the first type's). Launcher prefixes are removed first (mpirun
/// --tag-output, srun -l, Ray, ISO timestamps, pdsh host labels). Ranks: the highest "Rank N"
/// line + 1 (with or without a leading '#', Group column or mpirun tag; one rank on two hosts is
/// refused), else nThread x nGpus, else per table from busbw / algbw; nodes: distinct host names
/// of the rank lines, else 0 (unknown); nccl_version from "NCCL version 2.x.y" or
/// "nccl-library=NNNNN".
/// `collective` empty: guess_collective's.
/// Runs: a file may hold several runs one after another; a new one starts at a "# nThread",
/// "Rank N" or "# Collective test starting:" line after result rows, after an "# Avg bus
/// bandwidth" footer, at a markdown table, or where a size falls below the previous one of the
/// same data type. Each run takes its ranks and hosts from its own header (CollectivePoint::run,
/// run_line). `run` > 0 keeps only that run (1-based, counted among the runs of the collective
/// kept); a file with fewer runs is refused.
std::vector<CollectivePoint> parse_nccl_tests(const std::string& text, const std::string& origin,
                                              const std::string& collective, int run = 0);
/// The collective every "# Collective test starting: X_perf[_mpi]" line of a log names ("X"), or ""
/// when there is none or several.
std::string collective_named_in(const std::string& text);
/// Which collective an nccl-tests output ran, from its content (docs/calibration.md, "Which
/// collective"): its "Collective test starting" line; else a command line naming one X_perf
/// binary; else its rows' redop and root columns, which in-place results it checked (sendrecv
/// and alltoall print N/A there) and busbw / algbw over the ranks its header lists; else
/// all_reduce, `assumed`. `why` says which, for a note.
struct CollectiveGuess {
  std::string collective;
  std::string why;
  bool assumed = false;
};
CollectiveGuess guess_collective(const std::string& text, const std::string& origin);
/// Vidur's profiling CSV (data/profiling/network/*/all_reduce.csv): time in ms, size in bytes.
std::vector<CollectivePoint> parse_vidur_collective_csv(const std::string& text,
                                                        const std::string& origin);

struct CollectiveFitRow {
  std::string collective;
  int ranks = 0, nodes = 1;
  double alpha_us = 0;    ///< latency term
  double algbw_gb_s = 0;  ///< asymptotic algorithm bandwidth (0: not written, see `note`)
  double busbw_gb_s = 0;  ///< algbw x bus factor (2(n-1)/n for all-reduce, (n-1)/n for gathers)
  int points = 0;
  double mean_rel_error = 0;   ///< of t(n) = alpha + n / algbw over the measured sizes
  double max_bytes = 0;        ///< the largest size measured
  double max_busbw_gb_s = 0;   ///< the highest busbw measured (printed, else algbw x bus factor)
  bool latency_only = false;   ///< the sizes do not reach the bandwidth regime: alpha only
  int runs = 1;                ///< runs of the file this row combines
  int run = -1, run_line = 0;  ///< of a per-run row (CollectiveFit::run_rows); -1 = combined
  std::string note;            ///< why the bandwidth was not written, capped, or combined
};
struct CollectiveFit {
  std::vector<CollectiveFitRow> rows;      ///< what apply_collective_fit writes
  std::vector<CollectiveFitRow> run_rows;  ///< each run's own fit, where a row combines several
  /// Runs of one measurement whose bandwidths disagree: not pooled, no row; one line saying
  /// which (with the line where the disagreeing run starts) for the caller to refuse with.
  std::string refusal;
  int refusal_line = 0;
};
/// Per (collective, ranks, nodes), per run: alpha and algbw (docs/calibration.md, "Collective
/// fit"); a bandwidth only where the sizes reach the bandwidth regime (largest size >= 4 x
/// alpha x algbw), and never above the highest measured busbw by more than the latency share
/// left at the largest size (alpha x algbw / largest) plus 5 % of run-to-run noise (capped at the
/// highest measured, with a note). Runs of one measurement: combined by their medians when their
/// busbw agree within 10 %, else refused (CollectiveFit::refusal).
CollectiveFit fit_collective(const std::vector<CollectivePoint>& points);

/// Writes measured collective bandwidth onto the link class its transfers crossed: the largest
/// single-machine measurement is laid out as a ring over the cluster's first GPUs, the largest
/// multi-machine one as one ring per NIC rail; the transfers are routed through the cluster, and
/// the class of the link with the least bandwidth per transfer gets busbw x (transfers on it) /
/// (parallel rails). Nothing else changes; a fit above a PCIe class's signalling rate is refused.
/// Returns what changed and why (LinkClassFit::why), and notes on what was not fitted.
LinkFitReport apply_collective_fit(const CollectiveFit& fit, sim::Cluster& cluster);

}  // namespace placesim::calibration

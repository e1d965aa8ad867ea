// Trace-replay validation: rebuild the dependency graph of each profiled step, simulate it with
// sim::simulate, and compare the predicted step time with the measured one.
//
//   using namespace placesim::calibration;
//   std::vector<Profile> ranks = {read_profile("rank0.json.gz"), read_profile("rank1.json.gz")};
//   ValidationReport r = validate_profiles(ranks, ValidateOptions{});
//   for (const StepValidation& s : r.steps) print(s.name, s.measured_s, s.predicted_s, s.error);
//   std::string json = validation_to_json(r);         // `placesim validate --json`
//
// The graph (docs/validation.md): every replayed step of every rank in one simulation, so GPU
// work queued in step N carries into step N+1 as it ran:
//   - each host thread is a chain of CPU ops: the measured gaps between runtime calls (framework
//     work) and the runtime calls themselves, with their measured durations; in a trace without
//     GPU activity, the outermost framework ops of each thread and the gaps between them;
//   - each GPU activity (kernel, memcpy, memset) is an op pinned to its stream, with its measured
//     duration, after its launching runtime call and after the previous activity of the stream;
//   - blocking calls (cuda*Synchronize, and calls that returned after their own copy finished) wait
//     for the GPU work they waited for in the trace, then take only their measured remainder;
//   - cudaStreamWaitEvent after a cudaEventRecord: the next activity launched on another stream
//     waits for the last activity launched before the record; without a record (DDP/NCCL: the
//     record is not in the trace) it waits, inferred, for the last activity launched on any other
//     stream of the device before the wait (counted as `inferred_waits`);
//   - NCCL kernels: with several ranks' traces, the i-th NCCL kernel of every rank (same recorded
//     collective, sizes and group) starts only when every rank has reached it, and lasts the
//     shortest measured duration among the ranks (the rest was waiting for the slowest rank).
// Step time as users read it: the period from the start of ProfilerStep N to the start of N+1
// (the last replayed step: to its annotation's end), measured and simulated; the job's step is
// its slowest rank's. Also reported: the GPU span (step start to the end of the last GPU activity
// launched in the step) and per-device busy time (union over streams).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "calibration/trace.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"

namespace placesim::calibration {

struct ValidateOptions {
  /// When set, GPU activities of framework ops found in the calibration (exact signature or op
  /// class) take its time instead of the measured one (scaled over the op's kernels).
  std::shared_ptr<const sim::Calibration> calibration;
  std::string device_model;  ///< calibration key of the GPUs; empty = from the trace
  int max_steps = 0;         ///< 0 = every step
};

struct StreamBusy {
  std::string stream;  ///< "gpu0/stream7", "r1_gpu0/stream7"
  double measured_s = 0;
  int ops = 0;
};

struct ErrorContributor {
  std::string item;    ///< op on the simulated critical path
  double shift_s = 0;  ///< how much later (+) or earlier (-) than measured it ended,
                       ///< relative to the critical-path item before it
};

struct DeviceBusy {
  std::string device;  ///< cluster device name: "gpu0", or "r1_gpu0" with several ranks
  double measured_s = 0, predicted_s = 0;  ///< union over streams of the step's GPU activities
};

/// One rank's figures for one step.
struct RankStep {
  int rank = 0;
  double measured_period_s = 0, predicted_period_s = 0;
  double measured_gpu_span_s = 0, predicted_gpu_span_s = 0;  ///< 0 when the step launched nothing
  std::vector<DeviceBusy> devices;
};

struct StepValidation {
  std::string name;        ///< "ProfilerStep#4" (rank 0's name)
  double measured_s = 0;   ///< the job's step period: the slowest rank's measured period
  double annotated_s = 0;  ///< the longest ProfilerStep annotation among the ranks (0 when none)
  double predicted_s = 0;  ///< the slowest rank's simulated period
  bool compared = false;   ///< both measured and predicted periods exist
  double error = 0;        ///< (predicted - measured) / measured; meaningless unless compared
  double measured_gpu_span_s = 0, predicted_gpu_span_s = 0;  ///< longest over ranks
  int slowest_rank = 0;
  int ops = 0, gpu_ops = 0, host_ops = 0, nccl_matched = 0;
  int framework_ops =
      0;  ///< framework ops replayed at op level (CPU ops, or ops whose GPU work ran)
  int calibrated_ops = 0;  ///< GPU activities that took a calibrated time (--calibration)
  int fallback_ops = 0;    ///< ... that kept their measured time (no signature/class matched)
  /// Of calibrated_ops, those priced by an op-name entry (a signature without shapes: rule
  /// "exact-name"; calibrate keeps one only where the name's calls agreed).
  int name_ops = 0;
  int inferred_waits = 0;  ///< cross-stream waits inferred from a wait without a record
  std::vector<RankStep> ranks;
  std::vector<StreamBusy> streams;  ///< whole replay; set on the first step
};

struct ValidationReport {
  std::vector<std::string> sources;
  std::vector<StepValidation> steps;
  int compared_steps = 0;
  double mean_abs_error = 0;  ///< over compared steps
  /// Steady state: mean period over the steps after the first (all when only one).
  double steady_measured_s = 0, steady_predicted_s = 0;
  int steady_steps = 0;
  std::vector<ErrorContributor> contributors;  ///< largest |shift| first, at most 5
  std::vector<std::string> notes;
  /// Comparisons not made or empty (0 calibrated kernels, 0 ops at op level): the CLI prints
  /// them on stderr.
  std::vector<std::string> warnings;
};

/// One step of one rank inside a replay graph.
struct ReplayStep {
  std::string name;
  int rank = 0;
  bool annotated = false;
  std::int64_t begin_ns = 0, end_ns = 0, next_begin_ns = -1, gpu_end_ns = 0;  ///< trace clock
  sim::OpId first_op = -1;  ///< the main thread's first op of the step
  std::vector<sim::OpId> gpu_ops;
  std::vector<sim::OpId> host_collectives;  ///< gloo collectives run by host threads (CPU-only)
  int host_ops = 0, framework_ops = 0, calibrated_ops = 0, fallback_ops = 0, name_ops = 0,
      inferred_waits = 0;
  std::set<std::int64_t>
      ops_with_gpu;  ///< framework ops (event indices) whose GPU work is replayed
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> measured_intervals;
};

/// Consecutive steps of one or several ranks as a graph plus its cluster (exposed for tests).
struct ReplayGraph {
  sim::Graph graph;
  sim::Cluster cluster;
  std::vector<sim::DeviceId> device_of;
  std::vector<std::vector<ReplayStep>> steps;  ///< [rank][step]
  std::vector<sim::OpId> main_tail;            ///< per rank: the main thread's last op
  int nccl_matched = 0;
  std::set<sim::OpId> nccl_matched_ops;  ///< one op (the first rank's) per matched collective
  std::vector<StreamBusy> streams;
  std::vector<std::int64_t> measured_end_ns;  ///< per op, relative to its rank's first step start
  std::vector<std::string> notes;
};
/// Builds the replay graph of steps [first_step, first_step + num_steps) (indices into
/// profile_steps of rank 0; other ranks use their steps of the same indices). Throws
/// sim::InputError when a rank lacks those steps.
ReplayGraph build_replay(const std::vector<Profile>& ranks, std::size_t first_step,
                         std::size_t num_steps, const ValidateOptions& options);
/// One step.
ReplayGraph build_replay(const std::vector<Profile>& ranks, std::size_t step,
                         const ValidateOptions& options);

ValidationReport validate_profiles(const std::vector<Profile>& ranks,
                                   const ValidateOptions& options);
std::string validation_to_json(const ValidationReport& r);
std::string validation_to_text(const ValidationReport& r);

}  // namespace placesim::calibration

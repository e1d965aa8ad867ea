// Trace-replay validation: rebuild the dependency graph of each profiled step, simulate it with
// sim::simulate, and compare the predicted step time with the measured one.
//
//   using namespace placesim::calibration;
//   std::vector<Profile> ranks = {read_profile("rank0.json.gz"), read_profile("rank1.json.gz")};
//   ValidationReport r = validate_profiles(ranks, ValidateOptions{});
//   for (const StepValidation& s : r.steps) print(s.name, s.measured_s, s.predicted_s, s.error);
//   std::string json = validation_to_json(r);         // `placesim validate --json`
//
// The graph of a step (docs/validation.md):
//   - each host thread is a chain of CPU ops: the measured gaps between runtime calls (framework
//     work) and the runtime calls themselves, with their measured durations;
//   - each GPU activity (kernel, memcpy, memset) launched in the step is an op pinned to its
//     stream, with its measured duration, after its launching runtime call and after the previous
//     activity of the same stream;
//   - blocking calls (cuda*Synchronize, and calls that returned after their own copy finished) wait
//     for the GPU work they waited for in the trace, then take only their measured remainder;
//   - cudaStreamWaitEvent: the next activity launched on another stream waits for the last
//     activity launched before the matching cudaEventRecord (streams of events are not in the
//     trace, so the recording stream is the one of the last launch before the record);
//   - NCCL kernels: with several ranks' traces, the i-th NCCL kernel of every rank starts only
//     when every rank has reached it, and lasts the shortest measured duration among the ranks
//     (the rest was waiting for the slowest rank).
// Predicted time = the simulated makespan of the step; measured = from the step's start to the
// later of its end and the end of the last GPU activity it launched.
#pragma once

#include <memory>
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
  std::string device_model;   ///< calibration key of the GPUs; empty = from the trace
  int max_steps = 0;          ///< 0 = every step
};

struct StreamBusy {
  std::string stream;         ///< "rank0/gpu0/stream7"
  double measured_s = 0;
  int ops = 0;
};

struct ErrorContributor {
  std::string item;           ///< op on the simulated critical path
  double shift_s = 0;         ///< how much later (+) or earlier (-) than measured it ended,
                              ///< relative to the critical-path item before it
};

struct StepValidation {
  std::string name;           ///< "ProfilerStep#4" (rank 0's name)
  double measured_s = 0;      ///< the step's span (see above)
  double annotated_s = 0;     ///< the ProfilerStep annotation's duration (0 when none)
  double predicted_s = 0;
  double error = 0;           ///< (predicted - measured) / measured
  int ops = 0, gpu_ops = 0, host_ops = 0, nccl_matched = 0, calibrated_ops = 0;
  std::vector<StreamBusy> streams;
  std::vector<std::pair<std::string, double>> predicted_device_busy_s;  ///< from the outcome
  std::vector<std::pair<std::string, double>> measured_device_busy_s;   ///< union over streams
  std::vector<ErrorContributor> contributors;   ///< largest |shift| first, at most 5
};

struct ValidationReport {
  std::vector<std::string> sources;
  std::vector<StepValidation> steps;
  double mean_abs_error = 0;
  std::vector<std::string> notes;
};

/// One step of one or several ranks as a graph plus its cluster (exposed for tests).
struct ReplayGraph {
  sim::Graph graph;
  sim::Cluster cluster;
  std::vector<sim::DeviceId> device_of;
  double measured_s = 0, annotated_s = 0;
  int gpu_ops = 0, host_ops = 0, nccl_matched = 0, calibrated_ops = 0;
  std::vector<StreamBusy> streams;
  std::vector<std::pair<std::string, double>> measured_device_busy_s;
  std::vector<std::int64_t> measured_end_ns;   ///< per op, relative to the step start
};
/// Builds the replay graph of step `step` (index into profile_steps of rank 0; other ranks use
/// their step of the same index). Throws sim::InputError when a rank lacks that step.
ReplayGraph build_replay(const std::vector<Profile>& ranks, std::size_t step, const ValidateOptions& options);

ValidationReport validate_profiles(const std::vector<Profile>& ranks, const ValidateOptions& options);
std::string validation_to_json(const ValidationReport& r);
std::string validation_to_text(const ValidationReport& r);

}  // namespace placesim::calibration

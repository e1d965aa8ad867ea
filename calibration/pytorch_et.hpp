// PyTorch Execution Traces (ET) as placesim graphs, optionally timed by the Kineto trace of the
// same step: a model profiled once becomes a graph to place, sweep and train policies on.
//
//   using namespace placesim::calibration;
//   EtImport in = import_pytorch_et("cnn_et.json", "cnn_kineto.json");   // "" = no Kineto trace
//   sim::write_graph_json(in.graph, "cnn.json");
//   std::cout << in.ops << " ops, " << in.data_edges << " data edges, " << in.linked
//             << " timed by Kineto (" << in.link_method << ")\n";
//
// Reads torch 1.13's ExecutionGraphObserver and torch 2.0-2.1's ExecutionTraceObserver JSON
// (schema 1.0.1: flat node fields, "parent", "input_shapes"/"input_types") and torch >= 2.2's
// (schemas 1.0.2-chakra.0.0.4 and later: "ctrl_deps", inputs/outputs {values, shapes, types},
// "attrs"), .json or .json.gz. docs/formats.md ("PyTorch Execution Traces") has the rules:
//   - ops: the outermost operators (nodes with an op schema, or aten:: names) below the
//     record-function labels (ProfilerStep#N, "## forward ##", autograd::engine::evaluate_function,
//     Optimizer.step#...): an operator nested in another (aten::linear -> aten::t, aten::addmm)
//     is part of it, as Chakra's converter keeps the top-level CPU operators. When the trace has
//     ProfilerStep#N labels only the operators of the first of them are imported: those inside
//     the label, and those of other threads (on CUDA the autograd engine runs the backward on
//     its own device thread, under a second thread root) that ran during it: by time where the
//     Kineto trace has the step's event and the operator's (its event lies inside the step's),
//     else only where the trace holds a single ProfilerStep#N label;
//   - FLOPs from the input shapes and arguments by op class (estimate_work, kernel_fit.hpp;
//     convolutions with their real stride, padding, dilation and groups), bytes from the tensors
//     the op reads and writes (views and allocations move none);
//   - phase: backward below an autograd label (BACKWARD_FUNCTION scope,
//     autograd::engine::evaluate_function, a "backward" annotation), update below an
//     "Optimizer." label, forward otherwise;
//   - data edges through tensors, in start (record-function id) order: a reader depends on the
//     last op that wrote the tensor (id and storage) or, in place, its storage; a write after
//     reads is ordered after them by control edges (write-after-read);
//   - with a Kineto trace: each op is tied to its profiler event by record-function id (torch
//     >= 2.1 writes "Record function id"), else by aligning the two op sequences by name in start
//     order, thread by thread. On a GPU trace an op's time is the GPU time of the kernels it
//     launched (through the reader's launch links, trace.hpp); an op of CPU tensors only keeps
//     its CPU time and is CPU-only; on a CPU-only trace the op's CPU time, plus the host time of
//     the labels around it outside any op (the autograd engine, the optimizer's Python loop),
//     charged to a label's first op. A timed op is pinned to the device kind it ran on.
//
//   std::vector<OpSample> s = op_samples_from_et(in, "cpu0");   // `calibrate --et`
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/kernel_fit.hpp"
#include "sim/graph.hpp"

namespace placesim::calibration {

struct EtImport {
  sim::Graph graph;
  std::string schema;     ///< the trace's "schema" ("1.0.1", "1.0.2-chakra.0.0.4", ...)
  int nodes = 0;          ///< ET nodes in the file
  int ops = 0;            ///< graph ops (outermost operators)
  int nested = 0;         ///< operator nodes inside another operator (part of it)
  int outside_step = 0;   ///< operators outside the imported ProfilerStep#N label (not imported)
  int other_threads = 0;  ///< operators of other threads imported with the ProfilerStep#N label
  int data_edges = 0, control_edges = 0;
  int forward_ops = 0, backward_ops = 0, update_ops = 0;
  // With a Kineto trace:
  std::string link_method;            ///< "record-function-id", "order" or "" (no Kineto trace)
  int linked = 0;                     ///< ops tied to a Kineto event
  int gpu_timed = 0;                  ///< ops timed by the GPU activities they launched
  std::int64_t measured_step_ns = 0;  ///< the imported step's ProfilerStep#N event, else the
                                      ///< trace's first step (profile_steps), 0 if none
  std::int64_t measured_ops_ns = 0;   ///< sum of the ops' measured times
  std::string device_name;            ///< the Kineto trace's GPU name, "" if none
  std::vector<std::string> notes;
};

/// Reads an ET file (and, unless `kineto_path` is empty, its Kineto trace). Throws
/// sim::InputError naming the file and the key for a malformed file.
EtImport import_pytorch_et(const std::string& et_path, const std::string& kineto_path);

/// Calibration samples from an import with a Kineto trace: one per timed op (measured time > 0),
/// with the op's signature (ET shapes: torch 1.13's profiler records none) and its work, so that
/// `calibrate --profile K --et ET` fits exactly the ops an imported graph has. The device key is
/// `device_model`, else the profile's GPU name, else "cpu".
std::vector<OpSample> op_samples_from_et(const EtImport& in, const std::string& device_model);

}  // namespace placesim::calibration

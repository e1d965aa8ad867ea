// Mixed-precision training as a graph transform (models/registry.hpp, apply_mixed_precision).
#include <algorithm>
#include <string>
#include <vector>

#include "models/registry.hpp"

namespace placesim::models {

namespace {

bool is_float32(sim::Dtype d) {
  return d == sim::Dtype::F32 || d == sim::Dtype::TF32;
}

// Ops a model runs in F32 whatever its precision: GNMT v2's label-smoothed loss calls
// log_softmax(x, dtype=torch.float32) (DeepLearningExamples PyTorch/Translation/GNMT/seq2seq/
// train/smoothing.py @ 70c51ad7), so the log-probabilities, the reductions over them and their
// gradients are F32 (models/rnn_models.cpp, label_smoothed_loss). The softmax's backward
// (LogSoftmaxGrad) writes the logits' gradient in their type, so it is not here.
bool runs_in_f32(const std::string& type) {
  return type == "LogSoftmax" || type == "SmoothedNll" || type == "RowMeanGrad" ||
         type == "NllGatherGrad";
}

double ratio(std::int64_t after, std::int64_t before) {
  return before > 0 ? static_cast<double>(after) / static_cast<double>(before) : 1.0;
}

}  // namespace

void apply_mixed_precision(sim::Graph& g, sim::Dtype half, bool f32_grads) {
  const int n = g.num_ops();
  // Variables: inputs-free ops an update op reads. Their working copy becomes half; the update
  // op keeps the F32 master copy (4 bytes a parameter) beside the optimizer state.
  std::vector<char> variable(n, 0);
  for (const sim::Op& op : g.ops)
    if (op.phase == sim::Phase::Update)
      for (const sim::TensorRef& t : op.inputs)
        if (g.ops[t.op].inputs.empty() && g.ops[t.op].phase == sim::Phase::Other)
          variable[t.op] = 1;
  // Weight gradients: what an update reads from a backward op. With f32_grads they stay F32, as
  // torch.cuda.amp leaves them: autocast keeps the parameters F32, so each cast's backward writes
  // an F32 param.grad (GradScaler refuses to unscale F16 ones), and DDP all-reduces those.
  std::vector<std::vector<char>> keep(n);
  if (f32_grads)
    for (const sim::Op& op : g.ops)
      if (op.phase == sim::Phase::Update)
        for (const sim::TensorRef& t : op.inputs)
          if (g.ops[t.op].phase == sim::Phase::Backward) {
            auto& k = keep[t.op];
            k.resize(g.ops[t.op].outputs.size(), 0);
            k[t.output] = 1;
          }
  // F32 ops, and the backward adds that accumulate only their outputs (F32 + F32 is F32). A
  // builder's ops come after their inputs, so one pass in id order sees the inputs first.
  std::vector<char> f32(n, 0);
  for (sim::OpId o = 0; o < n; ++o) {
    const sim::Op& op = g.ops[o];
    const bool accumulates = op.phase == sim::Phase::Backward && !op.inputs.empty() &&
                             (op.type == "Add" || op.type == "AddN");
    f32[o] = runs_in_f32(op.type) ||
             (accumulates && std::all_of(op.inputs.begin(), op.inputs.end(),
                                         [&](const sim::TensorRef& t) { return f32[t.op] != 0; }));
  }
  const std::vector<sim::Op> before = g.ops;
  for (sim::OpId o = 0; o < n; ++o) {
    sim::Op& op = g.ops[o];
    if (op.phase == sim::Phase::Update || f32[o]) continue;
    // Other persistent tensors (batch-norm statistics, constants) stay F32.
    if (op.persistent.v > 0 && !variable[o]) continue;
    for (std::size_t i = 0; i < op.outputs.size(); ++i)
      if (sim::TensorOut& t = op.outputs[i];
          is_float32(t.dtype) && !(i < keep[o].size() && keep[o][i])) {
        t.bytes.v = t.bytes.v * sim::dtype_size(half) / 4;
        t.dtype = half;
      }
    if (variable[o]) op.persistent.v = op.persistent.v * sim::dtype_size(half) / 4;
    if (is_float32(op.dtype) &&
        (op.phase == sim::Phase::Forward || op.phase == sim::Phase::Backward))
      op.dtype = half;
  }
  for (sim::OpId o = 0; o < n; ++o) {
    sim::Op& op = g.ops[o];
    if (op.phase == sim::Phase::Update) {
      // The F32 master weights live with the update (as Megatron's optimizer holds them).
      for (const sim::TensorRef& t : op.inputs)
        if (variable[t.op]) op.persistent.v += before[t.op].persistent.v;
      continue;
    }
    std::int64_t in_b = 0, in_a = 0, out_b = 0, out_a = 0;
    for (const sim::TensorRef& t : op.inputs) {
      in_b += before[t.op].outputs[t.output].bytes.v;
      in_a += g.ops[t.op].outputs[t.output].bytes.v;
    }
    for (std::size_t i = 0; i < op.outputs.size(); ++i) {
      out_b += before[o].outputs[i].bytes.v;
      out_a += op.outputs[i].bytes.v;
    }
    op.bytes_read.v =
        static_cast<std::int64_t>(static_cast<double>(op.bytes_read.v) * ratio(in_a, in_b));
    op.bytes_written.v =
        static_cast<std::int64_t>(static_cast<double>(op.bytes_written.v) * ratio(out_a, out_b));
    if (op.signature && op.dtype == half) op.signature->dtype = half;
  }
  g.metadata["precision"] = sim::to_string(half);
  if (f32_grads) g.metadata["grads"] = "f32";
  g.finalize("<precision " + sim::to_string(half) + ">");
}

}  // namespace placesim::models

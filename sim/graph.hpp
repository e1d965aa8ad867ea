// The op-graph IR: one training step (forward, backward, optimizer update) as ops that produce
// output tensors and consume other ops' outputs. An immutable value once built; the JSON format
// is in docs/formats.md.
//
//   Graph g;
//   g.name = "tiny";
//   OpId x = g.add_op({.name = "x", .type = "Placeholder", .outputs = {{.bytes = Bytes{4096}}}});
//   Op mm{.name = "mm", .type = "MatMul", .flops = Flops{2e6}};
//   mm.inputs = {{x, 0}};
//   mm.outputs = {{.bytes = Bytes{4096}}};
//   g.add_op(std::move(mm));
//   g.finalize();                       // checks references, rejects cycles, builds topo order
//   write_graph_json(g, "tiny.json");
//
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/collective_call.hpp"
#include "sim/units.hpp"

namespace placesim::sim {

using OpId = std::int32_t;

/// Which part of the training step an op belongs to.
enum class Phase { Forward, Backward, Update, Other };
std::string to_string(Phase p);
std::optional<Phase> parse_phase(std::string_view s);

/// The memory format a convolution's activations had when the framework ran it: NCHW (PyTorch's
/// default contiguous format, what an ONNX model describes) or NHWC (channels-last). cuDNN's
/// f16/bf16 tensor-core kernels read NHWC and wrap NCHW tensors in layout transforms
/// (docs/cost-model.md, "NCHW layout transforms").
enum class Layout { Nchw, Nhwc };
std::string to_string(Layout l);                         ///< "nchw", "nhwc"
std::optional<Layout> parse_layout(std::string_view s);  ///< also "channels_last" for nhwc

/// Key for calibrated look-up: op type + input shapes + dtype.
struct Signature {
  std::string op_type;
  std::vector<std::vector<std::int64_t>> input_shapes;
  Dtype dtype = Dtype::F32;
  auto operator<=>(const Signature&) const = default;
  /// Canonical text form, e.g. "aten::mm[64,512][512,1024]:f32". Used as the table key.
  [[nodiscard]] std::string key() const;
};

struct TensorOut {
  std::string name;  ///< optional; defaults to "<op>:<index>"
  Bytes bytes;
  std::vector<std::int64_t> shape;  ///< optional
  Dtype dtype = Dtype::F32;
};

struct TensorRef {
  OpId op = -1;
  std::int32_t output = 0;
  auto operator<=>(const TensorRef&) const = default;
};

struct Op {
  std::string name;
  std::string type;  ///< "MatMul", "Conv2D", "LSTMCell", "ApplyAdam", ...
  Flops flops;
  Bytes bytes_read;  ///< memory traffic of the kernel (for the roofline)
  Bytes bytes_written;
  Dtype dtype = Dtype::F32;            ///< compute dtype (selects the peak rate)
  std::optional<Signature> signature;  ///< for calibrated look-up
  std::optional<Duration> measured;    ///< a measured duration overrides every model
  std::vector<TensorOut> outputs;
  std::vector<TensorRef> inputs;
  /// Ops that must finish before this one starts without a tensor flowing (control edges,
  /// same-stream order in trace replay). They cost no copy.
  std::vector<OpId> control_inputs;
  Bytes persistent;                       ///< parameters + optimizer state resident all step
  std::string group;                      ///< co-location group; empty = its own group
  std::optional<DeviceKind> device_kind;  ///< constraint, e.g. CPU-only ops
  std::string layer;                      ///< layer/module path, "encoder/lstm_1"
  Phase phase = Phase::Forward;
  /// Pins the op to one compute stream of its GPU (trace replay); unset = the engine picks.
  std::optional<std::int32_t> stream;
  /// Set on a collective's rank op: one op per rank, on that rank's GPU, all ranks of one call
  /// sharing `collective->id` (docs/collectives.md). simulate() times it with the collective model.
  std::optional<CollectiveCall> collective;
  /// A convolution's or batch norm's memory format as it ran (apply_layout); unset: not stated
  /// (a convolution gets no transforms; a PyTorch/ONNX batch norm counts as NCHW, a builder's
  /// FusedBatchNorm as NHWC).
  std::optional<Layout> layout;
  /// A GEMM's operands' leading dimensions in memory (elements), inputs of rank >= 2 in order, as
  /// a trace's strides give them (`import et`); empty: the shapes' last dimensions (a graph op's
  /// tensors are stored row-major). Read by misaligned_gemm.
  std::vector<std::int64_t> leading_dims;
  /// A fused attention op's dropout probability on the attention probabilities, applied inside
  /// the kernel (FlashAttention / FlashAttentionGrad, an ET's fused SDPA ops); 0: none. Read by
  /// the cost model's in-kernel dropout term (docs/cost-model.md, "Fused attention ops").
  double dropout = 0.0;
  /// Host time the framework spends before this op's launch that no graph op stands for, on top
  /// of the device's launch_overhead: torch.optim's per-parameter Python and argument handling,
  /// set by optimizer_impl (docs/cost-model.md, "The optimizer step's host time"). Charged on a
  /// GPU whose host side is the default one (no calibrated host model); 0: none.
  Duration host_before{0};
  /// An elementwise op one of whose operands is a non-contiguous view of a larger tensor (a
  /// `Narrow`: PyTorch's cat backward hands each input grad.narrow(dim, offset, size), and the
  /// gradient sum adds those views in ATen's generic, non-vectorised elementwise_kernel). Set by
  /// the ONNX import (docs/cost-model.md, "Concatenation gradients"); read by
  /// non_vectorised_elementwise.
  bool strided_operand = false;
};

struct Graph {
  std::string name;
  std::vector<Op> ops;
  std::map<std::string, std::string> metadata;  ///< builder name, options, source

  OpId add_op(Op op) {
    ops.push_back(std::move(op));
    return static_cast<OpId>(ops.size() - 1);
  }
  [[nodiscard]] int num_ops() const { return static_cast<int>(ops.size()); }

  /// Validates (unique names, inputs referring to existing ops and outputs, no cycle, no negative
  /// sizes) and fills the derived members. Throws InputError naming `origin` and the op.
  void finalize(const std::string& origin = "<graph>");

  // Derived by finalize():
  std::vector<OpId> topo_order;  ///< deterministic (Kahn's algorithm, lowest id first)
  std::vector<std::vector<OpId>> consumers_of;  ///< per op, distinct consumer ops (sorted)
  std::map<std::string, OpId> index;            ///< name -> id

  [[nodiscard]] OpId op_index(std::string_view name) const;  ///< -1 if absent
  /// Group name of an op: its `group`, or its own name when it has none.
  [[nodiscard]] const std::string& group_of(OpId id) const;
};

/// Totals for `describe`.
struct GraphStats {
  int ops = 0, forward_ops = 0, backward_ops = 0, update_ops = 0, groups = 0;
  Flops flops;
  Bytes bytes_read, bytes_written, output_bytes, persistent_bytes;
  int longest_path_ops = 0;   ///< ops on the longest dependency chain
  Flops critical_path_flops;  ///< FLOPs on the heaviest chain
};
GraphStats graph_stats(const Graph& g);

/// Reads/writes the JSON graph format. Reading finalizes. Throws InputError.
Graph read_graph_json(const std::string& path);
Graph parse_graph_json(const std::string& text, const std::string& origin);
std::string graph_to_json(const Graph& g);
void write_graph_json(const Graph& g, const std::string& path);  ///< atomic (temp + rename)

}  // namespace placesim::sim

// Building one training step (forward, backward, optimizer update) op by op. A builder records
// forward ops with a gradient rule each; train() derives the backward ops in reverse creation
// order (reverse-mode differentiation, as tf.gradients does), accumulates gradients of tensors
// with several consumers, and adds one optimizer update op per variable. Used by the built-in
// workloads and by the ONNX importer.
//
//   GraphBuilder b("mlp");
//   b.scope("fc1");
//   Tensor x = b.input("x", {64, 784});
//   Tensor w = b.variable("w", {784, 256});
//   Tensor y = b.matmul("mm", x, w);
//   Tensor loss = b.reduce_mean("loss", y);
//   b.train(loss, Optimizer::Adam);
//   sim::Graph g = b.finish({{"builder", "mlp"}});
//
// Co-location, as TensorFlow forces it in Mirhoseini et al. 2017: a forward op, its gradient ops
// share one group (colocate_gradients_with_ops); a variable and its update op share one group.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/graph.hpp"

namespace placesim::models {

using Shape = std::vector<std::int64_t>;

struct Tensor {
  sim::OpId op = -1;
  std::int32_t out = 0;
  Shape shape;
  sim::Dtype dtype = sim::Dtype::F32;
};

std::int64_t num_elements(const Shape& s);
std::int64_t tensor_bytes(const Tensor& t);

/// Lamb: LAMB (You et al. 2019), as apex FusedLAMB runs it (optimizer_impl=fused; its kernels in
/// models/optimizer_impl.cpp); Adam's two slots. BertAdam: NVIDIA DeepLearningExamples' BERT
/// optimization.py BertAdam, the FP32/TF32 optimizer of run_squad.py (optimizer_impl=per_param:
/// its eager loop, models/optimizer_impl.cpp); Adam's two slots.
enum class Optimizer { Sgd, Momentum, Adam, RmsProp, Lamb, BertAdam };
/// "sgd", "momentum", "adam", "rmsprop", "lamb", "bertadam"; nullopt otherwise.
std::optional<Optimizer> parse_optimizer(std::string_view s);
std::string to_string(Optimizer o);
/// Optimizer state tensors per parameter (Adam and LAMB: m and v; momentum: one; RMSProp: ms and
/// mom).
int optimizer_slots(Optimizer o);

/// How gradients of a tensor with several consumers are summed. Chain: a running Add as each
/// contribution arrives (what a while-loop RNN's accumulator does; one gradient live at a time).
/// AddN: one AddN over all contributions (tf.gradients' default on a statically unrolled graph;
/// every per-step weight gradient stays live until the sum).
enum class Accumulation { Chain, AddN };

/// How to compute the gradient of some inputs of a forward op.
struct GradRule {
  std::string type;  ///< op type of the gradient op, e.g. "Conv2DBackpropFilter"
  double flops = 0.0;
  std::vector<int> wrt;            ///< forward input indices whose gradients it produces
  std::vector<int> saved_inputs;   ///< forward inputs it reads besides the output gradients
  std::vector<int> saved_outputs;  ///< forward outputs it reads
  /// Output shapes when they differ from the inputs' (IndexedSlices of a Gather gradient).
  std::vector<Shape> out_shapes;
  /// The gradient is the output gradient itself (Identity/Add/Reshape-like): no op.
  bool passthrough = false;
  /// Other tensors it reads, made after the forward op (add_grad_reads): a cuDNN LSTM layer's
  /// weight gradient reads every step's hidden state.
  std::vector<Tensor> reads;
  /// Shapes appended to the gradient op's signature (no data): a whole-sequence embedding
  /// look-up's gradient names its table [V, E] there, which PyTorch's dense backward zero-fills
  /// and the cost model prices (docs/cost-model.md, "Embedding gradients").
  std::vector<Shape> signature_extra;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name);

  /// Layer/module path for the ops that follow, e.g. "encoder/lstm_1".
  void scope(std::string layer) { layer_ = std::move(layer); }
  [[nodiscard]] const std::string& current_scope() const { return layer_; }
  /// When off, op() and input() use the given names verbatim (the scope still sets the layer):
  /// importers keep the source model's names.
  void prefix_names(bool on) { prefix_ = on; }

  /// A fed tensor (no gradient).
  Tensor input(const std::string& name, Shape shape, sim::Dtype dtype = sim::Dtype::F32);
  /// A non-trainable persistent tensor (batch-norm running statistics, constants): resident all
  /// step, no gradient.
  Tensor constant(const std::string& name, Shape shape, sim::Dtype dtype = sim::Dtype::F32,
                  const std::string& type = "Const");
  /// A trainable variable (its output is the parameter tensor; persistent bytes = its size).
  Tensor variable(const std::string& name, Shape shape);
  /// The variable's gradient is dense even where its look-ups' gradients are row slices:
  /// PyTorch's nn.Embedding (sparse=False, the default) returns a [V, E] gradient
  /// (embedding_dense_backward), where TensorFlow returns IndexedSlices. train() then adds one
  /// op that writes the whole table from the accumulated rows, and a dense update; DDP
  /// exchanges the whole table.
  void dense_gradient(const Tensor& variable) { dense_grad_vars_.insert(variable.op); }
  /// A generic forward op. Names are prefixed with the scope. Returns its outputs.
  std::vector<Tensor> op(const std::string& name, const std::string& type,
                         const std::vector<Tensor>& inputs, const std::vector<Shape>& out_shapes,
                         double flops, std::vector<GradRule> grads,
                         sim::Dtype out_dtype = sim::Dtype::F32);

  // Common ops (FLOPs: a multiply-add counts 2; an elementwise op 1 per element unless noted).
  Tensor matmul(const std::string& name, const Tensor& a, const Tensor& b,
                bool transpose_b = false);
  /// [batch..., m, k] x [batch..., k, n]
  Tensor batch_matmul(const std::string& name, const Tensor& a, const Tensor& b);
  Tensor bias_add(const std::string& name, const Tensor& x, const Tensor& bias);
  /// x [m, k] . w [k, n] + bias [n] as one MatMul whose bias is its third input: cuBLASLt's bias
  /// epilogue (CUBLASLT_EPILOGUE_BIAS), which PyTorch's addmm calls for a 1-D bias
  /// (at::cuda::blas::gemm_and_bias), so no separate pass over [m, n]. The bias gradient stays a
  /// separate column sum (BiasAddGrad): addmm's backward reduces the output gradient over rows.
  Tensor matmul_bias(const std::string& name, const Tensor& x, const Tensor& w, const Tensor& bias);
  /// Elementwise unary op with a gradient op reading its output (Relu, Sigmoid, Tanh) or input.
  Tensor unary(const std::string& name, const std::string& type, const Tensor& x,
               double flops_per_elem = 1.0, bool grad_reads_output = true);
  Tensor add(const std::string& name, const Tensor& a, const Tensor& b);
  /// Dropout as PyTorch's fused kernel runs it (native_dropout): outputs the kept, rescaled
  /// values and a Bool keep-mask (1 byte an element); the gradient (DropoutGrad) reads the
  /// output gradient and the mask. 2 FLOPs an element forward (draw, scale), 1 backward.
  Tensor dropout(const std::string& name, const Tensor& x);
  /// Megatron-LM's bias_dropout_add_fused_train (one jit-fused kernel): residual + dropout(x +
  /// bias), the dropout's Bool keep-mask a second output. Backward: one pass for the gradient of
  /// x (the masked, rescaled output gradient), the bias gradient's row sum; the residual's
  /// gradient is the output gradient. Without `drop` it is the fused bias add and residual add.
  Tensor bias_dropout_add(const std::string& name, const Tensor& x, const Tensor& bias,
                          const Tensor& residual, bool drop);
  Tensor mul(const std::string& name, const Tensor& a, const Tensor& b);
  Tensor concat(const std::string& name, const std::vector<Tensor>& xs, int axis);
  std::vector<Tensor> split(const std::string& name, const Tensor& x, int axis, int parts);
  Tensor reshape(const std::string& name, const Tensor& x, Shape shape);
  /// Embedding look-up: params [V, E], ids [...] -> [..., E]. Gradient: IndexedSlices values.
  /// Rows `ids` of `params` ([V, E]); the gradient is IndexedSlices ([ids..., E]). With
  /// `dense_grad` (a framework that runs one dense embedding backward per look-up, as PyTorch's
  /// nn.Embedding does for a whole sequence) its signature also names the table.
  Tensor gather(const std::string& name, const Tensor& params, const Tensor& ids,
                bool dense_grad = false);
  Tensor softmax(const std::string& name, const Tensor& x);
  /// Returns the per-example loss; logits [N, C], labels [N] (int).
  Tensor sparse_softmax_xent(const std::string& name, const Tensor& logits, const Tensor& labels);
  /// Label-smoothed NLL as PyTorch programs write it (GNMT v2's LabelSmoothing, fairseq's
  /// label_smoothed_cross_entropy): log_softmax(logits, dtype=float32) as op `name`/log_softmax,
  /// then the gather of each label's log-probability and the mean (or sum) over the vocabulary as
  /// one op `name`/smoothed_nll; F32 whatever the precision (models/precision.cpp). Returns [N].
  Tensor label_smoothed_nll(const std::string& name, const Tensor& logits, const Tensor& labels);
  Tensor reduce_mean(const std::string& name, const Tensor& x);
  Tensor add_n(const std::string& name, const std::vector<Tensor>& xs);
  /// NHWC conv, filter [kh, kw, cin, cout]; "SAME" padding when same, else "VALID".
  Tensor conv2d(const std::string& name, const Tensor& x, const Tensor& filter, int stride,
                bool same);
  /// Batch norm with scale and offset (training mode: batch statistics).
  Tensor batch_norm(const std::string& name, const Tensor& x, const Tensor& gamma,
                    const Tensor& beta);
  /// Batch norm, then ReLU, in the batch norm's own kernel (MXNet's NHWC `BatchNorm` with
  /// act_type='relu'); with `addend`, BN + addend then ReLU (`BatchNormAddRelu`). Same op types as
  /// batch_norm (FusedBatchNorm / FusedBatchNormGrad), so the cost model prices them as one. The
  /// forward writes y once, no ReLU or Add pass; with an addend it also reads the addend and
  /// writes the ReLU's bitmask (1 bit an element, int32 words). The backward reads x (and
  /// gamma, beta: it recomputes y's sign) or the bitmask, and writes dx (and the addend's dz).
  Tensor batch_norm_relu(const std::string& name, const Tensor& x, const Tensor& gamma,
                         const Tensor& beta, const Tensor* addend = nullptr);
  Tensor layer_norm(const std::string& name, const Tensor& x, const Tensor& gamma,
                    const Tensor& beta);
  Tensor pool(const std::string& name, const std::string& type, const Tensor& x, int k, int stride,
              bool same);

  /// Appends `reads` to what gradient rule `rule` of the op that made `fwd` reads.
  void add_grad_reads(const Tensor& fwd, std::size_t rule, const std::vector<Tensor>& reads);
  /// Bytes the op that made `fwd` writes, where outputs share memory (a cuDNN LSTM step's h is
  /// both the layer output y_t and the next step's recurrent input).
  void set_bytes_written(const Tensor& fwd, std::int64_t bytes);
  /// The in-kernel dropout probability of the (fused attention) op that made `fwd`; its gradient
  /// ops, which regenerate the same mask, carry it too (sim::Op::dropout).
  void set_dropout(const Tensor& fwd, double p);
  /// The type op `id` computes in (sim::Op::dtype and its signature's), for a graph whose ops run
  /// in more than one type (the ONNX import's autocast=torch).
  void set_op_dtype(sim::OpId id, sim::Dtype dtype);
  /// Output `out` holds `dtype` where its op computes in another type (an ONNX Dropout's bool
  /// mask beside its float output): its bytes and its op's bytes written follow. Returns it
  /// retyped; ops added after this read it at the new size.
  Tensor set_output_dtype(const Tensor& out, sim::Dtype dtype);

  /// Derives the backward and update ops from the scalar `loss`.
  void train(const Tensor& loss, Optimizer opt, Accumulation acc = Accumulation::Chain);
  /// Finalizes the graph (throws InputError on a builder bug such as a duplicate name).
  sim::Graph finish(std::map<std::string, std::string> metadata);

  [[nodiscard]] const sim::Graph& graph() const { return g_; }
  /// Total trainable parameters (elements) so far.
  [[nodiscard]] std::int64_t parameter_count() const { return params_; }
  /// Whether a gradient can flow into `t` (it depends on a variable).
  [[nodiscard]] bool needs_grad(const Tensor& t) const {
    return info_[static_cast<std::size_t>(t.op)].needs_grad;
  }
  /// Variables are named by the caller exactly (no scope prefix) when `exact` is set.
  Tensor variable_named(const std::string& full_name, Shape shape, const std::string& layer);

 private:
  struct FwdInfo {
    std::vector<GradRule> grads;
    bool needs_grad = false;
  };
  Tensor out_of(sim::OpId op, int out) const;
  Tensor cast_gradient(const Tensor& g, const Tensor& target, const std::string& name,
                       const std::string& layer, const std::string& group);
  sim::OpId add(sim::Op op);
  void contribute(const Tensor& target, const Tensor& grad, const std::string& group,
                  Accumulation acc);
  std::optional<Tensor> gradient_of(const Tensor& t, Accumulation acc);
  Tensor dense_of(sim::OpId variable, const Tensor& rows);

  sim::Graph g_;
  std::string layer_;
  bool prefix_ = true;
  std::int64_t params_ = 0;
  std::vector<FwdInfo> info_;  // per op
  std::vector<sim::OpId> variables_;
  std::set<sim::OpId> dense_grad_vars_;  // dense_gradient()
  // Per (op, output): accumulated gradient so far, or pending AddN contributions.
  std::map<std::pair<sim::OpId, int>, std::vector<Tensor>> grad_;
  std::map<std::pair<sim::OpId, int>, int> acc_count_;
  bool trained_ = false;
};

}  // namespace placesim::models

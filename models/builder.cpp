#include "models/builder.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <utility>

#include "sim/cost_model.hpp"
#include "sim/error.hpp"

namespace placesim::models {

std::int64_t num_elements(const Shape& s) {
  // Shapes come from options (--graph-opt batch=...) and model files: a product past 2^50
  // elements (a PiB of bytes) is an input error, never a wrapped int64.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 50;
  std::int64_t n = 1;
  for (const std::int64_t d : s) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements) {
      std::string shape;
      for (const std::int64_t x : s) shape += (shape.empty() ? "" : ",") + std::to_string(x);
      throw sim::InputError(
          "--graph-opt", "",
          "options that keep every tensor under 2^50 elements, got shape [" + shape + "]");
    }
  }
  return n;
}

std::int64_t tensor_bytes(const Tensor& t) {
  return num_elements(t.shape) * sim::dtype_size(t.dtype);
}

std::optional<Optimizer> parse_optimizer(std::string_view s) {
  if (s == "sgd") return Optimizer::Sgd;
  if (s == "momentum") return Optimizer::Momentum;
  if (s == "adam") return Optimizer::Adam;
  if (s == "rmsprop") return Optimizer::RmsProp;
  if (s == "lamb") return Optimizer::Lamb;
  if (s == "bertadam") return Optimizer::BertAdam;
  return std::nullopt;
}

std::string to_string(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd:
      return "sgd";
    case Optimizer::Momentum:
      return "momentum";
    case Optimizer::Adam:
      return "adam";
    case Optimizer::RmsProp:
      return "rmsprop";
    case Optimizer::Lamb:
      return "lamb";
    case Optimizer::BertAdam:
      return "bertadam";
  }
  return "sgd";
}

int optimizer_slots(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd:
      return 0;
    case Optimizer::Momentum:
      return 1;
    case Optimizer::Adam:
    case Optimizer::Lamb:
    case Optimizer::BertAdam:
      return 2;
    case Optimizer::RmsProp:
      return 2;
  }
  return 0;
}

namespace {

// FLOPs per parameter element of one update (TensorFlow's Apply* kernels).
double update_flops_per_elem(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd:
      return 2;
    case Optimizer::Momentum:
      return 4;
    case Optimizer::Adam:
    case Optimizer::BertAdam:  // Adam's arithmetic; its kernels are priced per_param
      return 10;
    case Optimizer::RmsProp:
      return 8;
    case Optimizer::Lamb:  // Adam's 10, a multiply-add per element for each of the three L2
      return 18;           // norms (gradient, parameter, update) and 2 for stage 2's p -= r*u
  }
  return 2;
}

std::string update_type(Optimizer o, bool sparse) {
  std::string base;
  switch (o) {
    case Optimizer::Sgd:
      base = "GradientDescent";
      break;
    case Optimizer::Momentum:
      base = "Momentum";
      break;
    case Optimizer::Adam:
      base = "Adam";
      break;
    case Optimizer::RmsProp:
      base = "RMSProp";
      break;
    case Optimizer::Lamb:
      base = "Lamb";
      break;
    case Optimizer::BertAdam:
      base = "BertAdam";
      break;
  }
  return (sparse ? "SparseApply" : "Apply") + base;
}

double d(std::int64_t v) {
  return static_cast<double>(v);
}

bool float_type(sim::Dtype t) {
  return t == sim::Dtype::F32 || t == sim::Dtype::F16 || t == sim::Dtype::BF16 ||
         t == sim::Dtype::TF32;
}

}  // namespace

GraphBuilder::GraphBuilder(std::string name) {
  g_.name = std::move(name);
}

Tensor GraphBuilder::out_of(sim::OpId op, int out) const {
  const auto& o = g_.ops[static_cast<std::size_t>(op)].outputs[static_cast<std::size_t>(out)];
  return Tensor{op, out, o.shape, o.dtype};
}

sim::OpId GraphBuilder::add(sim::Op op) {
  std::int64_t rd = 0;
  sim::Signature sig;
  sig.op_type = op.type;
  sig.dtype = op.dtype;
  for (const auto& in : op.inputs) {
    const auto& t =
        g_.ops[static_cast<std::size_t>(in.op)].outputs[static_cast<std::size_t>(in.output)];
    rd += t.bytes.v;
    sig.input_shapes.push_back(t.shape);
  }
  std::int64_t wr = 0;
  for (const auto& o : op.outputs) wr += o.bytes.v;
  op.bytes_read = sim::Bytes{rd};
  op.bytes_written = sim::Bytes{wr};
  op.signature = std::move(sig);
  const sim::OpId id = g_.add_op(std::move(op));
  info_.emplace_back();
  return id;
}

Tensor GraphBuilder::input(const std::string& name, Shape shape, sim::Dtype dtype) {
  sim::Op op;
  op.name = layer_.empty() || !prefix_ ? name : layer_ + "/" + name;
  op.type = "Placeholder";
  op.dtype = dtype;
  op.layer = layer_;
  op.phase = sim::Phase::Other;
  op.outputs.push_back({.bytes = sim::Bytes{num_elements(shape) * sim::dtype_size(dtype)},
                        .shape = shape,
                        .dtype = dtype});
  return out_of(add(std::move(op)), 0);
}

Tensor GraphBuilder::constant(const std::string& name, Shape shape, sim::Dtype dtype,
                              const std::string& type) {
  sim::Op op;
  op.name = layer_.empty() || !prefix_ ? name : layer_ + "/" + name;
  op.type = type;
  op.dtype = dtype;
  op.layer = layer_;
  op.phase = sim::Phase::Other;
  const std::int64_t bytes = num_elements(shape) * sim::dtype_size(dtype);
  op.persistent = sim::Bytes{bytes};
  op.outputs.push_back({.bytes = sim::Bytes{bytes}, .shape = std::move(shape), .dtype = dtype});
  return out_of(add(std::move(op)), 0);
}

Tensor GraphBuilder::variable(const std::string& name, Shape shape) {
  return variable_named(layer_.empty() ? name : layer_ + "/" + name, std::move(shape), layer_);
}

Tensor GraphBuilder::variable_named(const std::string& full_name, Shape shape,
                                    const std::string& layer) {
  sim::Op op;
  op.name = full_name;
  op.type = "VariableV2";
  op.layer = layer;
  op.phase = sim::Phase::Other;
  op.group = op.name;
  const std::int64_t bytes = num_elements(shape) * 4;
  op.persistent = sim::Bytes{bytes};
  op.outputs.push_back({.bytes = sim::Bytes{bytes}, .shape = shape});
  params_ += num_elements(shape);
  const sim::OpId id = add(std::move(op));
  info_[static_cast<std::size_t>(id)].needs_grad = true;
  variables_.push_back(id);
  return out_of(id, 0);
}

std::vector<Tensor> GraphBuilder::op(const std::string& name, const std::string& type,
                                     const std::vector<Tensor>& inputs,
                                     const std::vector<Shape>& out_shapes, double flops,
                                     std::vector<GradRule> grads, sim::Dtype out_dtype) {
  sim::Op op;
  op.name = layer_.empty() || !prefix_ ? name : layer_ + "/" + name;
  op.type = type;
  op.layer = layer_;
  op.phase = sim::Phase::Forward;
  op.group = op.name;
  op.flops = sim::Flops{flops};
  bool needs = false;
  for (const auto& t : inputs) {
    assert(t.op >= 0);
    op.inputs.push_back({t.op, t.out});
    needs = needs || info_[static_cast<std::size_t>(t.op)].needs_grad;
  }
  for (const auto& s : out_shapes) {
    op.outputs.push_back({.bytes = sim::Bytes{num_elements(s) * sim::dtype_size(out_dtype)},
                          .shape = s,
                          .dtype = out_dtype});
  }
  const sim::OpId id = add(std::move(op));
  info_[static_cast<std::size_t>(id)].needs_grad = needs;
  info_[static_cast<std::size_t>(id)].grads = std::move(grads);
  std::vector<Tensor> outs;
  for (std::size_t i = 0; i < out_shapes.size(); ++i)
    outs.push_back(out_of(id, static_cast<int>(i)));
  return outs;
}

Tensor GraphBuilder::matmul(const std::string& name, const Tensor& a, const Tensor& b,
                            bool transpose_b) {
  assert(a.shape.size() == 2 && b.shape.size() == 2);
  const std::int64_t m = a.shape[0], k = a.shape[1];
  const std::int64_t n = transpose_b ? b.shape[0] : b.shape[1];
  assert((transpose_b ? b.shape[1] : b.shape[0]) == k);
  const double f = 2.0 * d(m) * d(n) * d(k);
  return op(name, "MatMul", {a, b}, {{m, n}}, f,
            {GradRule{.type = "MatMul", .flops = f, .wrt = {0}, .saved_inputs = {1}},
             GradRule{.type = "MatMul", .flops = f, .wrt = {1}, .saved_inputs = {0}}})[0];
}

Tensor GraphBuilder::matmul_bias(const std::string& name, const Tensor& x, const Tensor& w,
                                 const Tensor& bias) {
  assert(x.shape.size() == 2 && w.shape.size() == 2 && bias.shape.size() == 1);
  const std::int64_t m = x.shape[0], k = x.shape[1], n = w.shape[1];
  assert(w.shape[0] == k && bias.shape[0] == n);
  const double f = 2.0 * d(m) * d(n) * d(k);
  return op(name, "MatMul", {x, w, bias}, {{m, n}}, f,
            {GradRule{.type = "MatMul", .flops = f, .wrt = {0}, .saved_inputs = {1}},
             GradRule{.type = "MatMul", .flops = f, .wrt = {1}, .saved_inputs = {0}},
             GradRule{.type = "BiasAddGrad", .flops = d(m) * d(n), .wrt = {2}}})[0];
}

Tensor GraphBuilder::batch_matmul(const std::string& name, const Tensor& a, const Tensor& b) {
  const std::size_t r = a.shape.size();
  assert(r >= 3 && b.shape.size() == r);
  const std::int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
  std::int64_t batch = 1;
  for (std::size_t i = 0; i + 2 < r; ++i) batch *= a.shape[i];
  Shape out = a.shape;
  out[r - 1] = n;
  const double f = 2.0 * d(batch) * d(m) * d(n) * d(k);
  return op(name, "BatchMatMul", {a, b}, {out}, f,
            {GradRule{.type = "BatchMatMul", .flops = f, .wrt = {0}, .saved_inputs = {1}},
             GradRule{.type = "BatchMatMul", .flops = f, .wrt = {1}, .saved_inputs = {0}}})[0];
}

Tensor GraphBuilder::bias_add(const std::string& name, const Tensor& x, const Tensor& bias) {
  const double n = d(num_elements(x.shape));
  return op(name, "BiasAdd", {x, bias}, {x.shape}, n,
            {GradRule{.wrt = {0}, .passthrough = true},
             GradRule{.type = "BiasAddGrad", .flops = n, .wrt = {1}}})[0];
}

Tensor GraphBuilder::unary(const std::string& name, const std::string& type, const Tensor& x,
                           double flops_per_elem, bool grad_reads_output) {
  const double n = d(num_elements(x.shape));
  GradRule g{.type = type + "Grad", .flops = n * std::max(1.0, flops_per_elem), .wrt = {0}};
  if (grad_reads_output) {
    g.saved_outputs = {0};
  } else {
    g.saved_inputs = {0};
  }
  return op(name, type, {x}, {x.shape}, n * flops_per_elem, {g})[0];
}

namespace {

// A dropout's keep-mask (output 1) is Bool, not the activation type: one byte an element (mixed
// precision leaves it).
void bool_mask_output(sim::Op& o) {
  sim::TensorOut& mask = o.outputs[1];
  o.bytes_written.v -= mask.bytes.v;
  mask.dtype = sim::Dtype::Bool;
  mask.bytes = sim::Bytes{num_elements(mask.shape) * sim::dtype_size(sim::Dtype::Bool)};
  o.bytes_written.v += mask.bytes.v;
}

}  // namespace

Tensor GraphBuilder::dropout(const std::string& name, const Tensor& x) {
  const double n = d(num_elements(x.shape));
  const Tensor y =
      op(name, "Dropout", {x}, {x.shape, x.shape}, 2 * n,
         {GradRule{.type = "DropoutGrad", .flops = n, .wrt = {0}, .saved_outputs = {1}}})[0];
  bool_mask_output(g_.ops[static_cast<std::size_t>(y.op)]);
  return y;
}

Tensor GraphBuilder::bias_dropout_add(const std::string& name, const Tensor& x, const Tensor& bias,
                                      const Tensor& residual, bool drop) {
  const double n = d(num_elements(x.shape));
  std::vector<GradRule> rules;
  if (drop) {
    rules.push_back(GradRule{.type = "DropoutGrad", .flops = n, .wrt = {0}, .saved_outputs = {1}});
  } else {
    rules.push_back(GradRule{.wrt = {0}, .passthrough = true});
  }
  rules.push_back(GradRule{.type = "BiasAddGrad", .flops = n, .wrt = {1}});
  rules.push_back(GradRule{.wrt = {2}, .passthrough = true});
  // Forward: the bias add, the residual add and, with dropout, the draw and the scale.
  const std::vector<Shape> outs =
      drop ? std::vector<Shape>{x.shape, x.shape} : std::vector<Shape>{x.shape};
  const Tensor y = op(name, drop ? "BiasDropoutAdd" : "BiasAddAdd", {x, bias, residual}, outs,
                      (drop ? 4 : 2) * n, std::move(rules))[0];
  if (drop) bool_mask_output(g_.ops[static_cast<std::size_t>(y.op)]);
  return y;
}

Tensor GraphBuilder::add(const std::string& name, const Tensor& a, const Tensor& b) {
  const Tensor& big = num_elements(a.shape) >= num_elements(b.shape) ? a : b;
  const double n = d(num_elements(big.shape));
  std::vector<GradRule> rules;
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = i == 0 ? a : b;
    if (t.shape == big.shape) {
      rules.push_back(GradRule{.wrt = {i}, .passthrough = true});
    } else {
      // Broadcast input: its gradient sums the output gradient over the broadcast axes.
      rules.push_back(GradRule{.type = "Sum", .flops = n, .wrt = {i}});
    }
  }
  return op(name, "Add", {a, b}, {big.shape}, n, std::move(rules))[0];
}

Tensor GraphBuilder::mul(const std::string& name, const Tensor& a, const Tensor& b) {
  const Tensor& big = num_elements(a.shape) >= num_elements(b.shape) ? a : b;
  const double n = d(num_elements(big.shape));
  std::vector<GradRule> rules;
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = i == 0 ? a : b;
    // A broadcast operand's gradient is the product summed over the broadcast axes.
    rules.push_back(GradRule{.type = t.shape == big.shape ? "Mul" : "MulSum",
                             .flops = t.shape == big.shape ? n : 2 * n,
                             .wrt = {i},
                             .saved_inputs = {1 - i}});
  }
  return op(name, "Mul", {a, b}, {big.shape}, n, std::move(rules))[0];
}

Tensor GraphBuilder::concat(const std::string& name, const std::vector<Tensor>& xs, int axis) {
  Shape out = xs.at(0).shape;
  const auto ax = static_cast<std::size_t>(axis);
  out[ax] = 0;
  std::vector<GradRule> rules;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    out[ax] += xs[i].shape[ax];
    rules.push_back(GradRule{.type = "Slice", .flops = 0, .wrt = {static_cast<int>(i)}});
  }
  return op(name, "ConcatV2", xs, {out}, 0, std::move(rules))[0];
}

std::vector<Tensor> GraphBuilder::split(const std::string& name, const Tensor& x, int axis,
                                        int parts) {
  Shape part = x.shape;
  const auto ax = static_cast<std::size_t>(axis);
  assert(part[ax] % parts == 0);
  part[ax] /= parts;
  return op(name, "Split", {x}, std::vector<Shape>(static_cast<std::size_t>(parts), part), 0,
            {GradRule{.type = "ConcatV2", .flops = 0, .wrt = {0}}});
}

Tensor GraphBuilder::reshape(const std::string& name, const Tensor& x, Shape shape) {
  assert(num_elements(shape) == num_elements(x.shape));
  return op(name, "Reshape", {x}, {std::move(shape)}, 0,
            {GradRule{.type = "Reshape", .flops = 0, .wrt = {0}}})[0];
}

Tensor GraphBuilder::gather(const std::string& name, const Tensor& params, const Tensor& ids,
                            bool dense_grad) {
  Shape out = ids.shape;
  out.push_back(params.shape.at(1));
  // TensorFlow returns the gradient as IndexedSlices: values [ids..., E], not a dense [V, E].
  GradRule rule{
      .type = "GatherGrad", .flops = 0, .wrt = {0}, .saved_inputs = {1}, .out_shapes = {out}};
  if (!dense_grad) return op(name, "Gather", {params, ids}, {out}, 0, {std::move(rule)})[0];
  // PyTorch's look-up (vectorized_gather_kernel, index_select) reads the rows it writes and the
  // indices, not the table (the H200 kernel rig: [50257, 768] bf16 at 8192 indices in 8.8 us,
  // where reading the 77 MB table would take 18).
  rule.signature_extra = {params.shape};
  Tensor y = op(name, "Gather", {params, ids}, {out}, 0, {std::move(rule)})[0];
  auto& fwd = g_.ops[static_cast<std::size_t>(y.op)];
  fwd.bytes_read = sim::Bytes{tensor_bytes(y) + tensor_bytes(ids)};
  return y;
}

Tensor GraphBuilder::softmax(const std::string& name, const Tensor& x) {
  const double n = d(num_elements(x.shape));
  return op(name, "Softmax", {x}, {x.shape}, 5 * n,
            {GradRule{.type = "SoftmaxGrad", .flops = 3 * n, .wrt = {0}, .saved_outputs = {0}}})[0];
}

Tensor GraphBuilder::sparse_softmax_xent(const std::string& name, const Tensor& logits,
                                         const Tensor& labels) {
  const double n = d(num_elements(logits.shape));
  // Outputs: per-example loss and the backprop (softmax - onehot), as TensorFlow's kernel does.
  // Its gradient has its own type: PyTorch runs it as kernels of its own (a zero fill, nll_loss's
  // scatter, the softmax backward), not a Mul (the cost model's vocab_xent_kernel_time).
  const auto outs = op(name, "SparseSoftmaxCrossEntropyWithLogits", {logits, labels},
                       {{logits.shape[0]}, logits.shape}, 6 * n,
                       {GradRule{.type = "SparseSoftmaxCrossEntropyWithLogitsGrad",
                                 .flops = n,
                                 .wrt = {0},
                                 .saved_outputs = {1}}});
  return outs[0];
}

// Kernels an element of [N, V]: the softmax reads the logits and writes F32, the mean reads it;
// backward the mean's and the gather's gradients each write a full F32 tensor (mean_backward's
// expand-and-divide; gather's zero-fill then scatter), one add sums them, and the softmax's
// backward reads that and the log-probabilities and writes the logits' gradient in their type.
Tensor GraphBuilder::label_smoothed_nll(const std::string& name, const Tensor& logits,
                                        const Tensor& labels) {
  const double n = d(num_elements(logits.shape));
  const std::int64_t rows = logits.shape[0];
  const Tensor lp =
      op(name + "/log_softmax", "LogSoftmax", {logits}, {logits.shape}, 5 * n,
         {GradRule{.type = "LogSoftmaxGrad", .flops = 3 * n, .wrt = {0}, .saved_outputs = {0}}})[0];
  return op(name + "/smoothed_nll", "SmoothedNll", {lp, labels}, {{rows}}, n,
            {GradRule{.type = "RowMeanGrad", .flops = n, .wrt = {0}},
             GradRule{.type = "NllGatherGrad", .wrt = {0}, .saved_inputs = {1}}})[0];
}

Tensor GraphBuilder::reduce_mean(const std::string& name, const Tensor& x) {
  const double n = d(num_elements(x.shape));
  return op(name, "Mean", {x}, {Shape{}}, n,
            {GradRule{.type = "MeanGrad", .flops = n, .wrt = {0}}})[0];
}

Tensor GraphBuilder::add_n(const std::string& name, const std::vector<Tensor>& xs) {
  std::vector<GradRule> rules;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    rules.push_back(GradRule{.wrt = {static_cast<int>(i)}, .passthrough = true});
  }
  const double n = d(num_elements(xs.at(0).shape)) * d(static_cast<std::int64_t>(xs.size()) - 1);
  return op(name, "AddN", xs, {xs[0].shape}, n, std::move(rules))[0];
}

Tensor GraphBuilder::conv2d(const std::string& name, const Tensor& x, const Tensor& filter,
                            int stride, bool same) {
  assert(x.shape.size() == 4 && filter.shape.size() == 4 && filter.shape[2] == x.shape[3]);
  const std::int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], cin = x.shape[3];
  const std::int64_t kh = filter.shape[0], kw = filter.shape[1], cout = filter.shape[3];
  const std::int64_t ho = same ? (h + stride - 1) / stride : (h - kh) / stride + 1;
  const std::int64_t wo = same ? (w + stride - 1) / stride : (w - kw) / stride + 1;
  const double f = 2.0 * d(n) * d(ho) * d(wo) * d(cout) * d(kh) * d(kw) * d(cin);
  return op(
      name, "Conv2D", {x, filter}, {{n, ho, wo, cout}}, f,
      {GradRule{.type = "Conv2DBackpropInput", .flops = f, .wrt = {0}, .saved_inputs = {1}},
       GradRule{.type = "Conv2DBackpropFilter", .flops = f, .wrt = {1}, .saved_inputs = {0}}})[0];
}

Tensor GraphBuilder::batch_norm(const std::string& name, const Tensor& x, const Tensor& gamma,
                                const Tensor& beta) {
  const double n = d(num_elements(x.shape));
  const Shape c{x.shape.back()};
  // Outputs: y, batch mean, batch variance (the latter two saved for the gradient).
  const auto outs = op(name, "FusedBatchNorm", {x, gamma, beta}, {x.shape, c, c}, 5 * n,
                       {GradRule{.type = "FusedBatchNormGrad",
                                 .flops = 8 * n,
                                 .wrt = {0, 1, 2},
                                 .saved_inputs = {0, 1},
                                 .saved_outputs = {1, 2}}});
  return outs[0];
}

Tensor GraphBuilder::batch_norm_relu(const std::string& name, const Tensor& x, const Tensor& gamma,
                                     const Tensor& beta, const Tensor* addend) {
  const std::int64_t elems = num_elements(x.shape);
  const double n = d(elems);
  const Shape c{x.shape.back()};
  std::vector<Tensor> inputs{x, gamma, beta};
  std::vector<Shape> outs{x.shape, c, c};
  GradRule g{.type = "FusedBatchNormGrad", .flops = 9 * n, .wrt = {0, 1, 2}};
  if (addend != nullptr) {
    assert(addend->shape == x.shape);
    inputs.push_back(*addend);
    outs.push_back({(elems + 31) / 32});  // the ReLU's bitmask, in int32 words
    g.flops = 10 * n;
    g.wrt = {0, 1, 2, 3};
    g.saved_inputs = {0, 1};
    g.saved_outputs = {1, 2, 3};
  } else {
    // No mask: the backward recomputes y's sign from x and the statistics.
    g.saved_inputs = {0, 1, 2};
    g.saved_outputs = {1, 2};
  }
  // Forward: the batch norm's 5 FLOPs an element, the ReLU's 1 and the add's 1.
  const auto ys = op(name, "FusedBatchNorm", inputs, outs, (addend != nullptr ? 7 : 6) * n, {g});
  if (addend != nullptr) {
    sim::Op& o = g_.ops[static_cast<std::size_t>(ys[0].op)];
    sim::TensorOut& mask = o.outputs[3];
    o.bytes_written.v -= mask.bytes.v;
    mask.dtype = sim::Dtype::I32;  // mixed precision leaves it
    mask.bytes = sim::Bytes{num_elements(mask.shape) * sim::dtype_size(sim::Dtype::I32)};
    o.bytes_written.v += mask.bytes.v;
  }
  return ys[0];
}

Tensor GraphBuilder::layer_norm(const std::string& name, const Tensor& x, const Tensor& gamma,
                                const Tensor& beta) {
  const double n = d(num_elements(x.shape));
  Shape stats = x.shape;
  stats.back() = 1;
  const auto outs = op(name, "LayerNorm", {x, gamma, beta}, {x.shape, stats, stats}, 5 * n,
                       {GradRule{.type = "LayerNormGrad",
                                 .flops = 8 * n,
                                 .wrt = {0, 1, 2},
                                 .saved_inputs = {0, 1},
                                 .saved_outputs = {1, 2}}});
  return outs[0];
}

Tensor GraphBuilder::pool(const std::string& name, const std::string& type, const Tensor& x, int k,
                          int stride, bool same) {
  const std::int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  const std::int64_t ho = same ? (h + stride - 1) / stride : (h - k) / stride + 1;
  const std::int64_t wo = same ? (w + stride - 1) / stride : (w - k) / stride + 1;
  const Shape out{n, ho, wo, c};
  const double f = d(num_elements(out)) * k * k;
  GradRule g{.type = type + "Grad", .flops = f, .wrt = {0}};
  if (type == "MaxPool") {
    g.saved_inputs = {0};
    g.saved_outputs = {0};
  }
  return op(name, type, {x}, {out}, f, {g})[0];
}

void GraphBuilder::contribute(const Tensor& target, const Tensor& grad, const std::string& group,
                              Accumulation acc) {
  const auto key = std::make_pair(target.op, target.out);
  auto& list = grad_[key];
  if (list.empty() || acc == Accumulation::AddN) {
    list.push_back(grad);
    return;
  }
  // Chain: sum as soon as a contribution arrives, so one partial sum is live at a time.
  const int k = ++acc_count_[key];
  const auto& target_op = g_.ops[static_cast<std::size_t>(target.op)];
  sim::Op op;
  op.name = "gradients/" + target_op.name + "_" + std::to_string(target.out) + "/acc_" +
            std::to_string(k);
  op.type = "Add";
  op.layer = target_op.layer;
  op.phase = sim::Phase::Backward;
  op.group = group;
  // A dense gradient plus IndexedSlices is dense (a tied embedding): keep the larger shape.
  const Tensor& big = num_elements(list[0].shape) >= num_elements(grad.shape) ? list[0] : grad;
  op.flops = sim::Flops{d(num_elements(big.shape))};
  op.inputs = {{list[0].op, list[0].out}, {grad.op, grad.out}};
  op.outputs.push_back(
      {.bytes = sim::Bytes{tensor_bytes(big)}, .shape = big.shape, .dtype = big.dtype});
  list[0] = out_of(add(std::move(op)), 0);
}

std::optional<Tensor> GraphBuilder::gradient_of(const Tensor& t, Accumulation acc) {
  const auto key = std::make_pair(t.op, t.out);
  const auto it = grad_.find(key);
  if (it == grad_.end() || it->second.empty()) return std::nullopt;
  auto& list = it->second;
  if (list.size() == 1) return list[0];
  assert(acc == Accumulation::AddN);
  (void)acc;
  const auto& target_op = g_.ops[static_cast<std::size_t>(t.op)];
  sim::Op op;
  op.name = "gradients/" + target_op.name + "_" + std::to_string(t.out) + "/AddN";
  op.type = "AddN";
  op.layer = target_op.layer;
  op.phase = sim::Phase::Backward;
  // With the producer of the summed tensor (TensorFlow colocates the aggregation with it).
  op.group = target_op.group.empty() ? target_op.name : target_op.group;
  std::size_t big = 0;
  for (std::size_t i = 1; i < list.size(); ++i) {
    if (num_elements(list[i].shape) > num_elements(list[big].shape)) big = i;
  }
  op.flops =
      sim::Flops{d(num_elements(list[big].shape)) * d(static_cast<std::int64_t>(list.size()) - 1)};
  for (const auto& x : list) op.inputs.push_back({x.op, x.out});
  op.outputs.push_back({.bytes = sim::Bytes{tensor_bytes(list[big])},
                        .shape = list[big].shape,
                        .dtype = list[big].dtype});
  const Tensor sum = out_of(add(std::move(op)), 0);
  list.assign(1, sum);
  return sum;
}

void GraphBuilder::add_grad_reads(const Tensor& fwd, std::size_t rule,
                                  const std::vector<Tensor>& reads) {
  auto& rules = info_[static_cast<std::size_t>(fwd.op)].grads;
  assert(rule < rules.size());
  rules[rule].reads.insert(rules[rule].reads.end(), reads.begin(), reads.end());
}

void GraphBuilder::set_bytes_written(const Tensor& fwd, std::int64_t bytes) {
  g_.ops[static_cast<std::size_t>(fwd.op)].bytes_written = sim::Bytes{bytes};
}

void GraphBuilder::set_op_dtype(sim::OpId id, sim::Dtype dtype) {
  sim::Op& op = g_.ops[static_cast<std::size_t>(id)];
  op.dtype = dtype;
  if (op.signature) op.signature->dtype = dtype;
}

Tensor GraphBuilder::set_output_dtype(const Tensor& out, sim::Dtype dtype) {
  sim::Op& op = g_.ops[static_cast<std::size_t>(out.op)];
  sim::TensorOut& t = op.outputs[static_cast<std::size_t>(out.out)];
  const sim::Bytes bytes{num_elements(t.shape) * sim::dtype_size(dtype)};
  op.bytes_written = op.bytes_written - t.bytes + bytes;
  t.bytes = bytes;
  t.dtype = dtype;
  return out_of(out.op, out.out);
}

void GraphBuilder::set_dropout(const Tensor& fwd, double p) {
  g_.ops[static_cast<std::size_t>(fwd.op)].dropout = p;
}

// autograd's engine casts each gradient to its input's type (validate_outputs in
// torch/csrc/autograd/engine.cpp): an F32 sum's gradient into an F16 input (autocast's residual
// adds) is a cast kernel. Returns `g` itself when the types agree.
Tensor GraphBuilder::cast_gradient(const Tensor& g, const Tensor& target, const std::string& name,
                                   const std::string& layer, const std::string& group) {
  if (g.dtype == target.dtype || !float_type(g.dtype) || !float_type(target.dtype) ||
      g.shape != target.shape)
    return g;
  sim::Op cast;
  cast.name = name;
  cast.type = "Cast";
  cast.layer = layer;
  cast.phase = sim::Phase::Backward;
  cast.group = group;
  cast.dtype = target.dtype;
  cast.inputs.push_back({g.op, g.out});
  cast.outputs.push_back(
      {.bytes = sim::Bytes{num_elements(g.shape) * sim::dtype_size(target.dtype)},
       .shape = g.shape,
       .dtype = target.dtype});
  return out_of(add(std::move(cast)), 0);
}

// A dense variable's gradient from its accumulated look-up rows: PyTorch's
// embedding_dense_backward (aten/src/ATen/native/cuda/Embedding.cu) zero-fills a [V, E] tensor
// and adds the rows into it: the rows read, the table written once (priced as a copy of those
// bytes; the indices are left out). One op for the accumulated rows, where PyTorch runs one per
// look-up call and adds the tables (AccumulateGrad): for GNMT's shared table one more table write
// and add.
Tensor GraphBuilder::dense_of(sim::OpId variable, const Tensor& rows) {
  const sim::Op& vop = g_.ops[static_cast<std::size_t>(variable)];
  const Tensor var = out_of(variable, 0);
  sim::Op op;
  op.name = "gradients/" + vop.name + "/dense_backward";
  op.type = "Copy";
  op.layer = vop.layer;
  op.phase = sim::Phase::Backward;
  op.group = vop.group;
  op.inputs = {{rows.op, rows.out}};
  op.outputs.push_back(
      {.bytes = sim::Bytes{tensor_bytes(var)}, .shape = var.shape, .dtype = var.dtype});
  op.bytes_read = sim::Bytes{tensor_bytes(rows)};
  op.bytes_written = sim::Bytes{tensor_bytes(var)};
  return out_of(add(std::move(op)), 0);
}

void GraphBuilder::train(const Tensor& loss, Optimizer opt, Accumulation acc) {
  assert(!trained_);
  trained_ = true;
  const sim::OpId last = loss.op;
  for (sim::OpId f = last; f >= 0; --f) {
    const auto fi = static_cast<std::size_t>(f);
    if (!info_[fi].needs_grad || info_[fi].grads.empty()) continue;
    // Copies: adding ops below may reallocate g_.ops.
    const std::string fname = g_.ops[fi].name;
    const std::string fgroup = g_.ops[fi].group;
    const std::string flayer = g_.ops[fi].layer;
    const double fdropout = g_.ops[fi].dropout;
    const std::vector<sim::TensorRef> fin = g_.ops[fi].inputs;
    const std::size_t nout = g_.ops[fi].outputs.size();
    std::vector<std::optional<Tensor>> dy(nout);
    bool any = f == last;
    for (std::size_t o = 0; o < nout; ++o) {
      dy[o] = gradient_of(out_of(f, static_cast<int>(o)), acc);
      any = any || dy[o].has_value();
    }
    if (!any) continue;
    const std::vector<GradRule> rules = info_[fi].grads;
    for (std::size_t r = 0; r < rules.size(); ++r) {
      const GradRule& rule = rules[r];
      std::vector<int> wanted;
      for (const int i : rule.wrt) {
        const auto& ref = fin[static_cast<std::size_t>(i)];
        if (info_[static_cast<std::size_t>(ref.op)].needs_grad) wanted.push_back(i);
      }
      if (wanted.empty()) continue;
      if (rule.passthrough) {
        if (!dy[0]) continue;
        for (const int i : wanted) {
          const auto& ref = fin[static_cast<std::size_t>(i)];
          const Tensor target = out_of(ref.op, ref.output);
          const Tensor g = cast_gradient(*dy[0], target,
                                         "gradients/" + fname + "_grad/Cast_" + std::to_string(i),
                                         flayer, fgroup);
          contribute(target, g, fgroup, acc);
        }
        continue;
      }
      sim::Op op;
      op.name = "gradients/" + fname + "_grad/" + rule.type +
                (rules.size() > 1 ? "_" + std::to_string(r) : std::string{});
      op.type = rule.type;
      op.layer = flayer;
      op.phase = sim::Phase::Backward;
      op.group = fgroup;
      op.flops = sim::Flops{rule.flops};
      op.dropout = fdropout;  // a fused kernel's backward regenerates its forward's mask
      for (const auto& t : dy) {
        if (t) op.inputs.push_back({t->op, t->out});
      }
      for (const int i : rule.saved_inputs) op.inputs.push_back(fin[static_cast<std::size_t>(i)]);
      for (const int o : rule.saved_outputs) op.inputs.push_back({f, o});
      for (const Tensor& t : rule.reads) op.inputs.push_back({t.op, t.out});
      std::vector<Tensor> targets;
      for (std::size_t w = 0; w < rule.wrt.size(); ++w) {
        const int i = rule.wrt[w];
        if (std::find(wanted.begin(), wanted.end(), i) == wanted.end()) continue;
        const auto& ref = fin[static_cast<std::size_t>(i)];
        const Tensor target = out_of(ref.op, ref.output);
        const Shape s = w < rule.out_shapes.size() ? rule.out_shapes[w] : target.shape;
        op.outputs.push_back({.bytes = sim::Bytes{num_elements(s) * sim::dtype_size(target.dtype)},
                              .shape = s,
                              .dtype = target.dtype});
        targets.push_back(target);
      }
      const sim::OpId gid = add(std::move(op));
      if (!rule.signature_extra.empty())
        if (auto& sig = g_.ops[static_cast<std::size_t>(gid)].signature)
          sig->input_shapes.insert(sig->input_shapes.end(), rule.signature_extra.begin(),
                                   rule.signature_extra.end());
      for (std::size_t k = 0; k < targets.size(); ++k) {
        contribute(targets[k], out_of(gid, static_cast<int>(k)), fgroup, acc);
      }
    }
  }
  const int slots = optimizer_slots(opt);
  for (const sim::OpId v : variables_) {
    const Tensor var = out_of(v, 0);
    auto g = gradient_of(var, acc);
    if (!g) continue;
    if (g->shape != var.shape && dense_grad_vars_.count(v)) g = dense_of(v, *g);
    const auto& vop = g_.ops[static_cast<std::size_t>(v)];
    const bool sparse = g->shape != var.shape;
    const std::int64_t bytes = tensor_bytes(var);
    const double elems = d(num_elements(g->shape));
    sim::Op op;
    op.name = "update/" + vop.name;
    op.type = update_type(opt, sparse);
    op.layer = vop.layer;
    op.phase = sim::Phase::Update;
    op.group = vop.group;
    op.flops = sim::Flops{elems * update_flops_per_elem(opt)};
    op.inputs = {{v, 0}, {g->op, g->out}};
    op.persistent = sim::Bytes{bytes * slots};
    const sim::OpId u = add(std::move(op));
    // Kernel traffic: the touched rows of the parameter and its slots, read and written.
    const std::int64_t touched = tensor_bytes(*g);
    g_.ops[static_cast<std::size_t>(u)].bytes_read = sim::Bytes{touched * (2 + slots)};
    g_.ops[static_cast<std::size_t>(u)].bytes_written = sim::Bytes{touched * (1 + slots)};
  }
}

sim::Graph GraphBuilder::finish(std::map<std::string, std::string> metadata) {
  g_.metadata = std::move(metadata);
  // The unit F32 convolutions and matmuls run on follows the framework's defaults (PyTorch's:
  // cuDNN convolutions on TF32 tensor cores, cuBLAS matmuls in F32; docs/cost-model.md) unless
  // the builder named another mode.
  const auto mode =
      sim::MathMode::parse(g_.metadata.count("math_mode") ? g_.metadata["math_mode"] : "torch");
  sim::apply_math_mode(g_, mode.value_or(sim::MathMode{}));
  // A builder that states its convolutions' memory format (the ONNX import: NCHW) marks them.
  if (g_.metadata.count("layout"))
    if (const auto l = sim::parse_layout(g_.metadata["layout"])) sim::apply_layout(g_, *l);
  g_.finalize("<builder " + g_.name + ">");
  return std::move(g_);
}

}  // namespace placesim::models

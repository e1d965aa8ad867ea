// ONNX ModelProto -> placesim graph. Shapes come from ONNX shape inference after the data inputs'
// batch dimension is fixed; each node becomes one op (its ONNX name kept, its scope path as the
// layer), with FLOPs and bytes from the shapes; the backward and update ops come from the same
// GraphBuilder the built-in workloads use.
#include "models/onnx_import.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <set>

#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::models {

namespace {

struct Info {
  Shape shape;
  sim::Dtype dtype = sim::Dtype::F32;
  bool known = false;
};

sim::Dtype from_onnx(int t) {
  switch (t) {
    case onnx::TensorProto::DOUBLE:
      return sim::Dtype::F64;
    case onnx::TensorProto::FLOAT16:
      return sim::Dtype::F16;
    case onnx::TensorProto::BFLOAT16:
      return sim::Dtype::BF16;
    case onnx::TensorProto::INT64:
      return sim::Dtype::I64;
    case onnx::TensorProto::INT32:
      return sim::Dtype::I32;
    case onnx::TensorProto::INT8:
      return sim::Dtype::I8;
    case onnx::TensorProto::UINT8:
      return sim::Dtype::U8;
    case onnx::TensorProto::BOOL:
      return sim::Dtype::Bool;
    default:
      return sim::Dtype::F32;
  }
}

bool is_float(sim::Dtype d) {
  return d == sim::Dtype::F32 || d == sim::Dtype::F16 || d == sim::Dtype::BF16 ||
         d == sim::Dtype::F64;
}

Info info_of(const onnx::TypeProto& t) {
  Info i;
  if (!t.has_tensor_type()) return i;
  i.dtype = from_onnx(t.tensor_type().elem_type());
  if (!t.tensor_type().has_shape()) return i;
  i.known = true;
  for (const auto& d : t.tensor_type().shape().dim()) {
    // An unresolved symbolic dimension counts as 1 (the batch of the data inputs is fixed first).
    i.shape.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value() : 1);
    if (!d.has_dim_value()) i.known = false;
  }
  return i;
}

std::vector<std::int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t def) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return def;
}

double elems(const Shape& s) {
  return static_cast<double>(num_elements(s));
}

// FLOPs per output element of elementwise ops (exp/log/div count a few; see docs/workloads.md).
const std::map<std::string, double, std::less<>> kUnary = {
    {"Relu", 1},        {"LeakyRelu", 2},  {"PRelu", 2}, {"Sigmoid", 4}, {"Tanh", 4},
    {"HardSigmoid", 3}, {"HardSwish", 4},  {"Clip", 2},  {"Elu", 4},     {"Selu", 4},
    {"Celu", 4},        {"Gelu", 8},       {"Erf", 8},   {"Exp", 4},     {"Log", 4},
    {"Sqrt", 2},        {"Reciprocal", 1}, {"Neg", 1},   {"Abs", 1},     {"Softplus", 4},
    {"Softsign", 3},    {"Mish", 8},       {"Sin", 4},   {"Cos", 4},     {"ThresholdedRelu", 1},
    {"Silu", 5}};  // Silu: the fused x * Sigmoid(x) (Importer::find_silu), sigmoid 4 + multiply 1
const std::set<std::string, std::less<>> kBinary = {"Add", "Sub", "Mul",  "Div", "Pow",
                                                    "Max", "Min", "Mean", "Sum", "Where"};
// No gradient flows through these (integer or boolean results, shape computations).
const std::set<std::string, std::less<>> kNonDiff = {"Shape",
                                                     "Size",
                                                     "Constant",
                                                     "ConstantOfShape",
                                                     "Range",
                                                     "NonZero",
                                                     "Equal",
                                                     "Greater",
                                                     "Less",
                                                     "GreaterOrEqual",
                                                     "LessOrEqual",
                                                     "Not",
                                                     "And",
                                                     "Or",
                                                     "Xor",
                                                     "ArgMax",
                                                     "ArgMin",
                                                     "Floor",
                                                     "Ceil",
                                                     "Round",
                                                     "Sign",
                                                     "IsNaN",
                                                     "IsInf",
                                                     "EyeLike",
                                                     "RandomNormal",
                                                     "RandomUniform",
                                                     "RandomNormalLike",
                                                     "RandomUniformLike",
                                                     "Bernoulli",
                                                     "OneHot"};
// Pure data movement: 0 FLOPs, a same-sized gradient op.
const std::set<std::string, std::less<>> kMove = {
    "Reshape",  "Flatten",      "Squeeze",      "Unsqueeze", "Transpose", "Slice",
    "Pad",      "Expand",       "Tile",         "Cast",      "Gather",    "GatherElements",
    "GatherND", "DepthToSpace", "SpaceToDepth", "Identity",  "Resize",    "Upsample",
    "CastLike"};
// "/layer1/layer1.0/conv1/Conv" -> "layer1/layer1.0/conv1"; "fc.weight" -> "fc".
std::string layer_of(const std::string& name, char sep) {
  std::string s = name;
  while (!s.empty() && s.front() == '/') s.erase(s.begin());
  const auto cut = s.rfind(sep);
  s = cut == std::string::npos ? std::string{} : s.substr(0, cut);
  if (sep == '.') std::replace(s.begin(), s.end(), '.', '/');
  return s;
}

// Dimensions and element counts a model may declare: a PiB tensor at most (docs/formats.md), so
// that bytes and FLOPs derived from shapes stay far inside int64 and the graph format's limits.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr double kMaxTensorBytes = 1125899906842624.0;  // 1 PiB

void check_shape(const Shape& shape, sim::Dtype dtype, const std::string& path,
                 const std::string& what) {
  double bytes = static_cast<double>(sim::dtype_size(dtype));
  std::string text;
  for (const std::int64_t d : shape) {
    text += (text.empty() ? "" : ",") + std::to_string(d);
    bytes *= static_cast<double>(d);
  }
  for (const std::int64_t d : shape) {
    if (d < 0 || d > kMaxDim || bytes > kMaxTensorBytes || shape.size() > 64)
      throw sim::InputError(
          path, what,
          "a tensor of at most 64 dimensions up to 2^40 and at most 1 PiB, got shape [" +
              text.substr(0, 200) + "]");
  }
}

// Attributes ONNX's own shape inference divides by or loops over: checked before it runs on an
// untrusted model (strides [2, 0] made it divide by zero: SIGFPE).
void check_attributes(const onnx::GraphProto& g, const std::string& path) {
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& n = g.node(k);
    for (const auto& a : n.attribute()) {
      const std::string& name = a.name();
      const bool positive = name == "strides" || name == "dilations" || name == "kernel_shape" ||
                            name == "group" || name == "blocksize";
      const bool non_negative =
          name == "pads" || name == "output_padding" || name == "output_shape";
      if (!positive && !non_negative) continue;
      std::vector<std::int64_t> values(a.ints().begin(), a.ints().end());
      if (a.has_i()) values.push_back(a.i());
      for (const std::int64_t v : values) {
        if (v < (positive ? 1 : 0) || v > kMaxDim)
          throw sim::InputError(path,
                                "graph.node[" + std::to_string(k) + "] (\"" +
                                    sim::printable(n.name()) + "\")." + name,
                                std::string(positive ? "positive" : "non-negative") +
                                    " values up to 2^40, got " + std::to_string(v));
      }
    }
  }
}

// A concatenation's input gradients as PyTorch's autograd runs them: views of the output's
// gradient (a `Narrow`, no kernel) that the gradient sum (the builder's `Add` chain: aten::add,
// then aten::add_) reads in place, through ATen's generic elementwise_kernel because a view into
// a larger tensor is not contiguous (Op::strided_operand). The H200 DenseNet-121 trace
// (tests/data/calibration/h200_densenet121_amp_nhwc_b256_train.json.gz) has no kernel for its
// 597 cat gradients and runs the 535 sums in `elementwise_kernel<128, 4>` at 1.0-1.6 TB/s, where
// its contiguous adds stream 4.0-4.4 (docs/cost-model.md, "Concatenation gradients"). A gradient
// that another op reads (a convolution's or batch norm's backward, which take a contiguous
// gradient: `grad_output.contiguous()`; an embedding's dense backward, `grad_.contiguous()` in
// embedding_dense_backward_cuda) stays a copy, a `Slice`, which reads only the slice it writes:
// a narrow along the concatenated dimension is a contiguous run per outer index (NCF's 128 F32
// columns of a [N, 256] gradient: 512 bytes a row; a channels-last 32-channel F16 slice: 64
// bytes a pixel), so whole 32-byte sectors of the slice, not the whole gradient
// (docs/cost-model.md, "Concatenation gradients").
// Readers that take a strided view as it is: TensorIterator kernels (the gradient sum's
// aten::add; ReLU's threshold_backward, aten/src/ATen/native/Activation.cpp; dropout's
// _masked_scale, a TensorIterator gpu_kernel over (grad, mask) in native/cuda/Dropout.cu; mul's
// backward, aten::mul), which run ATen's generic elementwise_kernel on a non-contiguous operand.
bool strided_reader(const std::string& type) {
  return type == "Add" || type == "ReluGrad" || type == "DropoutGrad" || type == "MulGrad";
}

void narrow_concat_gradients(sim::Graph& g) {
  std::vector<std::vector<sim::OpId>> readers(g.ops.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    for (const auto& in : g.ops[i].inputs)
      readers[static_cast<std::size_t>(in.op)].push_back(static_cast<sim::OpId>(i));
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    sim::Op& op = g.ops[i];
    if (op.type != "Narrow") continue;
    const auto& r = readers[i];
    const bool summed = !r.empty() && std::all_of(r.begin(), r.end(), [&](sim::OpId k) {
      return strided_reader(g.ops[static_cast<std::size_t>(k)].type);
    });
    if (!summed) {
      op.type = "Slice";
      if (op.signature) op.signature->op_type = op.type;
      sim::Bytes written{0};
      for (const auto& out : op.outputs) written.v += out.bytes.v;
      op.bytes_read = written;
      op.bytes_written = written;
      continue;
    }
    for (sim::OpId k : r) g.ops[static_cast<std::size_t>(k)].strided_operand = true;
  }
}

sim::Graph import_onnx_unchecked(const std::string& path, const OnnxImportOptions& options);

}  // namespace

sim::Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  try {
    return import_onnx_unchecked(path, options);
  } catch (const sim::InputError& e) {
    // The builder's own limits (tensor elements, FLOPs per op) speak of --graph-opt or the
    // builder; here the model file is what exceeds them.
    const std::string what = e.what();
    if (what.rfind("--graph-opt", 0) != 0 && what.rfind("<builder", 0) != 0) throw;
    throw sim::InputError(path, "", "a model within the graph format's limits (" + what + ")");
  }
}

namespace {

// ---------------------------------------------------------------------------------------------
// Reading and preparing the model.

// The model file, parsed, with the attributes and declared shapes ONNX's shape inference would
// trust checked first.
onnx::ModelProto load_model(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw sim::InputError(path, "", "a readable ONNX model file");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&f) || !model.has_graph()) {
    throw sim::InputError(path, "", "an ONNX ModelProto (protobuf), could not parse the file");
  }
  const onnx::GraphProto& g = model.graph();
  check_attributes(g, path);
  // Declared dimensions, before ONNX's shape inference multiplies them (INT64_MAX overflowed).
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& v : *list)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        for (const auto& d : v.type().tensor_type().shape().dim())
          if (d.has_dim_value() && (d.dim_value() < 0 || d.dim_value() > kMaxDim))
            throw sim::InputError(path, "value \"" + sim::printable(v.name()) + "\"",
                                  "a tensor of at most 64 dimensions up to 2^40 and at most 1 PiB, "
                                  "got a dimension of " +
                                      std::to_string(d.dim_value()));
  for (const auto& t : g.initializer()) {
    const Shape dims(t.dims().begin(), t.dims().end());
    check_shape(dims, from_onnx(t.data_type()), path,
                "graph.initializer \"" + sim::printable(t.name()) + "\"");
  }
  return model;
}

// How each graph input / initializer is used: by which op types, at which input positions.
class Uses {
 public:
  explicit Uses(const onnx::GraphProto& g) {
    for (const auto& n : g.node()) {
      for (int i = 0; i < n.input_size(); ++i) uses_[n.input(i)].insert({n.op_type(), i});
    }
  }
  [[nodiscard]] bool only_nonzero_positions(const std::string& name) const {
    const auto it = uses_.find(name);
    if (it == uses_.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(),
                       [](const auto& u) { return u.second > 0; });
  }
  // An initializer is a weight (export_params=True puts every parameter there) when some op reads
  // it as data: not only through a slot that takes a shape, index, exponent, ratio or bound.
  [[nodiscard]] bool read_as_data(const std::string& name) const {
    const auto it = uses_.find(name);
    if (it == uses_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const auto& u) { return data_slot(u.first, u.second); });
  }
  [[nodiscard]] bool bn_statistic(const std::string& name) const {
    const auto it = uses_.find(name);
    if (it == uses_.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(), [](const auto& u) {
      return u.first == "BatchNormalization" && u.second >= 3;
    });
  }

 private:
  static bool data_slot(const std::string& op, int pos) {
    static const std::set<std::string, std::less<>> kFirstOnly = {
        "Reshape", "Expand",         "Tile",      "Pow",     "Slice",   "Pad",
        "Resize",  "Upsample",       "Clip",      "Dropout", "Squeeze", "Unsqueeze",
        "Gather",  "GatherElements", "ReduceSum", "TopK",    "Split",   "CastLike"};
    static const std::set<std::string, std::less<>> kNone = {"Shape", "Size", "ConstantOfShape",
                                                             "Range"};
    if (kNone.contains(op)) return false;
    return !kFirstOnly.contains(op) || pos == 0;
  }
  std::map<std::string, std::set<std::pair<std::string, int>>> uses_;
};

// Data inputs. torch.onnx.export lists the model's own inputs first and, with
// export_params=False, every weight after them as a graph input, so: the first input; any
// integer input (ids, masks: never trainable); and float inputs before the first weight-only
// input (one that never feeds an op's first slot) that carry a symbolic (batch) dimension.
std::set<std::string> find_data_inputs(const onnx::GraphProto& g,
                                       const std::set<std::string>& initializers,
                                       const Uses& uses) {
  std::set<std::string> data_inputs;
  bool leading = true;
  for (int i = 0; i < g.input_size(); ++i) {
    const onnx::ValueInfoProto& in = g.input(i);
    if (initializers.contains(in.name())) continue;
    if (i > 0 && uses.only_nonzero_positions(in.name())) leading = false;
    const Info ii = info_of(in.type());
    bool symbolic = false;
    if (in.type().has_tensor_type() && in.type().tensor_type().has_shape()) {
      for (const auto& d : in.type().tensor_type().shape().dim())
        symbolic = symbolic || !d.has_dim_value();
    }
    if (i == 0 || !is_float(ii.dtype) || (leading && symbolic)) data_inputs.insert(in.name());
  }
  return data_inputs;
}

// Fix the batch dimension of the data inputs, drop stale intermediate shapes, infer.
void infer_shapes(onnx::ModelProto& model, const std::set<std::string>& data_inputs,
                  const OnnxImportOptions& options, const std::string& path) {
  onnx::GraphProto& g = *model.mutable_graph();
  for (auto& in : *g.mutable_input()) {
    if (!data_inputs.contains(in.name()) || !in.type().has_tensor_type()) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0) continue;
    auto* d0 = shape->mutable_dim(0);
    if (options.batch > 0) {
      d0->set_dim_value(options.batch);
    } else if (!d0->has_dim_value()) {
      d0->set_dim_value(1);
    }
  }
  if (options.batch > 0) {
    g.clear_value_info();
    for (auto& out : *g.mutable_output()) {
      if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
  try {
    // Data propagation resolves Reshape targets computed by Shape/Gather/Concat chains (the way
    // torch exports view(-1, ...) in attention blocks).
    const onnx::ShapeInferenceOptions opts(false, 0, true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    throw sim::InputError(path, "shape inference",
                          std::string("a model ONNX can infer shapes for, got: ") + e.what());
  }
}

// Shape and dtype of every named value after inference (each checked against the limits).
std::map<std::string, Info> collect_info(const onnx::GraphProto& g, const std::string& path) {
  std::map<std::string, Info> info;
  auto add_info = [&](const onnx::ValueInfoProto& v) {
    Info i = info_of(v.type());
    check_shape(i.shape, i.dtype, path, "value \"" + sim::printable(v.name()) + "\"");
    info[v.name()] = std::move(i);
  };
  for (const auto& v : g.input()) add_info(v);
  for (const auto& v : g.value_info()) add_info(v);
  for (const auto& v : g.output()) add_info(v);
  for (const auto& t : g.initializer()) {
    Info i{.shape = {t.dims().begin(), t.dims().end()},
           .dtype = from_onnx(t.data_type()),
           .known = true};
    info[t.name()] = i;
  }
  return info;
}

// ---------------------------------------------------------------------------------------------
// Op handlers: FLOPs of the forward op and the gradient rules, one handler per op family, found
// through a table from op type to handler.

// One ONNX node as the handlers see it: its builder inputs (pos[j] = ONNX input index of
// ins[j]), output shapes, sizes, and what the handler decides (flops, rules).
struct Node {
  const onnx::NodeProto& n;
  const std::string& type;
  const std::vector<Tensor>& ins;
  const std::vector<int>& pos;
  const std::vector<Shape>& outs;
  const sim::Graph& graph;  // ops built so far (a Gather's table: a variable or not)
  Shape y;                  // first output's shape
  double ny = 0;            // its elements
  double nx = 0;            // first input's elements
  double flops = 0;
  std::vector<GradRule> rules;
  bool unknown = false;  // no handler: counted as one FLOP per output element

  // Builder input index of ONNX input `onnx_index`, or -1 when absent.
  [[nodiscard]] int at(int onnx_index) const {
    for (std::size_t j = 0; j < pos.size(); ++j) {
      if (pos[j] == onnx_index) return static_cast<int>(j);
    }
    return -1;
  }
  [[nodiscard]] bool differentiable(int j) const {
    return j >= 0 && static_cast<std::size_t>(j) < ins.size() &&
           is_float(ins[static_cast<std::size_t>(j)].dtype);
  }
  // A gradient op for the differentiable inputs among `wrt`, reading `saved_in` (absent ones
  // dropped) and forward outputs `saved_out`.
  void grad(std::string gtype, double gflops, const std::vector<int>& wrt,
            const std::vector<int>& saved_in, std::vector<int> saved_out = {}) {
    std::vector<int> w;
    for (const int j : wrt) {
      if (differentiable(j)) w.push_back(j);
    }
    if (w.empty()) return;
    std::vector<int> s;
    for (const int j : saved_in) {
      if (j >= 0) s.push_back(j);
    }
    rules.push_back(GradRule{.type = std::move(gtype),
                             .flops = gflops,
                             .wrt = w,
                             .saved_inputs = s,
                             .saved_outputs = std::move(saved_out)});
  }
};

using Handler = void (*)(Node&, const std::string& path, const std::string& node_key);

void handle_conv(Node& x, const std::string& path, const std::string& node_key) {
  const Shape& w = x.ins.at(1).shape;
  if (w.size() < 3)
    throw sim::InputError(
        path, node_key,
        "a weight of shape [M, C/groups, k...], got " + std::to_string(w.size()) + " dimensions");
  double k = 1;
  for (std::size_t d = 2; d < w.size(); ++d) k *= static_cast<double>(w[d]);
  // Conv: each output element sums (C/groups) x kernel products; ConvTranspose scatters each
  // input element over (M/groups) x kernel outputs.
  x.flops = x.type == "Conv" ? 2 * x.ny * static_cast<double>(w[1]) * k
                             : 2 * x.nx * static_cast<double>(w[1]) * k;
  if (x.at(2) >= 0) x.flops += x.ny;
  x.grad(x.type + "BackpropInput", x.flops, {x.at(0)}, {x.at(1)});
  x.grad(x.type + "BackpropFilter", x.flops, {x.at(1)}, {x.at(0)});
  x.grad("ReduceSum", x.ny, {x.at(2)}, {});
}

void handle_matmul(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  const Shape& a = x.ins.at(0).shape;
  const bool trans_a = x.type == "Gemm" && attr_int(x.n, "transA", 0) != 0;
  const double kdim = a.empty() ? 1.0 : static_cast<double>(trans_a ? a.front() : a.back());
  // A MatMul with a third input is one the import gave its bias as the GEMM's epilogue
  // (bias_epilogue; ONNX's MatMul has two): priced as GraphBuilder::matmul_bias, the bias added as
  // the tile is stored, its gradient a separate column sum.
  const bool epilogue = x.type == "MatMul" && x.at(2) >= 0;
  x.flops = 2 * x.ny * kdim + (x.at(2) >= 0 && !epilogue ? x.ny : 0);
  x.grad(x.type, 2 * x.ny * kdim, {x.at(0)}, {x.at(1)});
  x.grad(x.type, 2 * x.ny * kdim, {x.at(1)}, {x.at(0)});
  x.grad(epilogue ? "BiasAddGrad" : "ReduceSum", x.ny, {x.at(2)}, {});
}

void handle_norm(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.flops = 5 * x.nx;
  x.grad(x.type + "Grad", 8 * x.nx, {x.at(0), x.at(1), x.at(2)}, {x.at(0), x.at(1)});
}

void handle_pool(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  double k = 1;
  for (const auto v : attr_ints(x.n, "kernel_shape")) k *= static_cast<double>(v);
  x.flops = x.ny * k;
  if (x.type == "MaxPool") {
    x.grad("MaxPoolGrad", x.flops, {x.at(0)}, {x.at(0)}, {0});
  } else {
    x.grad(x.type + "Grad", x.flops, {x.at(0)}, {});
  }
}

void handle_global_pool(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.flops = x.nx;
  x.grad(x.type + "Grad", x.nx, {x.at(0)},
         x.type == "GlobalMaxPool" ? std::vector<int>{x.at(0)} : std::vector<int>{});
}

void handle_softmax(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.flops = 5 * x.nx;
  x.rules.push_back(
      GradRule{.type = x.type + "Grad", .flops = 3 * x.nx, .wrt = {0}, .saved_outputs = {0}});
  if (!x.differentiable(0)) x.rules.clear();
}

void handle_unary(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  const double per = kUnary.find(x.type)->second;
  x.flops = x.ny * per;
  x.grad(x.type + "Grad", x.ny * std::max(1.0, per), {x.at(0)}, {x.at(0)});
  if (x.type == "PRelu") x.grad("ReduceSum", 2 * x.ny, {x.at(1)}, {x.at(0)});
}

void handle_binary(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  const std::string& type = x.type;
  const int n_in = static_cast<int>(x.ins.size());
  x.flops = x.ny * std::max<double>(1.0, static_cast<double>(x.ins.size()) - 1);
  for (int j = 0; j < n_in; ++j) {
    const bool same = x.ins[static_cast<std::size_t>(j)].shape == x.y;
    if ((type == "Add" || type == "Sum") && same) {
      if (x.differentiable(j)) x.rules.push_back(GradRule{.wrt = {j}, .passthrough = true});
    } else if (type == "Add" || type == "Sub" || type == "Sum") {
      x.grad(same ? "Neg" : "ReduceSum", x.ny, {j}, {});
    } else if (type == "Where") {
      if (j > 0) x.grad("Where", x.ny, {j}, {0});
    } else {
      std::vector<int> others;
      for (int o = 0; o < n_in; ++o) {
        if (o != j) others.push_back(o);
      }
      x.grad(type + "Grad", x.ny * (same ? 1.0 : 2.0), {j}, others);
    }
  }
}

// PyTorch's cat backward returns views: each input's gradient is grad.narrow(dim, offset, size)
// of the output's (derivatives.yaml, cat_tensors_backward). `Narrow` (a view, no kernel) where
// every reader sums it (narrow_concat_gradients); otherwise the reader's copy as a Slice.
void handle_concat(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  for (int j = 0; j < static_cast<int>(x.ins.size()); ++j) x.grad("Narrow", 0, {j}, {});
}

void handle_split(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.grad("Concat", 0, {x.at(0)}, {});
}

void handle_dropout(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.flops = 2 * x.nx;  // draw a mask and scale
  if (x.n.output_size() > 1) {
    x.grad("DropoutGrad", x.nx, {x.at(0)}, {}, {1});
  } else {
    x.grad("DropoutGrad", x.nx, {x.at(0)}, {});
  }
}

void handle_identity(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  if (x.differentiable(0)) x.rules.push_back(GradRule{.wrt = {0}, .passthrough = true});
}

void handle_move(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  const std::string& type = x.type;
  x.flops = (type == "Resize" || type == "Upsample") ? x.ny * 4 : 0;
  x.grad(type + "Grad", type == "Expand" || type == "Tile" ? x.ny : x.flops, {x.at(0)}, {});
}

void handle_gather(Node& x, const std::string& path, const std::string& node_key) {
  if (x.at(0) >= 0 && x.graph.ops[static_cast<std::size_t>(x.ins[0].op)].type == "VariableV2") {
    // An embedding look-up: IndexedSlices gradient of the gathered rows. Its signature names the
    // table: an exported PyTorch model looks a whole sequence up at once and runs one dense
    // embedding backward (docs/cost-model.md, "Embedding gradients").
    const Shape& table = x.ins[0].shape;
    x.rules.push_back(GradRule{.type = "GatherGrad",
                               .wrt = {0},
                               .saved_inputs = {x.at(1)},
                               .out_shapes = {x.y},
                               .signature_extra = {table}});
    return;
  }
  handle_move(x, path, node_key);
}

void handle_reduce(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.flops = x.nx;
  x.grad("Expand", x.nx, {x.at(0)},
         x.type == "ReduceMax" || x.type == "ReduceMin" ? std::vector<int>{x.at(0)}
                                                        : std::vector<int>{});
}

void handle_nondiff(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.flops = 0;
}

// Unknown op: one FLOP per output element, and a gradient op of the same size per float input.
void handle_unknown(Node& x, const std::string& /*path*/, const std::string& /*node_key*/) {
  x.unknown = true;
  x.flops = 0;
  for (const auto& s : x.outs) x.flops += elems(s);
  std::vector<int> all(x.ins.size());
  for (std::size_t j = 0; j < x.ins.size(); ++j) all[j] = static_cast<int>(j);
  x.grad(x.type + "Grad", x.flops, all, all);
}

// Op type -> handler. Types in no table: Reduce* reduce, the rest are unknown.
const std::map<std::string, Handler, std::less<>>& handlers() {
  static const std::map<std::string, Handler, std::less<>> kTable = [] {
    std::map<std::string, Handler, std::less<>> t;
    for (const auto& s : kNonDiff) t[s] = handle_nondiff;
    for (const auto& s : kMove) t[s] = handle_move;
    for (const auto& s : kBinary) t[s] = handle_binary;
    for (const auto& kv : kUnary) t[kv.first] = handle_unary;
    for (const char* s : {"Conv", "ConvTranspose"}) t[s] = handle_conv;
    for (const char* s : {"Gemm", "MatMul"}) t[s] = handle_matmul;
    for (const char* s : {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
                          "GroupNormalization"})
      t[s] = handle_norm;
    for (const char* s : {"MaxPool", "AveragePool", "LpPool"}) t[s] = handle_pool;
    for (const char* s : {"GlobalAveragePool", "GlobalMaxPool"}) t[s] = handle_global_pool;
    for (const char* s : {"Softmax", "LogSoftmax"}) t[s] = handle_softmax;
    t["Concat"] = handle_concat;
    t["Split"] = handle_split;
    t["Dropout"] = handle_dropout;
    t["Identity"] = handle_identity;
    t["Gather"] = handle_gather;
    return t;
  }();
  return kTable;
}

Handler handler_of(const std::string& type) {
  const auto& table = handlers();
  if (const auto it = table.find(type); it != table.end()) return it->second;
  if (type.rfind("Reduce", 0) == 0) return handle_reduce;
  return handle_unknown;
}

// ---------------------------------------------------------------------------------------------
// Building the graph.

class Importer {
 public:
  Importer(const std::string& path, const OnnxImportOptions& options, const onnx::GraphProto& g)
      : path_(path), options_(options), g_(g), uses_(g), b_(stem_of(path)) {
    for (const auto& t : g.initializer()) initializers_.insert(t.name());
    data_inputs_ = find_data_inputs(g, initializers_, uses_);
    b_.prefix_names(false);
    find_silu();
    find_gelu();
    find_linear();
    find_strided_bmm();
    find_attention();
    find_qkv_views();
  }
  [[nodiscard]] const std::set<std::string>& data_inputs() const { return data_inputs_; }

  // After shape inference: parameters, constants, one op per node, the loss and training ops.
  sim::Graph build(const onnx::ModelProto& model) {
    info_ = collect_info(g_, path_);
    for (const auto& in : g_.input()) add_value(in.name(), !initializers_.contains(in.name()));
    for (const auto& t : g_.initializer()) {
      if (!tensors_.contains(t.name())) add_value(t.name(), false);
    }
    for (int k = 0; k < g_.node_size(); ++k) add_node(k, g_.node(k));
    if (options_.training) add_loss();
    if (options_.autocast) type_ops_as_their_outputs();
    std::string unknown;
    for (const auto& u : unknown_ops_) unknown += (unknown.empty() ? "" : ",") + u;
    std::map<std::string, std::string> meta{
        {"builder", "onnx"},
        {"source", path_},
        {"parameters", std::to_string(b_.parameter_count())},
        {"options", std::string("training=") + (options_.training ? "true" : "false") +
                        ",batch=" + std::to_string(options_.batch) +
                        ",optimizer=" + to_string(options_.optimizer) +
                        (options_.weight_view ? ",weight_view=true" : "") +
                        (options_.bias_epilogue ? ",bias_epilogue=true" : "") +
                        (options_.attention_sdpa ? ",attention=sdpa" : "") +
                        (options_.strided_bmm ? ",strided_bmm=true" : "") +
                        (options_.label_smoothing ? ",loss=label_smoothing" : "") +
                        (options_.autocast ? ",autocast=torch" : "") +
                        (options_.layer_norm_apex ? ",layer_norm=apex" : "")},
        {"producer", model.producer_name() + " " + model.producer_version()},
        // ONNX tensors are NCHW, as PyTorch runs a model unless told channels_last
        // (--graph-opt layout=nhwc says it was).
        {"layout", "nchw"}};
    if (!unknown.empty()) meta["unknown_ops"] = unknown;
    if (options_.autocast) meta["autocast"] = "torch";
    sim::Graph g = b_.finish(std::move(meta));
    narrow_concat_gradients(g);
    return g;
  }

 private:
  static std::string stem_of(const std::string& path) {
    std::string stem = path.substr(path.find_last_of('/') + 1);
    if (const auto dot = stem.rfind('.'); dot != std::string::npos) stem = stem.substr(0, dot);
    return stem;
  }

  std::string unique(std::string name) {
    if (name.empty()) name = "op";
    std::string candidate = name;
    for (int k = 1; used_names_.contains(candidate); ++k) {
      candidate = name + "#" + std::to_string(k);
    }
    used_names_.insert(candidate);
    return candidate;
  }

  // A graph input or initializer: a data input, a trainable variable or a constant.
  void add_value(const std::string& name, bool graph_input) {
    const Info& i = info_[name];
    if (!graph_input && small_integer(i.shape, i.dtype)) host_values_.insert(name);
    b_.scope(layer_of(name, '.'));
    if (data_inputs_.contains(name)) {
      tensors_[name] = b_.input(unique(name), i.shape, i.dtype);
    } else if (is_float(i.dtype) && !uses_.bn_statistic(name) &&
               (graph_input || (!i.shape.empty() && uses_.read_as_data(name)))) {
      tensors_[name] = b_.variable_named(unique(name), i.shape, layer_of(name, '.'));
      parameters_.insert(name);
    } else {
      tensors_[name] = b_.constant(unique(name), i.shape, i.dtype,
                                   uses_.bn_statistic(name) ? "RunningStatistic" : "Const");
    }
  }

  // The builder inputs of node k (empty ONNX inputs skipped) and their ONNX positions.
  void node_inputs(int k, const onnx::NodeProto& n, std::vector<Tensor>& ins,
                   std::vector<int>& pos) const {
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) continue;
      const auto it = tensors_.find(n.input(i));
      if (it == tensors_.end()) {
        throw sim::InputError(
            path_, "graph.node[" + std::to_string(k) + "] (\"" + n.name() + "\")",
            "inputs produced earlier in the graph, got unknown tensor \"" + n.input(i) + "\"");
      }
      ins.push_back(it->second);
      pos.push_back(i);
    }
  }

  // Output shapes of a node (a guess, remembered in guessed_, where inference gave none) and the
  // dtype of its first output.
  std::vector<Shape> node_outputs(const onnx::NodeProto& n, const std::vector<Tensor>& ins,
                                  sim::Dtype& out_dtype) {
    std::vector<Shape> outs;
    outs.reserve(static_cast<std::size_t>(n.output_size()));
    out_dtype = ins.empty() ? sim::Dtype::F32 : ins[0].dtype;
    for (int o = 0; o < n.output_size(); ++o) {
      const auto it = info_.find(n.output(o));
      if (it != info_.end() && (it->second.known || !it->second.shape.empty())) {
        outs.push_back(it->second.shape);
        if (o == 0) out_dtype = it->second.dtype;
      } else if (n.op_type() == "BatchNormalization" && o > 0 && ins.size() > 1) {
        // Opset <= 13 training mode: running/saved mean and variance, one value per channel
        // (shape inference leaves them unknown; x's shape would count a whole activation each).
        outs.push_back(ins[1].shape);
      } else {
        outs.push_back(ins.empty() ? Shape{} : ins[0].shape);
        guessed_.insert(n.output(o));
      }
    }
    return outs;
  }

  // How many nodes (and graph outputs) read each value, and the node that writes it.
  [[nodiscard]] std::pair<std::map<std::string, int>, std::map<std::string, int>>
  readers_and_producers() const {
    std::map<std::string, int> readers;
    std::map<std::string, int> producer;
    for (int k = 0; k < g_.node_size(); ++k) {
      for (const auto& in : g_.node(k).input()) ++readers[in];
      for (const auto& out : g_.node(k).output()) producer[out] = k;
    }
    for (const auto& out : g_.output()) ++readers[out.name()];
    return {std::move(readers), std::move(producer)};
  }

  // The node producing v when v is read once (counts: readers_and_producers()) and that node is
  // a `type` (with one output when `one_output`); -1 otherwise.
  [[nodiscard]] int sole_producer(
      const std::pair<std::map<std::string, int>, std::map<std::string, int>>& counts,
      const std::string& v, const char* type, bool one_output) const {
    const auto r = counts.first.find(v);
    const auto it = counts.second.find(v);
    if (r == counts.first.end() || r->second != 1 || it == counts.second.end()) return -1;
    const auto& n = g_.node(it->second);
    if (n.op_type() != type || (one_output && n.output_size() != 1)) return -1;
    return it->second;
  }

  // torch.onnx exports nn.SiLU as Sigmoid(x) -> Mul(x, s), yet PyTorch runs it as one kernel
  // each way: silu (read x, write y) and silu_backward (read x and dy, write dx)
  // (aten/src/ATen/native/Activation.cpp; tools/autograd/derivatives.yaml: `silu(Tensor self)`,
  // `silu_backward(grad, self)`). With --graph-opt silu=fused|inplace each Sigmoid whose only
  // reader is a Mul by the same x becomes one op "Silu" at that Mul; a Sigmoid read elsewhere (an
  // SE gate) stays. docs/workloads.md, "ONNX import".
  void find_silu() {
    if (options_.silu == SiluMode::Ops) return;
    auto readers = readers_and_producers().first;
    std::map<std::string, int> sigmoid_of;  // a Sigmoid's output -> its node
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& n = g_.node(k);
      if (n.op_type() == "Sigmoid" && n.input_size() == 1 && n.output_size() == 1 &&
          readers[n.output(0)] == 1)
        sigmoid_of[n.output(0)] = k;
    }
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& n = g_.node(k);
      if (n.op_type() != "Mul" || n.input_size() != 2) continue;
      for (int j = 0; j < 2; ++j) {
        const auto it = sigmoid_of.find(n.input(j));
        if (it == sigmoid_of.end() || g_.node(it->second).input(0) != n.input(1 - j)) continue;
        silu_skip_.insert(it->second);
        silu_at_[k] = n.input(1 - j);
        break;
      }
    }
  }

  // torch.onnx (opsets 9-17) exports nn.GELU() as Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .)
  // -> Mul(., 0.5) (torch/onnx/symbolic_opset9.py, `gelu`), five kernels each way as ops, yet
  // PyTorch runs it as one kernel forward (gelu: read x, write y) and one backward
  // (gelu_backward(grad, self): read dy and x, write dx; tools/autograd/derivatives.yaml). With
  // --graph-opt gelu=fused each such chain, every intermediate read once, becomes one op "Gelu"
  // at the last Mul. docs/workloads.md, "ONNX import".
  void find_gelu() {
    if (options_.gelu == GeluMode::Ops) return;
    auto counts = readers_and_producers();
    auto& readers = counts.first;
    auto& producer = counts.second;
    const auto constant = [&](const std::string& v) {
      const auto it = producer.find(v);
      return initializers_.contains(v) ||
             (it != producer.end() && g_.node(it->second).op_type() == "Constant");
    };
    // The node reading v, when v has exactly one reader of type `type`; -1 otherwise.
    std::map<std::string, int> reader_of;
    for (int k = 0; k < g_.node_size(); ++k) {
      for (const auto& in : g_.node(k).input()) reader_of[in] = k;
    }
    const auto only_reader = [&](const std::string& v, const char* type) {
      const auto it = reader_of.find(v);
      if (readers[v] != 1 || it == reader_of.end() || g_.node(it->second).op_type() != type ||
          g_.node(it->second).output_size() != 1)
        return -1;
      return it->second;
    };
    // The input of binary node k other than `v`, when v is one of its two inputs.
    const auto other = [&](int k, const std::string& v) -> std::string {
      const auto& n = g_.node(k);
      if (n.input_size() != 2) return {};
      if (n.input(0) == v) return n.input(1);
      return n.input(1) == v ? n.input(0) : std::string{};
    };
    for (int e = 0; e < g_.node_size(); ++e) {
      const auto& erf = g_.node(e);
      if (erf.op_type() != "Erf" || erf.input_size() != 1 || erf.output_size() != 1) continue;
      const auto div = producer.find(erf.input(0));
      if (div == producer.end() || readers[erf.input(0)] != 1) continue;
      const auto& d = g_.node(div->second);
      if (d.op_type() != "Div" || d.input_size() != 2 || !constant(d.input(1))) continue;
      const std::string& x = d.input(0);
      const int add = only_reader(erf.output(0), "Add");
      if (add < 0 || !constant(other(add, erf.output(0)))) continue;
      const int mul = only_reader(g_.node(add).output(0), "Mul");
      if (mul < 0 || other(mul, g_.node(add).output(0)) != x) continue;
      const int half = only_reader(g_.node(mul).output(0), "Mul");
      if (half < 0 || !constant(other(half, g_.node(mul).output(0)))) continue;
      for (const int k : {div->second, e, add, mul}) gelu_skip_.insert(k);
      gelu_at_[half] = x;
    }
  }

  // torch.onnx exports nn.Linear (F.linear: addmm(b, x, W.t()) for 2-D x, matmul(x, W.t()) + b
  // or, since PyTorch 1.12's _flatten_3d_linear, addmm on the flattened 3-D x) as
  // Transpose(W) -> MatMul(x, .) -> Add(., b), or as one Gemm(transB=1) for a 2-D x. PyTorch's
  // `W.t()` is a view: cuBLAS takes the transposed operand (at::cuda::blas::gemm's transa/transb),
  // and autograd's mm_mat2_backward writes the weight gradient as (dy^T x) in W's own layout, so
  // no kernel either way. With weight_view, a Transpose of a 2-D weight whose readers are all
  // matmuls' second operand becomes a `View`. With bias_epilogue, an Add of a MatMul's output,
  // read by nothing else, and a 1-D weight, the MatMul's second operand a weight or its Transpose,
  // becomes that MatMul's third input (decided in add_node, once the shapes are known: the bias
  // must have the output's last dimension). docs/workloads.md, "ONNX import".
  void find_linear() {
    if (!options_.weight_view && !options_.bias_epilogue && !options_.autocast) return;
    auto counts = readers_and_producers();
    auto& readers = counts.first;
    auto& producer = counts.second;
    std::map<std::string, std::vector<std::pair<std::string, int>>> read_by;  // (op type, slot)
    for (const auto& n : g_.node())
      for (int i = 0; i < n.input_size(); ++i) read_by[n.input(i)].emplace_back(n.op_type(), i);
    // Declared rank of each parameter (an initializer, or a weight input of an export without
    // its parameters).
    std::map<std::string, int> rank;
    for (const auto& t : g_.initializer()) rank[t.name()] = t.dims_size();
    for (const auto& in : g_.input()) {
      if (data_inputs_.contains(in.name()) || rank.contains(in.name()) ||
          !in.type().has_tensor_type() || !in.type().tensor_type().has_shape())
        continue;
      rank[in.name()] = in.type().tensor_type().shape().dim_size();
    }
    const auto weight_of_rank = [&](const std::string& v, int r) {
      const auto it = rank.find(v);
      return it != rank.end() && it->second == r;
    };
    const auto weight_transpose = [&](int k) {
      const auto& n = g_.node(k);
      if (n.op_type() != "Transpose" || n.input_size() != 1 || n.output_size() != 1 ||
          !weight_of_rank(n.input(0), 2))
        return false;
      const auto perm = attr_ints(n, "perm");
      return perm.empty() || perm == std::vector<std::int64_t>{1, 0};
    };
    if (options_.weight_view) {
      for (int k = 0; k < g_.node_size(); ++k) {
        if (!weight_transpose(k)) continue;
        const auto& out = g_.node(k).output(0);
        const auto it = read_by.find(out);
        if (it == read_by.end() || readers[out] != static_cast<int>(it->second.size())) continue;
        const bool matmuls_only =
            std::all_of(it->second.begin(), it->second.end(), [](const auto& r) {
              return (r.first == "MatMul" || r.first == "Gemm") && r.second == 1;
            });
        if (matmuls_only) weight_view_.insert(k);
      }
    }
    if (!options_.bias_epilogue && !options_.autocast) return;
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& add = g_.node(k);
      if (add.op_type() != "Add" || add.input_size() != 2 || add.output_size() != 1) continue;
      for (int j = 0; j < 2; ++j) {
        const auto mm = producer.find(add.input(j));
        if (mm == producer.end() || readers[add.input(j)] != 1 ||
            !weight_of_rank(add.input(1 - j), 1))
          continue;
        const auto& m = g_.node(mm->second);
        if (m.op_type() != "MatMul" || m.input_size() != 2 || m.output_size() != 1) continue;
        const auto w = producer.find(m.input(1));
        if (!weight_of_rank(m.input(1), 2) && (w == producer.end() || !weight_transpose(w->second)))
          continue;
        if (options_.bias_epilogue) bias_of_[mm->second] = {k, add.input(1 - j)};
        // F.linear(x, W, b) under autocast casts b with W: the bias add runs in F16.
        linear_bias_adds_.insert(k);
        break;
      }
    }
  }

  // strided_bmm: torch.onnx writes `x.view(T, B * H, d).transpose(0, 1)` and `k.permute(1, 2, 0)`
  // before torch.bmm, and `o.transpose(0, 1)` after it, as Transposes; PyTorch passes such views
  // to cuBLAS's strided batched GEMM (a uniform batch stride, one unit-stride matrix axis and a
  // leading dimension) without a copy, and fairseq's DeepLearningExamples Transformer writes the
  // second bmm's output straight into the transposed layout (multihead_attention.py @ d666f145,
  // StridedBmm2Func). Each such Transpose becomes a `View`, its gradient passed through.
  void find_strided_bmm() {
    if (!options_.strided_bmm) return;
    auto counts = readers_and_producers();
    auto& readers = counts.first;
    auto& producer = counts.second;
    std::map<std::string, std::vector<std::string>> read_by;
    for (const auto& n : g_.node())
      for (int i = 0; i < n.input_size(); ++i) read_by[n.input(i)].push_back(n.op_type());
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& n = g_.node(k);
      if (n.op_type() != "Transpose" || n.input_size() != 1 || n.output_size() != 1) continue;
      const auto perm = attr_ints(n, "perm");
      if (perm.size() != 3 || weight_view_.contains(k)) continue;
      const auto it = read_by.find(n.output(0));
      const bool into_matmuls = perm[0] != 2 && it != read_by.end() &&
                                readers[n.output(0)] == static_cast<int>(it->second.size()) &&
                                std::all_of(it->second.begin(), it->second.end(),
                                            [](const std::string& t) { return t == "MatMul"; });
      const auto from = producer.find(n.input(0));
      const bool out_of_matmul = perm == std::vector<std::int64_t>{1, 0, 2} &&
                                 from != producer.end() && readers[n.input(0)] == 1 &&
                                 g_.node(from->second).op_type() == "MatMul";
      if (into_matmuls || out_of_matmul) batch_view_.insert(k);
    }
  }

  // torch.onnx writes attention (timm's `fused_attn=False` path, or F.scaled_dot_product_attention
  // in opsets without it) as MatMul(q, Transpose(k)) -> Mul or Div by the scale -> Softmax(-1) ->
  // MatMul(., v). With attention=sdpa, each such chain whose intermediates are read once (no mask,
  // no dropout between) becomes one op "FlashAttention" at the last MatMul, reading q, k and v,
  // writing O and the row logsumexp, with one "FlashAttentionGrad": what
  // F.scaled_dot_product_attention runs (timm >= 0.9's `fused_attn`), priced as the `gpt` graph's
  // attention=flash op (models/gpt_model.cpp; docs/cost-model.md, "Fused attention ops").
  void find_attention() {
    if (!options_.attention_sdpa) return;
    auto counts = readers_and_producers();
    auto& producer = counts.second;
    // The scale: a Constant node's output or a one-element initializer (not a learned tensor).
    std::set<std::string> scalars;
    for (const auto& t : g_.initializer()) {
      std::int64_t n = 1;
      for (const auto d : t.dims()) n *= d;
      if (n == 1) scalars.insert(t.name());
    }
    const auto constant = [&](const std::string& v) {
      const auto it = producer.find(v);
      return scalars.contains(v) ||
             (it != producer.end() && g_.node(it->second).op_type() == "Constant");
    };
    const auto only_from = [&](const std::string& v, const char* type) {
      return sole_producer(counts, v, type, true);
    };
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& pv = g_.node(k);
      if (pv.op_type() != "MatMul" || pv.input_size() != 2 || pv.output_size() != 1) continue;
      const int softmax = only_from(pv.input(0), "Softmax");
      if (softmax < 0 || attr_int(g_.node(softmax), "axis", -1) != -1) continue;
      const std::string& logits = g_.node(softmax).input(0);
      int scale = only_from(logits, "Mul");
      if (scale < 0) scale = only_from(logits, "Div");
      int qk = -1;
      if (scale >= 0) {
        const auto& sc = g_.node(scale);
        if (sc.input_size() != 2) continue;
        for (int j = 0; j < 2 && qk < 0; ++j) {
          if (sc.op_type() == "Div" && j == 1) break;  // the scores are the dividend
          if (constant(sc.input(1 - j))) qk = only_from(sc.input(j), "MatMul");
        }
      } else {
        qk = only_from(logits, "MatMul");
      }
      if (qk < 0 || g_.node(qk).input_size() != 2) continue;
      const int kt = only_from(g_.node(qk).input(1), "Transpose");
      if (kt < 0) continue;
      // K^T: a Transpose swapping the last two axes of K.
      const auto perm = attr_ints(g_.node(kt), "perm");
      const auto r = static_cast<std::int64_t>(perm.size());
      bool swap = r >= 2 && perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
      for (std::int64_t i = 0; swap && i + 2 < r; ++i) swap = perm[i] == i;
      if (!swap) continue;
      for (const int skip : {kt, qk, scale, softmax})
        if (skip >= 0) attention_skip_.insert(skip);
      attention_at_[k] = {g_.node(qk).input(0), g_.node(kt).input(0), pv.input(1)};
    }
  }

  // What PyTorch runs around F.scaled_dot_product_attention on a fused qkv projection (timm's
  // Attention: `qkv.reshape(B, N, 3, heads, d).permute(2, 0, 3, 1, 4).unbind(0)`, which torch.onnx
  // writes as Transpose -> Split(axis 0) into 3 -> Squeeze each): the permute and the unbind are
  // views (the fused kernel reads strided q, k, v), and so is `o.transpose(1, 2).reshape(B, N, C)`
  // of the kernel's output, which it writes in [B, N, heads, d] order. The backward copies twice,
  // as the `gpt` graph's attention=flash (models/gpt_model.cpp, attention_core): the unbind's
  // gradient is a stack of dq, dk, dv (ATen's CatArrayBatchedCopy; the H200 ViT trace has 12 a
  // step, 332 us each) and the permute's a copy back into the reshape's layout. Without this the
  // import priced the forward permute and Split as copies PyTorch does not run.
  void find_qkv_views() {
    if (attention_at_.empty()) return;
    auto counts = readers_and_producers();
    auto& readers = counts.first;
    const auto only_from = [&](const std::string& v, const char* type) {
      return sole_producer(counts, v, type, false);
    };
    for (const auto& [k, qkv] : attention_at_) {
      int split = -1;
      for (int j = 0; j < 3; ++j) {
        const int sq = only_from(qkv[static_cast<std::size_t>(j)], "Squeeze");
        const int sp = sq < 0 ? -1 : only_from(g_.node(sq).input(0), "Split");
        if (sp < 0 || (split >= 0 && sp != split) || g_.node(sp).output_size() != 3 ||
            g_.node(sp).output(j) != g_.node(sq).input(0)) {
          split = -1;
          break;
        }
        split = sp;
      }
      if (split < 0 || attr_int(g_.node(split), "axis", 0) != 0) continue;
      const int permute = only_from(g_.node(split).input(0), "Transpose");
      if (permute < 0) continue;
      const auto perm = attr_ints(g_.node(permute), "perm");
      if (perm.size() != 5 || perm[0] != 2) continue;
      qkv_permute_.insert(permute);
      qkv_unbind_.insert(split);
      // The heads' transpose: the one reader of the attention's output.
      if (readers[g_.node(k).output(0)] != 1) continue;
      for (int r = k + 1; r < g_.node_size(); ++r) {
        const auto& t = g_.node(r);
        if (t.input_size() < 1 || t.input(0) != g_.node(k).output(0)) continue;
        if (t.op_type() == "Transpose" &&
            attr_ints(t, "perm") == std::vector<std::int64_t>{0, 2, 1, 3})
          attention_out_view_.insert(r);
        break;
      }
    }
  }

  // One view of find_qkv_views: no kernel forward; the backward's stack or copy back.
  void add_attention_view(int k, const onnx::NodeProto& n) {
    std::vector<Tensor> ins;
    std::vector<int> pos;
    node_inputs(k, n, ins, pos);
    sim::Dtype out_dtype = sim::Dtype::F32;
    const std::vector<Shape> outs = node_outputs(n, ins, out_dtype);
    const std::string name =
        unique(n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name());
    b_.scope(layer_of(name, '/'));
    GradRule rule{.wrt = {0}, .passthrough = true};
    if (qkv_permute_.contains(k)) rule = GradRule{.type = "Transpose", .flops = 0, .wrt = {0}};
    if (qkv_unbind_.contains(k)) rule = GradRule{.type = "Stack", .flops = 0, .wrt = {0}};
    const Tensor in = ins.at(0);
    const auto results =
        b_.op(name, "View", {in}, outs, 0, {rule}, options_.autocast ? in.dtype : out_dtype);
    for (int o = 0; o < n.output_size(); ++o)
      if (!n.output(o).empty()) tensors_[n.output(o)] = results[static_cast<std::size_t>(o)];
  }

  // autocast=torch: how torch.autocast(dtype=float16) runs an op (aten/src/ATen/autocast_mode.cpp,
  // the CUDA lists): `lower_precision_fp` casts its F32 inputs to F16 and runs in F16; `fp32`
  // casts F16 inputs to F32; `fp32_set_opt_dtype` (softmax, log_softmax, sum, prod, cumsum,
  // vector norms) passes dtype=float, one kernel reading F16 and writing F32 (ATen's softmax
  // takes half_to_float; no cast kernel); the rest run in their inputs' type, a binary op or cat
  // promoting F16 with F32 to F32 (a 0-dim constant, a Python scalar in the program, does not).
  enum class Autocast { Lower, Fp32, Fp32Out, Promote, Same, None };
  static Autocast autocast_policy(const std::string& type) {
    static const std::set<std::string, std::less<>> kLower = {"Conv", "ConvTranspose", "MatMul",
                                                              "Gemm", "PRelu",         "Einsum"};
    static const std::set<std::string, std::less<>> kFp32 = {
        "LayerNormalization", "GroupNormalization", "Exp", "Log", "Reciprocal", "Pow",
        "Softplus",           "ReduceLogSumExp"};
    static const std::set<std::string, std::less<>> kFp32Out = {
        "Softmax", "LogSoftmax", "ReduceSum", "ReduceProd", "CumSum", "ReduceL1", "ReduceL2"};
    if (kLower.contains(type)) return Autocast::Lower;
    if (kFp32.contains(type)) return Autocast::Fp32;
    if (kFp32Out.contains(type)) return Autocast::Fp32Out;
    if (kBinary.contains(type) || type == "Concat") return Autocast::Promote;
    if (type == "Cast" || type == "CastLike") return Autocast::None;  // the program's own cast
    return Autocast::Same;
  }

  void autocast(const onnx::NodeProto& n, int k, std::vector<Tensor>& ins,
                const std::vector<int>& pos, sim::Dtype& out_dtype) {
    // layer_norm=apex: FusedLayerNorm casts its inputs to F16 and runs there (onnx_import.hpp).
    const bool lower = linear_bias_adds_.contains(k) ||
                       (options_.layer_norm_apex && n.op_type() == "LayerNormalization");
    const Autocast policy = lower ? Autocast::Lower : autocast_policy(n.op_type());
    const auto first =
        std::find_if(ins.begin(), ins.end(), [](const Tensor& t) { return is_float(t.dtype); });
    if (policy == Autocast::None || !is_float(out_dtype) || first == ins.end()) return;
    switch (policy) {
      case Autocast::Lower:
      case Autocast::Fp32: {
        const sim::Dtype to = policy == Autocast::Lower ? sim::Dtype::F16 : sim::Dtype::F32;
        for (std::size_t j = 0; j < ins.size(); ++j)
          if (is_float(ins[j].dtype) && ins[j].dtype != to)
            ins[j] = autocast_copy(n.input(pos[j]), ins[j], to, n, k, pos[j]);
        out_dtype = to;
        return;
      }
      case Autocast::Fp32Out:
        out_dtype = sim::Dtype::F32;
        return;
      case Autocast::Promote: {
        out_dtype = first->dtype;
        for (std::size_t j = 0; j < ins.size(); ++j) {
          const Tensor& t = ins[j];
          const bool counts = num_elements(t.shape) > 1 || parameters_.contains(n.input(pos[j]));
          if (is_float(t.dtype) && counts && sim::dtype_size(t.dtype) > sim::dtype_size(out_dtype))
            out_dtype = t.dtype;
        }
        return;
      }
      case Autocast::Same:
      case Autocast::None:
        out_dtype = first->dtype;
        return;
    }
  }

  // The copy autocast makes of `value` (input `input` of node k) in type `to`, a Cast op whose
  // gradient casts back; a parameter's F16 copy is made once a step (autocast's cast cache keeps
  // leaf tensors that require grad for the autocast region: the forward).
  Tensor autocast_copy(const std::string& value, const Tensor& t, sim::Dtype to,
                       const onnx::NodeProto& n, int k, int input) {
    const bool parameter = parameters_.contains(value) && to == sim::Dtype::F16;
    if (parameter)
      if (const auto it = parameter_casts_.find(value); it != parameter_casts_.end())
        return it->second;
    const std::string reader = n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name();
    const std::string name = unique(reader + "/autocast_" + std::to_string(input));
    b_.scope(layer_of(name, '/'));
    std::vector<GradRule> rules{GradRule{.type = "Cast", .flops = 0, .wrt = {0}}};
    const Tensor cast = b_.op(name, "Cast", {t}, {t.shape}, 0, std::move(rules), to)[0];
    if (parameter) parameter_casts_[value] = cast;
    return cast;
  }

  // autocast=torch: each kernel runs in the type of what it writes (an F16 matmul's gradients are
  // F16, a LayerNorm's backward F32), as sim::Op::dtype and its signature say.
  void type_ops_as_their_outputs() {
    const sim::Graph& g = b_.graph();
    for (sim::OpId o = 0; o < g.num_ops(); ++o) {
      const sim::Op& op = g.ops[static_cast<std::size_t>(o)];
      if (op.phase != sim::Phase::Forward && op.phase != sim::Phase::Backward) continue;
      for (const auto& t : op.outputs)
        if (is_float(t.dtype)) {
          if (t.dtype != op.dtype) b_.set_op_dtype(o, t.dtype);
          break;
        }
    }
  }

  // One FlashAttention op for the chain ending at node k (find_attention).
  void add_attention(int k, const onnx::NodeProto& n, const std::array<std::string, 3>& qkv) {
    const std::string node_key =
        "graph.node[" + std::to_string(k) + "] (\"" + sim::printable(n.name()) + "\")";
    std::vector<Tensor> ins;
    for (const auto& v : qkv) {
      const auto it = tensors_.find(v);
      if (it == tensors_.end())
        throw sim::InputError(path_, node_key,
                              "inputs produced earlier in the graph, got unknown tensor \"" +
                                  sim::printable(v) + "\"");
      ins.push_back(it->second);
    }
    sim::Dtype out_dtype = output_dtype(n.output(0));
    if (options_.autocast) {
      // scaled_dot_product_attention is on autocast's lower-precision list.
      for (std::size_t j = 0; j < ins.size(); ++j)
        if (is_float(ins[j].dtype) && ins[j].dtype != sim::Dtype::F16)
          ins[j] = autocast_copy(qkv[j], ins[j], sim::Dtype::F16, n, k, static_cast<int>(j));
      out_dtype = sim::Dtype::F16;
    }
    const Shape& q = ins[0].shape;
    const Shape& key = ins[1].shape;
    const Shape& v = ins[2].shape;
    if (q.size() < 3 || key.size() != q.size() || v.size() != q.size() || key.back() != q.back() ||
        v[v.size() - 2] != key[key.size() - 2])
      throw sim::InputError(path_, node_key,
                            "an attention with q [..., n, d], k [..., m, d] and v [..., m, e]");
    const auto out = info_.find(n.output(0));
    Shape o = q;
    o.back() = v.back();
    if (out != info_.end() && out->second.known) o = out->second.shape;
    Shape lse(o.begin(), o.end() - 1);
    // 2·d FLOPs a query-key pair for QK^T and 2·e for PV; the backward 2.5 times the forward.
    const double rows = elems(lse);
    const double keys = static_cast<double>(key[key.size() - 2]);
    const double f = 2.0 * rows * keys * static_cast<double>(q.back() + v.back());
    const std::string name = unique(n.name().empty() ? "Attention_" + std::to_string(k) : n.name());
    b_.scope(layer_of(name, '/'));
    const auto results = b_.op(name, "FlashAttention", ins, {o, lse}, f,
                               {GradRule{.type = "FlashAttentionGrad",
                                         .flops = 2.5 * f,
                                         .wrt = {0, 1, 2},
                                         .saved_inputs = {0, 1, 2},
                                         .saved_outputs = {0, 1}}},
                               out_dtype);
    tensors_[n.output(0)] = results[0];
  }

  // An integer or boolean value of at most 16 elements: a shape, a dimension, an index.
  static bool small_integer(const Shape& shape, sim::Dtype dtype) {
    if (is_float(dtype)) return false;
    double n = 1;
    for (const auto d : shape) n *= static_cast<double>(std::max<std::int64_t>(d, 0));
    return n <= 16;
  }

  [[nodiscard]] sim::Dtype output_dtype(const std::string& value) const {
    const auto it = info_.find(value);
    return it == info_.end() ? sim::Dtype::F32 : it->second.dtype;
  }

  // PyTorch computes shapes on the host: `x.shape`, `x.size(1)` and the arithmetic on them are
  // Python ints, so the Shape -> Gather -> Unsqueeze -> Concat chains torch.onnx writes to rebuild
  // a Reshape's target (a ViT's `qkv.reshape(B, N, 3, heads, C // heads)`) launch no kernel. Such
  // a node is a Shape/Size, or an integer op on host values only, whose outputs are small integer
  // values. Priced as GPU ops, a Shape read its whole input (15 us on the H200 for a ViT-B/16
  // activation) and each Concat of dimensions took a launch.
  [[nodiscard]] bool host_shape_arithmetic(const onnx::NodeProto& n,
                                           const std::vector<Shape>& outs) const {
    static const std::set<std::string, std::less<>> kArith = {
        "Gather", "Concat", "Unsqueeze", "Squeeze", "Slice",   "Cast",    "Add", "Sub",
        "Mul",    "Div",    "Mod",       "Neg",     "Abs",     "Max",     "Min", "Floor",
        "Ceil",   "Equal",  "Where",     "Not",     "Reshape", "Identity"};
    const std::string& type = n.op_type();
    if (type != "Shape" && type != "Size") {
      if (!kArith.contains(type) || n.input_size() == 0) return false;
      for (const auto& in : n.input())
        if (!in.empty() && !host_values_.contains(in)) return false;
    }
    for (int o = 0; o < n.output_size(); ++o) {
      if (n.output(o).empty()) continue;
      if (static_cast<std::size_t>(o) >= outs.size() ||
          !small_integer(outs[static_cast<std::size_t>(o)], output_dtype(n.output(o))))
        return false;
    }
    return true;
  }

  void add_node(int k, const onnx::NodeProto& n) {
    if (attention_skip_.contains(k)) return;
    if (const auto att = attention_at_.find(k); att != attention_at_.end()) {
      add_attention(k, n, att->second);
      return;
    }
    if (const auto folded = bias_added_.find(k); folded != bias_added_.end()) {
      // An Add whose bias its MatMul's epilogue adds (find_linear): the MatMul's output is its.
      tensors_[n.output(0)] = tensors_.at(folded->second);
      return;
    }
    if (weight_view_.contains(k) || batch_view_.contains(k)) {
      add_weight_view(k, n, weight_view_.contains(k));
      return;
    }
    if (qkv_permute_.contains(k) || qkv_unbind_.contains(k) || attention_out_view_.contains(k)) {
      add_attention_view(k, n);
      return;
    }
    if (const auto linear = bias_of_.find(k); linear != bias_of_.end()) {
      const auto bias = tensors_.find(linear->second.second);
      const auto out = info_.find(n.output(0));
      const auto sum = info_.find(g_.node(linear->second.first).output(0));
      if (bias != tensors_.end() && out != info_.end() && sum != info_.end() &&
          !out->second.shape.empty() && bias->second.shape.size() == 1 &&
          bias->second.shape[0] == out->second.shape.back() &&
          sum->second.shape == out->second.shape) {
        onnx::NodeProto fused = n;
        fused.add_input(linear->second.second);
        bias_added_[linear->second.first] = n.output(0);
        add_node_as(k, fused);
        return;
      }
    }
    if (gelu_skip_.contains(k)) return;
    if (const auto gelu = gelu_at_.find(k); gelu != gelu_at_.end()) {
      onnx::NodeProto fused = n;
      fused.set_op_type("Gelu");
      fused.clear_input();
      fused.add_input(gelu->second);
      add_node_as(k, fused);
      return;
    }
    if (silu_skip_.contains(k)) return;
    const auto silu = silu_at_.find(k);
    if (silu == silu_at_.end()) {
      add_node_as(k, n);
      return;
    }
    std::string x = silu->second;
    if (options_.silu == SiluMode::Inplace) {
      // nn.SiLU(inplace=True): autograd saves a copy of x before silu_ overwrites it (the
      // generated VariableType saves `self.clone()` for an in-place op whose derivative reads
      // self; tools/autograd/gen_variable_type.py), a read and a write of x more; silu_backward
      // then reads that copy. The copy passes the gradient through unchanged.
      const auto in = tensors_.find(x);
      if (in == tensors_.end()) {
        throw sim::InputError(
            path_, "graph.node[" + std::to_string(k) + "] (\"" + sim::printable(n.name()) + "\")",
            "inputs produced earlier in the graph, got unknown tensor \"" + x + "\"");
      }
      const std::string name =
          unique((n.name().empty() ? "Silu_" + std::to_string(k) : n.name()) + "/saved_input");
      b_.scope(layer_of(name, '/'));
      std::vector<GradRule> rules;
      if (is_float(in->second.dtype)) rules.push_back(GradRule{.wrt = {0}, .passthrough = true});
      const auto copy = b_.op(name, "Copy", {in->second}, {in->second.shape}, 0, std::move(rules),
                              in->second.dtype);
      x = name;
      tensors_[x] = copy[0];
    }
    onnx::NodeProto fused = n;
    fused.set_op_type("Silu");
    fused.clear_input();
    fused.add_input(x);
    add_node_as(k, fused);
  }

  // PyTorch's `W.t()` (find_linear): no kernel, and the weight gradient passes through it (the
  // matmul's backward writes dW in W's own layout). Also a batched GEMM's strided operand
  // (find_strided_bmm, `parameter` false).
  void add_weight_view(int k, const onnx::NodeProto& n, bool parameter) {
    std::vector<Tensor> ins;
    std::vector<int> pos;
    node_inputs(k, n, ins, pos);
    sim::Dtype out_dtype = sim::Dtype::F32;
    const std::vector<Shape> outs = node_outputs(n, ins, out_dtype);
    const std::string name = unique(n.name().empty() ? "Transpose_" + std::to_string(k) : n.name());
    b_.scope(layer_of(name, '/'));
    std::vector<GradRule> rules;
    if (is_float(ins.at(0).dtype)) rules.push_back(GradRule{.wrt = {0}, .passthrough = true});
    tensors_[n.output(0)] = b_.op(name, "View", ins, outs, 0, std::move(rules),
                                  options_.autocast ? ins.at(0).dtype : out_dtype)[0];
    if (parameter) parameters_.insert(n.output(0));
  }

  void add_node_as(int k, const onnx::NodeProto& n) {
    const std::string& type = n.op_type();
    std::vector<Tensor> ins;
    std::vector<int> pos;
    node_inputs(k, n, ins, pos);
    sim::Dtype out_dtype = sim::Dtype::F32;
    const std::vector<Shape> outs = node_outputs(n, ins, out_dtype);
    if (host_shape_arithmetic(n, outs)) {
      // Folded: each output a constant (storage, no kernel) that its readers depend on.
      const std::string base = n.name().empty() ? type + "_" + std::to_string(k) : n.name();
      for (int o = 0; o < n.output_size(); ++o) {
        if (n.output(o).empty()) continue;
        const std::string name = unique(o == 0 ? base : base + ":" + std::to_string(o));
        b_.scope(layer_of(name, '/'));
        tensors_[n.output(o)] = b_.constant(name, outs[static_cast<std::size_t>(o)],
                                            output_dtype(n.output(o)), "HostShape");
        host_values_.insert(n.output(o));
      }
      return;
    }
    if (type == "Constant" && n.output_size() == 1 &&
        small_integer(outs.empty() ? Shape{} : outs[0], output_dtype(n.output(0))))
      host_values_.insert(n.output(0));
    if (options_.autocast) autocast(n, k, ins, pos, out_dtype);
    Node x{.n = n, .type = type, .ins = ins, .pos = pos, .outs = outs, .graph = b_.graph()};
    x.y = outs.empty() ? Shape{} : outs[0];
    if ((type == "Reshape" || type == "Flatten") && !ins.empty() &&
        !guessed_.contains(n.input(0)) && num_elements(ins[0].shape) != num_elements(x.y)) {
      // A target shape baked in at export time (x.view(1, ...)) no longer matches a new batch.
      throw sim::InputError(
          path_, "graph.node[" + std::to_string(k) + "] (\"" + n.name() + "\")",
          "a Reshape whose target fits its input (" + std::to_string(num_elements(ins[0].shape)) +
              " elements), got " + std::to_string(num_elements(x.y)) +
              (options_.batch > 0
                   ? "; the model fixes its batch size: export it with batch " +
                         std::to_string(options_.batch) + " or dynamic_axes instead of --batch"
                   : std::string{}));
    }
    x.ny = elems(x.y);
    x.nx = ins.empty() ? 0.0 : elems(ins[0].shape);
    const std::string node_key =
        "graph.node[" + std::to_string(k) + "] (\"" + sim::printable(n.name()) + "\")";
    const std::size_t need_inputs =
        (type == "Conv" || type == "ConvTranspose" || type == "Gemm" || type == "MatMul") ? 2 : 0;
    if (ins.size() < need_inputs)
      throw sim::InputError(path_, node_key,
                            "a " + sim::printable(type) + " with " + std::to_string(need_inputs) +
                                " inputs, got " + std::to_string(ins.size()));
    handler_of(type)(x, path_, node_key);
    if (x.unknown) unknown_ops_.insert(type);

    const std::string name = unique(n.name().empty() ? type + "_" + std::to_string(k) : n.name());
    b_.scope(layer_of(name, '/'));
    auto results = b_.op(name, type, ins, outs, x.flops, std::move(x.rules), out_dtype);
    for (int o = 0; o < n.output_size(); ++o) {
      if (n.output(o).empty()) continue;
      auto& r = results[static_cast<std::size_t>(o)];
      // A later output that shape inference types as bool or an integer where the node computes
      // in a float type holds that type's bytes: Dropout's mask is tensor(bool) (ONNX's Dropout,
      // opset 12 on: output `mask`, T2 = tensor(bool)), as PyTorch's _fused_dropout writes it (a
      // byte an element, uint8 before 1.10 and bool after), which its backward (_masked_scale,
      // DropoutGrad here) reads; at the data's type a mask cost 2x (F16) or 4x (F32) its bytes.
      if (o > 0 && is_float(out_dtype) && !is_float(output_dtype(n.output(o))))
        r = b_.set_output_dtype(r, output_dtype(n.output(o)));
      tensors_[n.output(o)] = r;
    }
  }

  // A loss per float output that depends on a parameter (softmax cross-entropy of a [batch,
  // classes] output, the mean of any other), summed, then the backward and update ops.
  void add_loss() {
    b_.scope("loss");
    std::vector<Tensor> losses;
    for (const auto& out : g_.output()) {
      const auto it = tensors_.find(out.name());
      if (it == tensors_.end() || !is_float(it->second.dtype) || !b_.needs_grad(it->second)) {
        continue;
      }
      const Tensor& t = it->second;
      if (t.shape.size() == 2) {
        const Tensor labels =
            b_.input(unique("loss/labels_" + out.name()), {t.shape[0]}, sim::Dtype::I64);
        const Tensor per_row =
            options_.label_smoothing
                ? b_.label_smoothed_nll(unique("loss/smoothed_" + out.name()), t, labels)
                : b_.sparse_softmax_xent(unique("loss/xent_" + out.name()), t, labels);
        losses.push_back(b_.reduce_mean(unique("loss/mean_" + out.name()), per_row));
      } else {
        losses.push_back(b_.reduce_mean(unique("loss/mean_" + out.name()), t));
      }
    }
    if (losses.empty()) {
      throw sim::InputError(path_, "graph.output",
                            "a float output that depends on a parameter to train, got none");
    }
    const Tensor loss = losses.size() == 1 ? losses[0] : b_.add_n(unique("loss/total"), losses);
    b_.train(loss, options_.optimizer);
  }

  const std::string& path_;
  const OnnxImportOptions& options_;
  const onnx::GraphProto& g_;
  Uses uses_;
  GraphBuilder b_;
  std::set<std::string> initializers_;
  std::set<std::string> data_inputs_;
  std::map<std::string, Info> info_;
  std::set<std::string> used_names_;
  std::map<std::string, Tensor> tensors_;
  std::set<std::string> unknown_ops_;
  std::set<int> silu_skip_;             // Sigmoid nodes folded into a Silu
  std::map<int, std::string> silu_at_;  // a Mul node -> the x of its Silu
  std::set<int> gelu_skip_;             // Div, Erf, Add and Mul nodes folded into a Gelu
  std::map<int, std::string> gelu_at_;  // the last Mul of a GELU chain -> its x
  std::set<int> weight_view_;           // Transposes of weights run as views (weight_view)
  std::set<int> batch_view_;            // Transposes a batched GEMM reads or writes (strided_bmm)
  // A linear's MatMul -> its bias Add and the bias (bias_epilogue candidates, find_linear), and
  // the Adds folded into their MatMuls -> the MatMul's output.
  std::map<int, std::pair<int, std::string>> bias_of_;
  std::map<int, std::string> bias_added_;
  std::set<int> linear_bias_adds_;  // the bias Adds of find_linear's linears (autocast: F16)
  // attention=sdpa: the chains' Transpose(k), MatMul(q, kT), scale and Softmax nodes, and the last
  // MatMul of each -> its q, k, v.
  std::set<int> attention_skip_;
  std::map<int, std::array<std::string, 3>> attention_at_;
  // attention=sdpa over a fused qkv (find_qkv_views): the permute and the unbind (Split) before
  // the attention, and the heads' transpose after it, all views.
  std::set<int> qkv_permute_;
  std::set<int> qkv_unbind_;
  std::set<int> attention_out_view_;
  // autocast=torch: parameters (and weight_view's views of them), and their F16 copies this step
  // (autocast's cast cache: one cast a parameter a forward).
  std::set<std::string> parameters_;
  std::map<std::string, Tensor> parameter_casts_;
  // Outputs whose shape inference gave no shape (a Slice with computed bounds, as torch exports
  // the q/k/v split of attention): their shape is a guess, so a Reshape of one is not checked.
  std::set<std::string> guessed_;
  // Values PyTorch holds on the host as Python ints (host_shape_arithmetic): small integer
  // constants and what the import folded from Shape/Size chains.
  std::set<std::string> host_values_;
};

sim::Graph import_onnx_unchecked(const std::string& path, const OnnxImportOptions& options) {
  onnx::ModelProto model = load_model(path);
  Importer importer(path, options, model.graph());
  infer_shapes(model, importer.data_inputs(), options, path);
  return importer.build(model);
}

}  // namespace

}  // namespace placesim::models

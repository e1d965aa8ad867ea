// ONNX ModelProto -> placesim graph. Shapes come from ONNX shape inference after the data inputs'
// batch dimension is fixed; each node becomes one op (its ONNX name kept, its scope path as the
// layer), with FLOPs and bytes from the shapes; the backward and update ops come from the same
// GraphBuilder the built-in workloads use.
#include "models/onnx_import.hpp"

#include <algorithm>
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
    {"Softsign", 3},    {"Mish", 8},       {"Sin", 4},   {"Cos", 4},     {"ThresholdedRelu", 1}};
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

sim::Graph import_onnx_unchecked(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw sim::InputError(path, "", "a readable ONNX model file");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&f) || !model.has_graph()) {
    throw sim::InputError(path, "", "an ONNX ModelProto (protobuf), could not parse the file");
  }
  onnx::GraphProto& g = *model.mutable_graph();
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

  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  // How each graph input / initializer is used: by which op types, at which input positions.
  std::map<std::string, std::set<std::pair<std::string, int>>> uses;
  for (const auto& n : g.node()) {
    for (int i = 0; i < n.input_size(); ++i) uses[n.input(i)].insert({n.op_type(), i});
  }
  auto only_nonzero_positions = [&](const std::string& name) {
    const auto it = uses.find(name);
    if (it == uses.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(),
                       [](const auto& u) { return u.second > 0; });
  };
  // An initializer is a weight (export_params=True puts every parameter there) when some op reads
  // it as data: not only through a slot that takes a shape, index, exponent, ratio or bound.
  auto data_slot = [](const std::string& op, int pos) {
    static const std::set<std::string, std::less<>> first_only = {
        "Reshape", "Expand",         "Tile",      "Pow",     "Slice",   "Pad",
        "Resize",  "Upsample",       "Clip",      "Dropout", "Squeeze", "Unsqueeze",
        "Gather",  "GatherElements", "ReduceSum", "TopK",    "Split",   "CastLike"};
    static const std::set<std::string, std::less<>> none = {"Shape", "Size", "ConstantOfShape",
                                                            "Range"};
    if (none.contains(op)) return false;
    return !first_only.contains(op) || pos == 0;
  };
  auto read_as_data = [&](const std::string& name) {
    const auto it = uses.find(name);
    if (it == uses.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const auto& u) { return data_slot(u.first, u.second); });
  };
  auto bn_statistic = [&](const std::string& name) {
    const auto it = uses.find(name);
    if (it == uses.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(), [](const auto& u) {
      return u.first == "BatchNormalization" && u.second >= 3;
    });
  };
  // Data inputs. torch.onnx.export lists the model's own inputs first and, with
  // export_params=False, every weight after them as a graph input, so: the first input; any
  // integer input (ids, masks: never trainable); and float inputs before the first weight-only
  // input (one that never feeds an op's first slot) that carry a symbolic (batch) dimension.
  std::set<std::string> data_inputs;
  bool leading = true;
  for (int i = 0; i < g.input_size(); ++i) {
    const onnx::ValueInfoProto& in = g.input(i);
    if (initializers.contains(in.name())) continue;
    if (i > 0 && only_nonzero_positions(in.name())) leading = false;
    const Info ii = info_of(in.type());
    bool symbolic = false;
    if (in.type().has_tensor_type() && in.type().tensor_type().has_shape()) {
      for (const auto& d : in.type().tensor_type().shape().dim())
        symbolic = symbolic || !d.has_dim_value();
    }
    if (i == 0 || !is_float(ii.dtype) || (leading && symbolic)) data_inputs.insert(in.name());
  }
  // Fix the batch dimension of the data inputs, drop stale intermediate shapes, infer.
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

  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (const auto dot = stem.rfind('.'); dot != std::string::npos) stem = stem.substr(0, dot);
  GraphBuilder b(g.name().empty() ? stem : stem);
  b.prefix_names(false);
  std::set<std::string> used_names;
  auto unique = [&](std::string name) {
    if (name.empty()) name = "op";
    std::string candidate = name;
    for (int k = 1; used_names.contains(candidate); ++k) candidate = name + "#" + std::to_string(k);
    used_names.insert(candidate);
    return candidate;
  };
  std::map<std::string, Tensor> tensors;

  // Parameters and constants.
  auto add_value = [&](const std::string& name, bool graph_input) {
    const Info& i = info[name];
    b.scope(layer_of(name, '.'));
    if (data_inputs.contains(name)) {
      tensors[name] = b.input(unique(name), i.shape, i.dtype);
    } else if (is_float(i.dtype) && !bn_statistic(name) &&
               (graph_input || (!i.shape.empty() && read_as_data(name)))) {
      tensors[name] = b.variable_named(unique(name), i.shape, layer_of(name, '.'));
    } else {
      tensors[name] = b.constant(unique(name), i.shape, i.dtype,
                                 bn_statistic(name) ? "RunningStatistic" : "Const");
    }
  };
  for (const auto& in : g.input()) add_value(in.name(), !initializers.contains(in.name()));
  for (const auto& t : g.initializer()) {
    if (!tensors.contains(t.name())) add_value(t.name(), false);
  }

  std::set<std::string> unknown_ops;
  // Outputs whose shape inference gave no shape (a Slice with computed bounds, as torch exports
  // the q/k/v split of attention): their shape is a guess, so a Reshape of one is not checked.
  std::set<std::string> guessed;
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& n = g.node(k);
    const std::string& type = n.op_type();
    std::vector<Tensor> ins;
    std::vector<int> pos;  // ONNX input index of each builder input
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) continue;
      const auto it = tensors.find(n.input(i));
      if (it == tensors.end()) {
        throw sim::InputError(
            path, "graph.node[" + std::to_string(k) + "] (\"" + n.name() + "\")",
            "inputs produced earlier in the graph, got unknown tensor \"" + n.input(i) + "\"");
      }
      ins.push_back(it->second);
      pos.push_back(i);
    }
    std::vector<Shape> outs;
    sim::Dtype out_dtype = ins.empty() ? sim::Dtype::F32 : ins[0].dtype;
    for (int o = 0; o < n.output_size(); ++o) {
      const auto it = info.find(n.output(o));
      if (it != info.end() && (it->second.known || !it->second.shape.empty())) {
        outs.push_back(it->second.shape);
        if (o == 0) out_dtype = it->second.dtype;
      } else if (type == "BatchNormalization" && o > 0 && ins.size() > 1) {
        // Opset <= 13 training mode: running/saved mean and variance, one value per channel
        // (shape inference leaves them unknown; x's shape would count a whole activation each).
        outs.push_back(ins[1].shape);
      } else {
        outs.push_back(ins.empty() ? Shape{} : ins[0].shape);
        guessed.insert(n.output(o));
      }
    }
    const Shape y = outs.empty() ? Shape{} : outs[0];
    if ((type == "Reshape" || type == "Flatten") && !ins.empty() && !guessed.contains(n.input(0)) &&
        num_elements(ins[0].shape) != num_elements(y)) {
      // A target shape baked in at export time (x.view(1, ...)) no longer matches a new batch.
      throw sim::InputError(
          path, "graph.node[" + std::to_string(k) + "] (\"" + n.name() + "\")",
          "a Reshape whose target fits its input (" + std::to_string(num_elements(ins[0].shape)) +
              " elements), got " + std::to_string(num_elements(y)) +
              (options.batch > 0
                   ? "; the model fixes its batch size: export it with batch " +
                         std::to_string(options.batch) + " or dynamic_axes instead of --batch"
                   : std::string{}));
    }
    const double ny = elems(y);
    const double nx = ins.empty() ? 0.0 : elems(ins[0].shape);
    auto at = [&](int onnx_index) -> int {
      for (std::size_t j = 0; j < pos.size(); ++j) {
        if (pos[j] == onnx_index) return static_cast<int>(j);
      }
      return -1;
    };
    auto differentiable = [&](int j) {
      return j >= 0 && static_cast<std::size_t>(j) < ins.size() &&
             is_float(ins[static_cast<std::size_t>(j)].dtype);
    };
    const std::string node_key =
        "graph.node[" + std::to_string(k) + "] (\"" + sim::printable(n.name()) + "\")";
    const std::size_t need_inputs =
        (type == "Conv" || type == "ConvTranspose" || type == "Gemm" || type == "MatMul") ? 2 : 0;
    if (ins.size() < need_inputs)
      throw sim::InputError(path, node_key,
                            "a " + sim::printable(type) + " with " + std::to_string(need_inputs) +
                                " inputs, got " + std::to_string(ins.size()));
    std::vector<GradRule> rules;
    double flops = 0;
    auto grad = [&](std::string gtype, double gflops, std::vector<int> wrt,
                    std::vector<int> saved_in, std::vector<int> saved_out = {}) {
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
    };

    if (type == "Conv" || type == "ConvTranspose") {
      const Shape& w = ins.at(1).shape;
      if (w.size() < 3)
        throw sim::InputError(path, node_key,
                              "a weight of shape [M, C/groups, k...], got " +
                                  std::to_string(w.size()) + " dimensions");
      double k = 1;
      for (std::size_t d = 2; d < w.size(); ++d) k *= static_cast<double>(w[d]);
      // Conv: each output element sums (C/groups) x kernel products; ConvTranspose scatters each
      // input element over (M/groups) x kernel outputs.
      flops = type == "Conv" ? 2 * ny * static_cast<double>(w[1]) * k
                             : 2 * nx * static_cast<double>(w[1]) * k;
      if (at(2) >= 0) flops += ny;
      grad(type + "BackpropInput", flops, {at(0)}, {at(1)});
      grad(type + "BackpropFilter", flops, {at(1)}, {at(0)});
      grad("ReduceSum", ny, {at(2)}, {});
    } else if (type == "Gemm" || type == "MatMul") {
      const Shape& a = ins.at(0).shape;
      const bool trans_a = type == "Gemm" && attr_int(n, "transA", 0) != 0;
      const double kdim = a.empty() ? 1.0 : static_cast<double>(trans_a ? a.front() : a.back());
      flops = 2 * ny * kdim + (at(2) >= 0 ? ny : 0);
      grad(type, 2 * ny * kdim, {at(0)}, {at(1)});
      grad(type, 2 * ny * kdim, {at(1)}, {at(0)});
      grad("ReduceSum", ny, {at(2)}, {});
    } else if (type == "BatchNormalization" || type == "InstanceNormalization" ||
               type == "LayerNormalization" || type == "GroupNormalization") {
      flops = 5 * nx;
      grad(type + "Grad", 8 * nx, {at(0), at(1), at(2)}, {at(0), at(1)});
    } else if (type == "MaxPool" || type == "AveragePool" || type == "LpPool") {
      double k = 1;
      for (const auto v : attr_ints(n, "kernel_shape")) k *= static_cast<double>(v);
      flops = ny * k;
      if (type == "MaxPool") {
        grad("MaxPoolGrad", flops, {at(0)}, {at(0)}, {0});
      } else {
        grad(type + "Grad", flops, {at(0)}, {});
      }
    } else if (type == "GlobalAveragePool" || type == "GlobalMaxPool") {
      flops = nx;
      grad(type + "Grad", nx, {at(0)},
           type == "GlobalMaxPool" ? std::vector<int>{at(0)} : std::vector<int>{});
    } else if (type == "Softmax" || type == "LogSoftmax") {
      flops = 5 * nx;
      rules.push_back(
          GradRule{.type = type + "Grad", .flops = 3 * nx, .wrt = {0}, .saved_outputs = {0}});
      if (!differentiable(0)) rules.clear();
    } else if (const auto u = kUnary.find(type); u != kUnary.end()) {
      flops = ny * u->second;
      grad(type + "Grad", ny * std::max(1.0, u->second), {at(0)}, {at(0)});
      if (type == "PRelu") grad("ReduceSum", 2 * ny, {at(1)}, {at(0)});
    } else if (kBinary.contains(type)) {
      flops = ny * std::max<double>(1.0, static_cast<double>(ins.size()) - 1);
      for (int j = 0; j < static_cast<int>(ins.size()); ++j) {
        const bool same = ins[static_cast<std::size_t>(j)].shape == y;
        if ((type == "Add" || type == "Sum") && same) {
          if (differentiable(j)) rules.push_back(GradRule{.wrt = {j}, .passthrough = true});
        } else if (type == "Add" || type == "Sub" || type == "Sum") {
          grad(same ? "Neg" : "ReduceSum", ny, {j}, {});
        } else if (type == "Where") {
          if (j > 0) grad("Where", ny, {j}, {0});
        } else {
          std::vector<int> others;
          for (int o = 0; o < static_cast<int>(ins.size()); ++o) {
            if (o != j) others.push_back(o);
          }
          grad(type + "Grad", ny * (same ? 1.0 : 2.0), {j}, others);
        }
      }
    } else if (type == "Concat") {
      for (int j = 0; j < static_cast<int>(ins.size()); ++j) grad("Slice", 0, {j}, {});
    } else if (type == "Split") {
      grad("Concat", 0, {at(0)}, {});
    } else if (type == "Dropout") {
      flops = 2 * nx;  // draw a mask and scale
      if (n.output_size() > 1) {
        grad("DropoutGrad", nx, {at(0)}, {}, {1});
      } else {
        grad("DropoutGrad", nx, {at(0)}, {});
      }
    } else if (type == "Identity") {
      if (differentiable(0)) rules.push_back(GradRule{.wrt = {0}, .passthrough = true});
    } else if (type == "Gather" && at(0) >= 0 &&
               b.graph().ops[static_cast<std::size_t>(ins[0].op)].type == "VariableV2") {
      // An embedding look-up: IndexedSlices gradient of the gathered rows.
      rules.push_back(
          GradRule{.type = "GatherGrad", .wrt = {0}, .saved_inputs = {at(1)}, .out_shapes = {y}});
    } else if (kMove.contains(type)) {
      flops = (type == "Resize" || type == "Upsample") ? ny * 4 : 0;
      grad(type + "Grad", type == "Expand" || type == "Tile" ? ny : flops, {at(0)}, {});
    } else if (type.rfind("Reduce", 0) == 0) {
      flops = nx;
      grad("Expand", nx, {at(0)},
           type == "ReduceMax" || type == "ReduceMin" ? std::vector<int>{at(0)}
                                                      : std::vector<int>{});
    } else if (kNonDiff.contains(type)) {
      flops = 0;
    } else {
      // Unknown op: one FLOP per output element, and a gradient op of the same size per float
      // input.
      unknown_ops.insert(type);
      flops = 0;
      for (const auto& s : outs) flops += elems(s);
      std::vector<int> all(ins.size());
      for (std::size_t j = 0; j < ins.size(); ++j) all[j] = static_cast<int>(j);
      grad(type + "Grad", flops, all, all);
    }
    if (type == "Einsum") unknown_ops.insert(type);

    const std::string name = unique(n.name().empty() ? type + "_" + std::to_string(k) : n.name());
    b.scope(layer_of(name, '/'));
    const auto results = b.op(name, type, ins, outs, flops, std::move(rules), out_dtype);
    for (int o = 0; o < n.output_size(); ++o) {
      if (!n.output(o).empty()) tensors[n.output(o)] = results[static_cast<std::size_t>(o)];
    }
  }

  if (options.training) {
    b.scope("loss");
    std::vector<Tensor> losses;
    for (const auto& out : g.output()) {
      const auto it = tensors.find(out.name());
      if (it == tensors.end() || !is_float(it->second.dtype) || !b.needs_grad(it->second)) continue;
      const Tensor& t = it->second;
      if (t.shape.size() == 2) {
        const Tensor labels =
            b.input(unique("loss/labels_" + out.name()), {t.shape[0]}, sim::Dtype::I64);
        losses.push_back(
            b.reduce_mean(unique("loss/mean_" + out.name()),
                          b.sparse_softmax_xent(unique("loss/xent_" + out.name()), t, labels)));
      } else {
        losses.push_back(b.reduce_mean(unique("loss/mean_" + out.name()), t));
      }
    }
    if (losses.empty()) {
      throw sim::InputError(path, "graph.output",
                            "a float output that depends on a parameter to train, got none");
    }
    const Tensor loss = losses.size() == 1 ? losses[0] : b.add_n(unique("loss/total"), losses);
    b.train(loss, options.optimizer);
  }

  std::string unknown;
  for (const auto& u : unknown_ops) unknown += (unknown.empty() ? "" : ",") + u;
  std::map<std::string, std::string> meta{
      {"builder", "onnx"},
      {"source", path},
      {"parameters", std::to_string(b.parameter_count())},
      {"options", std::string("training=") + (options.training ? "true" : "false") + ",batch=" +
                      std::to_string(options.batch) + ",optimizer=" + to_string(options.optimizer)},
      {"producer", model.producer_name() + " " + model.producer_version()}};
  if (!unknown.empty()) meta["unknown_ops"] = unknown;
  return b.finish(std::move(meta));
}

}  // namespace

}  // namespace placesim::models

// PyTorch Execution Trace JSON -> placesim graph (pytorch_et.hpp has the rules).
#include "calibration/pytorch_et.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "calibration/kernel_fit.hpp"
#include "calibration/trace.hpp"
#include "models/et_tensor.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::calibration {

namespace {

using nlohmann::json;
using sim::InputError;

// Largest dimension a trace may give a tensor (as the ONNX importer allows): 2^40.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

struct EtTensorUse {
  models::EtTensor t;
  std::vector<std::int64_t> shape;
  std::int64_t bytes = 0;
  std::vector<std::int64_t>
      strides;  ///< in elements, as the ET gives them (schema 1.0.2+); may be empty
};

// One argument or result of an ET node.
struct EtArg {
  std::vector<EtTensorUse> tensors;  ///< a tensor, or the tensors of a list
  std::string type;                  ///< "Tensor(float)", "Int", "GenericList[Int,Int]", ...
  std::string concrete;  ///< a number, integer list or bool as text ("[2, 2]", "True"), else ""
};

struct EtNode {
  std::int64_t id = 0, parent = 0, rf_id = 0, tid = 0, scope = 0;
  std::string name, op_schema, cat;
  std::vector<EtArg> inputs, outputs;
  std::int64_t gpu_dur_ns = 0;  ///< a GPU node of a Chakra-linked ET ("cat", "dur")
  bool root = false, op = false;
};

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string json_type(const json& v) {
  return v.type_name();
}

std::optional<models::EtTensor> as_tensor(const json& v) {
  if (!v.is_array() || v.size() != 6 || !v[5].is_string()) return std::nullopt;
  for (std::size_t k = 0; k < 5; ++k)
    if (!v[k].is_number_integer()) return std::nullopt;
  const auto num = [&](std::size_t k) {
    // Tensor ids are unsigned in torch 2.x: an id past INT64_MAX keeps its bit pattern.
    return v[k].is_number_unsigned() ? static_cast<std::int64_t>(v[k].get<std::uint64_t>())
                                     : v[k].get<std::int64_t>();
  };
  return models::EtTensor{.id = num(0),
                          .storage = num(1),
                          .offset = num(2),
                          .numel = num(3),
                          .itemsize = num(4),
                          .device = v[5].get<std::string>()};
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  std::int64_t integer(const json& o, const char* key, const std::string& where,
                       std::int64_t def) const {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return def;
    if (!it->is_number_integer())
      throw InputError(path_, where + "." + key, "an integer, got " + json_type(*it));
    return it->is_number_unsigned() ? static_cast<std::int64_t>(it->get<std::uint64_t>())
                                    : it->get<std::int64_t>();
  }
  std::string text(const json& o, const char* key, const std::string& where) const {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return {};
    if (!it->is_string())
      throw InputError(path_, where + "." + key, "a string, got " + json_type(*it));
    return it->get<std::string>();
  }

  std::vector<std::int64_t> shape(const json& s, const std::string& where) const {
    std::vector<std::int64_t> out;
    if (s.is_null()) return out;
    if (!s.is_array()) throw InputError(path_, where, "a list of dimensions, got " + json_type(s));
    for (const json& d : s) {
      if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<std::uint64_t>() > kMaxDim) ||
          d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxDim)
        throw InputError(path_, where,
                         "dimensions from 0 to 2^40, got " + sim::printable(d.dump(), 40));
      out.push_back(d.get<std::int64_t>());
    }
    if (out.size() > 64) throw InputError(path_, where, "at most 64 dimensions");
    return out;
  }

  // A tensor's strides (elements): a list of as many non-negative integers as its shape has
  // dimensions, else none (strides are only read to find a GEMM operand's leading dimension, so a
  // list that does not fit is ignored rather than refused).
  static std::vector<std::int64_t> stride_list(const json* st, std::size_t rank) {
    std::vector<std::int64_t> out;
    if (!st || !st->is_array() || st->size() != rank) return out;
    for (const json& d : *st) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxDim)
        return {};
      out.push_back(d.get<std::int64_t>());
    }
    return out;
  }

  EtTensorUse tensor_use(const models::EtTensor& t, const json* s, const std::string& where) const {
    EtTensorUse u{.t = t, .shape = {}, .bytes = 0};
    if (s && t.defined()) u.shape = shape(*s, where);
    const auto bytes = models::et_tensor_bytes(t, s && t.defined() ? &u.shape : nullptr);
    if (t.defined() && !bytes)
      throw InputError(path_, where,
                       "a tensor of at most 1 PiB, got " + std::to_string(t.numel) +
                           " elements of " + std::to_string(t.itemsize) + " bytes");
    u.bytes = t.defined() ? *bytes : 0;
    return u;
  }

  /// values/shapes/types lists of one side (inputs or outputs) of a node.
  std::vector<EtArg> args(const json& values, const json* shapes, const json* types,
                          const std::string& where, const json* strides = nullptr) const {
    std::vector<EtArg> out;
    if (values.is_null()) return out;
    if (!values.is_array())
      throw InputError(path_, where, "a list of values, got " + json_type(values));
    const auto at = [&](const json* list, std::size_t k) -> const json* {
      return list && list->is_array() && k < list->size() ? &(*list)[k] : nullptr;
    };
    for (std::size_t k = 0; k < values.size(); ++k) {
      const json& v = values[k];
      EtArg a;
      if (const json* t = at(types, k); t && t->is_string()) a.type = t->get<std::string>();
      const json* s = at(shapes, k);
      const std::string key = where + "[" + std::to_string(k) + "]";
      if (const auto t = as_tensor(v)) {
        a.tensors.push_back(tensor_use(*t, s, key));
        a.tensors.back().strides = stride_list(at(strides, k), a.tensors.back().shape.size());
      } else if (v.is_array() &&
                 (starts(a.type, "GenericList[Tensor") || (!v.empty() && as_tensor(v[0])))) {
        for (std::size_t j = 0; j < v.size(); ++j)
          if (const auto t = as_tensor(v[j]))
            a.tensors.push_back(tensor_use(*t,
                                           s && s->is_array() && j < s->size() ? &(*s)[j] : nullptr,
                                           key + "[" + std::to_string(j) + "]"));
      } else if (v.is_number()) {  // an integer, or a double such as SDPA's dropout_p
        a.concrete = v.dump();
      } else if (v.is_boolean()) {
        a.concrete = v.get<bool>() ? "True" : "False";  // as the profiler's Concrete Inputs
      } else if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& x) {
                   return x.is_number_integer();
                 })) {
        for (std::size_t j = 0; j < v.size(); ++j) a.concrete += (j ? ", " : "[") + v[j].dump();
        a.concrete += "]";
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  EtNode node(const json& n, std::size_t index) const {
    const std::string where = "nodes[" + std::to_string(index) + "]";
    if (!n.is_object()) throw InputError(path_, where, "a node object, got " + json_type(n));
    if (!n.contains("id") || !n.contains("name"))
      throw InputError(path_, where, "a node with \"id\" and \"name\"");
    EtNode e;
    e.id = integer(n, "id", where, 0);
    e.name = text(n, "name", where);
    if (const auto a = n.find("attrs"); a != n.end()) {
      // Schema 1.0.2 and later: rf_id, tid, scope, op_schema as {"name", "type", "value"}.
      if (!a->is_array()) throw InputError(path_, where + ".attrs", "a list of attributes");
      for (std::size_t k = 0; k < a->size(); ++k) {
        const json& at = (*a)[k];
        const std::string w = where + ".attrs[" + std::to_string(k) + "]";
        if (!at.is_object()) throw InputError(path_, w, "an attribute object");
        const std::string name = text(at, "name", w);
        if (name == "rf_id") e.rf_id = integer(at, "value", w, 0);
        if (name == "tid") e.tid = integer(at, "value", w, 0);
        if (name == "scope") e.scope = integer(at, "value", w, 0);
        if (name == "op_schema") e.op_schema = text(at, "value", w);
      }
      e.parent = integer(n, "ctrl_deps", where, 0);
      const auto side = [&](const char* key) {
        const auto it = n.find(key);
        if (it == n.end() || it->is_null()) return std::vector<EtArg>{};
        if (!it->is_object())
          throw InputError(path_, where + "." + key,
                           "an object of values, shapes and types, got " + json_type(*it));
        const auto get = [&](const char* k) -> const json* {
          const auto f = it->find(k);
          return f == it->end() ? nullptr : &*f;
        };
        static const json kEmpty = json::array();
        const json* values = get("values");
        return args(values ? *values : kEmpty, get("shapes"), get("types"),
                    where + "." + key + ".values", get("strides"));
      };
      e.inputs = side("inputs");
      e.outputs = side("outputs");
    } else {
      // Schema 1.0.1 (torch 1.13's ExecutionGraphObserver, torch 2.0-2.1).
      e.rf_id = integer(n, "rf_id", where, 0);
      e.tid = integer(n, "tid", where, 0);
      e.scope = integer(n, "scope", where, 0);
      e.parent = integer(n, "parent", where, 0);
      e.op_schema = text(n, "op_schema", where);
      const auto side = [&](const char* values, const char* shapes, const char* types) {
        const auto v = n.find(values);
        if (v == n.end()) return std::vector<EtArg>{};
        const auto s = n.find(shapes), t = n.find(types);
        return args(*v, s == n.end() ? nullptr : &*s, t == n.end() ? nullptr : &*t,
                    where + "." + values);
      };
      e.inputs = side("inputs", "input_shapes", "input_types");
      e.outputs = side("outputs", "output_shapes", "output_types");
    }
    e.cat = text(n, "cat", where);
    if (!e.cat.empty()) {
      // A GPU node that Chakra's trace linker put into the ET: its "dur" (microseconds) is GPU
      // time.
      const auto d = n.find("dur");
      if (d != n.end() && d->is_number() && d->get<double>() >= 0 && d->get<double>() < 1e12)
        e.gpu_dur_ns = std::llround(d->get<double>() * 1000.0);
    }
    e.root = starts(e.name, "[pytorch|profiler|execution_");
    e.op = !e.root && e.cat.empty() && (!e.op_schema.empty() || starts(e.name, "aten::"));
    return e;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The schema marks a mutated argument "Tensor(a!)"; a node without one (a few, such as detach_,
// in torch 2.x) is taken to mutate when its name ends in '_'.
bool mutates(const EtNode& e) {
  return e.op_schema.empty() ? e.name.ends_with('_') : e.op_schema.find("!)") != std::string::npos;
}

// Argument positions an op updates in place: those whose type the schema marks mutable
// ("Tensor(a!)", "Tensor(a!)[]": torch 2.x's `_fused_adamw_` and `_foreach_add_` return nothing
// and write their list arguments), and those named running_* (batch norm updates its running
// statistics in place, though no schema of torch 1.13 or 2.x marks them `!`). The keyword-only
// marker `*` is not an argument: the ET lists the arguments without it.
std::set<std::size_t> mutated_args(const std::string& schema) {
  std::set<std::size_t> out;
  const auto open = schema.find('('), close = schema.find(") ->");
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::size_t pos = 0, at = open + 1;
  int depth = 0;
  for (std::size_t k = open + 1; k <= close; ++k) {
    const char c = schema[k];
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && k < close) --depth;
    if ((c == ',' && depth == 0) || k == close) {
      const std::string arg = schema.substr(at, k - at);
      at = k + 1;
      if (arg.find_first_not_of(" *") == std::string::npos) continue;
      const auto name = arg.rfind(' ');
      if (name == std::string::npos) {
        ++pos;
        continue;
      }
      const std::string type = arg.substr(0, name);
      if (type.find("!)") != std::string::npos || arg.compare(name + 1, 8, "running_") == 0)
        out.insert(pos);
      ++pos;
    }
  }
  return out;
}

sim::Dtype dtype_of_type(const std::string& type) {
  // "Tensor(float)" -> "float"; "Tensor(c10::Half)" -> "c10::Half"; a list's first element:
  // "GenericList[Tensor(c10::BFloat16),Tensor(c10::BFloat16)]" -> "c10::BFloat16" (the
  // foreach and fused optimizer ops take lists of one dtype).
  const auto open = type.find('('), close = type.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return sim::Dtype::F32;
  return dtype_from_profiler({type.substr(open + 1, close - open - 1)});
}

// Where each node sits in the call tree.
struct Place {
  int outer_op = -1;  ///< outermost operator at or above the node (index), -1 if none
  sim::Phase phase = sim::Phase::Forward;
  int step = -1;   ///< the ProfilerStep#N label above (index), -1 if none
  int label = -1;  ///< nearest label above that names a region (not a root, not a step)
};

std::vector<Place> places(const std::vector<EtNode>& nodes, const std::map<std::int64_t, int>& at,
                          const std::string& path) {
  const int n = static_cast<int>(nodes.size());
  std::vector<Place> pl(static_cast<std::size_t>(n));
  std::vector<int> state(static_cast<std::size_t>(n), 0);  // 0 new, 1 on the path, 2 done
  for (int start = 0; start < n; ++start) {
    // Walk up to a placed node (or the top), then place the nodes on the way back down.
    std::vector<int> chain;
    int i = start;
    while (i >= 0 && state[static_cast<std::size_t>(i)] == 0) {
      state[static_cast<std::size_t>(i)] = 1;
      chain.push_back(i);
      const EtNode& e = nodes[static_cast<std::size_t>(i)];
      const auto p = at.find(e.parent);
      i = (p == at.end() || p->second == i) ? -1 : p->second;
    }
    if (i >= 0 && state[static_cast<std::size_t>(i)] == 1)
      throw InputError(path, "nodes[" + std::to_string(chain.back()) + "].parent",
                       "a parent chain that ends at the process node, got a cycle");
    Place up = i >= 0 ? pl[static_cast<std::size_t>(i)] : Place{};
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const EtNode& e = nodes[static_cast<std::size_t>(*it)];
      Place p = up;
      if (e.op && p.outer_op < 0) p.outer_op = *it;
      if (!e.op && !e.root && e.cat.empty()) {
        const std::string l = lower(e.name);
        if (starts(e.name, "ProfilerStep#")) {
          p.step = *it;
        } else {
          p.label = *it;
          if (starts(e.name, "Optimizer.") || l.find("optimizer") != std::string::npos)
            p.phase = sim::Phase::Update;
          else if (e.scope == 1 || starts(e.name, "autograd::engine::evaluate_function") ||
                   l.find("backward") != std::string::npos)
            p.phase = sim::Phase::Backward;
        }
      }
      pl[static_cast<std::size_t>(*it)] = p;
      state[static_cast<std::size_t>(*it)] = 2;
      up = p;
    }
  }
  return pl;
}

// Pairs a[i] with b[j] where the names agree, in order. Where they disagree it skips, in
// whichever sequence needs fewer, the names up to the next 3 agreeing ones (at most 64 ahead):
// the profiler and the observer each miss a few events the other records.
std::vector<std::pair<std::size_t, std::size_t>> align(const std::vector<const std::string*>& a,
                                                       const std::vector<const std::string*>& b) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto agree = [&](std::size_t x, std::size_t y) {
    for (std::size_t t = 0; t < 3; ++t) {
      if (x + t >= a.size() || y + t >= b.size())
        return t > 0 || (x < a.size() && y < b.size() && *a[x] == *b[y]);
      if (*a[x + t] != *b[y + t]) return false;
    }
    return true;
  };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (*a[i] == *b[j]) {
      out.emplace_back(i++, j++);
      continue;
    }
    bool moved = false;
    for (std::size_t d = 1; d < 64 && !moved; ++d) {
      if (agree(i + d, j)) {
        i += d;
        moved = true;
      } else if (agree(i, j + d)) {
        j += d;
        moved = true;
      }
    }
    if (!moved) ++i, ++j;
  }
  return out;
}

// A GEMM's operands' leading dimensions in memory (elements), from the ET's strides: a row-major
// operand's is its second-to-last stride, a transposed view's (unit stride on its second-to-last
// dimension) its last. What cuBLAS's vectorised kernels need aligned (sim::misaligned_gemm); the
// view shapes alone cannot tell, since a transposed view's leading dimension is its first. Empty
// unless every operand of rank >= 2 has usable strides.
std::vector<std::int64_t> gemm_leading_dims(const EtNode& e) {
  static const std::set<std::string> kGemms = {"aten::mm",      "aten::addmm",  "aten::bmm",
                                               "aten::baddbmm", "aten::matmul", "aten::linear",
                                               "aten::addbmm"};
  std::vector<std::int64_t> out;
  if (!kGemms.count(e.name)) return out;
  for (const EtArg& a : e.inputs) {
    if (a.tensors.size() != 1 || a.tensors[0].shape.size() < 2) continue;
    const auto& sh = a.tensors[0].shape;
    const auto& st = a.tensors[0].strides;
    if (st.size() != sh.size()) return {};
    const std::size_t r = sh.size();
    if (st[r - 1] == 1 || sh[r - 1] == 1)
      out.push_back(st[r - 2]);
    else if (st[r - 2] == 1 || sh[r - 2] == 1)
      out.push_back(st[r - 1]);
    else
      return {};  // neither dimension contiguous: torch copies it first
  }
  return out;
}

// A fused attention op's dropout_p argument (its position in each ATen schema,
// native_functions.yaml; the ops that run the dropout inside the kernel, forward or backward),
// 0 for any other op or a value that is no probability.
double attention_dropout(const EtNode& e) {
  static const std::map<std::string, std::size_t> pos = {
      {"aten::scaled_dot_product_attention", 4},
      {"aten::_scaled_dot_product_flash_attention", 3},
      {"aten::_scaled_dot_product_efficient_attention", 5},
      {"aten::_scaled_dot_product_cudnn_attention", 5},
      {"aten::_flash_attention_forward", 7},
      {"aten::_efficient_attention_forward", 8},
      {"aten::_cudnn_attention_forward", 9},
      {"aten::_scaled_dot_product_flash_attention_backward", 10},
      {"aten::_scaled_dot_product_efficient_attention_backward", 9},
      {"aten::_scaled_dot_product_cudnn_attention_backward", 13},
      {"aten::_flash_attention_backward", 10},
      {"aten::_efficient_attention_backward", 11}};
  const auto it = pos.find(e.name);
  if (it == pos.end() || e.inputs.size() <= it->second) return 0.0;
  const std::string& v = e.inputs[it->second].concrete;
  char* end = nullptr;
  const double p = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
  return !v.empty() && end == v.c_str() + v.size() && p > 0.0 && p <= 1.0 ? p : 0.0;
}

// The op's dtype, signature and FLOPs from its inputs; true for a view or an allocation (class
// "meta"), which moves no bytes either.
bool set_work(const EtNode& e, sim::Op& op) {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::string> concrete, types;
  for (const EtArg& a : e.inputs) {
    shapes.push_back(a.tensors.size() == 1 ? a.tensors[0].shape : std::vector<std::int64_t>{});
    concrete.push_back(a.concrete);
    if (!a.tensors.empty() && a.tensors[0].t.defined()) types.push_back(a.type);
  }
  op.dtype = types.empty() ? sim::Dtype::F32 : dtype_of_type(types.front());
  op.signature = sim::Signature{e.name, shapes, op.dtype};
  op.leading_dims = gemm_leading_dims(e);
  std::vector<std::vector<std::int64_t>> work_shapes = shapes;
  if (starts(e.name, "aten::_foreach_")) {
    // A foreach op runs its elementwise update over every tensor of its first list.
    work_shapes.clear();
    if (!e.inputs.empty())
      for (const EtTensorUse& t : e.inputs[0].tensors) work_shapes.push_back(t.shape);
  }
  const WorkEstimate w = estimate_work(e.name, work_shapes, op.dtype);
  double flops = w.flops;
  if (starts(e.name, "aten::_foreach_")) {
    flops = 0;
    for (const auto& s : work_shapes)
      flops += static_cast<double>(models::shape_elements(s).value_or(0));
  }
  if (const auto f = conv_flops_from_concrete(e.name, shapes, concrete)) flops = *f;
  if (const auto f = attention_flops_from_concrete(e.name, shapes, concrete)) flops = *f;
  op.dropout = attention_dropout(e);
  const bool moves_nothing = w.op_class == "meta";
  op.flops = sim::Flops{moves_nothing ? 0.0 : flops};
  return moves_nothing;
}

struct Dataflow {
  struct Version {
    sim::TensorRef ref;
    int seq = -1;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, Version> of_tensor;  // (id, storage) -> writer
  std::map<std::int64_t, Version> of_storage;                          // in-place writer
  std::map<std::int64_t, std::vector<sim::OpId>> readers;              // since the last write
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<sim::OpId, std::int64_t>> external;
  std::set<std::pair<std::int64_t, std::int64_t>> written_in_place;
};

struct Builder {
  const std::vector<EtNode>& nodes;
  const std::vector<Place>& pl;
  const std::map<int, std::vector<int>>& inner;  ///< kept op -> the operator nodes inside it
  EtImport& r;
  Dataflow df;
  std::set<std::pair<sim::OpId, sim::OpId>> control;  // (consumer, producer)

  /// The op of node i, its FLOPs and bytes from the shapes; tensors' edges through `df`.
  sim::OpId add(int i, int seq) {
    const EtNode& e = nodes[static_cast<std::size_t>(i)];
    sim::Op op;
    op.name = e.name + " #" + std::to_string(e.id);
    op.type = e.name;
    op.phase = pl[static_cast<std::size_t>(i)].phase;
    if (const int l = pl[static_cast<std::size_t>(i)].label; l >= 0)
      op.layer = nodes[static_cast<std::size_t>(l)].name;
    const bool moves_nothing = set_work(e, op);
    const sim::OpId self = static_cast<sim::OpId>(r.graph.ops.size());
    std::set<std::pair<std::int64_t, std::int64_t>> in_keys;
    std::set<std::int64_t> in_storages;
    std::set<sim::TensorRef> data;
    std::int64_t read = 0, written = 0;
    for (const EtArg& a : e.inputs)
      for (const EtTensorUse& u : a.tensors) {
        if (!u.t.defined()) continue;
        const std::pair key{u.t.id, u.t.storage};
        if (!in_keys.insert(key).second) continue;
        in_storages.insert(u.t.storage);
        read += u.bytes;
        const auto t = df.of_tensor.find(key);
        const auto s = df.of_storage.find(u.t.storage);
        const Dataflow::Version* v = t != df.of_tensor.end() ? &t->second : nullptr;
        if (s != df.of_storage.end() && (!v || s->second.seq > v->seq)) v = &s->second;
        if (v && v->ref.op != self && data.insert(v->ref).second) op.inputs.push_back(v->ref);
        if (!v && !df.external.count(key)) df.external[key] = {self, u.bytes};
        df.readers[u.t.storage].push_back(self);
      }
    // Results, and the inputs that operators inside this one update in place (batch_norm's
    // running statistics, written by native_batch_norm).
    struct Result {
      const EtArg* arg;
      const EtTensorUse* use;
      bool in_place;
    };
    std::vector<Result> results;
    for (const EtArg& a : e.outputs)
      for (const EtTensorUse& u : a.tensors)
        results.push_back({&a, &u, mutates(e) && in_keys.count({u.t.id, u.t.storage}) > 0});
    for (const int c : inner.at(i))
      if (mutates(nodes[static_cast<std::size_t>(c)]))
        for (const EtArg& a : nodes[static_cast<std::size_t>(c)].outputs)
          for (const EtTensorUse& u : a.tensors)
            if (in_keys.count({u.t.id, u.t.storage})) results.push_back({&a, &u, true});
    for (const std::size_t k : mutated_args(e.op_schema))
      if (k < e.inputs.size())
        for (const EtTensorUse& u : e.inputs[k].tensors)
          results.push_back({&e.inputs[k], &u, true});
    std::set<std::pair<std::int64_t, std::int64_t>> out_keys;
    for (const Result& res : results) {
      const EtArg& a = *res.arg;
      const EtTensorUse& u = *res.use;
      if (!u.t.defined()) continue;
      const std::pair key{u.t.id, u.t.storage};
      if (!out_keys.insert(key).second) continue;
      const sim::TensorRef ref{self, static_cast<std::int32_t>(op.outputs.size())};
      op.outputs.push_back(sim::TensorOut{.name = op.name + ":t" + std::to_string(u.t.id),
                                          .bytes = sim::Bytes{u.bytes},
                                          .shape = u.shape,
                                          .dtype = dtype_of_type(a.type)});
      written += u.bytes;
      df.of_tensor[key] = {ref, seq};
      // A view or an alias of an input (a storage the op read, no `!` in the schema) writes
      // nothing; an in-place result or a fresh storage is a new version of the storage, after
      // every read of the old one.
      const bool in_place = res.in_place;
      if (!in_place && in_storages.count(u.t.storage)) continue;
      if (in_place) df.written_in_place.insert(key);
      for (const sim::OpId reader : df.readers[u.t.storage])
        if (reader != self) control.insert({self, reader});
      df.readers[u.t.storage].clear();
      df.of_storage[u.t.storage] = {ref, seq};
    }
    op.bytes_read = sim::Bytes{moves_nothing ? 0 : read};
    op.bytes_written = sim::Bytes{moves_nothing ? 0 : written};
    r.graph.ops.push_back(std::move(op));
    return self;
  }

  void finish_edges() {
    for (const auto& edge : control) {
      const sim::OpId producer = edge.second;
      sim::Op& op = r.graph.ops[static_cast<std::size_t>(edge.first)];
      const bool has_data = std::any_of(op.inputs.begin(), op.inputs.end(),
                                        [&](const sim::TensorRef& t) { return t.op == producer; });
      if (has_data) continue;
      op.control_inputs.push_back(producer);
    }
    for (const sim::Op& op : r.graph.ops) {
      r.data_edges += static_cast<int>(op.inputs.size());
      r.control_edges += static_cast<int>(op.control_inputs.size());
    }
    // Model state: tensors the step reads before writing and then updates in place (parameters,
    // optimizer state, running statistics) stay resident all step, on their first reader's device.
    for (const auto& [key, first] : df.external)
      if (df.written_in_place.count(key))
        r.graph.ops[static_cast<std::size_t>(first.first)].persistent.v += first.second;
  }
};

}  // namespace

namespace {

struct Parsed {
  std::vector<EtNode> nodes;
  std::map<std::int64_t, int> at;  // node id -> index
};

Parsed parse_et(const std::string& path, EtImport& r) {
  const std::string text = read_maybe_gzip(path);
  sim::check_json_nesting(text, path);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(
        path, "byte " + std::to_string(e.byte),
        "PyTorch Execution Trace JSON (an object with \"schema\" and \"nodes\"), got a "
        "parse error");
  } catch (const json::exception& e) {
    throw InputError(path, "", std::string("JSON with numbers a double holds, got: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("nodes"))
    throw InputError(
        path, "nodes",
        "a PyTorch Execution Trace (an object with \"schema\" and \"nodes\"), got " +
            std::string(doc.is_object() ? "an object without \"nodes\"" : doc.type_name()));
  const json& nodes = doc["nodes"];
  if (!nodes.is_array())
    throw InputError(path, "nodes", "a list of nodes, got " + json_type(nodes));
  Reader rd(path);
  r.schema = rd.text(doc, "schema", "");
  Parsed p;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    p.nodes.push_back(rd.node(nodes[k], k));
    if (!p.at.emplace(p.nodes.back().id, static_cast<int>(k)).second)
      throw InputError(path, "nodes[" + std::to_string(k) + "].id",
                       "a node id used once, got " + std::to_string(p.nodes.back().id) + " again");
  }
  r.nodes = static_cast<int>(p.nodes.size());
  return p;
}

// Kineto: the profiler event of each ET node (-1 if none); sets r.link_method.
std::vector<std::int64_t> link_nodes(const Profile& prof, const std::vector<EtNode>& nodes,
                                     const std::vector<int>& kept, EtImport& r);

// Kineto: sets the ops' measured times from their linked events.
void time_from_kineto(const Profile& prof, const std::vector<std::int64_t>& event_of,
                      const std::vector<EtNode>& nodes, const std::vector<int>& kept,
                      const std::vector<sim::OpId>& op_of, int step, EtImport& r);

// A trace of several steps: the first one (lowest record-function id) is the graph. Returns its
// index, -1 if the trace has no ProfilerStep#N label; `steps` counts the labels.
int first_step(const std::vector<EtNode>& nodes, int& steps) {
  int step = -1;
  steps = 0;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const EtNode& e = nodes[static_cast<std::size_t>(i)];
    if (e.op || !starts(e.name, "ProfilerStep#")) continue;
    ++steps;
    if (step < 0 ||
        std::make_pair(e.rf_id, e.id) < std::make_pair(nodes[static_cast<std::size_t>(step)].rf_id,
                                                       nodes[static_cast<std::size_t>(step)].id))
      step = i;
  }
  return step;
}

// The outermost operators of `step` (all of them where there is no step) in `kept`. Outside
// every step label, an operator of another thread than the step's (the autograd engine's device
// thread runs a CUDA backward) may have run during the step: `others`, for join_other_threads.
void outermost_ops(const std::vector<EtNode>& nodes, const std::vector<Place>& pl, int step,
                   std::vector<int>& kept, std::vector<int>& others, EtImport& r) {
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const EtNode& e = nodes[static_cast<std::size_t>(i)];
    if (!e.op) continue;
    const Place& at = pl[static_cast<std::size_t>(i)];
    if (at.outer_op != i)
      ++r.nested;
    else if (step < 0 || at.step == step)
      kept.push_back(i);
    else if (at.step < 0 && e.tid != nodes[static_cast<std::size_t>(step)].tid)
      others.push_back(i);
    else
      ++r.outside_step;
  }
}

// Operators of other threads outside every step label (`others`): on CUDA the autograd engine
// runs the backward on its own device thread, under a second thread root. Those that ran during
// `step` join `kept`: by time where the Kineto trace has the step's event and the operator's
// (its event lies inside the step's), else (no Kineto trace, or an operator without an event)
// only where the trace holds a single step, so that the operator can belong to no other. The
// rest count as outside the step.
void join_other_threads(const std::vector<EtNode>& nodes, int step, int steps,
                        const std::vector<int>& others, const Profile* prof,
                        const std::vector<std::int64_t>& event_of, std::vector<int>& kept,
                        EtImport& r) {
  if (others.empty()) return;
  const TraceEvent* step_ev = nullptr;
  if (prof && event_of[static_cast<std::size_t>(step)] >= 0)
    step_ev = &prof->events[static_cast<std::size_t>(event_of[static_cast<std::size_t>(step)])];
  std::set<std::int64_t> tids;
  int by_time = 0, by_single = 0;
  for (const int i : others) {
    const std::int64_t ev = prof ? event_of[static_cast<std::size_t>(i)] : -1;
    bool in = false;
    if (step_ev && ev >= 0) {
      const TraceEvent& o = prof->events[static_cast<std::size_t>(ev)];
      in = o.ts_ns >= step_ev->ts_ns && o.end_ns() <= step_ev->end_ns();
      by_time += in;
    } else {
      in = steps == 1;
      by_single += in;
    }
    if (!in) {
      ++r.outside_step;
      continue;
    }
    kept.push_back(i);
    tids.insert(nodes[static_cast<std::size_t>(i)].tid);
  }
  r.other_threads = by_time + by_single;
  if (r.other_threads > 0) {
    std::string list;
    for (const std::int64_t t : tids) list += (list.empty() ? "" : ", ") + std::to_string(t);
    const std::string& sn = nodes[static_cast<std::size_t>(step)].name;
    std::string why;
    if (by_time > 0) why = std::to_string(by_time) + " by their Kineto events, inside the step's";
    if (by_single > 0)
      why += (why.empty() ? "" : "; ") + std::to_string(by_single) +
             (prof ? " without a Kineto event" : " without a Kineto trace to time them") +
             ", as the trace holds no other step";
    r.notes.push_back(std::to_string(r.other_threads) + " operators of other threads (tid " + list +
                      ": on CUDA the autograd engine's backward) imported with " + sn + ": " + why);
  }
}

}  // namespace

EtImport import_pytorch_et(const std::string& et_path, const std::string& kineto_path) {
  EtImport r;
  const Parsed p = parse_et(et_path, r);
  const std::vector<EtNode>& nodes = p.nodes;
  const std::vector<Place> pl = places(nodes, p.at, et_path);
  int steps = 0;
  const int step = first_step(nodes, steps);
  const bool have_steps = step >= 0;
  std::vector<int> kept, others;
  outermost_ops(nodes, pl, step, kept, others, r);
  std::optional<Profile> prof;
  std::vector<std::int64_t> event_of;
  if (!kineto_path.empty()) {
    prof = read_profile(kineto_path);
    require_measured_work(*prof);
    std::vector<int> candidates = kept;
    candidates.insert(candidates.end(), others.begin(), others.end());
    event_of = link_nodes(*prof, nodes, candidates, r);
  }
  join_other_threads(nodes, step, steps, others, prof ? &*prof : nullptr, event_of, kept, r);
  bool all_rf = true;
  for (const int i : kept) all_rf &= nodes[static_cast<std::size_t>(i)].rf_id > 0;
  if (kept.empty())
    throw InputError(et_path, "nodes",
                     "at least one operator node (an op schema or an aten:: name)" +
                         std::string(have_steps ? " inside a ProfilerStep#N label" : "") +
                         ", got none");
  std::stable_sort(kept.begin(), kept.end(), [&](int a, int b) {
    const EtNode& x = nodes[static_cast<std::size_t>(a)];
    const EtNode& y = nodes[static_cast<std::size_t>(b)];
    return all_rf ? x.rf_id < y.rf_id : x.id < y.id;
  });
  std::map<int, std::vector<int>> inner;
  for (const int i : kept) inner[i];
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const int o = pl[static_cast<std::size_t>(i)].outer_op;
    if (o >= 0 && o != i && nodes[static_cast<std::size_t>(i)].op && inner.count(o))
      inner[o].push_back(i);
  }
  Builder b{nodes, pl, inner, r, {}, {}};
  std::vector<sim::OpId> op_of(nodes.size(), -1);
  bool any_cuda = false;
  for (const EtNode& e : nodes)
    for (const EtArg& a : e.inputs)
      for (const EtTensorUse& u : a.tensors) any_cuda |= starts(u.t.device, "cuda");
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const int i = kept[k];
    op_of[static_cast<std::size_t>(i)] = b.add(i, static_cast<int>(k));
    // On a GPU run an op of CPU tensors only ran on the host (data loading, .item()).
    if (any_cuda) {
      bool cpu_only = true, any = false;
      for (const auto* side : {&nodes[static_cast<std::size_t>(i)].inputs,
                               &nodes[static_cast<std::size_t>(i)].outputs})
        for (const EtArg& a : *side)
          for (const EtTensorUse& u : a.tensors)
            if (u.t.defined()) {
              any = true;
              cpu_only &= !starts(u.t.device, "cuda");
            }
      if (any && cpu_only) r.graph.ops.back().device_kind = sim::DeviceKind::Cpu;
    }
  }
  b.finish_edges();
  // GPU nodes that Chakra's trace linker added: their time belongs to the op that launched them.
  std::map<sim::OpId, std::int64_t> gpu_ns;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].cat.empty() && pl[i].outer_op >= 0 &&
        op_of[static_cast<std::size_t>(pl[i].outer_op)] >= 0)
      gpu_ns[op_of[static_cast<std::size_t>(pl[i].outer_op)]] += nodes[i].gpu_dur_ns;
  for (const auto& [o, ns] : gpu_ns) {
    r.graph.ops[static_cast<std::size_t>(o)].measured = sim::Duration{ns};
    r.graph.ops[static_cast<std::size_t>(o)].device_kind = sim::DeviceKind::Gpu;
    ++r.gpu_timed;
  }
  if (prof) time_from_kineto(*prof, event_of, nodes, kept, op_of, step, r);

  for (const sim::Op& op : r.graph.ops) {
    r.forward_ops += op.phase == sim::Phase::Forward;
    r.backward_ops += op.phase == sim::Phase::Backward;
    r.update_ops += op.phase == sim::Phase::Update;
    if (op.measured) r.measured_ops_ns += op.measured->ns;
  }
  r.ops = r.graph.num_ops();
  std::string name = std::filesystem::path(et_path).filename().string();
  for (const char* ext : {".gz", ".json"})
    if (name.size() > std::string(ext).size() && name.ends_with(ext))
      name.resize(name.size() - std::string(ext).size());
  r.graph.name = name;
  r.graph.metadata["builder"] = "pytorch-et";
  r.graph.metadata["source"] = et_path;
  r.graph.metadata["schema"] = r.schema;
  if (!kineto_path.empty()) {
    r.graph.metadata["kineto"] = kineto_path;
    r.graph.metadata["kineto_link"] = r.link_method;
    if (r.measured_step_ns > 0)
      r.graph.metadata["measured_step_ns"] = std::to_string(r.measured_step_ns);
  }
  if (steps > 1)
    r.notes.push_back("the trace holds " + std::to_string(steps) +
                      " ProfilerStep#N labels: imported " +
                      nodes[static_cast<std::size_t>(step)].name);
  if (r.outside_step > 0)
    r.notes.push_back(std::to_string(r.outside_step) + " operators outside " +
                      (have_steps ? nodes[static_cast<std::size_t>(step)].name : std::string()) +
                      " not imported");
  r.graph.finalize(et_path);
  return r;
}

namespace {

// The profiler event of each ET node (-1 if none): by record-function id where the profiler
// wrote them, else by order (pytorch_et.hpp). Sets r.link_method.
std::vector<std::int64_t> link_nodes(const Profile& prof, const std::vector<EtNode>& nodes,
                                     const std::vector<int>& kept, EtImport& r) {
  std::vector<std::size_t> host;  // host-side events that can stand for an ET node
  for (std::size_t k = 0; k < prof.events.size(); ++k) {
    const TraceEvent& e = prof.events[k];
    if (!e.on_gpu() && e.kind != EventKind::Runtime && e.kind != EventKind::Sync &&
        e.kind != EventKind::GpuAnnotation)
      host.push_back(k);
  }
  std::vector<std::int64_t> event_of(nodes.size(), -1);
  // By record-function id where the profiler wrote them (torch >= 2.1 with the observer
  // registered to it); torch 1.13 and unregistered observers write none or zeros.
  std::map<std::int64_t, std::size_t> by_rf;
  for (const std::size_t k : host) {
    const auto it = prof.events[k].args.find("Record function id");
    if (it == prof.events[k].args.end()) continue;
    try {
      const std::int64_t id = std::stoll(it->second);
      if (id > 0) by_rf.emplace(id, k);
    } catch (const std::exception&) {
    }
  }
  int by_id = 0;
  for (const int i : kept) {
    const auto it = by_rf.find(nodes[static_cast<std::size_t>(i)].rf_id);
    by_id += it != by_rf.end() &&
             prof.events[it->second].name == nodes[static_cast<std::size_t>(i)].name;
  }
  if (by_id * 2 >= static_cast<int>(kept.size())) {
    r.link_method = "record-function-id";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto it = by_rf.find(nodes[i].rf_id);
      if (it != by_rf.end() && nodes[i].rf_id > 0 && prof.events[it->second].name == nodes[i].name)
        event_of[i] = static_cast<std::int64_t>(it->second);
    }
  } else {
    r.link_method = "order";
    // Every non-root node of each ET thread, in start order, against each profiler thread's
    // host events in time order; each ET thread takes the profiler thread it agrees with most.
    std::map<std::int64_t, std::vector<std::size_t>> et_threads;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (!nodes[i].root && nodes[i].cat.empty()) et_threads[nodes[i].tid].push_back(i);
    std::map<std::string, std::vector<std::size_t>> k_threads;
    for (const std::size_t k : host)
      k_threads[prof.events[k].pid + "/" + prof.events[k].tid].push_back(k);
    std::set<std::string> taken;
    for (auto& [tid, list] : et_threads) {
      std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
        return nodes[a].rf_id != nodes[b].rf_id ? nodes[a].rf_id < nodes[b].rf_id
                                                : nodes[a].id < nodes[b].id;
      });
      std::vector<const std::string*> a;
      for (const std::size_t i : list) a.push_back(&nodes[i].name);
      std::vector<std::pair<std::size_t, std::size_t>> best;
      std::string best_thread;
      for (const auto& [th, events] : k_threads) {
        if (taken.count(th)) continue;
        std::vector<const std::string*> bn;
        for (const std::size_t k : events) bn.push_back(&prof.events[k].name);
        auto m = align(a, bn);
        if (m.size() > best.size()) best = std::move(m), best_thread = th;
      }
      if (best.empty()) continue;
      taken.insert(best_thread);
      const auto& events = k_threads[best_thread];
      for (const auto& [x, y] : best) event_of[list[x]] = static_cast<std::int64_t>(events[y]);
    }
  }
  return event_of;
}

// GPU time of each kept op: the GPU activities whose launching op lies inside the op's event on
// the same thread.
std::vector<std::int64_t> gpu_time(const Profile& prof, const std::vector<int>& kept,
                                   const std::vector<std::int64_t>& event_of) {
  std::map<std::string, std::vector<std::pair<std::int64_t, std::size_t>>>
      spans;  // thread -> (ts, kept#)
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const std::int64_t ev = event_of[static_cast<std::size_t>(kept[k])];
    if (ev < 0) continue;
    const TraceEvent& e = prof.events[static_cast<std::size_t>(ev)];
    spans[e.pid + "/" + e.tid].emplace_back(e.ts_ns, k);
  }
  for (auto& [th, v] : spans) std::sort(v.begin(), v.end());
  std::vector<std::int64_t> gpu(kept.size(), 0);
  for (const TraceEvent& g : prof.events) {
    if (!g.on_gpu() || g.op < 0) continue;
    const TraceEvent& h = prof.events[static_cast<std::size_t>(g.op)];
    const auto it = spans.find(h.pid + "/" + h.tid);
    if (it == spans.end()) continue;
    auto u = std::upper_bound(it->second.begin(), it->second.end(),
                              std::make_pair(h.ts_ns, kept.size()));
    if (u == it->second.begin()) continue;
    --u;
    const TraceEvent& o =
        prof.events[static_cast<std::size_t>(event_of[static_cast<std::size_t>(kept[u->second])])];
    if (h.ts_ns < o.end_ns()) gpu[u->second] += g.dur_ns;
  }
  return gpu;
}

// CPU-only run: the host time of labels outside their children (the autograd engine's per-node
// work, the optimizer's Python loop), charged to each label's first op.
std::vector<std::int64_t> label_time(const Profile& prof, const std::vector<EtNode>& nodes,
                                     const std::vector<int>& kept,
                                     const std::vector<std::int64_t>& event_of) {
  std::vector<std::int64_t> charge(kept.size(), 0);
  std::vector<std::int64_t> child_ns(nodes.size(), 0);
  std::map<std::int64_t, int> at;
  for (std::size_t i = 0; i < nodes.size(); ++i) at[nodes[i].id] = static_cast<int>(i);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto p = at.find(nodes[i].parent);
    if (event_of[i] >= 0 && p != at.end() && p->second != static_cast<int>(i))
      child_ns[static_cast<std::size_t>(p->second)] +=
          prof.events[static_cast<std::size_t>(event_of[i])].dur_ns;
  }
  std::vector<bool> charged(nodes.size(), false);
  for (std::size_t k = 0; k < kept.size(); ++k) {
    // Labels above the op, innermost first, that no earlier op has claimed.
    for (auto p = at.find(nodes[static_cast<std::size_t>(kept[k])].parent); p != at.end();) {
      const auto i = static_cast<std::size_t>(p->second);
      const EtNode& e = nodes[i];
      if (e.root || starts(e.name, "ProfilerStep#") || charged[i]) break;
      charged[i] = true;
      if (event_of[i] >= 0)
        charge[k] += std::max<std::int64_t>(
            0, prof.events[static_cast<std::size_t>(event_of[i])].dur_ns - child_ns[i]);
      const auto up = at.find(e.parent);
      if (up == at.end() || up->second == static_cast<int>(i)) break;
      p = up;
    }
  }

  return charge;
}

void time_from_kineto(const Profile& prof, const std::vector<std::int64_t>& event_of,
                      const std::vector<EtNode>& nodes, const std::vector<int>& kept,
                      const std::vector<sim::OpId>& op_of, int step, EtImport& r) {
  r.device_name = prof.device_name;
  const bool any_gpu = prof.has_gpu_activity();
  // The measured step: the profiler's event of the imported ProfilerStep#N label, else its first.
  if (step >= 0 && event_of[static_cast<std::size_t>(step)] >= 0)
    r.measured_step_ns =
        prof.events[static_cast<std::size_t>(event_of[static_cast<std::size_t>(step)])].dur_ns;
  for (const StepWindow& w : profile_steps(prof))
    if (r.measured_step_ns == 0 && starts(w.name, "ProfilerStep"))
      r.measured_step_ns = w.end_ns - w.begin_ns;
  const std::vector<std::int64_t> gpu = gpu_time(prof, kept, event_of);
  const std::vector<std::int64_t> charge =
      any_gpu ? std::vector<std::int64_t>(kept.size(), 0) : label_time(prof, nodes, kept, event_of);
  int unlinked = 0;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const std::int64_t ev = event_of[static_cast<std::size_t>(kept[k])];
    sim::Op& op = r.graph.ops[static_cast<std::size_t>(op_of[static_cast<std::size_t>(kept[k])])];
    if (ev < 0) {
      ++unlinked;
      continue;
    }
    ++r.linked;
    const std::int64_t cpu = prof.events[static_cast<std::size_t>(ev)].dur_ns;
    if (!any_gpu) {
      op.measured = sim::Duration{cpu + charge[k]};
      op.device_kind = sim::DeviceKind::Cpu;
    } else if (gpu[k] > 0) {
      op.measured = sim::Duration{gpu[k]};
      op.device_kind = sim::DeviceKind::Gpu;
      ++r.gpu_timed;
    } else if (op.device_kind == sim::DeviceKind::Cpu) {
      op.measured = sim::Duration{cpu};
    } else {
      op.measured = sim::Duration{0};  // launched no GPU work (a view, an allocation)
    }
  }
  if (unlinked > 0)
    r.notes.push_back(std::to_string(unlinked) + " of " + std::to_string(kept.size()) +
                      " ops have no event in the Kineto trace (priced by the cost model)");
  if (r.linked == 0)
    r.notes.push_back(
        "the Kineto trace shares no op with the execution trace: is it the same run?");
}

}  // namespace

std::vector<OpSample> op_samples_from_et(const EtImport& in, const std::string& device_model) {
  std::vector<OpSample> out;
  const std::string device = calibration_key(in.device_name, device_model);
  for (const sim::Op& op : in.graph.ops) {
    if (!op.measured || op.measured->ns <= 0 || !op.signature) continue;
    out.push_back(OpSample{
        .device = device,
        .signature = *op.signature,
        .seconds = static_cast<double>(op.measured->ns) * 1e-9,
        .count = 1,
        .work = WorkEstimate{.flops = op.flops.v,
                             .bytes = static_cast<double>(op.bytes_read.v + op.bytes_written.v),
                             .op_class = op_class_of(op.type)}});
  }
  return out;
}

}  // namespace placesim::calibration

#include "sim/graph.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>

#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::sim {

using nlohmann::json;

std::string to_string(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Update:
      return "update";
    case Phase::Other:
      return "other";
  }
  return "other";
}

std::optional<Phase> parse_phase(std::string_view s) {
  if (s == "forward" || s == "fwd") return Phase::Forward;
  if (s == "backward" || s == "bwd") return Phase::Backward;
  if (s == "update" || s == "optimizer") return Phase::Update;
  if (s == "other") return Phase::Other;
  return std::nullopt;
}

std::string to_string(Layout l) {
  return l == Layout::Nchw ? "nchw" : "nhwc";
}

std::optional<Layout> parse_layout(std::string_view s) {
  if (s == "nchw") return Layout::Nchw;
  if (s == "nhwc" || s == "channels_last") return Layout::Nhwc;
  return std::nullopt;
}

std::string Signature::key() const {
  std::string k = op_type;
  for (const auto& shape : input_shapes) {
    k += '[';
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i != 0) k += ',';
      k += std::to_string(shape[i]);
    }
    k += ']';
  }
  k += ':';
  k += to_string(dtype);
  return k;
}

OpId Graph::op_index(std::string_view n) const {
  const auto it = index.find(std::string(n));
  return it == index.end() ? -1 : it->second;
}

const std::string& Graph::group_of(OpId id) const {
  const Op& op = ops[static_cast<std::size_t>(id)];
  return op.group.empty() ? op.name : op.group;
}

namespace {

// "ops[i] (\"name\")": how finalize names an op in its messages.
std::string op_where(const std::vector<Op>& ops, std::size_t i) {
  return "ops[" + std::to_string(i) + "] (\"" + printable(ops[i].name) + "\")";
}

// The reader's limits (docs/formats.md) hold for graphs built in memory too: derived times
// (FLOPs / peak, bytes / bandwidth) then stay far inside int64 nanoseconds.
void check_op_limits(const std::vector<Op>& ops, std::size_t i, const std::string& origin) {
  const Op& op = ops[i];
  auto where = [&] { return op_where(ops, i); };  // built only for a message
  static constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
  if (op.flops.v < 0 || !std::isfinite(op.flops.v) || op.flops.v > 1e18)
    throw InputError(origin, where() + ".flops",
                     "a finite FLOP count from 0 to 1e18, got " + std::to_string(op.flops.v));
  for (const Bytes b : {op.bytes_read, op.bytes_written, op.persistent})
    if (b.v > kMaxBytes)
      throw InputError(origin, where(), "sizes up to 1 PiB, got " + std::to_string(b.v) + " bytes");
  for (const auto& out : op.outputs)
    if (out.bytes.v > kMaxBytes)
      throw InputError(origin, where() + ".outputs",
                       "sizes up to 1 PiB, got " + std::to_string(out.bytes.v) + " bytes");
  if (op.measured && op.measured->ns > 1'000'000'000'000)
    throw InputError(origin, where() + ".measured",
                     "a duration up to 1000 s, got " + std::to_string(op.measured->ns) + " ns");
  if (op.bytes_read.v < 0)
    throw InputError(origin, where() + ".bytes_read", "a non-negative byte count");
  if (op.bytes_written.v < 0)
    throw InputError(origin, where() + ".bytes_written", "a non-negative byte count");
  if (op.persistent.v < 0)
    throw InputError(origin, where() + ".persistent_bytes", "a non-negative byte count");
  if (op.measured && op.measured->ns < 0)
    throw InputError(origin, where() + ".measured", "a non-negative duration");
  if (op.host_before.ns < 0)
    throw InputError(origin, where() + ".host_before", "a non-negative duration");
  for (std::size_t k = 0; k < op.outputs.size(); ++k) {
    if (op.outputs[k].bytes.v < 0) {
      throw InputError(origin, where() + ".outputs[" + std::to_string(k) + "].bytes",
                       "a non-negative byte count");
    }
  }
}

// The distinct producers (data and control) of op i, each checked to exist.
std::vector<OpId> predecessors(const std::vector<Op>& ops, std::size_t i,
                               const std::string& origin) {
  const std::size_t n = ops.size();
  const Op& op = ops[i];
  std::vector<OpId> preds;
  preds.reserve(op.inputs.size() + op.control_inputs.size());
  for (std::size_t k = 0; k < op.inputs.size(); ++k) {
    const TensorRef& in = op.inputs[k];
    if (in.op < 0 || static_cast<std::size_t>(in.op) >= n) {
      throw InputError(origin, op_where(ops, i) + ".inputs[" + std::to_string(k) + "]",
                       "an existing producer op, got op id " + std::to_string(in.op));
    }
    const Op& prod = ops[static_cast<std::size_t>(in.op)];
    if (in.output < 0 || static_cast<std::size_t>(in.output) >= prod.outputs.size()) {
      throw InputError(
          origin, op_where(ops, i) + ".inputs[" + std::to_string(k) + "]",
          prod.outputs.empty()
              ? "a producer with outputs, but \"" + printable(prod.name) + "\" has none"
              : "an output index of \"" + printable(prod.name) + "\" below " +
                    std::to_string(prod.outputs.size()) + ", got " + std::to_string(in.output));
    }
    preds.push_back(in.op);
  }
  for (std::size_t k = 0; k < op.control_inputs.size(); ++k) {
    const OpId c = op.control_inputs[k];
    if (c < 0 || static_cast<std::size_t>(c) >= n) {
      throw InputError(origin, op_where(ops, i) + ".control_inputs[" + std::to_string(k) + "]",
                       "an existing op, got op id " + std::to_string(c));
    }
    preds.push_back(c);
  }
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
  return preds;
}

// Called when Kahn's algorithm left ops over (indegree > 0): walk predecessors among them until
// one repeats, which lies on a cycle, and name the cycle.
[[noreturn]] void throw_cycle(const std::vector<Op>& ops, const std::vector<std::int32_t>& indegree,
                              const std::string& origin) {
  const std::size_t n = ops.size();
  std::size_t start = 0;
  while (indegree[start] == 0) ++start;
  std::vector<int> seen(n, -1);
  std::vector<OpId> walk;
  auto cur = static_cast<OpId>(start);
  while (seen[static_cast<std::size_t>(cur)] < 0) {
    seen[static_cast<std::size_t>(cur)] = static_cast<int>(walk.size());
    walk.push_back(cur);
    OpId next = -1;
    const Op& op = ops[static_cast<std::size_t>(cur)];
    for (const TensorRef& in : op.inputs) {
      if (indegree[static_cast<std::size_t>(in.op)] > 0) {
        next = in.op;
        break;
      }
    }
    if (next < 0) {
      for (OpId c : op.control_inputs) {
        if (indegree[static_cast<std::size_t>(c)] > 0) {
          next = c;
          break;
        }
      }
    }
    cur = next;
  }
  std::vector<OpId> cycle(walk.begin() + seen[static_cast<std::size_t>(cur)], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string names;
  for (std::size_t k = 0; k < cycle.size() && k < 6; ++k) {
    names += "\"" + printable(ops[static_cast<std::size_t>(cycle[k])].name) + "\" -> ";
  }
  names += cycle.size() > 6 ? "..."
                            : "\"" + printable(ops[static_cast<std::size_t>(cycle[0])].name) + "\"";
  throw InputError(origin, op_where(ops, static_cast<std::size_t>(cycle[0])),
                   "an acyclic graph, got a cycle: " + names);
}

}  // namespace

void Graph::finalize(const std::string& origin) {
  const std::size_t n = ops.size();
  index.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    if (op.name.empty())
      throw InputError(origin, "ops[" + std::to_string(i) + "].name", "a non-empty op name");
    if (!index.emplace(op.name, static_cast<OpId>(i)).second) {
      throw InputError(origin, op_where(ops, i) + ".name",
                       "a unique op name, got a second op named \"" + printable(op.name) +
                           "\" (first is ops[" + std::to_string(index[op.name]) + "])");
    }
    check_op_limits(ops, i, origin);
  }
  consumers_of.assign(n, {});
  std::vector<std::int32_t> indegree(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<OpId> preds = predecessors(ops, i, origin);
    for (OpId p : preds) {
      if (static_cast<std::size_t>(p) == i) {
        throw InputError(origin, op_where(ops, i),
                         "an acyclic graph, got an op that consumes its own output");
      }
      consumers_of[static_cast<std::size_t>(p)].push_back(static_cast<OpId>(i));
    }
    indegree[i] = static_cast<std::int32_t>(preds.size());
  }
  // consumers_of lists are built in increasing consumer id, so already sorted and distinct.

  // Kahn's algorithm, lowest id first, so the order does not depend on anything but the ids.
  topo_order.clear();
  topo_order.reserve(n);
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push(static_cast<OpId>(i));
  }
  while (!ready.empty()) {
    const OpId u = ready.top();
    ready.pop();
    topo_order.push_back(u);
    for (OpId v : consumers_of[static_cast<std::size_t>(u)]) {
      if (--indegree[static_cast<std::size_t>(v)] == 0) ready.push(v);
    }
  }
  if (topo_order.size() != n) throw_cycle(ops, indegree, origin);
}

GraphStats graph_stats(const Graph& g) {
  GraphStats s;
  s.ops = g.num_ops();
  std::set<std::string> groups;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    switch (op.phase) {
      case Phase::Forward:
        ++s.forward_ops;
        break;
      case Phase::Backward:
        ++s.backward_ops;
        break;
      case Phase::Update:
        ++s.update_ops;
        break;
      case Phase::Other:
        break;
    }
    s.flops.v += op.flops.v;
    s.bytes_read += op.bytes_read;
    s.bytes_written += op.bytes_written;
    s.persistent_bytes += op.persistent;
    for (const TensorOut& t : op.outputs) s.output_bytes += t.bytes;
    groups.insert(g.group_of(static_cast<OpId>(i)));
  }
  s.groups = static_cast<int>(groups.size());
  // Longest chain by op count and heaviest chain by FLOPs, over the topological order.
  std::vector<int> len(g.ops.size(), 0);
  std::vector<double> heavy(g.ops.size(), 0.0);
  const bool have_order = g.topo_order.size() == g.ops.size();
  for (std::size_t k = 0; k < g.ops.size(); ++k) {
    const auto u = static_cast<std::size_t>(have_order ? g.topo_order[k] : static_cast<OpId>(k));
    len[u] += 1;
    heavy[u] += g.ops[u].flops.v;
    s.longest_path_ops = std::max(s.longest_path_ops, len[u]);
    s.critical_path_flops.v = std::max(s.critical_path_flops.v, heavy[u]);
    if (u < g.consumers_of.size()) {
      for (OpId v : g.consumers_of[u]) {
        len[static_cast<std::size_t>(v)] = std::max(len[static_cast<std::size_t>(v)], len[u]);
        heavy[static_cast<std::size_t>(v)] = std::max(heavy[static_cast<std::size_t>(v)], heavy[u]);
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// JSON.

namespace {

std::string shown(const json& v) {
  if (v.is_string()) return "\"" + printable(v.get_ref<const std::string&>()) + "\"";
  if (v.is_null()) return "null";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  return printable(v.dump());
}

// A key path built only when an error is reported: "ops[12] (\"mm\")" + ".flops".
struct Key {
  Key(const std::string& b) : base(&b) {}  // NOLINT(google-explicit-constructor)
  Key(const std::string& b, std::string_view s) : base(&b), suffix(s) {}
  Key(const char* s) : base(&empty()), suffix(s) {}  // NOLINT(google-explicit-constructor)
  static const std::string& empty() {
    static const std::string kEmpty;
    return kEmpty;
  }
  [[nodiscard]] std::string str() const { return *base + std::string(suffix); }
  const std::string* base;
  std::string_view suffix;
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& origin) : origin_(origin) {}
  [[noreturn]] void fail(const Key& key, const std::string& expected) const {
    throw InputError(origin_, key.str(), expected);
  }
  void expect_object(const json& v, const Key& key,
                     std::initializer_list<std::string_view> allowed) const {
    if (!v.is_object()) fail(key, "an object, got " + shown(v));
    for (const auto& [k, _] : v.get_ref<const json::object_t&>()) {
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(key.str().empty() ? k : key.str() + "." + k,
             "a known key (one of: " + list + "), got unknown key \"" + printable(k) + "\"");
      }
    }
  }
  std::string str(const json& v, const Key& key) const {
    if (!v.is_string()) fail(key, "a string, got " + shown(v));
    return v.get<std::string>();
  }
  double number(const json& v, const Key& key) const {
    if (!v.is_number()) fail(key, "a non-negative number, got " + shown(v));
    const double d = v.get<double>();
    if (!(d >= 0) || !std::isfinite(d)) fail(key, "a non-negative number, got " + shown(v));
    // Keeps FLOPs / peak far inside the int64 nanosecond range (1e18 FLOPs is a zettascale op).
    if (d > 1e18) fail(key, "a number up to 1e18, got " + shown(v));
    return d;
  }
  std::int64_t integer(const json& v, const Key& key, std::int64_t lo, std::int64_t hi) const {
    if (!v.is_number_integer()) fail(key, "an integer, got " + shown(v));
    std::int64_t x = 0;
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(hi))
        fail(key, "an integer up to " + std::to_string(hi) + ", got " + shown(v));
      x = static_cast<std::int64_t>(u);
    } else {
      x = v.get<std::int64_t>();
    }
    if (x < lo || x > hi) {
      fail(key, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                    shown(v));
    }
    return x;
  }
  /// Bytes as an integer count or a string with a unit ("4 KiB").
  Bytes bytes(const json& v, const Key& key) const {
    const Bytes b = any_bytes(v, key);
    if (b.v > (std::int64_t{1} << 50)) fail(key, "a size up to 1 PiB, got " + shown(v));
    return b;
  }
  Bytes any_bytes(const json& v, const Key& key) const {
    if (v.is_string()) {
      try {
        return parse_bytes(v.get_ref<const std::string&>());
      } catch (const InputError& e) {
        std::string m = e.what();
        if (m.rfind("expected ", 0) == 0) m = m.substr(9);
        fail(key, m);
      }
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!(d >= 0) || d >= 9.2e18 || d != std::floor(d))
        fail(key, "a non-negative whole byte count, got " + shown(v));
      return Bytes{static_cast<std::int64_t>(d)};
    }
    return Bytes{integer(v, key, 0, std::numeric_limits<std::int64_t>::max())};
  }
  Dtype dtype(const json& v, const Key& key) const {
    const std::string s = str(v, key);
    const auto d = parse_dtype(s);
    if (!d)
      fail(key,
           "a dtype (f64, f32, tf32, f16, bf16, fp8, i64, i32, i8, u8, bool), got " + shown(v));
    return *d;
  }
  std::vector<std::int64_t> shape(const json& v, const Key& key) const {
    if (!v.is_array()) fail(key, "a list of dimensions, got " + shown(v));
    std::vector<std::int64_t> s;
    s.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      s.push_back(integer(v[i], key.str() + "[" + std::to_string(i) + "]", -1,
                          std::numeric_limits<std::int64_t>::max()));
    }
    return s;
  }

 private:
  const std::string& origin_;
};

// An input as written: "producer" (output 0), "producer:K", or {"op": ..., "output": K}.
struct PendingRef {
  std::string op;
  std::int32_t output = 0;
  bool explicit_output = false;
};

// Builds the JSON DOM except for the elements of the top-level "ops" array: each op object is
// handed to `on_op` as soon as it is complete and then dropped, so a 100k-op file never exists
// as one DOM (which cost more in allocation and page faults than the parse itself).
class OpStreamingBuilder {
 public:
  using OnOp = std::function<void(const json&, std::size_t)>;
  OpStreamingBuilder(const JsonReader& rd, const std::string& text, OnOp on_op)
      : rd_(rd), text_(text), on_op_(std::move(on_op)) {}

  json root;

  bool null() {
    add(json(nullptr));
    return true;
  }
  bool boolean(bool v) {
    add(json(v));
    return true;
  }
  bool number_integer(json::number_integer_t v) {
    add(json(v));
    return true;
  }
  bool number_unsigned(json::number_unsigned_t v) {
    add(json(v));
    return true;
  }
  bool number_float(json::number_float_t v, const json::string_t& /*raw*/) {
    add(json(v));
    return true;
  }
  bool string(json::string_t& v) {
    add(json(std::move(v)));
    return true;
  }
  bool binary(json::binary_t& /*v*/) {
    add(json(nullptr));
    return true;
  }
  bool start_object(std::size_t /*n*/) {
    stack_.push_back(add(json::object()));
    return true;
  }
  bool key(json::string_t& k) {
    if (stack_.size() == 1 && k == "ops" && ops_ != nullptr)
      rd_.fail("ops", "one \"ops\" list, got a second one");
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    if (!stack_.empty() && stack_.back() == ops_) {
      on_op_(ops_->back(), count_ - 1);
      ops_->get_ref<json::array_t&>().pop_back();
    }
    return true;
  }
  bool start_array(std::size_t /*n*/) {
    const bool is_ops = stack_.size() == 1 && key_ == "ops" && stack_.back()->is_object();
    json* arr = add(json::array());
    if (is_ops) ops_ = arr;
    stack_.push_back(arr);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    std::string msg = ex.what();
    if (const auto p = msg.find("parse error"); p != std::string::npos) msg = msg.substr(p);
    rd_.fail(line_col(text_, position), "valid JSON (" + printable(msg, 120) + ")");
  }

 private:
  json* add(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      if (&top == ops_) {
        ++count_;
        if (!v.is_object()) {
          rd_.fail("ops[" + std::to_string(count_ - 1) + "]", "an op object, got " + shown(v));
        }
      }
      auto& arr = top.get_ref<json::array_t&>();
      arr.push_back(std::move(v));
      return &arr.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }

  const JsonReader& rd_;
  const std::string& text_;
  OnOp on_op_;
  std::vector<json*> stack_;
  std::string key_;
  json* ops_ = nullptr;
  std::size_t count_ = 0;
};

CollectiveCall read_collective(const JsonReader& rd, const json& c, const std::string& path) {
  rd.expect_object(c, path, {"kind", "bytes", "id", "root", "algo", "proto"});
  CollectiveCall call;
  if (!c.contains("kind")) rd.fail(path + ".kind", "a collective kind (the key is missing)");
  const std::string kind = rd.str(c["kind"], path + ".kind");
  const auto k = parse_collective_kind(kind);
  if (!k)
    rd.fail(path + ".kind",
            "all-reduce, all-gather, reduce-scatter, broadcast, reduce, all-to-all "
            "or send-recv, got \"" +
                printable(kind) + "\"");
  call.kind = *k;
  if (!c.contains("bytes")) rd.fail(path + ".bytes", "a byte count (the key is missing)");
  call.bytes = rd.bytes(c["bytes"], path + ".bytes");
  if (c.contains("id")) call.id = rd.str(c["id"], path + ".id");
  if (c.contains("root"))
    call.root = static_cast<int>(rd.integer(c["root"], path + ".root", 0, 1 << 20));
  if (c.contains("algo")) {
    const std::string a = rd.str(c["algo"], path + ".algo");
    const auto v = parse_coll_algo(a);
    if (!v)
      rd.fail(path + ".algo", "auto, ring, tree, nvls or direct, got \"" + printable(a) + "\"");
    call.algo = *v;
  }
  if (c.contains("proto")) {
    const std::string a = rd.str(c["proto"], path + ".proto");
    const auto v = parse_coll_proto(a);
    if (!v) rd.fail(path + ".proto", "auto, LL, LL128 or Simple, got \"" + printable(a) + "\"");
    call.proto = *v;
  }
  return call;
}

// An op's "phase": forward, backward, update or other (and their short spellings).
Phase read_phase(const JsonReader& rd, const json& v, const Key& key) {
  const std::string ph = rd.str(v, key);
  const auto parsed = parse_phase(ph);
  if (!parsed) rd.fail(key, "forward, backward, update or other, got \"" + printable(ph) + "\"");
  return *parsed;
}

// An op's "signature": {op_type, input_shapes, dtype}, defaulting to the op's type and dtype.
Signature read_signature(const JsonReader& rd, const json& s, const std::string& p, const Op& op) {
  rd.expect_object(s, Key{p, ".signature"}, {"op_type", "input_shapes", "dtype"});
  Signature sig;
  sig.op_type =
      s.contains("op_type") ? rd.str(s["op_type"], Key{p, ".signature.op_type"}) : op.type;
  if (s.contains("input_shapes")) {
    const json& sh = s["input_shapes"];
    if (!sh.is_array())
      rd.fail(Key{p, ".signature.input_shapes"}, "a list of shapes, got " + shown(sh));
    sig.input_shapes.reserve(sh.size());
    for (std::size_t k = 0; k < sh.size(); ++k) {
      sig.input_shapes.push_back(
          rd.shape(sh[k], p + ".signature.input_shapes[" + std::to_string(k) + "]"));
    }
  }
  sig.dtype = s.contains("dtype") ? rd.dtype(s["dtype"], Key{p, ".signature.dtype"}) : op.dtype;
  return sig;
}

// An op's "measured" (or another duration key): a duration string up to 1000 s.
Duration read_measured(const JsonReader& rd, const json& m, const std::string& p,
                       const char* key = ".measured") {
  Duration d;
  if (m.is_string()) {
    try {
      d = parse_duration(m.get_ref<const std::string&>());
    } catch (const InputError& e) {
      std::string msg = e.what();
      if (msg.rfind("expected ", 0) == 0) msg = msg.substr(9);
      rd.fail(Key{p, key}, msg);
    }
  } else {
    rd.fail(Key{p, key}, "a duration string such as \"12.5 us\", got " + shown(m));
  }
  if (d.ns > 1'000'000'000'000) {
    rd.fail(Key{p, key}, "a duration up to 1000 s, got " + shown(m));
  }
  return d;
}

// An op's "outputs": each a byte count or {name, bytes, shape, dtype}.
std::vector<TensorOut> read_outputs(const JsonReader& rd, const json& outs, const std::string& p) {
  if (!outs.is_array()) rd.fail(Key{p, ".outputs"}, "a list of outputs, got " + shown(outs));
  std::vector<TensorOut> result;
  result.reserve(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const std::string op_path = p + ".outputs[" + std::to_string(k) + "]";
    const json& t = outs[k];
    TensorOut out;
    if (t.is_number() || t.is_string()) {
      out.bytes = rd.bytes(t, op_path);
    } else {
      rd.expect_object(t, op_path, {"name", "bytes", "shape", "dtype"});
      if (!t.contains("bytes")) rd.fail(op_path + ".bytes", "a byte count (the key is missing)");
      out.bytes = rd.bytes(t["bytes"], op_path + ".bytes");
      if (t.contains("name")) out.name = rd.str(t["name"], op_path + ".name");
      if (t.contains("shape")) out.shape = rd.shape(t["shape"], op_path + ".shape");
      if (t.contains("dtype")) out.dtype = rd.dtype(t["dtype"], op_path + ".dtype");
    }
    result.push_back(std::move(out));
  }
  return result;
}

// An op's "inputs", as written (names are resolved once every op is known).
std::vector<PendingRef> read_inputs(const JsonReader& rd, const json& ins, const std::string& p) {
  if (!ins.is_array()) rd.fail(Key{p, ".inputs"}, "a list of inputs, got " + shown(ins));
  std::vector<PendingRef> refs;
  refs.reserve(ins.size());
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const std::string ip = p + ".inputs[" + std::to_string(k) + "]";
    const json& in = ins[k];
    PendingRef ref;
    if (in.is_string()) {
      ref.op = in.get<std::string>();
    } else if (in.is_object()) {
      rd.expect_object(in, ip, {"op", "output"});
      if (!in.contains("op")) rd.fail(ip + ".op", "a producer op name (the key is missing)");
      ref.op = rd.str(in["op"], ip + ".op");
      if (in.contains("output")) {
        ref.output =
            static_cast<std::int32_t>(rd.integer(in["output"], ip + ".output", 0, 1 << 30));
      }
      ref.explicit_output = true;
    } else {
      rd.fail(ip, "a producer name (\"op\" or \"op:1\") or {\"op\": ..., \"output\": N}, got " +
                      shown(in));
    }
    refs.push_back(std::move(ref));
  }
  return refs;
}

// An op's "control_inputs": op names (resolved later).
std::vector<std::string> read_control_inputs(const JsonReader& rd, const json& cs,
                                             const std::string& p) {
  if (!cs.is_array()) rd.fail(Key{p, ".control_inputs"}, "a list of op names, got " + shown(cs));
  std::vector<std::string> names;
  names.reserve(cs.size());
  for (std::size_t k = 0; k < cs.size(); ++k) {
    names.push_back(rd.str(cs[k], p + ".control_inputs[" + std::to_string(k) + "]"));
  }
  return names;
}

Layout read_layout(const JsonReader& rd, const json& v, const Key& key) {
  const std::string l = rd.str(v, key);
  const auto parsed = parse_layout(l);
  if (!parsed) rd.fail(key, "nchw or nhwc, got \"" + printable(l) + "\"");
  return *parsed;
}

DeviceKind read_device_kind(const JsonReader& rd, const json& v, const Key& key) {
  const std::string k = rd.str(v, key);
  if (k == "cpu") return DeviceKind::Cpu;
  if (k == "gpu") return DeviceKind::Gpu;
  rd.fail(key, "cpu or gpu, got \"" + printable(k) + "\"");
}

// Ops are read one at a time as the streaming parser completes them; their inputs and control
// inputs wait here, by name, until every op is known.
struct PendingOps {
  std::vector<std::vector<PendingRef>> inputs;
  std::vector<std::vector<std::string>> control;
};

// One element of "ops", key by key.
Op read_op(const JsonReader& rd, const json& o, std::size_t i, PendingOps& pending) {
  pending.inputs.emplace_back();
  pending.control.emplace_back();
  const std::string path = "ops[" + std::to_string(i) + "]";
  rd.expect_object(o, path,
                   {"name",
                    "type",
                    "phase",
                    "flops",
                    "bytes_read",
                    "bytes_written",
                    "dtype",
                    "signature",
                    "measured",
                    "outputs",
                    "inputs",
                    "control_inputs",
                    "persistent_bytes",
                    "group",
                    "device_kind",
                    "layer",
                    "stream",
                    "collective",
                    "layout",
                    "leading_dims",
                    "dropout",
                    "host_before",
                    "strided_operand"});
  Op op;
  if (!o.contains("name")) rd.fail(path + ".name", "an op name (the key is missing)");
  op.name = rd.str(o["name"], path + ".name");
  const std::string p = path + " (\"" + printable(op.name) + "\")";
  op.type = o.contains("type") ? rd.str(o["type"], Key{p, ".type"}) : std::string();
  if (o.contains("phase")) op.phase = read_phase(rd, o["phase"], Key{p, ".phase"});
  if (o.contains("flops")) op.flops = Flops{rd.number(o["flops"], Key{p, ".flops"})};
  if (o.contains("bytes_read")) op.bytes_read = rd.bytes(o["bytes_read"], Key{p, ".bytes_read"});
  if (o.contains("bytes_written"))
    op.bytes_written = rd.bytes(o["bytes_written"], Key{p, ".bytes_written"});
  if (o.contains("dtype")) op.dtype = rd.dtype(o["dtype"], Key{p, ".dtype"});
  if (o.contains("signature")) op.signature = read_signature(rd, o["signature"], p, op);
  if (o.contains("measured")) op.measured = read_measured(rd, o["measured"], p);
  if (o.contains("host_before"))
    op.host_before = read_measured(rd, o["host_before"], p, ".host_before");
  if (o.contains("outputs")) op.outputs = read_outputs(rd, o["outputs"], p);
  if (o.contains("inputs")) pending.inputs[i] = read_inputs(rd, o["inputs"], p);
  if (o.contains("control_inputs"))
    pending.control[i] = read_control_inputs(rd, o["control_inputs"], p);
  if (o.contains("persistent_bytes"))
    op.persistent = rd.bytes(o["persistent_bytes"], Key{p, ".persistent_bytes"});
  if (o.contains("group")) op.group = rd.str(o["group"], Key{p, ".group"});
  if (o.contains("device_kind"))
    op.device_kind = read_device_kind(rd, o["device_kind"], Key{p, ".device_kind"});
  if (o.contains("layer")) op.layer = rd.str(o["layer"], Key{p, ".layer"});
  if (o.contains("stream"))
    op.stream = static_cast<std::int32_t>(rd.integer(o["stream"], Key{p, ".stream"}, 0, 1023));
  if (o.contains("collective"))
    op.collective = read_collective(rd, o["collective"], p + ".collective");
  if (o.contains("layout")) op.layout = read_layout(rd, o["layout"], Key{p, ".layout"});
  if (o.contains("leading_dims")) {
    const json& ld = o["leading_dims"];
    if (!ld.is_array() || ld.size() > 64)
      rd.fail(p + ".leading_dims", "a list of at most 64 leading dimensions, got " + shown(ld));
    for (std::size_t k = 0; k < ld.size(); ++k)
      op.leading_dims.push_back(rd.integer(
          ld[k], Key{p, ".leading_dims[" + std::to_string(k) + "]"}, 1, std::int64_t{1} << 40));
  }
  if (o.contains("strided_operand")) {
    const json& v = o["strided_operand"];
    if (!v.is_boolean()) rd.fail(p + ".strided_operand", "true or false, got " + shown(v));
    op.strided_operand = v.get<bool>();
  }
  if (o.contains("dropout")) {
    const json& d = o["dropout"];
    if (!d.is_number() || !(d.get<double>() >= 0.0 && d.get<double>() <= 1.0))
      rd.fail(p + ".dropout", "a dropout probability from 0 to 1, got " + shown(d));
    op.dropout = d.get<double>();
  }
  return op;
}

// The top-level keys besides the ops: format, version, name, metadata; then that "ops" is a list.
void read_root(const JsonReader& rd, const json& root, Graph& g) {
  rd.expect_object(root, "", {"format", "version", "name", "metadata", "ops"});
  if (root.contains("version")) {
    const auto ver = rd.integer(root["version"], "version", 1, 1);
    (void)ver;
  }
  if (root.contains("name")) g.name = rd.str(root["name"], "name");
  if (root.contains("metadata")) {
    const json& md = root["metadata"];
    if (!md.is_object()) rd.fail("metadata", "an object of strings, got " + shown(md));
    for (const auto& [k, v] : md.items()) {
      g.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  if (!root.contains("ops")) rd.fail("ops", "a list of ops (the key is missing)");
  if (!root["ops"].is_array()) rd.fail("ops", "a list of ops, got " + shown(root["ops"]));
}

// A written input resolved against the op names: "name", or "name:K" when "name" is no op.
TensorRef resolve_input(const JsonReader& rd, const std::map<std::string, OpId, std::less<>>& ids,
                        const PendingRef& ref, const std::string& p, std::size_t k) {
  TensorRef t;
  auto it = ids.find(ref.op);
  t.output = ref.output;
  if (it == ids.end() && !ref.explicit_output) {
    // "name:K" — op names may themselves contain ':' ("aten::mm"), so only a numeric suffix
    // after the last ':' of a string that is not an op name counts as an output index.
    const auto colon = ref.op.rfind(':');
    if (colon != std::string::npos && colon + 1 < ref.op.size() &&
        ref.op.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
        ref.op.size() - colon - 1 <= 9) {
      it = ids.find(std::string_view(ref.op).substr(0, colon));
      t.output = static_cast<std::int32_t>(std::stol(ref.op.substr(colon + 1)));
    }
  }
  if (it == ids.end()) {
    rd.fail(p + ".inputs[" + std::to_string(k) + "]",
            "the name of a producer op in this graph, got unknown \"" + printable(ref.op) + "\"");
  }
  t.op = it->second;
  return t;
}

// Resolve names now that every op is known (inputs may name later ops; finalize finds cycles).
void resolve_references(const JsonReader& rd, const PendingOps& pending, Graph& g) {
  std::map<std::string, OpId, std::less<>> ids;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (!ids.emplace(g.ops[i].name, static_cast<OpId>(i)).second) {
      rd.fail("ops[" + std::to_string(i) + "] (\"" + printable(g.ops[i].name) + "\").name",
              "a unique op name, got a second op named \"" + printable(g.ops[i].name) +
                  "\" (first is ops[" + std::to_string(ids[g.ops[i].name]) + "])");
    }
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const std::string p = "ops[" + std::to_string(i) + "] (\"" + printable(g.ops[i].name) + "\")";
    const auto& refs = pending.inputs[i];
    g.ops[i].inputs.reserve(refs.size());
    for (std::size_t k = 0; k < refs.size(); ++k) {
      g.ops[i].inputs.push_back(resolve_input(rd, ids, refs[k], p, k));
    }
    const auto& control = pending.control[i];
    g.ops[i].control_inputs.reserve(control.size());
    for (std::size_t k = 0; k < control.size(); ++k) {
      const auto it = ids.find(control[k]);
      if (it == ids.end()) {
        rd.fail(p + ".control_inputs[" + std::to_string(k) + "]",
                "the name of an op in this graph, got unknown \"" + printable(control[k]) + "\"");
      }
      g.ops[i].control_inputs.push_back(it->second);
    }
  }
}

}  // namespace

Graph parse_graph_json(const std::string& text, const std::string& origin) {
  const JsonReader rd(origin);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    rd.fail("", "a JSON graph object with \"ops\", got an empty file");
  }
  Graph g;
  PendingOps pending;
  check_json_nesting(text, origin);  // dump() of a deep metadata value would recurse
  OpStreamingBuilder builder(
      rd, text, [&](const json& o, std::size_t i) { g.ops.push_back(read_op(rd, o, i, pending)); });
  try {
    json::sax_parse(text, &builder);
  } catch (const json::exception& e) {
    rd.fail("", std::string("valid JSON (") + printable(e.what(), 120) + ")");
  }
  read_root(rd, builder.root, g);
  resolve_references(rd, pending, g);
  g.finalize(origin);
  return g;
}

Graph read_graph_json(const std::string& path) {
  return parse_graph_json(read_text_file(path), path);
}

namespace {

// A hand-rolled writer: building an nlohmann DOM for 100k ops costs several times the text itself.
class JsonOut {
 public:
  std::string s;
  void str(std::string_view v) {
    s += '"';
    for (char ch : v) {
      const auto u = static_cast<unsigned char>(ch);
      switch (ch) {
        case '"':
          s += "\\\"";
          break;
        case '\\':
          s += "\\\\";
          break;
        case '\n':
          s += "\\n";
          break;
        case '\t':
          s += "\\t";
          break;
        case '\r':
          s += "\\r";
          break;
        default:
          if (u < 0x20) {
            std::array<char, 8> buf{};
            std::snprintf(buf.data(), buf.size(), "\\u%04x", u);
            s += buf.data();
          } else {
            s += ch;
          }
      }
    }
    s += '"';
  }
  void num(std::int64_t v) {
    std::array<char, 32> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    s.append(buf.data(), r.ptr);
  }
  void num(double v) {
    std::array<char, 32> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    s.append(buf.data(), r.ptr);
  }
  void key(std::string_view k) {
    if (!first_) s += ", ";
    first_ = false;
    str(k);
    s += ": ";
  }
  void open_obj() {
    s += '{';
    first_ = true;
  }
  void close_obj() {
    s += '}';
    first_ = false;
  }
  void shape(const std::vector<std::int64_t>& v) {
    s += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i != 0) s += ',';
      num(v[i]);
    }
    s += ']';
  }

 private:
  bool first_ = true;
};

}  // namespace

namespace {

void write_signature(const Signature& sig, JsonOut& o) {
  o.key("signature");
  o.open_obj();
  o.key("op_type");
  o.str(sig.op_type);
  o.key("input_shapes");
  o.s += '[';
  for (std::size_t k = 0; k < sig.input_shapes.size(); ++k) {
    if (k != 0) o.s += ',';
    o.shape(sig.input_shapes[k]);
  }
  o.s += ']';
  o.key("dtype");
  o.str(to_string(sig.dtype));
  o.close_obj();
}

// Outputs: a bare byte count when that is all there is to say.
void write_outputs(const std::vector<TensorOut>& outputs, JsonOut& o) {
  o.key("outputs");
  o.s += '[';
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const TensorOut& t = outputs[k];
    if (k != 0) o.s += ", ";
    if (t.name.empty() && t.shape.empty() && t.dtype == Dtype::F32) {
      o.num(t.bytes.v);
      continue;
    }
    o.open_obj();
    if (!t.name.empty()) {
      o.key("name");
      o.str(t.name);
    }
    o.key("bytes");
    o.num(t.bytes.v);
    if (!t.shape.empty()) {
      o.key("shape");
      o.shape(t.shape);
    }
    if (t.dtype != Dtype::F32) {
      o.key("dtype");
      o.str(to_string(t.dtype));
    }
    o.close_obj();
  }
  o.s += ']';
}

// Inputs by producer name; {"op", "output"} for outputs other than the first.
void write_inputs(const Graph& g, const std::vector<TensorRef>& inputs, JsonOut& o) {
  o.key("inputs");
  o.s += '[';
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const TensorRef& in = inputs[k];
    if (k != 0) o.s += ", ";
    const std::string& pn = g.ops[static_cast<std::size_t>(in.op)].name;
    if (in.output == 0) {
      o.str(pn);
    } else {
      o.open_obj();
      o.key("op");
      o.str(pn);
      o.key("output");
      o.num(static_cast<std::int64_t>(in.output));
      o.close_obj();
    }
  }
  o.s += ']';
}

void write_collective(const CollectiveCall& c, JsonOut& o) {
  o.key("collective");
  o.open_obj();
  o.key("kind");
  o.str(to_string(c.kind));
  o.key("bytes");
  o.num(c.bytes.v);
  if (!c.id.empty()) {
    o.key("id");
    o.str(c.id);
  }
  if (c.root != 0) {
    o.key("root");
    o.num(static_cast<std::int64_t>(c.root));
  }
  if (c.algo != CollAlgo::Auto) {
    o.key("algo");
    o.str(to_string(c.algo));
  }
  if (c.proto != CollProto::Auto) {
    o.key("proto");
    o.str(to_string(c.proto));
  }
  o.close_obj();
}

}  // namespace

std::string graph_to_json(const Graph& g) {
  JsonOut o;
  o.s.reserve(g.ops.size() * 160 + 256);
  o.s += "{\n \"format\": \"placesim-graph\",\n \"version\": 1,\n \"name\": ";
  o.str(g.name);
  if (!g.metadata.empty()) {
    o.s += ",\n \"metadata\": ";
    o.open_obj();
    for (const auto& [k, v] : g.metadata) {
      o.key(k);
      o.str(v);
    }
    o.close_obj();
  }
  o.s += ",\n \"ops\": [";
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    o.s += i == 0 ? "\n  " : ",\n  ";
    o.open_obj();
    o.key("name");
    o.str(op.name);
    if (!op.type.empty()) {
      o.key("type");
      o.str(op.type);
    }
    o.key("phase");
    o.str(to_string(op.phase));
    if (op.flops.v != 0) {
      o.key("flops");
      o.num(op.flops.v);
    }
    if (op.bytes_read.v != 0) {
      o.key("bytes_read");
      o.num(op.bytes_read.v);
    }
    if (op.bytes_written.v != 0) {
      o.key("bytes_written");
      o.num(op.bytes_written.v);
    }
    if (op.dtype != Dtype::F32) {
      o.key("dtype");
      o.str(to_string(op.dtype));
    }
    if (op.signature) {
      write_signature(*op.signature, o);
    }
    if (op.measured) {
      o.key("measured");
      o.str(std::to_string(op.measured->ns) + " ns");
    }
    if (op.host_before.ns != 0) {
      o.key("host_before");
      o.str(std::to_string(op.host_before.ns) + " ns");
    }
    if (!op.outputs.empty()) {
      write_outputs(op.outputs, o);
    }
    if (!op.inputs.empty()) {
      write_inputs(g, op.inputs, o);
    }
    if (!op.control_inputs.empty()) {
      o.key("control_inputs");
      o.s += '[';
      for (std::size_t k = 0; k < op.control_inputs.size(); ++k) {
        if (k != 0) o.s += ", ";
        o.str(g.ops[static_cast<std::size_t>(op.control_inputs[k])].name);
      }
      o.s += ']';
    }
    if (op.persistent.v != 0) {
      o.key("persistent_bytes");
      o.num(op.persistent.v);
    }
    if (!op.group.empty()) {
      o.key("group");
      o.str(op.group);
    }
    if (op.device_kind) {
      o.key("device_kind");
      o.str(to_string(*op.device_kind));
    }
    if (!op.layer.empty()) {
      o.key("layer");
      o.str(op.layer);
    }
    if (op.stream) {
      o.key("stream");
      o.num(static_cast<std::int64_t>(*op.stream));
    }
    if (op.collective) {
      write_collective(*op.collective, o);
    }
    if (op.layout) {
      o.key("layout");
      o.str(to_string(*op.layout));
    }
    if (!op.leading_dims.empty()) {
      o.key("leading_dims");
      o.shape(op.leading_dims);
    }
    if (op.dropout > 0.0) {
      o.key("dropout");
      o.num(op.dropout);
    }
    if (op.strided_operand) {
      o.key("strided_operand");
      o.s += "true";
    }
    o.close_obj();
  }
  o.s += "\n ]\n}\n";
  return std::move(o.s);
}

void write_graph_json(const Graph& g, const std::string& path) {
  const std::string text = graph_to_json(g);
  // What is written must read back: the reader's limits (sizes up to 1 PiB, FLOPs up to 1e18,
  // durations up to 1000 s) apply before the file exists.
  const std::string source = g.metadata.count("source") ? g.metadata.at("source") : g.name;
  (void)parse_graph_json(text, "graph " + source + " (as written to " + path + ")");
  write_file_atomic(path, text);
}

}  // namespace placesim::sim

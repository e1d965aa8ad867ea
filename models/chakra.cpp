#include "models/chakra.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "models/chakra_et.pb.h"
#include "models/et_tensor.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::models {

namespace {

using sim::InputError;
namespace pb = ChakraProtoMsg;

// ----- IOInfo: PyTorch ET writes values/shapes as Python literals ---------------------------

struct PyVal {
  enum Kind { Int, Num, Str, List, Other } kind = Other;
  std::int64_t i = 0;
  std::string s;
  std::vector<PyVal> items;
};

class PyParser {
 public:
  explicit PyParser(const std::string& t) : t_(t) {}
  bool parse(PyVal& out) {
    if (!value(out, 0)) return false;
    skip();
    return at_ == t_.size();
  }

 private:
  void skip() {
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\n' || t_[at_] == '\t')) ++at_;
  }
  bool value(PyVal& v, int depth) {
    if (depth > 64) return false;
    skip();
    if (at_ >= t_.size()) return false;
    const char c = t_[at_];
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++at_;
      v.kind = PyVal::List;
      skip();
      if (at_ < t_.size() && t_[at_] == close) return ++at_, true;
      for (;;) {
        v.items.emplace_back();
        if (!value(v.items.back(), depth + 1)) return false;
        skip();
        if (at_ >= t_.size()) return false;
        if (t_[at_] == ',') {
          ++at_;
          skip();
          if (at_ < t_.size() && t_[at_] == close) return ++at_, true;
          continue;
        }
        if (t_[at_] == close) return ++at_, true;
        return false;
      }
    }
    if (c == '\'' || c == '"') {
      ++at_;
      v.kind = PyVal::Str;
      while (at_ < t_.size() && t_[at_] != c) {
        if (t_[at_] == '\\' && at_ + 1 < t_.size()) ++at_;
        v.s += t_[at_++];
      }
      if (at_ >= t_.size()) return false;
      ++at_;
      return true;
    }
    // Number or bare word (True, False, None, inf, nan, <Object>).
    const std::size_t b = at_;
    while (at_ < t_.size() && t_[at_] != ',' && t_[at_] != ']' && t_[at_] != ')') ++at_;
    std::string w = t_.substr(b, at_ - b);
    while (!w.empty() && w.back() == ' ') w.pop_back();
    if (w.empty()) return false;
    v.s = w;
    std::size_t used = 0;
    try {
      v.i = std::stoll(w, &used);
      v.kind = used == w.size() ? PyVal::Int : PyVal::Num;
    } catch (const std::exception&) {
      v.kind = PyVal::Other;
    }
    return true;
  }
  const std::string& t_;
  std::size_t at_ = 0;
};

struct TensorUse {
  std::uint64_t id;
  std::int64_t bytes;
};

bool is_tensor(const PyVal& v) {
  if (v.kind != PyVal::List || v.items.size() != 6 || v.items[5].kind != PyVal::Str) return false;
  for (int k = 0; k < 5; ++k)
    if (v.items[static_cast<std::size_t>(k)].kind != PyVal::Int) return false;
  return true;
}

// Walks values and shapes together: a tensor's bytes are its shape's element count times its
// element size; without a matching shape, the storage's element count is used (et_tensor.hpp).
void collect_tensors(const PyVal& v, const PyVal* shape, std::vector<TensorUse>& out) {
  if (is_tensor(v)) {
    const EtTensor t{.id = v.items[0].i,
                     .storage = v.items[1].i,
                     .offset = v.items[2].i,
                     .numel = v.items[3].i,
                     .itemsize = v.items[4].i,
                     .device = v.items[5].s};
    std::vector<std::int64_t> dims;
    bool ok = shape && shape->kind == PyVal::List;
    if (ok)
      for (const PyVal& d : shape->items) {
        ok = ok && d.kind == PyVal::Int;
        dims.push_back(d.i);
      }
    if (const auto bytes = et_tensor_bytes(t, ok ? &dims : nullptr))
      out.push_back({static_cast<std::uint64_t>(t.id), *bytes});
    return;
  }
  if (v.kind != PyVal::List) return;
  for (std::size_t k = 0; k < v.items.size(); ++k) {
    const PyVal* s =
        shape && shape->kind == PyVal::List && k < shape->items.size() ? &shape->items[k] : nullptr;
    collect_tensors(v.items[k], s, out);
  }
}

std::vector<TensorUse> tensors_of(const pb::IOInfo& io) {
  std::vector<TensorUse> out;
  if (io.values().empty()) return out;
  PyVal values, shapes;
  if (!PyParser(io.values()).parse(values)) return out;
  const bool have_shapes = PyParser(io.shapes()).parse(shapes);
  collect_tensors(values, have_shapes ? &shapes : nullptr, out);
  return out;
}

// ----- attributes -------------------------------------------------------------------------

const pb::AttributeProto* find_attr(
    const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, const std::string& name) {
  for (const pb::AttributeProto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<std::int64_t> int_attr(
    const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, const std::string& name) {
  const pb::AttributeProto* a = find_attr(attrs, name);
  if (!a) return std::nullopt;
  switch (a->value_case()) {
    case pb::AttributeProto::kInt32Val:
      return a->int32_val();
    case pb::AttributeProto::kInt64Val:
      return a->int64_val();
    case pb::AttributeProto::kUint32Val:
      return a->uint32_val();
    case pb::AttributeProto::kUint64Val:
      return static_cast<std::int64_t>(std::min<std::uint64_t>(a->uint64_val(), INT64_MAX));
    case pb::AttributeProto::kSint32Val:
      return a->sint32_val();
    case pb::AttributeProto::kSint64Val:
      return a->sint64_val();
    case pb::AttributeProto::kFixed32Val:
      return a->fixed32_val();
    case pb::AttributeProto::kFixed64Val:
      return static_cast<std::int64_t>(std::min<std::uint64_t>(a->fixed64_val(), INT64_MAX));
    case pb::AttributeProto::kSfixed32Val:
      return a->sfixed32_val();
    case pb::AttributeProto::kSfixed64Val:
      return a->sfixed64_val();
    case pb::AttributeProto::kDoubleVal:
      return std::isfinite(a->double_val())
                 ? std::optional<std::int64_t>(static_cast<std::int64_t>(a->double_val()))
                 : std::nullopt;
    case pb::AttributeProto::kBoolVal:
      return a->bool_val() ? 1 : 0;
    default:
      return std::nullopt;
  }
}

std::string string_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs,
                        const std::string& name) {
  const pb::AttributeProto* a = find_attr(attrs, name);
  return a && a->value_case() == pb::AttributeProto::kStringVal ? a->string_val() : std::string();
}

void set_attr(pb::Node& n, const std::string& name, std::int64_t v) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void set_attr(pb::Node& n, const std::string& name, const std::string& v) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}
// Chakra's feeder (mlcommons/chakra src/feeder/et_feeder_node.cpp, which ASTRA-sim uses) reads
// each attribute from one field of the oneof: comm_src/dst/tag int32, tensor_size uint64,
// num_ops and comm_size int64, is_cpu_op bool. The exporter writes them so.
void set_int32_attr(pb::Node& n, const std::string& name, std::int32_t v) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int32_val(v);
}
void set_uint64_attr(pb::Node& n, const std::string& name, std::uint64_t v) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_uint64_val(v);
}
void set_bool_attr(pb::Node& n, const std::string& name, bool v) {
  pb::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}

const char* collective_name(std::int64_t t) {
  static const char* names[] = {
      "all_reduce", "reduce",         "all_gather",           "gather", "scatter", "broadcast",
      "all_to_all", "reduce_scatter", "reduce_scatter_block", "barrier"};
  return t >= 0 && t < 10 ? names[t] : "unknown";
}

// Chakra's CollectiveCommType of a placesim collective kind (send/recv are node types, not
// collectives), and back; nullopt where the other side has none (GATHER, SCATTER, BARRIER, ...).
std::optional<std::int64_t> chakra_comm_type(sim::CollectiveKind k) {
  switch (k) {
    case sim::CollectiveKind::AllReduce:
      return pb::ALL_REDUCE;
    case sim::CollectiveKind::Reduce:
      return pb::REDUCE;
    case sim::CollectiveKind::AllGather:
      return pb::ALL_GATHER;
    case sim::CollectiveKind::Broadcast:
      return pb::BROADCAST;
    case sim::CollectiveKind::AllToAll:
      return pb::ALL_TO_ALL;
    case sim::CollectiveKind::ReduceScatter:
      return pb::REDUCE_SCATTER;
    case sim::CollectiveKind::SendRecv:
      return std::nullopt;
  }
  return std::nullopt;
}
std::optional<sim::CollectiveKind> placesim_kind(std::int64_t comm_type) {
  for (const auto k : {sim::CollectiveKind::AllReduce, sim::CollectiveKind::Reduce,
                       sim::CollectiveKind::AllGather, sim::CollectiveKind::Broadcast,
                       sim::CollectiveKind::AllToAll, sim::CollectiveKind::ReduceScatter})
    if (chakra_comm_type(k) == comm_type) return k;
  return std::nullopt;
}

// ----- reading ------------------------------------------------------------------------------

struct RankFile {
  std::string path;
  std::string device;  ///< "placesim_device" of the exporter, else ""
  std::vector<pb::Node> nodes;
};

RankFile read_et(const std::string& path) {
  RankFile f;
  f.path = path;
  const std::string data = sim::read_text_file(path);
  if (data.size() > static_cast<std::size_t>(INT32_MAX))
    throw InputError(path, "", "a Chakra execution trace under 2 GiB");
  // A gzip-compressed ET (.et.gz) is read through protobuf's own zlib stream.
  google::protobuf::io::ArrayInputStream bytes(data.data(), static_cast<int>(data.size()));
  const bool gzipped = data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
                       static_cast<unsigned char>(data[1]) == 0x8b;
  google::protobuf::io::GzipInputStream gz(&bytes, google::protobuf::io::GzipInputStream::GZIP);
  google::protobuf::io::ZeroCopyInputStream& raw =
      gzipped ? static_cast<google::protobuf::io::ZeroCopyInputStream&>(gz) : bytes;
  std::size_t index = 0;
  const auto next = [&](google::protobuf::MessageLite& m) {
    google::protobuf::io::CodedInputStream in(&raw);
    std::uint32_t size = 0;
    if (!in.ReadVarint32(&size)) return false;
    const auto limit = in.PushLimit(static_cast<int>(size));
    if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() || in.BytesUntilLimit() != 0)
      throw InputError(
          path, "message " + std::to_string(index),
          "a varint-length-delimited Chakra " +
              std::string(index == 0 ? "GlobalMetadata" : "Node") +
              " message (an .et file from Chakra's converters), got bytes that do not parse");
    in.PopLimit(limit);
    ++index;
    return true;
  };
  if (data.empty()) throw InputError(path, "", "a Chakra execution trace, got an empty file");
  pb::GlobalMetadata meta;
  if (!next(meta)) throw InputError(path, "message 0", "a Chakra GlobalMetadata message, got none");
  f.device = string_attr(meta.attr(), "placesim_device");
  for (;;) {
    pb::Node n;
    if (!next(n)) break;
    if (n.type() < pb::INVALID_NODE || n.type() > pb::CHECKPOINT_NODE)
      throw InputError(path, "message " + std::to_string(index - 1) + ".type",
                       "a Chakra node type 0..10, got " + std::to_string(n.type()));
    f.nodes.push_back(std::move(n));
  }
  if (gzipped && gz.ZlibErrorMessage())
    throw InputError(path, "",
                     std::string("a complete gzip stream, got: ") + gz.ZlibErrorMessage());
  return f;
}

// The collective call a node placesim exported carries (`placesim_collective_id`, with
// comm_type or the SEND/RECV node type, comm_size and the call's root, algorithm, protocol and
// NCCL version), so that the re-imported op is the same rank op; nullopt for any other node.
std::optional<sim::CollectiveCall> placesim_collective(const pb::Node& n, const std::string& path) {
  const std::string id = string_attr(n.attr(), "placesim_collective_id");
  if (id.empty()) return std::nullopt;
  const std::string where = "node " + std::to_string(n.id());
  sim::CollectiveCall c;
  c.id = id;
  if (n.type() == pb::COMM_SEND_NODE || n.type() == pb::COMM_RECV_NODE) {
    c.kind = sim::CollectiveKind::SendRecv;
  } else {
    const auto t = int_attr(n.attr(), "comm_type");
    const auto k = t && n.type() == pb::COMM_COLL_NODE ? placesim_kind(*t) : std::nullopt;
    if (!k)
      throw InputError(path, where + ".comm_type",
                       "a COMM_COLL_NODE with comm_type ALL_REDUCE, REDUCE, ALL_GATHER, "
                       "BROADCAST, ALL_TO_ALL or REDUCE_SCATTER (it names a placesim collective)");
    c.kind = *k;
  }
  const auto bytes = int_attr(n.attr(), "comm_size");
  if (!bytes || *bytes < 0)
    throw InputError(path, where + ".comm_size", "the collective's size in bytes (>= 0)");
  c.bytes = sim::Bytes{*bytes};
  c.root = static_cast<int>(int_attr(n.attr(), "placesim_collective_root").value_or(0));
  const std::string algo = string_attr(n.attr(), "placesim_collective_algo");
  const std::string proto = string_attr(n.attr(), "placesim_collective_proto");
  const auto a = sim::parse_coll_algo(algo.empty() ? "auto" : algo);
  const auto pr = sim::parse_coll_proto(proto.empty() ? "auto" : proto);
  if (!a)
    throw InputError(path, where + ".placesim_collective_algo",
                     "auto, ring, tree, nvls, direct or pat, got \"" + algo + "\"");
  if (!pr)
    throw InputError(path, where + ".placesim_collective_proto",
                     "auto, LL, LL128 or Simple, got \"" + proto + "\"");
  c.algo = *a;
  c.proto = *pr;
  c.nccl_version = static_cast<int>(int_attr(n.attr(), "placesim_nccl_version").value_or(0));
  return c;
}

struct NodeRef {
  int rank;
  const pb::Node* node;
};

// Kahn's algorithm over data and control edges.
bool acyclic(const sim::Graph& g) {
  const std::size_t n = g.ops.size();
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<sim::OpId>> out(n);
  for (std::size_t c = 0; c < n; ++c) {
    for (const sim::TensorRef& t : g.ops[c].inputs)
      out[static_cast<std::size_t>(t.op)].push_back(static_cast<sim::OpId>(c));
    for (sim::OpId p : g.ops[c].control_inputs)
      out[static_cast<std::size_t>(p)].push_back(static_cast<sim::OpId>(c));
    indegree[c] = static_cast<int>(g.ops[c].inputs.size() + g.ops[c].control_inputs.size());
  }
  std::vector<sim::OpId> ready;
  for (std::size_t c = 0; c < n; ++c)
    if (indegree[c] == 0) ready.push_back(static_cast<sim::OpId>(c));
  std::size_t seen = 0;
  while (!ready.empty()) {
    const sim::OpId o = ready.back();
    ready.pop_back();
    ++seen;
    for (sim::OpId c : out[static_cast<std::size_t>(o)])
      if (--indegree[static_cast<std::size_t>(c)] == 0) ready.push_back(c);
  }
  return seen == n;
}

}  // namespace

bool is_chakra_path(const std::string& path) {
  const auto ends = [&](const std::string& e) {
    return path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".et") || ends(".et.gz");
}

namespace {

// The state of one import: every node of every rank in (id, rank) order, and what each became.
class Importer {
 public:
  explicit Importer(const std::vector<std::string>& files) {
    std::size_t total = 0;
    for (const std::string& f : files) {
      ranks_.push_back(read_et(f));
      total += ranks_.back().nodes.size();
    }
    // A rank with no node is fine (a device the exporter placed nothing on); a job with none
    // is not.
    if (total == 0)
      throw InputError(files.front(), "",
                       "a Chakra execution trace with at least one node, got none");
    // The exporter numbers nodes by op index across ranks, so this order gives back the original
    // op order (and hence the same engine tie-breaks).
    for (int k = 0; k < static_cast<int>(ranks_.size()); ++k)
      for (const pb::Node& n : ranks_[static_cast<std::size_t>(k)].nodes) all_.push_back({k, &n});
    std::stable_sort(all_.begin(), all_.end(), [](const NodeRef& a, const NodeRef& b) {
      return std::make_pair(a.node->id(), a.rank) < std::make_pair(b.node->id(), b.rank);
    });
    for (std::size_t i = 0; i < all_.size(); ++i)
      if (!index_of_.emplace(std::make_pair(all_[i].rank, all_[i].node->id()), i).second)
        throw InputError(ranks_[static_cast<std::size_t>(all_[i].rank)].path,
                         "node id " + std::to_string(all_[i].node->id()),
                         "unique node ids, got a duplicate");
    send_of_.assign(all_.size(), all_.size());
    dropped_.assign(all_.size(), false);
    op_of_.assign(all_.size(), -1);
    outs_.resize(all_.size());
    ins_.resize(all_.size());
    output_of_.resize(all_.size());
  }

  /// SEND/RECV pairs between the imported ranks: the RECV's consumers read the SEND's tensor.
  void match_send_recv() {
    if (ranks_.size() < 2) return;
    const auto key = [](const pb::Node& n)
        -> std::optional<std::tuple<std::int64_t, std::int64_t, std::int64_t>> {
      const auto src = int_attr(n.attr(), "comm_src"), dst = int_attr(n.attr(), "comm_dst"),
                 tag = int_attr(n.attr(), "comm_tag");
      if (!src || !dst || !tag) return std::nullopt;
      return std::make_tuple(*src, *dst, *tag);
    };
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::size_t> sends;
    // A placesim send/recv collective stays two rank ops (placesim_collective), not an edge.
    const auto exported = [&](std::size_t i) {
      return !string_attr(all_[i].node->attr(), "placesim_collective_id").empty();
    };
    for (std::size_t i = 0; i < all_.size(); ++i)
      if (all_[i].node->type() == pb::COMM_SEND_NODE && !exported(i))
        if (const auto k = key(*all_[i].node)) sends[*k] = i;
    for (std::size_t i = 0; i < all_.size(); ++i) {
      if (all_[i].node->type() != pb::COMM_RECV_NODE || exported(i)) continue;
      const auto k = key(*all_[i].node);
      const auto it = k ? sends.find(*k) : sends.end();
      if (it == sends.end()) continue;
      send_of_[i] = it->second;
      dropped_[i] = dropped_[it->second] = true;
      ++r_.matched_send_recv;
    }
  }

  /// The op of node i (none for a joined SEND/RECV).
  void add_op(std::size_t i) {
    sim::Graph& g = r_.graph;
    const pb::Node& n = *all_[i].node;
    outs_[i] = tensors_of(n.outputs());
    ins_[i] = tensors_of(n.inputs());
    if (dropped_[i]) return;
    ++r_.nodes;
    sim::Op op;
    op.name = n.name().empty() ? "node " + std::to_string(n.id()) : n.name();
    if (!names_.insert(op.name).second) {
      op.name += " #" + std::to_string(n.id()) +
                 (ranks_.size() > 1 ? "@" + std::to_string(all_[i].rank) : "");
      names_.insert(op.name);
    }
    const bool comm = n.type() == pb::COMM_COLL_NODE || n.type() == pb::COMM_SEND_NODE ||
                      n.type() == pb::COMM_RECV_NODE;
    r_.comm_nodes += comm;
    if (const std::string t = string_attr(n.attr(), "placesim_type"); !t.empty()) {
      op.type = t;
    } else if (n.type() == pb::COMM_COLL_NODE) {
      op.type =
          std::string("comm:") + collective_name(int_attr(n.attr(), "comm_type").value_or(-1));
    } else if (comm) {
      op.type = n.type() == pb::COMM_SEND_NODE ? "comm:send" : "comm:recv";
    } else {
      op.type = op.name.substr(0, std::min(op.name.find('('), std::size_t{64}));
    }
    std::int64_t in_bytes = 0, out_bytes = 0;
    std::set<std::uint64_t> seen;
    for (const TensorUse& t : outs_[i]) {
      if (!seen.insert(t.id).second) continue;
      output_of_[i][t.id] = static_cast<std::int32_t>(op.outputs.size());
      sim::TensorOut o;
      o.name = op.name + ":t" + std::to_string(t.id);
      o.bytes = sim::Bytes{t.bytes};
      op.outputs.push_back(o);
      out_bytes += t.bytes;
    }
    for (const TensorUse& t : ins_[i]) in_bytes += t.bytes;
    if (const auto d = int_attr(n.attr(), "duration_ns"); d && *d >= 0) {
      op.measured = sim::Duration{*d};
    } else if (n.duration_micros() > 0 || !int_attr(n.attr(), "num_ops")) {
      op.measured = sim::Duration{static_cast<std::int64_t>(
          std::min<std::uint64_t>(n.duration_micros(), 1'000'000'000'000ULL) * 1000)};
    }
    op.flops = sim::Flops{
        static_cast<double>(std::max<std::int64_t>(0, int_attr(n.attr(), "num_ops").value_or(0)))};
    const std::int64_t tensor_size =
        std::max<std::int64_t>(0, int_attr(n.attr(), "tensor_size").value_or(0));
    op.bytes_read =
        sim::Bytes{tensor_size > 0 ? tensor_size - std::min(tensor_size, out_bytes) : in_bytes};
    op.bytes_written = sim::Bytes{out_bytes};
    op.collective = placesim_collective(n, ranks_[static_cast<std::size_t>(all_[i].rank)].path);
    if (op.collective) {
      op.measured.reset();  // priced by the collective model over the GPUs it is placed on
      --r_.comm_nodes;
      ++r_.collectives;
    } else if (comm) {
      op.bytes_read =
          sim::Bytes{std::max<std::int64_t>(0, int_attr(n.attr(), "comm_size").value_or(in_bytes))};
    }
    op.persistent =
        sim::Bytes{std::max<std::int64_t>(0, int_attr(n.attr(), "persistent_bytes").value_or(0))};
    if (const auto cpu = int_attr(n.attr(), "is_cpu_op"))
      op.device_kind = *cpu ? sim::DeviceKind::Cpu : sim::DeviceKind::Gpu;
    if (const auto ph = sim::parse_phase(string_attr(n.attr(), "phase"))) op.phase = *ph;
    op.layer = string_attr(n.attr(), "layer");
    op_of_[i] = g.add_op(std::move(op));
  }

  /// Data and control edges into node i's op.
  void add_edges(std::size_t i) {
    if (dropped_[i]) return;
    const pb::Node& n = *all_[i].node;
    sim::Op& op = r_.graph.ops[static_cast<std::size_t>(op_of_[i])];
    // Producers among the data dependencies (a matched RECV stands for its SEND's producers).
    std::vector<std::size_t> producers;
    std::set<sim::OpId> control;
    for (std::uint64_t dep : n.data_deps()) {
      const auto it = index_of_.find({all_[i].rank, dep});
      if (it == index_of_.end()) {
        ++r_.missing_deps;
        continue;
      }
      std::size_t p = it->second;
      if (send_of_[p] < all_.size()) {
        for (std::uint64_t sd : all_[send_of_[p]].node->data_deps()) {
          const auto s = index_of_.find({all_[send_of_[p]].rank, sd});
          if (s != index_of_.end() && !dropped_[s->second]) producers.push_back(s->second);
        }
        continue;
      }
      if (dropped_[p]) continue;
      producers.push_back(p);
    }
    std::set<std::size_t> used;
    for (const TensorUse& t : ins_[i]) {
      for (std::size_t p : producers) {
        const auto k = output_of_[p].find(t.id);
        if (k == output_of_[p].end() || op_of_[p] == op_of_[i]) continue;
        op.inputs.push_back({op_of_[p], k->second});
        used.insert(p);
        ++r_.data_edges;
        break;
      }
    }
    for (std::size_t p : producers)
      if (!used.count(p) && op_of_[p] != op_of_[i]) control.insert(op_of_[p]);
    for (std::uint64_t dep : n.ctrl_deps()) {
      const auto it = index_of_.find({all_[i].rank, dep});
      if (it == index_of_.end()) {
        ++r_.missing_deps;
        continue;
      }
      if (!dropped_[it->second] && op_of_[it->second] != op_of_[i])
        control.insert(op_of_[it->second]);
    }
    for (sim::OpId c : control) {
      bool has_data = false;
      for (const sim::TensorRef& in : op.inputs) has_data |= in.op == c;
      if (has_data) continue;
      op.control_inputs.push_back(c);
      ++r_.control_edges;
    }
  }

  void break_cycles() {
    sim::Graph& g = r_.graph;
    // Chakra's PyTorch converter writes some dependencies from a CPU op to the kernel it launched
    // (its child in the call tree), which closes a cycle with the kernel's own dependency on the
    // op. A cyclic file keeps only the dependencies on earlier nodes (by id): the order the
    // trace was recorded in.
    if (!acyclic(g)) {
      int dropped_edges = 0;
      for (sim::OpId c = 0; c < g.num_ops(); ++c) {
        sim::Op& op = g.ops[static_cast<std::size_t>(c)];
        const auto later = [&](sim::OpId p) { return p > c; };
        const auto nd =
            std::erase_if(op.inputs, [&](const sim::TensorRef& t) { return later(t.op); });
        const auto nc = std::erase_if(op.control_inputs, later);
        r_.data_edges -= static_cast<int>(nd);
        r_.control_edges -= static_cast<int>(nc);
        dropped_edges += static_cast<int>(nd + nc);
      }
      r_.backward_deps = dropped_edges;
      r_.notes.push_back(
          std::to_string(dropped_edges) +
          " dependencies on later nodes dropped (the file's dependencies form a cycle)");
    }
    if (r_.missing_deps > 0)
      r_.notes.push_back(std::to_string(r_.missing_deps) +
                         " dependencies on node ids absent from the file (dropped)");
    if (r_.comm_nodes > 0)
      r_.notes.push_back(std::to_string(r_.comm_nodes) +
                         " communication nodes imported as ops with their measured time (their "
                         "other ranks are not in the files: replayed, not priced over the links)");
  }

  ChakraImport finish(const std::vector<std::string>& files) {
    sim::Graph& g = r_.graph;
    std::string name = std::filesystem::path(files.front()).filename().string();  // "trace.0.et"
    name = name.substr(0, name.rfind(".et"));                                     // "trace.0"
    if (const auto dot = name.rfind('.'); dot != std::string::npos && ranks_.size() > 1)
      name = name.substr(0, dot);
    g.name = name;
    g.metadata["source"] = "chakra";
    g.metadata["files"] = std::to_string(files.size());
    g.finalize(files.front());

    bool named = true;
    for (const RankFile& f : ranks_) named &= !f.device.empty();
    if (named) {
      sim::PlacementFile pf;
      pf.metadata.method = "chakra";
      pf.metadata.graph = g.name;
      for (std::size_t i = 0; i < all_.size(); ++i)
        if (!dropped_[i])
          pf.ops[g.ops[static_cast<std::size_t>(op_of_[i])].name] =
              ranks_[static_cast<std::size_t>(all_[i].rank)].device;
      r_.placement = std::move(pf);
    }
    return std::move(r_);
  }

  std::size_t size() const { return all_.size(); }

 private:
  std::vector<RankFile> ranks_;
  std::vector<NodeRef> all_;
  std::map<std::pair<int, std::uint64_t>, std::size_t> index_of_;  // (rank, id) -> position
  std::vector<std::size_t> send_of_;                               // RECV -> matching SEND
  std::vector<bool> dropped_;                                      // joined SEND/RECV
  std::vector<sim::OpId> op_of_;
  std::vector<std::vector<TensorUse>> outs_, ins_;
  std::vector<std::map<std::uint64_t, std::int32_t>> output_of_;  // tensor id -> output index
  std::set<std::string> names_;
  ChakraImport r_;
};

}  // namespace

ChakraImport import_chakra(const std::vector<std::string>& files) {
  if (files.empty()) throw InputError("<chakra>", "", "at least one .et file, got none");
  Importer im(files);
  im.match_send_recv();
  for (std::size_t i = 0; i < im.size(); ++i) im.add_op(i);
  for (std::size_t i = 0; i < im.size(); ++i) im.add_edges(i);
  im.break_cycles();
  return im.finish(files);
}

// ----- writing ------------------------------------------------------------------------------

namespace {

void write_delimited(const google::protobuf::MessageLite& m, std::string& out) {
  google::protobuf::io::StringOutputStream raw(&out);
  google::protobuf::io::CodedOutputStream o(&raw);
  o.WriteVarint32(static_cast<std::uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&o);
}

// PyTorch ET's tensor tuple, one element of `bytes` bytes (element size 1): the importer
// multiplies the shape's element count by the element size.
std::string tensor_list(const std::vector<std::pair<std::int64_t, std::int64_t>>& tensors,
                        bool shapes, bool gpu) {
  std::string s = "[";
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    if (k) s += ", ";
    const auto [id, bytes] = tensors[k];
    if (shapes)
      s += "[" + std::to_string(bytes) + "]";
    else
      s += "[" + std::to_string(id) + ", " + std::to_string(id) + ", 0, " + std::to_string(bytes) +
           ", 1, '" + (gpu ? "cuda" : "cpu") + "']";
  }
  return s + "]";
}

void set_io(pb::IOInfo* io, const std::vector<std::pair<std::int64_t, std::int64_t>>& tensors,
            bool gpu) {
  io->set_values(tensor_list(tensors, false, gpu));
  io->set_shapes(tensor_list(tensors, true, gpu));
  std::string types = "[";
  for (std::size_t k = 0; k < tensors.size(); ++k)
    types += std::string(k ? ", " : "") + "'Tensor(uint8)'";
  io->set_types(types + "]");
}

}  // namespace

namespace {

// The per-device node lists of one export: compute nodes with the ops' ids, SEND/RECV pairs
// above them.
class ChakraNodes {
 public:
  ChakraNodes(const sim::Graph& g, const sim::Cluster& c, const sim::Placement& p)
      : g_(g), c_(c), p_(p), nodes_(static_cast<std::size_t>(c.num_devices())) {
    const int n = g.num_ops();
    // Tensor ids: 1 + the global output index.
    first_tensor_.assign(static_cast<std::size_t>(n) + 1, 1);
    for (int i = 0; i < n; ++i)
      first_tensor_[static_cast<std::size_t>(i) + 1] =
          first_tensor_[static_cast<std::size_t>(i)] +
          static_cast<std::int64_t>(g.ops[static_cast<std::size_t>(i)].outputs.size());
    next_id_ = static_cast<std::uint64_t>(n);
    // A send/recv call's ranks in op order: the sender (no outputs) and the receiver.
    for (int i = 0; i < n; ++i)
      if (const auto& c = g.ops[static_cast<std::size_t>(i)].collective;
          c && c->kind == sim::CollectiveKind::SendRecv)
        send_recv_[c->id].push_back(i);
  }

  // Op i as a COMP_NODE on its device, its cross-device inputs through SEND/RECV pairs.
  void add_op(sim::OpId i, const sim::KernelCostModel& costs) {
    const sim::Op& op = g_.ops[static_cast<std::size_t>(i)];
    const sim::DeviceId d = dev(i);
    const sim::Device& device = c_.devices[static_cast<std::size_t>(d)];
    const bool gpu = device.spec.kind == sim::DeviceKind::Gpu;
    pb::Node node;
    node.set_id(static_cast<std::uint64_t>(i));
    node.set_name(op.name);
    node.set_type(pb::COMP_NODE);
    // A collective's time depends on every rank's placement: the simulation prices it, so a
    // collective node carries no duration (ASTRA-sim times its communication nodes itself).
    const std::int64_t ns = op.collective ? 0 : costs.op_time(op, device).ns;
    node.set_duration_micros(static_cast<std::uint64_t>((ns + 500) / 1000));
    std::vector<std::pair<std::int64_t, std::int64_t>> in_t, out_t;
    in_t.reserve(op.inputs.size());
    out_t.reserve(op.outputs.size());
    std::set<std::uint64_t> data_deps;
    for (const sim::TensorRef& in : op.inputs) {
      const sim::Op& po = g_.ops[static_cast<std::size_t>(in.op)];
      in_t.emplace_back(first_tensor_[static_cast<std::size_t>(in.op)] + in.output,
                        po.outputs[static_cast<std::size_t>(in.output)].bytes.v);
      const std::uint64_t dep =
          dev(in.op) == d ? static_cast<std::uint64_t>(in.op) : cross(in.op, in.output, d);
      if (data_deps.insert(dep).second) node.add_data_deps(dep);
    }
    for (sim::OpId ctl : op.control_inputs) {
      const std::uint64_t dep = dev(ctl) == d ? static_cast<std::uint64_t>(ctl) : cross(ctl, -1, d);
      if (dev(ctl) == d)
        node.add_ctrl_deps(dep);
      else if (data_deps.insert(dep).second)
        node.add_data_deps(dep);  // RECV of a control edge
    }
    for (std::size_t k = 0; k < op.outputs.size(); ++k)
      out_t.emplace_back(first_tensor_[static_cast<std::size_t>(i)] + static_cast<std::int64_t>(k),
                         op.outputs[k].bytes.v);
    set_io(node.mutable_inputs(), in_t, gpu);
    set_io(node.mutable_outputs(), out_t, gpu);
    set_bool_attr(node, "is_cpu_op", !gpu);
    set_attr(node, "num_ops", static_cast<std::int64_t>(std::llround(std::min(op.flops.v, 9e18))));
    set_uint64_attr(node, "tensor_size",
                    static_cast<std::uint64_t>(op.bytes_read.v + op.bytes_written.v));
    if (op.collective)
      set_collective(node, i, *op.collective);
    else
      set_attr(node, "duration_ns", ns);
    set_attr(node, "placesim_type", op.type);
    set_attr(node, "phase", sim::to_string(op.phase));
    if (op.persistent.v > 0) set_attr(node, "persistent_bytes", op.persistent.v);
    if (!op.layer.empty()) set_attr(node, "layer", op.layer);
    nodes_[static_cast<std::size_t>(d)].push_back(std::move(node));
  }

  // Device d's file: the global metadata, then its nodes by id.
  std::string device_file(sim::DeviceId d) {
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    const auto add = [&](const std::string& k, const std::string& v) {
      pb::AttributeProto* a = meta.add_attr();
      a->set_name(k);
      a->set_string_val(v);
    };
    add("schema", "placesim export");
    add("placesim_device", c_.devices[static_cast<std::size_t>(d)].name);
    add("placesim_graph", g_.name);
    add("placesim_cluster", c_.name);
    std::string out;
    write_delimited(meta, out);
    auto& v = nodes_[static_cast<std::size_t>(d)];
    std::stable_sort(v.begin(), v.end(),
                     [](const pb::Node& a, const pb::Node& b) { return a.id() < b.id(); });
    for (const pb::Node& node : v) write_delimited(node, out);
    return out;
  }

 private:
  // A collective rank op as Chakra's communication node: COMM_COLL_NODE with comm_type and
  // comm_size as ASTRA-sim's feeder reads them, or the SEND/RECV node of a send/recv call with
  // comm_src/dst/tag; the placesim_* attributes keep what a re-import needs for the same call.
  void set_collective(pb::Node& node, sim::OpId i, const sim::CollectiveCall& c) {
    if (c.kind == sim::CollectiveKind::SendRecv) {
      const std::vector<sim::OpId>& ranks = send_recv_.at(c.id);
      const bool send = ranks.front() == i;
      node.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
      const auto [it, fresh] = call_tag_.emplace(c.id, next_tag_);
      if (fresh) ++next_tag_;
      set_int32_attr(node, "comm_src", dev(ranks.front()));
      set_int32_attr(node, "comm_dst", dev(ranks.back()));
      set_int32_attr(node, "comm_tag", static_cast<std::int32_t>(it->second));
    } else {
      node.set_type(pb::COMM_COLL_NODE);
      set_attr(node, "comm_type", *chakra_comm_type(c.kind));
    }
    set_attr(node, "comm_size", c.bytes.v);
    set_attr(node, "placesim_collective_id", c.id);
    if (c.root != 0) set_attr(node, "placesim_collective_root", std::int64_t{c.root});
    if (c.algo != sim::CollAlgo::Auto)
      set_attr(node, "placesim_collective_algo", sim::to_string(c.algo));
    if (c.proto != sim::CollProto::Auto)
      set_attr(node, "placesim_collective_proto", sim::to_string(c.proto));
    if (c.nccl_version != 0) set_attr(node, "placesim_nccl_version", std::int64_t{c.nccl_version});
  }

  [[nodiscard]] sim::DeviceId dev(sim::OpId o) const {
    return p_.device_of[static_cast<std::size_t>(o)];
  }

  // Cross-device edges: one SEND/RECV pair per (tensor, destination device), or per (control
  // edge, destination; output -1) with no bytes. Returns the RECV's id.
  std::uint64_t cross(sim::OpId producer, std::int32_t output, sim::DeviceId to) {
    const auto key = std::make_tuple(producer, output, to);
    if (const auto it = recv_id_.find(key); it != recv_id_.end()) return it->second;
    const sim::DeviceId from = dev(producer);
    const bool data = output >= 0;
    const std::int64_t bytes = data ? g_.ops[static_cast<std::size_t>(producer)]
                                          .outputs[static_cast<std::size_t>(output)]
                                          .bytes.v
                                    : 0;
    const std::int64_t tid = data ? first_tensor_[static_cast<std::size_t>(producer)] + output : 0;
    const std::int64_t tag = next_tag_++;
    for (int side = 0; side < 2; ++side) {
      pb::Node node;
      node.set_id(next_id_++);
      const bool send = side == 0;
      node.set_name((send ? "send " : "recv ") + g_.ops[static_cast<std::size_t>(producer)].name +
                    (data ? ":" + std::to_string(output) : " (control)") + " " +
                    c_.devices[static_cast<std::size_t>(from)].name + " -> " +
                    c_.devices[static_cast<std::size_t>(to)].name);
      node.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
      // A RECV depends on its SEND through (src, dst, tag), as ASTRA-sim matches them.
      if (send) node.add_data_deps(static_cast<std::uint64_t>(producer));
      if (data) set_io(send ? node.mutable_inputs() : node.mutable_outputs(), {{tid, bytes}}, true);
      set_int32_attr(node, "comm_src", from);
      set_int32_attr(node, "comm_dst", to);
      set_attr(node, "comm_size", bytes);
      set_int32_attr(node, "comm_tag", static_cast<std::int32_t>(tag));
      set_bool_attr(node, "is_cpu_op", false);
      nodes_[static_cast<std::size_t>(send ? from : to)].push_back(std::move(node));
    }
    recv_id_[key] = next_id_ - 1;
    return next_id_ - 1;
  }

  const sim::Graph& g_;
  const sim::Cluster& c_;
  const sim::Placement& p_;
  std::vector<std::int64_t> first_tensor_;
  std::vector<std::vector<pb::Node>> nodes_;
  std::map<std::tuple<sim::OpId, std::int32_t, sim::DeviceId>, std::uint64_t> recv_id_;
  std::map<std::string, std::vector<sim::OpId>> send_recv_;  // send/recv call id -> its rank ops
  std::map<std::string, std::int64_t> call_tag_;             // send/recv call id -> comm_tag
  std::uint64_t next_id_ = 0;
  std::int64_t next_tag_ = 0;
};

}  // namespace

std::vector<std::string> export_chakra(const sim::Graph& g, const sim::Cluster& c,
                                       const sim::Placement& p, const sim::KernelCostModel& costs,
                                       const std::string& dir) {
  if (p.device_of.size() != g.ops.size())
    throw InputError("<placement>", "",
                     "a device for each of the " + std::to_string(g.ops.size()) + " ops");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw InputError("<flag --chakra-out>", "",
                     "a directory that can be created, got \"" + dir + "\"");
  ChakraNodes nodes(g, c, p);
  for (sim::OpId i = 0; i < g.num_ops(); ++i) nodes.add_op(i, costs);
  std::vector<std::string> paths;
  for (int d = 0; d < c.num_devices(); ++d) {
    const std::string path =
        (std::filesystem::path(dir) / (g.name + "." + std::to_string(d) + ".et")).string();
    sim::write_file_atomic(path, nodes.device_file(d));
    paths.push_back(path);
  }
  return paths;
}

}  // namespace placesim::models

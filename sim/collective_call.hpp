// A collective call as a graph's rank op carries it (Op::collective): kept apart from the model
// in sim/collective.hpp so that the graph IR does not depend on the model's header.
//
//   CollectiveCall c;
//   c.kind = *parse_collective_kind("all_reduce");
//   c.bytes = Bytes{25 << 20};
//   c.id = "ddp/bucket0";            // the ranks of one call share it
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/units.hpp"

namespace placesim::sim {

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  SendRecv
};
enum class CollAlgo { Auto, Ring, Tree, Nvls, Direct, Pat };
enum class CollProto { Auto, LL, LL128, Simple };

std::string to_string(CollectiveKind k);  ///< "all-reduce", "all-gather", ...
std::string to_string(CollAlgo a);        ///< "auto", "ring", "tree", "nvls", "direct", "pat"
std::string to_string(CollProto p);       ///< "auto", "LL", "LL128", "Simple"
/// Accepts "all-reduce", "all_reduce", "allreduce" (any case) and so on; nullopt otherwise.
std::optional<CollectiveKind> parse_collective_kind(std::string_view s);
std::optional<CollAlgo> parse_coll_algo(std::string_view s);
std::optional<CollProto> parse_coll_proto(std::string_view s);
/// An NCCL version as NCCL_VERSION_CODE numbers it (2.23.4 -> 22304): "2.23", "2.23.4",
/// "2.23.4-1" (a package revision is ignored) or the code itself; nullopt unless 2.0 <= v < 3.0.
std::optional<int> parse_nccl_version(std::string_view s);
/// What a bad version is told, one text for the flag and the cluster key: "an NCCL 2.x version
/// such as 2.19, 2.23.4 or 22304, got \"<got>\"".
std::string nccl_version_expected(std::string_view got);
/// The version as a release names it, "2.26.2" for 22602 (what cluster_to_yaml writes).
std::string nccl_version_string(int code);

/// The NCCL version whose tuning the model takes by default: NCCL 2.19's src/graph/tuning.cc
/// (docs/collectives.md, "NCCL versions").
inline constexpr int kDefaultNcclVersion = 21900;

/// One collective call as a rank op of a graph carries it (docs/formats.md, "collective").
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  /// nccl-tests' "size": the buffer of all-reduce/broadcast/reduce, the whole gathered output of
  /// all-gather, the whole input of reduce-scatter, what one rank sends in all-to-all, the
  /// message of send/recv.
  Bytes bytes;
  /// Ranks of one call share this id (a graph may hold many calls); empty outside graphs.
  std::string id;
  int root = 0;                       ///< broadcast/reduce: index of the root rank
  CollAlgo algo = CollAlgo::Auto;     ///< forced algorithm (NCCL_ALGO); Auto = tuner
  CollProto proto = CollProto::Auto;  ///< forced protocol (NCCL_PROTO); Auto = tuner
  /// NCCL version whose tuner chooses (NCCL_VERSION_CODE, 22304 for 2.23.4); 0: the cluster's
  /// (Cluster::nccl_version, the YAML key `nccl_version`), else kDefaultNcclVersion.
  int nccl_version = 0;
  auto operator<=>(const CollectiveCall&) const = default;
};

}  // namespace placesim::sim

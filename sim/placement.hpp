// A placement: which device runs each op. In files it maps op or group names to device names
// (docs/formats.md); in memory it is resolved to one DeviceId per op.
//
//   PlacementFile f = read_placement_json("p.json");
//   Placement p = resolve_placement(f, graph, cluster, "p.json");   // throws InputError
//   f = to_placement_file(p, graph, cluster);                       // by group where possible
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/graph.hpp"

namespace placesim::sim {

/// Resolved: device_of[op] for every op of the graph.
struct Placement {
  std::vector<DeviceId> device_of;
  auto operator<=>(const Placement&) const = default;
};

struct PlacementMetadata {
  std::string method;   ///< "single-gpu", "rl", "scotch", ...
  std::string graph;    ///< graph name it was made for
  std::string cluster;  ///< cluster name it was made for
  std::optional<double> predicted_step_time_s;
  std::optional<std::uint64_t> seed;
  std::map<std::string, std::string> extra;
};

/// As in the file: names, not ids.
struct PlacementFile {
  PlacementMetadata metadata;
  std::map<std::string, std::string> groups;  ///< group name -> device name
  std::map<std::string, std::string> ops;     ///< op name -> device name (overrides its group)
  std::optional<std::string> default_device;  ///< for ops named by neither
};

PlacementFile read_placement_json(const std::string& path);
PlacementFile parse_placement_json(const std::string& text, const std::string& origin);
std::string placement_to_json(const PlacementFile& f);
void write_placement_json(const PlacementFile& f, const std::string& path);  ///< atomic

/// Resolves names to ids. Throws InputError naming `origin` for a missing op, group or device, an
/// op left without a device, or a co-location group split across devices by per-op entries.
Placement resolve_placement(const PlacementFile& f, const Graph& g, const Cluster& c,
                            const std::string& origin);
/// The file form of a resolved placement: one entry per co-location group.
PlacementFile to_placement_file(const Placement& p, const Graph& g, const Cluster& c,
                                PlacementMetadata metadata);

/// Placements every layer offers without the policy library. Throws InputError for an unknown
/// spelling. Accepts "single-gpu" (the GPU with the highest F32 peak, lowest index on ties),
/// "single-cpu", "random:SEED" (uniform over devices allowed for each group, per group).
/// Device-kind constraints are honoured: an op restricted to CPUs goes to its GPU's host CPU.
std::optional<Placement> builtin_placement(const std::string& method, const Graph& g,
                                           const Cluster& c);

}  // namespace placesim::sim

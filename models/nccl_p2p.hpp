// NCCL_P2P_DISABLE=1 for the collective model (docs/collectives.md, "P2P disabled"): the
// commands' `--p2p off` (collective), `--parallel ...,p2p=off` (simulate) and a sweep workload's
// `parallel: "...,p2p=off"` (policy/sweep) take every GPU's peer access away, so NCCL's rings go
// through host memory (NCCL's SHM transport) and GPU copies are staged through the host, as with
// the driver's peer access off.
//
//   sim::Cluster c = sim::load_cluster("dgx-a100");
//   std::string par = "dp=8,p2p=off";
//   if (!models::take_p2p(par, "<flag --parallel>")) models::disable_peer_access(c);  // par:
//   "dp=8"
#pragma once

#include <algorithm>
#include <sstream>
#include <string>

#include "sim/cluster.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::models {

/// `value` as the p2p setting: true for "on", false for "off"; InputError naming `origin` and
/// `key` otherwise.
inline bool parse_p2p(const std::string& value, const std::string& origin, const std::string& key) {
  if (value != "on" && value != "off")
    throw sim::InputError(origin, key, "on or off, got \"" + sim::printable(value) + "\"");
  return value == "on";
}

/// Takes the `p2p=on|off` keys out of a comma-separated `--parallel` text (the rest is left for
/// models::parse_parallel); returns the last one's setting, true when there is none.
inline bool take_p2p(std::string& parallel, const std::string& origin) {
  std::stringstream in(parallel);
  std::string item, rest;
  bool p2p = true;
  while (std::getline(in, item, ',')) {
    if (item.rfind("p2p=", 0) == 0) {
      p2p = parse_p2p(item.substr(4), origin, "p2p");
      continue;
    }
    rest += (rest.empty() ? "" : ",") + item;
  }
  parallel = rest;
  return p2p;
}

/// No GPU of `c` may reach another directly any more: routes recomputed (GPU copies staged
/// through the source GPU's host), collectives through host memory.
inline void disable_peer_access(sim::Cluster& c) {
  for (auto& row : c.peer_access) std::fill(row.begin(), row.end(), false);
  sim::compute_routes(c);
}

}  // namespace placesim::models

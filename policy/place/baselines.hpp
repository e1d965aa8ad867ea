// The baseline methods behind make_placement(), one function per method, each returning one
// device per group of the GroupDag. Internal to policy/ (tests use it to check the methods on
// hand-built graphs); users call policy::make_placement.
//
//   const GroupDag dag = build_group_dag(graph);
//   std::vector<sim::DeviceId> dev = place_heft(dag, graph, cluster, options);
//   sim::Placement p = dag.expand(dev);
#pragma once

#include <string>
#include <vector>

#include "policy/place/group_dag.hpp"
#include "policy/place/methods.hpp"

namespace placesim::policy {

using GroupPlacement = std::vector<sim::DeviceId>;

/// The devices GPU-only methods spread work over: the GPUs, or the CPUs when there is none.
std::vector<sim::DeviceId> compute_devices(const sim::Cluster& c);
/// `target` if the group may run there, else the nearest allowed device (a CPU-only group goes
/// to the host CPU of `target`; a GPU-only group on a CPU goes to the fastest GPU).
sim::DeviceId respect_kind(const GroupDag& dag, int group, const sim::Cluster& c,
                           sim::DeviceId target);

GroupPlacement place_round_robin(const GroupDag& dag, const sim::Cluster& c);
GroupPlacement place_expert(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                            const MethodOptions& o);
GroupPlacement place_scotch(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                            const MethodOptions& o);
GroupPlacement place_metis(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                           const MethodOptions& o);
GroupPlacement place_heft(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                          const MethodOptions& o);
GroupPlacement place_m_topo(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                            const MethodOptions& o);
GroupPlacement place_m_etf(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                           const MethodOptions& o);
GroupPlacement place_m_sct(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                           const MethodOptions& o);
/// m-topo / m-etf / m-sct counting `share` of the activations, without the simulator's check.
GroupPlacement place_baechi_unchecked(const std::string& method, const GroupDag& dag,
                                      const sim::Graph& g, const sim::Cluster& c,
                                      const MethodOptions& o, double share);

}  // namespace placesim::policy

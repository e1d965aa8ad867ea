// round-robin, and the helpers every GPU-spreading method shares.
#include "policy/place/baselines.hpp"

namespace placesim::policy {

std::vector<sim::DeviceId> compute_devices(const sim::Cluster& c) {
  auto gpus = c.gpus();
  return gpus.empty() ? c.cpus() : gpus;
}

sim::DeviceId respect_kind(const GroupDag& dag, int group, const sim::Cluster& c,
                           sim::DeviceId target) {
  const auto& k = dag.kind[static_cast<std::size_t>(group)];
  if (!k || c.devices[static_cast<std::size_t>(target)].spec.kind == *k) return target;
  if (*k == sim::DeviceKind::Cpu) return host_for(c, target);
  return fastest_gpu(c) >= 0 ? fastest_gpu(c) : target;
}

GroupPlacement place_round_robin(const GroupDag& dag, const sim::Cluster& c) {
  const auto devs = compute_devices(c);
  GroupPlacement out(static_cast<std::size_t>(dag.size()), -1);
  // Groups are numbered in topological order, so this deals consecutive groups to successive GPUs.
  for (int gi = 0; gi < dag.size(); ++gi)
    out[static_cast<std::size_t>(gi)] =
        respect_kind(dag, gi, c, devs[static_cast<std::size_t>(gi) % devs.size()]);
  return out;
}

}  // namespace placesim::policy

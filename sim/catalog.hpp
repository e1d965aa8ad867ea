// The device catalog: datasheet numbers for the CPUs and GPUs that the built-in scenarios and
// users' cluster files name by model. Every entry carries its sources in `DeviceSpec::source`;
// docs/catalog.md has the same table with the sources spelled out.
//
//   const DeviceSpec* v100 = find_device_model("V100-SXM2-16GB");   // nullptr if unknown
//   if (v100) use(v100->peak_for(Dtype::F16), v100->memory_bandwidth);
//   for (const std::string& m : device_model_names()) list(m);      // sorted
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster.hpp"

namespace placesim::sim {

/// The catalog entry for `model` (exact, case-sensitive name), or nullptr.
const DeviceSpec* find_device_model(std::string_view model);
/// All catalog model names, sorted.
std::vector<std::string> device_model_names();

}  // namespace placesim::sim

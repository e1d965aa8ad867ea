// The device catalog: datasheet numbers for the CPUs and GPUs that the built-in scenarios and
// users' cluster files name by model. Every entry carries its sources in `DeviceSpec::source`;
// docs/catalog.md has the same table with the sources spelled out.
//
//   const DeviceSpec* v100 = find_device_model("V100-SXM2-16GB");   // nullptr if unknown
//   find_device_model("Tesla V100-SXM2-16GB");                      // the same entry: names as
//   find_device_model("NVIDIA H100 80GB HBM3");                     // nvidia-smi, Kineto and
//   find_device_model("AMD EPYC 7742 64-Core Processor");           // /proc/cpuinfo print them
//   if (v100) use(v100->peak_for(Dtype::F16), v100->memory_bandwidth);
//   for (const std::string& m : device_model_names()) list(m);      // sorted
//   reference_nic("B200-SXM-180GB").gbit_s;                         // 400: DGX B200's ConnectX-7
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster.hpp"

namespace placesim::sim {

/// The catalog entry for `model`, or nullptr. `model` is the catalog name, or a name as tools print
/// it: compared without case, vendor words ("NVIDIA", "Tesla", "GeForce", "Intel(R)", "AMD",
/// "CPU", "Processor", "64-Core"), the "@ clock" suffix and punctuation, then through a table of
/// product names whose printed form differs from the catalog's ("Tesla K80" = one K80-GK210 die,
/// "NVIDIA H100 80GB HBM3" = H100-SXM5-80GB, "NVIDIA H200" = H200-SXM-141GB, "AMD Instinct MI300X"
/// = MI300X-192GB). Vendor words joined by hyphens count too ("GeForce-RTX-4090", as calibrate
/// keys a device). A GPU entry also holds its NVLink and PCIe facts (`DeviceSpec::interconnect`).
const DeviceSpec* find_device_model(std::string_view model);
/// All catalog model names, sorted.
std::vector<std::string> device_model_names();

/// The line rate of the NIC NVIDIA (or AMD) ships with a GPU in its reference systems (DGX-1,
/// DGX A100, DGX H100/H200, DGX B200, DGX GB200; H800/H20 as sourced), or the one the catalog
/// assumes for a data-center PCIe card from its generation's DGX; `basis` says which, for the
/// importer's notes (docs/catalog.md). A GPU without a reference system, a CPU or an unknown name
/// gives gbit_s 0 and an empty basis. A system fact, not the GPU's: not part of DeviceSpec.
struct ReferenceNic {
  double gbit_s = 0;       ///< line rate of one NIC, Gbit/s; 0 = none in the catalog
  std::string_view basis;  ///< e.g. "InfiniBand NDR, as in DGX H100/H200"
};
/// The reference NIC of the catalog GPU `model` (any name find_device_model takes).
ReferenceNic reference_nic(std::string_view model);

}  // namespace placesim::sim

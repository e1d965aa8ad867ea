// Imports a real machine's topology into a sim::Cluster: the matrix that `nvidia-smi topo -m`
// prints (legends NV#, PIX, PXB, PHB, NODE, SYS and the pre-2019 SOC; NIC rows and columns, with
// or without the "NIC Legend") and NCCL topology XML files (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE).
//
//   using namespace placesim::calibration;
//   TopoOptions o;
//   o.gpu_model = "V100-SXM2-16GB";                      // nvidia-smi does not name the GPUs
//   sim::Cluster c = import_nvidia_smi_topo(read_text("topo.txt"), "topo.txt", o);
//   std::string yaml = sim::cluster_to_yaml(c);          // what `placesim import topo` writes
//
// The model built (docs/calibration.md): one CPU device and one PCIe host bridge per NUMA node
// (NUMA nodes of one machine fully connected by an "smp" link), a PCIe switch per group of devices
// that `nvidia-smi` reports as PIX/PXB to each other (or per 0x0604 bridge in NCCL XML), a direct
// link per NVLink bundle (NV# = # links of the GPU's NVLink generation), a NIC vertex per NIC. The
// link counts, NVLink generation and rate and PCIe generation are the catalog's
// (`DeviceSpec::interconnect`, sim/catalog.cpp). GPUs
// whose NV# relations add up to more links than the GPU has (18 on H100/H200, 12 on A100, 6 on
// V100, 4 on P100: an HGX/DGX board, DGX-2) are joined by one non-blocking `nvswitch` vertex, one
// port per GPU at its full NVLink bandwidth, instead of by point-to-point bundles. Peer
// access: NVLink, PIX, PXB and PHB pairs; NODE and SYS pairs are staged through host memory (as the
// CUDA driver does on most such systems).
#pragma once

#include <string>
#include <vector>

#include "sim/cluster.hpp"

namespace placesim::calibration {

struct TopoOptions {
  std::string gpu_model;  ///< catalog name; required when the file does not identify the GPUs
  std::string cpu_model;  ///< catalog name; empty = guessed from the file, else Xeon-E5-2698v4
  std::string name;       ///< cluster name; empty = derived from the file name
  double nic_gbit_s =
      0;  ///< NIC line rate for files that give none (nvidia-smi); 0 = assumed per GPU generation
  std::string node = "node0";
};

/// The result and what the importer had to assume (`placesim import topo` prints the notes on
/// stderr and writes them as comments at the top of the YAML).
struct TopoImport {
  sim::Cluster cluster;
  std::vector<std::string> notes;
};

TopoImport import_nvidia_smi_topo(const std::string& text, const std::string& origin,
                                  const TopoOptions& options);
TopoImport import_nccl_topo_xml(const std::string& text, const std::string& origin,
                                const TopoOptions& options);

/// Per-direction bandwidth of one NVLink of the given GPU model (catalog name, or a name as tools
/// print it), and its generation name ("nvlink2"); 0/"" when the model has none.
double nvlink_gb_s_per_link(const std::string& gpu_model, std::string* generation = nullptr);
/// Per-direction x16 PCIe bandwidth of a GPU model's host interface in GB/s, and "pcie3"/4/5.
double pcie_x16_gb_s(const std::string& gpu_model, std::string* generation = nullptr);

}  // namespace placesim::calibration

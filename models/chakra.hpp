// Chakra execution traces (MLCommons; the workload format of ASTRA-sim) in and out.
//
//   ChakraImport in = import_chakra({"trace.0.et"});          // one rank, or every rank's file
//   sim::Graph g = std::move(in.graph);                        // nodes -> ops, deps -> edges
//   if (in.placement) write_placement_json(*in.placement, "p.json");   // files from the exporter
//
//   std::vector<std::string> files = export_chakra(graph, cluster, placement, costs, "et/");
//   // et/<graph>.0.et ... et/<graph>.<N-1>.et, one per device of the cluster
//
// An ET file is a stream of varint-length-delimited protobuf messages: one GlobalMetadata, then
// Nodes (models/chakra_et.proto, from mlcommons/chakra's schema), optionally gzip-compressed.
// Import (docs/formats.md):
//   - every node is an op; its time is `duration_micros` (or the exporter's exact `duration_ns`
//     attribute); a node without a duration but with `num_ops` is priced by the roofline;
//   - `is_cpu_op` makes the op CPU-only (true) or GPU-only (false);
//   - a data dependency becomes a tensor edge for each tensor id (IOInfo values, PyTorch ET's
//     [tensor id, storage id, offset, elements, element bytes, device]) that the consumer reads
//     and the producer writes, sized elements x element bytes; one that shares no tensor, and
//     every control dependency, is a control edge (an order, no copy);
//   - communication nodes (COMM_COLL/SEND/RECV) are ops with their measured time and type
//     "comm:<collective>": the engine has no collective op type in this version; a SEND/RECV
//     pair between two imported ranks (same comm_src, comm_dst, comm_tag) becomes the tensor
//     edge it carries, which the engine prices as a copy over the cluster's route;
//   - a file whose dependencies form a cycle (Chakra's PyTorch converter writes some from a CPU
//     op to the kernel it launched) keeps only those on earlier node ids, and says how many not.
// Export: one file per device (rank = device index); each op a COMP_NODE with its priced time
// (duration_micros, plus `duration_ns` exactly), `num_ops` (FLOPs) and `tensor_size` (bytes);
// a tensor crossing devices a COMM_SEND_NODE / COMM_RECV_NODE pair (comm_src, comm_dst,
// comm_size, comm_tag as ASTRA-sim reads them). Importing every file of an export gives back
// the graph and, with its placement, the same simulated step time (tests/cli/chakra_test.sh).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"

namespace placesim::models {

struct ChakraImport {
  sim::Graph graph;
  /// Op -> device name, when every file names its device (files written by export_chakra).
  std::optional<sim::PlacementFile> placement;
  int nodes = 0, data_edges = 0, control_edges = 0, comm_nodes = 0, matched_send_recv = 0;
  /// Collective rank ops placesim exported (`placesim_collective_id`): re-imported as collective
  /// ops, priced by the collective model; not counted in comm_nodes (replayed as measured).
  int collectives = 0;
  int missing_deps = 0;   ///< dependencies on node ids absent from the file
  int backward_deps = 0;  ///< dependencies on later nodes dropped to break cycles
  std::vector<std::string> notes;
};

/// Reads one ET file, or the files of several ranks of one job (merged into one graph). Throws
/// sim::InputError naming the file and the message index for a malformed file.
ChakraImport import_chakra(const std::vector<std::string>& files);

/// True if `path` names a Chakra ET (".et", or ".et.gz" for a gzip-compressed one).
bool is_chakra_path(const std::string& path);

/// Writes one ET per device of `c` into `dir` (created), named <graph name>.<rank>.et;
/// returns the paths. Times are `costs`' prices of each op on its device.
std::vector<std::string> export_chakra(const sim::Graph& g, const sim::Cluster& c,
                                       const sim::Placement& p, const sim::KernelCostModel& costs,
                                       const std::string& dir);

}  // namespace placesim::models

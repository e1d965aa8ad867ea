// libFuzzer harnesses for every reader and importer of placesim, one executable per reader
// (FUZZ_TARGET selects it; tests/fuzz/CMakeLists.txt builds them all with clang and
// -fsanitize=fuzzer,address,undefined). The contract each one checks: a reader either succeeds or
// throws sim::InputError whose message is one line and says what was expected. Any other
// exception escapes and aborts (libFuzzer reports it as a crash), as do signals, sanitizer
// reports, leaks, allocations over -malloc_limit_mb and inputs slower than -timeout.
//
//   tools/fuzz.sh 60                 # build, then each target for 60 s from seeds in tests/data
//   build-fuzz/tests/fuzz/fuzz_kineto -dict=tests/fuzz/dicts/json.dict CORPUS_DIR
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#include "calibration/kernel_fit.hpp"
#include "calibration/link_fit.hpp"
#include "calibration/pytorch_et.hpp"
#include "calibration/topo_import.hpp"
#include "calibration/trace.hpp"
#include "models/onnx_import.hpp"
#include "policy/rl/checkpoint_file.hpp"
#include "policy/sweep/sweep.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "sim/io_util.hpp"
#include "sim/placement.hpp"

namespace {

using namespace placesim;

// Readers that take a path get the input as a file in a private temp folder.
std::string as_file(const std::string& data, const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d =
        std::filesystem::temp_directory_path() / ("placesim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

const char* source_dir() {
  return PLACESIM_SOURCE_DIR;
}

// A message must be one line that says what was expected: else it is a finding too.
void check_message(const std::string& what) {
  if (what.find('\n') != std::string::npos || what.find('\r') != std::string::npos ||
      what.find("expected") == std::string::npos || what.size() > 2000) {
    std::fprintf(stderr, "fuzz: malformed InputError message: %s\n", what.c_str());
    std::abort();
  }
}

#if FUZZ_TARGET_p2p || FUZZ_TARGET_nccl_tests || FUZZ_TARGET_vidur
const sim::Cluster& four_gpu_cluster() {
  // The 4-GPU A100 PCIe box the p2p seed was measured on (tests/data/calibration).
  static const sim::Cluster c = [] {
    calibration::TopoOptions o;
    o.gpu_model = "A100-PCIe-80GB";
    const std::string f = std::string(source_dir()) +
                          "/tests/data/calibration/a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt";
    return calibration::import_nvidia_smi_topo(sim::read_text_file(f), f, o).cluster;
  }();
  return c;
}
#endif

void run(const std::string& in) {
#if FUZZ_TARGET_graph
  (void)sim::graph_to_json(sim::parse_graph_json(in, "fuzz-graph.json"));
#elif FUZZ_TARGET_cluster
  (void)sim::cluster_to_yaml(sim::parse_cluster_yaml(in, "fuzz-cluster.yaml"));
#elif FUZZ_TARGET_placement
  static const sim::Graph g =
      sim::read_graph_json(std::string(source_dir()) + "/tests/data/good/tiny-graph.json");
  static const sim::Cluster c =
      sim::load_cluster(std::string(source_dir()) + "/scenarios/clusters/paper-2gpu.yaml");
  const sim::PlacementFile f = sim::parse_placement_json(in, "fuzz-placement.json");
  (void)sim::resolve_placement(f, g, c, "fuzz-placement.json");
#elif FUZZ_TARGET_calibration
  const sim::Calibration cal = sim::load_calibration(as_file(in, "calibration.yaml"));
  (void)sim::calibration_to_yaml(cal);
#elif FUZZ_TARGET_sweep_spec
  const policy::SweepSpec spec = policy::parse_sweep_spec(in, "fuzz-sweep.yaml");
  (void)policy::expand_points(spec);
#elif FUZZ_TARGET_sweep_csv
  // A sweep's CSV and journal as run_sweep reads them back on resume (evaluator: a fixed result).
  static const policy::SweepSpec spec = policy::parse_sweep_spec(
      "name: f\nbase: paper-2gpu\naxes: {peer_access: [off, on]}\nworkloads: [rnnlm]\nmethods: "
      "[heft]\n",
      "fuzz-spec.yaml");
  const std::string csv = as_file(in, "sweep.csv");
  std::filesystem::remove(csv + ".partial");
  policy::SweepRunOptions o;
  o.threads = 1;
  (void)policy::run_sweep(
      spec,
      [](const policy::SweepPoint&) {
        policy::PointResult r;
        r.step_time = sim::Duration{1000};
        return r;
      },
      csv, o);
#elif FUZZ_TARGET_onnx
  models::OnnxImportOptions o;
  o.training = in.size() % 2 == 1;
  (void)models::import_onnx(as_file(in, "model.onnx"), o);
#elif FUZZ_TARGET_kineto
  const calibration::Profile p = calibration::parse_kineto_json(in, "fuzz-trace.json");
  (void)calibration::profile_steps(p);
  (void)calibration::op_samples_from_profile(p, "");
#elif FUZZ_TARGET_kineto_gz
  // Gzip handling (and the inflation cap, lowered to 64 MiB so that a bomb is cheap to find).
  (void)calibration::read_maybe_gzip(as_file(in, "trace.json.gz"), std::size_t{64} << 20);
#elif FUZZ_TARGET_manifest
  (void)calibration::op_samples_from_manifest(as_file(in, "manifest.json"), "");
#elif FUZZ_TARGET_nsys
  const calibration::Profile p = calibration::read_nsys_sqlite(as_file(in, "trace.sqlite"));
  (void)calibration::op_samples_from_profile(p, "");
#elif FUZZ_TARGET_smi_topo
  calibration::TopoOptions o;
  o.gpu_model = "A100-PCIe-80GB";
  (void)sim::cluster_to_yaml(calibration::import_nvidia_smi_topo(in, "fuzz-topo.txt", o).cluster);
#elif FUZZ_TARGET_nccl_xml
  calibration::TopoOptions o;
  (void)sim::cluster_to_yaml(calibration::import_nccl_topo_xml(in, "fuzz-topo.xml", o).cluster);
#elif FUZZ_TARGET_p2p
  const calibration::P2pMeasurement m = calibration::parse_p2p_output(in, "fuzz-p2p.txt");
  if (m.gpus == 4) {
    sim::Cluster c = four_gpu_cluster();
    (void)calibration::fit_links_from_p2p(m, c);
    (void)sim::cluster_to_yaml(c);
  }
#elif FUZZ_TARGET_nccl_tests || FUZZ_TARGET_vidur
#if FUZZ_TARGET_nccl_tests
  const auto pts = calibration::parse_nccl_tests(in, "fuzz-nccl.txt", "all_reduce");
#else
  const auto pts = calibration::parse_vidur_collective_csv(in, "fuzz-vidur.csv");
#endif
  sim::Cluster c = four_gpu_cluster();
  (void)calibration::apply_collective_fit(calibration::fit_collective(pts), c);
  (void)sim::cluster_to_yaml(c);
#elif FUZZ_TARGET_et
  // A PyTorch execution trace alone; what it imports must write and read back as a graph.
  const calibration::EtImport x = calibration::import_pytorch_et(as_file(in, "fuzz-et.json"), "");
  (void)sim::parse_graph_json(sim::graph_to_json(x.graph), "fuzz-et-graph.json");
#elif FUZZ_TARGET_et_kineto
  // The Kineto side of `import et --kineto`: a fixed hand-written ET, the Kineto trace mutated,
  // so that the linking by record-function id and by order sees malformed events.
  static const std::string et =
      std::string(source_dir()) + "/tests/data/et/chakra_handwritten_et.json";
  const calibration::EtImport x =
      calibration::import_pytorch_et(et, as_file(in, "fuzz-et-kineto.json"));
  (void)calibration::op_samples_from_et(x, "");
#elif FUZZ_TARGET_checkpoint
  (void)policy::unwrap_checkpoint(in, "fuzz-checkpoint.pt");
#else
#error "define FUZZ_TARGET_<name>"
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  try {
    run(in);
  } catch (const placesim::sim::InputError& e) {
    check_message(e.what());
  }
  return 0;
}

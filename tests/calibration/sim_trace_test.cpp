// A simulated step's Chrome trace (sim/trace.hpp) read by the same Kineto reader as real
// profiles (calibration/trace.hpp): both must give the same kinds of tracks, so that a user can
// open them side by side in Perfetto or Holistic Trace Analysis.
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "calibration/trace.hpp"
#include "models/registry.hpp"
#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"

namespace pc = placesim::calibration;
namespace ps = placesim::sim;

namespace {

std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/" + f;
}

// What a viewer shows: kinds of track (a host thread issuing runtime calls under framework ops,
// a GPU stream of kernels, a GPU track of copies) and whether launches link to GPU work.
struct Shape {
  std::set<std::string> track_kinds;
  int gpu_events = 0, gpu_events_with_device_and_stream = 0;
  int correlated = 0;  ///< GPU events whose correlation matches a runtime call's
};

Shape shape_of(const pc::Profile& p) {
  std::map<std::pair<std::string, std::string>, std::set<pc::EventKind>> tracks;
  std::set<std::int64_t> runtime_corr;
  for (const pc::TraceEvent& e : p.events) {
    tracks[{e.pid, e.tid}].insert(e.kind);
    if (e.kind == pc::EventKind::Runtime && e.correlation >= 0) runtime_corr.insert(e.correlation);
  }
  Shape s;
  for (const auto& [key, kinds] : tracks) {
    if (kinds.count(pc::EventKind::Runtime) && kinds.count(pc::EventKind::CpuOp))
      s.track_kinds.insert("host launch thread");
    if (kinds.count(pc::EventKind::Kernel)) s.track_kinds.insert("GPU kernels");
    if (kinds.count(pc::EventKind::Memcpy)) s.track_kinds.insert("GPU copies");
  }
  for (const pc::TraceEvent& e : p.events) {
    if (!e.on_gpu()) continue;
    ++s.gpu_events;
    s.gpu_events_with_device_and_stream += e.device >= 0 && e.stream >= 0;
    s.correlated += runtime_corr.count(e.correlation) > 0;
  }
  return s;
}

pc::Profile simulated_profile() {
  const std::string dir = data("golden/tiny_staged_streams/");
  const ps::Cluster c = ps::load_cluster(dir + "cluster.yaml");
  const ps::Graph g = placesim::models::load_graph(dir + "graph.json", "");
  const ps::Placement p = ps::resolve_placement(ps::read_placement_json(dir + "placement.json"), g,
                                                c, "placement.json");
  const ps::KernelCostModel costs;
  ps::TraceSink trace(c);
  trace.describe(g, &costs);
  ps::SimOptions o;
  o.trace = &trace;
  ps::simulate(c, g, p, o, costs);
  return pc::parse_kineto_json(trace.to_json(), "<simulated>");
}

}  // namespace

TEST(SimulatedTrace, SameTracksAsRealKinetoTraces) {
  const pc::Profile sim = simulated_profile();
  EXPECT_EQ(sim.dialect, "kineto");
  const Shape s = shape_of(sim);
  for (const char* real :
       {"calibration/a100_alexnet.json", "calibration/h200_resnet18-64px-b8_train.json.gz"}) {
    SCOPED_TRACE(real);
    const pc::Profile p = pc::read_profile(data(real));
    EXPECT_EQ(p.dialect, sim.dialect);
    const Shape r = shape_of(p);
    // Every kind of track of the real trace is in the simulated one.
    for (const std::string& k : r.track_kinds) EXPECT_TRUE(s.track_kinds.count(k)) << k;
    EXPECT_GT(r.gpu_events, 0);
    EXPECT_EQ(r.gpu_events_with_device_and_stream, r.gpu_events);
  }
  EXPECT_EQ(s.track_kinds,
            (std::set<std::string>{"host launch thread", "GPU kernels", "GPU copies"}));
  EXPECT_GT(s.gpu_events, 0);
  EXPECT_EQ(s.gpu_events_with_device_and_stream, s.gpu_events);
  // Every simulated GPU activity was launched by a runtime call it correlates with, as in Kineto
  // (copies whose issue the cluster prices at 0 ns get a 0 ns cudaMemcpyAsync).
  EXPECT_EQ(s.correlated, s.gpu_events);
}

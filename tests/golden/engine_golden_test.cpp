// Golden cases for the engine, as data: every folder of tests/data/golden/ holds graph.json,
// cluster.yaml, placement.json (formats of docs/formats.md), optionally options.json
// ({"stop_at_first_oom": true}) and calibration.yaml, and expected.json: the outcome
// (outcome_to_json without sim_wall_s). The comparison is exact. After an intended change of the
// engine's semantics, regenerate with PLACESIM_UPDATE_GOLDEN=1 and review the diff.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"

#include "tests/common/files.hpp"

namespace placesim::sim {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(PLACESIM_TEST_DATA) / "golden"))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

using placesim::test::slurp;

nlohmann::json run_case(const fs::path& dir) {
  const Graph g = read_graph_json((dir / "graph.json").string());
  const Cluster c =
      parse_cluster_yaml(slurp(dir / "cluster.yaml"), (dir / "cluster.yaml").string());
  const Placement p = resolve_placement(read_placement_json((dir / "placement.json").string()), g,
                                        c, (dir / "placement.json").string());
  SimOptions opt;
  if (fs::exists(dir / "options.json")) {
    const auto o = nlohmann::json::parse(slurp(dir / "options.json"));
    opt.stop_at_first_oom = o.value("stop_at_first_oom", false);
  }
  KernelCostModel costs;
  if (fs::exists(dir / "calibration.yaml"))
    costs.set_calibration(
        std::make_shared<const Calibration>(load_calibration((dir / "calibration.yaml").string())));
  auto j = nlohmann::json::parse(outcome_to_json(simulate(c, g, p, opt, costs)));
  j.erase("sim_wall_s");
  return j;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, OutcomeMatchesExactly) {
  const fs::path dir = fs::path(PLACESIM_TEST_DATA) / "golden" / GetParam();
  const nlohmann::json got = run_case(dir);
  const fs::path expected_path = dir / "expected.json";
  const char* update = std::getenv("PLACESIM_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary | std::ios::trunc) << got.dump(1) << "\n";
    GTEST_SKIP() << "rewrote " << expected_path;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path;
  const nlohmann::json want = nlohmann::json::parse(slurp(expected_path));
  // Key by key first, so that a failure names what changed.
  for (const auto& [key, value] : want.items()) EXPECT_EQ(got.at(key), value) << "key " << key;
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace placesim::sim

// Every file placesim writes is one placesim reads back: the writers apply the readers' rules
// before a file exists (graph JSON, cluster YAML, calibration YAML).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <unistd.h>

#include "sim/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"

namespace placesim::sim {
namespace {

std::filesystem::path temp_dir() {
  auto d =
      std::filesystem::temp_directory_path() / ("placesim_writers_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

TEST(GraphWriter, RefusesWhatTheReaderRefusesAndWritesNothing) {
  Graph g;
  g.name = "big";
  Op op;
  op.name = "a";
  op.flops = Flops{2e18};  // above the format's 1e18 per op; finalize() is not run here
  op.outputs.push_back({.bytes = Bytes{4}});
  g.ops.push_back(op);
  const auto path = temp_dir() / "big.json";
  std::filesystem::remove(path);
  try {
    write_graph_json(g, path.string());
    FAIL() << "a graph with 2e18 FLOPs in one op was written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("flops"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  g.ops[0].flops = Flops{1e9};
  write_graph_json(g, path.string());
  EXPECT_EQ(read_graph_json(path.string()).ops.size(), 1u);
}

TEST(ClusterWriter, RefusesALinkOutsideTheFormatsRange) {
  Cluster c = load_cluster("paper-2gpu");
  EXPECT_NO_THROW(parse_cluster_yaml(cluster_to_yaml(c), "back.yaml"));
  c.links[0].bandwidth = Bandwidth{0.0};  // NV0 imported as a 0 B/s link, once
  try {
    (void)cluster_to_yaml(c);
    FAIL() << "a 0 B/s link was written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(as written)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bandwidth"), std::string::npos) << e.what();
  }
}

TEST(CalibrationWriter, LongKeysReadBackAndNonFiniteValuesAreRefused) {
  Calibration c;
  c.source = "test";
  const std::string long_key = "aten::cat" + std::string(1500, '1') + ":f32";  // > 1024 characters
  c.devices["A100"].exact[long_key] = Duration{5000};
  c.devices["A100"].by_op_type["aten::mm"] =
      OpClassModel{.intercept_s = -1e-6, .flop_rate = 1e14, .byte_rate = 1e12};
  const auto path = temp_dir() / "cal.yaml";
  std::ofstream(path) << calibration_to_yaml(c);
  const Calibration back = load_calibration(path.string());
  ASSERT_EQ(back.devices.at("A100").exact.count(long_key), 1u);
  EXPECT_EQ(back.devices.at("A100").exact.at(long_key).ns, 5000);

  c.devices["A100"].by_op_type["aten::mm"].intercept_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW((void)calibration_to_yaml(c), InputError);
  c.devices["A100"].by_op_type["aten::mm"].intercept_s = 0;
  c.devices["A100"].exact[long_key] = Duration{std::numeric_limits<std::int64_t>::min()};
  EXPECT_THROW((void)calibration_to_yaml(c), InputError);
}

TEST(InputErrorMessage, StaysOneLineAndShort) {
  const InputError e("f.yaml", "key\r\nsplit", "a value, got \"" + std::string(50000, 'x') + "\"");
  const std::string m = e.what();
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_EQ(m.find('\r'), std::string::npos);
  EXPECT_LT(m.size(), 1300u);
  EXPECT_EQ(m.rfind("f.yaml: key\\x0d\\x0asplit: expected a value", 0), 0u) << m.substr(0, 80);
  EXPECT_EQ(m.substr(m.size() - 2), "x\"");
  // A 5 kB key of control bytes (found by fuzz_cluster): ": expected" stays in the message.
  const InputError k("c.yaml", "devices[1]." + std::string(5000, '\x1c'),
                     "a known key, got \"" + std::string(3000, 'x') + "\"");
  EXPECT_NE(std::string(k.what()).find(": expected a known key"), std::string::npos) << k.what();
  EXPECT_LT(std::string(k.what()).size(), 1300u);
}

}  // namespace
}  // namespace placesim::sim

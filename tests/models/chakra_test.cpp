// Chakra ET export -> import (models/chakra.hpp): the graph comes back edge for edge, with its
// placement; a gzip-compressed public sample is read; malformed files are one-line input errors.
#include "models/chakra.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "sim/error.hpp"

namespace pm = placesim::models;
namespace ps = placesim::sim;

namespace {

ps::Op op(const std::string& name, double flops, std::vector<std::int64_t> out_bytes,
          std::vector<ps::TensorRef> inputs = {}, std::vector<ps::OpId> control = {}) {
  ps::Op o;
  o.name = name;
  o.type = "MatMul";
  o.flops = ps::Flops{flops};
  o.bytes_read = ps::Bytes{1000};
  for (std::int64_t b : out_bytes) o.outputs.push_back({"", ps::Bytes{b}, {}, ps::Dtype::F32});
  o.inputs = std::move(inputs);
  o.control_inputs = std::move(control);
  return o;
}

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("placesim_chakra_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

}  // namespace

TEST(Chakra, ExportImportGivesTheGraphAndPlacementBack) {
  ps::Graph g;
  g.name = "tiny";
  g.add_op(op("a", 1e9, {4096, 800}));
  g.add_op(op("b", 2e9, {512}, {{0, 1}}));
  g.add_op(op("c", 3e9, {64}, {{0, 0}, {1, 0}}));
  g.add_op(op("d", 1e6, {8}, {{2, 0}}, {1}));  // control edge across devices
  g.add_op(op("e", 1e6, {8}, {}, {0}));        // control edge on one device
  g.finalize();
  const ps::Cluster c = ps::load_cluster("paper-2gpu");
  ps::Placement p;
  const ps::DeviceId g0 = c.device_index("gpu0"), g1 = c.device_index("gpu1");
  p.device_of = {g0, g1, g0, g0, g0};
  const ps::KernelCostModel costs;
  const auto files = pm::export_chakra(g, c, p, costs, temp_dir("roundtrip"));
  ASSERT_EQ(files.size(), static_cast<std::size_t>(c.num_devices()));
  const pm::ChakraImport in = pm::import_chakra(files);
  EXPECT_EQ(in.matched_send_recv, 3);  // a:1 and b:0 cross devices, and d's control edge on b
  ASSERT_EQ(in.graph.num_ops(), g.num_ops());
  for (ps::OpId i = 0; i < g.num_ops(); ++i) {
    const ps::Op& want = g.ops[static_cast<std::size_t>(i)];
    const ps::Op& got = in.graph.ops[static_cast<std::size_t>(i)];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.flops.v, want.flops.v);
    EXPECT_EQ(got.inputs, want.inputs);
    EXPECT_EQ(got.control_inputs, want.control_inputs);
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (std::size_t k = 0; k < want.outputs.size(); ++k)
      EXPECT_EQ(got.outputs[k].bytes.v, want.outputs[k].bytes.v);
    ASSERT_TRUE(got.measured.has_value());
    EXPECT_EQ(
        got.measured->ns,
        costs
            .op_time(want,
                     c.devices[static_cast<std::size_t>(p.device_of[static_cast<std::size_t>(i)])])
            .ns);
  }
  ASSERT_TRUE(in.placement.has_value());
  EXPECT_EQ(in.placement->ops.at("b"), "gpu1");
  EXPECT_EQ(in.placement->ops.at("d"), "gpu0");
}

TEST(Chakra, ReadsThePublicSampleGzipped) {
  const pm::ChakraImport in =
      pm::import_chakra({std::string(PLACESIM_TEST_DATA) + "/chakra/chakra.0.et.gz"});
  EXPECT_EQ(in.graph.num_ops(), 3664);
  EXPECT_EQ(in.comm_nodes, 21);
  EXPECT_GT(in.data_edges, 0);
  EXPECT_EQ(in.backward_deps, 607);  // CPU op -> its own kernel: the cycle the importer breaks
  EXPECT_FALSE(in.placement.has_value());
  int cpu = 0;
  for (const ps::Op& o : in.graph.ops) cpu += o.device_kind == ps::DeviceKind::Cpu;
  EXPECT_EQ(cpu, 2448);  // is_cpu_op
}

TEST(Chakra, MalformedFilesAreInputErrors) {
  const std::string d = temp_dir("bad");
  std::filesystem::create_directories(d);
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(d + "/" + name, std::ios::binary) << bytes;
    return d + "/" + name;
  };
  EXPECT_THROW(pm::import_chakra({write("empty.et", "")}), ps::InputError);
  EXPECT_THROW(pm::import_chakra(
                   {write("junk.et", std::string("\x08\x01\xff\xff\xff\xff\x0f", 7) + "junk")}),
               ps::InputError);
  EXPECT_THROW(pm::import_chakra({write("short.et", std::string("\x40", 1) + "abc")}),
               ps::InputError);
  EXPECT_THROW(pm::import_chakra({write("trunc.et.gz", std::string("\x1f\x8b\x08\x00", 4))}),
               ps::InputError);
  EXPECT_THROW(pm::import_chakra({}), ps::InputError);
}

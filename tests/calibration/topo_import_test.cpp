#include "calibration/topo_import.hpp"

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "sim/catalog.hpp"
#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"
#include "sim/simulate.hpp"

#include "tests/common/files.hpp"

namespace pc = placesim::calibration;
namespace sim = placesim::sim;

namespace {
std::string data(const std::string& f) {
  return std::string(PLACESIM_TEST_DATA) + "/calibration/" + f;
}
using placesim::test::slurp;
const sim::Link* link_between(const sim::Cluster& c, const std::string& a, const std::string& b) {
  const auto va = c.vertex_index(a), vb = c.vertex_index(b);
  for (const auto& l : c.links)
    if ((l.a == va && l.b == vb) || (l.a == vb && l.b == va)) return &l;
  return nullptr;
}
int count_kind(const sim::Cluster& c, const std::string& kind) {
  int n = 0;
  for (const auto& l : c.links) n += l.kind == kind;
  return n;
}
}  // namespace

TEST(NvidiaSmiTopo, Dgx1HybridCubeMesh) {
  pc::TopoOptions o;
  o.gpu_model = "V100-SXM2-16GB";
  const auto r =
      pc::import_nvidia_smi_topo(slurp(data("dgx1v_nvidia-smi-topo.txt")), "dgx1v.txt", o);
  const sim::Cluster& c = r.cluster;
  EXPECT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.cpus().size(), 2u);  // two CPU affinity sets
  // NV2 = two NVLink 2 links = 50 GB/s per direction; NV1 = 25 GB/s; SYS = no direct link.
  const sim::Link* l03 = link_between(c, "gpu0", "gpu3");
  ASSERT_NE(l03, nullptr);
  EXPECT_DOUBLE_EQ(l03->bandwidth.bytes_per_s, 50e9);
  EXPECT_EQ(l03->kind, "nvlink2");
  const sim::Link* l01 = link_between(c, "gpu0", "gpu1");
  ASSERT_NE(l01, nullptr);
  EXPECT_DOUBLE_EQ(l01->bandwidth.bytes_per_s, 25e9);
  EXPECT_EQ(link_between(c, "gpu0", "gpu5"), nullptr);
  EXPECT_EQ(count_kind(c, "nvlink2"),
            16);  // hybrid cube mesh: 6 links per GPU in 4 bundles, 8 x 4 / 2
  const sim::Cluster back = sim::parse_cluster_yaml(sim::cluster_to_yaml(c), "roundtrip.yaml");
  EXPECT_EQ(back.links.size(), c.links.size());
  EXPECT_EQ(back.peer_access, c.peer_access);
  // GPU2, GPU3 and the NIC share a PCIe switch (PIX).
  EXPECT_GE(c.vertex_index("mlx5_0"), 0);
  EXPECT_TRUE(c.peer_access[static_cast<std::size_t>(c.device_index("gpu0"))]
                           [static_cast<std::size_t>(c.device_index("gpu3"))]);
  EXPECT_FALSE(c.peer_access[static_cast<std::size_t>(c.device_index("gpu0"))]
                            [static_cast<std::size_t>(c.device_index("gpu5"))]);
  EXPECT_EQ(c.devices[static_cast<std::size_t>(c.device_index("gpu5"))].host,
            c.device_index("cpu1"));
  EXPECT_EQ(c.devices[static_cast<std::size_t>(c.device_index("gpu5"))].spec.model,
            "V100-SXM2-16GB");
}

TEST(NvidiaSmiTopo, A100PcieNvlinkPairsWithNumaColumns) {
  pc::TopoOptions o;
  o.gpu_model = "A100-PCIe-80GB";
  const auto r = pc::import_nvidia_smi_topo(
      slurp(data("a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt")), "a100.txt", o);
  const sim::Cluster& c = r.cluster;
  EXPECT_EQ(c.gpus().size(), 4u);
  EXPECT_EQ(c.cpus().size(), 4u);  // NUMA affinity 0..3
  const sim::Link* l = link_between(c, "gpu0", "gpu1");
  ASSERT_NE(l, nullptr);
  EXPECT_DOUBLE_EQ(l->bandwidth.bytes_per_s, 300e9);  // NV12 x 25 GB/s
  EXPECT_EQ(link_between(c, "gpu1", "gpu2"), nullptr);
  EXPECT_EQ(count_kind(c, "nvlink3"), 2);
  EXPECT_EQ(count_kind(c, "pcie4"), 4);
  EXPECT_FALSE(c.route(c.device_index("gpu0"), c.device_index("gpu2")).empty());
}

TEST(NvidiaSmiTopo, OldSocLegendAndBadCells) {
  const std::string soc =
      "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSOC\t0-7\nGPU1\tSOC\t X \t8-15\n\nLegend:\n  SOC = "
      "Path traverses a socket-level link\n";
  pc::TopoOptions o;
  o.gpu_model = "K80-GK210";
  const auto r = pc::import_nvidia_smi_topo(soc, "soc.txt", o);
  EXPECT_EQ(r.cluster.cpus().size(), 2u);
  EXPECT_FALSE(r.cluster.peer_access[static_cast<std::size_t>(r.cluster.device_index("gpu0"))]
                                    [static_cast<std::size_t>(r.cluster.device_index("gpu1"))]);
  const std::string bad = "\tGPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n";
  EXPECT_THROW(pc::import_nvidia_smi_topo(bad, "bad.txt", o), sim::InputError);
  EXPECT_THROW(pc::import_nvidia_smi_topo("hello\n", "empty.txt", o), sim::InputError);
  pc::TopoOptions none;
  EXPECT_THROW(pc::import_nvidia_smi_topo(soc, "soc.txt", none), sim::InputError);
}

TEST(NcclXml, Ncv4FourNumaNodesNoNvlink) {
  pc::TopoOptions o;  // the file names the GPUs (pci device 0x20b5)
  const auto r = pc::import_nccl_topo_xml(slurp(data("azhpc_ncv4-topo.xml")), "ncv4.xml", o);
  const sim::Cluster& c = r.cluster;
  EXPECT_EQ(c.gpus().size(), 4u);
  EXPECT_EQ(c.cpus().size(), 4u);
  EXPECT_EQ(c.devices[static_cast<std::size_t>(c.device_index("gpu0"))].spec.model,
            "A100-PCIe-80GB");
  EXPECT_EQ(count_kind(c, "nvlink3"), 0);  // self-targeted NVLink entries are not links
  EXPECT_GE(c.vertex_index("eth0"), 0);
}

TEST(NcclXml, Ndv4SwitchesAndNics) {
  pc::TopoOptions o;
  o.gpu_model = "A100-SXM4-40GB";
  const auto r = pc::import_nccl_topo_xml(slurp(data("azhpc_ndv4-topo.xml")), "ndv4.xml", o);
  const sim::Cluster& c = r.cluster;
  EXPECT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.cpus().size(), 4u);
  int nics = 0, switches = 0;
  for (const auto& v : c.vertices) {
    nics += v.kind == sim::VertexKind::Nic;
    switches += v.kind == sim::VertexKind::Switch;
  }
  EXPECT_EQ(nics, 8);
  EXPECT_EQ(switches, 4);
  const sim::Link* l = link_between(c, "gpu0", "sw0");
  ASSERT_NE(l, nullptr);
  EXPECT_NEAR(l->bandwidth.bytes_per_s, 31.5e9, 0.1e9);  // 16 GT/s x16
  // Without --gpu-model the file does not say which GPU it is.
  EXPECT_THROW(
      pc::import_nccl_topo_xml(slurp(data("azhpc_ndv4-topo.xml")), "ndv4.xml", pc::TopoOptions{}),
      sim::InputError);
}

TEST(NcclXml, Ndv2AndNdv5) {
  pc::TopoOptions o;
  o.gpu_model = "V100-SXM2-32GB";
  const auto v2 = pc::import_nccl_topo_xml(slurp(data("azhpc_ndv2-topo.xml")), "ndv2.xml", o);
  EXPECT_EQ(v2.cluster.gpus().size(), 8u);
  EXPECT_EQ(v2.cluster.cpus().size(), 2u);
  o.gpu_model = "H100-SXM5-80GB";
  const auto v5 = pc::import_nccl_topo_xml(slurp(data("azhpc_ndv5-topo.xml")), "ndv5.xml", o);
  EXPECT_EQ(v5.cluster.gpus().size(), 8u);
  const sim::Link* l = link_between(v5.cluster, "gpu0", "sw0");
  ASSERT_NE(l, nullptr);
  EXPECT_NEAR(l->bandwidth.bytes_per_s, 63.0e9, 0.1e9);  // 32 GT/s x16
}

TEST(NcclXml, NvlinkBundlesAndMalformed) {
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" vendor="GenuineIntel" modelid="85">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
      <gpu dev="0"><nvlink target="0000:02:00.0" count="2" tclass="0x030200"/></gpu>
    </pci>
    <pci busid="0000:02:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
      <gpu dev="1"><nvlink target="0000:01:00.0" count="2" tclass="0x030200"/></gpu>
    </pci>
  </cpu>
</system>)";
  pc::TopoOptions o;
  o.gpu_model = "V100-SXM2-16GB";
  const auto r = pc::import_nccl_topo_xml(xml, "two.xml", o);
  const sim::Link* l = link_between(r.cluster, "gpu0", "gpu1");
  ASSERT_NE(l, nullptr);
  EXPECT_DOUBLE_EQ(l->bandwidth.bytes_per_s, 50e9);
  EXPECT_EQ(count_kind(r.cluster, "nvlink2"), 1);
  EXPECT_THROW(pc::import_nccl_topo_xml("<system><cpu></system>", "bad.xml", o), sim::InputError);
  EXPECT_THROW(pc::import_nccl_topo_xml("<foo/>", "bad.xml", o), sim::InputError);
}

TEST(NcclXml, NonNumericAttributesAreInputErrors) {
  pc::TopoOptions o;
  o.gpu_model = "V100-SXM2-16GB";
  const std::string xml = R"(<system version="1"><cpu numaid="0">
    <pci busid="0000:01:00.0" class="0x030200"><gpu dev="zero"/></pci></cpu></system>)";
  EXPECT_THROW(pc::import_nccl_topo_xml(xml, "bad.xml", o), sim::InputError);
}

namespace {

// Seven GPUs each send 1 GiB to gpu0 (a many-to-one: the receiver's port is the bottleneck).
sim::Outcome seven_to_one(const sim::Cluster& c) {
  sim::Graph g;
  g.name = "seven-to-one";
  for (int i = 1; i <= 7; ++i) {
    sim::Op op;
    op.name = "send" + std::to_string(i);
    op.type = "Test";
    op.measured = sim::Duration{1000};
    op.outputs.push_back({.bytes = sim::Bytes{std::int64_t{1} << 30}});
    g.add_op(std::move(op));
  }
  sim::Op sink;
  sink.name = "recv";
  sink.type = "Test";
  sink.measured = sim::Duration{1000};
  sink.outputs.push_back({.bytes = sim::Bytes{8}});
  for (int i = 0; i < 7; ++i) sink.inputs.push_back({i, 0});
  g.add_op(std::move(sink));
  g.finalize();
  sim::Placement p;
  for (int i = 1; i <= 7; ++i) p.device_of.push_back(c.device_index("gpu" + std::to_string(i)));
  p.device_of.push_back(c.device_index("gpu0"));
  return sim::simulate(c, g, p);
}

// A file of tests/data/calibration imported with its GPUs as `gpu_model`.
pc::TopoImport import_smi(const std::string& file, const std::string& gpu_model) {
  pc::TopoOptions o;
  o.gpu_model = gpu_model;
  return pc::import_nvidia_smi_topo(slurp(data(file)), file, o);
}

// One NVSwitch with a port of `bytes_per_s` per GPU, and no GPU-GPU bundle.
void expect_switch_ports(const sim::Cluster& c, double bytes_per_s,
                         const std::string& kind = "nvlink4") {
  ASSERT_GE(c.vertex_index("nvswitch"), 0);
  EXPECT_EQ(count_kind(c, kind), static_cast<int>(c.gpus().size()));
  for (std::size_t g = 0; g < c.gpus().size(); ++g) {
    const sim::Link* port = link_between(c, "gpu" + std::to_string(g), "nvswitch");
    ASSERT_NE(port, nullptr) << g;
    EXPECT_DOUBLE_EQ(port->bandwidth.bytes_per_s, bytes_per_s);
  }
}

bool noted(const pc::TopoImport& r, const std::string& what) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

}  // namespace

TEST(NvidiaSmiTopo, HgxH100Nv18EverywhereIsOneNvSwitch) {
  // A real 8x H100 node (NV18 between every pair; stas00/ml-engineering, tests/data/README.md),
  // with the GPU named as nvidia-smi prints it.
  pc::TopoOptions o;
  o.gpu_model = "NVIDIA H100 80GB HBM3";
  o.cpu_model = "Intel(R) Xeon(R) Platinum 8480C";
  const auto r = pc::import_nvidia_smi_topo(
      slurp(data("h100x8_ml-engineering_nvidia-smi-topo.txt")), "h100.txt", o);
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.devices[static_cast<std::size_t>(c.device_index("gpu0"))].spec.model,
            "H100-SXM5-80GB");
  EXPECT_EQ(c.cpus().size(), 2u);
  ASSERT_GE(c.vertex_index("nvswitch"), 0);
  EXPECT_EQ(count_kind(c, "nvlink4"), 8);  // one port per GPU, not 28 GPU-GPU bundles
  EXPECT_EQ(link_between(c, "gpu0", "gpu1"), nullptr);
  for (int g = 0; g < 8; ++g) {
    const sim::Link* port = link_between(c, "gpu" + std::to_string(g), "nvswitch");
    ASSERT_NE(port, nullptr) << g;
    EXPECT_DOUBLE_EQ(port->bandwidth.bytes_per_s, 450e9);  // 18 x 25 GB/s
  }
  bool said = false;
  for (const auto& n : r.notes) said = said || n.find("NVSwitch") != std::string::npos;
  EXPECT_TRUE(said);
  // Every pair goes over the switch: two NVLink hops.
  const auto& route = c.route(c.device_index("gpu3"), c.device_index("gpu6"));
  ASSERT_EQ(route.segments.size(), 1u);
  EXPECT_EQ(route.segments[0].hops.size(), 2u);

  // The receiving GPU's 450 GB/s port limits a seven-to-one: 7 GiB / 450 GB/s = 16.70 ms, as on
  // the built-in hgx-h100.
  const sim::Outcome imported = seven_to_one(c);
  const sim::Outcome builtin = seven_to_one(sim::load_cluster("hgx-h100"));
  const double expect_ns = 7.0 * 1073741824.0 / 450e9 * 1e9;
  EXPECT_NEAR(static_cast<double>(imported.step_time.ns), expect_ns, 0.01 * expect_ns);
  EXPECT_NEAR(static_cast<double>(imported.step_time.ns), static_cast<double>(builtin.step_time.ns),
              0.001 * static_cast<double>(builtin.step_time.ns));
}

TEST(NvidiaSmiTopo, DgxA100Nv12EverywhereWithTwelveNics) {
  // A real DGX A100 (NV12 everywhere, mlx5_0..11 columns, NUMA 3/1/7/5; tests/data/README.md).
  pc::TopoOptions o;
  o.gpu_model = "NVIDIA A100-SXM4-80GB";
  o.cpu_model = "AMD EPYC 7742 64-Core Processor";
  const auto r =
      pc::import_nvidia_smi_topo(slurp(data("dgx-a100_nvidia-smi-topo.txt")), "dgx-a100.txt", o);
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 8u);
  // The GPUs' 4 NUMA nodes, and 2 more: mlx5_4/5 and mlx5_10/11 are SYS to every GPU and to each
  // other pair (the storage ports, one pair a socket). 4 CPUs until session 30 put them on NUMA 0.
  EXPECT_EQ(c.cpus().size(), 6u);
  EXPECT_EQ(count_kind(c, "nvlink3"), 8);
  const sim::Link* port = link_between(c, "gpu5", "nvswitch");
  ASSERT_NE(port, nullptr);
  EXPECT_DOUBLE_EQ(port->bandwidth.bytes_per_s, 300e9);  // 12 x 25 GB/s
  EXPECT_EQ(std::count_if(c.vertices.begin(), c.vertices.end(),
                          [](const sim::Vertex& v) { return v.kind == sim::VertexKind::Nic; }),
            12);
  EXPECT_GE(c.vertex_index("mlx5_11"), 0);
  // nvidia-smi gives no NIC speed: assumed (HDR 200 Gb/s for A100 systems) and said so.
  bool said = false;
  for (const auto& n : r.notes)
    said =
        said || (n.find("200 Gb/s") != std::string::npos && n.find("assumed") != std::string::npos);
  EXPECT_TRUE(said);
  for (const auto& l : c.links)
    if (l.kind == "ib") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 25e9) << l.name;
  // GPUs behind one PCIe switch (PXB) still talk over NVLink.
  const auto& route = c.route(c.device_index("gpu0"), c.device_index("gpu1"));
  for (const auto& h : route.segments[0].hops)
    EXPECT_EQ(c.links[static_cast<std::size_t>(h.link)].kind, "nvlink3");
  // --nic-gbps replaces the assumption.
  o.nic_gbit_s = 100;
  const auto r2 =
      pc::import_nvidia_smi_topo(slurp(data("dgx-a100_nvidia-smi-topo.txt")), "dgx-a100.txt", o);
  for (const auto& l : r2.cluster.links)
    if (l.kind == "ib") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 12.5e9);
}

TEST(NvidiaSmiTopo, Dgx2SixteenV100Nv6IsOneNvSwitch) {
  // DGX-2's matrix (16 V100, NV6 between every pair) written here from NVIDIA/nccl-tests#78's
  // output, whose stored excerpt is cut after GPU4 (tests/data/README.md).
  std::string t = "        ";
  for (int j = 0; j < 16; ++j) t += "GPU" + std::to_string(j) + "\t";
  t += "CPU Affinity\n";
  for (int i = 0; i < 16; ++i) {
    t += "GPU" + std::to_string(i);
    for (int j = 0; j < 16; ++j) t += i == j ? "\t X " : "\tNV6";
    t += i < 8 ? "\t0-23,48-71\n" : "\t24-47,72-95\n";
  }
  pc::TopoOptions o;
  o.gpu_model = "Tesla V100-SXM2-32GB";
  const auto r = pc::import_nvidia_smi_topo(t, "dgx2.txt", o);
  EXPECT_EQ(count_kind(r.cluster, "nvlink2"), 16);
  const sim::Link* port = link_between(r.cluster, "gpu15", "nvswitch");
  ASSERT_NE(port, nullptr);
  EXPECT_DOUBLE_EQ(port->bandwidth.bytes_per_s, 150e9);  // 6 x 25 GB/s
  // A DGX-1 (NV1/NV2, 6 links per GPU in all) stays a hybrid cube mesh of direct bundles.
  pc::TopoOptions v;
  v.gpu_model = "V100-SXM2-16GB";
  const auto d =
      pc::import_nvidia_smi_topo(slurp(data("dgx1v_nvidia-smi-topo.txt")), "dgx1v.txt", v);
  EXPECT_LT(d.cluster.vertex_index("nvswitch"), 0);
}

TEST(NcclXml, NvSwitchLinkCountsAddUp) {
  // DGX A100 XML (NVIDIA/nccl#1505's dump): six NVSwitch targets with count="2" each = 12 links.
  std::string xml = R"(<system version="1"><cpu numaid="0" vendor="AuthenticAMD">)";
  for (int g = 0; g < 2; ++g) {
    xml +=
        R"(<pci busid="0000:0)" + std::to_string(g + 7) +
        R"(:00.0" class="0x030200" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev=")" +
        std::to_string(g) + R"(">)";
    for (const char* t : {"c4", "c5", "c6", "c7", "c8", "c9"})
      xml +=
          std::string(R"(<nvlink target="0000:)") + t + R"(:00.0" count="2" tclass="0x068000"/>)";
    xml += "</gpu></pci>";
  }
  xml += "</cpu></system>";
  const auto r = pc::import_nccl_topo_xml(xml, "dgxa100.xml", pc::TopoOptions{});
  const sim::Link* port = link_between(r.cluster, "gpu1", "nvswitch");
  ASSERT_NE(port, nullptr);
  EXPECT_DOUBLE_EQ(port->bandwidth.bytes_per_s, 300e9);
}

TEST(NvidiaSmiTopo, DgxH100WithItsNicRowsCutShort) {
  // A real DGX H100 matrix (12 NICs, GPU NUMA ID column) as published: only NIC0-NIC5 rows
  // follow the GPU rows (tests/data/README.md). The GPU rows hold every GPU-NIC relation.
  pc::TopoOptions o;
  o.gpu_model = "NVIDIA H100 80GB HBM3";
  const auto r = pc::import_nvidia_smi_topo(slurp(data("dgx-h100_talos_nvidia-smi-topo_cut.txt")),
                                            "talos.txt", o);
  const sim::Cluster& c = r.cluster;
  EXPECT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.cpus().size(), 2u);
  EXPECT_EQ(count_kind(c, "nvlink4"), 8);
  EXPECT_EQ(count_kind(c, "ib"), 12);
  bool said = false;
  for (const auto& n : r.notes) said = said || n.find("6 NIC row(s) missing") != std::string::npos;
  EXPECT_TRUE(said);
  const double t = static_cast<double>(seven_to_one(c).step_time.ns);
  EXPECT_NEAR(t, static_cast<double>(seven_to_one(sim::load_cluster("hgx-h100")).step_time.ns),
              0.001 * t);
  // A GPU row missing is still an error.
  std::string text = slurp(data("dgx-h100_talos_nvidia-smi-topo_cut.txt"));
  const std::size_t g7 = text.find("GPU7\t");
  text.erase(g7, text.find('\n', g7) - g7 + 1);
  EXPECT_THROW(pc::import_nvidia_smi_topo(text, "cut.txt", o), sim::InputError);
}

TEST(NvidiaSmiTopo, MatrixPastedAsComments) {
  // The same H100 matrix with every line commented out ("# GPU0  X  NV18 ..."), as pasted in
  // scripts.
  std::string commented;
  std::istringstream in(slurp(data("h100x8_ml-engineering_nvidia-smi-topo.txt")));
  for (std::string line; std::getline(in, line);) commented += "# " + line + "\n";
  pc::TopoOptions o;
  o.gpu_model = "H100-SXM5-80GB";
  const auto r = pc::import_nvidia_smi_topo(commented, "c.txt", o);
  EXPECT_EQ(r.cluster.gpus().size(), 8u);
  EXPECT_EQ(count_kind(r.cluster, "nvlink4"), 8);
}

TEST(NvidiaSmiTopo, H20ThirtySixNicsWithGluedCells) {
  // A real 8x H20 (NV18 everywhere, 36 mlx5 NICs, GPU NUMA ID column; sglang#14092,
  // tests/data/README.md). The NIC12/NIC33 columns are printed glued to the next ("NODENODE",
  // "PIXNODE", "SYSSYS"); before, every row was short and the import stopped at line 11. The GPU
  // named as nvidia-smi prints it: the catalog's H20 has H100's 18 NVLink 4 links, so NV18 to
  // seven peers (126 links) is one NVSwitch with 18 x 25 = 450 GB/s ports.
  const auto r = import_smi("h20x8_sglang14092_nvidia-smi-topo.txt", "NVIDIA H20");
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.cpus().size(), 2u);  // NUMA Affinity 0 and 1
  EXPECT_EQ(count_kind(c, "ib"), 36);
  EXPECT_GE(c.vertex_index("mlx5_bond_3"), 0);  // names from the NIC legend
  expect_switch_ports(c, 450e9);
  EXPECT_TRUE(noted(r, "no space between them"));
  // GPU4 is PIX to NIC32 (mlx5_bond_0), the cell after a glued one: both on one PCIe switch;
  // GPU5 (NODE to it) is not.
  const auto up = [&](const std::string& v, const std::string& kind) -> int {
    const int vi = c.vertex_index(v);
    for (const auto& l : c.links)
      if (l.kind == kind && (l.a == vi || l.b == vi)) return l.a == vi ? l.b : l.a;
    return -1;
  };
  EXPECT_EQ(up("gpu4", "pcie5"), up("mlx5_bond_0", "ib"));
  EXPECT_NE(up("gpu5", "pcie5"), up("mlx5_bond_0", "ib"));
  const double t = static_cast<double>(seven_to_one(c).step_time.ns);
  EXPECT_NEAR(t, static_cast<double>(seven_to_one(sim::load_cluster("hgx-h100")).step_time.ns),
              0.001 * t);
  // A glued cell that is not two relations stays an error naming the row and column.
  std::string bad = slurp(data("h20x8_sglang14092_nvidia-smi-topo.txt"));
  bad.replace(bad.find("NODEPIX"), 7, "NODEPIQ");
  pc::TopoOptions o;
  o.gpu_model = "H100-SXM5-80GB";
  try {
    pc::import_nvidia_smi_topo(bad, "bad.txt", o);
    FAIL() << "expected an InputError";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NODEPIQ"), std::string::npos) << e.what();
  }
}

TEST(NvidiaSmiTopo, H800Nv8IsOneNvSwitchOfEightLinkPorts) {
  // A real 8x H800 (NV8 everywhere: H800 keeps 8 of H100's 18 NVLinks; 9 NICs incl.
  // mlx5_bond_0; sglang#28424, tests/data/README.md), imported as H100 for its links: one switch
  // with 8 x 25 = 200 GB/s ports, so seven GPUs sending 1 GiB each to gpu0 take 7 GiB / 200 GB/s.
  const auto r = import_smi("h800x8_sglang28424_nvidia-smi-topo.txt", "NVIDIA H800");
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.cpus().size(), 2u);
  EXPECT_EQ(count_kind(c, "ib"), 9);
  EXPECT_GE(c.vertex_index("mlx5_bond_0"), 0);
  expect_switch_ports(c, 200e9);
  const double expect_ns = 7.0 * 1073741824.0 / 200e9 * 1e9;
  EXPECT_NEAR(static_cast<double>(seven_to_one(c).step_time.ns), expect_ns, 0.01 * expect_ns);
}

TEST(NvidiaSmiTopo, NewGpuModelsKnowTheirLinkCounts) {
  // NV18 everywhere read for a B200 (18 NVLink 5 links of 50 GB/s): one switch, 900 GB/s ports;
  // for an H20 the same file gives 450 GB/s ports. A part without NVLink (L40S) gets no switch.
  const auto b = import_smi("h20x8_sglang14092_nvidia-smi-topo.txt", "NVIDIA B200");
  expect_switch_ports(b.cluster, 900e9, "nvlink5");
  EXPECT_GT(count_kind(b.cluster, "pcie5"), 0);
  const auto h = import_smi("h20x8_sglang14092_nvidia-smi-topo.txt", "NVIDIA H20");
  EXPECT_GT(count_kind(h.cluster, "nvlink4"), 0);
  const auto l = import_smi("h20x8_sglang14092_nvidia-smi-topo.txt", "NVIDIA L40S");
  EXPECT_LT(l.cluster.vertex_index("nvswitch"), 0);
  EXPECT_GT(count_kind(l.cluster, "pcie4"), 0);
}

TEST(NvidiaSmiTopo, Rtx4090PcieOnlyTabsAndGpuNumaId) {
  // Two real PCIe-only RTX 4090 boxes (tests/data/README.md): 8 GPUs, SYS everywhere, two NICs
  // PHB to GPU6, tab-separated with the GPU NUMA ID column (NVIDIA/go-gpuallocator#17); and 5
  // GPUs, PHB/NODE/SYS with the legend (noonghunna/club-3090#46).
  const auto dev = [](const sim::Cluster& c, const char* g) {
    return static_cast<std::size_t>(c.device_index(g));
  };
  const auto r8 =
      import_smi("rtx4090x8_go-gpuallocator17_nvidia-smi-topo.txt", "NVIDIA GeForce RTX 4090");
  const sim::Cluster& c8 = r8.cluster;
  ASSERT_EQ(c8.gpus().size(), 8u);
  EXPECT_EQ(c8.cpus().size(), 2u);
  EXPECT_EQ(count_kind(c8, "ib"), 2);
  EXPECT_EQ(count_kind(c8, "pcie4"), 9);  // 8 GPUs, and the PIX pair NIC0/NIC1's switch up
  EXPECT_FALSE(c8.peer_access[dev(c8, "gpu0")][dev(c8, "gpu1")]);  // SYS: through host memory
  const auto r5 = import_smi("rtx4090x5_club3090-46_nvidia-smi-topo.txt", "RTX-4090");
  const sim::Cluster& c5 = r5.cluster;
  ASSERT_EQ(c5.gpus().size(), 5u);
  EXPECT_EQ(c5.cpus().size(), 2u);  // GPU0 on NUMA 1, the rest on NUMA 0
  EXPECT_TRUE(c5.peer_access[dev(c5, "gpu1")][dev(c5, "gpu2")]);   // PHB
  EXPECT_FALSE(c5.peer_access[dev(c5, "gpu1")][dev(c5, "gpu3")]);  // NODE
  EXPECT_FALSE(c5.peer_access[dev(c5, "gpu0")][dev(c5, "gpu1")]);  // SYS
  EXPECT_EQ(link_between(c5, "gpu1", "gpu2"), nullptr);            // no NVLink
}

TEST(NvidiaSmiTopo, Gb200EmptyCpuAffinityKeepsTwoNumaNodes) {
  // A real GB200 NVL72 compute tray (4 GPUs, 2 Grace CPUs; tests/data/README.md): the rows of
  // GPU2/GPU3 print no CPU Affinity ("\t\t1\t\tN/A"), and every NIC is NODE to every GPU.
  // Before: the NUMA column misread and the NICs merged both NUMA nodes into one CPU.
  const auto r = import_smi("gb200x4_nvl72_nvidia-smi-topo_empty-cpu-affinity.txt", "NVIDIA GB200");
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 4u);
  EXPECT_EQ(c.cpus().size(), 2u);
  const auto host = [&](const char* g) {
    return c.devices[static_cast<std::size_t>(c.device_index(g))].host;
  };
  EXPECT_EQ(host("gpu0"), c.device_index("cpu0"));
  EXPECT_EQ(host("gpu1"), c.device_index("cpu0"));
  EXPECT_EQ(host("gpu2"), c.device_index("cpu1"));
  EXPECT_EQ(host("gpu3"), c.device_index("cpu1"));
  EXPECT_EQ(count_kind(c, "smp"), 1);
  EXPECT_GE(c.vertex_index("mlx5_5"), 0);
}

// Session 28 (issues 15, 16): four real 4-GPU matrices from sources not stored before
// (tests/data/README.md), each held at its reading.
TEST(NvidiaSmiTopo, FourGpuMatricesAsTheyOccur) {
  const auto dev = [](const sim::Cluster& c, const char* g) {
    return static_cast<std::size_t>(c.device_index(g));
  };
  const auto host = [](const sim::Cluster& c, const char* g) {
    return c.devices[static_cast<std::size_t>(c.device_index(g))].host;
  };
  // 4 L40 on PCIe (NODE pairs, SYS across), two ConnectX ports PIX to each other on NUMA 1.
  const auto l40 = import_smi("l40x4_nvidia-smi-topo.txt", "NVIDIA L40S");
  const sim::Cluster& l = l40.cluster;
  ASSERT_EQ(l.gpus().size(), 4u);
  EXPECT_EQ(l.cpus().size(), 2u);
  EXPECT_EQ(count_kind(l, "ib"), 2);
  EXPECT_EQ(host(l, "gpu2"), l.device_index("cpu1"));
  EXPECT_FALSE(l.peer_access[dev(l, "gpu0")][dev(l, "gpu1")]);  // NODE: through host memory
  EXPECT_LT(l.vertex_index("nvswitch"), 0);
  // 4 GPUs NV4 to each other (HGX A100 4-GPU: 3 x 4 of A100's 12 links), GPU2/GPU3 with an empty
  // CPU Affinity cell ("\t\t1\t\tN/A"): direct 100 GB/s bundles, no switch, two NUMA nodes.
  const auto nv4 =
      import_smi("nv4x4_gpu-d-2_nvidia-smi-topo_empty-cpu-affinity.txt", "A100-SXM4-80GB");
  const sim::Cluster& a = nv4.cluster;
  ASSERT_EQ(a.gpus().size(), 4u);
  EXPECT_EQ(a.cpus().size(), 2u);
  EXPECT_EQ(host(a, "gpu1"), a.device_index("cpu0"));
  EXPECT_EQ(host(a, "gpu3"), a.device_index("cpu1"));
  EXPECT_LT(a.vertex_index("nvswitch"), 0);
  EXPECT_EQ(count_kind(a, "nvlink3"), 6);
  ASSERT_NE(link_between(a, "gpu0", "gpu3"), nullptr);
  EXPECT_DOUBLE_EQ(link_between(a, "gpu0", "gpu3")->bandwidth.bytes_per_s, 100e9);
  EXPECT_EQ(count_kind(a, "ib"), 3);
  // 4 of an H800 node's GPUs (NV8 to each: through NVSwitch), 17 NICs, no CPU or NUMA affinity
  // printed at all: each GPU is SYS to every NIC but its own two PIX ones, so the matrix itself
  // puts the four GPUs on four NUMA nodes.
  const auto h800 = import_smi("h800x4_verl-sglang_nvidia-smi-topo_empty-affinity.txt", "H800");
  const sim::Cluster& h = h800.cluster;
  ASSERT_EQ(h.gpus().size(), 4u);
  expect_switch_ports(h, 200e9);
  EXPECT_EQ(count_kind(h, "ib"), 17);
  // The 9 NICs SYS to every shown GPU are PIX in pairs (the other 4 GPUs' NUMA nodes) and one
  // alone: 5 NUMA nodes without GPUs, each its own CPU (4 until session 30 put them on NUMA 0).
  EXPECT_EQ(h.cpus().size(), 9u);
  EXPECT_TRUE(noted(h800, "NIC0: SYS to every GPU, placed on NUMA 4 (a NUMA node without GPUs)"));
  EXPECT_TRUE(noted(h800, "NIC9: SYS to every GPU, placed on NUMA 4"));
  // 4 of an HGX A100 8-GPU board (NV12 to each: 36 > 12 links, so NVSwitch), no legend, the NIC
  // row with empty affinity cells.
  const auto a100 = import_smi("a100sxm80x4_nvidia-smi-topo_no-legend.txt", "A100-SXM4-80GB");
  const sim::Cluster& s = a100.cluster;
  ASSERT_EQ(s.gpus().size(), 4u);
  EXPECT_EQ(s.cpus().size(), 2u);  // NIC0 SYS to every GPU: a NUMA node of its own
  expect_switch_ports(s, 300e9, "nvlink3");
  EXPECT_EQ(count_kind(s, "ib"), 1);
}

TEST(NvidiaSmiTopo, EightGpuMatricesAsTheyOccur) {
  // 8 RTX 4090, every pair SYS, each GPU on a NUMA node of its own (8 of them, CPU 255 missing
  // from GPU4's affinity "112-127,240-254"): 8 host CPUs, no peer access.
  const auto r = import_smi("rtx4090x8_8-numa_nvidia-smi-topo.txt", "RTX-4090");
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 8u);
  EXPECT_EQ(c.cpus().size(), 8u);
  EXPECT_EQ(count_kind(c, "smp"), 28);
  for (const sim::DeviceId g : c.gpus())
    for (const sim::DeviceId h : c.gpus())
      EXPECT_FALSE(c.peer_access[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)]);
  // A DGX A100 with 10 NICs (8 compute, PXB in pairs; 2 storage ports PIX to each other, SYS to
  // every GPU), the shell prompt line above the header: NVSwitch, 4 NUMA nodes the GPUs name.
  const auto d = import_smi("dgx-a100_10-nic_nvidia-smi-topo_shell-prompt.txt", "A100-SXM4-80GB");
  ASSERT_EQ(d.cluster.gpus().size(), 8u);
  EXPECT_EQ(d.cluster.cpus().size(), 5u);  // the storage pair on a fifth, GPU-less NUMA node
  expect_switch_ports(d.cluster, 300e9, "nvlink3");
  EXPECT_EQ(count_kind(d.cluster, "ib"), 10);
  EXPECT_TRUE(noted(d, "NIC8: SYS to every GPU, placed on NUMA 4 (a NUMA node without GPUs)"));
  EXPECT_EQ(d.cluster.devices[static_cast<std::size_t>(d.cluster.device_index("gpu0"))].host,
            d.cluster.device_index("cpu0"));
}

// Session 30 (issues 15, 16): real matrices of newer drivers and of a 1-GPU server.
TEST(NvidiaSmiTopo, NicsSysToEveryGpuAreOnANumaNodeOfTheirOwn) {
  // lmdeploy's check_env on a 1-GPU server (spaces, "GPU NUMA ID"): GPU0 on NUMA 1 with NIC3
  // (PXB) and NIC4 (NODE); NIC0-2 NODE to each other and SYS to GPU0. Before: all five NICs on
  // the GPU's host bridge (one CPU), so GPU0 -> NIC0 skipped the socket link SYS names.
  const auto r = import_smi("lmdeploy-check-env_1gpu-5-bond-nics_nvidia-smi-topo_spaces.txt",
                            "A100-SXM4-80GB");
  const sim::Cluster& c = r.cluster;
  ASSERT_EQ(c.gpus().size(), 1u);
  ASSERT_EQ(c.cpus().size(), 2u);
  EXPECT_EQ(count_kind(c, "smp"), 1);
  EXPECT_EQ(count_kind(c, "ib"), 5);
  EXPECT_NE(link_between(c, "mlx5_bond_0", "hb1"), nullptr);
  EXPECT_NE(link_between(c, "mlx5_bond_2", "hb1"), nullptr);
  EXPECT_NE(link_between(c, "mlx5_bond_4", "hb0"), nullptr);
  EXPECT_EQ(link_between(c, "mlx5_bond_0", "hb0"), nullptr);
  EXPECT_TRUE(noted(r, "NIC0: SYS to every GPU, placed on NUMA 1 (a NUMA node without GPUs)"));
  // 8 V100-SXM2 (hybrid cube mesh) under driver 580: "GPU NUMA ID" after an empty cell
  // ("\t0\t\tN/A"), the NIC row ending in four empty cells. Read as the DGX-1 of the old layout.
  const auto v =
      import_smi("v100sxm2x8_vastai_driver580_nvidia-smi-topo_gpu-numa-id.txt", "V100-SXM2-32GB");
  const sim::Cluster& d = v.cluster;
  ASSERT_EQ(d.gpus().size(), 8u);
  EXPECT_EQ(d.cpus().size(), 2u);
  EXPECT_EQ(count_kind(d, "nvlink2"), 16);
  ASSERT_NE(link_between(d, "gpu0", "gpu3"), nullptr);
  EXPECT_DOUBLE_EQ(link_between(d, "gpu0", "gpu3")->bandwidth.bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(link_between(d, "gpu0", "gpu1")->bandwidth.bytes_per_s, 25e9);
  EXPECT_EQ(link_between(d, "gpu0", "gpu5"), nullptr);
  EXPECT_EQ(d.devices[static_cast<std::size_t>(d.device_index("gpu4"))].host,
            d.device_index("cpu1"));
  EXPECT_NE(link_between(d, "mlx5_2", "hb0"), nullptr);
}

namespace placesim::calibration {
namespace {

// The imported topology's writer check: what the importer cannot express in the cluster format
// (no NVLinks in an NV0 bundle, a NIC named twice, a link faster than 10^18 B/s) is an input error
// naming the input file, before any YAML is written.
TEST(TopoImportWriter, OutOfFormatTopologiesAreInputErrors) {
  TopoOptions o;
  o.gpu_model = "A100-PCIe-80GB";
  const std::string nv0 =
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV0\t0-23\t0\nGPU1\tNV0\t X "
      "\t0-23\t0\n";
  EXPECT_THROW(import_nvidia_smi_topo(nv0, "nv0.txt", o), sim::InputError);
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\" affinity=\"ffff\" arch=\"x86_64\" "
      "vendor=\"GenuineIntel\" familyid=\"6\" "
      "modelid=\"85\"><pci busid=\"0001:00:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" "
      "link_width=\"16\"/>"
      "<nic><net name=\"mlx5_0\" dev=\"0\" speed=\"100000\"/><net name=\"mlx5_0\" dev=\"1\" "
      "speed=\"100000\"/></nic>"
      "</cpu></system>";
  try {
    import_nccl_topo_xml(xml, "dup.xml", o);
    FAIL() << "two NICs named mlx5_0 were imported";
  } catch (const sim::InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("dup.xml: ", 0), 0u) << e.what();
  }
  std::string fast = xml;
  fast.replace(fast.find("speed=\"100000\""), 14, "speed=\"9e30\"");
  fast.replace(fast.rfind("mlx5_0"), 6, "mlx5_1");
  EXPECT_THROW(import_nccl_topo_xml(fast, "fast.xml", o), sim::InputError);
}

}  // namespace
}  // namespace placesim::calibration

namespace {

// Every GPU the catalog holds; the fact tables below must name each one.
std::vector<std::string> catalog_gpus() {
  std::vector<std::string> out;
  for (const std::string& m : sim::device_model_names())
    if (sim::find_device_model(m)->kind == sim::DeviceKind::Gpu) out.push_back(m);
  return out;
}

}  // namespace

TEST(TopoFacts, NvlinksPerGpuComeFromTheCatalog) {
  // The link count that decides "NVSwitch or point-to-point bundles", as the importer's prefix
  // list had it before the facts moved into the catalog, plus the session-13 parts.
  const std::map<std::string, int> expected = {{"K40", 0},
                                               {"K80-GK210", 0},
                                               {"P100-SXM2-16GB", 4},
                                               {"P100-PCIe-16GB", 0},
                                               {"V100-SXM2-16GB", 6},
                                               {"V100-SXM2-32GB", 6},
                                               {"V100-SXM3-32GB", 6},
                                               {"V100-SXM3-32GB-H", 6},
                                               {"V100-PCIe-16GB", 0},
                                               {"A100-SXM4-40GB", 12},
                                               {"A100-SXM4-80GB", 12},
                                               {"A100-PCIe-40GB", 12},
                                               {"A100-PCIe-80GB", 12},
                                               {"H100-SXM5-80GB", 18},
                                               {"H100-PCIe-80GB", 12},
                                               {"H200-SXM-141GB", 18},
                                               {"GH200-96GB", 18},
                                               {"GH200-144GB", 18},
                                               {"A30-24GB", 4},
                                               {"RTX-4090", 0},
                                               {"H20-SXM-96GB", 18},
                                               {"H800-SXM5-80GB", 8},
                                               {"B200-SXM-180GB", 18},
                                               {"GB200-186GB", 18},
                                               {"GB300-288GB", 18},
                                               {"L40S-48GB", 0},
                                               {"L4-24GB", 0},
                                               {"A10-24GB", 0},
                                               {"T4-16GB", 0},
                                               {"Quadro-RTX-8000", 2},
                                               {"H100-NVL-94GB", 12},
                                               {"H200-NVL-141GB", 18},
                                               {"RTX-3090", 4},
                                               {"RTX-A6000", 4},
                                               {"RTX-6000-Ada-48GB", 0},
                                               {"MI300X-192GB", 0},
                                               {"MI250X-GCD", 0}};
  for (const std::string& m : catalog_gpus()) {
    ASSERT_TRUE(expected.count(m)) << m << " has no expected NVLink count";
    EXPECT_EQ(sim::find_device_model(m)->interconnect.nvlinks, expected.at(m)) << m;
  }
  EXPECT_EQ(catalog_gpus().size(), expected.size());
  // A bridged pair of H100 NVL shows NV12 (12 of its 12 links): a bundle, not a switch.
  const auto r = import_smi("a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt", "NVIDIA H100 NVL");
  EXPECT_LT(r.cluster.vertex_index("nvswitch"), 0);
  const sim::Link* pair = link_between(r.cluster, "gpu0", "gpu1");
  ASSERT_NE(pair, nullptr);
  EXPECT_DOUBLE_EQ(pair->bandwidth.bytes_per_s, 12 * 25e9);
  EXPECT_EQ(pair->kind, "nvlink4");
}

TEST(TopoFacts, NvlinkGenerationAndRateComeFromTheCatalog) {
  // Generation and GB/s per link per direction (0 / "" = no NVLink), as before the move for the
  // older parts; GA102 cards have four x4 NVLink 3 links of 14.0625 GB/s per direction.
  const std::map<std::string, std::pair<std::string, double>> expected = {
      {"K40", {"", 0}},
      {"K80-GK210", {"", 0}},
      {"P100-SXM2-16GB", {"nvlink1", 20}},
      {"P100-PCIe-16GB", {"", 0}},
      {"V100-SXM2-16GB", {"nvlink2", 25}},
      {"V100-SXM2-32GB", {"nvlink2", 25}},
      {"V100-SXM3-32GB", {"nvlink2", 25}},
      {"V100-SXM3-32GB-H", {"nvlink2", 25}},
      {"V100-PCIe-16GB", {"nvlink2", 25}},
      {"A100-SXM4-40GB", {"nvlink3", 25}},
      {"A100-SXM4-80GB", {"nvlink3", 25}},
      {"A100-PCIe-40GB", {"nvlink3", 25}},
      {"A100-PCIe-80GB", {"nvlink3", 25}},
      {"H100-SXM5-80GB", {"nvlink4", 25}},
      {"H100-PCIe-80GB", {"nvlink4", 25}},
      {"H200-SXM-141GB", {"nvlink4", 25}},
      {"RTX-4090", {"", 0}},
      {"H20-SXM-96GB", {"nvlink4", 25}},
      {"H800-SXM5-80GB", {"nvlink4", 25}},
      {"B200-SXM-180GB", {"nvlink5", 50}},
      {"GB200-186GB", {"nvlink5", 50}},
      {"GB300-288GB", {"nvlink5", 50}},
      {"L40S-48GB", {"", 0}},
      {"L4-24GB", {"", 0}},
      {"A10-24GB", {"", 0}},
      {"T4-16GB", {"", 0}},
      {"Quadro-RTX-8000", {"nvlink2", 25}},
      {"H100-NVL-94GB", {"nvlink4", 25}},
      {"H200-NVL-141GB", {"nvlink4", 25}},
      {"GH200-96GB", {"nvlink4", 25}},
      {"GH200-144GB", {"nvlink4", 25}},
      {"A30-24GB", {"nvlink3", 25}},
      {"RTX-3090", {"nvlink3", 14.0625}},
      {"RTX-A6000", {"nvlink3", 14.0625}},
      {"RTX-6000-Ada-48GB", {"", 0}},
      {"MI300X-192GB", {"", 0}},
      {"MI250X-GCD", {"", 0}}};
  for (const std::string& m : catalog_gpus()) {
    ASSERT_TRUE(expected.count(m)) << m << " has no expected NVLink generation";
    std::string gen = "unset";
    EXPECT_DOUBLE_EQ(pc::nvlink_gb_s_per_link(m, &gen), expected.at(m).second) << m;
    EXPECT_EQ(gen, expected.at(m).first) << m;
  }
  EXPECT_EQ(catalog_gpus().size(), expected.size());
  std::string gen = "unset";
  EXPECT_EQ(pc::nvlink_gb_s_per_link("no such GPU", &gen), 0.0);
  EXPECT_EQ(gen, "");
}

TEST(TopoFacts, PcieGenerationComesFromTheCatalog) {
  // The x16 host link per direction: Gen3 15.75, Gen4 31.5, Gen5 63 GB/s; a name without a
  // generation (a CPU, an unknown name) is Gen3, as before.
  const std::map<std::string, int> expected = {{"K40", 3},
                                               {"K80-GK210", 3},
                                               {"P100-SXM2-16GB", 3},
                                               {"P100-PCIe-16GB", 3},
                                               {"V100-SXM2-16GB", 3},
                                               {"V100-SXM2-32GB", 3},
                                               {"V100-SXM3-32GB", 3},
                                               {"V100-SXM3-32GB-H", 3},
                                               {"V100-PCIe-16GB", 3},
                                               {"A100-SXM4-40GB", 4},
                                               {"A100-SXM4-80GB", 4},
                                               {"A100-PCIe-40GB", 4},
                                               {"A100-PCIe-80GB", 4},
                                               {"H100-SXM5-80GB", 5},
                                               {"H100-PCIe-80GB", 5},
                                               {"H200-SXM-141GB", 5},
                                               {"RTX-4090", 4},
                                               {"H20-SXM-96GB", 5},
                                               {"H800-SXM5-80GB", 5},
                                               {"B200-SXM-180GB", 5},
                                               {"GB200-186GB", 5},
                                               {"GB300-288GB", 5},
                                               {"L40S-48GB", 4},
                                               {"L4-24GB", 4},
                                               {"A10-24GB", 4},
                                               {"T4-16GB", 3},
                                               {"Quadro-RTX-8000", 3},
                                               {"H100-NVL-94GB", 5},
                                               {"H200-NVL-141GB", 5},
                                               {"GH200-96GB", 5},
                                               {"GH200-144GB", 5},
                                               {"A30-24GB", 4},
                                               {"RTX-3090", 4},
                                               {"RTX-A6000", 4},
                                               {"RTX-6000-Ada-48GB", 4},
                                               {"MI300X-192GB", 5},
                                               {"MI250X-GCD", 4}};
  const std::map<int, double> rate = {{3, 15.75}, {4, 31.5}, {5, 63.0}};
  for (const std::string& m : catalog_gpus()) {
    ASSERT_TRUE(expected.count(m)) << m << " has no expected PCIe generation";
    std::string gen;
    EXPECT_DOUBLE_EQ(pc::pcie_x16_gb_s(m, &gen), rate.at(expected.at(m))) << m;
    EXPECT_EQ(gen, "pcie" + std::to_string(expected.at(m))) << m;
  }
  EXPECT_EQ(catalog_gpus().size(), expected.size());
  std::string gen;
  EXPECT_DOUBLE_EQ(pc::pcie_x16_gb_s("Xeon-E5-2698v4", &gen), 15.75);
  EXPECT_EQ(gen, "pcie3");
}

TEST(TopoFacts, ReferenceNicComesFromTheCatalog) {
  // The NIC line rate NVIDIA ships per GPU generation in its reference systems (DGX-1 EDR 100,
  // DGX A100 HDR 200, DGX H100/H200/B200/GB200 NDR 400; H800/H20 as sourced), assumed as the
  // generation's DGX for a data-center PCIe card, none (0) for the rest. Before the catalog held
  // it, a model-name prefix rule gave B200, GB200, H20 and H800 EDR 100 Gb/s.
  const std::map<std::string, double> expected = {{"K40", 0},
                                                  {"K80-GK210", 0},
                                                  {"P100-SXM2-16GB", 100},
                                                  {"P100-PCIe-16GB", 100},
                                                  {"V100-SXM2-16GB", 100},
                                                  {"V100-SXM2-32GB", 100},
                                                  {"V100-SXM3-32GB", 100},
                                                  {"V100-SXM3-32GB-H", 100},
                                                  {"V100-PCIe-16GB", 100},
                                                  {"A100-SXM4-40GB", 200},
                                                  {"A100-SXM4-80GB", 200},
                                                  {"A100-PCIe-40GB", 200},
                                                  {"A100-PCIe-80GB", 200},
                                                  {"H100-SXM5-80GB", 400},
                                                  {"H100-PCIe-80GB", 400},
                                                  {"H200-SXM-141GB", 400},
                                                  {"RTX-4090", 0},
                                                  {"H20-SXM-96GB", 400},
                                                  {"H800-SXM5-80GB", 400},
                                                  {"B200-SXM-180GB", 400},
                                                  {"GB200-186GB", 400},
                                                  {"GB300-288GB", 800},
                                                  {"L40S-48GB", 0},
                                                  {"L4-24GB", 0},
                                                  {"A10-24GB", 0},
                                                  {"T4-16GB", 0},
                                                  {"Quadro-RTX-8000", 0},
                                                  {"H100-NVL-94GB", 400},
                                                  {"GH200-96GB", 400},
                                                  {"GH200-144GB", 400},
                                                  {"A30-24GB", 200},
                                                  {"H200-NVL-141GB", 400},
                                                  {"RTX-3090", 0},
                                                  {"RTX-A6000", 0},
                                                  {"RTX-6000-Ada-48GB", 0},
                                                  {"MI300X-192GB", 0},
                                                  {"MI250X-GCD", 0}};
  for (const std::string& m : catalog_gpus()) {
    ASSERT_TRUE(expected.count(m)) << m << " has no expected reference NIC";
    const sim::ReferenceNic nic = sim::reference_nic(m);
    EXPECT_DOUBLE_EQ(nic.gbit_s, expected.at(m)) << m;
    // Every figure says where it comes from; no figure, no words.
    EXPECT_EQ(nic.basis.empty(), nic.gbit_s == 0) << m;
  }
  EXPECT_EQ(catalog_gpus().size(), expected.size());
  // Printed names reach the entry; a CPU or an unknown name has none.
  EXPECT_DOUBLE_EQ(sim::reference_nic("NVIDIA B200").gbit_s, 400);
  EXPECT_DOUBLE_EQ(sim::reference_nic("Xeon-E5-2698v4").gbit_s, 0);
  EXPECT_DOUBLE_EQ(sim::reference_nic("no such GPU").gbit_s, 0);
}

TEST(TopoFacts, ImporterAssumesTheReferenceNicAndSaysWhere) {
  // nvidia-smi gives no NIC speed. A B200 box's NICs are DGX B200's ConnectX-7 at 400 Gb/s
  // (50 GB/s per direction, under PCIe Gen5's 63), and the note names DGX B200.
  const auto b = import_smi("h20x8_sglang14092_nvidia-smi-topo.txt", "NVIDIA B200");
  EXPECT_EQ(count_kind(b.cluster, "ib"), 36);
  for (const auto& l : b.cluster.links)
    if (l.kind == "ib") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 50e9) << l.name;
  EXPECT_TRUE(noted(b,
                    "36 NIC(s) at 400 Gb/s = 50 GB/s per direction (assumed, InfiniBand NDR "
                    "(ConnectX-7), as in DGX B200: nvidia-smi gives no NIC speed"));
  // The H800 file's own GPU: 400 Gb/s, as DeepSeek's H800 cluster.
  const auto h = import_smi("h800x8_sglang28424_nvidia-smi-topo.txt", "NVIDIA H800");
  for (const auto& l : h.cluster.links)
    if (l.kind == "ib") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 50e9) << l.name;
  EXPECT_TRUE(noted(h, "at 400 Gb/s") && noted(h, "H800 cluster"));
  // A GPU in no reference system keeps EDR 100 Gb/s and the note says why.
  const auto r = import_smi("rtx4090x8_go-gpuallocator17_nvidia-smi-topo.txt", "RTX-4090");
  for (const auto& l : r.cluster.links)
    if (l.kind == "ib") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 12.5e9) << l.name;
  EXPECT_TRUE(noted(r, "at 100 Gb/s") &&
              noted(r, "no reference system for RTX-4090 in the catalog, so InfiniBand EDR"));
  // --nic-gbps still replaces the catalog's figure.
  pc::TopoOptions o;
  o.gpu_model = "B200-SXM-180GB";
  o.nic_gbit_s = 200;
  const auto f = pc::import_nvidia_smi_topo(slurp(data("h20x8_sglang14092_nvidia-smi-topo.txt")),
                                            "h20.txt", o);
  for (const auto& l : f.cluster.links)
    if (l.kind == "ib") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 25e9) << l.name;
  EXPECT_TRUE(noted(f, "(--nic-gbps)"));
}

// Session 33 (issues 15, 16): a Grace Hopper superchip's matrix and a 4-GPU PCIe box with NVLink
// bridges (tests/data/README.md).
TEST(NvidiaSmiTopo, SuperchipAndBridgedMatricesAsTheyOccur) {
  // GH200 (cuBB's system check): one GPU whose `GPU NUMA ID` is 1 (its HBM a NUMA node of the
  // host) and four NICs. Before: a PCIe Gen5 link (63 GB/s) to a Xeon. Now: NVLink-C2C, 450 GB/s
  // per direction, to Grace.
  // The GPU is named as the file names it ("GPU product name : NVIDIA GH200 480GB") and imports as
  // the catalog's GH200 (96 GB HBM3 at 4 TB/s), not the H100 SXM5 it was read as before.
  const auto gh =
      import_smi("gh200_cubb-system-checks_nvidia-smi-topo_gpu-numa-id.txt", "NVIDIA GH200 480GB");
  const sim::Cluster& g = gh.cluster;
  ASSERT_EQ(g.gpus().size(), 1u);
  const sim::DeviceSpec& gs = g.devices[static_cast<std::size_t>(g.gpus()[0])].spec;
  EXPECT_EQ(gs.model, "GH200-96GB");
  EXPECT_DOUBLE_EQ(gs.memory_bandwidth.bytes_per_s, 4000e9);
  EXPECT_EQ(gs.memory_capacity.v, std::int64_t{96} << 30);
  ASSERT_EQ(g.cpus().size(), 1u);
  EXPECT_EQ(g.devices[static_cast<std::size_t>(g.cpus()[0])].spec.model, "Grace");
  ASSERT_NE(link_between(g, "gpu0", "hb0"), nullptr);
  EXPECT_EQ(link_between(g, "gpu0", "hb0")->kind, "c2c");
  EXPECT_DOUBLE_EQ(link_between(g, "gpu0", "hb0")->bandwidth.bytes_per_s, 450e9);
  EXPECT_EQ(count_kind(g, "ib"), 4);
  EXPECT_TRUE(noted(gh, "1 GPU(s) print a GPU NUMA ID"));
  // 4 A30 (vLLM's collect_env) with NVLink bridges on pairs 0-1 and 2-3 (NV4), SYS across, the one
  // NIC PXB/PIX to GPU2/GPU3 and its row ending in "X " without affinity: two 100 GB/s bundles,
  // the NIC behind GPU3's PCIe switch, no NVSwitch. Read as before the change (GPU NUMA ID N/A).
  // The GPUs are the catalog's A30 (vLLM's collect_env names them "NVIDIA A30"), not A100 PCIe
  // cards: 24 GB at 933 GB/s, and NV4 is 4 NVLink 3 links of 25 GB/s per direction.
  const auto a30 = import_smi("a30x4_vllm-collect-env_nvidia-smi-topo_nv4-pairs.txt", "NVIDIA A30");
  const sim::Cluster& a = a30.cluster;
  ASSERT_EQ(a.gpus().size(), 4u);
  for (const auto gi : a.gpus()) {
    const sim::DeviceSpec& as = a.devices[static_cast<std::size_t>(gi)].spec;
    EXPECT_EQ(as.model, "A30-24GB");
    EXPECT_DOUBLE_EQ(as.memory_bandwidth.bytes_per_s, 933e9);
  }
  EXPECT_EQ(a.cpus().size(), 2u);
  EXPECT_EQ(a.devices[static_cast<std::size_t>(a.cpus()[0])].spec.model, "Xeon-E5-2698v4");
  EXPECT_LT(a.vertex_index("nvswitch"), 0);
  ASSERT_NE(link_between(a, "gpu0", "gpu1"), nullptr);
  EXPECT_DOUBLE_EQ(link_between(a, "gpu0", "gpu1")->bandwidth.bytes_per_s, 100e9);
  EXPECT_NE(link_between(a, "gpu2", "gpu3"), nullptr);
  EXPECT_EQ(link_between(a, "gpu0", "gpu2"), nullptr);
  EXPECT_EQ(count_kind(a, "c2c"), 0);
  EXPECT_EQ(count_kind(a, "ib"), 1);
}

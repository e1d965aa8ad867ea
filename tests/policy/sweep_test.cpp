// Sweep spec parsing, grid expansion, the CSV (order, determinism across thread counts, resume
// after an interruption) with an injected evaluator, so these tests do not depend on the engine.
#include "policy/sweep/sweep.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "policy/comm/mpi.hpp"
#include "policy/comm/thread_comm.hpp"
#include "sim/error.hpp"

#include "tests/common/files.hpp"

namespace placesim::policy {
namespace {

const char* kSpec = R"(
name: tiny
question: does it work?
base: paper-4gpu
axes:
  gpus: [2, 4]
  link_scale.pcie: [0.5, 1, 2]
  peer_access: [on, off]
workloads:
  - rnnlm
  - {graph: nmt, options: "layers=2"}
methods:
  - single-gpu
  - best_of: [scotch, metis]
)";

using placesim::test::slurp;

/// A deterministic stand-in for the simulator: results depend only on the point.
PointResult fake(const SweepPoint& p) {
  PointResult r;
  std::size_t h = std::hash<std::string>{}(p.key());
  r.step_time = sim::Duration{static_cast<std::int64_t>(h % 1000000) + 1};
  r.oom = h % 7 == 0;
  r.peak_memory = sim::Bytes{static_cast<std::int64_t>(h % 4096)};
  r.peak_memory_device = "gpu0";
  r.busiest_device = "gpu1";
  r.busiest_utilization = static_cast<double>(h % 100) / 100.0;
  r.most_loaded_link = h % 3 ? "gpu0-sw0" : "";
  r.most_loaded_link_busy = 0.25;
  r.most_loaded_link_bytes = sim::Bytes{1234};
  if (p.method_label.rfind("best-of", 0) == 0) r.chosen = "metis";
  if (p.workload_label == "rnnlm" && p.axis_values[0].second == "2" &&
      p.axis_values[2].second == "off")
    throw sim::InputError("<point>", "method", "a placement, got \"comma, and \"quote\"\"");
  return r;
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sweep_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& f) const { return (dir_ / f).string(); }
  std::filesystem::path dir_;
};

TEST(SweepSpec, ParsesAxesWorkloadsMethods) {
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.base.cluster, "paper-4gpu");
  ASSERT_EQ(s.axes.size(), 3u);
  EXPECT_EQ(s.axes[1].name, "link_scale.pcie");
  EXPECT_EQ(s.axes[1].values, (std::vector<std::string>{"0.5", "1", "2"}));
  ASSERT_EQ(s.workloads.size(), 2u);
  EXPECT_EQ(s.workloads[1].label, "nmt(layers=2)");
  EXPECT_EQ(s.workloads[1].options, "layers=2");
  ASSERT_EQ(s.methods.size(), 2u);
  EXPECT_EQ(s.methods[1].label, "best-of(scotch|metis)");
  EXPECT_EQ(s.methods[1].candidates.size(), 2u);
}

TEST(SweepSpec, RejectsBadInputNamingTheKey) {
  auto msg = [](const std::string& text) {
    try {
      parse_sweep_spec(text, "bad.yaml");
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string tail = "workloads: [nmt]\nmethods: [heft]\n";
  EXPECT_NE(msg("base: x\naxes:\n  warp_drive: [1]\n" + tail).find("axes.warp_drive"),
            std::string::npos);
  EXPECT_NE(msg("base: x\naxes:\n  gpus: [2, zero]\n" + tail).find("axes.gpus[1]"),
            std::string::npos);
  EXPECT_NE(msg("base: x\naxes:\n  host_link_bandwidth: [16]\n" + tail)
                .find("axes.host_link_bandwidth[0]"),
            std::string::npos);
  EXPECT_NE(msg("base: x\naxes:\n  gpus: []\n" + tail).find("non-empty"), std::string::npos);
  EXPECT_NE(msg("axes:\n  gpus: [2]\n" + tail).find("base"), std::string::npos);
  EXPECT_NE(msg("base: x\nworkloads: [nmt]\nmethods: [{best_of: [heft]}]\n").find("methods[0]"),
            std::string::npos);
  EXPECT_NE(msg("base: x\naxes:\n  gpus: [2]\npoints:\n  - {gpus: 2, peer_access: on}\n" + tail)
                .find("points[0].peer_access"),
            std::string::npos);
  EXPECT_NE(msg("base: [\n").find("bad.yaml"), std::string::npos);
}

TEST(SweepSpec, AcceptsOtherSpellings) {
  const SweepSpec s = parse_sweep_spec(
      "cluster: dgx1-v100\n"
      "axes:\n  - {name: num_gpus, values: [4, 8]}\n  - {name: pcie_gen, values: [pcie3, pcie4]}\n"
      "  - {name: link_bw.ib, values: [100 Gbit/s]}\n"
      "workloads:\n  - {name: gpt, options: {layers: 2, batch: 8}}\n"
      "methods: [heft, {best-of: [heft, m-etf]}]\n",
      "alt.yaml");
  EXPECT_EQ(s.base.cluster, "dgx1-v100");
  ASSERT_EQ(s.axes.size(), 3u);
  EXPECT_EQ(s.axes[0].name, "gpus");
  EXPECT_EQ(s.axes[1].name, "pcie_generation");
  EXPECT_EQ(s.axes[2].name, "link_bandwidth.ib");
  EXPECT_EQ(s.workloads[0].graph, "gpt");
  EXPECT_EQ(s.workloads[0].options, "layers=2,batch=8");
  EXPECT_EQ(s.methods[1].label, "best-of(heft|m-etf)");
  EXPECT_THROW(
      parse_sweep_spec("base: x\naxes: {gpus: [2], num_gpus: [4]}\nworkloads: [a]\nmethods: [b]\n",
                       "d.yaml"),
      sim::InputError);
}

TEST(SweepSpec, ExpandsGridLastAxisFastest) {
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  const auto pts = expand_points(s);
  ASSERT_EQ(pts.size(), 2u * 3u * 2u * 2u * 2u);
  EXPECT_EQ(pts[0].key(), "2,0.5,on,rnnlm,single-gpu");
  EXPECT_EQ(pts[1].key(), "2,0.5,on,rnnlm,best-of(scotch|metis)");
  EXPECT_EQ(pts[2].key(), "2,0.5,on,nmt(layers=2),single-gpu");
  EXPECT_EQ(pts[4].key(), "2,0.5,off,rnnlm,single-gpu");
  EXPECT_EQ(pts.back().key(), "4,2,off,nmt(layers=2),best-of(scotch|metis)");
  for (std::size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i].index, i);
}

TEST(SweepSpec, ListedPointsInsteadOfGrid) {
  const std::string text =
      "base: {template: pcie-tree, gpu_model: V100-SXM2-16GB}\n"
      "axes:\n  gpus: [2, 4, 8]\n  peer_access: [on, off]\n"
      "points:\n  - {gpus: 8, peer_access: off}\n  - {gpus: 2, peer_access: true}\n"
      "workloads: [nmt]\nmethods: [heft]\n";
  const SweepSpec s = parse_sweep_spec(text, "p.yaml");
  EXPECT_EQ(s.base.template_name, "pcie-tree");
  EXPECT_EQ(s.base.params.at("gpu_model"), "V100-SXM2-16GB");
  const auto pts = expand_points(s);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].key(), "8,off,nmt,heft");
  EXPECT_EQ(pts[1].key(), "2,on,nmt,heft");
}

TEST(SweepCsv, SplitRoundTripsQuoting) {
  const std::vector<std::string> f = {"a", "b,c", "say \"hi\"", ""};
  SweepPoint p;
  p.workload_label = "w,1";
  p.method_label = "m";
  PointResult r;
  r.error = "bad, \"really\"";
  const auto fields = split_csv_line(csv_row(p, r));
  ASSERT_TRUE(fields);
  EXPECT_EQ((*fields)[0], "w,1");
  EXPECT_EQ(fields->back(), "bad, \"really\"");
  EXPECT_FALSE(split_csv_line("a,\"unterminated"));
}

TEST_F(SweepTest, IdenticalCsvOnOneAndTwoThreads) {
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  SweepRunOptions o1;
  o1.threads = 1;
  const auto st1 = run_sweep(s, fake, path("a.csv"), o1);
  SweepRunOptions o2;
  o2.threads = 2;
  const auto st2 = run_sweep(s, fake, path("b.csv"), o2);
  EXPECT_TRUE(st1.completed);
  EXPECT_EQ(st1.evaluated, 48u);
  EXPECT_EQ(st2.evaluated, 48u);
  const std::string a = slurp(path("a.csv"));
  EXPECT_EQ(a, slurp(path("b.csv")));
  EXPECT_FALSE(std::filesystem::exists(path("a.csv.partial")));
  // Header + one row per point, in point order; the failing point keeps its error.
  std::istringstream is(a);
  std::string line;
  std::getline(is, line);
  EXPECT_EQ(line.rfind("gpus,link_scale.pcie,peer_access,workload,method,step_time_s", 0), 0u);
  const auto pts = expand_points(s);
  for (const auto& p : pts) {
    ASSERT_TRUE(std::getline(is, line));
    EXPECT_EQ(line.rfind(p.key() + ",", 0), 0u) << line;
  }
  EXPECT_NE(
      a.find("\"<point>: method: expected a placement, got \"\"comma, and \"\"quote\"\"\"\"\""),
      std::string::npos);
}

TEST_F(SweepTest, ResumesAfterInterruptionWithoutRepeatingWork) {
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  run_sweep(s, fake, path("full.csv"), {});

  std::atomic<int> calls{0};
  auto counting = [&](const SweepPoint& p) {
    ++calls;
    return fake(p);
  };
  SweepRunOptions stop;
  stop.threads = 2;
  stop.stop_after = 10;
  const auto st = run_sweep(s, counting, path("r.csv"), stop);
  EXPECT_FALSE(st.completed);
  EXPECT_FALSE(std::filesystem::exists(path("r.csv")));
  ASSERT_TRUE(std::filesystem::exists(path("r.csv.partial")));
  EXPECT_EQ(calls.load(), 10);
  // A kill in the middle of a write leaves a cut line; it is dropped and redone.
  {
    std::ofstream j(path("r.csv.partial"), std::ios::app | std::ios::binary);
    j << "4,2,off,nmt(layers=2),single-gpu,0.00";
  }
  calls = 0;
  const auto st2 = run_sweep(s, counting, path("r.csv"), {});
  EXPECT_TRUE(st2.completed);
  EXPECT_EQ(st2.skipped, 10u);
  EXPECT_EQ(calls.load(), 38);
  EXPECT_EQ(slurp(path("r.csv")), slurp(path("full.csv")));
  EXPECT_FALSE(std::filesystem::exists(path("r.csv.partial")));

  // Running a finished sweep again evaluates nothing and leaves the file as it was.
  calls = 0;
  const auto st3 = run_sweep(s, counting, path("r.csv"), {});
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(st3.skipped, 48u);
  EXPECT_EQ(slurp(path("r.csv")), slurp(path("full.csv")));
}

TEST_F(SweepTest, RetryErrorsEvaluatesOnlyTheFailedPointsAgain) {
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  run_sweep(s, fake, path("e.csv"), {});
  std::atomic<int> calls{0};
  SweepRunOptions o;
  o.retry_errors = true;
  run_sweep(
      s,
      [&](const SweepPoint& p) {
        ++calls;
        return fake(p);
      },
      path("e.csv"), o);
  EXPECT_EQ(calls.load(), 6);  // gpus=2, peer_access=off, rnnlm: 3 scales x 2 methods
  run_sweep(s, fake, path("f.csv"), {});
  EXPECT_EQ(slurp(path("e.csv")), slurp(path("f.csv")));
}

TEST_F(SweepTest, AddingAnAxisValueEvaluatesOnlyTheNewPoints) {
  SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  run_sweep(s, fake, path("x.csv"), {});
  s.axes[0].values.push_back("8");
  std::atomic<int> calls{0};
  run_sweep(s,
            [&](const SweepPoint& p) {
              ++calls;
              return fake(p);
            },
            path("x.csv"), {});
  EXPECT_EQ(calls.load(), 24);
  run_sweep(s, fake, path("y.csv"), {});
  EXPECT_EQ(slurp(path("x.csv")), slurp(path("y.csv")));
}

TEST_F(SweepTest, RefusesACsvOfAnotherSpec) {
  {
    std::ofstream o(path("other.csv"));
    o << "a,b,c\n1,2,3\n";
  }
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  EXPECT_THROW(run_sweep(s, fake, path("other.csv"), {}), sim::InputError);
  EXPECT_EQ(slurp(path("other.csv")), "a,b,c\n1,2,3\n");
}

TEST_F(SweepTest, CostHintHandsOutTheMostExpensivePointsFirstAndKeepsTheCsv) {
  const SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  run_sweep(s, fake, path("plain.csv"), {});
  // Guessed cost: the point's index modulo 5, so the order is 4 9 14 ... then 3 8 ... .
  std::vector<std::size_t> order;
  SweepRunOptions o;
  o.threads = 1;
  o.cost_hint = [](const SweepPoint& p) {
    if (p.index == 6) throw std::runtime_error("a guess that fails counts as free");
    return static_cast<double>(p.index % 5);
  };
  run_sweep(
      s,
      [&](const SweepPoint& p) {
        order.push_back(p.index);
        return fake(p);
      },
      path("hinted.csv"), o);
  ASSERT_EQ(order.size(), 48u);
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto cost = [](std::size_t i) { return i == 6 ? 0u : i % 5; };
    EXPECT_TRUE(cost(order[k - 1]) > cost(order[k]) ||
                (cost(order[k - 1]) == cost(order[k]) && order[k - 1] < order[k]))
        << "position " << k << ": " << order[k - 1] << " then " << order[k];
  }
  EXPECT_EQ(slurp(path("hinted.csv")), slurp(path("plain.csv")));
}

TEST_F(SweepTest, RanksShareThePointsThroughTheQueueAndRankZeroWritesTheSameCsv) {
  SweepSpec s = parse_sweep_spec(kSpec, "tiny.yaml");
  s.axes[1].values = {"0.25", "0.5", "1", "2", "4", "8", "16", "32"};  // 128 points: rounds
  run_sweep(s, fake, path("one.csv"), {});
  for (int ranks : {2, 3}) {
    ThreadComm::Shared shared(ranks);
    std::vector<std::vector<std::size_t>> seen(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    const std::string out = path("ranks" + std::to_string(ranks) + ".csv");
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        ThreadComm comm(shared, r);
        SweepRunOptions o;
        o.threads = 1;
        o.comm = &comm;
        std::mutex m;
        run_sweep(
            s,
            [&](const SweepPoint& p) {
              {
                const std::lock_guard lock(m);
                seen[static_cast<std::size_t>(r)].push_back(p.index);
              }
              return fake(p);
            },
            out, o);
      });
    for (auto& t : threads) t.join();
    // Every point evaluated exactly once, by whichever rank asked first.
    std::vector<int> times(128, 0);
    for (int r = 0; r < ranks; ++r)
      for (std::size_t i : seen[static_cast<std::size_t>(r)]) ++times.at(i);
    EXPECT_EQ(times, std::vector<int>(128, 1)) << ranks << " ranks";
    EXPECT_EQ(slurp(out), slurp(path("one.csv"))) << ranks << " ranks";
  }
}

TEST(MpiUtil, SingleRankIsIdentity) {
  MpiRuntime rt;  // not under mpirun in a unit test
  MpiComm comm(rt);
  EXPECT_EQ(comm.size(), 1);
  std::vector<double> v = {1.5, -2.0};
  allreduce_sum_fixed_order(comm, v);
  EXPECT_EQ(v, (std::vector<double>{1.5, -2.0}));
}

TEST(MpiUtil, FixedOrderAllReduceGivesEveryRankTheSameSum) {
  ThreadComm::Shared shared(3);
  std::vector<std::vector<float>> data = {{1e8f, 1.0f}, {-1e8f, 2.0f}, {1.0f, 3.0f}};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      ThreadComm comm(shared, r);
      allreduce_sum_fixed_order(comm, data[static_cast<std::size_t>(r)]);
    });
  for (auto& t : threads) t.join();
  // Rank order: (1e8 + -1e8) + 1 = 1 exactly; another order would lose the 1.
  for (const auto& d : data) EXPECT_EQ(d, (std::vector<float>{1.0f, 6.0f}));
}

// Cluster transformations, on the built-in clusters of scenarios/clusters (sources in their
// headers) and on the generated templates.
std::string scenario(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/scenarios/clusters/" + name + ".yaml";
}

int links_of_kind(const sim::Cluster& c, const std::string& prefix) {
  int n = 0;
  for (const auto& l : c.links) n += l.kind.rfind(prefix, 0) == 0;
  return n;
}

TEST(SweepCluster, TemplatesBuildRoutableClusters) {
  for (const std::string ic : {"pcie", "nvlink", "nvswitch"}) {
    SweepBase b;
    b.template_name = "pcie-tree";
    b.params = {{"gpu_model", "V100-SXM2-16GB"}, {"gpus", "8"}, {"interconnect", ic}};
    const sim::Cluster c = make_base_cluster(b, "t.yaml");
    EXPECT_EQ(c.gpus().size(), 8u) << ic;
    EXPECT_EQ(c.cpus().size(), 1u);
    EXPECT_EQ(links_of_kind(c, "pcie3"), 4 + 8);  // 4 switch uplinks, 8 GPU links
    const int nv = links_of_kind(c, "nvlink2");
    EXPECT_EQ(nv, ic == "pcie" ? 0 : ic == "nvlink" ? 6 * 2 + 4 : 8) << ic;
    const auto& r = c.route(c.device_index("gpu0"), c.device_index("gpu7"));
    ASSERT_FALSE(r.empty());
    EXPECT_FALSE(r.staged());
  }
  SweepBase b;
  b.template_name = "nvswitch";
  b.params = {{"gpu_model", "A100-SXM4-40GB"}, {"gpus", "4"}};
  const sim::Cluster a100 = make_base_cluster(b, "t.yaml");
  EXPECT_EQ(links_of_kind(a100, "pcie4"), 2 + 4);
  EXPECT_EQ(links_of_kind(a100, "nvlink3"), 4);
  for (const auto& l : a100.links)
    if (l.kind == "nvlink3") EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 12 * 25e9);
  b.params["gpu_model"] = "K80";  // a unique prefix of K80-GK210
  EXPECT_EQ(make_base_cluster(b, "t.yaml").devices[1].spec.model, "K80-GK210");
  b.params["gpu_model"] = "A100";  // ambiguous: SXM4/PCIe, 40/80 GB
  EXPECT_THROW(make_base_cluster(b, "t.yaml"), sim::InputError);
  b.params["gpu_model"] = "A100-NOPE";
  EXPECT_THROW(make_base_cluster(b, "t.yaml"), sim::InputError);
  b.params = {{"gpu_model", "A100-SXM4-40GB"}, {"warp", "9"}};
  EXPECT_THROW(make_base_cluster(b, "t.yaml"), sim::InputError);
}

TEST(SweepCluster, GpuCountShrinksAndClonesTheStructure) {
  const sim::Cluster base = sim::load_cluster(scenario("paper-4gpu"));
  sim::Cluster two = with_gpu_count(base, 2, "t.yaml");
  sim::compute_routes(two);
  EXPECT_EQ(two.gpus().size(), 2u);
  EXPECT_EQ(two.vertex_index("plx1"), -1);  // its GPUs are gone, so is the switch
  EXPECT_NE(two.vertex_index("plx0"), -1);
  EXPECT_TRUE(two.peer_access[two.device_index("gpu0")][two.device_index("gpu1")]);

  sim::Cluster eight = with_gpu_count(base, 8, "t.yaml");
  sim::compute_routes(eight);
  ASSERT_EQ(eight.gpus().size(), 8u);
  const auto g = [&](const char* n) { return eight.device_index(n); };
  ASSERT_NE(g("gpu7"), -1);
  EXPECT_EQ(eight.devices[g("gpu6")].spec.model, "K80-GK210");
  // gpu4 copies gpu0: same switch, so peer access with gpu0/gpu1/gpu5, none across boards.
  EXPECT_TRUE(eight.peer_access[g("gpu4")][g("gpu0")]);
  EXPECT_TRUE(eight.peer_access[g("gpu4")][g("gpu5")]);
  EXPECT_FALSE(eight.peer_access[g("gpu4")][g("gpu2")]);
  EXPECT_TRUE(eight.route(g("gpu4"), g("gpu6")).staged());
  EXPECT_EQ(links_of_kind(eight, "pcie3"), 2 + 8);
}

TEST(SweepCluster, GpuCountKeepsNvlinkPairsWithinReplicas) {
  const sim::Cluster base = sim::load_cluster(scenario("dgx1-v100"));
  const int nv = links_of_kind(base, "nvlink");
  ASSERT_GT(nv, 0);
  sim::Cluster sixteen = with_gpu_count(base, 16, "t.yaml");
  sim::compute_routes(sixteen);
  EXPECT_EQ(sixteen.gpus().size(), 16u);
  EXPECT_EQ(links_of_kind(sixteen, "nvlink"), 2 * nv);
  sim::Cluster four = with_gpu_count(base, 4, "t.yaml");
  sim::compute_routes(four);
  EXPECT_EQ(four.gpus().size(), 4u);
  EXPECT_LT(links_of_kind(four, "nvlink"), nv);
}

TEST(SweepCluster, LinkAndDeviceAxes) {
  const sim::Cluster base = sim::load_cluster(scenario("paper-4gpu"));
  SweepBase b;
  b.cluster = "paper-4gpu";
  const sim::Cluster c = apply_axes(b, base,
                                    {{"pcie_generation", "pcie5"},
                                     {"gpu_model", "A100-SXM4-40GB"},
                                     {"host_link_bandwidth", "10 GB/s"},
                                     {"gpu_memory", "8 GiB"},
                                     {"peer_access", "off"}},
                                    "t.yaml");
  for (const auto& l : c.links) {
    if (l.kind == "membus")
      EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 10e9);
    else
      EXPECT_EQ(l.kind, "pcie5");
    if (l.kind == "pcie5") EXPECT_NEAR(l.bandwidth.bytes_per_s, 63e9, 1e3);
  }
  for (auto g : c.gpus()) {
    EXPECT_EQ(c.devices[g].spec.model, "A100-SXM4-40GB");
    EXPECT_EQ(c.devices[g].spec.memory_capacity.v, 8LL << 30);
  }
  EXPECT_TRUE(c.route(c.device_index("gpu0"), c.device_index("gpu1")).staged());

  const sim::Cluster s =
      apply_axes(b, base, {{"link_scale.pcie", "0.5"}, {"peer_access", "on"}}, "t.yaml");
  for (const auto& l : s.links)
    if (l.kind == "pcie3") EXPECT_NEAR(l.bandwidth.bytes_per_s, 7.875e9, 1e3);
  EXPECT_FALSE(s.route(s.device_index("gpu0"), s.device_index("gpu3")).staged());
  EXPECT_THROW(apply_axes(b, base, {{"interconnect", "nvlink"}}, "t.yaml"), sim::InputError);
  EXPECT_THROW(apply_axes(b, base, {{"gpu_model", "Xeon-E5-2690v3"}}, "t.yaml"), sim::InputError);

  const sim::Cluster dgx = sim::load_cluster(scenario("dgx1-v100"));
  SweepBase bd;
  bd.cluster = "dgx1-v100";
  const sim::Cluster d4 = apply_axes(bd, dgx, {{"nvlink_links", "4"}}, "t.yaml");
  for (const auto& l : d4.links)
    if (l.kind.rfind("nvlink", 0) == 0) EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_s, 100e9);
}

TEST_F(SweepTest, RealEvaluatorEndToEnd) {
  const SweepSpec s = parse_sweep_spec(
      "base: {template: pcie-tree, gpu_model: V100-SXM2-16GB}\n"
      "axes:\n  gpus: [2, 4]\n  gpu_memory: [16 GiB, 1 MiB]\n"
      "workloads:\n  - {graph: rnnlm, options: "
      "\"layers=1,steps=2,hidden=256,vocab=1000,batch=8\"}\n"
      "methods: [single-gpu, {best_of: [single-gpu, round-robin]}]\n",
      "e2e.yaml");
  const SimulationEvaluator eval(s);
  SweepRunOptions o;
  o.threads = 2;
  const auto st = run_sweep(
      s, [&](const SweepPoint& p) { return eval(p); }, path("e2e.csv"), o);
  EXPECT_EQ(st.evaluated, 8u);
  std::istringstream is(slurp(path("e2e.csv")));
  std::string line;
  std::getline(is, line);
  int rows = 0;
  while (std::getline(is, line)) {
    const auto f = split_csv_line(line);
    ASSERT_TRUE(f);
    ++rows;
    EXPECT_EQ(f->back(), "") << line;                            // no error
    EXPECT_GT(std::stod((*f)[4]), 0.0) << line;                  // step time
    EXPECT_EQ((*f)[5], (*f)[1] == "1 MiB" ? "1" : "0") << line;  // OOM only with 1 MiB
    if ((*f)[3].rfind("best-of", 0) == 0) EXPECT_FALSE((*f)[14].empty()) << line;
  }
  EXPECT_EQ(rows, 8);
  EXPECT_THROW(
      SimulationEvaluator(parse_sweep_spec(
          "base: paper-4gpu\nworkloads: [no-such-graph]\nmethods: [single-gpu]\n", "x.yaml")),
      sim::InputError);
}

}  // namespace
}  // namespace placesim::policy

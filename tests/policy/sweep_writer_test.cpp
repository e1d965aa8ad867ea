// The sweep CSV writer applies the reader's rules: a result that would not read back becomes an
// error row, and a damaged row in a CSV or journal is refused on resume (never copied).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <unistd.h>

#include "policy/sweep/sweep.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::policy {
namespace {

const char* kSpec =
    "name: w\nbase: paper-2gpu\naxes: {peer_access: [off, on]}\nworkloads: [rnnlm]\nmethods: "
    "[heft]\n";

TEST(SweepCsvWriter, UnrepresentableResultBecomesAnErrorRow) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "w.yaml");
  const auto points = expand_points(spec);
  PointResult r;
  r.step_time = sim::Duration{1000};
  r.busiest_device = "gpu0";
  r.busiest_utilization = std::numeric_limits<double>::quiet_NaN();
  const std::string row = csv_row(points[0], r);
  const auto fields = split_csv_line(row);
  ASSERT_TRUE(fields.has_value());
  EXPECT_EQ(fields->size(), csv_header(spec).size());
  EXPECT_NE(fields->back().find("not representable"), std::string::npos) << row;
  EXPECT_EQ((*fields)[3], "");  // no step time in an error row
}

TEST(SweepCsvWriter, DamagedRowIsRefusedAndTheFileKept) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "w.yaml");
  const auto dir =
      std::filesystem::temp_directory_path() / ("placesim_sweepw_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "w.csv").string();
  std::string header;
  for (const auto& h : csv_header(spec)) header += (header.empty() ? "" : ",") + h;
  const std::string text = header + "\noff,rnnlm,heft,abc,0,0,1,gpu0,gpu0,0.5000,,,,,\n";
  std::ofstream(csv) << text;
  int evaluated = 0;
  try {
    run_sweep(
        spec,
        [&](const SweepPoint&) {
          ++evaluated;
          return PointResult{};
        },
        csv);
    FAIL() << "a row with step time \"abc\" was accepted";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2, column step_time_s"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(evaluated, 0);
  EXPECT_EQ(sim::read_text_file(csv), text);
  EXPECT_FALSE(std::filesystem::exists(csv + ".partial"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace placesim::policy

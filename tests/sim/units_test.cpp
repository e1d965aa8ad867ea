#include "sim/units.hpp"

#include <gtest/gtest.h>

#include "sim/error.hpp"

namespace placesim::sim {
namespace {

TEST(Units, ParsesBytesInDecimalAndBinaryUnits) {
  EXPECT_EQ(parse_bytes("16 GiB").v, std::int64_t{16} << 30);
  EXPECT_EQ(parse_bytes("512MB").v, 512'000'000);
  EXPECT_EQ(parse_bytes("1.5 KiB").v, 1536);
  EXPECT_EQ(parse_bytes("0 B").v, 0);
}

TEST(Units, ParsesBandwidthIncludingBits) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("12 GB/s").bytes_per_s, 12e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Gbit/s").bytes_per_s, 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1 GiB/s").bytes_per_s, 1073741824.0);
}

TEST(Units, ParsesDurationsToNanoseconds) {
  EXPECT_EQ(parse_duration("5 us").ns, 5000);
  EXPECT_EQ(parse_duration("5 \xc2\xb5s").ns, 5000);
  EXPECT_EQ(parse_duration("1.5 ms").ns, 1'500'000);
  EXPECT_EQ(parse_duration("700 ns").ns, 700);
  EXPECT_EQ(parse_duration("2 s").ns, 2'000'000'000);
}

TEST(Units, ParsesFlopRates) {
  EXPECT_DOUBLE_EQ(parse_flop_rate("8.7 TFLOP/s").per_s, 8.7e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("312 TFLOPS").per_s, 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("499.2 GFLOP/s").per_s, 499.2e9);
}

TEST(Units, RejectsMissingUnknownOrMeaninglessInput) {
  for (const char* bad : {"12", "12 GB/h", "", "  ", "GB/s", "-1 GB/s", "nan GB/s", "inf GB/s",
                          "1e400 GB/s", "12 gb/s", "12 GB/s extra"}) {
    EXPECT_THROW(parse_bandwidth(bad), InputError) << bad;
  }
  EXPECT_THROW(parse_bytes("16"), InputError);
  EXPECT_THROW(parse_bytes("-3 GiB"), InputError);
  EXPECT_THROW(parse_bytes("1e30 B"), InputError);
  EXPECT_THROW(parse_duration("5 sec"), InputError);
  EXPECT_THROW(parse_flop_rate("8 TB/s"), InputError);
}

TEST(Units, ErrorSaysWhatWasExpectedAndWhatWasFound) {
  try {
    parse_bandwidth("12 GB/h");
    FAIL() << "no exception";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("expected a bandwidth"), std::string::npos) << m;
    EXPECT_NE(m.find("\"12 GB/h\""), std::string::npos) << m;
    EXPECT_NE(m.find("unknown unit"), std::string::npos) << m;
  }
}

TEST(Units, FormatsReadably) {
  EXPECT_EQ(format_bytes(Bytes{std::int64_t{16} << 30}), "16 GiB");
  EXPECT_EQ(format_bytes(Bytes{100}), "100 B");
  EXPECT_EQ(format_bandwidth(Bandwidth{12e9}), "12 GB/s");
  EXPECT_EQ(format_duration(Duration{5000}), "5 us");
  EXPECT_EQ(format_duration(Duration{12}), "12 ns");
  EXPECT_EQ(format_flop_rate(FlopRate{8.73e12}), "8.73 TFLOP/s");
}

TEST(Units, TransferTimeRoundsUp) {
  EXPECT_EQ(transfer_time(Bytes{1}, Bandwidth{3e9}).ns, 1);
  EXPECT_EQ(transfer_time(Bytes{12'000}, Bandwidth{12e9}).ns, 1000);
  EXPECT_EQ(transfer_time(Bytes{0}, Bandwidth{12e9}).ns, 0);
}

}  // namespace
}  // namespace placesim::sim

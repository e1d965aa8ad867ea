#include "sim/units.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <utility>

#include "sim/error.hpp"

namespace placesim::sim {
namespace {

struct UnitScale {
  std::string_view unit;
  double scale;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    // Keep the message on one line and printable even for binary garbage.
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) {
      std::array<char, 8> buf{};
      std::snprintf(buf.data(), buf.size(), "\\x%02x", u);
      out += buf.data();
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Splits "12.5 GB/s" into 12.5 and "GB/s" and looks the unit up. `what` names the quantity for
// the message ("a bandwidth such as \"12 GB/s\"").
template <std::size_t N>
double parse_scaled(std::string_view text, const std::array<UnitScale, N>& units,
                    std::string_view what) {
  const std::string_view s = trim(text);
  auto fail = [&](std::string_view why) -> double {
    throw InputError("expected " + std::string(what) + ", got " + quoted(text) + std::string(why));
  };
  if (s.empty()) fail(" (empty)");
  double value = 0.0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (*begin == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) fail(" (number out of range)");
  if (ec != std::errc() || ptr == begin) fail(" (no number)");
  if (!std::isfinite(value)) fail(" (not a finite number)");
  if (value < 0.0) fail(" (negative)");
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (unit.empty()) fail(" (missing unit)");
  for (const UnitScale& u : units) {
    if (u.unit == unit) return value * u.scale;
  }
  fail(" (unknown unit " + quoted(unit) + ")");
  return 0.0;
}

constexpr double kKi = 1024.0;

constexpr std::array<UnitScale, 11> kByteUnits{{
    {"B", 1.0},
    {"kB", 1e3},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", kKi},
    {"MiB", kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"TiB", kKi* kKi* kKi* kKi},
    {"PB", 1e15},
}};

constexpr std::array<UnitScale, 16> kBandwidthUnits{{
    {"B/s", 1.0},
    {"kB/s", 1e3},
    {"KB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"KiB/s", kKi},
    {"MiB/s", kKi* kKi},
    {"GiB/s", kKi* kKi* kKi},
    {"TiB/s", kKi* kKi* kKi* kKi},
    {"Gbit/s", 1e9 / 8},
    {"Gb/s", 1e9 / 8},
    {"Gbps", 1e9 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Mb/s", 1e6 / 8},
    {"Tbit/s", 1e12 / 8},
}};

constexpr std::array<UnitScale, 6> kDurationUnits{{
    {"ns", 1.0},
    {"us", 1e3},
    {"\xc2\xb5s", 1e3},  // µs, UTF-8
    {"ms", 1e6},
    {"s", 1e9},
    {"\xce\xbcs", 1e3},  // μs (Greek mu), UTF-8
}};

constexpr std::array<UnitScale, 12> kFlopRateUnits{{
    {"FLOP/s", 1.0},
    {"kFLOP/s", 1e3},
    {"MFLOP/s", 1e6},
    {"GFLOP/s", 1e9},
    {"TFLOP/s", 1e12},
    {"PFLOP/s", 1e15},
    {"FLOPS", 1.0},
    {"kFLOPS", 1e3},
    {"MFLOPS", 1e6},
    {"GFLOPS", 1e9},
    {"TFLOPS", 1e12},
    {"PFLOPS", 1e15},
}};

std::int64_t to_int64_checked(double v, std::string_view text, std::string_view what) {
  // 2^63 is exactly representable; anything at or above it does not fit.
  if (v >= 9.2233720368547758e18) {
    throw InputError("expected " + std::string(what) + ", got " + quoted(text) + " (too large)");
  }
  return static_cast<std::int64_t>(std::llround(v));
}

std::string fmt(double v, int digits) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*f", digits, v);
  return buf.data();
}

// Three significant figures, trailing zeros dropped ("12 GB/s", "8.74 TFLOP/s").
std::string fmt_sig(double v) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.3g", v);
  std::string s = buf.data();
  if (s.find('e') != std::string::npos) return fmt(v, 0);
  return s;
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  constexpr std::string_view what = "a size such as \"16 GiB\" or \"512 MB\"";
  return {to_int64_checked(parse_scaled(text, kByteUnits, what), text, what)};
}

Bandwidth parse_bandwidth(std::string_view text) {
  return {parse_scaled(text, kBandwidthUnits, "a bandwidth such as \"12 GB/s\" or \"100 Gbit/s\"")};
}

Duration parse_duration(std::string_view text) {
  constexpr std::string_view what = "a duration such as \"5 us\", \"1.5 ms\" or \"700 ns\"";
  return {to_int64_checked(parse_scaled(text, kDurationUnits, what), text, what)};
}

FlopRate parse_flop_rate(std::string_view text) {
  return {parse_scaled(text, kFlopRateUnits, "a compute rate such as \"8.7 TFLOP/s\"")};
}

std::string format_bytes(Bytes b) {
  const auto v = static_cast<double>(b.v);
  constexpr std::array<std::pair<double, std::string_view>, 4> steps{
      {{kKi * kKi * kKi * kKi, "TiB"}, {kKi * kKi * kKi, "GiB"}, {kKi * kKi, "MiB"}, {kKi, "KiB"}}};
  for (const auto& [scale, unit] : steps) {
    if (std::fabs(v) >= scale) return fmt_sig(v / scale) + " " + std::string(unit);
  }
  return std::to_string(b.v) + " B";
}

std::string format_bandwidth(Bandwidth bw) {
  const double v = bw.bytes_per_s;
  constexpr std::array<std::pair<double, std::string_view>, 4> steps{
      {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}}};
  for (const auto& [scale, unit] : steps) {
    if (std::fabs(v) >= scale) return fmt_sig(v / scale) + " " + std::string(unit);
  }
  return fmt_sig(v) + " B/s";
}

std::string format_duration(Duration d) {
  const auto v = static_cast<double>(d.ns);
  if (std::llabs(d.ns) >= 1'000'000'000) return fmt_sig(v / 1e9) + " s";
  if (std::llabs(d.ns) >= 1'000'000) return fmt_sig(v / 1e6) + " ms";
  if (std::llabs(d.ns) >= 1'000) return fmt_sig(v / 1e3) + " us";
  return std::to_string(d.ns) + " ns";
}

std::string format_flop_rate(FlopRate r) {
  const double v = r.per_s;
  constexpr std::array<std::pair<double, std::string_view>, 5> steps{
      {{1e15, "PFLOP/s"}, {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1e6, "MFLOP/s"}, {1e3, "kFLOP/s"}}};
  for (const auto& [scale, unit] : steps) {
    if (std::fabs(v) >= scale) return fmt_sig(v / scale) + " " + std::string(unit);
  }
  return fmt_sig(v) + " FLOP/s";
}

}  // namespace placesim::sim

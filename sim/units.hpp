// Units as types. Files spell units as strings ("12 GB/s", "16 GiB", "5 us", "8.7 TFLOP/s");
// they are parsed here, once, at the edge.
//
//   using namespace placesim::sim;
//   Bytes cap = parse_bytes("16 GiB");              // 17179869184 bytes
//   Bandwidth bw = parse_bandwidth("12 GB/s");      // 12e9 bytes/s
//   Duration lat = parse_duration("5 us");          // 5000 ns
//   FlopRate peak = parse_flop_rate("8.7 TFLOP/s"); // 8.7e12 FLOP/s
//   Duration t = transfer_time(Bytes{1 << 20}, bw); // rounded up to whole ns
//
// Simulated time is an integer count of nanoseconds (`Duration`, `SimTime`); rates and amounts of
// work are doubles. Parsers throw `InputError` whose message names what was expected; callers add
// the file and key path (see error.hpp).
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace placesim::sim {

/// A span of simulated time in integer nanoseconds.
struct Duration {
  std::int64_t ns = 0;
  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return {ns + o.ns}; }
  constexpr Duration operator-(Duration o) const { return {ns - o.ns}; }
  constexpr Duration& operator+=(Duration o) {
    ns += o.ns;
    return *this;
  }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ns) * 1e-9; }
  static constexpr Duration from_ns(std::int64_t v) { return {v}; }
  /// Rounds up to the next whole nanosecond so that positive work never takes zero time; the
  /// 1e-6 ns slack keeps a time that is whole but for floating-point noise at that whole ns. The
  /// one rounding of durations: cost models, transfers, and the max-min models' completions.
  static Duration from_ns_ceil(double ns) {
    return {static_cast<std::int64_t>(std::ceil(ns - 1e-6))};
  }
  static Duration from_seconds_ceil(double s) { return from_ns_ceil(s * 1e9); }
};

/// A point in simulated time, nanoseconds since the start of the step.
using SimTime = std::int64_t;

/// An amount of memory or data in bytes.
struct Bytes {
  std::int64_t v = 0;
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return {v + o.v}; }
  constexpr Bytes operator-(Bytes o) const { return {v - o.v}; }
  constexpr Bytes& operator+=(Bytes o) {
    v += o.v;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    v -= o.v;
    return *this;
  }
};

/// Data rate in bytes per second.
struct Bandwidth {
  double bytes_per_s = 0.0;
  constexpr auto operator<=>(const Bandwidth&) const = default;
};

/// Floating-point operations (an amount of work).
struct Flops {
  double v = 0.0;
  constexpr auto operator<=>(const Flops&) const = default;
};

/// Compute rate in FLOP/s.
struct FlopRate {
  double per_s = 0.0;
  constexpr auto operator<=>(const FlopRate&) const = default;
};

/// Time to move `b` bytes at rate `bw`, rounded up to a whole nanosecond.
inline Duration transfer_time(Bytes b, Bandwidth bw) {
  if (b.v <= 0) return {0};
  return Duration::from_seconds_ceil(static_cast<double>(b.v) / bw.bytes_per_s);
}

// Parsers. Accepted spellings (case-sensitive units, optional space, decimal number):
//   bytes:      B, kB/KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024)
//   bandwidth:  B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, Gbit/s, Gb/s (bits), Mbit/s
//   duration:   ns, us (or µs), ms, s
//   flop rate:  FLOP/s, kFLOP/s, MFLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (also "FLOPS" spellings)
// A bare number is rejected: files must spell the unit.
Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
Duration parse_duration(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);

/// Human-readable spellings used in reports and `describe` ("16 GiB", "12.0 GB/s", "5 us").
std::string format_bytes(Bytes b);
std::string format_bandwidth(Bandwidth bw);
std::string format_duration(Duration d);
std::string format_flop_rate(FlopRate r);

}  // namespace placesim::sim

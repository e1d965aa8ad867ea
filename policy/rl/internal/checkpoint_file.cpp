#include "policy/rl/checkpoint_file.hpp"

#include <charconv>
#include <cstdio>

#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::policy {

namespace {

constexpr std::string_view kMagic = "placesim-checkpoint ";
// A checkpoint holds a policy for at most 1024 devices and 100k groups: far below 4 GiB.
constexpr std::uint64_t kMaxPayload = std::uint64_t{4} << 30;

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string wrap_checkpoint(const std::string& payload) {
  return std::string(kMagic) + std::to_string(kCheckpointVersion) +
         " bytes=" + std::to_string(payload.size()) + " fnv1a64=" + hex64(fnv1a64(payload)) + "\n" +
         payload;
}

std::string unwrap_checkpoint(const std::string& file, const std::string& path) {
  const std::string what = "a checkpoint written by `placesim train` (format " +
                           std::string(kMagic) + std::to_string(kCheckpointVersion) + ")";
  const std::size_t nl = file.find('\n');
  if (file.compare(0, kMagic.size(), kMagic) != 0 || nl == std::string::npos || nl > 200) {
    const bool zip = file.compare(0, 2, "PK") == 0;
    throw sim::InputError(
        path, "header",
        what + ", got " +
            (zip ? std::string("a bare LibTorch archive (a checkpoint from before "
                               "checksums, or another program's): train again")
                 : "\"" + sim::printable(file.substr(0, 40)) + "\""));
  }
  const std::string header = file.substr(0, nl);
  int version = 0;
  std::uint64_t bytes = 0, sum = 0;
  const char* p = header.data() + kMagic.size();
  const char* end = header.data() + header.size();
  auto fail = [&](const std::string& got) {
    throw sim::InputError(path, "header", what + ", got " + got);
  };
  auto r = std::from_chars(p, end, version);
  if (r.ec != std::errc{}) fail("header \"" + sim::printable(header) + "\"");
  if (version != kCheckpointVersion) fail("version " + std::to_string(version));
  p = r.ptr;
  constexpr std::string_view kBytes = " bytes=", kSum = " fnv1a64=";
  if (std::string_view(p, static_cast<std::size_t>(end - p)).substr(0, kBytes.size()) != kBytes)
    fail("header \"" + sim::printable(header) + "\"");
  r = std::from_chars(p + kBytes.size(), end, bytes);
  if (r.ec != std::errc{} || bytes > kMaxPayload) fail("header \"" + sim::printable(header) + "\"");
  p = r.ptr;
  if (std::string_view(p, static_cast<std::size_t>(end - p)).substr(0, kSum.size()) != kSum)
    fail("header \"" + sim::printable(header) + "\"");
  r = std::from_chars(p + kSum.size(), end, sum, 16);
  if (r.ec != std::errc{} || r.ptr != end || end - (p + kSum.size()) != 16)
    fail("header \"" + sim::printable(header) + "\"");
  const std::size_t have = file.size() - nl - 1;
  if (have != bytes)
    throw sim::InputError(path, "",
                          what + " of " + std::to_string(bytes) + " bytes after its header, got " +
                              std::to_string(have) + " (truncated or appended to)");
  std::string payload = file.substr(nl + 1);
  if (fnv1a64(payload) != sum)
    throw sim::InputError(path, "",
                          what +
                              " whose checksum matches its content, got a damaged file (fnv1a64 " +
                              hex64(fnv1a64(payload)) + ", header says " + hex64(sum) + ")");
  return payload;
}

}  // namespace placesim::policy

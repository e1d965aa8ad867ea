// The envelope of a training checkpoint: a versioned header line with the payload's size and
// checksum, then LibTorch's archive. Verified before LibTorch parses a byte of it, so that a
// truncated, damaged or foreign file is an input error instead of a crash inside LibTorch's
// reader (a truncated tensor record once ended in "corrupted double-linked list").
//
//   sim::write_file_atomic(path, wrap_checkpoint(archive_bytes));
//   const std::string archive = unwrap_checkpoint(sim::read_text_file(path), path);  // InputError
//
// Header: "placesim-checkpoint 2 bytes=<N> fnv1a64=<16 hex digits>\n". This file needs no
// LibTorch (the fuzz build checks it, tests/fuzz/fuzz_checkpoint.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace placesim::policy {

inline constexpr int kCheckpointVersion = 2;

/// 64-bit FNV-1a of `bytes` (detects truncation and any flipped byte of a damaged copy).
std::uint64_t fnv1a64(std::string_view bytes);
/// Header + payload.
std::string wrap_checkpoint(const std::string& payload);
/// The payload of a checkpoint file's bytes, after checking the header, the size and the
/// checksum. Throws sim::InputError naming `path` otherwise.
std::string unwrap_checkpoint(const std::string& file, const std::string& path);

}  // namespace placesim::policy

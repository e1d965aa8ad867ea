// Test helpers on files (tests/common, linked into every test executable).
//
//   const std::string text = placesim::test::slurp(dir / "cluster.yaml");   // "" if unreadable
//   for (const auto& row : placesim::test::csv_rows(file)) std::stod(row.at("num_tokens"));
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace placesim::test {

/// The whole file as bytes; empty when it cannot be read (the test's own checks then fail).
std::string slurp(const std::filesystem::path& path);

/// A comma-separated file's rows, each keyed by the header line's names; lines starting with '#'
/// are skipped (no quoting). Empty when the file cannot be read.
std::vector<std::map<std::string, std::string>> csv_rows(const std::filesystem::path& path);

}  // namespace placesim::test

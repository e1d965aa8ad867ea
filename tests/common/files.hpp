// Test helpers on files (tests/common, linked into every test executable).
//
//   const std::string text = placesim::test::slurp(dir / "cluster.yaml");   // "" if unreadable
#pragma once

#include <filesystem>
#include <string>

namespace placesim::test {

/// The whole file as bytes; empty when it cannot be read (the test's own checks then fail).
std::string slurp(const std::filesystem::path& path);

}  // namespace placesim::test

// Writing the clusters of a sweep's grid to YAML: the corpus of random clusters that
// `placesim train --policy gnn --clusters` pre-trains on (docs/sweeps.md, docs/rl.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include "policy/sweep/sweep.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::policy {

namespace {

/// A file-name-safe stem: letters, digits, '.' and '-' are kept, anything else becomes '_', so
/// that the path can go into a comma-separated `--clusters` list.
std::string file_stem(std::size_t ordinal,
                      const std::vector<std::pair<std::string, std::string>>& axis_values) {
  char num[32];
  std::snprintf(num, sizeof num, "%03zu", ordinal);
  std::string stem = num;
  for (const auto& [axis, value] : axis_values) stem += "_" + axis + "-" + value;
  for (std::size_t i = 3; i < stem.size(); ++i) {
    const char ch = stem[i];
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
    if (!keep) stem[i] = '_';
  }
  return stem;
}

}  // namespace

std::vector<ClusterPoint> cluster_points(const SweepSpec& spec, std::size_t sample,
                                         std::uint64_t seed) {
  std::vector<ClusterPoint> all;
  std::set<std::vector<std::pair<std::string, std::string>>> seen;
  for (const SweepPoint& p : expand_points(spec))
    if (seen.insert(p.axis_values).second) all.push_back({all.size(), p.axis_values});
  if (sample == 0 || sample >= all.size()) return all;
  // Partial Fisher-Yates on the ordinals with mt19937_64's raw output (its sequence is fixed by
  // the standard, unlike the distributions'), then back to expansion order.
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> idx(all.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  for (std::size_t i = 0; i < sample; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(rng() % (idx.size() - i));
    std::swap(idx[i], idx[j]);
  }
  idx.resize(sample);
  std::sort(idx.begin(), idx.end());
  std::vector<ClusterPoint> out;
  out.reserve(sample);
  for (const std::size_t i : idx) out.push_back(all[i]);
  return out;
}

std::vector<std::string> write_sweep_clusters(const SweepSpec& spec, const std::string& dir,
                                              std::size_t sample, std::uint64_t seed) {
  namespace fs = std::filesystem;
  const sim::Cluster base = make_base_cluster(spec.base, spec.origin);
  std::vector<std::pair<std::string, std::string>> files;  // path, YAML
  for (const ClusterPoint& p : cluster_points(spec, sample, seed)) {
    sim::Cluster c = apply_axes(spec.base, base, p.axis_values, spec.origin);
    c.name = file_stem(p.ordinal, p.axis_values);
    files.emplace_back((fs::path(dir) / (c.name + ".yaml")).string(), sim::cluster_to_yaml(c));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw sim::InputError("<flag --write-clusters>", dir,
                          "a folder that can be created, got " +
                              (ec ? ec.message() : std::string("an existing file")));
  std::vector<std::string> paths;
  for (const auto& [path, yaml] : files) {
    sim::write_file_atomic(path, yaml);
    paths.push_back(path);
  }
  return paths;
}

}  // namespace placesim::policy

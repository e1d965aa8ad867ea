// Placement methods side by side on one graph and cluster: `placesim compare`, and the table the
// RL trainer prints with its own rows added.
//
//   auto rows = policy::compare_methods(graph, cluster, policy::method_names());
//   rows.push_back(policy::evaluate_row("rl", graph, cluster, best, {}, train_seconds));
//   policy::fill_speedups(rows, graph, cluster);
//   std::cout << policy::format_compare_table(rows);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/place/methods.hpp"
#include "sim/cluster.hpp"
#include "sim/graph.hpp"
#include "sim/placement.hpp"
#include "sim/units.hpp"

namespace placesim::policy {

struct CompareRow {
  std::string method;
  double step_time_s = 0.0;
  bool oom = false;
  bool unreachable = false;
  std::string fullest_device;     ///< device with the highest peak / capacity
  sim::Bytes peak_memory;         ///< its peak, reserved memory included
  sim::Bytes capacity;            ///< its capacity
  std::optional<double> speedup;  ///< single-GPU step time / this one (both fit)
  double method_wall_s = 0.0;     ///< time the method took to produce the placement
  int devices_used = 0;
  std::string error;  ///< set when the method failed (then nothing else is)
};

/// A row for an already computed placement (simulated here with `options.costs`).
CompareRow evaluate_row(const std::string& method, const sim::Graph& g, const sim::Cluster& c,
                        const sim::Placement& p, const MethodOptions& options,
                        double method_wall_s);

/// Runs and simulates every method, appends `extra` rows, and fills the speedups. A method that
/// throws InputError (does not apply to this graph or cluster) gets a row with `error` set.
std::vector<CompareRow> compare_methods(const sim::Graph& g, const sim::Cluster& c,
                                        const std::vector<std::string>& methods,
                                        const MethodOptions& options = {},
                                        std::vector<CompareRow> extra = {});

/// Speedup over single-GPU for every row; simulates single-GPU if no row has it.
void fill_speedups(std::vector<CompareRow>& rows, const sim::Graph& g, const sim::Cluster& c,
                   const MethodOptions& options = {});

std::string format_compare_table(const std::vector<CompareRow>& rows);
std::string compare_to_csv(const std::vector<CompareRow>& rows);
std::string compare_to_json(const std::vector<CompareRow>& rows, int indent = 2);

}  // namespace placesim::policy

// The built-in workloads and their option parsing (used by registry.cpp; tests call the
// builders directly with parsed options).
//
//   GraphOptions o("layers=4,batch=128", "--graph-opt");
//   sim::Graph g = build_nmt(o);     // throws InputError for an unknown key or a bad value
//
// Every builder returns one finalized training step; docs/workloads.md gives the defaults and
// their sources.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "sim/graph.hpp"

namespace placesim::models {

/// `k=v,k=v` (a bare `k` means `k=true`). Keys are checked against the accepted set by accept().
class GraphOptions {
 public:
  GraphOptions(const std::string& text, std::string origin);
  /// Throws InputError naming the first unknown key and listing `keys`.
  void accept(const std::vector<std::string>& keys) const;
  std::int64_t get_int(const std::string& key, std::int64_t def, std::int64_t min = 1,
                       std::int64_t max = std::int64_t{1} << 40);
  bool get_bool(const std::string& key, bool def);
  /// A decimal in [min, max) (e.g. a dropout probability).
  double get_real(const std::string& key, double def, double min, double max);
  std::string get_choice(const std::string& key, const std::string& def,
                         const std::vector<std::string>& choices);
  /// The resolved values, for the graph's metadata ("batch=64,layers=2,...").
  [[nodiscard]] std::string resolved() const;
  [[nodiscard]] bool has(const std::string& key) const { return given_.contains(key); }

 private:
  std::string origin_;
  std::map<std::string, std::string> given_;
  std::map<std::string, std::string> resolved_;
};

Optimizer optimizer_option(GraphOptions& o, Optimizer def);
Accumulation accumulation_option(GraphOptions& o);

sim::Graph build_rnnlm(GraphOptions& o);
sim::Graph build_nmt(GraphOptions& o);
sim::Graph build_inception_v3(GraphOptions& o);
sim::Graph build_resnet50(GraphOptions& o);
sim::Graph build_gpt(GraphOptions& o);

/// One LSTM cell step at TensorFlow BasicLSTMCell granularity (concat, matmul, bias add, split,
/// gates, state update): returns {h, c}.
std::pair<Tensor, Tensor> lstm_cell(GraphBuilder& b, const std::string& step, const Tensor& x,
                                    const Tensor& h, const Tensor& c, const Tensor& w,
                                    const Tensor& bias);

}  // namespace placesim::models

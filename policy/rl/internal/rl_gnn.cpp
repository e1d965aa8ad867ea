// The graph-embedding placement policy (policy/rl_gnn.hpp): features, network, REINFORCE / PPO
// trainer, policy files, training loops and zero-shot placement.
#include "policy/rl/rl_gnn.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <sstream>
#include <torch/torch.h>

#include "policy/comm/comm.hpp"
#include "policy/place/methods.hpp"
#include "policy/rl/checkpoint_file.hpp"
#include "policy/rl/internal/rl_common.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

namespace {

// ---- features ---------------------------------------------------------------------------------

// Op types as classes that mean the same on any graph (the seq2seq agent's one-hot over a graph's
// own type names does not: an unseen graph has other names). The order of the tests matters:
// "LSTMBlockCellGrad" is an RNN op, "ApplyAdam" an optimizer op.
constexpr int kTypeClasses = 9;
int type_class(const std::string& type) {
  std::string t = type;
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto has = [&t](std::initializer_list<const char*> words) {
    for (const char* w : words)
      if (t.find(w) != std::string::npos) return true;
    return false;
  };
  if (has({"allreduce", "send", "recv", "nccl", "copy", "broadcast"})) return 8;
  if (has({"apply", "variable", "assign", "adam", "sgd", "momentum", "rmsprop", "update"}))
    return 7;
  if (has({"conv"})) return 1;
  if (has({"matmul", "gemm", "dense", "linear", "einsum"})) return 0;
  if (has({"lstm", "gru", "rnn", "cell"})) return 3;
  if (has({"norm"})) return 2;
  if (has({"softmax", "reduce", "sum", "mean", "pool", "max", "min", "argm"})) return 5;
  if (has({"gather", "embed", "slice", "concat", "reshape", "transpose", "tile", "split", "pad",
           "stack", "squeeze", "identity", "placeholder", "const", "shape", "flatten", "cast"}))
    return 4;
  return 6;  // element-wise
}

bool is_backward(const std::string& type) {
  std::string t = type;
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return t.find("grad") != std::string::npos || t.find("backprop") != std::string::npos;
}

constexpr int kGroupFeatures = kTypeClasses + 20;
constexpr int kDeviceFeatures = 21;

float clamp01(double x) {
  return static_cast<float>(std::clamp(x, 0.0, 1.0));
}
float log_rel(double x, double mean) {
  return static_cast<float>(std::log1p(mean > 0 ? std::max(0.0, x) / mean : 0.0) / 3.0);
}

double peak_rate(const sim::DeviceSpec& s) {
  if (auto it = s.peak_flops.find(sim::Dtype::F32); it != s.peak_flops.end())
    return it->second.per_s;
  double best = 0.0;
  for (const auto& [dtype, rate] : s.peak_flops) best = std::max(best, rate.per_s);
  return best;
}

// Bytes/s a copy from i to j gets alone: the narrowest link of its route (0: no route).
double route_bandwidth(const sim::Cluster& c, int i, int j) {
  const auto& route = c.routes[static_cast<size_t>(i)][static_cast<size_t>(j)];
  if (route.empty()) return 0.0;
  double bw = std::numeric_limits<double>::infinity();
  for (const auto& seg : route.segments) bw = std::min(bw, seg.bottleneck.bytes_per_s);
  return std::isfinite(bw) ? bw : 0.0;
}

std::vector<std::vector<float>> device_features(const sim::Cluster& c) {
  const int d = c.num_devices();
  double top_peak = 0.0, top_mem = 0.0;
  for (const auto& dev : c.devices) {
    top_peak = std::max(top_peak, peak_rate(dev.spec));
    top_mem = std::max(top_mem, static_cast<double>(dev.spec.memory_capacity.v));
  }
  std::vector<double> mean_bw(static_cast<size_t>(d), 0.0), max_bw(static_cast<size_t>(d), 0.0);
  std::vector<double> peers(static_cast<size_t>(d), 0.0);
  double top_mean_bw = 0.0;
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) {
      if (i == j) continue;
      const double bw = route_bandwidth(c, i, j);
      mean_bw[static_cast<size_t>(i)] += bw / std::max(1, d - 1);
      max_bw[static_cast<size_t>(i)] = std::max(max_bw[static_cast<size_t>(i)], bw);
      if (c.peer_access[static_cast<size_t>(i)][static_cast<size_t>(j)])
        peers[static_cast<size_t>(i)] += 1.0 / std::max(1, d - 1);
    }
    top_mean_bw = std::max(top_mean_bw, mean_bw[static_cast<size_t>(i)]);
  }
  std::vector<std::string> nodes;
  for (const auto& dev : c.devices)
    if (std::find(nodes.begin(), nodes.end(), dev.node) == nodes.end()) nodes.push_back(dev.node);
  std::vector<std::vector<float>> out;
  for (int i = 0; i < d; ++i) {
    const auto ui = static_cast<size_t>(i);
    const auto& s = c.devices[ui].spec;
    const double peak = peak_rate(s), mem = static_cast<double>(s.memory_capacity.v);
    std::vector<float> f = {
        s.kind == sim::DeviceKind::Gpu ? 1.0f : 0.0f,
        clamp01(std::log10(1.0 + peak) / 16.0),
        static_cast<float>(top_peak > 0 ? peak / top_peak : 0.0),
        clamp01(std::log10(1.0 + mem) / 12.0),
        static_cast<float>(top_mem > 0 ? mem / top_mem : 0.0),
        clamp01(std::log10(1.0 + s.memory_bandwidth.bytes_per_s) / 13.0),
        clamp01(std::log10(1.0 + mean_bw[ui]) / 12.0),
        clamp01(std::log10(1.0 + max_bw[ui]) / 12.0),
        static_cast<float>(top_mean_bw > 0 ? mean_bw[ui] / top_mean_bw : 0.0),
        static_cast<float>(peers[ui]),
        static_cast<float>(i) / static_cast<float>(std::max(1, d - 1)),
        static_cast<float>(std::cos(std::numbers::pi * i)),
    };
    // Which device of a set of identical ones: without an index the policy could not tell the
    // four GPUs of paper-4gpu apart, and every group would see the same distribution.
    for (double period : {4.0, 8.0, 16.0, static_cast<double>(kGnnMaxDevices)}) {
      f.push_back(static_cast<float>(std::sin(2 * std::numbers::pi * i / period)));
      f.push_back(static_cast<float>(std::cos(2 * std::numbers::pi * i / period)));
    }
    const auto node = std::find(nodes.begin(), nodes.end(), c.devices[ui].node) - nodes.begin();
    f.push_back(static_cast<float>(node) / static_cast<float>(std::max<size_t>(1, nodes.size())));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

int gnn_group_features() {
  return kGroupFeatures;
}
int gnn_device_features() {
  return kDeviceFeatures;
}

GnnProblem make_gnn_problem(const models::Grouping& gr, const sim::Cluster& cluster) {
  const int g = gr.size(), d = cluster.num_devices();
  if (g == 0) throw sim::InputError("<graph>", "ops", "at least one op to place, got none");
  if (d < 1 || d > kGnnMaxDevices)
    throw sim::InputError(cluster.source_file.empty() ? cluster.name : cluster.source_file,
                          "devices",
                          "1 to " + std::to_string(kGnnMaxDevices) +
                              " devices for the GNN policy, got " + std::to_string(d));
  GnnProblem p;
  p.devices = device_features(cluster);
  p.pred = gr.pred;
  p.succ = gr.succ;
  p.pred.resize(static_cast<size_t>(g));
  p.succ.resize(static_cast<size_t>(g));
  double min_mem = 0.0, max_mem = 0.0, gpu_mem = 0.0;
  for (const auto& dev : cluster.devices) {
    const auto m = static_cast<double>(dev.spec.memory_capacity.v);
    min_mem = min_mem == 0.0 ? m : std::min(min_mem, m);
    max_mem = std::max(max_mem, m);
    if (dev.spec.kind == sim::DeviceKind::Gpu) gpu_mem += m;
  }
  if (gpu_mem == 0.0) gpu_mem = max_mem;
  auto at = [](const std::vector<double>& v, size_t i) { return i < v.size() ? v[i] : 0.0; };
  double flops = 0.0, bytes = 0.0, persistent = 0.0;
  for (size_t i = 0; i < static_cast<size_t>(g); ++i) {
    flops += at(gr.flops, i);
    bytes += at(gr.output_bytes, i);
    persistent += at(gr.persistent_bytes, i);
  }
  const double n = g;
  // The same for every group: how large the whole problem is against the cluster.
  const std::array<float, 6> global = {
      static_cast<float>(std::min(persistent / std::max(1.0, max_mem), 8.0) / 4.0),
      static_cast<float>(std::min(persistent / std::max(1.0, gpu_mem), 8.0) / 4.0),
      static_cast<float>(std::min(bytes / std::max(1.0, max_mem), 8.0) / 4.0),
      clamp01(std::log10(1.0 + flops) / 16.0),
      static_cast<float>(std::log1p(n) / 5.0),
      static_cast<float>(d) / 16.0f,
  };
  std::vector<std::optional<sim::DeviceKind>> kinds(static_cast<size_t>(g));
  std::vector<std::string> names(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i) {
    const auto ui = static_cast<size_t>(i);
    std::vector<float> f(kTypeClasses + 1, 0.0f);
    double total = 0.0;
    if (ui < gr.type_counts.size())
      for (size_t t = 0; t < gr.type_vocab.size() && t < gr.type_counts[ui].size(); ++t) {
        const double c = gr.type_counts[ui][t];
        f[static_cast<size_t>(type_class(gr.type_vocab[t]))] += static_cast<float>(c);
        if (is_backward(gr.type_vocab[t])) f[kTypeClasses] += static_cast<float>(c);
        total += c;
      }
    for (float& x : f) x = total > 0 ? static_cast<float>(x / total) : 0.0f;
    const double ops = ui < gr.ops_of_group.size() ? gr.ops_of_group[ui].size() : 0.0;
    const double pb = at(gr.persistent_bytes, ui);
    f.push_back(static_cast<float>(std::log1p(ops) / 10.0));
    f.push_back(clamp01(std::log10(1.0 + at(gr.flops, ui)) / 16.0));
    f.push_back(log_rel(at(gr.flops, ui), flops / n));
    f.push_back(clamp01(std::log10(1.0 + at(gr.output_bytes, ui)) / 12.0));
    f.push_back(log_rel(at(gr.output_bytes, ui), bytes / n));
    f.push_back(clamp01(std::log10(1.0 + pb) / 12.0));
    f.push_back(log_rel(pb, persistent / n));
    f.push_back(static_cast<float>(std::min(pb / std::max(1.0, min_mem), 4.0)));
    f.push_back(static_cast<float>(i) / static_cast<float>(std::max(1, g - 1)));
    f.push_back(static_cast<float>(std::log1p(static_cast<double>(p.pred[ui].size())) / 4.0));
    f.push_back(static_cast<float>(std::log1p(static_cast<double>(p.succ[ui].size())) / 4.0));
    const auto kind = ui < gr.constraint.size() ? gr.constraint[ui] : std::nullopt;
    f.push_back(kind == sim::DeviceKind::Cpu ? 1.0f : 0.0f);
    f.push_back(kind == sim::DeviceKind::Gpu ? 1.0f : 0.0f);
    f.insert(f.end(), global.begin(), global.end());
    p.groups.push_back(std::move(f));
    kinds[ui] = kind;
    names[ui] = "group " + (ui < gr.names.size() ? gr.names[ui] : std::to_string(i));
  }
  p.allowed = allowed_devices(cluster, kinds, names);
  return p;
}

GnnProblem make_gnn_problem(const models::Grouping& grouping, const sim::Graph& graph,
                            const sim::Cluster& cluster, const sim::KernelCostModel& costs) {
  GnnProblem p = make_gnn_problem(grouping, cluster);
  MethodOptions mo;
  mo.costs = costs;
  p.hints.assign(kGnnHints, DevicesOfGroups(static_cast<size_t>(grouping.size()), -1));
  const char* methods[kGnnHints] = {"scotch", "m-etf"};
  for (int h = 0; h < kGnnHints; ++h) {
    try {
      p.hints[static_cast<size_t>(h)] = models::project_placement(
          grouping, make_placement(methods[h], graph, cluster, mo), cluster);
    } catch (const sim::InputError&) {
      // Not applicable here (e.g. nothing to partition over): no hint from it.
    }
  }
  return p;
}

namespace {

// ---- network ----------------------------------------------------------------------------------

// Groups: an input layer, `rounds` residual message-passing rounds (each group reads itself and
// the means of its predecessors' and successors' embeddings), then the graph's mean added back.
// Devices: an input layer and the device set's mean. Each (group, device) pair is scored by
// v·tanh(Q g + K d): any number of groups and devices, no fixed softmax width.
struct GnnNetImpl : torch::nn::Module {
  GnnNetImpl(int group_features, int device_features, int hidden, int rounds)
      : g_in(register_module("g_in", torch::nn::Linear(group_features, hidden))),
        g_pool(register_module("g_pool", torch::nn::Linear(2 * hidden, hidden))),
        d_in(register_module("d_in", torch::nn::Linear(device_features, hidden))),
        d_pool(register_module("d_pool", torch::nn::Linear(2 * hidden, hidden))),
        q(register_module("q", torch::nn::Linear(hidden, hidden))),
        k(register_module("k",
                          torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)))),
        hint(register_module(
            "hint", torch::nn::Linear(torch::nn::LinearOptions(kGnnHints, hidden).bias(false)))),
        v(register_module("v", torch::nn::Linear(hidden, 1))) {
    for (int r = 0; r < rounds; ++r)
      msg.push_back(
          register_module("msg" + std::to_string(r), torch::nn::Linear(3 * hidden, hidden)));
  }

  // Scores [G, D] from group features [G, Fg], row-normalised adjacency [G, G] (pred, succ),
  // device features [D, Fd] and the baselines' hints [G, D, kGnnHints] (1: that baseline put the
  // group on that device).
  torch::Tensor forward(const torch::Tensor& groups, const torch::Tensor& a_pred,
                        const torch::Tensor& a_succ, const torch::Tensor& devices,
                        const torch::Tensor& hints) {
    auto h = torch::relu(g_in->forward(groups));
    for (auto& layer : msg)
      h = h + torch::relu(layer->forward(torch::cat({h, a_pred.mm(h), a_succ.mm(h)}, 1)));
    h = h + torch::relu(g_pool->forward(torch::cat({h, h.mean(0, true).expand_as(h)}, 1)));
    auto e = torch::relu(d_in->forward(devices));
    e = e + torch::relu(d_pool->forward(torch::cat({e, e.mean(0, true).expand_as(e)}, 1)));
    auto pair = torch::tanh(q->forward(h).unsqueeze(1) + k->forward(e).unsqueeze(0) +
                            hint->forward(hints));  // [G, D, H]
    return v->forward(pair).squeeze(2);
  }

  torch::nn::Linear g_in, g_pool, d_in, d_pool, q, k, hint, v;
  std::vector<torch::nn::Linear> msg;
};
TORCH_MODULE(GnnNet);

constexpr double kMasked = -1e9;
constexpr const char* kPolicyKind = "placesim-gnn-policy 2";

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

torch::Tensor to_tensor(const std::vector<std::vector<float>>& rows, std::int64_t width) {
  auto t = torch::zeros({static_cast<std::int64_t>(rows.size()), width});
  auto a = t.accessor<float, 2>();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (static_cast<std::int64_t>(rows[i].size()) != width)
      throw sim::InputError(
          "<gnn problem>", "features[" + std::to_string(i) + "]",
          std::to_string(width) + " features, got " + std::to_string(rows[i].size()));
    for (size_t j = 0; j < rows[i].size(); ++j)
      a[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(j)] = rows[i][j];
  }
  return t;
}

// Row i: 1/|N(i)| at each neighbour, so a product with the embeddings is the neighbours' mean.
torch::Tensor mean_adjacency(const std::vector<std::vector<std::int32_t>>& nbrs, int g) {
  auto t = torch::zeros({g, g});
  auto a = t.accessor<float, 2>();
  for (int i = 0; i < g; ++i) {
    const auto& row = nbrs[static_cast<size_t>(i)];
    for (auto j : row)
      if (j >= 0 && j < g) a[i][j] += 1.0f / static_cast<float>(row.size());
  }
  return t;
}

// LibTorch's archive out of a verified policy file (checkpoint_file.hpp): a damaged or foreign
// file never reaches LibTorch's reader.
void load_policy_archive(torch::serialize::InputArchive& root, const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw sim::InputError(path, "",
                          "a GNN policy file written by `placesim train`, got no such file");
  std::istringstream is(unwrap_checkpoint(sim::read_text_file(path), path));
  root.load_from(is);
}

struct PolicyHeader {
  int hidden = 0, rounds = 0;
  std::string how_made;
};

PolicyHeader read_header(torch::serialize::InputArchive& root, const std::string& path) {
  c10::IValue kind, how;
  if (!root.try_read("kind", kind) || !kind.isString() || kind.toStringRef() != kPolicyKind)
    throw sim::InputError(path, "kind",
                          std::string("a GNN policy (\"") + kPolicyKind +
                              "\"; a seq2seq checkpoint.pt is not one), got another archive");
  torch::Tensor shape;
  root.read("shape", shape);
  if (!shape.defined() || shape.scalar_type() != torch::kLong || shape.dim() != 1 ||
      shape.numel() != 4)
    throw sim::InputError(path, "shape",
                          "4 integers (hidden, rounds, features), got another entry");
  const auto s = shape.accessor<std::int64_t, 1>();
  if (s[0] < 1 || s[0] > 4096 || s[1] < 0 || s[1] > 64 || s[2] != kGroupFeatures ||
      s[3] != kDeviceFeatures)
    throw sim::InputError(path, "shape",
                          "hidden 1..4096, rounds 0..64, " + std::to_string(kGroupFeatures) +
                              " group and " + std::to_string(kDeviceFeatures) +
                              " device features, got " + std::to_string(s[0]) + ", " +
                              std::to_string(s[1]) + ", " + std::to_string(s[2]) + ", " +
                              std::to_string(s[3]));
  PolicyHeader h{static_cast<int>(s[0]), static_cast<int>(s[1]), ""};
  if (root.try_read("how_made", how) && how.isString()) h.how_made = how.toStringRef();
  return h;
}

template <typename F>
auto as_input_error(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const sim::InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw sim::InputError(
        path, "",
        "a GNN policy file written by `placesim train`, got: " + what.substr(0, what.find('\n')));
  }
}

void check_gnn_options(const GnnOptions& o) {
  auto bad = [](const std::string& key, const std::string& what) {
    throw sim::InputError("<gnn options>", key, what);
  };
  if (o.hidden < 1) bad("hidden", "a positive width, got " + std::to_string(o.hidden));
  if (o.rounds < 0) bad("rounds", "0 or more rounds, got " + std::to_string(o.rounds));
  if (o.samples < 1) bad("samples", "at least 1 sample, got " + std::to_string(o.samples));
  if (!(o.learning_rate > 0)) bad("learning_rate", "a positive learning rate");
  if (o.ppo_epochs < 1) bad("ppo_epochs", "at least 1 epoch");
  if (!(o.ppo_clip > 0)) bad("ppo_clip", "a positive clip range");
  if (!(o.baseline_decay >= 0 && o.baseline_decay < 1)) bad("baseline_decay", "a decay in [0, 1)");
}

}  // namespace

// ---- trainer ----------------------------------------------------------------------------------

struct GnnTrainer::Impl {
  GnnOptions opt;
  GnnProblem problem;
  RewardFn reward;
  double oom_reference_s = 1.0;
  GnnNet net{nullptr};
  std::unique_ptr<torch::optim::Adam> adam;
  torch::Tensor groups, a_pred, a_succ, devices, mask;  // mask [G, D]: 0 or kMasked
  torch::Tensor hints;                                  // [G, D, kGnnHints]
  std::mt19937_64 rng;
  double baseline = 0.0;
  bool baseline_set = false;
  DevicesOfGroups best;
  double best_step_s = 0.0;
  std::vector<IterationStats> history;

  void install(GnnProblem p) {
    const int g = p.num_groups(), d = p.num_devices();
    if (g < 1 || d < 1)
      throw sim::InputError("<gnn problem>", "", "at least one group and one device");
    groups = to_tensor(p.groups, kGroupFeatures);
    devices = to_tensor(p.devices, kDeviceFeatures);
    a_pred = mean_adjacency(p.pred, g);
    a_succ = mean_adjacency(p.succ, g);
    hints = torch::zeros({g, d, kGnnHints});
    auto ha = hints.accessor<float, 3>();
    for (size_t h = 0; opt.hints && h < p.hints.size() && h < static_cast<size_t>(kGnnHints); ++h)
      for (int i = 0; i < g && static_cast<size_t>(i) < p.hints[h].size(); ++i) {
        const int dev = p.hints[h][static_cast<size_t>(i)];
        if (dev >= 0 && dev < d) ha[i][dev][static_cast<std::int64_t>(h)] = 1.0f;
      }
    mask = torch::zeros({g, d});
    if (!p.allowed.empty()) {
      auto ma = mask.accessor<float, 2>();
      for (int i = 0; i < g; ++i)
        for (int j = 0; j < d; ++j)
          if (!p.allowed[static_cast<size_t>(i)][static_cast<size_t>(j)])
            ma[i][j] = static_cast<float>(kMasked);
    }
    problem = std::move(p);
  }

  torch::Tensor logits() {
    auto s = net->forward(groups, a_pred, a_succ, devices, hints);
    return opt.logit_clip * torch::tanh(s / opt.logit_clip) + mask;
  }

  // K placements drawn group by group from the policy's per-group distributions with our own
  // RNG (inverse CDF over doubles), so a seed reproduces them bit for bit.
  std::vector<DevicesOfGroups> sample(const torch::Tensor& probs, int k) {
    return sample(probs, k, rng);
  }
  std::vector<DevicesOfGroups> sample(const torch::Tensor& probs, int k, std::mt19937_64& engine) {
    const auto g = probs.size(0), d = probs.size(1);
    const double* p = probs.data_ptr<double>();
    std::vector<DevicesOfGroups> out(static_cast<size_t>(k),
                                     DevicesOfGroups(static_cast<size_t>(g)));
    for (int s = 0; s < k; ++s)
      for (std::int64_t i = 0; i < g; ++i) {
        const double* row = p + i * d;
        const double u = uniform01(engine);
        double acc = 0.0;
        int pick = -1;
        for (std::int64_t j = 0; j < d; ++j) {
          if (row[j] <= 0.0) continue;
          acc += row[j];
          pick = static_cast<int>(j);
          if (u < acc) break;
        }
        out[static_cast<size_t>(s)][static_cast<size_t>(i)] = std::max(0, pick);
      }
    return out;
  }

  // REINFORCE: one step on -mean_s(A_s Σ_g log p) - β Σ_g H_g. PPO: `ppo_epochs` steps on the
  // clipped surrogate per decision, -mean_s Σ_g min(r A_s, clip(r) A_s) - β Σ_g H_g, with r the
  // ratio of the decision's probability now to when it was sampled (the first epoch's gradient
  // is REINFORCE's; the clip keeps later epochs from moving a decision far from the sampler).
  void update(const torch::Tensor& actions, const torch::Tensor& adv) {
    const bool ppo = opt.update == PolicyUpdate::Ppo;
    const int epochs = ppo ? opt.ppo_epochs : 1;
    const auto k = actions.size(0);
    torch::Tensor old_lp;
    for (int e = 0; e < epochs; ++e) {
      auto lsm = torch::log_softmax(logits(), 1);  // [G, D]
      auto lp = lsm.unsqueeze(0).expand({k, -1, -1}).gather(2, actions.unsqueeze(2)).squeeze(2);
      auto entropy = -(lsm.exp() * lsm).sum(1).sum();
      torch::Tensor loss;
      if (!ppo) {
        loss = -(adv * lp.sum(1)).mean();
      } else {
        if (e == 0) old_lp = lp.detach();
        auto ratio = torch::exp(lp - old_lp);
        auto a = adv.unsqueeze(1);
        auto surr =
            torch::min(ratio * a, torch::clamp(ratio, 1 - opt.ppo_clip, 1 + opt.ppo_clip) * a);
        loss = -surr.sum(1).mean();
      }
      loss = loss - opt.entropy_weight * entropy;
      adam->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(net->parameters(), opt.grad_clip);
      adam->step();
    }
  }
};

GnnTrainer::GnnTrainer(GnnProblem problem, GnnOptions options, RewardFn reward,
                       double oom_reference_s)
    : impl_(std::make_unique<Impl>()) {
  check_gnn_options(options);
  auto& m = *impl_;
  m.opt = options;
  m.reward = std::move(reward);
  m.oom_reference_s = oom_reference_s > 0 ? oom_reference_s : 1.0;
  {
    const std::lock_guard<std::mutex> lock(torch_init_mutex());
    torch::manual_seed(options.seed);
    m.net = GnnNet(kGroupFeatures, kDeviceFeatures, options.hidden, options.rounds);
  }
  m.adam = std::make_unique<torch::optim::Adam>(m.net->parameters(),
                                                torch::optim::AdamOptions(options.learning_rate));
  m.install(std::move(problem));
  m.rng.seed(options.seed);
}

GnnTrainer::~GnnTrainer() = default;

void GnnTrainer::set_problem(GnnProblem problem, RewardFn reward, double oom_reference_s) {
  auto& m = *impl_;
  m.install(std::move(problem));
  m.reward = std::move(reward);
  m.oom_reference_s = oom_reference_s > 0 ? oom_reference_s : 1.0;
  m.baseline_set = false;
  m.best.clear();
  m.best_step_s = 0.0;
}

IterationStats GnnTrainer::step() {
  auto& m = *impl_;
  IterationStats st;
  st.iteration = static_cast<int>(m.history.size()) + 1;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<DevicesOfGroups> placements;
  {
    torch::NoGradGuard no_grad;
    auto lsm = torch::log_softmax(m.logits().to(torch::kDouble), 1);
    auto probs = lsm.exp().contiguous();
    st.entropy = -(probs * lsm).sum(1).mean().item<double>();
    placements = m.sample(probs, m.opt.samples);
  }
  st.sample_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const std::vector<Evaluation> evals = m.reward(placements);
  st.reward_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  RlOptions ro;  // score_samples reads the OOM penalty and the baseline decay from it
  ro.oom_penalty = m.opt.oom_penalty;
  ro.baseline_decay = m.opt.baseline_decay;
  const SampleScores sc = score_samples(placements, evals, ro, m.oom_reference_s, st, m.best,
                                        m.best_step_s, m.baseline, m.baseline_set);
  const double scale = advantage_scale(sc.rewards, sc.mean_reward, true);
  const auto k = static_cast<std::int64_t>(placements.size());
  const auto g = static_cast<std::int64_t>(m.problem.num_groups());
  auto actions = torch::zeros({k, g}, torch::kLong);
  auto aa = actions.accessor<std::int64_t, 2>();
  auto adv = torch::zeros({k});
  auto va = adv.accessor<float, 1>();
  for (std::int64_t s = 0; s < k; ++s) {
    for (std::int64_t i = 0; i < g; ++i)
      aa[s][i] = placements[static_cast<size_t>(s)][static_cast<size_t>(i)];
    va[s] = static_cast<float>((sc.rewards[static_cast<size_t>(s)] - m.baseline) * scale);
  }
  m.update(actions, adv);
  st.grad_s = seconds_since(t0);
  finish_iteration(sc, ro, m.best_step_s, m.baseline, st, m.history);
  return st;
}

std::vector<DevicesOfGroups> GnnTrainer::sample(int k) {
  auto& m = *impl_;
  torch::NoGradGuard no_grad;
  auto probs = torch::softmax(m.logits().to(torch::kDouble), 1).contiguous();
  return m.sample(probs, k);
}

std::vector<DevicesOfGroups> GnnTrainer::sample(int k, std::uint64_t seed) const {
  auto& m = *impl_;
  torch::NoGradGuard no_grad;
  auto probs = torch::softmax(m.logits().to(torch::kDouble), 1).contiguous();
  std::mt19937_64 engine(seed);
  return m.sample(probs, k, engine);
}

DevicesOfGroups GnnTrainer::greedy() const {
  auto& m = *impl_;
  torch::NoGradGuard no_grad;
  auto l = m.logits().contiguous();
  const auto g = l.size(0), d = l.size(1);
  const float* p = l.data_ptr<float>();
  DevicesOfGroups out(static_cast<size_t>(g), 0);
  for (std::int64_t i = 0; i < g; ++i) {
    int pick = 0;
    for (std::int64_t j = 1; j < d; ++j)
      if (p[i * d + j] > p[i * d + pick]) pick = static_cast<int>(j);
    out[static_cast<size_t>(i)] = pick;
  }
  return out;
}

const DevicesOfGroups& GnnTrainer::best() const {
  return impl_->best;
}
double GnnTrainer::best_step_s() const {
  return impl_->best_step_s;
}
int GnnTrainer::iteration() const {
  return static_cast<int>(impl_->history.size());
}
const std::vector<IterationStats>& GnnTrainer::history() const {
  return impl_->history;
}

void GnnTrainer::save_policy(const std::string& path, const std::string& how_made) const {
  const auto& m = *impl_;
  torch::serialize::OutputArchive root, model;
  m.net->save(model);
  root.write("kind", c10::IValue(std::string(kPolicyKind)));
  root.write("shape", torch::tensor({static_cast<std::int64_t>(m.opt.hidden),
                                     static_cast<std::int64_t>(m.opt.rounds),
                                     static_cast<std::int64_t>(kGroupFeatures),
                                     static_cast<std::int64_t>(kDeviceFeatures)}));
  root.write("how_made", c10::IValue(how_made));
  root.write("model", model);
  std::ostringstream archive;
  root.save_to(archive);
  sim::write_file_atomic(path, wrap_checkpoint(archive.str()));
}

void GnnTrainer::load_policy(const std::string& path) {
  auto& m = *impl_;
  as_input_error(path, [&] {
    torch::serialize::InputArchive root, model;
    load_policy_archive(root, path);
    const PolicyHeader h = read_header(root, path);
    if (h.hidden != m.opt.hidden || h.rounds != m.opt.rounds)
      throw sim::InputError(path, "shape",
                            "a policy of hidden " + std::to_string(m.opt.hidden) + ", " +
                                std::to_string(m.opt.rounds) + " rounds, got hidden " +
                                std::to_string(h.hidden) + ", " + std::to_string(h.rounds) +
                                " rounds");
    root.read("model", model);
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> before;
    for (const auto& item : m.net->named_parameters(true))
      before.emplace_back(item.key(), item.value().sizes().vec());
    m.net->load(model);
    const auto after = m.net->named_parameters(true);
    for (const auto& [name, sizes] : before) {
      const torch::Tensor* now = after.find(name);
      if (now == nullptr || now->sizes().vec() != sizes || now->scalar_type() != torch::kFloat ||
          !torch::isfinite(*now).all().item<bool>())
        throw sim::InputError(path, "model." + name,
                              "finite float weights of shape " + c10::str(c10::IntArrayRef(sizes)));
    }
    return 0;
  });
}

std::pair<GnnOptions, std::string> read_gnn_policy_header(const std::string& path) {
  return as_input_error(path, [&] {
    torch::serialize::InputArchive root;
    load_policy_archive(root, path);
    const PolicyHeader h = read_header(root, path);
    GnnOptions o;
    o.hidden = h.hidden;
    o.rounds = h.rounds;
    return std::make_pair(o, h.how_made);
  });
}

// ---- training loops ---------------------------------------------------------------------------

namespace {

// What the trainer needs to place one graph on one cluster.
struct Task {
  const sim::Graph* graph = nullptr;
  models::Grouping grouping;
  std::unique_ptr<sim::BatchOracle> oracle;
  double reference_s = 1.0;
};

Task make_task(const sim::Graph& graph, const sim::Cluster& cluster, const TrainConfig& config,
               std::int64_t& evaluations) {
  if (config.grouper == Grouper::Learned)
    throw sim::InputError("<flag --grouper>", "",
                          "scotch, group_graph or colocation with --policy gnn, got learned");
  Task t;
  t.graph = &graph;
  t.grouping = policy_grouping(graph, cluster, config);
  sim::SimOptions so;
  so.record_critical_path = false;
  t.oracle = std::make_unique<sim::BatchOracle>(cluster, graph, so, config.costs);
  if (auto single = sim::builtin_placement(cluster.gpus().empty() ? "single-cpu" : "single-gpu",
                                           graph, cluster)) {
    const double s = t.oracle->evaluate(*single).step_time.seconds();
    ++evaluations;
    if (s > 0) t.reference_s = s;
  }
  return t;
}

RewardFn reward_of(const Task& t, int threads, std::int64_t& evaluations) {
  return [&t, threads, &evaluations](const std::vector<DevicesOfGroups>& ps) {
    std::vector<sim::Placement> placements;
    placements.reserve(ps.size());
    for (const auto& p : ps) placements.push_back(t.grouping.expand(p));
    std::vector<Evaluation> out;
    for (const auto& o : t.oracle->evaluate(placements, threads)) out.push_back(evaluation_of(o));
    evaluations += static_cast<std::int64_t>(out.size());
    return out;
  };
}

// A pretrained policy's width and rounds replace the command line's.
GnnOptions with_pretrained(GnnOptions o, const std::string& pretrained) {
  if (pretrained.empty()) return o;
  const GnnOptions saved = read_gnn_policy_header(pretrained).first;
  o.hidden = saved.hidden;
  o.rounds = saved.rounds;
  return o;
}

// Runs `step` until the iteration count, the wall budget or a stop request ends it; reports
// progress after every iteration.
// `reserve` is the wall time to leave at the end of a --minutes budget (the final search).
template <typename Step>
bool run_budget(
    const TrainConfig& config, GnnTrainer& trainer, Step&& step, const std::int64_t& evaluations,
    const std::function<double()>& reserve = [] { return 0.0; },
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now()) {
  const bool has_budget = config.minutes.has_value();
  const double budget_s = has_budget ? *config.minutes * 60.0 : 0.0;
  const int total = config.iterations ? *config.iterations : (has_budget ? -1 : 100);
  double last_step_s = 0.0;
  while (total < 0 || trainer.iteration() < total) {
    if (config.stop != nullptr && config.stop->load()) return true;
    // The next iteration must fit too: it takes about as long as the last one.
    if (has_budget && seconds_since(t0) + reserve() + last_step_s >= budget_s) break;
    const auto t_step = std::chrono::steady_clock::now();
    const IterationStats st = step();
    last_step_s = seconds_since(t_step);
    if (config.on_iteration) {
      Progress pr;
      pr.iteration = trainer.iteration();
      if (total >= 0) pr.total_iterations = total;
      pr.elapsed_s = seconds_since(t0);
      pr.evals_per_s = pr.elapsed_s > 0 ? static_cast<double>(evaluations) / pr.elapsed_s : 0.0;
      if (has_budget) pr.time_left_s = std::max(0.0, budget_s - pr.elapsed_s);
      config.on_iteration(st, pr);
    }
  }
  return false;
}

// What the final search will cost at most: its simulation count times the wall time of one
// simulation, the larger of two measures: in the search before training (`first_s_per_sim`: the
// same kind of placements, batched as the final search batches them) and in training so far (a
// batch of K on the oracle's threads; a young policy's placements that run out of memory are
// cheaper than the search's), with a margin of 1.5. Zero without a search.
std::function<double()> search_reserve(const std::optional<GnnPlaceOptions>& search,
                                       const GnnTrainer& trainer, int samples,
                                       double first_s_per_sim) {
  if (!search) return [] { return 0.0; };
  const auto most = static_cast<double>(gnn_search_max_evaluations(*search, 2));
  return [most, &trainer, samples, first_s_per_sim] {
    double reward_s = 0.0;
    for (const auto& st : trainer.history()) reward_s += st.reward_s;
    const auto sims = static_cast<double>(trainer.history().size()) * samples;
    return 1.5 * most * std::max(first_s_per_sim, sims > 0 ? reward_s / sims : 0.0);
  };
}

}  // namespace

PretrainResult pretrain_gnn(const std::vector<CorpusItem>& corpus, const TrainConfig& config,
                            const GnnOptions& options, const std::string& output,
                            const std::string& how_made) {
  const auto t_start = std::chrono::steady_clock::now();
  pin_torch_to_one_thread();
  if (corpus.empty())
    throw sim::InputError("<flag --graphs>", "", "at least one graph and cluster to pre-train on");
  if (!config.iterations && !config.minutes)
    throw sim::InputError("<flag --iterations>", "", "--iterations or --minutes to pre-train");
  const GnnOptions opt = with_pretrained(options, config.pretrained);
  std::int64_t evaluations = 0;
  std::vector<Task> tasks;
  std::vector<GnnProblem> problems;
  for (const auto& item : corpus) {
    tasks.push_back(make_task(*item.graph, *item.cluster, config, evaluations));
    problems.push_back(
        make_gnn_problem(tasks.back().grouping, *item.graph, *item.cluster, config.costs));
  }
  PretrainResult r;
  for (const auto& item : corpus) r.items.push_back(item.name);
  r.best_step_s.assign(corpus.size(), 0.0);
  GnnTrainer trainer(problems[0], opt, reward_of(tasks[0], config.sim_threads, evaluations),
                     tasks[0].reference_s);
  if (!config.pretrained.empty()) trainer.load_policy(config.pretrained);
  auto step = [&] {
    const auto i = static_cast<size_t>(trainer.iteration()) % corpus.size();
    if (trainer.iteration() > 0)
      trainer.set_problem(problems[i], reward_of(tasks[i], config.sim_threads, evaluations),
                          tasks[i].reference_s);
    const IterationStats st = trainer.step();
    if (st.min_step_s > 0 && (r.best_step_s[i] == 0.0 || st.min_step_s < r.best_step_s[i]))
      r.best_step_s[i] = st.min_step_s;
    if (trainer.iteration() % config.checkpoint_every == 0) trainer.save_policy(output, how_made);
    return st;
  };
  run_budget(config, trainer, step, evaluations);
  trainer.save_policy(output, how_made);
  r.history = trainer.history();
  r.wall_s = seconds_since(t_start);
  return r;
}

namespace {

double step_or_inf(const Evaluation& e) {
  return e.oom || e.step_time_s <= 0 ? std::numeric_limits<double>::infinity() : e.step_time_s;
}

// Index of the shortest step among `evals` (the first on ties, so the order decides, not the
// thread count); -1 when every one is OOM.
int shortest(const std::vector<Evaluation>& evals) {
  int best = -1;
  for (size_t i = 0; i < evals.size(); ++i)
    if (std::isfinite(step_or_inf(evals[i])) &&
        (best < 0 || step_or_inf(evals[i]) < step_or_inf(evals[static_cast<size_t>(best)])))
      best = static_cast<int>(i);
  return best;
}

// Hill climbing over one-group moves: for each group in turn, every other allowed device is
// simulated and the best strict improvement is kept; passes repeat until one changes nothing or
// the budget is spent. Why not sample more instead: the policy's samples stay near its greedy
// decode, while the baselines that win on held-out graphs (m-ETF, HEFT) differ from it in a few
// groups, which single moves reach.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;

bool past(const Deadline& deadline) {
  return deadline && std::chrono::steady_clock::now() >= *deadline;
}

void improve_by_moves(const GnnProblem& problem, const RewardFn& reward, int budget,
                      DevicesOfGroups& cur, double& cur_s, const Deadline& deadline = {}) {
  const int g = problem.num_groups(), d = problem.num_devices();
  bool improved = true;
  while (improved && budget > 0 && !past(deadline)) {
    improved = false;
    for (int i = 0; i < g && budget > 0 && !past(deadline); ++i) {
      std::vector<DevicesOfGroups> moves;
      for (int j = 0; j < d && static_cast<int>(moves.size()) < budget; ++j) {
        if (j == cur[static_cast<size_t>(i)]) continue;
        if (!problem.allowed.empty() &&
            !problem.allowed[static_cast<size_t>(i)][static_cast<size_t>(j)])
          continue;
        moves.push_back(cur);
        moves.back()[static_cast<size_t>(i)] = j;
      }
      if (moves.empty()) continue;
      const std::vector<Evaluation> evals = reward(moves);
      budget -= static_cast<int>(moves.size());
      const int b = shortest(evals);
      if (b >= 0 && step_or_inf(evals[static_cast<size_t>(b)]) < cur_s) {
        cur = moves[static_cast<size_t>(b)];
        cur_s = step_or_inf(evals[static_cast<size_t>(b)]);
        improved = true;
      }
    }
  }
}

// Boundary refinement at op level (Fiduccia-Mattheyses-like, one co-location group of ops at a
// time): the groups are the ceiling of the group-level search (a baseline projected onto them can
// lose 10-500 %), so a unit (the ops of one co-location group, which must share a device) with a
// producer or consumer on another device is tried on that device if every op of it may run
// there, in chunks of 32 against the current placement, the best strict improvement of each chunk
// kept.
int refine_ops(const sim::Graph& graph, const sim::BatchOracle& oracle, int threads, int budget,
               sim::Placement& cur, double& cur_s, const Deadline& deadline = {}) {
  const int given = budget;
  const int n = graph.num_ops();
  const sim::Cluster& cluster = oracle.cluster();
  std::map<std::string, int> unit_of_name;  // ordered: unit ids follow first appearance
  std::vector<int> unit(static_cast<size_t>(n));
  std::vector<std::vector<int>> ops_of;
  for (int o = 0; o < n; ++o) {
    const auto [it, fresh] =
        unit_of_name.emplace(graph.group_of(o), static_cast<int>(ops_of.size()));
    if (fresh) ops_of.emplace_back();
    unit[static_cast<size_t>(o)] = it->second;
    ops_of[static_cast<size_t>(it->second)].push_back(o);
  }
  auto may_run = [&](int u, sim::DeviceId d) {
    for (const int o : ops_of[static_cast<size_t>(u)]) {
      const auto& kind = graph.ops[static_cast<size_t>(o)].device_kind;
      if (kind && *kind != cluster.devices[static_cast<size_t>(d)].spec.kind) return false;
    }
    return true;
  };
  std::vector<std::vector<int>> nbrs(ops_of.size());  // neighbouring ops of each unit
  for (int o = 0; o < n; ++o)
    for (const auto c : graph.consumers_of[static_cast<size_t>(o)]) {
      nbrs[static_cast<size_t>(unit[static_cast<size_t>(o)])].push_back(c);
      nbrs[static_cast<size_t>(unit[static_cast<size_t>(c)])].push_back(o);
    }
  constexpr size_t kChunk = 32;
  // Boundary moves first; what budget they leave goes to moves onto any device (a unit onto an
  // idle GPU is never a boundary move: mobilenet_v2 on 4 A100s stopped on two of them).
  for (const bool any_device : {false, true}) {
    bool improved = true;
    while (improved && budget > 0 && !past(deadline)) {
      improved = false;
      std::vector<std::pair<int, sim::DeviceId>> moves;  // (unit, device), by unit then device
      for (int u = 0; u < static_cast<int>(ops_of.size()); ++u) {
        const auto here = cur.device_of[static_cast<size_t>(ops_of[static_cast<size_t>(u)][0])];
        std::vector<sim::DeviceId> to;
        for (const auto m : nbrs[static_cast<size_t>(u)]) {
          const auto d = cur.device_of[static_cast<size_t>(m)];
          if (d != here) to.push_back(d);
        }
        if (any_device)
          for (sim::DeviceId d = 0; d < cluster.num_devices(); ++d)
            if (d != here) to.push_back(d);
        std::sort(to.begin(), to.end());
        to.erase(std::unique(to.begin(), to.end()), to.end());
        for (const auto d : to)
          if (may_run(u, d)) moves.emplace_back(u, d);
      }
      for (size_t at = 0; at < moves.size() && budget > 0 && !past(deadline); at += kChunk) {
        std::vector<sim::Placement> tries;
        for (size_t i = at;
             i < std::min(moves.size(), at + kChunk) && static_cast<int>(tries.size()) < budget;
             ++i) {
          tries.push_back(cur);
          for (const int o : ops_of[static_cast<size_t>(moves[i].first)])
            tries.back().device_of[static_cast<size_t>(o)] = moves[i].second;
        }
        budget -= static_cast<int>(tries.size());
        std::vector<Evaluation> evals;
        for (const auto& o : oracle.evaluate(tries, threads)) evals.push_back(evaluation_of(o));
        const int b = shortest(evals);
        if (b >= 0 && step_or_inf(evals[static_cast<size_t>(b)]) < cur_s) {
          cur = tries[static_cast<size_t>(b)];
          cur_s = step_or_inf(evals[static_cast<size_t>(b)]);
          improved = true;
        }
      }
    }
  }
  return given - budget;
}

}  // namespace

namespace {

// A placement the search starts from besides the policy's and the hints (training's best).
struct Seed {
  DevicesOfGroups groups;
  std::string name;
};

// The candidates of the search in a fixed order (greedy, hints that apply, seeds, samples),
// simulated in one batch; the stage bests go to `out`.
struct Candidates {
  std::vector<DevicesOfGroups> groups;
  std::vector<std::string> names;
  std::vector<Evaluation> evals;
};

Candidates gather_candidates(const GnnTrainer& trainer, const GnnProblem& problem,
                             const RewardFn& reward, const std::vector<Seed>& seeds,
                             const GnnPlaceOptions& options, GnnPlacement& out) {
  Candidates c;
  c.groups.push_back(trainer.greedy());
  c.names.emplace_back("greedy");
  const char* hint_names[kGnnHints] = {"scotch", "m-etf"};
  for (size_t h = 0; h < problem.hints.size(); ++h) {
    const auto& hint = problem.hints[h];
    if (hint.empty() || std::find(hint.begin(), hint.end(), -1) != hint.end()) continue;
    c.groups.push_back(hint);
    c.names.push_back(std::string("hint ") + hint_names[h]);
  }
  const size_t first_seed = c.groups.size();
  for (const auto& s : seeds) {
    c.groups.push_back(s.groups);
    c.names.push_back(s.name);
  }
  const size_t first_sample = c.groups.size();
  for (auto& s : trainer.sample(options.samples, options.seed)) {
    c.groups.push_back(std::move(s));
    c.names.emplace_back("sample");
  }
  c.evals = reward(c.groups);
  auto best_of = [&c](size_t from, size_t to) {
    double b = 0.0;
    for (size_t i = from; i < to; ++i)
      if (std::isfinite(step_or_inf(c.evals[i])) && (b == 0.0 || c.evals[i].step_time_s < b))
        b = c.evals[i].step_time_s;
    return b;
  };
  out.greedy_s = best_of(0, 1);
  out.hint_s = best_of(1, first_seed);
  out.sampled_s = best_of(first_sample, c.groups.size());
  return c;
}

// The test-time search from a loaded or trained policy: candidates, `starts` group-level climbs,
// then op-level moves on the best. Counts, not seconds: deterministic.
GnnPlacement search_from(const GnnTrainer& trainer, const GnnProblem& problem, const Task& task,
                         const RewardFn& reward, std::int64_t& evaluations,
                         const GnnPlaceOptions& options, const std::vector<Seed>& seeds) {
  GnnPlacement out;
  const Candidates c = gather_candidates(trainer, problem, reward, seeds, options, out);
  // The `starts` best distinct candidates (by step time, then order), each climbed in turn: the
  // greedy decode and the hints often sit in different basins (m-ETF's on inception_v3).
  std::vector<size_t> order(c.groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&c](size_t x, size_t y) {
    return step_or_inf(c.evals[x]) < step_or_inf(c.evals[y]);
  });
  DevicesOfGroups cur = c.groups[0];  // all OOM: the greedy decode, as before
  double cur_s = step_or_inf(c.evals[0]);
  out.start = c.names[0];
  std::vector<DevicesOfGroups> climbed;
  for (const size_t i : order) {
    if (static_cast<int>(climbed.size()) >= std::max(1, options.starts)) break;
    if (!std::isfinite(step_or_inf(c.evals[i]))) break;
    if (std::find(climbed.begin(), climbed.end(), c.groups[i]) != climbed.end()) continue;
    climbed.push_back(c.groups[i]);
    DevicesOfGroups p = c.groups[i];
    double p_s = step_or_inf(c.evals[i]);
    improve_by_moves(problem, reward, options.search_evaluations, p, p_s, options.deadline);
    if (climbed.size() == 1 || p_s < cur_s) {
      cur = std::move(p);
      cur_s = p_s;
      out.start = c.names[i];
    }
  }
  out.groups = cur;
  out.placement = task.grouping.expand(cur);
  if (std::isfinite(cur_s) && options.op_evaluations > 0) {
    evaluations += refine_ops(*task.graph, *task.oracle, options.sim_threads,
                              options.op_evaluations, out.placement, cur_s, options.deadline);
  }
  out.final_s = std::isfinite(cur_s) ? cur_s : 0.0;
  out.evaluations = evaluations;
  return out;
}

void check_search_options(const GnnPlaceOptions& options) {
  if (options.samples < 0 || options.search_evaluations < 0 || options.starts < 1 ||
      options.op_evaluations < 0)
    throw sim::InputError("<place options>", "samples",
                          "samples and search evaluations >= 0 and starts >= 1, got " +
                              std::to_string(options.samples) + ", " +
                              std::to_string(options.search_evaluations) + " and " +
                              std::to_string(options.starts));
}

}  // namespace

std::int64_t gnn_search_max_evaluations(const GnnPlaceOptions& o, int extra_candidates) {
  return 1 + kGnnHints + static_cast<std::int64_t>(extra_candidates) + o.samples +
         static_cast<std::int64_t>(o.starts) * o.search_evaluations + o.op_evaluations;
}

GnnPlacement place_with_gnn_search(const std::string& path, const sim::Graph& graph,
                                   const sim::Cluster& cluster, const sim::KernelCostModel& costs,
                                   const GnnPlaceOptions& options) {
  check_search_options(options);
  pin_torch_to_one_thread();
  GnnOptions opt = read_gnn_policy_header(path).first;
  opt.seed = options.seed;
  TrainConfig config;
  config.costs = costs;
  std::int64_t evaluations = 0;
  const Task task = make_task(graph, cluster, config, evaluations);
  const RewardFn reward = reward_of(task, options.sim_threads, evaluations);
  GnnProblem problem = make_gnn_problem(task.grouping, graph, cluster, costs);
  GnnTrainer trainer(problem, opt, reward, task.reference_s);
  trainer.load_policy(path);
  return search_from(trainer, problem, task, reward, evaluations, options, {});
}

TrainResult train_gnn(const sim::Graph& graph, const sim::Cluster& cluster,
                      const TrainConfig& config, const GnnOptions& options,
                      const std::optional<GnnPlaceOptions>& search) {
  const auto t_start = std::chrono::steady_clock::now();
  pin_torch_to_one_thread();
  if (config.resume)
    throw sim::InputError("<flag --resume>", "", "--policy seq2seq: --policy gnn cannot resume");
  if (config.comm != nullptr && config.comm->size() > 1)
    throw sim::InputError("<flag --policy>", "", "one process (no mpirun) for --policy gnn");
  if (search) check_search_options(*search);
  const GnnOptions opt = with_pretrained(options, config.pretrained);
  TrainResult result;
  std::int64_t evaluations = 0;
  const Task task = make_task(graph, cluster, config, evaluations);
  result.groups = task.grouping.size();
  const RewardFn reward = reward_of(task, config.sim_threads, evaluations);
  const GnnProblem problem = make_gnn_problem(task.grouping, graph, cluster, config.costs);
  GnnTrainer trainer(problem, opt, reward, task.reference_s);
  if (!config.pretrained.empty()) trainer.load_policy(config.pretrained);
  // The search from the policy before training (place --method rl's, sized by its defaults or
  // $PLACESIM_RL_SEARCH, with a pre-trained policy):
  // its placement is kept unless training and the final search beat it, so a fine-tune never
  // ends worse than the zero-shot placement it starts from. Its time counts in the budget; it
  // draws its samples from its own engine, so training's draws do not depend on it.
  const auto t_loop = std::chrono::steady_clock::now();
  GnnPlaceOptions so = search.value_or(GnnPlaceOptions{});
  so.seed = opt.seed;
  so.sim_threads = config.sim_threads;
  std::optional<GnnPlacement> initial;
  const std::int64_t before_initial = evaluations;
  if (search) {
    GnnPlaceOptions place = gnn_place_options_from_env();  // place --method rl's, seed 1
    place.sim_threads = config.sim_threads;
    initial = search_from(trainer, problem, task, reward, evaluations, place, {});
  }
  const std::int64_t initial_evaluations = evaluations;
  const double initial_wall_s = seconds_since(t_loop);
  result.interrupted = run_budget(
      config, trainer, [&] { return trainer.step(); }, evaluations,
      search_reserve(
          search, trainer, opt.samples,
          initial_evaluations > before_initial
              ? initial_wall_s / static_cast<double>(initial_evaluations - before_initial)
              : 0.0),
      t_start);
  if (!config.checkpoint_dir.empty()) {
    make_checkpoint_dir(config.checkpoint_dir);
    trainer.save_policy((std::filesystem::path(config.checkpoint_dir) / "gnn.ckpt").string(),
                        "train --policy gnn --graph " + graph.name + " --cluster " + cluster.name +
                            " --seed " + std::to_string(opt.seed) + ", " +
                            std::to_string(trainer.iteration()) + " iterations" +
                            (config.pretrained.empty() ? "" : ", from " + config.pretrained));
  }
  // The greedy decode is a candidate too (the only one with --iterations 0).
  const DevicesOfGroups greedy = trainer.greedy();
  const Evaluation ge = evaluation_of(task.oracle->evaluate(task.grouping.expand(greedy)));
  ++evaluations;
  pick_final(trainer.best(), trainer.best_step_s(), greedy, ge, result);
  result.best = task.grouping.expand(result.best_groups);
  result.history = trainer.history();
  if (initial && !result.interrupted) {
    // The search from the trained policy, seeded with what training and the first search found:
    // it keeps its best candidate and improves only strictly, so it ends no worse than either.
    const auto t_search = std::chrono::steady_clock::now();
    const std::int64_t before = evaluations;
    // With --minutes, the search's reserve is an estimate that a rising load can beat (5-minute
    // runs ended at 311-315 s at load 6-12): its moves stop at the budget's end too.
    if (config.minutes)
      so.deadline = t_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(*config.minutes * 60.0));
    const GnnPlacement found =
        search_from(trainer, problem, task, reward, evaluations, so,
                    {{result.best_groups, "training best"}, {initial->groups, "first search"}});
    result.trained_step_s = result.best_oom ? 0.0 : result.best_step_s;
    result.search_evaluations = (initial_evaluations - before_initial) + (evaluations - before);
    result.search_wall_s = initial_wall_s + seconds_since(t_search);
    for (const GnnPlacement* p : {static_cast<const GnnPlacement*>(&*initial), &found})
      if (p->final_s > 0 && (result.best_oom || p->final_s < result.best_step_s)) {
        result.best = p->placement;
        result.best_groups = p->groups;
        result.best_step_s = p->final_s;
        result.best_oom = false;
      }
  }
  result.evaluations = evaluations;
  result.wall_s = seconds_since(t_start);
  return result;
}

GnnPlaceOptions parse_gnn_search(const std::string& text, const std::string& where) {
  GnnPlaceOptions o;
  std::istringstream in(text);
  std::array<long long, 4> v{o.samples, o.search_evaluations, o.starts, o.op_evaluations};
  char comma = ',';
  size_t n = 0;
  while (n < v.size() && comma == ',' && in >> v[n]) {
    ++n;
    if (!(in >> comma)) break;
  }
  const bool ok = n == v.size() && in.eof() && v[0] >= 0 && v[1] >= 0 && v[2] >= 1 && v[3] >= 0 &&
                  v[3] <= 100'000'000 && v[0] <= 1'000'000 && v[1] <= 100'000'000 &&
                  v[2] <= 1'000'000;
  if (!ok)
    throw sim::InputError(
        where, "",
        "SAMPLES,EVALUATIONS,STARTS,OP_EVALUATIONS (integers >= 0, >= 0, >= 1, >= 0), got '" +
            text + "'");
  o.samples = static_cast<int>(v[0]);
  o.search_evaluations = static_cast<int>(v[1]);
  o.starts = static_cast<int>(v[2]);
  o.op_evaluations = static_cast<int>(v[3]);
  return o;
}

GnnPlaceOptions gnn_place_options_from_env() {
  const char* env = std::getenv("PLACESIM_RL_SEARCH");
  if (env == nullptr || *env == '\0') return {};
  return parse_gnn_search(env, "<environment PLACESIM_RL_SEARCH>");
}

sim::Placement place_with_gnn(const std::string& path, const sim::Graph& graph,
                              const sim::Cluster& cluster, const sim::KernelCostModel& costs) {
  return place_with_gnn_search(path, graph, cluster, costs, gnn_place_options_from_env()).placement;
}

std::string default_gnn_policy() {
  if (const char* env = std::getenv("PLACESIM_POLICY"); env != nullptr && *env != '\0') return env;
  namespace fs = std::filesystem;
  // PLACESIM_POLICY_DIR: the checkout's scenarios/policies (policy/rl/CMakeLists.txt).
  const std::string compiled_in = (fs::path(PLACESIM_POLICY_DIR) / "gnn.ckpt").string();
  const std::vector<fs::path> candidates =
      sim::checkout_paths(compiled_in, fs::path("scenarios") / "policies" / "gnn.ckpt");
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return c.string();
  return candidates.back().string();
}

}  // namespace placesim::policy

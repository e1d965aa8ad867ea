// expert: what the human experts of Mirhoseini et al. 2017 (§4.2, "Expert-designed") did.
//  - RNNLM and NMT: model parallelism by layer, as in Sutskever et al. 2014 and Wu et al. 2016
//    (the paper's own description: "each layer, including all LSTM layers, the attention layer,
//    and the softmax layer, is computed by a GPU"). Here: the LSTM layers, in graph order, one
//    per GPU (gpu k takes layer k; with more layers than GPUs, contiguous blocks of layers); the
//    embedding on the first GPU; attention and softmax on the last GPU.
//  - Convolutional models (Inception-V3, ResNet-50): a single GPU, the common practice the paper
//    cites for Inception-V3.
//  - Any other graph: a layer-wise pipeline split; layers (Op::layer), in graph order, are cut
//    into one contiguous block per GPU with roughly equal FLOPs.
// Groups without a layer of their own follow their first placed predecessor (the first GPU when
// they have none). Gradient and update ops carry their forward layer, so they follow it.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "policy/place/baselines.hpp"

namespace placesim::policy {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

/// The built-in workload a graph was built by, from the builder's metadata, else its name.
std::string workload_of(const sim::Graph& g) {
  for (const char* key : {"builder", "workload", "model"}) {
    const auto it = g.metadata.find(key);
    if (it != g.metadata.end() && !it->second.empty()) return lower(it->second);
  }
  return lower(g.name);
}

bool contains(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

enum class Role { Embedding, Lstm, Attention, Softmax, Other };

Role role_of(const std::string& layer_lower) {
  if (layer_lower.empty()) return Role::Other;
  if (contains(layer_lower, "attention") || contains(layer_lower, "attn")) return Role::Attention;
  if (contains(layer_lower, "softmax") || contains(layer_lower, "logits") ||
      contains(layer_lower, "loss"))
    return Role::Softmax;
  if (contains(layer_lower, "embed")) return Role::Embedding;
  if (contains(layer_lower, "lstm") || contains(layer_lower, "rnn") ||
      contains(layer_lower, "layer"))
    return Role::Lstm;
  return Role::Other;
}

/// Fills groups left at -1 from their first placed predecessor, in topological order.
void follow_predecessors(const GroupDag& dag, const sim::Cluster& c, sim::DeviceId first,
                         GroupPlacement& out) {
  for (int gi = 0; gi < dag.size(); ++gi) {
    if (out[static_cast<std::size_t>(gi)] >= 0) continue;
    sim::DeviceId d = first;
    for (const GroupEdge& e : dag.pred[static_cast<std::size_t>(gi)])
      if (out[static_cast<std::size_t>(e.group)] >= 0) {
        d = out[static_cast<std::size_t>(e.group)];
        break;
      }
    out[static_cast<std::size_t>(gi)] = d;
  }
  for (int gi = 0; gi < dag.size(); ++gi)
    out[static_cast<std::size_t>(gi)] = respect_kind(dag, gi, c, out[static_cast<std::size_t>(gi)]);
}

GroupPlacement recurrent_expert(const GroupDag& dag, const sim::Cluster& c,
                                const std::vector<sim::DeviceId>& gpus) {
  GroupPlacement out(static_cast<std::size_t>(dag.size()), -1);
  std::map<std::string, int> lstm_index;  // layer path -> order of first appearance
  std::vector<Role> roles(static_cast<std::size_t>(dag.size()));
  for (int gi = 0; gi < dag.size(); ++gi) {
    const std::string l = lower(dag.layer[static_cast<std::size_t>(gi)]);
    roles[static_cast<std::size_t>(gi)] = role_of(l);
    if (roles[static_cast<std::size_t>(gi)] == Role::Lstm)
      lstm_index.emplace(l, static_cast<int>(lstm_index.size()));
  }
  const auto layers = static_cast<std::size_t>(std::max<std::size_t>(1, lstm_index.size()));
  for (int gi = 0; gi < dag.size(); ++gi) {
    switch (roles[static_cast<std::size_t>(gi)]) {
      case Role::Embedding:
        out[static_cast<std::size_t>(gi)] = gpus.front();
        break;
      case Role::Attention:
      case Role::Softmax:
        out[static_cast<std::size_t>(gi)] = gpus.back();
        break;
      case Role::Lstm: {
        const auto k =
            static_cast<std::size_t>(lstm_index.at(lower(dag.layer[static_cast<std::size_t>(gi)])));
        // One layer per GPU while there are GPUs enough, else contiguous blocks of layers.
        out[static_cast<std::size_t>(gi)] =
            layers <= gpus.size() ? gpus[k] : gpus[k * gpus.size() / layers];
        break;
      }
      case Role::Other:
        break;
    }
  }
  follow_predecessors(dag, c, gpus.front(), out);
  return out;
}

GroupPlacement layerwise_expert(const GroupDag& dag, const sim::Cluster& c,
                                const std::vector<sim::DeviceId>& gpus) {
  std::map<std::string, int> index;
  std::vector<std::string> order;
  std::vector<double> flops;
  for (int gi = 0; gi < dag.size(); ++gi) {
    const std::string& l = dag.layer[static_cast<std::size_t>(gi)];
    if (l.empty()) continue;
    const auto [it, inserted] = index.emplace(l, static_cast<int>(order.size()));
    if (inserted) {
      order.push_back(l);
      flops.push_back(0.0);
    }
    flops[static_cast<std::size_t>(it->second)] += dag.flops[static_cast<std::size_t>(gi)];
  }
  double total = 0.0;
  for (const double f : flops) total += f;
  // A layer goes to the block its FLOP midpoint falls in: contiguous, balanced blocks.
  std::vector<sim::DeviceId> device_of_layer(order.size(), gpus.front());
  double before = 0.0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const double mid = total > 0
                           ? (before + flops[k] / 2) / total
                           : (static_cast<double>(k) + 0.5) / static_cast<double>(order.size());
    const auto part =
        std::min(gpus.size() - 1, static_cast<std::size_t>(mid * static_cast<double>(gpus.size())));
    device_of_layer[k] = gpus[part];
    before += flops[k];
  }
  GroupPlacement out(static_cast<std::size_t>(dag.size()), -1);
  for (int gi = 0; gi < dag.size(); ++gi) {
    const std::string& l = dag.layer[static_cast<std::size_t>(gi)];
    if (!l.empty())
      out[static_cast<std::size_t>(gi)] = device_of_layer[static_cast<std::size_t>(index.at(l))];
  }
  follow_predecessors(dag, c, gpus.front(), out);
  return out;
}

}  // namespace

GroupPlacement place_expert(const GroupDag& dag, const sim::Graph& g, const sim::Cluster& c,
                            const MethodOptions& /*o*/) {
  const std::string w = workload_of(g);
  const sim::DeviceId fastest = fastest_gpu(c);
  std::vector<sim::DeviceId> gpus = compute_devices(c);
  if (contains(w, "inception") || contains(w, "resnet") || fastest < 0) {
    GroupPlacement out(static_cast<std::size_t>(dag.size()), fastest >= 0 ? fastest : gpus.front());
    for (int gi = 0; gi < dag.size(); ++gi)
      out[static_cast<std::size_t>(gi)] =
          respect_kind(dag, gi, c, out[static_cast<std::size_t>(gi)]);
    return out;
  }
  if (contains(w, "rnnlm") || contains(w, "nmt")) return recurrent_expert(dag, c, gpus);
  return layerwise_expert(dag, c, gpus);
}

}  // namespace placesim::policy

// The Hierarchical Planner (Mirhoseini et al., ICLR 2018): a feed-forward grouper assigns every op
// to one of G groups from the op's own features, the seq2seq placer places the groups, and both
// are trained together by REINFORCE (the grouper's log-probabilities add to the placer's).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <torch/torch.h>

#include "policy/rl/internal/rl_common.hpp"
#include "policy/rl/rl.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A uniform double in [0, 1) from the top 53 bits (the same on every standard library).
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Inverse-CDF draw from one row of probabilities.
int draw(const double* row, int n, std::mt19937_64& rng) {
  double total = 0.0;
  for (int j = 0; j < n; ++j) total += row[j];
  const double u = uniform01(rng) * total;
  double acc = 0.0;
  int pick = -1;
  for (int j = 0; j < n; ++j) {
    if (row[j] <= 0.0) continue;
    acc += row[j];
    pick = j;
    if (u < acc) break;
  }
  return pick;
}

struct HierNetImpl : torch::nn::Module {
  HierNetImpl(int op_features, int groups, int hidden, int devices)
      : g1(register_module("g1", torch::nn::Linear(op_features, 64))),
        g2(register_module("g2", torch::nn::Linear(64, groups))),
        embed(register_module("embed", torch::nn::Linear(op_features + 1, hidden))),
        encoder(
            register_module("encoder", torch::nn::LSTM(torch::nn::LSTMOptions(hidden, hidden)))),
        device_embed(register_module("device_embed", torch::nn::Embedding(devices + 1, hidden))),
        decoder(register_module("decoder", torch::nn::LSTMCell(2 * hidden, hidden))),
        combine(register_module("combine", torch::nn::Linear(2 * hidden, hidden))),
        out(register_module("out", torch::nn::Linear(hidden, devices))) {}
  torch::nn::Linear g1, g2, embed;
  torch::nn::LSTM encoder;
  torch::nn::Embedding device_embed;
  torch::nn::LSTMCell decoder;
  torch::nn::Linear combine, out;
};
TORCH_MODULE(HierNet);

}  // namespace

struct HierarchicalTrainer::Impl {
  OpProblem problem;
  RlOptions opt;
  int groups = 0;
  RewardFn reward;
  double oom_reference_s = 1.0;
  HierNet net{nullptr};
  std::unique_ptr<torch::optim::Adam> adam;
  torch::Tensor x;  // [N, F] op features
  std::mt19937_64 rng;
  double baseline = 0.0;
  bool baseline_set = false;
  DevicesOfGroups best;
  DevicesOfGroups fallback;  // the first sample, while nothing has fitted in memory
  double best_step_s = 0.0;
  std::vector<IterationStats> history;

  int ops() const { return static_cast<int>(problem.features.size()); }
  int devices() const { return problem.num_devices; }

  // A device for every op from its group's device; an op of a co-location group takes its
  // leader's (the group's first op's) device; an op whose kind constraint that device breaks goes
  // to the first device it may use (the grouper does not see constraints).
  DevicesOfGroups op_devices(const std::vector<int>& group_of,
                             const std::vector<int>& dev_of) const {
    DevicesOfGroups out(static_cast<size_t>(ops()));
    for (int i = 0; i < ops(); ++i) {
      const int leader = problem.leader.empty() ? i : problem.leader[static_cast<size_t>(i)];
      int d = leader < i ? out[static_cast<size_t>(leader)]
                         : dev_of[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
      if (!problem.allowed.empty() &&
          !problem.allowed[static_cast<size_t>(i)][static_cast<size_t>(d)]) {
        for (int j = 0; j < devices(); ++j)
          if (problem.allowed[static_cast<size_t>(i)][static_cast<size_t>(j)]) {
            d = j;
            break;
          }
      }
      out[static_cast<size_t>(i)] = d;
    }
    return out;
  }
};

HierarchicalTrainer::HierarchicalTrainer(OpProblem problem, int groups, RlOptions options,
                                         RewardFn reward, double oom_reference_s)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  if (problem.features.empty())
    throw sim::InputError("<rl problem>", "ops", "at least one op to place, got none");
  if (groups < 1)
    throw sim::InputError("<flag --groups>", "",
                          "at least one group, got " + std::to_string(groups));
  if (problem.num_devices < 1)
    throw sim::InputError("<rl problem>", "devices", "at least one device");
  if (options.samples < 1)
    throw sim::InputError("<rl options>", "samples", "at least 1 sample per iteration");
  m.problem = std::move(problem);
  m.opt = options;
  m.groups = groups;
  m.reward = std::move(reward);
  m.oom_reference_s = oom_reference_s > 0 ? oom_reference_s : 1.0;
  const int n = m.ops(), f = static_cast<int>(m.problem.features[0].size());
  {
    const std::lock_guard<std::mutex> lock(torch_init_mutex());  // rl_common.hpp
    torch::manual_seed(options.seed);
    m.net = HierNet(f, groups, options.hidden, m.devices());
  }
  m.adam = std::make_unique<torch::optim::Adam>(m.net->parameters(),
                                                torch::optim::AdamOptions(options.learning_rate));
  m.x = torch::zeros({n, f});
  auto xa = m.x.accessor<float, 2>();
  for (int i = 0; i < n; ++i) {
    if (static_cast<int>(m.problem.features[static_cast<size_t>(i)].size()) != f)
      throw sim::InputError("<rl problem>", "features[" + std::to_string(i) + "]",
                            std::to_string(f) + " features like op 0");
    for (int j = 0; j < f; ++j)
      xa[i][j] = m.problem.features[static_cast<size_t>(i)][static_cast<size_t>(j)];
  }
  m.rng.seed(options.seed);
}

HierarchicalTrainer::~HierarchicalTrainer() = default;

IterationStats HierarchicalTrainer::step() {
  auto& m = *impl_;
  const int k = m.opt.samples, n = m.ops(), g = m.groups, d = m.devices(), h = m.opt.hidden;
  IterationStats st;
  st.iteration = static_cast<int>(m.history.size()) + 1;
  double t0 = now_s();

  // Grouper: one distribution per op (the same for every sample), K draws each.
  auto glogits = m.net->g2->forward(torch::tanh(m.net->g1->forward(m.x)));  // [N, G]
  auto glsm = torch::log_softmax(glogits, 1);
  auto gprob = torch::softmax(glogits.detach().to(torch::kDouble), 1).contiguous();
  const double* gp = gprob.data_ptr<double>();
  std::vector<std::vector<int>> group_of(static_cast<size_t>(k),
                                         std::vector<int>(static_cast<size_t>(n)));
  auto assign = torch::zeros({k, n}, torch::kLong);
  auto onehot = torch::zeros({k, g, n});  // [K, G, N]: which ops each group holds
  {
    auto aa = assign.accessor<std::int64_t, 2>();
    auto oa = onehot.accessor<float, 3>();
    for (int s = 0; s < k; ++s)
      for (int i = 0; i < n; ++i) {
        const int grp = draw(gp + static_cast<std::ptrdiff_t>(i) * g, g, m.rng);
        group_of[static_cast<size_t>(s)][static_cast<size_t>(i)] = grp;
        aa[s][i] = grp;
        oa[s][grp][i] = 1.0f;
      }
  }
  // log p(grouping) per sample: sum over ops.
  auto logp = glsm.unsqueeze(0).expand({k, n, g}).gather(2, assign.unsqueeze(2)).squeeze(2).sum(1);
  auto gent = -(glsm.exp() * glsm).sum(1).sum();  // one grouper distribution for all samples

  // Group features: mean of the member ops' features, plus the group's share of the ops. Not
  // differentiated: the grouper learns through its log-probabilities only, as in the paper.
  auto counts = onehot.sum(2, true);  // [K, G, 1]
  auto gfeat = torch::cat({torch::matmul(onehot, m.x) / counts.clamp_min(1.0), counts / n}, 2);
  auto emb = torch::tanh(m.net->embed->forward(gfeat));                         // [K, G, H]
  auto [enc_out, state] = m.net->encoder->forward(emb.transpose(0, 1));         // [G, K, H]
  auto enc = enc_out.transpose(0, 1);                                           // [K, G, H]
  auto hd = std::get<0>(state).squeeze(0), cd = std::get<1>(state).squeeze(0);  // [K, H]
  auto prev = torch::full({k}, d, torch::kLong);
  auto pent = torch::zeros({k});
  std::vector<std::vector<int>> dev_of(static_cast<size_t>(k),
                                       std::vector<int>(static_cast<size_t>(g)));
  for (int t = 0; t < g; ++t) {
    auto input = torch::cat({m.net->device_embed->forward(prev), enc.select(1, t)}, 1);
    std::tie(hd, cd) = m.net->decoder->forward(input, std::make_tuple(hd, cd));
    auto scores = torch::bmm(enc, hd.unsqueeze(2)).squeeze(2);  // [K, G]
    auto context = torch::bmm(torch::softmax(scores, 1).unsqueeze(1), enc).squeeze(1);
    auto o = torch::tanh(m.net->combine->forward(torch::cat({hd, context}, 1)));
    auto logits = m.opt.logit_clip * torch::tanh(m.net->out->forward(o)) / m.opt.temperature;
    auto lsm = torch::log_softmax(logits, 1);
    auto probs = lsm.detach().exp().to(torch::kDouble).contiguous();
    const double* p = probs.data_ptr<double>();
    auto a = torch::empty({k}, torch::kLong);
    auto acc = a.accessor<std::int64_t, 1>();
    for (int s = 0; s < k; ++s) {
      const int pick = draw(p + static_cast<std::ptrdiff_t>(s) * d, d, m.rng);
      dev_of[static_cast<size_t>(s)][static_cast<size_t>(t)] = pick;
      acc[s] = pick;
    }
    logp = logp + lsm.gather(1, a.unsqueeze(1)).squeeze(1);
    pent = pent - (lsm.exp() * lsm).sum(1);
    prev = a;
  }
  (void)h;
  std::vector<DevicesOfGroups> placements;
  for (int s = 0; s < k; ++s)
    placements.push_back(
        m.op_devices(group_of[static_cast<size_t>(s)], dev_of[static_cast<size_t>(s)]));
  st.sample_s = now_s() - t0;

  t0 = now_s();
  const std::vector<Evaluation> evals = m.reward(placements);
  st.reward_s = now_s() - t0;
  if (static_cast<int>(evals.size()) != k)
    throw std::logic_error("reward function returned " + std::to_string(evals.size()) +
                           " evaluations for " + std::to_string(k) + " placements");
  const SampleScores sc = score_samples(placements, evals, m.opt, m.oom_reference_s, st, m.best,
                                        m.best_step_s, m.baseline, m.baseline_set);
  if (m.fallback.empty()) m.fallback = placements[0];

  t0 = now_s();
  const double scale = advantage_scale(sc.rewards, sc.mean_reward, m.opt.normalize_advantage);
  auto adv = torch::empty({k});
  auto ad = adv.accessor<float, 1>();
  for (int s = 0; s < k; ++s)
    ad[s] = static_cast<float>((sc.rewards[static_cast<size_t>(s)] - m.baseline) * scale);
  // Entropy per decision, like Trainer: the placer's g decisions per sample, the grouper's n.
  auto loss = -(adv * logp).mean() - m.opt.entropy_weight * (pent.mean() + gent);
  m.adam->zero_grad();
  loss.backward();
  torch::nn::utils::clip_grad_norm_(m.net->parameters(), m.opt.grad_clip);
  m.adam->step();
  st.grad_s = now_s() - t0;
  st.entropy = pent.mean().item<double>() / g;

  finish_iteration(sc, m.opt, m.best_step_s, m.baseline, st, m.history);
  return st;
}

const DevicesOfGroups& HierarchicalTrainer::best() const {
  return impl_->best.empty() ? impl_->fallback : impl_->best;
}
double HierarchicalTrainer::best_step_s() const {
  return impl_->best_step_s;
}
const std::vector<IterationStats>& HierarchicalTrainer::history() const {
  return impl_->history;
}

OpProblem make_op_problem(const sim::Graph& graph, const sim::Cluster& cluster) {
  OpProblem p;
  p.num_devices = cluster.num_devices();
  const int n = graph.num_ops();
  if (n == 0) throw sim::InputError("<graph>", "ops", "at least one op to place, got none");
  std::map<std::string, int> vocab;
  for (const auto& op : graph.ops) vocab.emplace(op.type, 0);
  int v = 0;
  for (auto& [type, index] : vocab) index = v++;
  std::vector<double> out_bytes(static_cast<size_t>(n)), flops(static_cast<size_t>(n)),
      params(static_cast<size_t>(n));
  double top_out = 0, top_flops = 0, top_params = 0;
  for (int i = 0; i < n; ++i) {
    const sim::Op& o = graph.ops[static_cast<size_t>(i)];
    double b = 0;
    for (const auto& t : o.outputs) b += static_cast<double>(t.bytes.v);
    out_bytes[static_cast<size_t>(i)] = std::log1p(b);
    flops[static_cast<size_t>(i)] = std::log1p(std::max(0.0, static_cast<double>(o.flops.v)));
    params[static_cast<size_t>(i)] = std::log1p(static_cast<double>(o.persistent.v));
    top_out = std::max(top_out, out_bytes[static_cast<size_t>(i)]);
    top_flops = std::max(top_flops, flops[static_cast<size_t>(i)]);
    top_params = std::max(top_params, params[static_cast<size_t>(i)]);
  }
  std::vector<int> position(static_cast<size_t>(n));
  for (size_t i = 0; i < graph.topo_order.size(); ++i)
    position[static_cast<size_t>(graph.topo_order[i])] = static_cast<int>(i);
  auto scaled = [](double x, double top) { return static_cast<float>(top > 0 ? x / top : 0.0); };
  for (int i = 0; i < n; ++i) {
    const sim::Op& o = graph.ops[static_cast<size_t>(i)];
    std::vector<float> f(vocab.size(), 0.0f);
    f[static_cast<size_t>(vocab[o.type])] = 1.0f;
    f.push_back(scaled(out_bytes[static_cast<size_t>(i)], top_out));
    f.push_back(scaled(flops[static_cast<size_t>(i)], top_flops));
    f.push_back(scaled(params[static_cast<size_t>(i)], top_params));
    f.push_back(static_cast<float>(std::log1p(static_cast<double>(o.inputs.size())) / 4.0));
    f.push_back(static_cast<float>(
        std::log1p(static_cast<double>(graph.consumers_of[static_cast<size_t>(i)].size())) / 4.0));
    f.push_back(static_cast<float>(position[static_cast<size_t>(i)]) /
                static_cast<float>(std::max(1, n - 1)));
    p.features.push_back(std::move(f));
  }
  std::vector<std::optional<sim::DeviceKind>> kinds;
  std::vector<std::string> names;
  for (const auto& o : graph.ops) {
    kinds.push_back(o.device_kind);
    names.push_back("op " + o.name);
  }
  p.allowed = allowed_devices(cluster, kinds, names);
  // The graph's co-location groups (an op and its gradient ops, a variable and its update) must
  // share a device, as every placement file requires (sim/placement.cpp).
  std::map<std::string, int> first;
  for (int i = 0; i < n; ++i) p.leader.push_back(first.emplace(graph.group_of(i), i).first->second);
  return p;
}

}  // namespace placesim::policy

namespace placesim::policy {

TrainResult train_hierarchical(const sim::Graph& graph, const sim::Cluster& cluster,
                               const TrainConfig& config) {
  const auto t_start = std::chrono::steady_clock::now();
  pin_torch_to_one_thread();
  if (!config.checkpoint_dir.empty() || config.resume || !config.pretrained.empty())
    throw sim::InputError(
        "<flag --grouper learned>", "",
        "no --checkpoint, --resume or --pretrained (not supported with the learned grouper)");
  sim::SimOptions sim_options;
  sim_options.record_critical_path = false;
  const sim::BatchOracle oracle(cluster, graph, sim_options, config.costs);
  TrainResult result;
  result.groups = config.max_groups;
  double reference_s = 1.0;
  if (auto single = sim::builtin_placement(cluster.gpus().empty() ? "single-cpu" : "single-gpu",
                                           graph, cluster)) {
    const double s = oracle.evaluate(*single).step_time.seconds();
    ++result.evaluations;
    if (s > 0) reference_s = s;
  }
  RewardFn reward = [&](const std::vector<DevicesOfGroups>& ps) {
    std::vector<sim::Placement> placements;
    for (const auto& p : ps) placements.push_back(sim::Placement{.device_of = p});
    std::vector<Evaluation> out;
    for (const auto& o : oracle.evaluate(placements, config.sim_threads))
      out.push_back(evaluation_of(o));
    result.evaluations += static_cast<std::int64_t>(out.size());
    return out;
  };
  HierarchicalTrainer trainer(make_op_problem(graph, cluster), config.max_groups, config.rl, reward,
                              reference_s);
  const auto t_train = std::chrono::steady_clock::now();
  const int total = config.iterations ? *config.iterations : (config.minutes ? -1 : 100);
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_train).count();
  };
  while (total < 0 || static_cast<int>(trainer.history().size()) < total) {
    if (config.stop != nullptr && config.stop->load()) {
      result.interrupted = true;
      break;
    }
    if (config.minutes && elapsed() >= *config.minutes * 60.0) break;
    const IterationStats st = trainer.step();
    if (config.on_iteration) {
      Progress pr;
      pr.iteration = st.iteration;
      if (total >= 0) pr.total_iterations = total;
      pr.elapsed_s = elapsed();
      pr.evals_per_s =
          pr.elapsed_s > 0 ? static_cast<double>(result.evaluations) / pr.elapsed_s : 0.0;
      if (config.minutes) pr.time_left_s = std::max(0.0, *config.minutes * 60.0 - pr.elapsed_s);
      config.on_iteration(st, pr);
    }
  }
  result.best_groups = trainer.best();
  result.best_step_s = trainer.best_step_s();
  result.best_oom = trainer.best_step_s() == 0.0;
  if (!result.best_groups.empty()) result.best.device_of = result.best_groups;
  result.history = trainer.history();
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return result;
}

}  // namespace placesim::policy

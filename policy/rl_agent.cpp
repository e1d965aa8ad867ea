// The seq2seq placement policy and its REINFORCE trainer (LibTorch). Everything torch lives in
// this one translation unit: it takes ~20 s to compile.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>

#include "policy/rl.hpp"
#include "sim/error.hpp"

namespace placesim::policy {

namespace {

constexpr int kStatsColumns = 11;
// Masked logits: far below any clipped logit (|logit| <= C / T), finite so that log_softmax and
// the entropy stay NaN-free.
constexpr double kMasked = -1e9;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A uniform double in [0, 1) from the top 53 bits: the same on every standard library, unlike
// std::uniform_real_distribution.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

struct PolicyNetImpl : torch::nn::Module {
  PolicyNetImpl(int features, int hidden, int devices, AttentionScore score)
      : score_kind(score),
        embed(register_module("embed", torch::nn::Linear(features, hidden))),
        encoder(register_module("encoder",
                                torch::nn::LSTM(torch::nn::LSTMOptions(hidden, hidden)))),
        device_embed(register_module("device_embed", torch::nn::Embedding(devices + 1, hidden))),
        decoder(register_module("decoder", torch::nn::LSTMCell(2 * hidden, hidden))),
        combine(register_module("combine", torch::nn::Linear(2 * hidden, hidden))),
        out(register_module("out", torch::nn::Linear(hidden, devices))) {
    if (score == AttentionScore::Additive) {
      att_enc = register_module("att_enc",
                                torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)));
      att_dec = register_module("att_dec", torch::nn::Linear(hidden, hidden));
      att_v = register_module("att_v",
                              torch::nn::Linear(torch::nn::LinearOptions(hidden, 1).bias(false)));
    }
  }

  AttentionScore score_kind;
  torch::nn::Linear embed;
  torch::nn::LSTM encoder;
  torch::nn::Embedding device_embed;
  torch::nn::LSTMCell decoder;
  torch::nn::Linear combine;
  torch::nn::Linear out;
  torch::nn::Linear att_enc{nullptr}, att_dec{nullptr}, att_v{nullptr};
};
TORCH_MODULE(PolicyNet);

// The encoder's outputs and what the decoder needs of them, for one problem.
struct Encoded {
  torch::Tensor enc;        // [G, H]
  torch::Tensor enc_keys;   // [G, H] additive: W_enc·enc, precomputed once
  torch::Tensor h0, c0;     // [1, H]
};

}  // namespace

struct Trainer::Impl {
  PolicyProblem problem;
  RlOptions opt;
  RewardFn reward;
  double oom_reference_s;
  PolicyNet net{nullptr};
  std::unique_ptr<torch::optim::Adam> adam;
  torch::Tensor features;   // [G, F]
  torch::Tensor mask_bias;  // [G, D]: 0 allowed, kMasked not
  std::mt19937_64 rng;
  double baseline = 0.0;
  bool baseline_set = false;
  DevicesOfGroups best;
  double best_step_s = 0.0;
  std::vector<IterationStats> history;

  int groups() const { return problem.num_groups(); }
  int devices() const { return problem.num_devices; }

  Encoded encode() {
    Encoded e;
    auto x = torch::tanh(net->embed->forward(features)).unsqueeze(1);   // [G, 1, H]
    auto [outputs, state] = net->encoder->forward(x);
    e.enc = outputs.squeeze(1);
    e.h0 = std::get<0>(state).squeeze(0);
    e.c0 = std::get<1>(state).squeeze(0);
    if (opt.attention == AttentionScore::Additive) e.enc_keys = net->att_enc->forward(e.enc);
    return e;
  }

  // One decoder step for a batch: previous devices `prev` [K] (D = start token), state (h, c).
  // Returns tempered, clipped, masked logits [K, D] and updates the state.
  torch::Tensor decode_step(const Encoded& e, int t, const torch::Tensor& prev, torch::Tensor& h,
                            torch::Tensor& c) {
    const auto k = prev.size(0);
    auto input = torch::cat({net->device_embed->forward(prev), e.enc[t].expand({k, -1})}, 1);
    std::tie(h, c) = net->decoder->forward(input, std::make_tuple(h, c));
    torch::Tensor scores;
    if (opt.attention == AttentionScore::Dot) {
      scores = torch::matmul(h, e.enc.t());                                     // [K, G]
    } else {
      auto q = net->att_dec->forward(h).unsqueeze(1);                           // [K, 1, H]
      scores = net->att_v->forward(torch::tanh(e.enc_keys.unsqueeze(0) + q)).squeeze(2);
    }
    auto context = torch::matmul(torch::softmax(scores, 1), e.enc);             // [K, H]
    auto o = torch::tanh(net->combine->forward(torch::cat({h, context}, 1)));
    auto u = net->out->forward(o);
    auto logits = opt.logit_clip * torch::tanh(u) / opt.temperature;
    return logits + mask_bias[t];
  }

  // Decodes `k` placements step by step without autograd; samples with our own RNG over the
  // softmax probabilities (bit-reproducible), or takes the argmax when `rng_or_null` is null.
  std::vector<DevicesOfGroups> decode(int k, std::mt19937_64* rng_or_null) {
    torch::NoGradGuard no_grad;
    const Encoded e = encode();
    auto h = e.h0.expand({k, -1}).contiguous();
    auto c = e.c0.expand({k, -1}).contiguous();
    std::vector<DevicesOfGroups> out(static_cast<size_t>(k), DevicesOfGroups(groups()));
    auto prev = torch::full({k}, devices(), torch::kLong);
    const int d = devices();
    for (int t = 0; t < groups(); ++t) {
      auto logits = decode_step(e, t, prev, h, c);
      auto probs = torch::softmax(logits.to(torch::kDouble), 1).contiguous();
      const double* p = probs.data_ptr<double>();
      auto prev_acc = prev.accessor<std::int64_t, 1>();
      for (int s = 0; s < k; ++s) {
        const double* row = p + static_cast<std::ptrdiff_t>(s) * d;
        int pick = 0;
        if (rng_or_null == nullptr) {
          for (int j = 1; j < d; ++j)
            if (row[j] > row[pick]) pick = j;
        } else {
          double total = 0.0;
          for (int j = 0; j < d; ++j) total += row[j];
          const double u = uniform01(*rng_or_null) * total;
          double acc = 0.0;
          pick = -1;
          for (int j = 0; j < d; ++j) {
            if (row[j] <= 0.0) continue;
            acc += row[j];
            pick = j;
            if (u < acc) break;
          }
        }
        out[static_cast<size_t>(s)][static_cast<size_t>(t)] = pick;
        prev_acc[s] = pick;
      }
    }
    return out;
  }

  double effective_step_s(const Evaluation& e) const {
    if (!e.oom) return e.step_time_s;
    return opt.oom_penalty * oom_reference_s * (1.0 + std::max(0.0, e.overflow));
  }
};

namespace {
void check_options(const RlOptions& o, int groups, int devices) {
  auto bad = [](const std::string& key, const std::string& what) {
    throw sim::InputError("<rl options>", key, what);
  };
  if (o.hidden < 1) bad("hidden", "a positive size, got " + std::to_string(o.hidden));
  if (o.samples < 1) bad("samples", "at least 1 sample per iteration, got " + std::to_string(o.samples));
  if (!(o.temperature > 0)) bad("temperature", "a positive temperature");
  if (!(o.logit_clip > 0)) bad("logit_clip", "a positive clip constant");
  if (!(o.learning_rate > 0)) bad("learning_rate", "a positive learning rate");
  if (!(o.baseline_decay >= 0 && o.baseline_decay < 1)) bad("baseline_decay", "a decay in [0, 1)");
  if (groups < 1) bad("groups", "at least one group to place");
  if (devices < 1) bad("devices", "at least one device");
}
}  // namespace

Trainer::Trainer(PolicyProblem problem, RlOptions options, RewardFn reward, double oom_reference_s)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  check_options(options, problem.num_groups(), problem.num_devices);
  m.problem = std::move(problem);
  m.opt = options;
  m.reward = std::move(reward);
  m.oom_reference_s = oom_reference_s > 0 ? oom_reference_s : 1.0;
  const int g = m.groups(), d = m.devices();
  const int f = static_cast<int>(m.problem.features[0].size());
  torch::manual_seed(options.seed);
  m.net = PolicyNet(f, options.hidden, d, options.attention);
  m.adam = std::make_unique<torch::optim::Adam>(
      m.net->parameters(), torch::optim::AdamOptions(options.learning_rate));
  m.features = torch::zeros({g, f});
  auto fa = m.features.accessor<float, 2>();
  for (int i = 0; i < g; ++i) {
    if (static_cast<int>(m.problem.features[i].size()) != f)
      throw sim::InputError("<rl problem>", "features[" + std::to_string(i) + "]",
                            std::to_string(f) + " features like group 0");
    for (int j = 0; j < f; ++j) fa[i][j] = m.problem.features[i][j];
  }
  m.mask_bias = torch::zeros({g, d});
  if (!m.problem.allowed.empty()) {
    auto ma = m.mask_bias.accessor<float, 2>();
    for (int i = 0; i < g; ++i) {
      bool any = false;
      for (int j = 0; j < d; ++j) {
        const bool ok = m.problem.allowed[i][j];
        any = any || ok;
        if (!ok) ma[i][j] = static_cast<float>(kMasked);
      }
      if (!any)
        throw sim::InputError("<rl problem>", "allowed[" + std::to_string(i) + "]",
                              "at least one device the group may use, got none");
    }
  }
  m.rng.seed(options.seed);
}

Trainer::~Trainer() = default;

std::vector<DevicesOfGroups> Trainer::sample(int k) { return impl_->decode(k, &impl_->rng); }

DevicesOfGroups Trainer::greedy() const { return impl_->decode(1, nullptr)[0]; }

IterationStats Trainer::step() {
  auto& m = *impl_;
  const int k = m.opt.samples, g = m.groups(), d = m.devices();
  IterationStats st;
  st.iteration = static_cast<int>(m.history.size()) + 1;

  double t0 = now_s();
  const std::vector<DevicesOfGroups> placements = m.decode(k, &m.rng);
  st.sample_s = now_s() - t0;

  t0 = now_s();
  const std::vector<Evaluation> evals = m.reward(placements);
  st.reward_s = now_s() - t0;
  if (static_cast<int>(evals.size()) != k)
    throw std::logic_error("reward function returned " + std::to_string(evals.size()) +
                           " evaluations for " + std::to_string(k) + " placements");

  std::vector<double> rewards(static_cast<size_t>(k));
  double sum_ok = 0.0;
  int ok = 0;
  for (int s = 0; s < k; ++s) {
    const Evaluation& e = evals[static_cast<size_t>(s)];
    rewards[static_cast<size_t>(s)] = -std::sqrt(std::max(0.0, m.effective_step_s(e)));
    if (!e.oom) {
      sum_ok += e.step_time_s;
      ++ok;
      if (st.min_step_s == 0.0 || e.step_time_s < st.min_step_s) st.min_step_s = e.step_time_s;
      // Strictly better only: the earliest of equal placements stays, so the result does not
      // depend on anything but the sample order.
      if (m.best.empty() || e.step_time_s < m.best_step_s) {
        m.best = placements[static_cast<size_t>(s)];
        m.best_step_s = e.step_time_s;
      }
    }
  }
  double mean_reward = 0.0;
  for (double r : rewards) mean_reward += r;
  mean_reward /= k;
  if (!m.baseline_set) {
    m.baseline = mean_reward;
    m.baseline_set = true;
  }

  t0 = now_s();
  {
    const Encoded e = m.encode();
    auto h = e.h0.expand({k, -1}).contiguous();
    auto c = e.c0.expand({k, -1}).contiguous();
    auto actions = torch::empty({k, g}, torch::kLong);
    auto aa = actions.accessor<std::int64_t, 2>();
    for (int s = 0; s < k; ++s)
      for (int t = 0; t < g; ++t) aa[s][t] = placements[static_cast<size_t>(s)][static_cast<size_t>(t)];
    auto prev = torch::full({k}, d, torch::kLong);
    auto logp = torch::zeros({k});
    auto entropy = torch::zeros({k});
    // Teacher forcing: the K sampled sequences go through the decoder together, in one graph.
    for (int t = 0; t < g; ++t) {
      auto logits = m.decode_step(e, t, prev, h, c);
      auto lsm = torch::log_softmax(logits, 1);
      auto a = actions.select(1, t);
      logp = logp + lsm.gather(1, a.unsqueeze(1)).squeeze(1);
      entropy = entropy - (lsm.exp() * lsm).sum(1);
      prev = a;
    }
    auto adv = torch::empty({k}, torch::kFloat);
    auto ad = adv.accessor<float, 1>();
    double scale = 1.0;
    if (m.opt.normalize_advantage && k > 1) {
      double var = 0.0;
      for (double r : rewards) var += (r - mean_reward) * (r - mean_reward);
      const double sd = std::sqrt(var / (k - 1));
      // Identical rewards carry no signal; a floor keeps the step finite instead of exploding.
      scale = 1.0 / std::max(sd, 1e-3 * std::abs(mean_reward) + 1e-12);
    }
    for (int s = 0; s < k; ++s)
      ad[s] = static_cast<float>((rewards[static_cast<size_t>(s)] - m.baseline) * scale);
    auto mean_entropy = entropy.mean() / g;
    auto loss = -(adv * logp).mean() - m.opt.entropy_weight * mean_entropy;
    m.adam->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(m.net->parameters(), m.opt.grad_clip);
    m.adam->step();
    st.entropy = mean_entropy.item<double>();
  }
  st.grad_s = now_s() - t0;

  m.baseline = m.opt.baseline_decay * m.baseline + (1.0 - m.opt.baseline_decay) * mean_reward;
  st.baseline = m.baseline;
  st.mean_reward = mean_reward;
  st.mean_step_s = ok > 0 ? sum_ok / ok : 0.0;
  st.oom_fraction = static_cast<double>(k - ok) / k;
  st.best_step_s = m.best_step_s;
  m.history.push_back(st);
  return st;
}

const DevicesOfGroups& Trainer::best() const { return impl_->best; }
double Trainer::best_step_s() const { return impl_->best_step_s; }
int Trainer::iteration() const { return static_cast<int>(impl_->history.size()); }
const std::vector<IterationStats>& Trainer::history() const { return impl_->history; }
const RlOptions& Trainer::options() const { return impl_->opt; }

void Trainer::save(const std::string& path) const {
  const auto& m = *impl_;
  torch::serialize::OutputArchive root, model, optim;
  m.net->save(model);
  m.adam->save(optim);
  root.write("model", model);
  root.write("optim", optim);
  std::ostringstream rng_state;
  rng_state << m.rng;
  root.write("rng", c10::IValue(rng_state.str()));
  root.write("shape", torch::tensor({static_cast<std::int64_t>(m.groups()),
                                     static_cast<std::int64_t>(m.devices()),
                                     static_cast<std::int64_t>(m.opt.hidden),
                                     static_cast<std::int64_t>(m.features.size(1))}));
  root.write("baseline", torch::tensor({m.baseline, m.baseline_set ? 1.0 : 0.0},
                                       torch::kDouble));
  std::vector<std::int64_t> best(m.best.begin(), m.best.end());
  root.write("best", torch::tensor(best, torch::kLong));
  root.write("best_step_s", torch::tensor({m.best_step_s}, torch::kDouble));
  auto hist = torch::zeros({static_cast<std::int64_t>(m.history.size()), kStatsColumns},
                           torch::kDouble);
  auto ha = hist.accessor<double, 2>();
  for (size_t i = 0; i < m.history.size(); ++i) {
    const IterationStats& s = m.history[i];
    const double row[kStatsColumns] = {static_cast<double>(s.iteration), s.best_step_s,
                                       s.mean_step_s, s.min_step_s, s.oom_fraction,
                                       s.mean_reward, s.baseline, s.entropy, s.sample_s,
                                       s.reward_s, s.grad_s};
    for (int j = 0; j < kStatsColumns; ++j) ha[static_cast<std::int64_t>(i)][j] = row[j];
  }
  root.write("history", hist);
  const std::string tmp = path + ".tmp";
  root.save_to(tmp);
  std::filesystem::rename(tmp, path);
}

void Trainer::load(const std::string& path) {
  auto& m = *impl_;
  if (!std::filesystem::exists(path))
    throw sim::InputError(path, "", "a checkpoint written by `placesim train`, got no such file");
  torch::serialize::InputArchive root, model, optim;
  try {
    root.load_from(path);
    auto shape = torch::Tensor();
    root.read("shape", shape);
    const auto sa = shape.accessor<std::int64_t, 1>();
    if (shape.size(0) != 4 || sa[0] != m.groups() || sa[1] != m.devices() ||
        sa[2] != m.opt.hidden || sa[3] != m.features.size(1)) {
      std::ostringstream os;
      os << "a checkpoint for " << m.groups() << " groups, " << m.devices() << " devices, hidden "
         << m.opt.hidden << ", got one for " << sa[0] << " groups, " << sa[1]
         << " devices, hidden " << sa[2] << " (another graph, cluster or --hidden?)";
      throw sim::InputError(path, "shape", os.str());
    }
    root.read("model", model);
    root.read("optim", optim);
    m.net->load(model);
    m.adam->load(optim);
    c10::IValue rng_state;
    root.read("rng", rng_state);
    std::istringstream is(rng_state.toStringRef());
    is >> m.rng;
    torch::Tensor baseline, best, best_step, hist;
    root.read("baseline", baseline);
    root.read("best", best);
    root.read("best_step_s", best_step);
    root.read("history", hist);
    m.baseline = baseline[0].item<double>();
    m.baseline_set = baseline[1].item<double>() != 0.0;
    m.best.assign(best.data_ptr<std::int64_t>(), best.data_ptr<std::int64_t>() + best.numel());
    m.best_step_s = best_step[0].item<double>();
    m.history.clear();
    auto ha = hist.accessor<double, 2>();
    for (std::int64_t i = 0; i < hist.size(0); ++i) {
      IterationStats s;
      s.iteration = static_cast<int>(ha[i][0]);
      s.best_step_s = ha[i][1];
      s.mean_step_s = ha[i][2];
      s.min_step_s = ha[i][3];
      s.oom_fraction = ha[i][4];
      s.mean_reward = ha[i][5];
      s.baseline = ha[i][6];
      s.entropy = ha[i][7];
      s.sample_s = ha[i][8];
      s.reward_s = ha[i][9];
      s.grad_s = ha[i][10];
      m.history.push_back(s);
    }
  } catch (const sim::InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw sim::InputError(path, "", "a checkpoint written by `placesim train`, got: " + what);
  }
}

}  // namespace placesim::policy

// The seq2seq placement policy and its REINFORCE trainer (LibTorch). Everything torch lives in
// this one translation unit: it takes ~20 s to compile.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <torch/torch.h>

#include "policy/comm/comm.hpp"
#include "policy/comm/shards.hpp"
#include "policy/rl/checkpoint_file.hpp"
#include "policy/rl/internal/rl_common.hpp"
#include "policy/rl/internal/rl_lstm.hpp"
#include "policy/rl/rl.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::policy {

namespace {

constexpr int kStatsColumns = 11;
// Masked logits: far below any clipped logit (|logit| <= C / T), finite so that log_softmax and
// the entropy stay NaN-free.
constexpr double kMasked = -1e9;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
        encoder(
            register_module("encoder", torch::nn::LSTM(torch::nn::LSTMOptions(hidden, hidden)))),
        device_embed(register_module("device_embed", torch::nn::Embedding(devices + 1, hidden))),
        decoder(register_module("decoder", torch::nn::LSTMCell(2 * hidden, hidden))),
        combine(register_module("combine", torch::nn::Linear(2 * hidden, hidden))),
        out(register_module("out", torch::nn::Linear(hidden, devices))) {
    if (score == AttentionScore::Additive) {
      att_enc = register_module(
          "att_enc", torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)));
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
  torch::Tensor enc;       // [G, H]
  torch::Tensor enc_keys;  // [G, H] additive: W_enc·enc, precomputed once
  // The decoder LSTM's input projection W_ih·[embed(prev); enc[t]] + b, split in its two halves:
  // enc[t]'s is the same for every sample of a step and embed(prev) takes only D + 1 values, so
  // both are precomputed once, and a step adds two rows instead of multiplying [K, 2H] by W_ih.
  torch::Tensor in_enc;   // [G, 4H] W_ih[:, H:]·enc[t] + b_ih + b_hh
  torch::Tensor in_prev;  // [D + 1, 4H] W_ih[:, :H]·embed(d)
  torch::Tensor h0, c0;   // [1, H]
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
  const Comm* comm = nullptr;     // several ranks: data-parallel (policy/comm/shards.hpp)
  std::uint64_t sample_seed = 0;  // per-sample engines: sample_seed(this, iteration, sample)
  double baseline = 0.0;
  bool baseline_set = false;
  DevicesOfGroups best;
  double best_step_s = 0.0;
  std::vector<IterationStats> history;

  int groups() const { return problem.num_groups(); }
  int devices() const { return problem.num_devices; }

  Encoded encode() {
    Encoded e;
    // The encoder LSTM (torch::nn::LSTM's weights, so checkpoints keep their layout) over the
    // embedded features, batch 1, its recurrence by LstmRecurrence.
    auto x = torch::tanh(net->embed->forward(features));  // [G, H]
    const auto w = net->encoder->named_parameters();
    auto xin =
        torch::addmm(w["bias_ih_l0"] + w["bias_hh_l0"], x, w["weight_ih_l0"].t()).unsqueeze(1);
    auto zero = torch::zeros({1, x.size(1)});
    auto out = LstmRecurrence::apply(xin, zero, zero, w["weight_hh_l0"]);
    e.enc = out[0].squeeze(1);                     // [G, H]
    e.h0 = e.enc.narrow(0, e.enc.size(0) - 1, 1);  // [1, H]
    e.c0 = out[1];
    attach_decoder_inputs(e);
    return e;
  }

  // What the decoder precomputes from the encoder's outputs e.enc (see Encoded).
  void attach_decoder_inputs(Encoded& e) {
    if (opt.attention == AttentionScore::Additive) e.enc_keys = net->att_enc->forward(e.enc);
    const auto& cell = net->decoder;
    const auto hidden = e.enc.size(1);
    // Both halves in one product of [[embed, 0], [0, enc]] by W_ih^T: W_ih's gradient is then
    // one product too, with no [4H, 2H] scatter of each half's.
    const auto& emb = net->device_embed->weight;  // [D + 1, H]
    const auto rows = emb.size(0), g = e.enc.size(0);
    auto block = torch::cat({torch::cat({emb, torch::zeros({rows, hidden})}, 1),
                             torch::cat({torch::zeros({g, hidden}), e.enc}, 1)},
                            0);
    auto proj = torch::mm(block, cell->weight_ih.t());  // [D + 1 + G, 4H]
    e.in_prev = proj.narrow(0, 0, rows);
    e.in_enc = proj.narrow(0, rows, g) + (cell->bias_ih + cell->bias_hh);
  }

  // One step of the decoder LSTM on the precomputed input projection `x` [K, 4H]: the
  // recurrence the gradient pass runs (LstmRecurrence), one step long, so that sampling and the
  // teacher-forced pass do the same arithmetic; updates (h, c).
  void lstm_step(const torch::Tensor& x, torch::Tensor& h, torch::Tensor& c) {
    auto out = LstmRecurrence::apply(x.unsqueeze(0), h, c, net->decoder->weight_hh);
    h = out[0][0];
    c = out[1];
  }

  // One decoder step for a batch: previous devices `prev` [K] (D = start token), state (h, c).
  // Returns tempered, clipped, masked logits [K, D] and updates the state.
  torch::Tensor decode_step(const Encoded& e, int t, const torch::Tensor& prev, torch::Tensor& h,
                            torch::Tensor& c) {
    lstm_step(e.in_prev.index_select(0, prev) + e.in_enc[t], h, c);
    torch::Tensor scores;
    if (opt.attention == AttentionScore::Dot) {
      scores = torch::matmul(h, e.enc.t());  // [K, G]
    } else {
      auto q = net->att_dec->forward(h).unsqueeze(1);  // [K, 1, H]
      scores = net->att_v->forward(torch::tanh(e.enc_keys.unsqueeze(0) + q)).squeeze(2);
    }
    auto context = torch::matmul(torch::softmax(scores, 1), e.enc);  // [K, H]
    auto o = torch::tanh(net->combine->forward(torch::cat({h, context}, 1)));
    auto u = net->out->forward(o);
    auto logits = opt.logit_clip * torch::tanh(u) / opt.temperature;
    return logits + mask_bias[t];
  }

  // Decodes `k` placements step by step without autograd; samples with our own RNG over the
  // softmax probabilities (bit-reproducible), or takes the argmax when `rng_or_null` is null.
  // With `per_sample`, sample s draws from its own engine (*per_sample)[s] instead.
  std::vector<DevicesOfGroups> decode(int k, std::mt19937_64* rng_or_null,
                                      std::vector<std::mt19937_64>* per_sample = nullptr) {
    torch::NoGradGuard no_grad;
    return decode_from(encode(), k, rng_or_null, per_sample);
  }

  // decode() on encoder outputs `e`.
  std::vector<DevicesOfGroups> decode_from(const Encoded& e, int k, std::mt19937_64* rng_or_null,
                                           std::vector<std::mt19937_64>* per_sample) {
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
        std::mt19937_64* rng =
            per_sample != nullptr ? &(*per_sample)[static_cast<size_t>(s)] : rng_or_null;
        if (rng == nullptr) {
          for (int j = 1; j < d; ++j)
            if (row[j] > row[pick]) pick = j;
        } else {
          double total = 0.0;
          for (int j = 0; j < d; ++j) total += row[j];
          const double u = uniform01(*rng) * total;
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

  // Each sample's log-probability of its placement and its policy entropy, both summed over the
  // decisions, with autograd's record: decode_step's arithmetic teacher-forced on `actions`
  // [n, G], batched over the G steps wherever no step needs the one before. Only the decoder
  // LSTM's recurrence runs step by step; the attention, the output layers and the softmax run
  // once on [G, n, .] tensors, so each of their weights gets its gradient from one matrix
  // product instead of G small ones (a shard's step-by-step pass cost ~95 ms on nmt whether it
  // held 16 samples or 4).
  struct Scored {
    torch::Tensor logp;     // [n]
    torch::Tensor entropy;  // [n]
  };
  Scored teacher_forced(const Encoded& e, const torch::Tensor& actions) {
    const auto n = actions.size(0), g = actions.size(1);
    // The device each step is told came before it: the start token D, then the actions.
    auto prev =
        torch::cat({torch::full({n, 1}, devices(), torch::kLong), actions.narrow(1, 0, g - 1)}, 1);
    auto x = (e.in_prev.index_select(0, prev.t().reshape({-1})).view({g, n, -1}) +
              e.in_enc.unsqueeze(1));  // [G, n, 4H]
    auto hs = LstmRecurrence::apply(x, e.h0.expand({n, -1}), e.c0.expand({n, -1}),
                                    net->decoder->weight_hh)[0];  // [G, n, H]
    torch::Tensor scores;                                         // [G, n, G]
    if (opt.attention == AttentionScore::Dot) {
      scores = torch::matmul(hs, e.enc.t());
    } else {
      auto q = net->att_dec->forward(hs).unsqueeze(2);  // [G, n, 1, H]
      scores = net->att_v->forward(torch::tanh(e.enc_keys + q)).squeeze(3);
    }
    auto context = torch::matmul(torch::softmax(scores, 2), e.enc);  // [G, n, H]
    auto o = torch::tanh(net->combine->forward(torch::cat({hs, context}, 2)));
    auto u = net->out->forward(o);  // [G, n, D]
    auto logits = opt.logit_clip * torch::tanh(u) / opt.temperature + mask_bias.unsqueeze(1);
    auto lsm = torch::log_softmax(logits, 2);
    Scored r;
    r.logp = lsm.gather(2, actions.t().unsqueeze(2)).squeeze(2).sum(0);
    r.entropy = -(lsm.exp() * lsm).sum(2).sum(0);
    return r;
  }

  // The problem's features and device mask as tensors; checks their shapes.
  void install_problem_tensors() {
    const int g = groups(), d = devices();
    const int f = static_cast<int>(problem.features[0].size());
    features = torch::zeros({g, f});
    auto fa = features.accessor<float, 2>();
    for (int i = 0; i < g; ++i) {
      if (static_cast<int>(problem.features[i].size()) != f)
        throw sim::InputError("<rl problem>", "features[" + std::to_string(i) + "]",
                              std::to_string(f) + " features like group 0");
      for (int j = 0; j < f; ++j) fa[i][j] = problem.features[i][j];
    }
    mask_bias = torch::zeros({g, d});
    if (!problem.allowed.empty()) {
      auto ma = mask_bias.accessor<float, 2>();
      for (int i = 0; i < g; ++i) {
        bool any = false;
        for (int j = 0; j < d; ++j) {
          const bool ok = problem.allowed[i][j];
          any = any || ok;
          if (!ok) ma[i][j] = static_cast<float>(kMasked);
        }
        if (!any)
          throw sim::InputError("<rl problem>", "allowed[" + std::to_string(i) + "]",
                                "at least one device the group may use, got none");
      }
    }
  }

  // The encoder and what the decoder precomputes from it run once, with autograd's record; their
  // outputs become leaves, so each shard's decoder pass yields that shard's gradient alone. The
  // shard gradients are summed in shard order across ranks, then the sum flows back through the
  // encoder. (The leaves' gradients are smaller than the weights' they stand for: the decoder
  // LSTM's input projection [G + D + 1, 4H] against W_ih [4H, 2H]; on nmt what travels between
  // ranks fell from 939k to 482k floats.)
  struct Leaves {
    Encoded e;                                 // the leaves
    std::vector<torch::Tensor> roots, leaves;  // encoder outputs and their leaves, paired
  };
  Leaves encode_as_leaves() {
    const Encoded full = encode();
    auto leaf = [](const torch::Tensor& t) {
      return t.defined() ? t.detach().requires_grad_() : t;
    };
    Leaves l;
    l.e.enc = leaf(full.enc);
    l.e.enc_keys = leaf(full.enc_keys);
    l.e.in_enc = leaf(full.in_enc);
    l.e.in_prev = leaf(full.in_prev);
    l.e.h0 = leaf(full.h0);
    l.e.c0 = leaf(full.c0);
    l.roots = {full.enc, full.in_enc, full.in_prev, full.h0, full.c0};
    l.leaves = {l.e.enc, l.e.in_enc, l.e.in_prev, l.e.h0, l.e.c0};
    if (full.enc_keys.defined()) {
      l.roots.push_back(full.enc_keys);
      l.leaves.push_back(l.e.enc_keys);
    }
    return l;
  }

  // This rank's shards' placements, each shard decoded as one batch, each sample from its own
  // engine seeded by (seed, iteration, sample).
  std::vector<DevicesOfGroups> sample_shards(const Encoded& e, const ShardPlan& plan,
                                             int iteration) {
    torch::NoGradGuard no_grad;
    Encoded plain;
    plain.enc = e.enc.detach();
    plain.enc_keys = e.enc_keys.defined() ? e.enc_keys.detach() : torch::Tensor();
    plain.in_enc = e.in_enc.detach();
    plain.in_prev = e.in_prev.detach();
    plain.h0 = e.h0.detach();
    plain.c0 = e.c0.detach();
    std::vector<DevicesOfGroups> placements;
    for (int sh = plan.first_shard(); sh < plan.end_shard(); ++sh) {
      const auto [begin, end] = plan.samples_of(sh);
      std::vector<std::mt19937_64> engines;
      for (int s = begin; s < end; ++s)
        engines.emplace_back(policy::sample_seed(this->sample_seed, iteration, s));
      for (auto& p : decode_from(plain, end - begin, nullptr, &engines))
        placements.push_back(std::move(p));
    }
    return placements;
  }

  // One shard's gradient of the REINFORCE loss (flattened over the inputs its loss reaches, which
  // `reached` records) and its summed entropy.
  std::vector<float> shard_gradient(const Encoded& e, const std::vector<torch::Tensor>& inputs,
                                    const std::vector<DevicesOfGroups>& placements,
                                    const std::vector<double>& rewards, double scale, int begin,
                                    int end, std::vector<bool>& reached, double& entropy) {
    const int n = end - begin, g = groups(), k = opt.samples;
    auto actions = torch::empty({n, g}, torch::kLong);
    auto aa = actions.accessor<std::int64_t, 2>();
    for (int s = 0; s < n; ++s)
      for (int t = 0; t < g; ++t)
        aa[s][t] = placements[static_cast<size_t>(begin + s)][static_cast<size_t>(t)];
    const Scored tr = teacher_forced(e, actions);
    auto adv = torch::empty({n}, torch::kFloat);
    auto ad = adv.accessor<float, 1>();
    for (int s = 0; s < n; ++s)
      ad[s] = static_cast<float>((rewards[static_cast<size_t>(begin + s)] - baseline) * scale);
    auto entropy_sum = tr.entropy.sum();
    auto loss = -(adv * tr.logp).sum() / k - opt.entropy_weight * entropy_sum / k;
    const auto grads = torch::autograd::grad({loss}, inputs, {}, false, false, true);
    std::vector<torch::Tensor> flat;
    for (size_t i = 0; i < inputs.size(); ++i) {
      reached[i] = grads[i].defined();
      if (reached[i]) flat.push_back(grads[i].reshape({-1}));
    }
    auto all = torch::cat(flat).contiguous();
    entropy = entropy_sum.item<double>();
    return {all.data_ptr<float>(), all.data_ptr<float>() + all.numel()};
  }

  // The shards' gradients summed in shard order across ranks, set on the weights and the leaves,
  // through the encoder, clipped, one Adam step. Returns the mean entropy per decision.
  double update(const Leaves& l, const ShardPlan& plan,
                const std::vector<DevicesOfGroups>& placements, const SampleScores& sc) {
    const double scale = advantage_scale(sc.rewards, sc.mean_reward, opt.normalize_advantage);
    std::vector<torch::Tensor> inputs = net->parameters();
    const size_t num_params = inputs.size();
    inputs.insert(inputs.end(), l.leaves.begin(), l.leaves.end());
    std::vector<std::vector<float>> shard_grads;
    std::vector<std::vector<double>> shard_entropy;
    // Which inputs a shard's loss reaches: the same for every shard on every rank (the encoder's
    // and the decoder's input weights never are: their share comes below, through the leaves), so
    // only those travel between ranks.
    std::vector<bool> reached(inputs.size(), false);
    for (int sh = plan.first_shard(); sh < plan.end_shard(); ++sh) {
      const auto [begin, end] = plan.samples_of(sh);
      double entropy = 0.0;
      shard_grads.push_back(
          shard_gradient(l.e, inputs, placements, sc.rewards, scale, begin, end, reached, entropy));
      shard_entropy.push_back({entropy});
    }
    const std::vector<float> sum = sum_shards_fixed_order(comm, shard_grads);
    const double entropy_total = sum_shards_fixed_order(comm, shard_entropy).at(0);
    std::vector<torch::Tensor> leaf_grads;
    std::int64_t at = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      torch::Tensor gi = torch::zeros(inputs[i].sizes());
      if (reached[i]) {
        gi = torch::from_blob(const_cast<float*>(sum.data()) + at, inputs[i].sizes()).clone();
        at += inputs[i].numel();
      }
      if (i < num_params)
        inputs[i].mutable_grad() = gi;
      else
        leaf_grads.push_back(gi);
    }
    // Adds the encoder's and the precomputed inputs' share to the gradients set above (zeros
    // there: no shard reached those weights).
    torch::autograd::backward(l.roots, leaf_grads);
    torch::nn::utils::clip_grad_norm_(net->parameters(), opt.grad_clip);
    adam->step();
    return entropy_total / (static_cast<double>(opt.samples) * groups());
  }
};

namespace {
void check_options(const RlOptions& o, int groups, int devices) {
  auto bad = [](const std::string& key, const std::string& what) {
    throw sim::InputError("<rl options>", key, what);
  };
  if (o.hidden < 1) bad("hidden", "a positive size, got " + std::to_string(o.hidden));
  if (o.samples < 1)
    bad("samples", "at least 1 sample per iteration, got " + std::to_string(o.samples));
  if (!(o.temperature > 0)) bad("temperature", "a positive temperature");
  if (!(o.logit_clip > 0)) bad("logit_clip", "a positive clip constant");
  if (!(o.learning_rate > 0)) bad("learning_rate", "a positive learning rate");
  if (!(o.baseline_decay >= 0 && o.baseline_decay < 1)) bad("baseline_decay", "a decay in [0, 1)");
  if (groups < 1) bad("groups", "at least one group to place");
  if (devices < 1) bad("devices", "at least one device");
}
}  // namespace

Trainer::Trainer(PolicyProblem problem, RlOptions options, RewardFn reward, double oom_reference_s,
                 const Comm* comm)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  check_options(options, problem.num_groups(), problem.num_devices);
  m.comm = comm;
  m.sample_seed = options.seed;
  (void)ShardPlan(options.samples, options.shards, comm ? comm->rank() : 0,
                  comm ? comm->size() : 1);
  m.problem = std::move(problem);
  m.opt = options;
  m.reward = std::move(reward);
  m.oom_reference_s = oom_reference_s > 0 ? oom_reference_s : 1.0;
  const int d = m.devices();
  const int f = static_cast<int>(m.problem.features[0].size());
  {
    const std::lock_guard<std::mutex> lock(torch_init_mutex());  // rl_common.hpp
    torch::manual_seed(options.seed);
    m.net = PolicyNet(f, options.hidden, d, options.attention);
  }
  m.adam = std::make_unique<torch::optim::Adam>(m.net->parameters(),
                                                torch::optim::AdamOptions(options.learning_rate));
  m.install_problem_tensors();
  m.rng.seed(options.seed);
}

void Trainer::set_problem(PolicyProblem problem, RewardFn reward, double oom_reference_s) {
  auto& m = *impl_;
  check_options(m.opt, problem.num_groups(), problem.num_devices);
  if (problem.num_devices != m.devices() ||
      static_cast<std::int64_t>(problem.features[0].size()) != m.features.size(1))
    throw sim::InputError("<rl problem>", "features",
                          std::to_string(m.devices()) + " devices and " +
                              std::to_string(m.features.size(1)) +
                              " features per group like the "
                              "trainer's first problem, got " +
                              std::to_string(problem.num_devices) + " and " +
                              std::to_string(problem.features[0].size()));
  m.problem = std::move(problem);
  m.reward = std::move(reward);
  m.oom_reference_s = oom_reference_s > 0 ? oom_reference_s : 1.0;
  m.install_problem_tensors();
  // Another graph's rewards live on another scale: its baseline starts afresh.
  m.baseline_set = false;
  m.best.clear();
  m.best_step_s = 0.0;
}

Trainer::~Trainer() = default;

std::vector<DevicesOfGroups> Trainer::sample(int k) {
  return impl_->decode(k, &impl_->rng);
}

DevicesOfGroups Trainer::greedy() const {
  return impl_->decode(1, nullptr)[0];
}

IterationStats Trainer::step() {
  auto& m = *impl_;
  IterationStats st;
  st.iteration = static_cast<int>(m.history.size()) + 1;
  // Data-parallel (policy/comm/shards.hpp): this rank draws its shards' samples, each shard as
  // one batch and each sample from its own seed, so the bits do not depend on the rank count.
  const ShardPlan plan(m.opt.samples, m.opt.shards, m.comm ? m.comm->rank() : 0,
                       m.comm ? m.comm->size() : 1);
  double t0 = now_s();
  const Impl::Leaves leaves = m.encode_as_leaves();
  // Every rank's samples after the exchange below (each rank draws only its shards').
  std::vector<DevicesOfGroups> placements = m.sample_shards(leaves.e, plan, st.iteration);
  st.sample_s = now_s() - t0;

  t0 = now_s();
  std::vector<Evaluation> evals = m.reward(placements);
  if (evals.size() != placements.size())
    throw std::logic_error("reward function returned " + std::to_string(evals.size()) +
                           " evaluations for " + std::to_string(placements.size()) + " placements");
  exchange_samples(m.comm, placements, evals);
  st.reward_s = now_s() - t0;

  const SampleScores sc = score_samples(placements, evals, m.opt, m.oom_reference_s, st, m.best,
                                        m.best_step_s, m.baseline, m.baseline_set);
  t0 = now_s();
  st.entropy = m.update(leaves, plan, placements, sc);
  st.grad_s = now_s() - t0;

  finish_iteration(sc, m.opt, m.best_step_s, m.baseline, st, m.history);
  return st;
}

const DevicesOfGroups& Trainer::best() const {
  return impl_->best;
}
double Trainer::best_step_s() const {
  return impl_->best_step_s;
}
int Trainer::iteration() const {
  return static_cast<int>(impl_->history.size());
}
const std::vector<IterationStats>& Trainer::history() const {
  return impl_->history;
}
const RlOptions& Trainer::options() const {
  return impl_->opt;
}

namespace {
// The training options a resumed run must share with the run that wrote the checkpoint, with the
// flag that sets each (`placesim train`). Sampling, the gradient and the RNG streams depend on all.
struct OptionColumn {
  const char* flag;
  double (*get)(const RlOptions&);
};
constexpr OptionColumn kOptionColumns[] = {
    {"--lr", [](const RlOptions& o) { return o.learning_rate; }},
    {"--samples", [](const RlOptions& o) { return static_cast<double>(o.samples); }},
    {"--seed", [](const RlOptions& o) { return static_cast<double>(o.seed); }},
    {"--entropy", [](const RlOptions& o) { return o.entropy_weight; }},
    {"--temperature", [](const RlOptions& o) { return o.temperature; }},
    {"--attention (0 dot, 1 additive)",
     [](const RlOptions& o) { return o.attention == AttentionScore::Dot ? 0.0 : 1.0; }},
    {"--shards", [](const RlOptions& o) { return static_cast<double>(o.shards); }},
    {"logit_clip", [](const RlOptions& o) { return o.logit_clip; }},
    {"grad_clip", [](const RlOptions& o) { return o.grad_clip; }},
    {"baseline_decay", [](const RlOptions& o) { return o.baseline_decay; }},
    {"oom_penalty", [](const RlOptions& o) { return o.oom_penalty; }},
    {"normalize_advantage", [](const RlOptions& o) { return o.normalize_advantage ? 1.0 : 0.0; }},
};

torch::Tensor options_tensor(const RlOptions& o) {
  std::vector<double> v;
  for (const auto& c : kOptionColumns) v.push_back(c.get(o));
  return torch::tensor(v, torch::kDouble);
}

// Checkpoints written before the options were recorded have no "options" entry: accepted.
void check_options_match(torch::serialize::InputArchive& root, const RlOptions& now,
                         const std::string& path) {
  torch::Tensor saved;
  if (!root.try_read("options", saved)) return;
  const auto n = std::min<std::int64_t>(saved.numel(), std::size(kOptionColumns));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto& c = kOptionColumns[i];
    const double was = saved[i].item<double>(), is = c.get(now);
    if (was != is) {
      std::ostringstream os;
      os << std::setprecision(10) << c.flag << ' ' << was
         << " as the checkpoint was written with, got " << c.flag << ' ' << is;
      throw sim::InputError(path, c.flag, os.str());
    }
  }
}

// What a load throws for an error LibTorch (or the standard library) raised while reading the
// checkpoint at `path`: its message's first line (LibTorch appends a multi-line backtrace).
sim::InputError checkpoint_error(const std::string& path, const std::exception& e) {
  const std::string what = e.what();
  return sim::InputError(
      path, "",
      "a checkpoint written by `placesim train`, got: " + what.substr(0, what.find('\n')));
}

// LibTorch's archive out of a verified checkpoint file (policy/checkpoint_file.hpp): a damaged
// or foreign file never reaches LibTorch's reader.
void load_archive(torch::serialize::InputArchive& root, const std::string& path) {
  if (!std::filesystem::exists(path))
    throw sim::InputError(path, "", "a checkpoint written by `placesim train`, got no such file");
  std::istringstream is(unwrap_checkpoint(sim::read_text_file(path), path));
  root.load_from(is);
}

// A checkpoint entry of the expected dtype and shape (empty `sizes` entries match any extent).
void check_tensor(const torch::Tensor& t, const std::string& path, const std::string& key,
                  torch::ScalarType dtype, std::vector<std::int64_t> sizes) {
  bool ok = t.defined() && t.scalar_type() == dtype &&
            t.dim() == static_cast<std::int64_t>(sizes.size()) && t.device().is_cpu();
  for (std::size_t d = 0; ok && d < sizes.size(); ++d)
    ok = sizes[d] < 0 || t.size(static_cast<std::int64_t>(d)) == sizes[d];
  if (!ok) {
    std::ostringstream want, got;
    want << c10::toString(dtype) << " [";
    for (std::size_t d = 0; d < sizes.size(); ++d)
      want << (d ? ", " : "") << (sizes[d] < 0 ? std::string("n") : std::to_string(sizes[d]));
    want << "]";
    if (t.defined())
      got << t.scalar_type() << " " << t.sizes();
    else
      got << "none";
    throw sim::InputError(
        path, key, "a tensor " + want.str() + " as `placesim train` writes it, got " + got.str());
  }
}

// After Module::load: every parameter still has the shape and dtype it had before (LibTorch's
// load replaces tensors wholesale, so a foreign archive would otherwise fail later, mid-step).
void check_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& before,
                      const torch::nn::Module& net, const std::string& path) {
  const auto after = net.named_parameters(true);
  for (const auto& [name, t] : before) {
    const torch::Tensor* now = after.find(name);
    if (now == nullptr || now->sizes() != t.sizes() || now->scalar_type() != t.scalar_type() ||
        !torch::isfinite(*now).all().item<bool>()) {
      std::ostringstream os;
      os << "model." << name;
      throw sim::InputError(path, os.str(),
                            "finite weights of shape " + c10::str(t.sizes()) + ", got " +
                                (now ? c10::str(now->sizes()) : std::string("none")));
    }
  }
}

std::vector<std::pair<std::string, torch::Tensor>> parameter_shapes(const torch::nn::Module& net) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : net.named_parameters(true))
    out.emplace_back(item.key(), torch::empty_like(item.value()));
  return out;
}
}  // namespace

std::vector<std::string> checkpoint_vocab(const std::string& path) {
  torch::serialize::InputArchive root;
  c10::IValue v;
  try {
    load_archive(root, path);
    if (!root.try_read("vocab", v)) return {};
    if (!v.isString())
      throw sim::InputError(path, "vocab", "op-type names, one a line, got another kind of entry");
  } catch (const sim::InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw checkpoint_error(path, e);
  }
  std::vector<std::string> out;
  std::istringstream is(v.toStringRef());
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

void Trainer::load_weights(const std::string& path) {
  auto& m = *impl_;
  torch::serialize::InputArchive root, model;
  try {
    load_archive(root, path);
    torch::Tensor shape;
    root.read("shape", shape);
    check_tensor(shape, path, "shape", torch::kLong, {4});
    const auto sa = shape.accessor<std::int64_t, 1>();
    if (shape.size(0) != 4 || sa[1] != m.devices() || sa[2] != m.opt.hidden ||
        sa[3] != m.features.size(1)) {
      std::ostringstream os;
      os << "a policy for " << m.devices() << " devices, hidden " << m.opt.hidden << ", "
         << m.features.size(1) << " features per group, got one for " << sa[1]
         << " devices, hidden " << sa[2] << ", " << sa[3]
         << " features (another cluster, --hidden or op-type vocabulary?)";
      throw sim::InputError(path, "shape", os.str());
    }
    root.read("model", model);
    const auto before = parameter_shapes(*m.net);
    m.net->load(model);
    check_parameters(before, *m.net, path);
  } catch (const sim::InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw checkpoint_error(path, e);
  }
}

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
  root.write("sample_seed",
             torch::tensor({static_cast<std::int64_t>(m.sample_seed)}, torch::kLong));
  root.write("shape", torch::tensor({static_cast<std::int64_t>(m.groups()),
                                     static_cast<std::int64_t>(m.devices()),
                                     static_cast<std::int64_t>(m.opt.hidden),
                                     static_cast<std::int64_t>(m.features.size(1))}));
  root.write("options", options_tensor(m.opt));
  root.write("features", m.features);
  std::string vocab;
  for (const auto& t : m.problem.vocab) vocab += t + "\n";
  root.write("vocab", c10::IValue(vocab));
  root.write("baseline", torch::tensor({m.baseline, m.baseline_set ? 1.0 : 0.0}, torch::kDouble));
  std::vector<std::int64_t> best(m.best.begin(), m.best.end());
  root.write("best", torch::tensor(best, torch::kLong));
  root.write("best_step_s", torch::tensor({m.best_step_s}, torch::kDouble));
  auto hist =
      torch::zeros({static_cast<std::int64_t>(m.history.size()), kStatsColumns}, torch::kDouble);
  auto ha = hist.accessor<double, 2>();
  for (size_t i = 0; i < m.history.size(); ++i) {
    const IterationStats& s = m.history[i];
    const double row[kStatsColumns] = {static_cast<double>(s.iteration),
                                       s.best_step_s,
                                       s.mean_step_s,
                                       s.min_step_s,
                                       s.oom_fraction,
                                       s.mean_reward,
                                       s.baseline,
                                       s.entropy,
                                       s.sample_s,
                                       s.reward_s,
                                       s.grad_s};
    for (int j = 0; j < kStatsColumns; ++j) ha[static_cast<std::int64_t>(i)][j] = row[j];
  }
  root.write("history", hist);
  std::ostringstream archive;
  root.save_to(archive);
  // Header with size and checksum, written to "<path>.tmp.<pid>" and renamed.
  sim::write_file_atomic(path, wrap_checkpoint(archive.str()));
}

void Trainer::load(const std::string& path) {
  auto& m = *impl_;
  torch::serialize::InputArchive root, model, optim;
  try {
    load_archive(root, path);
    auto shape = torch::Tensor();
    root.read("shape", shape);
    check_tensor(shape, path, "shape", torch::kLong, {4});
    const auto sa = shape.accessor<std::int64_t, 1>();
    if (shape.size(0) != 4 || sa[0] != m.groups() || sa[1] != m.devices() ||
        sa[2] != m.opt.hidden || sa[3] != m.features.size(1)) {
      std::ostringstream os;
      os << "a checkpoint for " << m.groups() << " groups, " << m.devices() << " devices, hidden "
         << m.opt.hidden << ", got one for " << sa[0] << " groups, " << sa[1] << " devices, hidden "
         << sa[2] << " (another graph, cluster or --hidden?)";
      throw sim::InputError(path, "shape", os.str());
    }
    check_options_match(root, m.opt, path);
    // Same sizes, other groups (another --grouper, graph options or cost model): the policy's
    // state would not mean the same. Checkpoints from before this check lack the entry.
    if (torch::Tensor saved; root.try_read("features", saved) && !torch::equal(saved, m.features))
      throw sim::InputError(
          path, "features",
          "a checkpoint of the same grouping (--grouper, --groups, --graph, --graph-opt), "
          "got one whose groups' features differ");
    root.read("model", model);
    root.read("optim", optim);
    const auto before = parameter_shapes(*m.net);
    m.net->load(model);
    check_parameters(before, *m.net, path);
    m.adam->load(optim);
    // Adam's moments must match the parameters they step (a foreign state fails mid-step).
    for (const auto& group : m.adam->param_groups())
      for (const auto& prm : group.params()) {
        const auto it = m.adam->state().find(c10::guts::to_string(prm.unsafeGetTensorImpl()));
        if (it == m.adam->state().end()) continue;
        const auto& st = static_cast<const torch::optim::AdamParamState&>(*it->second);
        if (st.exp_avg().sizes() != prm.sizes() || st.exp_avg_sq().sizes() != prm.sizes())
          throw sim::InputError(path, "optim", "Adam moments shaped like the policy's parameters");
      }
    c10::IValue rng_state;
    root.read("rng", rng_state);
    if (!rng_state.isString()) throw sim::InputError(path, "rng", "the RNG state as text");
    std::istringstream is(rng_state.toStringRef());
    is >> m.rng;
    if (!is)
      throw sim::InputError(path, "rng", "a std::mt19937_64 state, got text that is not one");
    // Checkpoints from before per-sample seeds lack it; they continue with this run's seed.
    if (torch::Tensor ss; root.try_read("sample_seed", ss)) {
      check_tensor(ss, path, "sample_seed", torch::kLong, {1});
      m.sample_seed = static_cast<std::uint64_t>(ss[0].item<std::int64_t>());
    }
    torch::Tensor baseline, best, best_step, hist;
    root.read("baseline", baseline);
    root.read("best", best);
    root.read("best_step_s", best_step);
    root.read("history", hist);
    check_tensor(baseline, path, "baseline", torch::kDouble, {2});
    check_tensor(best_step, path, "best_step_s", torch::kDouble, {1});
    check_tensor(hist, path, "history", torch::kDouble, {-1, kStatsColumns});
    check_tensor(best, path, "best", torch::kLong, {best.numel() == 0 ? 0 : m.groups()});
    if (best.numel() > 0 &&
        (best.min().item<std::int64_t>() < 0 || best.max().item<std::int64_t>() >= m.devices()))
      throw sim::InputError(path, "best",
                            "device indices from 0 to " + std::to_string(m.devices() - 1) +
                                ", got " + std::to_string(best.min().item<std::int64_t>()) +
                                " to " + std::to_string(best.max().item<std::int64_t>()));
    const double bs = best_step[0].item<double>();
    if (!std::isfinite(bs) || bs < 0 || bs > 1e9 || (best.numel() > 0) != (bs > 0))
      throw sim::InputError(
          path, "best_step_s",
          "a finite step time in (0, 1e9] s with a best placement (0 without), got " +
              std::to_string(bs));
    if (!torch::isfinite(baseline).all().item<bool>() || !torch::isfinite(hist).all().item<bool>())
      throw sim::InputError(path, "baseline", "finite numbers in baseline and history");
    if (hist.size(0) > 100'000'000)
      throw sim::InputError(path, "history", "at most 1e8 iterations");
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
    throw checkpoint_error(path, e);
  }
}

}  // namespace placesim::policy

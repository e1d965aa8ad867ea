// LstmRecurrence (rl_lstm.hpp) and its check against LibTorch's own LSTM.
#include "policy/rl/internal/rl_lstm.hpp"

#include <algorithm>

#include "policy/rl/rl.hpp"

namespace placesim::policy {

torch::autograd::variable_list LstmRecurrence::forward(torch::autograd::AutogradContext* ctx,
                                                       const torch::Tensor& x,
                                                       const torch::Tensor& h0,
                                                       const torch::Tensor& c0,
                                                       const torch::Tensor& w_hh) {
  const auto steps = x.size(0), n = x.size(1), h4 = x.size(2), hidden = h4 / 4;
  auto gates = torch::empty({steps, n, h4});  // activated: sigmoid i, f, o; tanh g
  auto cs = torch::empty({steps, n, hidden});
  auto tanh_cs = torch::empty({steps, n, hidden});
  auto hs = torch::empty({steps, n, hidden});
  const auto w_t = w_hh.t();
  torch::Tensor h = h0.contiguous(), c = c0.contiguous();
  for (std::int64_t t = 0; t < steps; ++t) {
    auto a = gates[t];
    if (n ==
        1) {  // the encoder: a matrix-vector product along w_hh's rows (addmm's path is slower)
      auto a0 = a[0];
      torch::addmv_out(a0, x[t][0], w_hh, h[0]);
    } else {
      torch::addmm_out(a, x[t], h, w_t);
    }
    a.narrow(1, 0, 2 * hidden).sigmoid_();       // i, f
    a.narrow(1, 2 * hidden, hidden).tanh_();     // g
    a.narrow(1, 3 * hidden, hidden).sigmoid_();  // o
    auto ct = cs[t], tc = tanh_cs[t], ht = hs[t];
    torch::mul_out(ct, a.narrow(1, hidden, hidden), c);
    ct.addcmul_(a.narrow(1, 0, hidden), a.narrow(1, 2 * hidden, hidden));
    torch::tanh_out(tc, ct);
    torch::mul_out(ht, a.narrow(1, 3 * hidden, hidden), tc);
    h = ht;
    c = ct;
  }
  ctx->save_for_backward({h0, c0, w_hh, gates, cs, tanh_cs, hs});
  return {hs, c.clone()};
}

torch::autograd::variable_list LstmRecurrence::backward(torch::autograd::AutogradContext* ctx,
                                                        torch::autograd::variable_list grad_out) {
  const auto saved = ctx->get_saved_variables();
  const torch::Tensor h0 = saved[0].contiguous(), c0 = saved[1].contiguous();
  const torch::Tensor &w_hh = saved[2], &gates = saved[3], &cs = saved[4], &tanh_cs = saved[5],
                      &hs = saved[6];
  const auto steps = gates.size(0), n = gates.size(1), hidden = gates.size(2) / 4;
  const torch::Tensor g_hs =
      grad_out[0].defined() ? grad_out[0].contiguous() : torch::zeros_like(hs);
  torch::Tensor dh = torch::zeros({n, hidden});
  torch::Tensor dc =
      grad_out[1].defined() ? grad_out[1].contiguous().clone() : torch::zeros({n, hidden});
  auto dpre = torch::empty({steps, n, 4 * hidden});  // gradient of the gates' pre-activations
  const float* gh = g_hs.data_ptr<float>();
  float* dhp = dh.data_ptr<float>();
  float* dcp = dc.data_ptr<float>();
  for (std::int64_t t = steps - 1; t >= 0; --t) {
    const float* a = gates[t].data_ptr<float>();
    const float* tc = tanh_cs[t].data_ptr<float>();
    const float* cp = t > 0 ? cs[t - 1].data_ptr<float>() : c0.data_ptr<float>();
    float* dp = dpre[t].data_ptr<float>();
    const float* ght = gh + t * n * hidden;
    for (std::int64_t b = 0; b < n; ++b) {
      const float* ab = a + b * 4 * hidden;
      float* db = dp + b * 4 * hidden;
      for (std::int64_t j = 0; j < hidden; ++j) {
        const std::int64_t k = b * hidden + j;
        const float i = ab[j], f = ab[hidden + j], g = ab[2 * hidden + j], o = ab[3 * hidden + j];
        const float dht = dhp[k] + ght[k];
        const float tct = tc[k];
        const float dct = dcp[k] + dht * o * (1.0f - tct * tct);
        db[j] = dct * g * i * (1.0f - i);
        db[hidden + j] = dct * cp[k] * f * (1.0f - f);
        db[2 * hidden + j] = dct * i * (1.0f - g * g);
        db[3 * hidden + j] = dht * tct * o * (1.0f - o);
        dcp[k] = dct * f;
      }
    }
    if (n == 1) {  // into h_{t-1}
      auto dh0 = dh[0];
      torch::mv_out(dh0, w_hh.t(), dpre[t][0]);
    } else {
      torch::mm_out(dh, dpre[t], w_hh);
    }
  }
  // w_hh's gradient in one product: the sum over steps of dpre_t^T h_{t-1}.
  auto h_prev = torch::cat({h0.unsqueeze(0), hs.narrow(0, 0, steps - 1)}, 0).reshape({-1, hidden});
  auto d_w = torch::mm(dpre.reshape({-1, 4 * hidden}).t(), h_prev);
  return {dpre, dh, dc, d_w};
}

double lstm_recurrence_max_error(int steps, int batch, int hidden, std::uint64_t seed) {
  torch::manual_seed(seed);
  torch::nn::LSTM ref(torch::nn::LSTMOptions(hidden, hidden));
  const auto in = torch::randn({steps, batch, hidden});
  const auto h0 = torch::randn({batch, hidden}), c0 = torch::randn({batch, hidden});
  const auto g_out = torch::randn({steps, batch, hidden}), g_c = torch::randn({batch, hidden});
  const auto p = ref->named_parameters();
  auto grads_of = [&](bool mine) {
    for (auto& w : ref->parameters()) w.mutable_grad() = torch::Tensor();
    auto x = in.clone().requires_grad_();
    auto h = h0.clone().requires_grad_(), c = c0.clone().requires_grad_();
    torch::Tensor out, c_last;
    if (mine) {
      auto xin = torch::addmm(p["bias_ih_l0"] + p["bias_hh_l0"], x.reshape({-1, hidden}),
                              p["weight_ih_l0"].t())
                     .view({steps, batch, 4 * hidden});
      auto r = LstmRecurrence::apply(xin, h, c, p["weight_hh_l0"]);
      out = r[0];
      c_last = r[1];
    } else {
      auto [o, state] = ref->forward(x, std::make_tuple(h.unsqueeze(0), c.unsqueeze(0)));
      out = o;
      c_last = std::get<1>(state).squeeze(0);
    }
    auto loss = (out * g_out).sum() + (c_last * g_c).sum();
    loss.backward();
    std::vector<torch::Tensor> v{out.detach(), c_last.detach(), x.grad(), h.grad(), c.grad()};
    for (auto& w : ref->parameters()) v.push_back(w.grad().clone());
    return v;
  };
  const auto a = grads_of(true), b = grads_of(false);
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  return worst;
}

}  // namespace placesim::policy

// The recurrence of a one-layer LSTM with its backward written out (LibTorch: include only from
// the policy's rl_*.cpp files).
#pragma once

#include <torch/torch.h>

namespace placesim::policy {

// The recurrence of a one-layer LSTM (PyTorch's gate order i, f, g, o) over input projections
// computed beforehand, x [T, n, 4H] = W_ih·input_t + b_ih + b_hh, from (h0, c0) [n, H] with
// recurrent weights w_hh [4H, H]. Returns {h_1..h_T [T, n, H], c_T [n, H]}.
//
// Its backward is written out: autograd's record of the same arithmetic is ~25 nodes per step,
// each a few microseconds of dispatch, and T accumulations of w_hh's gradient; here a step is one
// matrix product and a loop over the gates, and w_hh's gradient is one product at the end. On nmt
// (63 steps) the encoder's whole backward went from ~13 ms to ~5.5 ms (work every rank repeats),
// and a 16-sample shard's decoder backward from ~49 to ~25 ms. Checked against torch::nn::LSTM
// by lstm_recurrence_max_error (rl.hpp).
struct LstmRecurrence : torch::autograd::Function<LstmRecurrence> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, const torch::Tensor& h0,
                                                const torch::Tensor& c0, const torch::Tensor& w_hh);
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out);
};

}  // namespace placesim::policy

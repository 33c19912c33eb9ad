// hal::train: one optimizer step per batch, within the device's memory budget (link
// hal::train).
//
// A Trainer splits each batch into micro-batches small enough for the device's memory budget
// (its allocator's limit, Allocator::set_limit), accumulates their gradients so that the step
// sees the mean over the whole batch, and steps the optimizer. With no micro-batch size given it
// finds the largest that fits: the first step tries the whole batch, and on OutOfMemory clears
// the gradients, empties the allocator's cache and tries half as many samples, until one fits
// (nothing of the failed attempt is kept: the optimizer steps once per batch, on complete
// gradients). Later steps use that size.
//
// The seam for data-parallel training (a Communicator, not part of hal yet): a gradient reducer,
// called once a batch's gradients are complete and before clipping and the optimizer step, is
// where each parameter's gradient would be all-reduced across ranks and devices (summed, scaled
// by each worker's share of the global batch); Tensor::on_grad_ready is the per-parameter hook
// for overlapping that with the rest of backward.
#pragma once

#include <functional>
#include <vector>

#include "hal/nn.hpp"
#include "hal/optim.hpp"

namespace hal::train {

// The mean loss of `model` on inputs x and targets y (0-d, floating).
using LossFn =
    std::function<Tensor(nn::Module& model, const Tensor& x, const Tensor& y, Stream& stream)>;

using GradientReducer =
    std::function<void(const std::vector<nn::NamedTensor>& parameters, Stream& stream)>;

struct TrainerOptions {
  int64_t micro_batch = 0;    // 0: the largest that fits, found by the first step
  double clip_grad_norm = 0;  // > 0: clip the gradients' norm to it before each step
};

class Trainer {
 public:
  // The model's parameters and the optimizer's on the stream's device.
  Trainer(nn::Module& model, optim::Optimizer& optimizer, LossFn loss, Stream& stream,
          TrainerOptions options = {});

  // One optimizer step on x [N, ...] and y [N, ...] (on the stream's device): the mean loss over
  // the N samples, as a 0-d tensor (nothing waits for it). OutOfMemory naming the device and its
  // budget when not even one sample fits.
  Tensor step(const Tensor& x, const Tensor& y);

  // The micro-batch size in use (0 before the first step when it is to be found).
  int64_t micro_batch() const { return micro_batch_; }
  // Micro-batches the last step took.
  int64_t micro_steps() const { return micro_steps_; }

  void set_gradient_reducer(GradientReducer reducer) { reducer_ = std::move(reducer); }

 private:
  Tensor accumulate(const Tensor& x, const Tensor& y, int64_t micro);

  nn::Module& model_;
  optim::Optimizer& optimizer_;
  LossFn loss_;
  Stream& stream_;
  TrainerOptions options_;
  int64_t micro_batch_ = 0;
  int64_t micro_steps_ = 0;
  GradientReducer reducer_;
};

}  // namespace hal::train

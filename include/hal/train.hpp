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
// Data-parallel training (hal/data_parallel.hpp) plugs in through a GradientSync: armed before
// the backward that completes a batch's gradients, so that it can start all-reducing them while
// that backward still runs, and finished before loss-scale checks, clipping and the step.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "hal/nn.hpp"
#include "hal/optim.hpp"

namespace hal::train {

// The mean loss of `model` on inputs x and targets y (0-d, floating).
using LossFn =
    std::function<Tensor(nn::Module& model, const Tensor& x, const Tensor& y, Stream& stream)>;

// Where gradients meet those of other ranks. The trainer calls arm() before the backward of a
// batch's last micro-batch (the gradients that reach the parameters in it are complete), then
// finish() once that backward is enqueued: on return the parameters' gradients are the global
// ones. in_flight(): whether gradients have left since arm(), after which a failed step cannot
// be retried with smaller micro-batches (the other ranks have moved on). disarm() after a failed
// attempt that sent nothing.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void arm() = 0;
  virtual void disarm() = 0;
  virtual bool in_flight() const = 0;
  virtual void finish(Stream& stream) = 0;
};

// Mixed precision: the forward and backward in f16 or bf16, the parameters cast from their f32
// masters (which the optimizer steps) at each micro-batch, floating inputs cast too; the casts
// record, so the gradients reach the masters in f32. With loss scaling (f16's narrow range), the
// loss is multiplied by `scale` before backward and the gradients divided by it after; a step
// whose gradients are not all finite is skipped and the scale halved, and after
// `growth_interval` finite steps in a row it doubles (PyTorch's GradScaler). Checking the
// gradients waits for the stream once per step.
struct MixedPrecision {
  DType compute = DType::f32;  // f32: off; f16 or bf16: on
  bool loss_scaling = true;
  double scale = 32768.0;  // 2^15: the loss's gradient itself is f16, whose largest is 65504
  int64_t growth_interval = 2000;
};

struct TrainerOptions {
  int64_t micro_batch = 0;    // 0: the largest that fits, found by the first step
  double clip_grad_norm = 0;  // > 0: clip the gradients' norm to it before each step
  MixedPrecision mixed_precision = {};
  // The loss's ignore_index, where its mean is over the targets not equal to it (as
  // hal::cross_entropy's): micro-batches (and data-parallel ranks) are then weighted by the
  // targets of theirs that count rather than by their samples, so that the gradients are still
  // those of the whole batch's mean; one with none that count is skipped. Finding the counts
  // reads y once a step. Unset: every target counts, the weight is the share of samples.
  std::optional<int64_t> ignore_index = std::nullopt;
};

// How many targets of each of y's rows count (every one where ignore_index is unset), read to
// the host (one wait for `stream`).
std::vector<int64_t> counted_targets(const Tensor& y, std::optional<int64_t> ignore_index,
                                     Stream& stream);

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
  // Mixed precision: the loss scale now, and the steps skipped for gradients that were not
  // finite.
  double loss_scale() const { return options_.mixed_precision.scale; }
  int64_t skipped_steps() const { return skipped_steps_; }

  // The gradient all-reduce of data-parallel training (null: none). The sync must outlive the
  // steps that use it.
  void set_gradient_sync(GradientSync* sync) { sync_ = sync; }

 private:
  Tensor accumulate(const Tensor& x, const Tensor& y, int64_t micro);
  Tensor forward_loss(const Tensor& x, const Tensor& y);
  bool mixed() const { return options_.mixed_precision.compute != DType::f32; }
  // Loss scaling: whether the gradients are finite, dividing them by the scale when they are.
  bool unscale_gradients();

  nn::Module& model_;
  optim::Optimizer& optimizer_;
  LossFn loss_;
  Stream& stream_;
  TrainerOptions options_;
  int64_t micro_batch_ = 0;
  int64_t micro_steps_ = 0;
  int64_t skipped_steps_ = 0, finite_steps_ = 0;
  GradientSync* sync_ = nullptr;
};

}  // namespace hal::train

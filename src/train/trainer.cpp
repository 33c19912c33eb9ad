// Trainer: micro-batches within the memory budget, gradients accumulated to the batch's mean.
#include "hal/train.hpp"

#include <algorithm>
#include <cmath>

#include "hal/allocator.hpp"
#include "hal/autograd.hpp"
#include "hal/error.hpp"

namespace hal::train {

Trainer::Trainer(nn::Module& model, optim::Optimizer& optimizer, LossFn loss, Stream& stream,
                 TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      loss_(std::move(loss)),
      stream_(stream),
      options_(options),
      micro_batch_(options.micro_batch) {
  if (options.micro_batch < 0)
    throw Error(ErrorCode::InvalidArgument,
                "Trainer: micro_batch " + std::to_string(options.micro_batch) + " is negative");
  const MixedPrecision& mp = options.mixed_precision;
  if (mp.compute != DType::f32 && mp.compute != DType::f16 && mp.compute != DType::bf16)
    throw Error(ErrorCode::InvalidArgument,
                "Trainer: mixed precision computes in f16 or bf16, not " +
                    std::string(to_string(mp.compute)));
  if (mp.compute != DType::f32) {
    if (!(mp.scale > 0 && std::isfinite(mp.scale)) || mp.growth_interval < 1)
      throw Error(ErrorCode::InvalidArgument,
                  "Trainer: the loss scale must be finite and > 0, the growth interval >= 1");
    for (const nn::NamedTensor& p : model.parameters())
      if (p.tensor.dtype() != DType::f32)
        throw Error(ErrorCode::InvalidArgument, "Trainer: mixed precision keeps f32 masters; '" +
                                                    p.name + "' is " + p.tensor.describe());
  }
}

// The loss of one micro-batch; in mixed precision with the parameters and floating inputs cast to
// the compute dtype for the forward (the module's own tensors put back after, whatever happens).
Tensor Trainer::forward_loss(const Tensor& x, const Tensor& y) {
  if (!mixed()) return loss_(model_, x, y, stream_);
  const DType compute = options_.mixed_precision.compute;
  struct Restore {
    std::vector<std::pair<Tensor*, Tensor>> masters;
    ~Restore() {  // in reverse: a slot saved twice ends with what it held first
      for (auto it = masters.rbegin(); it != masters.rend(); ++it) *it->first = it->second;
    }
  } restore;
  for (const nn::NamedTensor& p : model_.parameters()) {
    Tensor& slot = model_.parameter(p.name);
    restore.masters.emplace_back(&slot, slot);
    slot = cast(slot, compute, stream_);
  }
  const bool floating_x = x.dtype() == DType::f32 || x.dtype() == DType::f64;
  return loss_(model_, floating_x ? cast(x, compute, stream_) : x, y, stream_);
}

bool Trainer::unscale_gradients() {
  const NoGrad untracked;
  Tensor total;
  for (const nn::NamedTensor& p : optimizer_.parameters()) {
    const Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    const Tensor s = sum(abs(g, stream_), {}, false, stream_);
    total = total.defined() ? add(total, s, stream_) : s;
  }
  if (total.defined() && !std::isfinite(total.to_vector<float>(stream_)[0])) return false;
  const Tensor inverse = full({}, 1.0 / options_.mixed_precision.scale, DType::f32, stream_);
  for (const nn::NamedTensor& p : optimizer_.parameters()) {
    const Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    Tensor master = p.tensor;
    master.set_grad(mul(g, inverse, stream_));
  }
  return true;
}

std::vector<int64_t> counted_targets(const Tensor& y, std::optional<int64_t> ignore_index,
                                     Stream& stream) {
  const int64_t n = y.size(0);
  if (!ignore_index)
    return std::vector<int64_t>(static_cast<size_t>(n), y.numel() / std::max<int64_t>(n, 1));
  const NoGrad untracked;
  const Tensor counts =
      sum(cast(ne(y, full({}, *ignore_index, y.dtype(), stream), stream), DType::i64, stream)
              .reshape({n, n == 0 ? 0 : y.numel() / n}),
          {1}, false, stream);
  return counts.to_vector<int64_t>(stream);
}

// Forward and backward over micro-batches of `micro` samples; each micro-batch's mean loss is
// weighted by its share of the batch (of its samples, or of the targets that count), so the
// gradients add up to the batch mean's.
Tensor Trainer::accumulate(const Tensor& x, const Tensor& y, int64_t micro) {
  const int64_t n = x.size(0);
  const double scale =
      mixed() && options_.mixed_precision.loss_scaling ? options_.mixed_precision.scale : 1.0;
  // Each micro-batch's weight. With ignore_index, a micro-batch's mean is over its own targets
  // that count: weighted by its samples, a batch with padding got another gradient once split
  // (and a micro-batch of padding alone, NaN).
  std::vector<double> shares;
  for (int64_t start = 0; start < n; start += micro)
    shares.push_back(static_cast<double>(std::min(n, start + micro) - start) /
                     static_cast<double>(n));
  if (options_.ignore_index && (micro < n || sync_)) {
    const std::vector<int64_t> rows = counted_targets(y, options_.ignore_index, stream_);
    std::vector<int64_t> parts(shares.size(), 0);
    for (int64_t i = 0; i < n; ++i)
      parts[static_cast<size_t>(i / micro)] += rows[static_cast<size_t>(i)];
    int64_t total = 0;
    for (int64_t part : parts) total += part;
    // None count: alone, the batch is as its loss makes it (its mean over no targets); with
    // other ranks, this one adds nothing to the gradients.
    if (total > 0 || sync_)
      for (size_t i = 0; i < shares.size(); ++i)
        shares[i] = total == 0 ? 0.0 : static_cast<double>(parts[i]) / static_cast<double>(total);
  }
  size_t last = shares.size();  // the last micro-batch that runs: the sync is armed before it
  for (size_t i = 0; i < shares.size(); ++i)
    if (shares[i] > 0) last = i;
  Tensor total;
  micro_steps_ = 0;
  if (last == shares.size()) {  // nothing to run (a rank whose targets all are ignored)
    if (sync_) sync_->arm();
    return zeros({}, DType::f32, stream_);
  }
  for (size_t i = 0; i <= last; ++i) {
    if (shares[i] == 0) continue;
    const int64_t start = static_cast<int64_t>(i) * micro, end = std::min(n, start + micro);
    const Tensor loss = forward_loss(x.slice(0, start, end), y.slice(0, start, end));
    ++micro_steps_;
    if (sync_ && i == last) sync_->arm();
    if (shares[i] == 1 && scale == 1) {  // one micro-batch holds the whole weight: weight 1
      loss.backward(stream_);
      return loss.detach();
    }
    loss.backward(stream_, full({}, shares[i] * scale, loss.dtype(), stream_));
    const Tensor weight = full({}, shares[i], loss.dtype(), stream_);
    const NoGrad untracked;
    const Tensor part = mul(loss.detach(), weight, stream_);
    total = total.defined() ? add(total, part, stream_) : part;
  }
  return total;
}

Tensor Trainer::step(const Tensor& x, const Tensor& y) {
  if (!x.defined() || !y.defined() || x.dim() == 0 || y.dim() == 0 || x.size(0) != y.size(0) ||
      x.size(0) == 0)
    throw Error(ErrorCode::InvalidArgument, "Trainer::step of " + x.describe() + " and " +
                                                y.describe() +
                                                ": expects inputs and targets of one batch size");
  const int64_t n = x.size(0);
  const Device device = stream_.device();
  int64_t micro = micro_batch_ > 0 ? std::min(micro_batch_, n) : n;
  Tensor loss;
  for (;;) {
    optimizer_.zero_grad();
    try {
      loss = accumulate(x, y, micro);
      break;
    } catch (const Error& error) {
      // A fixed size, or one already too small: the budget cannot be met. Nor can a step
      // whose gradients already went to the other ranks be tried again.
      const bool sent = sync_ && sync_->in_flight();
      if (sync_) sync_->disarm();
      if (error.code() != ErrorCode::OutOfMemory || options_.micro_batch > 0 || micro == 1 ||
          sent) {
        optimizer_.zero_grad();
        if (error.code() != ErrorCode::OutOfMemory) throw;
        throw Error(ErrorCode::OutOfMemory,
                    "Trainer: a micro-batch of " + std::to_string(micro) +
                        " samples does not fit " + device.id() + "'s memory budget (" +
                        std::to_string(device.allocator().config().limit_bytes) +
                        " bytes; 0: the device's memory): " + error.message());
      }
      optimizer_.zero_grad();
      stream_.synchronize();
      device.allocator().empty_cache();
      micro = (micro + 1) / 2;
    }
  }
  // Remembered: the size found, or a smaller one a later batch needed.
  if (micro_batch_ == 0 || micro < std::min(micro_batch_, n)) micro_batch_ = micro;
  // The global gradients, before the scale check: every rank then skips or steps alike.
  if (sync_) sync_->finish(stream_);
  if (mixed()) {
    const NoGrad untracked;
    loss = cast(loss, DType::f32, stream_);
  }
  // Loss scaling: gradients that overflowed skip the step and halve the scale.
  MixedPrecision& mp = options_.mixed_precision;
  if (mixed() && mp.loss_scaling) {
    if (!unscale_gradients()) {
      optimizer_.zero_grad();
      mp.scale /= 2;
      finite_steps_ = 0;
      ++skipped_steps_;
      return loss;
    }
    // Never past what the loss's dtype holds: backward starts from the scale itself, in the
    // compute dtype (f16's 2^16 is infinite, and every step at it was skipped).
    const double ceiling = mp.compute == DType::f16 ? 32768.0 : 0x1p127;
    if (++finite_steps_ % mp.growth_interval == 0 && mp.scale * 2 <= ceiling) mp.scale *= 2;
  }
  // The step changes nothing unless it completes; the gradients go either way. Short of memory,
  // it is tried once more after the work still holding buffers has finished and the cache is
  // emptied (clipping only replaces gradients, so it may run again).
  for (int attempt = 0;; ++attempt) {
    try {
      if (options_.clip_grad_norm > 0)
        optim::clip_grad_norm(optimizer_.parameters(), options_.clip_grad_norm, stream_);
      optimizer_.step(stream_);
      break;
    } catch (const Error& error) {
      if (error.code() == ErrorCode::OutOfMemory && attempt == 0) {
        stream_.synchronize();
        device.allocator().empty_cache();
        continue;
      }
      optimizer_.zero_grad();
      if (error.code() != ErrorCode::OutOfMemory) throw;
      throw Error(ErrorCode::OutOfMemory,
                  "Trainer: the optimizer's step (a new copy of the parameters and their state) "
                  "does not fit " +
                      device.id() +
                      "'s memory budget; the parameters are unchanged: " + error.message());
    }
  }
  return loss;
}

}  // namespace hal::train

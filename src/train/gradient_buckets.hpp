// Gradient buckets: a rank's parameter gradients packed into a few flat tensors that are
// all-reduced while backward is still running (PyTorch DDP's design). Parameters are bucketed
// in reverse order, the order backward completes them; a bucket is launched once all of its
// gradients have arrived and every bucket before it has been launched, so every rank calls its
// collectives in the same order. The all-reduces run on a stream of their own, after the
// compute stream's work up to the launch, so the rest of backward goes on beside them.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "hal/train.hpp"
#include "train/rank_levels.hpp"

namespace hal::train::detail {

class GradientBuckets final : public GradientSync {
 public:
  // Hooks on each parameter (leaves requiring grad on the compute stream's device). A hook
  // outliving the buckets does nothing.
  GradientBuckets(const std::vector<nn::NamedTensor>& parameters, RankLevels ranks, Stream& compute,
                  int64_t bucket_bytes);

  // This rank's weight in the sum: its share of the global batch (its gradients are means over
  // its own samples; the weighted sum is the global mean).
  void set_weight(double weight);
  void arm() override;
  void disarm() override;
  bool in_flight() const override;
  void finish(Stream& stream) override;

  size_t bucket_count() const;
  // When the last step's backward had finished on the device (finish() waits for it before
  // waiting for the others): the end of this rank's own work.
  std::chrono::steady_clock::time_point backward_done() const;
  // When finish() had the global gradients (its wait for the other ranks over).
  std::chrono::steady_clock::time_point reduced() const;
  // Buckets launched from inside backward (before finish) in the last step: the overlap.
  size_t launched_early() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace hal::train::detail

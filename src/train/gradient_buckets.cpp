#include "train/gradient_buckets.hpp"

#include <algorithm>
#include <map>

#include "hal/autograd.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"

namespace hal::train::detail {

struct GradientBuckets::State {
  struct Bucket {
    std::vector<size_t> members;  // parameter indices, in the order they are packed
    DType dtype = DType::f32;
    size_t arrived = 0;
    Tensor flat;
    std::vector<dist::Work> works;
  };

  RankLevels ranks;
  Device device;
  Stream comm_stream;
  std::vector<Tensor> parameters;
  std::vector<size_t> bucket_of;
  std::vector<Bucket> buckets;

  mutable std::mutex mutex;  // hooks may run on backward's threads
  bool armed = false;
  double weight = 1.0;
  std::vector<Tensor> grads;  // this step's, by parameter
  size_t next_launch = 0;     // buckets [0, next_launch) are on their way
  size_t early = 0;
  std::chrono::steady_clock::time_point backward_done, reduced;

  // Packs bucket b (scaled by the weight) and starts its sum on the communication stream,
  // after `stream`'s work so far. A parameter whose hook did not fire in the armed backward
  // goes as the gradient it holds (earlier micro-batches' sum), or as zeros when it has none.
  // After the gradients, one element a parameter: 1 where this rank had a gradient for it, so
  // that the sum says whether any rank had (one no rank used keeps no gradient, as alone).
  void launch(size_t b, Stream& stream) {
    Bucket& bucket = buckets[b];
    const NoGrad untracked;
    std::vector<Tensor> parts;
    std::vector<float> used;
    for (size_t p : bucket.members) {
      Tensor g = grads[p];
      if (!g.defined()) g = parameters[p].grad();
      used.push_back(g.defined() ? 1.0f : 0.0f);
      if (!g.defined()) g = zeros(parameters[p].shape(), parameters[p].dtype(), stream);
      parts.push_back(g.contiguous(stream).reshape({g.numel()}));
    }
    Tensor flat = parts.size() == 1 ? parts.front() : concat(parts, 0, stream);
    const Tensor flags = from_vector(used, {static_cast<int64_t>(used.size())}, stream);
    bucket.flat = concat({mul(flat, full({}, weight, bucket.dtype, stream), stream),
                          bucket.dtype == DType::f32 ? flags : cast(flags, bucket.dtype, stream)},
                         0, stream);
    comm_stream.wait(stream.record());
    bucket.works = ranks.all_reduce_sum(bucket.flat, comm_stream);
  }

  // Launches, in order, every bucket whose gradients have all arrived.
  void launch_ready(Stream& stream) {
    while (next_launch < buckets.size() &&
           buckets[next_launch].arrived == buckets[next_launch].members.size())
      launch(next_launch++, stream);
  }

  void reset() {
    armed = false;
    next_launch = 0;
    std::fill(grads.begin(), grads.end(), Tensor());
    for (Bucket& bucket : buckets) {
      bucket.arrived = 0;
      bucket.flat = Tensor();
      bucket.works.clear();
    }
  }
};

GradientBuckets::GradientBuckets(const std::vector<nn::NamedTensor>& parameters, RankLevels ranks,
                                 Stream& compute, int64_t bucket_bytes)
    : state_(std::make_shared<State>()) {
  if (bucket_bytes <= 0)
    throw Error(ErrorCode::InvalidArgument,
                "data-parallel: bucket_bytes " + std::to_string(bucket_bytes) + " must be > 0");
  State& s = *state_;
  s.ranks = std::move(ranks);
  s.device = compute.device();
  s.comm_stream = s.device.create_stream();
  for (const nn::NamedTensor& p : parameters) {
    if (!(p.tensor.device() == s.device))
      throw Error(ErrorCode::InvalidArgument, "data-parallel: parameter '" + p.name + "' is " +
                                                  p.tensor.describe() + ", not on " +
                                                  s.device.id() + " with the rank's stream");
    s.parameters.push_back(p.tensor);
  }
  s.grads.resize(s.parameters.size());
  s.bucket_of.resize(s.parameters.size());
  // Reverse order, one dtype per bucket, closed once it holds bucket_bytes.
  std::map<DType, size_t> open;  // dtype -> its bucket being filled
  std::map<size_t, int64_t> filled;
  for (size_t i = s.parameters.size(); i-- > 0;) {
    const Tensor& p = s.parameters[i];
    auto it = open.find(p.dtype());
    if (it == open.end() || filled[it->second] >= bucket_bytes) {
      s.buckets.push_back({});
      s.buckets.back().dtype = p.dtype();
      it = open.insert_or_assign(p.dtype(), s.buckets.size() - 1).first;
    }
    s.buckets[it->second].members.push_back(i);
    filled[it->second] += static_cast<int64_t>(p.nbytes());
    s.bucket_of[i] = it->second;
  }
  for (size_t i = 0; i < s.parameters.size(); ++i) {
    std::weak_ptr<State> weak = state_;
    s.parameters[i].on_grad_ready([weak, i](const Tensor& grad, Stream& stream) {
      const std::shared_ptr<State> state = weak.lock();
      if (!state) return;
      const std::lock_guard lock(state->mutex);
      if (!state->armed || state->grads[i].defined()) return;
      state->grads[i] = grad;
      ++state->buckets[state->bucket_of[i]].arrived;
      const size_t before = state->next_launch;
      state->launch_ready(stream);
      state->early += state->next_launch - before;
    });
  }
}

void GradientBuckets::set_weight(double weight) {
  const std::lock_guard lock(state_->mutex);
  state_->weight = weight;
}

void GradientBuckets::arm() {
  const std::lock_guard lock(state_->mutex);
  state_->reset();
  state_->early = 0;
  state_->armed = true;
}

void GradientBuckets::disarm() {
  const std::lock_guard lock(state_->mutex);
  state_->reset();
}

bool GradientBuckets::in_flight() const {
  const std::lock_guard lock(state_->mutex);
  return state_->next_launch > 0;
}

void GradientBuckets::finish(Stream& stream) {
  State& s = *state_;
  std::vector<State::Bucket> buckets;
  {
    const std::lock_guard lock(s.mutex);
    if (!s.armed)
      throw Error(ErrorCode::InvalidState, "data-parallel: finish() without arm() before backward");
    // Buckets with parameters the last micro-batch did not reach, in bucket order.
    while (s.next_launch < s.buckets.size()) s.launch(s.next_launch++, stream);
    buckets = s.buckets;
    s.reset();
  }
  stream.synchronize();
  {
    const std::lock_guard lock(s.mutex);
    s.backward_done = std::chrono::steady_clock::now();
  }
  for (const State::Bucket& bucket : buckets)
    for (const dist::Work& work : bucket.works) work.wait();
  stream.wait(s.comm_stream.record());
  {
    const std::lock_guard lock(s.mutex);
    s.reduced = std::chrono::steady_clock::now();
  }
  const NoGrad untracked;
  // Every bucket's flags (how many ranks had each parameter's gradient), read in one wait.
  std::vector<Tensor> flags;
  for (const State::Bucket& bucket : buckets) {
    const int64_t members = static_cast<int64_t>(bucket.members.size());
    const Tensor tail = bucket.flat.slice(0, bucket.flat.numel() - members, bucket.flat.numel());
    flags.push_back(bucket.dtype == DType::f32 ? tail : cast(tail, DType::f32, stream));
  }
  const std::vector<float> used =
      flags.empty()
          ? std::vector<float>()
          : (flags.size() == 1 ? flags.front() : concat(flags, 0, stream)).to_vector<float>(stream);
  size_t flag = 0;
  for (const State::Bucket& bucket : buckets) {
    int64_t offset = 0;
    for (size_t p : bucket.members) {
      const Tensor& parameter = s.parameters[p];
      const int64_t n = parameter.numel();
      Tensor master = parameter;
      if (used[flag++] > 0)
        master.set_grad(bucket.flat.slice(0, offset, offset + n).reshape(parameter.shape()));
      offset += n;
    }
  }
}

size_t GradientBuckets::bucket_count() const { return state_->buckets.size(); }

std::chrono::steady_clock::time_point GradientBuckets::backward_done() const {
  const std::lock_guard lock(state_->mutex);
  return state_->backward_done;
}

std::chrono::steady_clock::time_point GradientBuckets::reduced() const {
  const std::lock_guard lock(state_->mutex);
  return state_->reduced;
}

size_t GradientBuckets::launched_early() const {
  const std::lock_guard lock(state_->mutex);
  return state_->early;
}

}  // namespace hal::train::detail

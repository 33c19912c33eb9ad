// One rank's part of data-parallel training: its share of each global batch, the overlapped
// gradient all-reduce (GradientBuckets), and the exchange of losses and throughputs that sets
// the next step's shares.
#include "hal/data_parallel.hpp"

#include <chrono>
#include <cmath>
#include <optional>

#include "hal/autograd.hpp"
#include "hal/error.hpp"
#include "train/gradient_buckets.hpp"

namespace hal::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

struct DataParallel::Impl {
  Impl(nn::Module& model, optim::Optimizer& optim, LossFn loss_fn, Stream& rank_stream,
       detail::RankLevels levels, const DataParallelOptions& settings)
      : replica(model),
        optimizer(optim),
        loss(loss_fn),
        stream(rank_stream),
        ranks(std::move(levels)),
        options(settings),
        buckets(optim.parameters(), ranks, rank_stream, settings.bucket_bytes),
        trainer(model, optim, std::move(loss_fn), rank_stream, settings.trainer) {
    trainer.set_gradient_sync(&buckets);
  }

  // This rank's rows [offset, offset + count) of the global batch, on its device.
  std::pair<Tensor, Tensor> rows(const Tensor& x, const Tensor& y, int64_t offset,
                                 int64_t count) const {
    const NoGrad untracked;
    return {x.slice(0, offset, offset + count).to(stream.device(), stream),
            y.slice(0, offset, offset + count).to(stream.device(), stream)};
  }

  // Every rank's values (as many from each) in rank order.
  std::vector<float> gather(const std::vector<float>& mine) {
    return ranks.all_gather(mine, stream);
  }

  // The first shares: each rank times a forward and backward on a few of its samples (the
  // second of two runs; the first compiles kernels and fills caches). Gradients are dropped.
  void calibrate(const Tensor& x, const Tensor& y) {
    const int64_t per_rank =
        std::max<int64_t>(1, std::min(options.calibration_samples, x.size(0) / ranks.size()));
    const auto [xs, ys] = rows(x, y, ranks.rank() * per_rank, per_rank);
    double seconds = 0;
    for (int run = 0; run < 2; ++run) {
      stream.synchronize();
      const Clock::time_point start = Clock::now();
      loss(replica, xs, ys, stream).backward(stream);
      stream.synchronize();
      seconds = seconds_since(start);
    }
    optimizer.zero_grad();
    rates.clear();
    for (float rate : gather({static_cast<float>(static_cast<double>(per_rank) / seconds)}))
      rates.push_back(rate);
    measured = true;
  }

  nn::Module& replica;
  optim::Optimizer& optimizer;
  LossFn loss;
  Stream& stream;
  detail::RankLevels ranks;
  DataParallelOptions options;
  detail::GradientBuckets buckets;
  Trainer trainer;
  std::vector<int64_t> counts;
  std::vector<double> rates;
  double compute_s = 0;
  bool measured = false;  // rates holds measurements (else the even split's placeholder)
};

DataParallel::DataParallel(nn::Module& replica, optim::Optimizer& optimizer, LossFn loss,
                           Stream& stream, dist::Communicator comm, DataParallelOptions options)
    : DataParallel(replica, optimizer, std::move(loss), stream,
                   std::vector<dist::Communicator>{std::move(comm)}, options) {}

DataParallel::DataParallel(nn::Module& replica, optim::Optimizer& optimizer, LossFn loss,
                           Stream& stream, std::vector<dist::Communicator> levels,
                           DataParallelOptions options) {
  if (!(options.smoothing > 0 && options.smoothing <= 1) || options.calibration_samples < 1)
    throw Error(ErrorCode::InvalidArgument,
                "DataParallel: smoothing must be in (0, 1] and calibration_samples >= 1");
  detail::RankLevels ranks(std::move(levels), stream.device());
  impl_ = std::make_unique<Impl>(replica, optimizer, std::move(loss), stream, std::move(ranks),
                                 options);
  // Replicas start from rank 0's parameters.
  for (const nn::NamedTensor& p : optimizer.parameters())
    impl_->ranks.broadcast(p.tensor.detach(), stream);
  impl_->rates.assign(static_cast<size_t>(impl_->ranks.size()), 1.0);
}

DataParallel::~DataParallel() = default;

double DataParallel::step(const Tensor& x, const Tensor& y) {
  Impl& m = *impl_;
  if (!x.defined() || !y.defined() || x.dim() == 0 || y.dim() == 0 || x.size(0) != y.size(0))
    throw Error(ErrorCode::InvalidArgument, "DataParallel::step of " + x.describe() + " and " +
                                                y.describe() +
                                                ": expects inputs and targets of one batch size");
  const int64_t batch = x.size(0);
  if (m.options.balance && m.counts.empty()) m.calibrate(x, y);
  m.counts = split_batch(
      batch,
      m.options.balance ? m.rates : std::vector<double>(static_cast<size_t>(m.ranks.size()), 1.0));
  int64_t offset = 0;
  for (int r = 0; r < m.ranks.rank(); ++r) offset += m.counts[static_cast<size_t>(r)];
  const int64_t mine = m.counts[static_cast<size_t>(m.ranks.rank())];
  double share = static_cast<double>(mine) / static_cast<double>(batch);

  m.stream.synchronize();
  const Clock::time_point start = Clock::now();
  const auto [xs, ys] = m.rows(x, y, offset, mine);
  if (const std::optional<int64_t> ignore = m.options.trainer.ignore_index) {
    // The share of the targets that count (the loss is a mean over them): every rank's count,
    // each as two floats that hold it exactly.
    int64_t counted = 0;
    for (int64_t c : counted_targets(ys, ignore, m.stream)) counted += c;
    constexpr double kHalf = double(1 << 24);
    const std::vector<float> all = m.gather({static_cast<float>(std::floor(counted / kHalf)),
                                             static_cast<float>(std::fmod(counted, kHalf))});
    double global = 0;
    for (size_t r = 0; r + 1 < all.size(); r += 2) global += all[r] * kHalf + all[r + 1];
    share = global > 0 ? static_cast<double>(counted) / global : share;
  }
  m.buckets.set_weight(share);
  const Tensor loss = m.trainer.step(xs, ys);
  const float local_loss = loss.to_vector<float>(m.stream)[0];  // waits for the step
  // This rank's own time: forward and backward, then the optimizer's step after the global
  // gradients arrived (what it waited for the others in between is theirs). Shares in
  // proportion to samples over own time converge to equal own times, fixed costs included.
  m.compute_s = std::chrono::duration<double>(m.buckets.backward_done() - start).count() +
                seconds_since(m.buckets.reduced());

  // Every rank's weighted loss and throughput: the global loss and the next shares.
  const std::vector<float> all =
      m.gather({static_cast<float>(share * local_loss),
                static_cast<float>(static_cast<double>(mine) / m.compute_s)});
  double global_loss = 0;
  for (size_t r = 0; r < m.rates.size(); ++r) {
    global_loss += all[2 * r];
    const double measured = all[2 * r + 1];
    m.rates[r] = m.measured
                     ? m.options.smoothing * measured + (1 - m.options.smoothing) * m.rates[r]
                     : measured;
  }
  m.measured = true;
  return global_loss;
}

int DataParallel::rank() const { return impl_->ranks.rank(); }
int DataParallel::size() const { return impl_->ranks.size(); }
const std::vector<int64_t>& DataParallel::counts() const { return impl_->counts; }
const std::vector<double>& DataParallel::samples_per_s() const { return impl_->rates; }
double DataParallel::compute_seconds() const { return impl_->compute_s; }
size_t DataParallel::buckets_launched_early() const { return impl_->buckets.launched_early(); }
Trainer& DataParallel::trainer() { return impl_->trainer; }

}  // namespace hal::train

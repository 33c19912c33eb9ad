// Data-parallel training over local devices: the split of a batch, equality with single-device
// training on the same batches (even and uneven shares, micro-batches, several buckets), the
// overlap of the gradient all-reduce with backward, shares that follow paced devices' speeds,
// and bad input. HAL_SIM_CONFIG gives 4 sim devices (paced 1:1:2:4 in data_parallel_paced).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "hal/data_parallel.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

constexpr int64_t kBatch = 48, kIn = 12, kHidden = 32, kClasses = 4;

void expect_failure(ErrorCode code, const std::string& part, const std::function<void()>& fn) {
  expect_error(fn, code, {part});
}

train::LossFn classifier_loss() {
  return [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
    return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
  };
}

// Batch `step` of a fixed sequence, on cpu:0.
std::pair<Tensor, Tensor> batch(int step, Stream& cpu) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < kBatch * kIn; ++i)
    x.push_back(std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(step)));
  for (int64_t i = 0; i < kBatch; ++i) y.push_back((i * 7 + step) % kClasses);
  std::pair<Tensor, Tensor> out{from_vector(x, {kBatch, kIn}, cpu), from_vector(y, {kBatch}, cpu)};
  cpu.synchronize();  // the ranks copy their rows on streams of their own
  return out;
}

std::vector<std::vector<float>> host_parameters(nn::Module& model, Stream& s) {
  std::vector<std::vector<float>> out;
  Stream cpu = device("cpu:0").create_stream();
  for (const nn::NamedTensor& p : model.parameters()) {
    const Tensor copy = p.tensor.detach().to(device("cpu:0"), s);
    s.synchronize();
    out.push_back(copy.to_vector<float>(cpu));
  }
  return out;
}

struct Run {
  std::vector<double> losses;
  std::vector<std::vector<float>> parameters;
};

// `steps` steps of SGD with momentum on one device: the reference.
Run single_device(int steps) {
  Stream s = device("cpu:0").create_stream();
  auto model = nn::make_mlp({kIn, kHidden, kClasses}, 5, s);
  optim::SGD sgd(model->parameters(), {.lr = 0.2, .momentum = 0.9});
  train::Trainer trainer(*model, sgd, classifier_loss(), s);
  Run run;
  for (int i = 0; i < steps; ++i) {
    const auto [x, y] = batch(i, s);
    run.losses.push_back(trainer.step(x, y).to_vector<float>(s)[0]);
  }
  run.parameters = host_parameters(*model, s);
  return run;
}

std::vector<Device> devices_named(const std::vector<std::string>& ids) {
  std::vector<Device> out;
  for (const std::string& id : ids) out.push_back(device(id));
  return out;
}

train::LocalDataParallel make_parallel(const std::vector<Device>& devices,
                                       train::DataParallelOptions options) {
  return train::LocalDataParallel(
      devices,
      // A different seed per replica: rank 0's parameters must reach the others.
      [seed = uint64_t{5}](Stream& s) mutable {
        return nn::make_mlp({kIn, kHidden, kClasses}, seed++, s);
      },
      [](std::vector<nn::NamedTensor> p) {
        return std::make_unique<optim::SGD>(std::move(p),
                                            optim::SGDOptions{.lr = 0.2, .momentum = 0.9});
      },
      classifier_loss(), options);
}

Run data_parallel(train::LocalDataParallel& parallel, int steps) {
  // The sim devices lack a few of cross_entropy's parts; the ranks' threads take this setting.
  const CpuFallback fallback;
  Run run;
  Stream cpu = device("cpu:0").create_stream();
  for (int i = 0; i < steps; ++i) {
    const auto [x, y] = batch(i, cpu);
    run.losses.push_back(parallel.step(x, y));
  }
  run.parameters = host_parameters(parallel.replica(0), parallel.stream(0));
  return run;
}

void expect_same_training(const Run& got, const Run& want) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * std::abs(want.losses[i])) << "step " << i;
  ASSERT_EQ(got.parameters.size(), want.parameters.size());
  for (size_t p = 0; p < want.parameters.size(); ++p)
    for (size_t i = 0; i < want.parameters[p].size(); ++i)
      ASSERT_NEAR(got.parameters[p][i], want.parameters[p][i], 1e-5)
          << "parameter " << p << " element " << i;
}

TEST(SplitBatch, FollowsTheWeightsInWholeSamples) {
  EXPECT_EQ(train::split_batch(10, {1, 1}), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(train::split_batch(10, {1, 1, 2, 4}), (std::vector<int64_t>{1, 1, 3, 5}));
  EXPECT_EQ(train::split_batch(80, {1, 1, 2, 4}), (std::vector<int64_t>{10, 10, 20, 40}));
  EXPECT_EQ(train::split_batch(4, {1, 1, 1, 1000}), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(train::split_batch(7, {1}), (std::vector<int64_t>{7}));
  for (int64_t n : {4, 5, 17, 101, 1000}) {
    const std::vector<int64_t> counts = train::split_batch(n, {0.3, 1.7, 2.2, 9.1});
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), n);
    for (size_t r = 1; r < counts.size(); ++r) EXPECT_LE(counts[r - 1], counts[r]) << n;
  }
}

TEST(SplitBatch, RejectsWhatCannotBeSplit) {
  expect_failure(ErrorCode::InvalidArgument, "a batch of 3 samples cannot give 4 ranks", [] {
    train::split_batch(3, {1, 1, 1, 1});
  });
  expect_failure(ErrorCode::InvalidArgument, "rank 1's weight", [] {
    train::split_batch(8, {1, 0});
  });
  expect_failure(ErrorCode::InvalidArgument, "rank 0's weight", [] {
    train::split_batch(8, {std::nan(""), 1});
  });
}

TEST(DataParallel, EvenSharesOnFourDevicesTrainAsOneDevice) {
  auto parallel =
      make_parallel(devices_named({"cpu:0", "sim:0", "sim:1", "sim:2"}), {.balance = false});
  expect_same_training(data_parallel(parallel, 6), single_device(6));
  EXPECT_EQ(parallel.rank(0).counts(), (std::vector<int64_t>{12, 12, 12, 12}));
}

TEST(DataParallel, UnevenSharesMicroBatchesAndSmallBucketsTrainAsOneDevice) {
  // Calibration on devices of one speed gives uneven shares by noise alone: force them instead
  // by the split of 48 over weights the first step measured; what matters is any split.
  train::DataParallelOptions options;
  options.bucket_bytes = 256;  // a bucket per parameter or two
  options.trainer.micro_batch = 5;
  auto parallel = make_parallel(devices_named({"sim:0", "sim:1", "sim:2"}), options);
  expect_same_training(data_parallel(parallel, 6), single_device(6));
  const std::vector<int64_t>& counts = parallel.rank(0).counts();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), kBatch);
  for (size_t r = 0; r < parallel.size(); ++r)
    EXPECT_EQ(parallel.rank(r).counts(), counts) << "rank " << r << " disagrees on the split";
}

TEST(DataParallel, AllReducesBucketsWhileBackwardRuns) {
  train::DataParallelOptions options;
  options.bucket_bytes = 256;
  auto parallel = make_parallel(devices_named({"sim:0", "sim:1"}), options);
  Stream cpu = device("cpu:0").create_stream();
  const auto [x, y] = batch(0, cpu);
  const CpuFallback fallback;
  parallel.step(x, y);
  // 4 parameters, the last layer's finished first: its buckets leave before backward ends.
  EXPECT_GE(parallel.rank(0).buckets_launched_early(), 2u);
}

// y = x w1, plus x w2 for micro-batches of two rows only: with 3 rows in micro-batches of 2 and
// 1, w2's gradient comes from the first micro-batch alone. Before, data-parallel training sent
// it as zeros (the hooks fire for the last micro-batch only) and w2 never moved.
class UsedByTheFirstMicroBatch : public nn::Module {
 public:
  explicit UsedByTheFirstMicroBatch(Stream& s) {
    register_parameter("w1", full({2, 1}, 0.5, DType::f32, s));
    register_parameter("w2", full({2, 1}, 0.25, DType::f32, s));
  }
  Tensor forward(const Tensor& x, Stream& s) override {
    Tensor y = matmul(x, parameter("w1"), s);
    if (x.size(0) == 2) y = add(y, matmul(x, parameter("w2"), s), s);
    return y;
  }
};

TEST(DataParallel, AGradientOfAnEarlierMicroBatchOnlyIsReduced) {
  const train::LossFn mse = [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& s) {
    const Tensor d = sub(m.forward(x, s), y, s);
    return mean(mul(d, d, s), {}, false, s);
  };
  const optim::SGDOptions sgd{.lr = 0.1};
  Stream s = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, s);
  const Tensor y = from_vector<float>({1, 0, 1}, {3, 1}, s);
  s.synchronize();
  UsedByTheFirstMicroBatch single(s);
  optim::SGD optimizer(single.parameters(), sgd);
  train::Trainer(single, optimizer, mse, s, {.micro_batch = 2}).step(x, y);
  const std::vector<float> expected = single.parameter("w2").to_vector<float>(s);
  ASSERT_NE(expected[0], 0.25f) << "the reference must move w2";
  train::LocalDataParallel parallel(
      {device("cpu:0")}, [](Stream& st) { return std::make_shared<UsedByTheFirstMicroBatch>(st); },
      [&](std::vector<nn::NamedTensor> p) {
        return std::make_unique<optim::SGD>(std::move(p), sgd);
      },
      mse, {.trainer = {.micro_batch = 2}, .balance = false});
  parallel.step(x, y);
  const std::vector<float> got =
      parallel.replica(0).parameter("w2").to_vector<float>(parallel.stream(0));
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;
}

// Padding targets (ignore_index): each rank weighs by its targets that count, so the ranks
// train as one device on the whole batch, a rank whose rows are all padding included (weighted
// by its samples it gave another step, and its NaN loss made every parameter NaN).
TEST(DataParallel, PaddingWeighsTheRanksByTheTargetsThatCount) {
  auto padded = [](int step, int64_t padding, Stream& cpu) {
    auto [x, y] = batch(step, cpu);
    std::vector<int64_t> targets = y.to_vector<int64_t>(cpu);
    for (int64_t i = 0; i < padding; ++i) targets[static_cast<size_t>(i)] = -100;
    std::pair<Tensor, Tensor> out{x, from_vector(targets, {kBatch}, cpu)};
    cpu.synchronize();
    return out;
  };
  const int64_t paddings[] = {20, 24,
                              30};  // rank 0 holds rows 0-23: in steps 2 and 3, padding only
  struct Run want;
  {
    Stream s = device("cpu:0").create_stream();
    auto model = nn::make_mlp({kIn, kHidden, kClasses}, 5, s);
    optim::SGD sgd(model->parameters(), {.lr = 0.2, .momentum = 0.9});
    train::Trainer trainer(*model, sgd, classifier_loss(), s);
    for (int i = 0; i < 3; ++i) {
      const auto [x, y] = padded(i, paddings[i], s);
      want.losses.push_back(trainer.step(x, y).to_vector<float>(s)[0]);
    }
    want.parameters = host_parameters(*model, s);
  }
  train::DataParallelOptions options{.balance = false};
  options.trainer.ignore_index = -100;
  options.trainer.micro_batch = 8;
  auto parallel = make_parallel(devices_named({"cpu:0", "sim:0"}), options);
  const CpuFallback fallback;
  struct Run got;
  Stream cpu = device("cpu:0").create_stream();
  for (int i = 0; i < 3; ++i) {
    const auto [x, y] = padded(i, paddings[i], cpu);
    got.losses.push_back(parallel.step(x, y));
  }
  got.parameters = host_parameters(parallel.replica(0), parallel.stream(0));
  expect_same_training(got, want);
}

// A parameter no rank's loss reaches keeps no gradient, so the optimizer leaves it alone, as on
// one device (the ranks' zeros made it one, and weight decay shrank it every step).
class WithAnUnusedHead : public nn::Module {
 public:
  explicit WithAnUnusedHead(Stream& s) {
    register_parameter("used", full({2, 1}, 0.5, DType::f32, s));
    register_parameter("unused", full({2, 1}, 0.75, DType::f32, s));
  }
  Tensor forward(const Tensor& x, Stream& s) override { return matmul(x, parameter("used"), s); }
};

TEST(DataParallel, AParameterNoRankUsesIsNotStepped) {
  const train::LossFn mse = [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& s) {
    const Tensor d = sub(m.forward(x, s), y, s);
    return mean(mul(d, d, s), {}, false, s);
  };
  const optim::SGDOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.5};
  Stream s = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, s);
  const Tensor y = from_vector<float>({1, 0, 1, 0}, {4, 1}, s);
  s.synchronize();
  train::LocalDataParallel parallel(
      devices_named({"cpu:0", "sim:0"}),
      [](Stream& st) { return std::make_shared<WithAnUnusedHead>(st); },
      [&](std::vector<nn::NamedTensor> p) {
        return std::make_unique<optim::SGD>(std::move(p), sgd);
      },
      mse, {.balance = false});
  const CpuFallback fallback;
  for (int step = 0; step < 3; ++step) parallel.step(x, y);
  for (size_t r = 0; r < parallel.size(); ++r) {
    nn::Module& replica = parallel.replica(r);
    EXPECT_EQ(replica.parameter("unused").to_vector<float>(parallel.stream(r)),
              (std::vector<float>{0.75f, 0.75f}))
        << "rank " << r;
    EXPECT_FALSE(replica.parameter("unused").grad().defined()) << "rank " << r;
    EXPECT_NE(replica.parameter("used").to_vector<float>(parallel.stream(r))[0], 0.5f);
  }
}

// A collective that writes a tensor in place after a graph saved it (an all_reduce of a weight
// between forward and backward) is refused like any in-place write; a broadcast's root only
// reads its tensor, so that graph still runs.
TEST(DataParallel, ACollectiveIntoASavedTensorIsRefused) {
  Stream s = device("cpu:0").create_stream();
  const dist::Communicator comm = dist::Communicator::local({device("cpu:0")}).front();
  Tensor h = from_vector<float>({1, 2}, {1, 2}, s), w = from_vector<float>({3, 4}, {2, 1}, s);
  h.requires_grad_();
  w.requires_grad_();
  const Tensor read = sum(matmul(h, w, s), {}, false, s);
  comm.broadcast(w.detach(), 0, s).wait();
  read.backward(s);
  EXPECT_EQ(h.grad().to_vector<float>(s), (std::vector<float>{3, 4}));
  const Tensor stale = sum(matmul(h, w, s), {}, false, s);
  comm.all_reduce(w.detach(), dist::ReduceOp::sum, s).wait();
  expect_error([&] { stale.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'matmul'", "saved input 1 (b) of shape [2, 1]",
                "in-place write after forward"});
  EXPECT_EQ(h.grad().to_vector<float>(s), (std::vector<float>{3, 4}));  // nothing added
}

TEST(DataParallel, RejectsBadInputAndKeepsTraining) {
  auto parallel = make_parallel(devices_named({"sim:0", "sim:1"}), {});
  Stream cpu = device("cpu:0").create_stream();
  const CpuFallback fallback;
  const auto [x, y] = batch(0, cpu);
  expect_failure(ErrorCode::InvalidArgument, "expects inputs and targets of one batch size",
                 [&] { parallel.step(x, y.slice(0, 0, 10)); });
  expect_failure(ErrorCode::InvalidArgument, "a batch of 1 samples cannot give 2 ranks",
                 [&] { parallel.step(x.slice(0, 0, 1), y.slice(0, 0, 1)); });
  EXPECT_TRUE(std::isfinite(parallel.step(x, y)));
}

TEST(DataParallel, RejectsAStreamOnAnotherDevice) {
  const std::vector<dist::Communicator> comms = dist::Communicator::local({device("sim:0")});
  Stream s = device("sim:1").create_stream();
  auto model = nn::make_mlp({kIn, kClasses}, 1, s);
  optim::SGD sgd(model->parameters(), {});
  expect_failure(ErrorCode::InvalidArgument, "drives sim:0, the stream is on sim:1",
                 [&] { train::DataParallel(*model, sgd, classifier_loss(), s, comms[0]); });
}

// data_parallel_paced: sim devices paced at 1:1:2:4. Shares follow the speeds once measured.
TEST(DataParallelPaced, SharesFollowTheDevicesSpeeds) {
  if (!std::getenv("HAL_DATA_PARALLEL_PACED")) GTEST_SKIP() << "run by data_parallel_paced";
  train::DataParallelOptions options;
  auto parallel = make_parallel(devices_named({"sim:0", "sim:1", "sim:2", "sim:3"}), options);
  Stream cpu = device("cpu:0").create_stream();
  const CpuFallback fallback;
  for (int i = 0; i < 4; ++i) {
    const auto [x, y] = batch(i, cpu);
    parallel.step(x, y);
  }
  // Each device's part then takes about as long as the others' (about 35 ms here).
  for (size_t r = 0; r < 4; ++r)
    std::printf("rank %zu: %lld samples in %.1f ms of its own work\n", r,
                static_cast<long long>(parallel.rank(0).counts()[r]),
                parallel.rank(r).compute_seconds() * 1e3);
  const std::vector<int64_t>& c = parallel.rank(0).counts();
  // 48 samples at 1:1:2:4 is 6:6:12:24; allow for the host's noise.
  EXPECT_GE(c[3], 2 * c[1]) << c[0] << ":" << c[1] << ":" << c[2] << ":" << c[3];
  EXPECT_GE(c[3], 2 * c[0]);
  EXPECT_GT(c[2], c[0]);
  EXPECT_GT(c[2], c[1]);
}

}  // namespace
}  // namespace hal::test

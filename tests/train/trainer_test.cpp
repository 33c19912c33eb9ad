// The trainer: gradient accumulation over micro-batches equals one full batch, and under a small
// memory budget on a simulated device it finds the largest micro-batch that fits and still takes
// the step the full batch would (checked against cpu:0 without a budget).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "hal/train.hpp"
#include "test_main.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

// Wide enough that the activations of the batch dominate what a step needs.
constexpr int64_t kBatch = 64, kIn = 32, kHidden = 16384, kClasses = 5;

train::LossFn classifier_loss() {
  return [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
    return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
  };
}

struct Batch {
  std::vector<float> x;
  std::vector<int64_t> y;
};

Batch batch() {
  Batch b;
  for (int64_t i = 0; i < kBatch * kIn; ++i) b.x.push_back(std::sin(0.37f * static_cast<float>(i)));
  for (int64_t i = 0; i < kBatch; ++i) b.y.push_back((i * 7) % kClasses);
  return b;
}

// The parameters after `steps` steps of SGD on the batch, on `device`.
std::vector<std::vector<float>> trained(const Device& device, train::TrainerOptions options,
                                        int steps, int64_t* micro = nullptr) {
  Stream s = device.create_stream();
  const Batch data = batch();
  auto model = nn::make_mlp({kIn, kHidden, kClasses}, 3, s);
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  train::Trainer trainer(*model, sgd, classifier_loss(), s, options);
  const Tensor x = from_vector(data.x, {kBatch, kIn}, s);
  const Tensor y = from_vector(data.y, {kBatch}, s);
  for (int i = 0; i < steps; ++i) trainer.step(x, y);
  if (micro) *micro = trainer.micro_batch();
  std::vector<Tensor> copies;
  for (const nn::NamedTensor& p : model->parameters())
    copies.push_back(p.tensor.detach().to(hal::device("cpu:0"), s));
  s.synchronize();
  std::vector<std::vector<float>> out;
  Stream cpu = hal::device("cpu:0").create_stream();
  for (const Tensor& t : copies) out.push_back(t.to_vector<float>(cpu));
  return out;
}

void expect_close(const std::vector<std::vector<float>>& got,
                  const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t k = 0; k < got[i].size(); ++k)
      ASSERT_NEAR(got[i][k], want[i][k], 1e-5) << "parameter " << i << " element " << k;
}

TEST(Trainer, MicroBatchesAccumulateToTheFullBatchsStep) {
  const Device cpu = device("cpu:0");
  int64_t micro = 0;
  const auto whole = trained(cpu, {}, 3, &micro);
  EXPECT_EQ(micro, kBatch);
  const auto split = trained(cpu, {.micro_batch = 10}, 3, &micro);
  EXPECT_EQ(micro, 10);
  expect_close(split, whole);
}

// With padding targets (ignore_index), micro-batches weigh by the targets that count: split,
// the batch takes the whole batch's step (weighted by samples it did not, and a micro-batch of
// padding alone made the loss and every parameter NaN).
TEST(Trainer, MicroBatchesOfPaddingWeighByTheTargetsThatCount) {
  Stream s = device("cpu:0").create_stream();
  constexpr int64_t kRows = 8, kFeatures = 4;
  std::vector<float> xs;
  for (int64_t i = 0; i < kRows * kFeatures; ++i)
    xs.push_back(std::cos(0.61f * static_cast<float>(i)));
  const Tensor x = from_vector(xs, {kRows, kFeatures}, s);
  // Rows 4 and 5 (one micro-batch of 2) are padding only; row 0 is padding beside row 1.
  const Tensor y = from_vector<int64_t>({-100, 1, 2, 0, -100, -100, 1, 2}, {kRows}, s);
  auto run = [&](train::TrainerOptions options, std::vector<float>* loss) {
    auto model = nn::make_mlp({kFeatures, 6, 3}, 5, s);
    optim::SGD sgd(model->parameters(), {.lr = 0.5, .momentum = 0.9});
    train::Trainer trainer(*model, sgd, classifier_loss(), s, options);
    for (int step = 0; step < 3; ++step) loss->push_back(trainer.step(x, y).to_vector<float>(s)[0]);
    std::vector<std::vector<float>> out;
    for (const nn::NamedTensor& p : model->parameters())
      out.push_back(p.tensor.detach().to_vector<float>(s));
    return out;
  };
  std::vector<float> whole_loss, split_loss;
  const auto whole = run({}, &whole_loss);
  const auto split = run({.micro_batch = 2, .ignore_index = -100}, &split_loss);
  expect_close(split, whole);
  ASSERT_EQ(split_loss.size(), whole_loss.size());
  for (size_t i = 0; i < whole_loss.size(); ++i) EXPECT_NEAR(split_loss[i], whole_loss[i], 1e-6);
  // Every target ignored: alone, the batch is what its loss makes of it (NaN, as PyTorch's).
  auto model = nn::make_mlp({kFeatures, 3}, 5, s);
  optim::SGD sgd(model->parameters(), {.lr = 0.5});
  train::Trainer trainer(*model, sgd, classifier_loss(), s,
                         {.micro_batch = 2, .ignore_index = -100});
  const Tensor padding = full({kRows}, -100, DType::i64, s);
  EXPECT_TRUE(std::isnan(trainer.step(x, padding).to_vector<float>(s)[0]));
}

TEST(Trainer, FindsTheLargestMicroBatchWithinASimDevicesBudget) {
  if (devices().end() == std::find_if(devices().begin(), devices().end(),
                                      [](const Device& d) { return d.id() == "sim:0"; }))
    GTEST_SKIP() << "no sim:0 (HAL_SIM_CONFIG)";
  const Device sim = device("sim:0");
  const CpuFallback allowed;  // sim has no comparisons: relu's and cross_entropy's parts
  // What the whole batch takes without a budget; then budgets ever smaller until the trainer
  // has to split the batch (the caching allocator's cache and rounding make the threshold a
  // matter of measuring, not arithmetic).
  sim.allocator().empty_cache();
  sim.allocator().reset_peak_stats();
  int64_t micro = 0;
  trained(sim, {}, 1, &micro);
  ASSERT_EQ(micro, kBatch);
  uint64_t budget = sim.allocator().stats().reserved_bytes.peak;
  for (int tries = 0; tries < 12 && micro == kBatch; ++tries) {
    budget = budget / 8 * 7;
    sim.allocator().empty_cache();
    sim.allocator().set_limit(budget);
    trained(sim, {}, 1, &micro);
    sim.allocator().set_limit(0);
  }
  ASSERT_LT(micro, kBatch) << "no budget made the trainer split the batch";
  const auto reference = trained(device("cpu:0"), {}, 2);
  sim.allocator().empty_cache();
  sim.allocator().reset_peak_stats();
  sim.allocator().set_limit(budget);
  const auto budgeted = trained(sim, {}, 2, &micro);
  const MemoryStats stats = sim.allocator().stats();
  sim.allocator().set_limit(0);
  EXPECT_GT(micro, 0);
  EXPECT_LT(micro, kBatch);
  EXPECT_GT(stats.num_ooms, 0u);
  EXPECT_LE(stats.reserved_bytes.peak, budget);
  expect_close(budgeted, reference);
}

TEST(Trainer, SaysSoWhenNotOneSampleFits) {
  if (devices().end() == std::find_if(devices().begin(), devices().end(),
                                      [](const Device& d) { return d.id() == "sim:0"; }))
    GTEST_SKIP() << "no sim:0 (HAL_SIM_CONFIG)";
  const Device sim = device("sim:0");
  const CpuFallback allowed;
  sim.allocator().empty_cache();
  Stream s = sim.create_stream();
  // A million hidden units: one sample's activations alone are 4 MiB.
  constexpr int64_t kWide = int64_t{1} << 20;
  auto model = nn::make_mlp({1, kWide, 1}, 1, s);
  optim::SGD sgd(model->parameters(), {.lr = 0.1});
  train::Trainer trainer(*model, sgd, classifier_loss(), s);
  const Tensor x = zeros({2, 1}, DType::f32, s);
  const Tensor y = zeros({2}, DType::i64, s);
  s.synchronize();
  const std::vector<float> before = model->parameter("0.bias").detach().to_vector<float>(s);
  sim.allocator().empty_cache();
  sim.allocator().set_limit(sim.allocator().stats().reserved_bytes.current + (1u << 20));
  expect_error([&] { trainer.step(x, y); }, ErrorCode::OutOfMemory,
               {"a micro-batch of 1 samples does not fit sim:0's memory budget"});
  sim.allocator().set_limit(0);
  EXPECT_EQ(model->parameter("0.bias").detach().to_vector<float>(s), before);
  EXPECT_FALSE(model->parameter("0.weight").grad().defined());
}

// Mixed precision: bf16 and f16 forward and backward against f32 masters. The same steps as in
// f32 within the halves' rounding, overflowing gradients skipped with the scale halved, and the
// scale grown after enough finite steps.
struct MixedRun {
  std::vector<float> losses, parameters;
  int64_t skipped = 0, optimizer_steps = 0;
  double scale = 0;
};

MixedRun mixed_run(train::MixedPrecision mp, int steps) {
  Stream s = device("cpu:0").create_stream();
  // Learnable: each sample's class is the largest of its first five features.
  Batch data = batch();
  for (int64_t i = 0; i < kBatch; ++i) {
    const float* row = data.x.data() + i * kIn;
    data.y[static_cast<size_t>(i)] = std::max_element(row, row + kClasses) - row;
  }
  auto model = nn::make_mlp({kIn, 64, kClasses}, 3, s);
  optim::SGD sgd(model->parameters(), {.lr = 0.5});
  train::Trainer trainer(*model, sgd, classifier_loss(), s, {.mixed_precision = mp});
  const Tensor x = from_vector(data.x, {kBatch, kIn}, s);
  const Tensor y = from_vector(data.y, {kBatch}, s);
  MixedRun run;
  for (int i = 0; i < steps; ++i) {
    const Tensor loss = trainer.step(x, y);
    EXPECT_EQ(loss.dtype(), DType::f32);
    run.losses.push_back(loss.to_vector<float>(s)[0]);
  }
  for (const nn::NamedTensor& p : model->parameters()) {
    EXPECT_EQ(p.tensor.dtype(), DType::f32) << p.name;
    EXPECT_TRUE(p.tensor.is_leaf()) << p.name;
    for (float v : p.tensor.detach().to_vector<float>(s)) run.parameters.push_back(v);
  }
  run.skipped = trainer.skipped_steps();
  run.optimizer_steps = sgd.steps();
  run.scale = trainer.loss_scale();
  return run;
}

TEST(Trainer, MixedPrecisionStepsF32MastersLikeF32Training) {
  const MixedRun exact = mixed_run({}, 20);
  for (DType compute : {DType::bf16, DType::f16}) {
    const MixedRun mixed = mixed_run({.compute = compute}, 20);
    EXPECT_EQ(mixed.skipped, 0) << to_string(compute);
    EXPECT_EQ(mixed.optimizer_steps, 20);
    EXPECT_LT(mixed.losses.back(), 0.5f * mixed.losses.front()) << to_string(compute);
    ASSERT_EQ(mixed.parameters.size(), exact.parameters.size());
    double worst = 0;
    for (size_t i = 0; i < exact.parameters.size(); ++i)
      worst = std::max(worst, double(std::fabs(mixed.parameters[i] - exact.parameters[i])));
    // bf16 keeps 8 bits of mantissa, f16 11: the masters stay close to f32 training's.
    EXPECT_LT(worst, compute == DType::bf16 ? 0.05 : 0.01) << to_string(compute);
  }
}

// A layer applied twice (weights shared): its parameters are listed once, stepped once per
// step, and in mixed precision the module keeps its f32 leaf after each forward. Before, the
// second listing saved the bf16 cast as the "master" and step 2 failed ("backward through
// 'cast' a second time"), and SGD moved the shared weight twice.
TEST(Trainer, ASharedLayerIsOneParameterSteppedOnce) {
  Stream s = device("cpu:0").create_stream();
  for (bool mixed : {false, true}) {
    nn::Sequential twice;
    const auto layer = std::make_shared<nn::Linear>(2, 2, true, 1, s);
    twice.add(layer);
    twice.add(layer);
    std::vector<std::string> names;
    for (const nn::NamedTensor& p : twice.parameters()) names.push_back(p.name);
    EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias"}));
    optim::SGD sgd(twice.parameters(), {.lr = 0.1});
    train::TrainerOptions options;
    if (mixed) options.mixed_precision = {.compute = DType::bf16};
    train::Trainer trainer(
        twice, sgd,
        [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
          const Tensor d = sub(m.forward(x, st), y, st);
          return mean(mul(d, d, st), {}, false, st);
        },
        s, options);
    const Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2}, s);
    const Tensor y = zeros({2, 2}, DType::f32, s);
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> before = layer->weight().detach().to_vector<float>(s);
      trainer.step(x, y);
      const Tensor w = layer->weight();
      ASSERT_EQ(w.dtype(), DType::f32) << "mixed " << mixed << ", step " << step;
      ASSERT_TRUE(w.is_leaf()) << "mixed " << mixed << ", step " << step;
      const std::vector<float> after = w.detach().to_vector<float>(s);
      const std::vector<float> grad = w.grad().to_vector<float>(s);
      for (size_t i = 0; i < after.size(); ++i)
        EXPECT_NEAR(after[i], before[i] - 0.1f * grad[i], 1e-6) << "mixed " << mixed << " " << i;
    }
  }
  Tensor p = from_vector<float>({1, 2}, {2}, s);
  p.requires_grad_();
  expect_error(
      [&] {
        optim::SGD({{"a", p}, {"b", p}}, {.lr = 0.1});
      },
      ErrorCode::InvalidArgument, {"'a' and 'b' are the same tensor"});
}

TEST(Trainer, LossScalingSkipsOverflowsAndGrows) {
  // 2^30 overflows f16: each such step is skipped and halves the scale, until 2^15.
  const MixedRun overflowing = mixed_run({.compute = DType::f16, .scale = 1073741824.0}, 20);
  EXPECT_EQ(overflowing.skipped, 15);
  EXPECT_EQ(overflowing.optimizer_steps, 5);
  EXPECT_EQ(overflowing.scale, 32768.0);
  for (float v : overflowing.parameters) ASSERT_TRUE(std::isfinite(v));
  const MixedRun growing =
      mixed_run({.compute = DType::bf16, .scale = 4.0, .growth_interval = 3}, 9);
  EXPECT_EQ(growing.skipped, 0);
  EXPECT_EQ(growing.scale, 32.0);
  // In f16 the scale stops at 2^15: backward starts from it, and f16's 2^16 is infinite (every
  // step there was skipped, and the scale went up and down for ever).
  const MixedRun capped =
      mixed_run({.compute = DType::f16, .scale = 8192.0, .growth_interval = 1}, 8);
  EXPECT_EQ(capped.skipped, 0);
  EXPECT_EQ(capped.scale, 32768.0);
  Stream s = device("cpu:0").create_stream();
  auto model = nn::make_mlp({2, 2}, 1, s);
  optim::SGD sgd(model->parameters(), {.lr = 0.1});
  expect_error(
      [&] {
        train::Trainer(*model, sgd, classifier_loss(), s,
                       {.mixed_precision = {.compute = DType::i32}});
      },
      ErrorCode::InvalidArgument, {"f16 or bf16, not i32"});
}

}  // namespace
}  // namespace hal::test

int main(int argc, char** argv) {
  // One simulated device, set before hal loads its plugins.
  setenv("HAL_SIM_CONFIG", "devices=1,memory=1G", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  return hal::test::run_all_tests();
}

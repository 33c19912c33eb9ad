// Heterogeneous data-parallel training (issue #19): the digits MLP on a paced fleet of 4 sim
// devices of speeds 1:1:2:4, its throughput with the batch split by measured throughput
// (hal::train::LocalDataParallel) against the sum of the devices' throughputs when each trains
// alone on the whole batch (goal: >= 0.9), and the even split as the baseline that shows what
// balancing is worth.
#include "hetero_train_bench.hpp"

#include <chrono>

#include "hal/data_parallel.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

constexpr int64_t kIn = 64, kHidden = 512, kClasses = 10, kBatch = 512;

using Clock = std::chrono::steady_clock;

Tensor loss_of(nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
  return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
}

std::unique_ptr<optim::Optimizer> adamw(std::vector<nn::NamedTensor> parameters) {
  return std::make_unique<optim::AdamW>(std::move(parameters),
                                        optim::AdamWOptions{.lr = 0.01, .weight_decay = 1e-4});
}

std::pair<Tensor, Tensor> batch(Stream& s) {
  const Tensor x = uniform({kBatch, kIn}, DType::f32, 1, s);
  const Tensor y =
      cast(mul(uniform({kBatch}, DType::f32, 2, s), full({}, kClasses - 1, DType::f32, s), s),
           DType::i64, s);
  s.synchronize();
  return {x, y};
}

// Samples per second of one device training alone on the whole batch.
double alone(const Device& device, int steps) {
  Stream s = device.create_stream();
  auto model = nn::make_mlp({kIn, kHidden, kClasses}, 1, s);
  auto optimizer = adamw(model->parameters());
  train::Trainer trainer(*model, *optimizer, loss_of, s);
  const auto [x, y] = batch(s);
  trainer.step(x, y);
  s.synchronize();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < steps; ++i) trainer.step(x, y);
  s.synchronize();
  return static_cast<double>(kBatch * steps) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

// Samples per second of the 4 devices together, after `warm` steps (calibration, re-balancing).
double together(const std::vector<Device>& devices, bool balance, int warm, int steps) {
  train::LocalDataParallel parallel(devices,
                                    [](Stream& s) {
                                      return nn::make_mlp({kIn, kHidden, kClasses}, 1, s);
                                    },
                                    adamw, loss_of, {.balance = balance});
  Stream cpu = device("cpu:0").create_stream();
  const auto [x, y] = batch(cpu);
  for (int i = 0; i < warm; ++i) parallel.step(x, y);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < steps; ++i) parallel.step(x, y);
  return static_cast<double>(kBatch * steps) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::vector<Figure> measure_hetero_scaling(bool quick) {
  // The sim devices lack a few of cross-entropy's parts, which run on cpu:0.
  const CpuFallback fallback;
  std::vector<Device> fleet;
  for (int k = 0; k < 4; ++k) fleet.push_back(device("sim:" + std::to_string(k)));
  const int steps = quick ? 3 : 8;
  double sum = 0;
  for (const Device& d : fleet) sum += alone(d, quick ? 1 : 2);
  const double balanced = together(fleet, true, 4, steps);
  const double even = together(fleet, false, 2, steps);
  return {{"hetero_scaling", balanced, "samples/s", "sum_of_4_devices_alone", sum, balanced / sum,
           "higher", ">= 0.9"},
          {"hetero_scaling_even_split", even, "samples/s", "sum_of_4_devices_alone", sum,
           even / sum, "higher", ""}};
}

}  // namespace hal::bench

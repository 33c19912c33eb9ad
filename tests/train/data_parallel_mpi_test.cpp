// Data-parallel training across MPI ranks (mpirun -np 4, one process each on cpu:0): 100 AdamW
// steps with the global batch split by measured throughput give the losses of one process
// training on the whole batch, within 1e-4 relative (issue #19's goal). Every rank also trains
// the single-process reference itself, so each compares against its own. Then a mesh of 4
// processes x 2 devices, the gradients summed within each process, then across processes.
#include <gtest/gtest.h>

#include <cmath>

#include "hal/data_parallel.hpp"
#include "hal/registry.hpp"

namespace hal::test {
namespace {

constexpr int64_t kPerRank = 16, kIn = 64, kHidden = 128, kClasses = 10;
constexpr int kSteps = 100;

train::LossFn classifier_loss() {
  return [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
    return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
  };
}

// Global batch `step` of a fixed sequence: separable classes with noise, on cpu:0.
std::pair<Tensor, Tensor> batch(int step, int64_t size, Stream& cpu) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < size; ++i) {
    const int64_t label = (i * 3 + step) % kClasses;
    y.push_back(label);
    for (int64_t j = 0; j < kIn; ++j)
      x.push_back((j % kClasses == label ? 1.0f : 0.0f) +
                  0.5f * std::sin(0.71f * static_cast<float>(i * kIn + j) + 0.13f * step));
  }
  std::pair<Tensor, Tensor> out{from_vector(x, {size, kIn}, cpu), from_vector(y, {size}, cpu)};
  cpu.synchronize();
  return out;
}

std::unique_ptr<optim::Optimizer> adamw(std::vector<nn::NamedTensor> parameters) {
  return std::make_unique<optim::AdamW>(std::move(parameters),
                                        optim::AdamWOptions{.lr = 3e-3, .weight_decay = 1e-4});
}

// The reference: one process training on the whole global batch of each step.
std::vector<double> one_process_losses(int steps, int64_t global, Stream& s) {
  auto model = nn::make_mlp({kIn, kHidden, kClasses}, 11, s);
  auto optimizer = adamw(model->parameters());
  train::Trainer trainer(*model, *optimizer, classifier_loss(), s);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    const auto [x, y] = batch(i, global, s);
    losses.push_back(trainer.step(x, y).to_vector<float>(s)[0]);
  }
  return losses;
}

double largest_relative_difference(const std::vector<double>& got,
                                   const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::abs(want[i]));
  return worst;
}

TEST(DataParallelMpi, HundredStepsMatchOneProcessWithTheWholeBatch) {
  const dist::Communicator world = dist::Communicator::world();
  ASSERT_EQ(world.size(), 4) << "run with mpirun -np 4";
  const int64_t global = kPerRank * world.size();
  Stream s = device("cpu:0").create_stream();

  const std::vector<double> reference = one_process_losses(kSteps, global, s);
  // Each rank starts from its own seed: the broadcast from rank 0 must make them equal.
  auto model = nn::make_mlp({kIn, kHidden, kClasses}, 11 + static_cast<uint64_t>(world.rank()), s);
  auto optimizer = adamw(model->parameters());
  train::DataParallelOptions options;
  options.bucket_bytes = 16 << 10;  // a few buckets, so some leave while backward runs
  train::DataParallel parallel(*model, *optimizer, classifier_loss(), s, world, options);
  std::vector<double> losses;
  for (int i = 0; i < kSteps; ++i) {
    const auto [x, y] = batch(i, global, s);
    losses.push_back(parallel.step(x, y));
  }
  const double worst = largest_relative_difference(losses, reference);
  EXPECT_LT(worst, 1e-4) << "the largest relative difference of a step's loss";
  EXPECT_NEAR(losses.back(), reference.back(), 1e-4 * std::abs(reference.back()));
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "it learns";
  if (world.rank() == 0)
    std::printf("loss %.6f -> %.6f (one process: %.6f), largest relative difference %.2e\n",
                losses.front(), losses.back(), reference.back(), worst);
}

// Two replicas per process on a mesh of 4 processes x 2 devices: gradients summed within each
// process (local engine), then across processes (MPI), as one process with the 8x batch.
TEST(DataParallelMpi, AMeshOfProcessesAndLocalDevicesMatchesOneProcess) {
  const dist::DeviceMesh mesh = dist::DeviceMesh::create(
      {4, 2}, {"node", "local"}, {.devices = {device("cpu:0"), device("cpu:0")}, .backend = ""});
  constexpr int kMeshSteps = 30;
  const int64_t global = kPerRank * mesh.size();
  Stream s = device("cpu:0").create_stream();
  const std::vector<double> reference = one_process_losses(kMeshSteps, global, s);
  train::LocalDataParallel parallel(
      mesh,
      [rank = mesh.process_rank()](Stream& st) {
        return nn::make_mlp({kIn, kHidden, kClasses}, 11 + static_cast<uint64_t>(rank), st);
      },
      adamw, classifier_loss());
  ASSERT_EQ(parallel.size(), 2u);
  EXPECT_EQ(parallel.rank(1).rank(), 2 * mesh.process_rank() + 1);
  EXPECT_EQ(parallel.rank(0).size(), 8);
  std::vector<double> losses;
  for (int i = 0; i < kMeshSteps; ++i) {
    const auto [x, y] = batch(i, global, s);
    losses.push_back(parallel.step(x, y));
  }
  const double worst = largest_relative_difference(losses, reference);
  EXPECT_LT(worst, 1e-4) << "the largest relative difference of a step's loss";
  if (mesh.process_rank() == 0)
    std::printf("mesh 4x2: largest relative difference of a step's loss %.2e\n", worst);
}

}  // namespace
}  // namespace hal::test

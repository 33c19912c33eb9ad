// hal's training step against PyTorch's in the same run (issue #19): the digits MLP of `hal
// train` (64 -> 512 -> 10, ReLU, cross-entropy, AdamW, batch 32) on cpu:0, and the same model,
// loss, optimizer and batch in PyTorch eager on the CPU (scripts/time_torch_train.py, a child
// process of /usr/bin/python3) with as many threads as hal's CPU uses. The figure is hal's median
// step time over PyTorch's (lower is better; the goal is <= 1.0). Each side runs rounds of
// consecutive steps, hal's ended by a synchronize, and takes the median round's time per step.
// Then data-parallel training on a heterogeneous paced fleet (hetero_train_bench.cpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_report.hpp"
#include "hal/hal.hpp"
#include "hal/nn.hpp"
#include "hal/optim.hpp"
#include "hal/train.hpp"
#include "hetero_train_bench.hpp"

namespace hal::bench {
namespace {

constexpr int64_t kIn = 64, kHidden = 512, kClasses = 10, kBatch = 32;

struct Timing {
  double step_s = 0;
  double loss = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Timing time_hal(int rounds, int steps) {
  Stream s = device("cpu:0").create_stream();
  auto model = nn::make_mlp({kIn, kHidden, kClasses}, 1, s);
  optim::AdamW optimizer(model->parameters(), {.lr = 0.01, .weight_decay = 1e-4});
  train::Trainer trainer(*model, optimizer,
                         [](nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
                           return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
                         },
                         s, {.micro_batch = kBatch});
  const Tensor x = uniform({kBatch, kIn}, DType::f32, 1, s);
  const Tensor y =
      cast(mul(uniform({kBatch}, DType::f32, 2, s), full({}, kClasses, DType::f32, s), s),
           DType::i64, s);
  Tensor loss;
  for (int i = 0; i < 20; ++i) loss = trainer.step(x, y);
  s.synchronize();
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) loss = trainer.step(x, y);
    s.synchronize();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps);
  }
  return {median(times), loss.to_vector<float>(s)[0]};
}

Timing time_torch(int rounds, int steps, unsigned threads) {
  const std::filesystem::path script =
      std::filesystem::path(HAL_SOURCE_DIR) / "scripts" / "time_torch_train.py";
  const std::string command = "/usr/bin/python3 " + script.string() + " " + std::to_string(kIn) +
                              "," + std::to_string(kHidden) + "," + std::to_string(kClasses) + " " +
                              std::to_string(kBatch) + " " + std::to_string(threads) + " " +
                              std::to_string(rounds) + " " + std::to_string(steps) + " 2>&1";
  const std::string text = run_peer(command, " (scripts/setup-bench-models.sh installs PyTorch)");
  const auto report = nlohmann::json::parse(text);
  return {report.at("median_step_s").get<double>(), report.at("loss").get<double>()};
}

std::vector<Figure> measure(bool quick) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const int rounds = quick ? 5 : 15, steps = quick ? 20 : 50;
  const Timing hal = time_hal(rounds, steps);
  const Timing torch = time_torch(rounds, steps, threads);
  // PyTorch on one thread too: on a machine whose cores are busy with other work, its OpenMP
  // team's barriers can cost more than the step, and this baseline shows what is left.
  const Timing torch_one = time_torch(rounds, steps, 1);
  for (const Timing& t : {hal, torch, torch_one})
    if (!std::isfinite(t.loss))
      throw Error(ErrorCode::Internal,
                  "a training run diverged (loss " + std::to_string(t.loss) + ")");
  std::vector<Figure> figures{
      {"mlp_step_vs_torch", hal.step_s * 1e6, "us", "torch_" + std::to_string(threads) + "_threads",
       torch.step_s * 1e6, hal.step_s / torch.step_s, "lower", "ratio <= 1.0"},
      {"mlp_step_vs_torch_1_thread", hal.step_s * 1e6, "us", "torch_1_thread",
       torch_one.step_s * 1e6, hal.step_s / torch_one.step_s, "lower", ""}};
  for (Figure& figure : measure_hetero_scaling(quick)) figures.push_back(std::move(figure));
  return figures;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  // `hal bench --quick` asks Google Benchmark for short runs; here it means fewer rounds.
  const bool quick = !take_option(argc, argv, "--benchmark_min_time", "").empty();
  // The heterogeneous figures' fleet, whatever the environment says.
  setenv("HAL_SIM_CONFIG", kHeteroFleet, /*overwrite=*/1);
  return run_suite(argc, argv, "train", "cpu:0", {}, [&] { return measure(quick); });
}

// ONNX models on hal's cpu:0 against PyTorch on the CPU in the same run (issue #17): an MLP, a
// transformer encoder and a ResNet-18-shaped CNN, exported with random weights by
// scripts/export_bench_models.py (scripts/setup-bench-models.sh installs PyTorch and runs it).
// PyTorch runs the same module, traced, in a child process with as many threads as hal's CPU
// uses; each figure is hal's median time over PyTorch's (lower is better), and a run whose
// output differs from PyTorch's is an error, not a figure.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_report.hpp"
#include "hal/hal.hpp"
#include "hal/model.hpp"
#include "hal/npy.hpp"

namespace hal::bench {
namespace {

namespace fs = std::filesystem;

struct BenchModel {
  const char* name;
  int repeat;  // timed runs each side (the CNN's take seconds on two cores)
};
constexpr std::array<BenchModel, 3> kModels{{{"mlp", 20}, {"transformer", 10}, {"cnn", 5}}};

fs::path models_dir(int& argc, char** argv) {
  std::string dir = take_option(argc, argv, "--models", "");
  if (dir.empty())
    if (const char* env = std::getenv("HAL_BENCH_MODELS_DIR"); env && *env) dir = env;
  if (dir.empty()) {
    const char* cache = std::getenv("XDG_CACHE_HOME");  // ignored when relative (the XDG spec)
    const char* home = std::getenv("HOME");
    dir = (cache && cache[0] == '/' ? fs::path(cache) : fs::path(home ? home : "/tmp") / ".cache") /
          "hal" / "bench-models";
  }
  return dir;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Measured {
  double seconds = 0;
  std::vector<float> output;
};

Measured run_hal(const fs::path& dir, const BenchModel& m, int repeat) {
  const Model model = load_onnx(dir / (std::string(m.name) + ".onnx"));
  Stream stream = device("cpu:0").create_stream();
  const Tensor input = read_npy(dir / (std::string(m.name) + ".input.npy"), stream);
  const std::string output_name = model.outputs().at(0).name;
  Tensor output;
  for (int i = 0; i < 2; ++i) output = model.run({{"input", input}}, stream).at(output_name);
  stream.synchronize();
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    output = model.run({{"input", input}}, stream).at(output_name);
    stream.synchronize();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return {median(times), output.to_vector<float>(stream)};
}

Measured run_torch(const fs::path& dir, const BenchModel& m, int repeat, unsigned threads) {
  const fs::path script = fs::path(HAL_SOURCE_DIR) / "scripts" / "time_torch_model.py";
  const fs::path output = fs::temp_directory_path() /
                          ("hal_bench_" + std::string(m.name) + std::to_string(getpid()) + ".npy");
  const std::string command =
      "/usr/bin/python3 " + script.string() + " " + (dir / (std::string(m.name) + ".pt")).string() +
      " " + (dir / (std::string(m.name) + ".input.npy")).string() + " " + std::to_string(threads) +
      " " + std::to_string(repeat) + " " + output.string();
  const std::string text = run_peer(command);
  const auto report = nlohmann::json::parse(text);
  Stream stream = device("cpu:0").create_stream();
  Measured measured{report.at("median_s").get<double>(),
                    read_npy(output, stream).to_vector<float>(stream)};
  fs::remove(output);
  return measured;
}

// hal's output against PyTorch's: the largest difference relative to PyTorch's largest value.
void check_agreement(const BenchModel& m, const Measured& hal, const Measured& torch) {
  if (hal.output.size() != torch.output.size())
    throw Error(ErrorCode::Internal, std::string(m.name) + ": hal gives " +
                                         std::to_string(hal.output.size()) + " elements, PyTorch " +
                                         std::to_string(torch.output.size()));
  double worst = 0, scale = 1e-6;
  for (size_t i = 0; i < hal.output.size(); ++i) {
    const double d = std::fabs(double(hal.output[i]) - double(torch.output[i]));
    // A NaN on one side is no agreement (std::max would skip it); on both, the same result.
    worst = std::max(worst, std::isnan(hal.output[i]) == std::isnan(torch.output[i])
                                ? (std::isnan(d) ? 0.0 : d)
                                : INFINITY);
    scale = std::max(scale, double(std::fabs(torch.output[i])));
  }
  if (!(worst <= 1e-3 * scale))
    throw Error(ErrorCode::Internal, std::string(m.name) + ": hal's output differs from " +
                                         "PyTorch's by " + std::to_string(worst) +
                                         " (largest value " + std::to_string(scale) + ")");
}

std::vector<Figure> measure_models(const fs::path& dir, bool quick) {
  if (!fs::exists(dir / "mlp.onnx"))
    throw Error(ErrorCode::NotFound, "no benchmark models in " + dir.string() +
                                         ": run scripts/setup-bench-models.sh (PyTorch exports "
                                         "them), or give --models DIR");
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Figure> figures;
  for (const BenchModel& m : kModels) {
    const int repeat = quick ? std::max(2, m.repeat / 4) : m.repeat;
    const Measured hal = run_hal(dir, m, repeat);
    const Measured torch = run_torch(dir, m, repeat, threads);
    check_agreement(m, hal, torch);
    figures.push_back({"model_" + std::string(m.name) + "_vs_torch", hal.seconds * 1e3, "ms",
                       "torch_" + std::to_string(threads) + "_threads", torch.seconds * 1e3,
                       hal.seconds / torch.seconds, "lower", "ratio <= 1.0"});
  }
  return figures;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  const std::filesystem::path dir = models_dir(argc, argv);
  // `hal bench --quick` asks Google Benchmark for short runs; here it means fewer repeats.
  const bool quick = !take_option(argc, argv, "--benchmark_min_time", "").empty();
  return run_suite(argc, argv, "models", "cpu:0", {}, [&] { return measure_models(dir, quick); });
}

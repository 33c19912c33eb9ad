// A two-layer MLP's forward pass on every device hal finds:
//   probabilities = softmax(gelu(x @ w1 + b1) @ w2 + b2)
// The weights come from the same Philox seed on each device (the same numbers everywhere), so
// each device's result is compared with cpu:0's. Prints each device's time per forward pass
// and its largest difference from cpu:0.
//
//   mlp [--batch N] [--repeat N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hal/hal.hpp"
#include "hal/ops.hpp"

namespace {

struct Sizes {
  int64_t batch = 64, input = 512, hidden = 1024, classes = 10;
};

struct Model {
  hal::Tensor w1, b1, w2, b2;
};

// Weights scaled like a fresh layer's (uniform in +-1/sqrt(fan_in)), drawn on the device.
Model make_model(const Sizes& s, hal::Stream& stream) {
  const double r1 = 1 / std::sqrt(double(s.input)), r2 = 1 / std::sqrt(double(s.hidden));
  return {hal::uniform({s.input, s.hidden}, hal::DType::f32, 11, stream, -r1, r1),
          hal::uniform({s.hidden}, hal::DType::f32, 12, stream, -r1, r1),
          hal::uniform({s.hidden, s.classes}, hal::DType::f32, 13, stream, -r2, r2),
          hal::uniform({s.classes}, hal::DType::f32, 14, stream, -r2, r2)};
}

hal::Tensor forward(const Model& m, const hal::Tensor& x, hal::Stream& stream) {
  const hal::Tensor hidden =
      hal::gelu(hal::add(hal::matmul(x, m.w1, stream), m.b1, stream), stream);
  const hal::Tensor logits = hal::add(hal::matmul(hidden, m.w2, stream), m.b2, stream);
  return hal::softmax(logits, -1, stream);
}

struct Run {
  double seconds = 0;
  std::vector<float> probabilities;
};

Run run_on(const hal::Device& device, const Sizes& s, int repeat) {
  hal::Stream stream = device.create_stream();
  const Model model = make_model(s, stream);
  const hal::Tensor x = hal::normal({s.batch, s.input}, hal::DType::f32, 10, stream);
  hal::Tensor out = forward(model, x, stream);  // warm-up: compiles kernels, fills caches
  stream.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeat; ++i) out = forward(model, x, stream);
  stream.synchronize();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {elapsed.count() / repeat, out.to_vector<float>(stream)};
}

int64_t option(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  Sizes sizes;
  sizes.batch = option(argc, argv, "--batch", sizes.batch);
  const int repeat = static_cast<int>(option(argc, argv, "--repeat", 10));
  std::printf("MLP forward: [%lld x %lld] -> %lld (gelu) -> %lld (softmax), %d passes\n",
              static_cast<long long>(sizes.batch), static_cast<long long>(sizes.input),
              static_cast<long long>(sizes.hidden), static_cast<long long>(sizes.classes), repeat);
  try {
    const Run reference = run_on(hal::device("cpu:0"), sizes, repeat);
    std::printf("%-12s %12s %16s\n", "device", "time (ms)", "max |diff| vs cpu");
    bool all_close = true;
    for (const hal::Device& device : hal::devices()) {
      Run run;
      try {
        run = device.id() == "cpu:0" ? reference : run_on(device, sizes, repeat);
      } catch (const hal::Error& error) {
        std::printf("%-12s skipped: %s\n", device.id().c_str(), error.what());
        continue;
      }
      double largest = 0;
      for (size_t i = 0; i < run.probabilities.size(); ++i)
        largest =
            std::max(largest, double(std::fabs(run.probabilities[i] - reference.probabilities[i])));
      all_close = all_close && largest < 1e-4;
      std::printf("%-12s %12.3f %16.2e\n", device.id().c_str(), run.seconds * 1e3, largest);
    }
    return all_close ? 0 : 1;
  } catch (const hal::Error& error) {
    std::fprintf(stderr, "mlp: %s\n", error.what());
    return 2;
  }
}

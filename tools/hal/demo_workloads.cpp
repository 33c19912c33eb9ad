#include "demo_workloads.hpp"
#include "agreement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "core/host_cpu.hpp"
#include "hal/model.hpp"
#include "hal/npy.hpp"
#include "timed_passes.hpp"

namespace hal::tool {
namespace {

// One elementwise or reduction op's share of a workload: f32 bytes read and written.
void add_op(Workload& w, double flops, double elements_moved) {
  w.flops += flops;
  w.bytes += 4 * elements_moved;
  w.launches += 1;
}

}  // namespace

Workload mlp_workload(const DemoSizes& s) {
  const double b = s.batch, in = s.input, h = s.hidden, c = s.classes;
  Workload w;
  w.name = "mlp " + std::to_string(s.batch) + "x" + std::to_string(s.input) + "->" +
           std::to_string(s.hidden) + "->" + std::to_string(s.classes);
  add_op(w, 2 * b * in * h, b * in + in * h + b * h);  // x @ w1
  add_op(w, b * h, 2 * b * h + h);                     // + b1
  add_op(w, 8 * b * h, 2 * b * h);                     // gelu (tanh form: ~8 operations)
  add_op(w, 2 * b * h * c, b * h + h * c + b * c);     // @ w2
  add_op(w, b * c, 2 * b * c + c);                     // + b2
  // softmax as hal composes it: max, subtract, exp, sum, divide.
  add_op(w, b * c, b * c + b);
  add_op(w, b * c, 2 * b * c + b);
  add_op(w, b * c, 2 * b * c);
  add_op(w, b * c, b * c + b);
  add_op(w, b * c, 2 * b * c + b);
  w.memory_bytes =
      static_cast<uint64_t>(4 * (b * in + in * h + h + h * c + c + 2 * b * h + 3 * b * c));
  return w;
}

Workload matmul_workload(const DemoSizes& s) {
  return Workload::matmul(s.matmul, s.matmul, s.matmul);
}

WorkloadResult run_mlp(const Device& device, const DemoSizes& s) {
  Stream stream = device.create_stream();
  const double r1 = 1 / std::sqrt(double(s.input)), r2 = 1 / std::sqrt(double(s.hidden));
  const Tensor x = uniform({s.batch, s.input}, DType::f32, 10, stream, -1, 1);
  const Tensor w1 = uniform({s.input, s.hidden}, DType::f32, 11, stream, -r1, r1);
  const Tensor b1 = uniform({s.hidden}, DType::f32, 12, stream, -r1, r1);
  const Tensor w2 = uniform({s.hidden, s.classes}, DType::f32, 13, stream, -r2, r2);
  const Tensor b2 = uniform({s.classes}, DType::f32, 14, stream, -r2, r2);
  return timed_passes(stream, s.repeat, [&] {
    const Tensor hidden = gelu(add(matmul(x, w1, stream), b1, stream), stream);
    return softmax(add(matmul(hidden, w2, stream), b2, stream), -1, stream);
  });
}

WorkloadResult run_matmul(const Device& device, const DemoSizes& s) {
  Stream stream = device.create_stream();
  const Tensor a = uniform({s.matmul, s.matmul}, DType::f32, 20, stream, -1, 1);
  const Tensor b = uniform({s.matmul, s.matmul}, DType::f32, 21, stream, -1, 1);
  return timed_passes(stream, s.repeat, [&] { return matmul(a, b, stream); });
}

namespace {

constexpr const char* kTransformer = "transformer_encoder";
constexpr int64_t kLayers = 2, kModel = 64, kHeads = 4, kSequence = 16, kBatch = 2, kClasses = 10;

}  // namespace

std::filesystem::path demo_models_dir() {
  if (const char* dir = std::getenv("HAL_MODELS_DIR"); dir && *dir) return dir;
  if (std::filesystem::exists(std::filesystem::path(HAL_SOURCE_MODELS_DIR) /
                              "transformer_encoder.onnx"))
    return HAL_SOURCE_MODELS_DIR;
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return self.parent_path().parent_path() / "share" / "hal" / "models";
}

// The largest difference from PyTorch's stored output (infinity for a wrong size).
double worst_difference(const std::filesystem::path& dir, const std::vector<float>& output) {
  Stream cpu = hal::detail::host_cpu().create_stream();
  const auto expected =
      read_npy(dir / (std::string(kTransformer) + ".expected.npy"), cpu).to_vector<float>(cpu);
  double worst = expected.size() == output.size() ? 0 : INFINITY;
  for (size_t i = 0; worst != INFINITY && i < expected.size(); ++i)
    worst = std::max(worst, element_difference(output[i], expected[i]));
  return worst;
}

Workload transformer_workload() {
  const double tokens = kBatch * kSequence, d = kModel, ff = 2 * kModel;
  Workload w;
  w.name = "transformer encoder (ONNX from PyTorch) " + std::to_string(kLayers) + " layers, d " +
           std::to_string(kModel) + ", " + std::to_string(kBatch) + "x" + std::to_string(kSequence);
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    add_op(w, 2 * tokens * d * 3 * d, tokens * d + 3 * d * d + 3 * tokens * d);  // q, k, v
    add_op(w, 2 * 2 * kBatch * kSequence * kSequence * d,
           3 * tokens * d + 2 * kBatch * kHeads * kSequence * kSequence);  // scores, mix
    add_op(w, 2 * tokens * d * d, 2 * tokens * d + d * d);                 // out projection
    add_op(w, 2 * 2 * tokens * d * ff, 2 * tokens * d + 2 * d * ff + 2 * tokens * ff);  // ff
    add_op(w, 20 * tokens * d, 8 * tokens * d);  // norms, residuals, GELU, softmax
  }
  add_op(w, 2 * tokens * d * kClasses, tokens * d + d * kClasses + tokens * kClasses);
  w.launches = 240;  // the exported graph's nodes
  w.memory_bytes =
      static_cast<uint64_t>(4 * (kLayers * (4 * d * d + 2 * d * ff) + 8 * tokens * ff));
  return w;
}

WorkloadResult run_transformer(const Device& device, const DemoSizes& s) {
  const std::filesystem::path dir = demo_models_dir();
  const Model model = load_onnx(dir / (std::string(kTransformer) + ".onnx"));
  Stream stream = device.create_stream();
  const Tensor tokens = read_npy(dir / (std::string(kTransformer) + ".input.npy"), stream);
  WorkloadResult result = timed_passes(stream, s.repeat, [&] {
    return model.run({{"tokens", tokens}}, stream).at("probabilities");
  });
  const double worst = worst_difference(dir, result.output);
  if (!(worst <= 1e-4))
    throw Error(ErrorCode::Internal, device.id() +
                                         ": the transformer's output differs from "
                                         "PyTorch's by " +
                                         std::to_string(worst));
  return result;
}

PlannedTransformer run_planned_transformer(const std::vector<std::string>& devices) {
  const std::filesystem::path dir = demo_models_dir();
  const Model model = load_onnx(dir / (std::string(kTransformer) + ".onnx"));
  Stream cpu = hal::detail::host_cpu().create_stream();
  const Tensor tokens = read_npy(dir / (std::string(kTransformer) + ".input.npy"), cpu);
  PlannedTransformer planned;
  PlanOptions options;
  options.devices = devices;
  options.input_shapes = {{"tokens", tokens.shape()}};
  planned.plan = plan_model(model, options);
  run_planned(model, planned.plan, {{"tokens", tokens}});  // warm-up: kernels compiled
  const auto start = std::chrono::steady_clock::now();
  PlannedRun run = run_planned(model, planned.plan, {{"tokens", tokens}});
  planned.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  planned.fallbacks = std::move(run.fallbacks);
  const Tensor& probabilities = run.outputs.at("probabilities");
  Stream out = probabilities.device().create_stream();
  planned.max_abs_diff = worst_difference(dir, probabilities.to_vector<float>(out));
  if (!(planned.max_abs_diff <= 1e-4))
    throw Error(ErrorCode::Internal, "the planned transformer's output differs from PyTorch's by " +
                                         std::to_string(planned.max_abs_diff));
  return planned;
}

}  // namespace hal::tool

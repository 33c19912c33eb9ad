#include "compare_workload.hpp"

#include <chrono>

#include "hal/npy.hpp"
#include "option_values.hpp"

namespace hal::tool {
namespace {

[[noreturn]] void malformed(std::string_view text, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument,
              "--workload: '" + std::string(text) + "' " + why +
                  " (give matmul:N, softmax:RxC or model:PATH.onnx[:input=FILE.npy])");
}

constexpr uint64_t kMaxSide = 65536;

}  // namespace

double WorkloadSpec::work() const {
  switch (kind) {
    case Kind::matmul:
      return 2.0 * double(n) * double(n) * double(n) / 1e9;
    case Kind::softmax:
      return double(rows) * double(cols) / 1e6;
    case Kind::model:
      return 1;
  }
  return 1;
}

std::string WorkloadSpec::throughput_unit() const {
  switch (kind) {
    case Kind::matmul:
      return "GFLOP/s";
    case Kind::softmax:
      return "Melem/s";
    case Kind::model:
      return "runs/s";
  }
  return "runs/s";
}

WorkloadSpec parse_workload(std::string_view text) {
  WorkloadSpec spec;
  spec.text = text;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) malformed(text, "names no workload kind");
  const std::string_view kind = text.substr(0, colon), rest = text.substr(colon + 1);
  if (kind == "matmul") {
    spec.kind = WorkloadSpec::Kind::matmul;
    spec.n = static_cast<int64_t>(count_option("--workload matmul:N", rest, 1, kMaxSide));
  } else if (kind == "softmax") {
    spec.kind = WorkloadSpec::Kind::softmax;
    const size_t x = rest.find('x');
    if (x == std::string_view::npos) malformed(text, "has no RxC");
    spec.rows = static_cast<int64_t>(
        count_option("--workload softmax:RxC (R)", rest.substr(0, x), 1, 1 << 24));
    spec.cols = static_cast<int64_t>(
        count_option("--workload softmax:RxC (C)", rest.substr(x + 1), 1, 1 << 24));
  } else if (kind == "model") {
    spec.kind = WorkloadSpec::Kind::model;
    const size_t input = rest.rfind(":input=");
    spec.model = rest.substr(0, input);
    if (input != std::string_view::npos) spec.input = rest.substr(input + 7);
    if (spec.model.empty()) malformed(text, "names no model file");
    if (input != std::string_view::npos && spec.input.empty())
      malformed(text, "names no input file after ':input='");
  } else {
    malformed(text, "is of no kind hal compare runs ('" + std::string(kind) + "')");
  }
  return spec;
}

WorkloadRunner::WorkloadRunner(const Device& device, const WorkloadSpec& spec)
    : spec_(spec), stream_(device.create_stream()) {
  switch (spec.kind) {
    case WorkloadSpec::Kind::matmul:
      inputs_.push_back(uniform({spec.n, spec.n}, DType::f32, 20, stream_, -1, 1));
      inputs_.push_back(uniform({spec.n, spec.n}, DType::f32, 21, stream_, -1, 1));
      break;
    case WorkloadSpec::Kind::softmax:
      inputs_.push_back(uniform({spec.rows, spec.cols}, DType::f32, 22, stream_, -4, 4));
      break;
    case WorkloadSpec::Kind::model: {
      model_ = load_onnx(spec.model);
      if (model_.outputs().empty())
        throw Error(ErrorCode::InvalidArgument, "--workload: " + spec.model + " has no output");
      if (!spec.input.empty()) {
        if (model_.inputs().size() != 1)
          throw Error(ErrorCode::InvalidArgument,
                      "--workload: " + spec.model + " takes " +
                          std::to_string(model_.inputs().size()) +
                          " inputs; ':input=' gives one (leave it out for random inputs)");
        model_inputs_[model_.inputs()[0].name] = read_npy(spec.input, stream_);
        break;
      }
      uint64_t seed = 30;
      for (const ModelValue& value : model_.inputs()) {
        if (value.sequence || value.strings || value.dtype != DType::f32 || !value.ranked)
          throw Error(ErrorCode::Unsupported,
                      "--workload: " + spec.model + "'s input '" + value.name + "' is " +
                          element_type(value) +
                          ", not a tensor of f32; give its values with ':input=FILE.npy'");
        Shape shape;
        for (const ModelDim& dim : value.shape) shape.push_back(dim.size > 0 ? dim.size : 1);
        model_inputs_[value.name] = uniform(shape, DType::f32, seed++, stream_, -1, 1);
      }
      break;
    }
  }
  stream_.synchronize();
}

Tensor WorkloadRunner::run() {
  switch (spec_.kind) {
    case WorkloadSpec::Kind::matmul:
      return matmul(inputs_[0], inputs_[1], stream_);
    case WorkloadSpec::Kind::softmax:
      return softmax(inputs_[0], -1, stream_);
    case WorkloadSpec::Kind::model:
      return model_.run(model_inputs_, stream_).at(model_.outputs()[0].name);
  }
  return {};
}

double WorkloadRunner::timed_run() {
  const auto start = std::chrono::steady_clock::now();
  last_ = run();
  stream_.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<float> WorkloadRunner::output() {
  if (!last_.defined()) timed_run();
  return cast(last_, DType::f32, stream_).to_vector<float>(stream_);
}

}  // namespace hal::tool

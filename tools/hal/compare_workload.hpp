// What `hal compare` runs on each side: a workload named on the command line, run on a device
// with inputs that are the same on every device (fixed Philox seeds, or a .npy file).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hal/hal.hpp"
#include "hal/model.hpp"

namespace hal::tool {

struct WorkloadSpec {
  enum class Kind { matmul, softmax, model } kind = Kind::matmul;
  int64_t n = 0, rows = 0, cols = 0;  // matmul: n x n x n; softmax: rows x cols over cols
  std::string model, input;           // model: the .onnx file and an optional .npy input
  std::string text;                   // as given

  // Work per run, for the throughput metric, and its unit per second.
  double work() const;
  std::string throughput_unit() const;
};

// "matmul:2048", "softmax:4096x4096", "model:net.onnx", "model:net.onnx:input=x.npy".
// InvalidArgument naming --workload and quoting the text when malformed or out of range.
WorkloadSpec parse_workload(std::string_view text);

// One side's workload on its own stream of `device`: inputs made once, then timed runs.
class WorkloadRunner {
 public:
  WorkloadRunner(const Device& device, const WorkloadSpec& spec);
  // One run, enqueue to completion, on the host's clock (seconds).
  double timed_run();
  // The latest run's (first) output, as f32 on the host.
  std::vector<float> output();

 private:
  Tensor run();
  WorkloadSpec spec_;
  Stream stream_;
  std::vector<Tensor> inputs_;
  Model model_;
  std::string model_input_;
  std::map<std::string, Tensor> model_inputs_;
  Tensor last_;
};

}  // namespace hal::tool

// The demo's reference workloads: an MLP layer (matmul, bias, gelu, matmul, bias, softmax) and
// a larger matmul, each run on a device and described for the cost model.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hal/execution_plan.hpp"
#include "hal/hal.hpp"
#include "timed_passes.hpp"

namespace hal::tool {

struct DemoSizes {
  int64_t batch, input, hidden, classes;  // the MLP: [batch x input] -> hidden -> classes
  int64_t matmul;                         // n of the n x n x n matmul
  int repeat;  // timed passes at most, after the warm-up (timed_passes.hpp)
};

inline constexpr DemoSizes kQuickDemo{128, 512, 2048, 512, 1024, 3};
inline constexpr DemoSizes kFullDemo{256, 1024, 4096, 1000, 2048, 5};

// The work of one pass, op by op, as the cost model counts it.
Workload mlp_workload(const DemoSizes& sizes);
Workload matmul_workload(const DemoSizes& sizes);

// Inputs come from fixed Philox seeds, so every device computes on the same numbers.
WorkloadResult run_mlp(const Device& device, const DemoSizes& sizes);
WorkloadResult run_matmul(const Device& device, const DemoSizes& sizes);

// A real model: models/transformer_encoder.onnx, exported by PyTorch
// (scripts/export_demo_model.py: 2 layers, d_model 64, 4 heads, GELU, sequence 16, batch 2),
// run through hal_model on the device from the stored input; a result that differs from
// PyTorch's stored output by more than 1e-4 is an error naming both.
Workload transformer_workload();
WorkloadResult run_transformer(const Device& device, const DemoSizes& sizes);
// The same model through its execution plan over `devices` (IDs): the plan,
// the planned run's wall-clock seconds (after a warm-up run) and its worst difference from
// PyTorch's output; more than 1e-4 is an error.
struct PlannedTransformer {
  ExecutionPlan plan;
  std::vector<PlannedNode> fallbacks;
  double seconds = 0, max_abs_diff = 0;
};
PlannedTransformer run_planned_transformer(const std::vector<std::string>& devices);
// Where the demo's model files are: HAL_MODELS_DIR, else the source tree's models/ where the
// command was built, else <prefix>/share/hal/models beside the installed command.
std::filesystem::path demo_models_dir();

}  // namespace hal::tool

// softmax, log_softmax, layer_norm and rms_norm, and the two norms' gradients, on devices that
// compile portable kernels (OpenCL, CUDA): kernels/ops/rowwise.kernel, one work-group a row.
// Built from their parts they take five to seven launches and passes over memory forward and
// about seventeen backward (with the forward op run again for the weight's gradient); fused,
// two or three passes over a row that the group reads from its cache.
#include <algorithm>
#include <bit>

#include "core/program_kernels.hpp"
#include "ops/normalization.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"
#include "ops/portable_defines.hpp"
#include "ops/reduce_params.hpp"

namespace hal::ops {
namespace {

// The flags of rowwise.kernel (FLAG_*).
constexpr uint64_t kCentred = 1, kWeight = 2, kBias = 4, kStats = 8;

// Items a row, a power of two within the device's limit (the kernels combine by halves). GPUs:
// enough for the row's length, from a warp's 32 up to 256. CPU devices (PoCL) run a group's
// items as one vector loop: 16 ran [4096, 1024] f32 layer_norm on opencl:0 in 3.7 ms, 256 in
// 15 ms, 1 in 4.6 ms.
uint32_t group_for(int64_t cols, const DeviceInfo& device) {
  const uint64_t want =
      device.kind == DeviceKind::cpu
          ? 16
          : std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(cols)), 32, 256);
  return fitting_group(static_cast<uint32_t>(want), device);
}

// The kernel's scalar type is value_t: eps goes as that.
KernelArg eps_arg(DType dtype, double eps) {
  return dtype == DType::f64 ? KernelArg(eps) : KernelArg(static_cast<float>(eps));
}

LaunchConfig rows_config(int64_t rows, uint32_t group) {
  LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(rows) * group);
  config.local = {group, 1, 1};
  return config;
}

}  // namespace

void portable_rowwise(const OpDescriptor& op, const RowwiseArgs& a, Stream& stream) {
  if (a.rows == 0 || a.cols == 0) return;
  const Device& device = a.x.device();
  const uint32_t group = group_for(a.cols, device.info());
  const Kernel kernel = detail::compile_program(device, "ops/rowwise", "rowwise",
                                                rowwise_defines(op.name, a.x.dtype(), group));
  const bool has_weight = a.weight.defined(), has_bias = a.bias.defined();
  // Absent operands are bound to x, which the kernel then never reads.
  const Tensor& weight = has_weight ? a.weight : a.x;
  const Tensor& bias = has_bias ? a.bias : a.x;
  stream.launch(kernel, rows_config(a.rows, group),
                {a.out.storage(), a.x.storage(), weight.storage(), bias.storage(),
                 static_cast<uint64_t>(a.out.offset()), static_cast<uint64_t>(a.x.offset()),
                 static_cast<uint64_t>(has_weight ? weight.offset() : 0),
                 static_cast<uint64_t>(has_bias ? bias.offset() : 0), static_cast<uint64_t>(a.cols),
                 eps_arg(a.x.dtype(), a.eps), (has_weight ? kWeight : 0) | (has_bias ? kBias : 0)});
}

void portable_norm_backward(const OpDescriptor& op, const NormBackwardArgs& a, Stream& stream) {
  if (a.rows == 0 || a.cols == 0) return;
  const Device& device = a.x.device();
  const DType dtype = a.x.dtype();
  const uint32_t group = group_for(a.cols, device.info());
  const std::vector<std::string> defines = rowwise_defines("", dtype, group);
  const bool has_weight = a.weight.defined();
  const bool want_weight = a.weight_grad.defined(), want_bias = a.bias_grad.defined();
  const bool want_parameters = want_weight || want_bias;
  // Each row's mean and 1 / std, for the parameters' gradients (bound to dx when not asked).
  const Tensor stats = want_parameters ? empty_beside(a.x, {2 * a.rows}, dtype) : a.dx;
  const Tensor& weight = has_weight ? a.weight : a.x;
  const uint64_t centred = op.name == "layer_norm_backward" ? kCentred : 0;
  stream.launch(detail::compile_program(device, "ops/rowwise", "norm_backward_rows", defines),
                rows_config(a.rows, group),
                {a.dx.storage(), stats.storage(), a.x.storage(), a.grad.storage(), weight.storage(),
                 static_cast<uint64_t>(a.dx.offset()), static_cast<uint64_t>(a.x.offset()),
                 static_cast<uint64_t>(a.grad.offset()),
                 static_cast<uint64_t>(has_weight ? weight.offset() : 0),
                 static_cast<uint64_t>(a.cols), eps_arg(dtype, a.eps),
                 centred | (has_weight ? kWeight : 0) | (want_parameters ? kStats : 0)});
  if (!want_parameters) return;
  const ColumnParts split = norm_column_parts(a.rows, a.cols);
  const auto rows = static_cast<uint64_t>(a.rows), cols = static_cast<uint64_t>(a.cols);
  const auto parts = static_cast<uint64_t>(split.parts), chunk = static_cast<uint64_t>(split.chunk);
  const uint64_t flags = (want_weight ? kWeight : 0) | (want_bias ? kBias : 0);
  // A sum not asked for is bound to the other's parts, which the kernels then never touch.
  const Tensor weight_parts = empty_beside(a.x, {split.parts * a.cols}, dtype);
  const Tensor bias_parts =
      want_weight && want_bias ? empty_beside(a.x, {split.parts * a.cols}, dtype) : weight_parts;
  stream.launch(detail::compile_program(device, "ops/rowwise", "norm_backward_columns", defines),
                LaunchConfig::linear(parts * cols),
                {weight_parts.storage(), bias_parts.storage(), a.x.storage(), a.grad.storage(),
                 stats.storage(), static_cast<uint64_t>(a.x.offset()),
                 static_cast<uint64_t>(a.grad.offset()), rows, cols, parts, chunk, flags});
  // An output not asked for is bound to the other one, which the kernel then never writes.
  const Tensor& weight_grad = want_weight ? a.weight_grad : a.bias_grad;
  const Tensor& bias_grad = want_bias ? a.bias_grad : a.weight_grad;
  stream.launch(detail::compile_program(device, "ops/rowwise", "norm_backward_final", defines),
                LaunchConfig::linear(cols),
                {weight_grad.storage(), bias_grad.storage(), weight_parts.storage(),
                 bias_parts.storage(), static_cast<uint64_t>(weight_grad.offset()),
                 static_cast<uint64_t>(bias_grad.offset()), cols, parts, flags});
}

}  // namespace hal::ops

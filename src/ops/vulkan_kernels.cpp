// The ops on Vulkan devices: each op's shader compiled once per device and specialization (the
// device's kernel cache keeps it under a short key), its operands' layout in push constants.
// The shaders index with 32-bit integers: larger operands are refused with the reason.
#include "ops/vulkan_kernels.hpp"

#include <limits>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "core/device_core.hpp"
#include "hal/error.hpp"

namespace hal::ops {
namespace {

constexpr size_t kShaderDims = 6;  // binary.comp and unary.comp
constexpr size_t kReduceDims = 4;  // reduce.comp, kept and reduced each
constexpr size_t kWhereDims = 4;   // where.comp
constexpr uint32_t kReduceGroup = 128;
constexpr uint32_t kTile = 16;

}  // namespace

Kernel vulkan_shader_kernel(const Device& device, std::string_view shader,
                            std::initializer_list<uint32_t> constants) {
  std::vector<std::string> defines;
  std::string key = "\4vulkan:";  // '\4' starts no other key of the device's kernel cache
  key += shader;
  uint32_t id = 0;
  for (uint32_t value : constants) {
    defines.push_back(std::to_string(id++) + "=" + std::to_string(value));
    key += '\1' + defines.back();
  }
  detail::DeviceCore& core = detail::core_of(*device.impl());
  if (auto kernel = core.cached_kernel(key)) return Kernel(kernel, KernelOrigin::memory_cache);
  Kernel kernel = device.compile(
      {std::string(shader), std::string(vulkan::vulkan_shader(shader)), KernelLanguage::native},
      {.defines = std::move(defines)});
  core.cache_kernel(key, kernel.impl());
  return kernel;
}

namespace {

Kernel shader_kernel(const Device& device, std::string_view shader,
                     std::initializer_list<uint32_t> constants) {
  return vulkan_shader_kernel(device, shader, constants);
}

// `value` as a 32-bit index, or Unsupported naming what is too large.
uint32_t index32(int64_t value, std::string_view op, const Tensor& x) {
  if (value < 0 || value > std::numeric_limits<uint32_t>::max())
    throw Error(ErrorCode::Unsupported, std::string(op) + " of " + x.describe() +
                                            ": Vulkan shaders index with 32 bits, and this needs " +
                                            std::to_string(value));
  return static_cast<uint32_t>(value);
}

void check_dims(size_t dims, size_t limit, std::string_view op, const Tensor& x) {
  if (dims > limit)
    throw Error(ErrorCode::Unsupported,
                std::string(op) + " of " + x.describe() + ": the operands walk " +
                    std::to_string(dims) + " separate dimensions, more than the " +
                    std::to_string(limit) + " the Vulkan shaders take; call contiguous() first");
}

// Sizes then each operand's strides, padded at the front to `dims` with size 1, stride 0.
template <size_t kInputs>
void append_layout(const ElementwiseLayout<kInputs>& layout, std::string_view op, const Tensor& x,
                   std::vector<KernelArg>& args) {
  const size_t pad = kShaderDims - layout.shape.size();
  for (size_t d = 0; d < kShaderDims; ++d)
    args.emplace_back(d < pad ? 1u : index32(layout.shape[d - pad], op, x));
  for (size_t v = 0; v < kInputs; ++v)
    for (size_t d = 0; d < kShaderDims; ++d)
      args.emplace_back(d < pad ? 0u : index32(layout.strides[v][d - pad], op, x));
}

void append_dims(const LayoutDims& shape, const LayoutDims& strides, std::string_view op,
                 const Tensor& x, std::vector<KernelArg>& args) {
  const size_t pad = kReduceDims - shape.size();
  for (size_t d = 0; d < kReduceDims; ++d)
    args.emplace_back(d < pad ? 1u : index32(shape[d - pad], op, x));
  for (size_t d = 0; d < kReduceDims; ++d)
    args.emplace_back(d < pad ? 0u : index32(strides[d - pad], op, x));
}

// The shaders' name for a dtype ("binary_i64", "cast_f32_bool").
std::string_view dtype_name(DType dtype) {
  return dtype == DType::boolean ? "bool" : to_string(dtype);
}

uint32_t row_op_code(const OpDescriptor& op) {
  if (op.name == "softmax") return 0;
  if (op.name == "log_softmax") return 1;
  if (op.name == "layer_norm") return 2;
  return 3;  // rms_norm
}

}  // namespace

void vulkan_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                   const ElementwiseLayout<2>& layout, Stream& stream) {
  if (layout.count == 0) return;
  if (!layout.flat) check_dims(layout.shape.size(), kShaderDims, name(op), a);
  // f32 arithmetic in binary.comp; integers' in binary_int.comp; comparisons in compare.comp.
  std::string shader = "binary";
  uint32_t code = static_cast<uint32_t>(op);
  if (is_comparison(op)) {
    shader = "compare_" + std::string(dtype_name(a.dtype()));
    code -= static_cast<uint32_t>(Binary::eq);
  } else if (a.dtype() != DType::f32) {
    shader += "_" + std::string(dtype_name(a.dtype()));
  }
  const Kernel kernel = shader_kernel(a.device(), shader, {code, layout.flat ? 0u : 1u});
  std::vector<KernelArg> args{out.storage(),
                              a.storage(),
                              b.storage(),
                              index32(layout.offsets[0], name(op), a),
                              index32(layout.offsets[1], name(op), b),
                              index32(layout.count, name(op), out)};
  if (!layout.flat) append_layout(layout, name(op), a, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void vulkan_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                  Stream& stream) {
  if (layout.count == 0) return;
  if (!layout.flat) check_dims(layout.shape.size(), kShaderDims, name(op), x);
  const std::string shader =
      x.dtype() == DType::f32 ? "unary" : "unary_" + std::string(dtype_name(x.dtype()));
  const Kernel kernel =
      shader_kernel(x.device(), shader, {static_cast<uint32_t>(op), layout.flat ? 0u : 1u});
  std::vector<KernelArg> args{out.storage(), x.storage(), index32(layout.offsets[0], name(op), x),
                              index32(layout.count, name(op), out)};
  if (!layout.flat) append_layout(layout, name(op), x, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void vulkan_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                  const ElementwiseLayout<3>& layout, Stream& stream) {
  if (layout.count == 0) return;
  if (!layout.flat) check_dims(layout.shape.size(), kWhereDims, "where", a);
  const Kernel kernel = shader_kernel(a.device(), "where_" + std::to_string(a.element_size()),
                                      {0u, layout.flat ? 0u : 1u});
  std::vector<KernelArg> args{out.storage(),
                              cond.storage(),
                              a.storage(),
                              b.storage(),
                              index32(layout.offsets[0], "where", cond),
                              index32(layout.offsets[1], "where", a),
                              index32(layout.offsets[2], "where", b),
                              index32(layout.count, "where", out)};
  if (!layout.flat) {
    const size_t pad = kWhereDims - layout.shape.size();
    for (size_t d = 0; d < kWhereDims; ++d)
      args.emplace_back(d < pad ? 1u : index32(layout.shape[d - pad], "where", a));
    for (size_t v = 0; v < 3; ++v)
      for (size_t d = 0; d < kWhereDims; ++d)
        args.emplace_back(d < pad ? 0u : index32(layout.strides[v][d - pad], "where", a));
  }
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void vulkan_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                 Stream& stream) {
  if (layout.count == 0) return;
  if (!layout.flat) check_dims(layout.shape.size(), kShaderDims, "cast", x);
  const std::string shader =
      "cast_" + std::string(dtype_name(x.dtype())) + "_" + std::string(dtype_name(out.dtype()));
  const Kernel kernel = shader_kernel(x.device(), shader, {0u, layout.flat ? 0u : 1u});
  std::vector<KernelArg> args{out.storage(), x.storage(), index32(layout.offsets[0], "cast", x),
                              index32(layout.count, "cast", out)};
  if (!layout.flat) append_layout(layout, "cast", x, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void vulkan_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                   const std::vector<bool>&, Stream& stream) {
  if (layout.outputs == 0) return;
  check_dims(layout.kept.size(), kReduceDims, name(op), x);
  check_dims(layout.reduced.size(), kReduceDims, name(op), x);
  // reduce, reduce_f16, reduce_f64, each with subgroup arithmetic where the device has it.
  std::string shader = "reduce";
  if (x.dtype() != DType::f32) shader += "_" + std::string(dtype_name(x.dtype()));
  if (x.device().info().has_feature(vulkan::kSubgroupReductions)) shader += "_subgroup";
  const std::string argmax_shader =
      x.dtype() == DType::f32 ? "argmax" : "argmax_" + std::string(dtype_name(x.dtype()));
  const Kernel kernel = op == Reduce::argmax
                            ? shader_kernel(x.device(), argmax_shader, {})
                            : shader_kernel(x.device(), shader, {static_cast<uint32_t>(op)});
  std::vector<KernelArg> args{out.storage(), x.storage(), index32(layout.offset, name(op), x),
                              index32(layout.count, name(op), x),
                              index32(layout.outputs, name(op), out)};
  append_dims(layout.kept, layout.kept_strides, name(op), x, args);
  append_dims(layout.reduced, layout.reduced_strides, name(op), x, args);
  LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(layout.outputs) * kReduceGroup);
  config.local = {kReduceGroup, 1, 1};
  stream.launch(kernel, config, args);
}

void vulkan_rowwise(const OpDescriptor& op, const RowwiseArgs& a, Stream& stream) {
  if (a.rows == 0 || a.cols == 0) return;
  const bool has_weight = a.weight.defined(), has_bias = a.bias.defined();
  const Kernel kernel =
      shader_kernel(a.x.device(), a.x.dtype() == DType::f16 ? "rowwise_f16" : "rowwise",
                    {row_op_code(op), has_weight ? 1u : 0u, has_bias ? 1u : 0u});
  // Absent operands are bound to x, which the shader then never reads.
  std::vector<KernelArg> args{a.out.storage(),
                              a.x.storage(),
                              has_weight ? a.weight.storage() : a.x.storage(),
                              has_bias ? a.bias.storage() : a.x.storage(),
                              index32(a.out.offset(), op.name, a.x),
                              index32(a.x.offset(), op.name, a.x),
                              has_weight ? index32(a.weight.offset(), op.name, a.weight) : 0u,
                              has_bias ? index32(a.bias.offset(), op.name, a.bias) : 0u,
                              index32(a.rows, op.name, a.x),
                              index32(a.cols, op.name, a.x),
                              static_cast<float>(a.eps)};
  index32(a.rows * a.cols, op.name, a.x);
  LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(a.rows) * kReduceGroup);
  config.local = {kReduceGroup, 1, 1};
  stream.launch(kernel, config, args);
}

void vulkan_gemm(const GemmDesc& g, Stream& stream) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const Device device = stream.device();
  const auto check = [&](int64_t value) {
    if (value < 0 || value > std::numeric_limits<uint32_t>::max())
      throw Error(ErrorCode::Unsupported,
                  "matmul " + std::to_string(g.m) + "x" + std::to_string(g.k) + " @ " +
                      std::to_string(g.k) + "x" + std::to_string(g.n) + " on " + device.info().id +
                      ": Vulkan shaders index with 32 bits, and this needs " +
                      std::to_string(value));
    return static_cast<uint32_t>(value);
  };
  check(g.batch * std::max({g.a.batch_stride, g.b.batch_stride, g.c.batch_stride}) +
        std::max({g.m, g.n, g.k}) * std::max({g.a.ld, g.b.ld, g.c.ld, int64_t{1}}));
  // A Vulkan device on the CPU (lavapipe) runs barriers as switches between invocations: the
  // untiled shader there (matmul_direct.comp), the shared-memory tiles elsewhere.
  const bool on_cpu = device.info().kind == DeviceKind::cpu && g.dtype == DType::f32;
  const Kernel kernel =
      shader_kernel(device,
                    on_cpu                  ? "matmul_direct"
                    : g.dtype == DType::f32 ? "matmul"
                                            : "matmul_" + std::string(dtype_name(g.dtype)),
                    {});
  std::vector<KernelArg> args{Buffer(g.c.buffer),
                              Buffer(g.a.buffer),
                              Buffer(g.b.buffer),
                              check(g.c.offset),
                              check(g.a.offset),
                              check(g.b.offset),
                              check(g.m),
                              check(g.n),
                              check(g.k),
                              check(g.c.ld),
                              check(g.a.ld),
                              check(g.b.ld),
                              check(g.c.batch_stride),
                              check(g.a.batch_stride),
                              check(g.b.batch_stride),
                              g.a.transposed ? 1u : 0u,
                              g.b.transposed ? 1u : 0u};
  LaunchConfig config = LaunchConfig::grid((static_cast<uint64_t>(g.n) + kTile - 1) / kTile * kTile,
                                           (static_cast<uint64_t>(g.m) + kTile - 1) / kTile * kTile,
                                           static_cast<uint64_t>(g.batch));
  config.local = {kTile, kTile, 1};
  stream.launch(kernel, config, args);
}

}  // namespace hal::ops

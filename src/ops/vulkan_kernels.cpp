// The ops on Vulkan devices: each op's shader compiled once per device and specialization (the
// device's kernel cache keeps it under a short key), its operands' layout in push constants.
// The shaders index with 32-bit integers, and reach as far into an operand as one binding of a
// storage buffer does: larger operands are refused with the reason, before anything is enqueued.
#include "ops/vulkan_kernels.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include "backends/vulkan/vulkan_limits.hpp"
#include "backends/vulkan/vulkan_shaders.hpp"
#include "core/device_core.hpp"
#include "hal/error.hpp"
#include "ops/normalization.hpp"
#include "ops/op_checks.hpp"
#include "tensor/extent.hpp"

namespace hal::ops {
namespace {

constexpr size_t kShaderDims = 6;  // binary.comp and unary.comp
constexpr size_t kReduceDims = 4;  // reduce.comp, kept and reduced each
constexpr size_t kWhereDims = 4;   // where.comp
constexpr uint32_t kReduceGroup = 128;
constexpr uint32_t kTile = 16;
// The most rounds matmul's k loop goes in one launch, one k (matmul_direct) or one tile a round:
// lavapipe stops a shader's loops at 65535 rounds in all (kernels/vulkan/common.glsl), so a
// longer k is split over launches.
constexpr int64_t kMatmulRounds = 32768;

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

// Refuses `what` where its shader would address byte `end` (exclusive) of `buffer` or beyond
// what one binding spans: the launch binds a buffer from its offset rounded down to the
// device's alignment for at most maxStorageBufferRange bytes, past which reads give 0 and
// writes are lost (backends/vulkan/vulkan_limits.hpp).
void check_binding(const std::string& what, const Buffer& buffer, uint64_t end,
                   const Device& device) {
  const uint64_t limit = vulkan::vulkan_limits(device).max_storage_buffer_range;
  const uint64_t bytes = vulkan::vulkan_bound_bytes(buffer, end);
  if (bytes > limit)
    throw Error(ErrorCode::Unsupported,
                what + ": the Vulkan shader would address " + std::to_string(bytes) +
                    " bytes from where the buffer is bound, past the device's " +
                    "maxStorageBufferRange of " + std::to_string(limit) + " bytes");
}

// The same for an operand of `op`, up to the last element its view reaches.
void check_binding(std::string_view op, const Tensor& t) {
  if (!t.defined() || t.numel() == 0) return;
  const int64_t last = tensor::furthest_element(t.shape(), t.strides(), t.offset());
  check_binding(std::string(op) + " of " + t.describe(), t.storage(),
                static_cast<uint64_t>(last + 1) * t.element_size(), t.device());
}

// Contiguous operands of one shape walk a single dimension; broadcasting and strides keep the
// others apart, so the advice names both ways of merging them.
void check_dims(size_t dims, size_t limit, std::string_view op,
                std::initializer_list<const Tensor*> operands) {
  if (dims <= limit) return;
  std::string described;
  for (const Tensor* t : operands) described += (described.empty() ? "" : ", ") + t->describe();
  throw Error(ErrorCode::Unsupported,
              std::string(op) + " of " + described + ": the operands walk " + std::to_string(dims) +
                  " separate dimensions, more than the " + std::to_string(limit) +
                  " the Vulkan shaders take; call contiguous() on strided operands and expand "
                  "broadcast ones to the result's shape first");
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
  if (!layout.flat) check_dims(layout.shape.size(), kShaderDims, name(op), {&a, &b});
  for (const Tensor* t : {&a, &b, &out}) check_binding(name(op), *t);
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
  if (!layout.flat) check_dims(layout.shape.size(), kShaderDims, name(op), {&x});
  for (const Tensor* t : {&x, &out}) check_binding(name(op), *t);
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
  if (!layout.flat) check_dims(layout.shape.size(), kWhereDims, "where", {&cond, &a, &b});
  for (const Tensor* t : {&cond, &a, &b, &out}) check_binding("where", *t);
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

void vulkan_embedding(const Tensor& table, const Tensor& indices, const Tensor& out,
                      Stream& stream) {
  for (const Tensor* t : {&table, &indices, &out}) check_binding("embedding", *t);
  const std::string shader = "gather_" + std::to_string(table.element_size()) +
                             (indices.dtype() == DType::i64 ? "_i64" : "_i32");
  const Kernel kernel = shader_kernel(table.device(), shader, {});
  stream.launch(
      kernel, LaunchConfig::linear(static_cast<uint64_t>(out.numel())),
      {out.storage(), indices.storage(), table.storage(),
       index32(indices.offset(), "embedding", indices), index32(table.offset(), "embedding", table),
       index32(table.size(1), "embedding", table), index32(table.size(0), "embedding", table),
       index32(out.numel(), "embedding", out)});
}

void vulkan_embedding_backward(const Tensor& grad, const Tensor& indices, const Tensor& out,
                               Stream& stream) {
  const std::string_view op = "embedding_backward";
  for (const Tensor* t : {&grad, &indices, &out}) check_binding(op, *t);
  const int64_t n = indices.numel();
  // The links are 32-bit ints holding -1 - next at a later position, and rows compare as I.
  constexpr int64_t kMostPositions = std::numeric_limits<int32_t>::max();
  if (n > kMostPositions || out.size(0) > kMostPositions)
    throw Error(ErrorCode::Unsupported,
                std::string(op) + " of " + grad.describe() + " into " + out.describe() +
                    ": the Vulkan shaders take at most 2^31 - 1 indices and rows");
  // Every argument first: nothing is enqueued for what a shader cannot index.
  const uint32_t dim = index32(out.size(1), op, out), rows = index32(out.size(0), op, out);
  const uint32_t out_at = index32(out.offset(), op, out);
  index32(indices.offset() + n, op, indices);
  index32(grad.offset() + grad.numel(), op, grad);
  const std::string index = indices.dtype() == DType::i64 ? "_i64" : "_i32";
  const Kernel links_kernel = shader_kernel(grad.device(), "embedding_links" + index, {});
  const Kernel rows_kernel = shader_kernel(
      grad.device(), "embedding_add_rows_" + std::string(dtype_name(grad.dtype())) + index, {});
  // Chunks of positions: a position's scans for its neighbours of equal index stay within its
  // chunk, n x 4096 compares at worst rather than n^2 (32 768 distinct indices on lavapipe: 978
  // ms as one chunk), well under lavapipe's 65535 loop rounds; each chunk adds to the sums of
  // those before it, in order.
  constexpr int64_t kChunk = 4096;
  const Tensor links = empty_beside(indices, {std::min(n, kChunk)}, DType::i32);
  stream.fill(out.storage(), uint8_t{0}, static_cast<size_t>(out.numel()) * out.element_size(),
              static_cast<size_t>(out.offset()) * out.element_size());
  for (int64_t first = 0; first < n; first += kChunk) {
    const auto count = static_cast<uint32_t>(std::min(kChunk, n - first));
    const auto at = static_cast<uint32_t>(indices.offset() + first);
    stream.launch(links_kernel, LaunchConfig::linear(count),
                  {links.storage(), indices.storage(), at, count});
    stream.launch(rows_kernel, LaunchConfig::linear(uint64_t{count} * dim),
                  {out.storage(), grad.storage(), indices.storage(), links.storage(), out_at,
                   static_cast<uint32_t>(grad.offset() + first * dim), at, dim, rows, count});
  }
}

void vulkan_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                 Stream& stream) {
  if (layout.count == 0) return;
  if (!layout.flat) check_dims(layout.shape.size(), kShaderDims, "cast", {&x});
  for (const Tensor* t : {&x, &out}) check_binding("cast", *t);
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
  check_dims(layout.kept.size(), kReduceDims, name(op), {&x});
  check_dims(layout.reduced.size(), kReduceDims, name(op), {&x});
  for (const Tensor* t : {&x, &out}) check_binding(name(op), *t);
  // llvmpipe (Vulkan on the CPU) ends a shader's loops after 65 535 iterations in all, and the
  // loop over an output's elements takes count / (128 x 32) of them (common.glsl). One binding
  // bounds that for contiguous data; a view that repeats elements (stride 0) can ask for more,
  // which is refused rather than cut short (a few iterations are left to the folds after).
  constexpr int64_t kPerRound = int64_t{kReduceGroup} * 32, kRounds = 65535 - 64;
  if (x.device().info().kind == DeviceKind::cpu && layout.count > kPerRound * kRounds)
    throw Error(ErrorCode::Unsupported,
                std::string(name(op)) + " of " + x.describe() + " on " + x.device().id() + ": " +
                    std::to_string(layout.count) + " elements an output, more than " +
                    std::to_string(kPerRound * kRounds) +
                    " (lavapipe's limit of 65 535 loop iterations a shader); reduce in parts");
  // reduce, reduce_f16, reduce_f64, each with subgroup arithmetic where the device has it;
  // reduce_i8 ... reduce_u64 without.
  std::string shader = "reduce";
  if (x.dtype() != DType::f32) shader += "_" + std::string(dtype_name(x.dtype()));
  if (!is_integer(x.dtype()) && x.device().info().has_feature(vulkan::kSubgroupReductions))
    shader += "_subgroup";
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
  for (const Tensor* t : {&a.x, &a.weight, &a.bias, &a.out}) check_binding(op.name, *t);
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

void vulkan_norm_backward(const OpDescriptor& op, const NormBackwardArgs& a, Stream& stream) {
  if (a.rows == 0 || a.cols == 0) return;
  const Device device = a.x.device();
  const bool has_weight = a.weight.defined();
  const bool want_weight = a.weight_grad.defined(), want_bias = a.bias_grad.defined();
  const bool want_parameters = want_weight || want_bias;
  for (const Tensor* t : {&a.x, &a.grad, &a.weight, &a.dx, &a.weight_grad, &a.bias_grad})
    check_binding(op.name, *t);
  // Every index first: nothing is enqueued for what a shader cannot address.
  const uint32_t rows = index32(a.rows, op.name, a.x), cols = index32(a.cols, op.name, a.x);
  index32(a.rows * a.cols, op.name, a.x);
  for (const Tensor* t : {&a.x, &a.grad, &a.dx}) index32(t->offset() + t->numel(), op.name, *t);
  const auto [parts, chunk] = norm_column_parts(a.rows, a.cols);
  if (want_parameters) index32(parts * a.cols, op.name, a.x);
  // Each row's mean and rstd, for the parameters' gradients (bound to dx when not asked).
  const Tensor stats = want_parameters ? empty_beside(a.x, {2 * a.rows}, DType::f32) : a.dx;
  const Tensor& weight = has_weight ? a.weight : a.x;  // an absent one bound to x, never read
  const uint32_t centred = op.name == "layer_norm_backward" ? 1u : 0u;
  LaunchConfig config = LaunchConfig::linear(uint64_t{rows} * kReduceGroup);
  config.local = {kReduceGroup, 1, 1};
  stream.launch(shader_kernel(device, "norm_backward_rows",
                              {centred, has_weight ? 1u : 0u, want_parameters ? 1u : 0u}),
                config,
                {a.dx.storage(), stats.storage(), a.x.storage(), a.grad.storage(), weight.storage(),
                 index32(a.dx.offset(), op.name, a.dx), index32(stats.offset(), op.name, stats),
                 index32(a.x.offset(), op.name, a.x), index32(a.grad.offset(), op.name, a.grad),
                 has_weight ? index32(weight.offset(), op.name, weight) : 0u, rows, cols,
                 static_cast<float>(a.eps)});
  if (!want_parameters) return;
  // A sum not asked for is bound to the other's parts and gradient, which it then never writes.
  const Tensor weight_parts = empty_beside(a.x, {parts * a.cols}, DType::f32);
  const Tensor bias_parts =
      want_weight && want_bias ? empty_beside(a.x, {parts * a.cols}, DType::f32) : weight_parts;
  const std::initializer_list<uint32_t> wanted{want_weight ? 1u : 0u, want_bias ? 1u : 0u};
  stream.launch(shader_kernel(device, "norm_backward_columns", wanted),
                LaunchConfig::linear(static_cast<uint64_t>(parts * a.cols)),
                {weight_parts.storage(), bias_parts.storage(), a.x.storage(), a.grad.storage(),
                 stats.storage(), index32(a.x.offset(), op.name, a.x),
                 index32(a.grad.offset(), op.name, a.grad), index32(stats.offset(), op.name, stats),
                 rows, cols, static_cast<uint32_t>(parts), static_cast<uint32_t>(chunk)});
  const Tensor& weight_grad = want_weight ? a.weight_grad : a.bias_grad;
  const Tensor& bias_grad = want_bias ? a.bias_grad : a.weight_grad;
  stream.launch(
      shader_kernel(device, "norm_backward_final", wanted), LaunchConfig::linear(cols),
      {weight_grad.storage(), bias_grad.storage(), weight_parts.storage(), bias_parts.storage(),
       index32(weight_grad.offset(), op.name, weight_grad),
       index32(bias_grad.offset(), op.name, bias_grad), cols, static_cast<uint32_t>(parts)});
}

void vulkan_gemm(const GemmDesc& g, Stream& stream) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const Device device = stream.device();
  const std::string what = "matmul " + std::to_string(g.m) + "x" + std::to_string(g.k) + " @ " +
                           std::to_string(g.k) + "x" + std::to_string(g.n) + " on " +
                           device.info().id;
  const auto check = [&](int64_t value) {
    if (value < 0 || value > std::numeric_limits<uint32_t>::max())
      throw Error(
          ErrorCode::Unsupported,
          what + ": Vulkan shaders index with 32 bits, and this needs " + std::to_string(value));
    return static_cast<uint32_t>(value);
  };
  // Each operand's end: its last batch entry's last row (column, transposed) ends it, and every
  // index the shader forms in it, in any part launched below, lies before.
  const auto end_of = [&](const GemmOperand& o, int64_t rows, int64_t cols) {
    const int64_t lines = o.transposed ? cols : rows, length = o.transposed ? rows : cols;
    if (lines == 0 || length == 0) return static_cast<int64_t>(o.offset);  // k == 0: unread
    return static_cast<int64_t>(o.offset) + (g.batch - 1) * o.batch_stride + (lines - 1) * o.ld +
           length;
  };
  const std::tuple<const char*, const GemmOperand*, int64_t> ends[] = {
      {"A", &g.a, end_of(g.a, g.m, g.k)},
      {"B", &g.b, end_of(g.b, g.k, g.n)},
      {"C", &g.c, end_of(g.c, g.m, g.n)}};
  for (const auto& [label, operand, end] : ends) {
    check(end);
    check_binding(what + ", its " + label, Buffer(operand->buffer),
                  static_cast<uint64_t>(end) * size_of(g.dtype), device);
  }
  for (int64_t value : {g.m, g.n, g.k, g.a.ld, g.b.ld, g.c.ld, g.a.batch_stride, g.b.batch_stride,
                        g.c.batch_stride})
    check(value);
  // A Vulkan device on the CPU (lavapipe) runs barriers as switches between invocations: the
  // untiled shader there (matmul_direct.comp), the shared-memory tiles elsewhere.
  const bool on_cpu = device.info().kind == DeviceKind::cpu && g.dtype == DType::f32;
  const Kernel kernel =
      shader_kernel(device,
                    on_cpu                  ? "matmul_direct"
                    : g.dtype == DType::f32 ? "matmul"
                                            : "matmul_" + std::string(dtype_name(g.dtype)),
                    {});
  // In parts: of at most the device's work-group counts (columns in x, rows in y, the batch in
  // z), and of k within kMatmulRounds (the parts after the first add to C; f16's C rounds in
  // between). Each part starts where its offsets say, within the ends checked above.
  const vulkan::VulkanLimits limits = vulkan::vulkan_limits(device);
  const int64_t n_part = int64_t{limits.max_group_count[0]} * kTile;
  const int64_t m_part = int64_t{limits.max_group_count[1]} * kTile;
  const int64_t batch_part = limits.max_group_count[2];
  const int64_t k_part = on_cpu ? kMatmulRounds : kMatmulRounds * kTile;
  const auto at = [](const GemmOperand& o, int64_t batch, int64_t row, int64_t col) {
    // (row, col) of op(o): a transposed operand's memory holds the transpose.
    return static_cast<uint32_t>(static_cast<int64_t>(o.offset) + batch * o.batch_stride +
                                 (o.transposed ? col * o.ld + row : row * o.ld + col));
  };
  for (int64_t b0 = 0; b0 < g.batch; b0 += batch_part)
    for (int64_t m0 = 0; m0 < g.m; m0 += m_part)
      for (int64_t n0 = 0; n0 < g.n; n0 += n_part)
        for (int64_t k0 = 0; k0 == 0 || k0 < g.k; k0 += k_part) {
          const int64_t batch = std::min(batch_part, g.batch - b0);
          const int64_t m = std::min(m_part, g.m - m0), n = std::min(n_part, g.n - n0);
          const int64_t k = std::min(k_part, g.k - k0);
          std::vector<KernelArg> args{Buffer(g.c.buffer),
                                      Buffer(g.a.buffer),
                                      Buffer(g.b.buffer),
                                      at(g.c, b0, m0, n0),
                                      at(g.a, b0, m0, k0),
                                      at(g.b, b0, k0, n0),
                                      static_cast<uint32_t>(m),
                                      static_cast<uint32_t>(n),
                                      static_cast<uint32_t>(k),
                                      static_cast<uint32_t>(g.c.ld),
                                      static_cast<uint32_t>(g.a.ld),
                                      static_cast<uint32_t>(g.b.ld),
                                      static_cast<uint32_t>(g.c.batch_stride),
                                      static_cast<uint32_t>(g.a.batch_stride),
                                      static_cast<uint32_t>(g.b.batch_stride),
                                      g.a.transposed ? 1u : 0u,
                                      g.b.transposed ? 1u : 0u,
                                      k0 == 0 ? 0u : 1u};
          LaunchConfig config = LaunchConfig::grid(
              (static_cast<uint64_t>(n) + kTile - 1) / kTile * kTile,
              (static_cast<uint64_t>(m) + kTile - 1) / kTile * kTile, static_cast<uint64_t>(batch));
          config.local = {kTile, kTile, 1};
          stream.launch(kernel, config, args);
        }
}

}  // namespace hal::ops

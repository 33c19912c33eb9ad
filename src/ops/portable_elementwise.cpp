// Elementwise ops on devices that compile portable kernels (OpenCL, CUDA):
// kernels/ops/elementwise.kernel, compiled once per op and dtype (the device's kernel caches keep
// them), flat where every operand is contiguous and strided otherwise.

#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "ops/elementwise.hpp"
#include "ops/portable_defines.hpp"

namespace hal::ops {
namespace {

Kernel compile(const Device& device, std::string_view entry, std::vector<std::string> defines,
               std::string_view file = "ops/elementwise") {
  return detail::compile_program(device, file, entry, defines);
}

// The layout's sizes and then each operand's strides, padded to kMaxDims at the front.
template <size_t kInputs>
void append_layout(const ElementwiseLayout<kInputs>& layout, std::vector<KernelArg>& args) {
  const size_t pad = kMaxDims - layout.shape.size();
  for (size_t d = 0; d < kMaxDims; ++d)
    args.emplace_back(static_cast<uint64_t>(d < pad ? 1 : layout.shape[d - pad]));
  for (size_t v = 0; v < kInputs; ++v)
    for (size_t d = 0; d < kMaxDims; ++d)
      args.emplace_back(static_cast<uint64_t>(d < pad ? 0 : layout.strides[v][d - pad]));
}

void check_rank(std::string_view op, const Tensor& x, size_t rank) {
  if (rank > kMaxDims)
    throw Error(ErrorCode::Unsupported, std::string(op) + " of " + x.describe() +
                                            ": the operands walk " + std::to_string(rank) +
                                            " separate dimensions, more than the " +
                                            std::to_string(kMaxDims) +
                                            " the portable kernels take; call contiguous() "
                                            "first");
}

}  // namespace

void portable_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                     const ElementwiseLayout<2>& layout, Stream& stream) {
  if (!layout.flat) check_rank(name(op), a, layout.shape.size());
  const Kernel kernel = compile(a.device(), layout.flat ? "binary_flat" : "binary_strided",
                                binary_defines(op, a.dtype()));
  std::vector<KernelArg> args{out.storage(),
                              a.storage(),
                              b.storage(),
                              static_cast<uint64_t>(layout.offsets[0]),
                              static_cast<uint64_t>(layout.offsets[1]),
                              static_cast<uint64_t>(layout.count)};
  if (!layout.flat) append_layout(layout, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void portable_unary(Unary op, const Tensor& x, const Tensor& out,
                    const ElementwiseLayout<1>& layout, Stream& stream) {
  if (!layout.flat) check_rank(name(op), x, layout.shape.size());
  const Kernel kernel = compile(x.device(), layout.flat ? "unary_flat" : "unary_strided",
                                unary_defines(op, x.dtype()));
  std::vector<KernelArg> args{out.storage(), x.storage(), static_cast<uint64_t>(layout.offsets[0]),
                              static_cast<uint64_t>(layout.count)};
  if (!layout.flat) append_layout(layout, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void portable_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                    const ElementwiseLayout<3>& layout, Stream& stream) {
  if (!layout.flat) check_rank("where", a, layout.shape.size());
  const Kernel kernel = compile(a.device(), layout.flat ? "where_flat" : "where_strided",
                                where_defines(a.element_size()));
  std::vector<KernelArg> args{out.storage(),
                              cond.storage(),
                              a.storage(),
                              b.storage(),
                              static_cast<uint64_t>(layout.offsets[0]),
                              static_cast<uint64_t>(layout.offsets[1]),
                              static_cast<uint64_t>(layout.offsets[2]),
                              static_cast<uint64_t>(layout.count)};
  if (!layout.flat) append_layout(layout, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void portable_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                   Stream& stream) {
  if (!layout.flat) check_rank("cast", x, layout.shape.size());
  const Kernel kernel = compile(x.device(), layout.flat ? "cast_flat" : "cast_strided",
                                cast_defines(x.dtype(), out.dtype()), "ops/cast");
  std::vector<KernelArg> args{out.storage(), x.storage(), static_cast<uint64_t>(layout.offsets[0]),
                              static_cast<uint64_t>(layout.count)};
  if (!layout.flat) append_layout(layout, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

}  // namespace hal::ops

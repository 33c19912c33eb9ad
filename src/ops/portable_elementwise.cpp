// Elementwise ops on devices that compile portable kernels (OpenCL, CUDA):
// kernels/ops/elementwise.kernel, compiled once per op and dtype (the device's kernel caches keep
// them), flat where every operand is contiguous and strided otherwise.
#include <cctype>

#include "elementwise.hpp"
#include "embedded_kernels.hpp"
#include "hal/error.hpp"

namespace hal::ops {
namespace {

std::string_view kernel_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::f16:
    case DType::bf16:
      return "ushort";
    case DType::i8:
      return "hal_i8";
    case DType::u8:
    case DType::boolean:
      return "uchar";
    case DType::i32:
      return "int";
    case DType::i64:
      return "hal_i64";
  }
  return "";
}

std::vector<std::string> defines(DType dtype, std::string_view kind, std::string_view op) {
  std::vector<std::string> out{std::string(kind), "VALUE_T=" + std::string(kernel_type(dtype))};
  std::string macro = "OP_";
  for (char c : op) macro += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out.push_back(std::move(macro));
  if (dtype == DType::f64) out.emplace_back("T_F64");
  if (dtype == DType::i32 || dtype == DType::i64) out.emplace_back("T_INTEGER");
  return out;
}

// The range of an integer dtype, as the cast kernel's OUT_* defines.
void append_integer_range(DType dtype, std::vector<std::string>& out) {
  struct Range {
    const char *min, *max, *low, *beyond;
  };
  Range range{};
  switch (dtype) {
    case DType::i8:
      range = {"(-128)", "127", "-128.0f", "128.0f"};
      break;
    case DType::u8:
      range = {"0", "255", "0.0f", "256.0f"};
      break;
    case DType::i32:
      range = {"(-2147483647-1)", "2147483647", "-2147483648.0f", "2147483648.0f"};
      break;
    default:
      range = {"(-(hal_i64)9223372036854775807-1)", "((hal_i64)9223372036854775807)",
               "-9223372036854775808.0f", "9223372036854775808.0f"};
      break;
  }
  out.insert(out.end(), {"OUT_INTEGER", std::string("OUT_MIN=") + range.min,
                         std::string("OUT_MAX=") + range.max, std::string("OUT_LOW=") + range.low,
                         std::string("OUT_BEYOND=") + range.beyond});
}

std::vector<std::string> cast_defines(DType from, DType to) {
  std::vector<std::string> out{"IN_T=" + std::string(kernel_type(from)),
                               "OUT_T=" + std::string(kernel_type(to))};
  if (from == DType::f16) out.emplace_back("IN_F16");
  if (from == DType::bf16) out.emplace_back("IN_BF16");
  if (from == DType::f32 || from == DType::f64 || from == DType::f16 || from == DType::bf16)
    out.emplace_back("IN_FLOATING");
  if (to == DType::f16) out.emplace_back("OUT_F16");
  if (to == DType::bf16) out.emplace_back("OUT_BF16");
  if (to == DType::boolean) out.emplace_back("OUT_BOOL");
  if (to == DType::i8 || to == DType::u8 || to == DType::i32 || to == DType::i64)
    append_integer_range(to, out);
  if (from == DType::f64 || to == DType::f64) out.emplace_back("ANY_F64");
  return out;
}

Kernel compile(const Device& device, std::string_view entry, std::vector<std::string> defines,
               std::string_view file = "ops/elementwise") {
  return device.compile({std::string(entry), std::string(embedded_kernel(file))},
                        {.defines = std::move(defines)});
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
  std::vector<std::string> binary_defines = defines(a.dtype(), "BINARY", name(op));
  if (is_comparison(op)) binary_defines.emplace_back("OUT_T=uchar");
  const Kernel kernel = compile(a.device(), layout.flat ? "binary_flat" : "binary_strided",
                                std::move(binary_defines));
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
                                defines(x.dtype(), "UNARY", name(op)));
  std::vector<KernelArg> args{out.storage(), x.storage(), static_cast<uint64_t>(layout.offsets[0]),
                              static_cast<uint64_t>(layout.count)};
  if (!layout.flat) append_layout(layout, args);
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)), args);
}

void portable_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                    const ElementwiseLayout<3>& layout, Stream& stream) {
  if (!layout.flat) check_rank("where", a, layout.shape.size());
  constexpr std::string_view kBySize[] = {"", "uchar", "ushort", "", "uint", "", "", "", "ulong"};
  const Kernel kernel =
      compile(a.device(), layout.flat ? "where_flat" : "where_strided",
              {"WHERE", "VALUE_T=" + std::string(kBySize[a.element_size()])});
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

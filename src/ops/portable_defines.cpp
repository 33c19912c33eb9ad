// The defines that pick a variant of hal's portable op kernels, one function per kernel file;
// shared by the ops and by the test that compiles every variant with NVRTC.
#include "ops/portable_defines.hpp"

#include <cctype>

namespace hal::ops {
namespace {

std::string upper(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

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
    case DType::i16:
      return "short";
    case DType::u16:
      return "ushort";
    case DType::u32:
      return "uint";
    case DType::u64:
      return "ulong";  // OpenCL's; the CUDA prelude defines it as unsigned long long
  }
  return "";
}

std::vector<std::string> op_defines(DType dtype, std::string_view kind, std::string_view op) {
  std::vector<std::string> out{std::string(kind), "VALUE_T=" + std::string(kernel_type(dtype))};
  out.push_back("OP_FN=hal_" + std::string(op));
  if (dtype == DType::f64) out.emplace_back("T_F64");
  if (is_integer(dtype) || dtype == DType::boolean) out.emplace_back("T_INTEGER");
  if (is_signed_integer(dtype)) out.emplace_back("T_SIGNED");
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
    case DType::i16:
      range = {"(-32768)", "32767", "-32768.0f", "32768.0f"};
      break;
    case DType::u16:
      range = {"0", "65535", "0.0f", "65536.0f"};
      break;
    case DType::i32:
      range = {"(-2147483647-1)", "2147483647", "-2147483648.0f", "2147483648.0f"};
      break;
    case DType::u32:
      range = {"0u", "4294967295u", "0.0f", "4294967296.0f"};
      break;
    case DType::u64:
      range = {"(ulong)0", "(~(ulong)0)", "0.0f", "18446744073709551616.0f"};
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

}  // namespace

std::vector<std::string> binary_defines(Binary op, DType dtype) {
  std::vector<std::string> out = op_defines(dtype, "BINARY", name(op));
  if (is_comparison(op)) out.emplace_back("OUT_T=uchar");
  return out;
}

std::vector<std::string> unary_defines(Unary op, DType dtype) {
  return op_defines(dtype, "UNARY", name(op));
}

std::vector<std::string> where_defines(size_t element_size) {
  constexpr std::string_view kBySize[] = {"", "uchar", "ushort", "", "uint", "", "", "", "ulong"};
  return {"WHERE", "VALUE_T=" + std::string(kBySize[element_size])};
}

std::vector<std::string> embedding_defines(DType dtype) {
  if (dtype == DType::f64) return {"VALUE_T=double", "T_F64"};
  return {"VALUE_T=float"};
}

std::vector<std::string> cast_defines(DType from, DType to) {
  std::vector<std::string> out{"IN_T=" + std::string(kernel_type(from)),
                               "OUT_T=" + std::string(kernel_type(to))};
  if (from == DType::f16) out.emplace_back("IN_F16");
  if (from == DType::f64) out.emplace_back("IN_F64");
  // More bits than a float holds: f16 and bf16 are reached through a float rounded to odd.
  if (from == DType::i32 || from == DType::i64 || from == DType::u32)
    out.emplace_back("IN_WIDE_INTEGER");
  if (from == DType::u64) out.emplace_back("IN_U64");
  if (from == DType::bf16) out.emplace_back("IN_BF16");
  if (from == DType::boolean) out.emplace_back("IN_BOOL");
  if (from == DType::f32 || from == DType::f64 || from == DType::f16 || from == DType::bf16)
    out.emplace_back("IN_FLOATING");
  if (to == DType::f16) out.emplace_back("OUT_F16");
  if (to == DType::bf16) out.emplace_back("OUT_BF16");
  if (to == DType::boolean) out.emplace_back("OUT_BOOL");
  if (is_integer(to)) append_integer_range(to, out);
  if (from == DType::f64 || to == DType::f64) out.emplace_back("ANY_F64");
  return out;
}

std::vector<std::string> reduce_defines(Reduce op, DType dtype, uint32_t group) {
  std::vector<std::string> out{"OP_" + upper(name(op)), "GROUP=" + std::to_string(group)};
  const bool sums = op == Reduce::sum || op == Reduce::mean;
  switch (dtype) {
    case DType::f32:
      out.insert(out.end(), {"VALUE_T=float", "ACC_T=float"});
      break;
    case DType::f64:
      out.insert(out.end(), {"VALUE_T=double", "ACC_T=double", "T_F64"});
      break;
    case DType::i8:
      out.insert(out.end(), {"VALUE_T=hal_i8", "ACC_T=int", "T_INTEGER", "T_I8"});
      break;
    case DType::u8:
      out.insert(out.end(), {"VALUE_T=uchar", "ACC_T=int", "T_INTEGER", "T_U8"});
      break;
    case DType::i16:
      out.insert(out.end(), {"VALUE_T=short", "ACC_T=int", "T_INTEGER", "T_I16"});
      break;
    case DType::u16:
      out.insert(out.end(), {"VALUE_T=ushort", "ACC_T=int", "T_INTEGER", "T_U16"});
      break;
    case DType::i32:
      out.insert(out.end(),
                 {"VALUE_T=int", sums ? "ACC_T=hal_i64" : "ACC_T=int", "T_INTEGER", "T_I32"});
      break;
    case DType::u32:
      out.insert(out.end(), {"VALUE_T=uint", "ACC_T=uint", "T_INTEGER", "T_U32"});
      break;
    case DType::u64:
      out.insert(out.end(), {"VALUE_T=ulong", "ACC_T=ulong", "T_INTEGER", "T_U64"});
      break;
    default:
      out.insert(out.end(), {"VALUE_T=hal_i64", "ACC_T=hal_i64", "T_INTEGER"});
      break;
  }
  return out;
}

std::vector<std::string> rowwise_defines(std::string_view op, DType dtype, uint32_t group) {
  std::vector<std::string> out{"GROUP=" + std::to_string(group)};
  if (!op.empty()) out.push_back("OP_" + upper(op));
  if (dtype == DType::f64)
    out.insert(out.end(), {"VALUE_T=double", "T_F64"});
  else
    out.emplace_back("VALUE_T=float");
  return out;
}

}  // namespace hal::ops

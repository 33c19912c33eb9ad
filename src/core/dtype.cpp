#include "hal/dtype.hpp"

namespace hal {

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f64:
      return "f64";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "bool";
    case DType::i16:
      return "i16";
    case DType::u16:
      return "u16";
    case DType::u32:
      return "u32";
    case DType::u64:
      return "u64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (DType dtype : kAllDTypes)
    if (to_string(dtype) == name) return dtype;
  return std::nullopt;
}

bool is_valid(DType dtype) noexcept {
  for (DType known : kAllDTypes)
    if (dtype == known) return true;
  return false;
}

size_t size_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::f64:
    case DType::i64:
    case DType::u64:
      return 8;
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

bool is_integer(DType dtype) noexcept {
  switch (dtype) {
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i32:
    case DType::u32:
    case DType::i64:
    case DType::u64:
      return true;
    default:
      return false;
  }
}

bool is_signed_integer(DType dtype) noexcept {
  return dtype == DType::i8 || dtype == DType::i16 || dtype == DType::i32 || dtype == DType::i64;
}

}  // namespace hal

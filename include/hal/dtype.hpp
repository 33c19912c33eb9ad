// Element types that devices, kernels and tensors speak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hal {

// The numbers never change once released (plugin.h's HAL_PLUGIN_DTYPE_* are the same): dtypes
// added later take the next numbers, whatever their place in kAllDTypes.
enum class DType : uint8_t { f32, f16, bf16, f64, i8, u8, i32, i64, boolean, i16, u16, u32, u64 };

// Floating, then integers by width (signed before unsigned), then bool: the order of listings.
inline constexpr DType kAllDTypes[] = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::u8,     DType::i16,
    DType::u16, DType::i32, DType::u32,  DType::i64, DType::u64, DType::boolean};

// "f32", "f16", "bf16", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool".
std::string_view to_string(DType dtype) noexcept;
std::optional<DType> parse_dtype(std::string_view name) noexcept;
// 0 for a value that is not one of the dtypes above (see is_valid).
size_t size_of(DType dtype) noexcept;
// Whether `dtype` holds integers (bool does not count), and whether those are signed.
bool is_integer(DType dtype) noexcept;
bool is_signed_integer(DType dtype) noexcept;
// Whether `dtype` is one of kAllDTypes: a DType cast from any other number is not.
bool is_valid(DType dtype) noexcept;

}  // namespace hal

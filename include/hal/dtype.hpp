// Element types that devices, kernels and tensors speak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hal {

enum class DType : uint8_t { f32, f16, bf16, f64, i8, u8, i32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16,
                                       DType::f64, DType::i8,  DType::u8,
                                       DType::i32, DType::i64, DType::boolean};

// "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "bool".
std::string_view to_string(DType dtype) noexcept;
std::optional<DType> parse_dtype(std::string_view name) noexcept;
// 0 for a value that is not one of the dtypes above (see is_valid).
size_t size_of(DType dtype) noexcept;
// Whether `dtype` is one of kAllDTypes: a DType cast from any other number is not.
bool is_valid(DType dtype) noexcept;

}  // namespace hal

// Sums and products of sizes, strides, offsets and byte counts that say when they overflow,
// instead of wrapping: a wrapped element count or extent would pass a bounds check and let a
// view reach memory outside its buffer.
#pragma once

#include <optional>
#include <type_traits>

namespace hal::detail {

template <class T>
requires std::is_integral_v<T> std::optional<T> checked_add(T a, T b) {
  T sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

template <class T>
requires std::is_integral_v<T> std::optional<T> checked_mul(T a, T b) {
  T product;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

}  // namespace hal::detail

#include "tensor/element_codec.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/storage_types.hpp"
#include "hal/error.hpp"

namespace hal::tensor {
namespace {

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

using hal::detail::BF16Bits, hal::detail::BoolByte, hal::detail::F16Bits;

template <class T>
void store(T value, void* out) {
  std::memcpy(out, &value, sizeof value);
}

template <class T>
double load(const void* in) {
  T value;
  std::memcpy(&value, in, sizeof value);
  return static_cast<double>(value);
}

template <class T>
void store_integer(double value, DType dtype, void* out, const char* operation) {
  const bool whole = std::isfinite(value) && std::trunc(value) == value;
  // The bounds as doubles: exact for every integer type's minimum; the maxima of i64 and u64
  // round up to 2^63 and 2^64, which are themselves out of range, hence `<`.
  const double low = static_cast<double>(std::numeric_limits<T>::min());
  const double high = static_cast<double>(std::numeric_limits<T>::max());
  if (!whole || value < low || !(value < high + 1.0))
    throw Error(ErrorCode::InvalidArgument, std::string(operation) + ": " + number_text(value) +
                                                " is not a value of " +
                                                std::string(to_string(dtype)));
  store(static_cast<T>(value), out);
}

// An integer into an integer type, refused out of its range. Wide holds every int64 and uint64.
__extension__ typedef __int128 Wide;

template <class T>
void store_exact(Wide value, DType dtype, void* out, const char* operation) {
  if (value < Wide{std::numeric_limits<T>::min()} || value > Wide{std::numeric_limits<T>::max()}) {
    const bool negative = value < 0;
    const std::string text = negative ? std::to_string(static_cast<int64_t>(value))
                                      : std::to_string(static_cast<uint64_t>(value));
    throw Error(ErrorCode::InvalidArgument, std::string(operation) + ": " + text +
                                                " is not a value of " +
                                                std::string(to_string(dtype)));
  }
  store(static_cast<T>(value), out);
}

// The half types from each source, rounded once.
uint16_t to_f16(double value) { return f64_to_f16(value); }
uint16_t to_f16(int64_t value) { return i64_to_f16(value); }
uint16_t to_f16(uint64_t value) { return u64_to_f16(value); }
uint16_t to_bf16(double value) { return f64_to_bf16(value); }
uint16_t to_bf16(int64_t value) { return i64_to_bf16(value); }
uint16_t to_bf16(uint64_t value) { return u64_to_bf16(value); }

// `value` (a double, an int64_t or a uint64_t) as one element of `dtype`; an integer reaches an
// integer dtype without a double between.
template <class V>
void encode_value(V value, DType dtype, void* out, const char* operation) {
  hal::detail::with_storage_type<F16Bits, BF16Bits, BoolByte>(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, F16Bits>)
      store(to_f16(value), out);
    else if constexpr (std::is_same_v<T, BF16Bits>)
      store(to_bf16(value), out);
    else if constexpr (std::is_same_v<T, BoolByte>)
      store(static_cast<uint8_t>(value != 0), out);
    else if constexpr (std::is_floating_point_v<T>)
      store(static_cast<T>(value), out);  // one rounding: cvtsi2ss and its kin for integers
    else if constexpr (std::is_floating_point_v<V>)
      store_integer<T>(value, dtype, out, operation);
    else
      store_exact<T>(value, dtype, out, operation);
  });
}

}  // namespace

void encode_integer(int64_t value, DType dtype, void* out, const char* operation) {
  encode_value(value, dtype, out, operation);
}

void encode_integer(uint64_t value, DType dtype, void* out, const char* operation) {
  encode_value(value, dtype, out, operation);
}

std::string number_text(double value) {
  char text[32];  // the longest shortest form, "-2.2250738585072014e-308", is 24
  const std::to_chars_result written = std::to_chars(text, text + sizeof text, value);
  return std::string(text, written.ptr);
}

uint16_t f32_to_f16(float value) {
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u)  // infinity, or NaN kept quiet
    return static_cast<uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  if (magnitude >= 0x477ff000u)  // rounds to beyond the largest half (65504)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    // Adding 0.5 aligns the mantissa so that the float addition rounds to nearest even.
    const float shifted = float_of(magnitude) + 0.5f;
    return static_cast<uint16_t>(sign | (bits_of(shifted) - 0x3f000000u));
  }
  const uint32_t odd = (magnitude >> 13) & 1u;
  // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const uint32_t rounded = magnitude + 0xc8000fffu + odd;
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float f16_to_f32(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return float_of(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t f32_to_bf16(float value) {
  const uint32_t bits = bits_of(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it a NaN after truncation
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_to_f32(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

void encode(double value, DType dtype, void* out, const char* operation) {
  encode_value(value, dtype, out, operation);
}

double decode(DType dtype, const void* in) {
  double value = 0;
  hal::detail::with_storage_type<F16Bits, BF16Bits, BoolByte>(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, F16Bits> || std::is_same_v<T, BF16Bits>) {
      uint16_t bits;
      std::memcpy(&bits, in, sizeof bits);
      value = std::is_same_v<T, F16Bits> ? f16_to_f32(bits) : bf16_to_f32(bits);
    } else {
      value = load<std::conditional_t<std::is_same_v<T, BoolByte>, uint8_t, T>>(in);
    }
  });
  return value;
}

}  // namespace hal::tensor

namespace hal::tensor {
namespace {

// Truncated toward zero with the last bit set when anything was dropped ("round to odd").
float f64_to_f32_odd(double value) {
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value || !std::isfinite(value) || !std::isfinite(f)) {
    if (std::isfinite(value) && !std::isfinite(f)) {
      // Beyond float's range: the largest float, odd, still rounds to infinity in f16 and bf16.
      return std::copysign(std::numeric_limits<float>::max(), static_cast<float>(value));
    }
    return f;
  }
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) --bits;  // magnitudes order as bits
  return std::bit_cast<float>(bits | 1u);
}

float u64_to_f32_odd(uint64_t magnitude) {
  unsigned shift = 0;
  while ((magnitude >> shift) >= (uint64_t{1} << 24)) ++shift;
  uint64_t kept = magnitude >> shift;
  if (shift > 0 && (magnitude & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1;
  return std::ldexp(static_cast<float>(kept), static_cast<int>(shift));  // exact
}

float i64_to_f32_odd(int64_t value) {
  const uint64_t magnitude =
      value < 0 ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const float f = u64_to_f32_odd(magnitude);
  return value < 0 ? -f : f;
}

}  // namespace

uint16_t f64_to_f16(double value) { return f32_to_f16(f64_to_f32_odd(value)); }
uint16_t f64_to_bf16(double value) { return f32_to_bf16(f64_to_f32_odd(value)); }
uint16_t i64_to_f16(int64_t value) { return f32_to_f16(i64_to_f32_odd(value)); }
uint16_t i64_to_bf16(int64_t value) { return f32_to_bf16(i64_to_f32_odd(value)); }
uint16_t u64_to_f16(uint64_t value) { return f32_to_f16(u64_to_f32_odd(value)); }
uint16_t u64_to_bf16(uint64_t value) { return f32_to_bf16(u64_to_f32_odd(value)); }

}  // namespace hal::tensor

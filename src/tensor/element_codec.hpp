// Numbers as the bytes of one element of a dtype, on the host: for fills, arange and
// read-back checks. f16 and bf16 round to nearest even, as hardware conversions do.
#pragma once

#include <cstdint>
#include <string>

#include "hal/dtype.hpp"

namespace hal::tensor {

uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);
// From wider sources, rounded once: through a float rounded to odd, which the half types' far
// fewer bits then round correctly (rounding to nearest twice can be off by one ulp).
uint16_t f64_to_f16(double value);
uint16_t f64_to_bf16(double value);
uint16_t i64_to_f16(int64_t value);
uint16_t i64_to_bf16(int64_t value);
uint16_t u64_to_f16(uint64_t value);
uint16_t u64_to_bf16(uint64_t value);

// Writes `value` as one element of `dtype` (size_of(dtype) bytes) to `out`. Throws
// InvalidArgument naming `operation` for a value an integer dtype cannot hold (out of range,
// or not a whole number) and for NaN or infinity in one.
void encode(double value, DType dtype, void* out, const char* operation);
// The same for an integer, exactly: integer dtypes get it without a double between (2^53 + 1
// in i64 stays 2^53 + 1), floating ones its nearest value, rounded once.
void encode_integer(int64_t value, DType dtype, void* out, const char* operation);
void encode_integer(uint64_t value, DType dtype, void* out, const char* operation);
// Reads one element of `dtype`.
double decode(DType dtype, const void* in);

// The shortest text that reads back as `value` ("1e-07", "0.1", "1e+300", "inf"), for the
// messages of the creation functions: std::to_string's six decimals showed 1e-7 as "0.000000"
// and 1e300 as 301 digits.
std::string number_text(double value);

}  // namespace hal::tensor

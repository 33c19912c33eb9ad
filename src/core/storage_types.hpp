// The C++ type host code reads each dtype's elements as, chosen at run time: host kernels, the
// element codec, host-side reductions of collectives, ONNX's bounds and number formatting.
#pragma once

#include <cstdint>

#include "hal/dtype.hpp"

namespace hal::detail {

// Stand-ins for f16, bf16 and bool, for callers that only need to tell them apart (their own
// code says what to do with each): with_storage_type<F16Bits, BF16Bits, BoolByte>.
struct F16Bits {};
struct BF16Bits {};
struct BoolByte {};

// Calls body.template operator()<T>() with the storage type of `dtype`: float, double and the
// fixed-width integers, and for f16, bf16 and bool the caller's own types (their bits alone do
// not say how to compute with them).
template <class F16, class BF16, class Bool, class Body>
void with_storage_type(DType dtype, Body&& body) {
  switch (dtype) {
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    case DType::f16:
      return body.template operator()<F16>();
    case DType::bf16:
      return body.template operator()<BF16>();
    case DType::i8:
      return body.template operator()<int8_t>();
    case DType::u8:
      return body.template operator()<uint8_t>();
    case DType::i16:
      return body.template operator()<int16_t>();
    case DType::u16:
      return body.template operator()<uint16_t>();
    case DType::i32:
      return body.template operator()<int32_t>();
    case DType::u32:
      return body.template operator()<uint32_t>();
    case DType::i64:
      return body.template operator()<int64_t>();
    case DType::u64:
      return body.template operator()<uint64_t>();
    case DType::boolean:
      return body.template operator()<Bool>();
  }
}

}  // namespace hal::detail

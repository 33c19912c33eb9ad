#include "dist/host_reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/storage_types.hpp"
#include "hal/error.hpp"
#include "tensor/element_codec.hpp"

namespace hal::dist::detail {
namespace {

template <class T>
T combine(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Integers wrap, as MPI and NCCL do: computed unsigned, where wrapping is defined, and at
    // least as unsigned int (uint16_t would promote to int, whose 65535 * 65535 overflows).
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case ReduceOp::prod:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case ReduceOp::min:
        return std::min(a, b);
      case ReduceOp::max:
        return std::max(a, b);
    }
  } else {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        return a + b;
      case ReduceOp::prod:
        return a * b;
      // NaN wins, as in hal's maximum and minimum.
      case ReduceOp::min:
        return (a != a || b != b) ? a + b : std::min(a, b);
      case ReduceOp::max:
        return (a != a || b != b) ? a + b : std::max(a, b);
    }
  }
  return a;
}

template <class T>
void reduce_typed(ReduceOp op, void* dst, const void* src, size_t count) {
  T* out = static_cast<T*>(dst);
  const T* in = static_cast<const T*>(src);
  switch (op) {  // one loop per op, so that each vectorises
    case ReduceOp::sum:
    case ReduceOp::avg:
      for (size_t i = 0; i < count; ++i) out[i] = combine(ReduceOp::sum, out[i], in[i]);
      break;
    case ReduceOp::prod:
      for (size_t i = 0; i < count; ++i) out[i] = combine(ReduceOp::prod, out[i], in[i]);
      break;
    case ReduceOp::min:
      for (size_t i = 0; i < count; ++i) out[i] = combine(ReduceOp::min, out[i], in[i]);
      break;
    case ReduceOp::max:
      for (size_t i = 0; i < count; ++i) out[i] = combine(ReduceOp::max, out[i], in[i]);
      break;
  }
}

template <float (*Decode)(uint16_t), uint16_t (*Encode)(float)>
void reduce_half(ReduceOp op, void* dst, const void* src, size_t count) {
  auto* out = static_cast<uint16_t*>(dst);
  const auto* in = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < count; ++i) out[i] = Encode(combine(op, Decode(out[i]), Decode(in[i])));
}

}  // namespace

void reduce_into(DType dtype, ReduceOp op, void* dst, const void* src, size_t count) {
  bool reduced = false;
  using hal::detail::BF16Bits, hal::detail::BoolByte, hal::detail::F16Bits;
  hal::detail::with_storage_type<F16Bits, BF16Bits, BoolByte>(dtype, [&]<class T>() {
    reduced = true;
    if constexpr (std::is_same_v<T, F16Bits>) {
      reduce_half<tensor::f16_to_f32, tensor::f32_to_f16>(op, dst, src, count);
    } else if constexpr (std::is_same_v<T, BF16Bits>) {
      reduce_half<tensor::bf16_to_f32, tensor::f32_to_bf16>(op, dst, src, count);
    } else if constexpr (std::is_same_v<T, BoolByte>) {
      // Logic on bytes that hold 0 or 1: or for sum and max, and for prod and min.
      const bool any = op == ReduceOp::sum || op == ReduceOp::max || op == ReduceOp::avg;
      reduce_typed<uint8_t>(any ? ReduceOp::max : ReduceOp::min, dst, src, count);
    } else {
      reduce_typed<T>(op, dst, src, count);
    }
  });
  if (!reduced) throw Error(ErrorCode::Internal, "reduce_into: unknown dtype");
}

void divide_by_ranks(DType dtype, void* data, size_t count, int ranks) {
  switch (dtype) {
    case DType::f32: {
      auto* p = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= static_cast<float>(ranks);
      return;
    }
    case DType::f64: {
      auto* p = static_cast<double*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= static_cast<double>(ranks);
      return;
    }
    case DType::f16: {
      auto* p = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i)
        p[i] = tensor::f32_to_f16(tensor::f16_to_f32(p[i]) / static_cast<float>(ranks));
      return;
    }
    case DType::bf16: {
      auto* p = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i)
        p[i] = tensor::f32_to_bf16(tensor::bf16_to_f32(p[i]) / static_cast<float>(ranks));
      return;
    }
    default:
      throw Error(ErrorCode::InvalidArgument,
                  "avg of " + std::string(to_string(dtype)) + ": avg takes floating dtypes");
  }
}

bool reduces(ReduceOp op, DType dtype) {
  if (op != ReduceOp::avg) return true;
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

}  // namespace hal::dist::detail

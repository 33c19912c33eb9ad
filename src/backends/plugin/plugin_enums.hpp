// hal's enums and the numbers of plugin.h, mapped by name. Every switch names every enumerator
// (-Wswitch under -Werror), so a new enumerator on hal's side fails to compile until it is
// mapped; the static_asserts pin each released number of plugin.h, so renumbering either side
// fails to compile too.
#pragma once

#include <optional>

#include "hal/dtype.hpp"
#include "hal/error.hpp"
#include "hal/plugin.h"
#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

namespace hal::plugin {

constexpr hal_plugin_dtype to_plugin(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return HAL_PLUGIN_DTYPE_F32;
    case DType::f16:
      return HAL_PLUGIN_DTYPE_F16;
    case DType::bf16:
      return HAL_PLUGIN_DTYPE_BF16;
    case DType::f64:
      return HAL_PLUGIN_DTYPE_F64;
    case DType::i8:
      return HAL_PLUGIN_DTYPE_I8;
    case DType::u8:
      return HAL_PLUGIN_DTYPE_U8;
    case DType::i32:
      return HAL_PLUGIN_DTYPE_I32;
    case DType::i64:
      return HAL_PLUGIN_DTYPE_I64;
    case DType::boolean:
      return HAL_PLUGIN_DTYPE_BOOL;
    case DType::i16:
      return HAL_PLUGIN_DTYPE_I16;
    case DType::u16:
      return HAL_PLUGIN_DTYPE_U16;
    case DType::u32:
      return HAL_PLUGIN_DTYPE_U32;
    case DType::u64:
      return HAL_PLUGIN_DTYPE_U64;
  }
  return -1;  // not reached: every enumerator is mapped above
}

// The hal status a plugin's status stands for; nullopt for a number plugin.h does not define.
constexpr std::optional<ErrorCode> error_code_of(hal_status status) {
  switch (status) {
    case HAL_STATUS_OK:
      return ErrorCode::Ok;
    case HAL_STATUS_INVALID_ARGUMENT:
      return ErrorCode::InvalidArgument;
    case HAL_STATUS_OUT_OF_MEMORY:
      return ErrorCode::OutOfMemory;
    case HAL_STATUS_UNSUPPORTED:
      return ErrorCode::Unsupported;
    case HAL_STATUS_COMPILE_FAILED:
      return ErrorCode::CompileFailed;
    case HAL_STATUS_DEVICE_LOST:
      return ErrorCode::DeviceLost;
    case HAL_STATUS_UNAVAILABLE:
      return ErrorCode::BackendUnavailable;
    case HAL_STATUS_ABI_MISMATCH:
      return ErrorCode::PluginAbiMismatch;
    case HAL_STATUS_NOT_FOUND:
      return ErrorCode::NotFound;
    case HAL_STATUS_INVALID_STATE:
      return ErrorCode::InvalidState;
    case HAL_STATUS_OUT_OF_RANGE:
      return ErrorCode::OutOfRange;
    case HAL_STATUS_TIMEOUT:
      return ErrorCode::Timeout;
    case HAL_STATUS_INTERNAL:
      return ErrorCode::Internal;
    default:
      return std::nullopt;
  }
}

// The status plugin.h has for an error code; nullopt for codes that only hal raises.
constexpr std::optional<hal_status> status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::Ok:
      return HAL_STATUS_OK;
    case ErrorCode::InvalidArgument:
      return HAL_STATUS_INVALID_ARGUMENT;
    case ErrorCode::OutOfMemory:
      return HAL_STATUS_OUT_OF_MEMORY;
    case ErrorCode::Unsupported:
      return HAL_STATUS_UNSUPPORTED;
    case ErrorCode::CompileFailed:
      return HAL_STATUS_COMPILE_FAILED;
    case ErrorCode::DeviceLost:
      return HAL_STATUS_DEVICE_LOST;
    case ErrorCode::BackendUnavailable:
      return HAL_STATUS_UNAVAILABLE;
    case ErrorCode::PluginAbiMismatch:
      return HAL_STATUS_ABI_MISMATCH;
    case ErrorCode::NotFound:
      return HAL_STATUS_NOT_FOUND;
    case ErrorCode::InvalidState:
      return HAL_STATUS_INVALID_STATE;
    case ErrorCode::OutOfRange:
      return HAL_STATUS_OUT_OF_RANGE;
    case ErrorCode::Timeout:
      return HAL_STATUS_TIMEOUT;
    case ErrorCode::Internal:
      return HAL_STATUS_INTERNAL;
    case ErrorCode::AsyncFailure:
      return std::nullopt;
  }
  return std::nullopt;
}

// hal's built-in op as plugin.h numbers it; nullopt for ops that plugins do not offer.
constexpr std::optional<hal_plugin_op> plugin_op(ops::Binary op) {
  switch (op) {
    case ops::Binary::add:
      return HAL_PLUGIN_BINARY_ADD;
    case ops::Binary::sub:
      return HAL_PLUGIN_BINARY_SUB;
    case ops::Binary::mul:
      return HAL_PLUGIN_BINARY_MUL;
    case ops::Binary::div:
      return HAL_PLUGIN_BINARY_DIV;
    case ops::Binary::maximum:
      return HAL_PLUGIN_BINARY_MAXIMUM;
    case ops::Binary::minimum:
      return HAL_PLUGIN_BINARY_MINIMUM;
    case ops::Binary::pow:
    case ops::Binary::eq:
    case ops::Binary::ne:
    case ops::Binary::lt:
    case ops::Binary::le:
    case ops::Binary::gt:
    case ops::Binary::ge:
      return std::nullopt;
  }
  return std::nullopt;
}

constexpr std::optional<hal_plugin_op> plugin_op(ops::Unary op) {
  switch (op) {
    case ops::Unary::neg:
      return HAL_PLUGIN_UNARY_NEG;
    case ops::Unary::abs:
      return HAL_PLUGIN_UNARY_ABS;
    case ops::Unary::relu:
      return HAL_PLUGIN_UNARY_RELU;
    case ops::Unary::exp:
      return HAL_PLUGIN_UNARY_EXP;
    case ops::Unary::log:
      return HAL_PLUGIN_UNARY_LOG;
    case ops::Unary::sqrt:
      return HAL_PLUGIN_UNARY_SQRT;
    case ops::Unary::rsqrt:
      return HAL_PLUGIN_UNARY_RSQRT;
    case ops::Unary::tanh:
      return HAL_PLUGIN_UNARY_TANH;
    case ops::Unary::sigmoid:
      return HAL_PLUGIN_UNARY_SIGMOID;
    case ops::Unary::gelu:
      return HAL_PLUGIN_UNARY_GELU;
    case ops::Unary::silu:
      return HAL_PLUGIN_UNARY_SILU;
    case ops::Unary::erf:
    case ops::Unary::floor:
    case ops::Unary::ceil:
    case ops::Unary::round:
    case ops::Unary::sin:
    case ops::Unary::cos:
    case ops::Unary::tan:
    case ops::Unary::asin:
    case ops::Unary::acos:
    case ops::Unary::atan:
    case ops::Unary::sinh:
    case ops::Unary::cosh:
    case ops::Unary::asinh:
    case ops::Unary::acosh:
    case ops::Unary::atanh:
      return std::nullopt;  // not in plugin.h: plugins run them as portable kernels
  }
  return std::nullopt;
}

constexpr std::optional<hal_plugin_op> plugin_op(ops::Reduce op) {
  switch (op) {
    case ops::Reduce::sum:
      return HAL_PLUGIN_REDUCE_SUM;
    case ops::Reduce::mean:
      return HAL_PLUGIN_REDUCE_MEAN;
    case ops::Reduce::max:
      return HAL_PLUGIN_REDUCE_MAX;
    case ops::Reduce::min:
      return HAL_PLUGIN_REDUCE_MIN;
    case ops::Reduce::argmax:
      return HAL_PLUGIN_REDUCE_ARGMAX;
  }
  return std::nullopt;
}

// Released numbers of plugin.h: plugins compiled against them exist, so they never change.
static_assert(HAL_PLUGIN_DTYPE_F32 == 0 && HAL_PLUGIN_DTYPE_F16 == 1 &&
              HAL_PLUGIN_DTYPE_BF16 == 2 && HAL_PLUGIN_DTYPE_F64 == 3 && HAL_PLUGIN_DTYPE_I8 == 4 &&
              HAL_PLUGIN_DTYPE_U8 == 5 && HAL_PLUGIN_DTYPE_I32 == 6 && HAL_PLUGIN_DTYPE_I64 == 7 &&
              HAL_PLUGIN_DTYPE_BOOL == 8);
static_assert(HAL_STATUS_OK == 0 && HAL_STATUS_INVALID_ARGUMENT == 1 &&
              HAL_STATUS_OUT_OF_MEMORY == 2 && HAL_STATUS_UNSUPPORTED == 3 &&
              HAL_STATUS_COMPILE_FAILED == 4 && HAL_STATUS_DEVICE_LOST == 5 &&
              HAL_STATUS_UNAVAILABLE == 6 && HAL_STATUS_ABI_MISMATCH == 7 &&
              HAL_STATUS_NOT_FOUND == 8 && HAL_STATUS_INVALID_STATE == 9 &&
              HAL_STATUS_OUT_OF_RANGE == 10 && HAL_STATUS_TIMEOUT == 11 &&
              HAL_STATUS_INTERNAL == 12);
static_assert(HAL_PLUGIN_BINARY_ADD == 0 && HAL_PLUGIN_BINARY_SUB == 1 &&
              HAL_PLUGIN_BINARY_MUL == 2 && HAL_PLUGIN_BINARY_DIV == 3 &&
              HAL_PLUGIN_BINARY_MAXIMUM == 4 && HAL_PLUGIN_BINARY_MINIMUM == 5);
static_assert(HAL_PLUGIN_UNARY_NEG == 0 && HAL_PLUGIN_UNARY_ABS == 1 &&
              HAL_PLUGIN_UNARY_RELU == 2 && HAL_PLUGIN_UNARY_EXP == 3 &&
              HAL_PLUGIN_UNARY_LOG == 4 && HAL_PLUGIN_UNARY_SQRT == 5 &&
              HAL_PLUGIN_UNARY_RSQRT == 6 && HAL_PLUGIN_UNARY_TANH == 7 &&
              HAL_PLUGIN_UNARY_SIGMOID == 8 && HAL_PLUGIN_UNARY_GELU == 9 &&
              HAL_PLUGIN_UNARY_SILU == 10);
static_assert(HAL_PLUGIN_REDUCE_SUM == 0 && HAL_PLUGIN_REDUCE_MEAN == 1 &&
              HAL_PLUGIN_REDUCE_MAX == 2 && HAL_PLUGIN_REDUCE_MIN == 3 &&
              HAL_PLUGIN_REDUCE_ARGMAX == 4);

// plugin.h promises that its numbers are hal's (dtypes, statuses): the mappings are identities,
// for every enumerator.
constexpr bool dtypes_agree() {
  for (DType dtype : kAllDTypes)
    if (to_plugin(dtype) != static_cast<hal_plugin_dtype>(dtype)) return false;
  return sizeof kAllDTypes / sizeof kAllDTypes[0] == HAL_PLUGIN_DTYPE_U64 + 1;
}
static_assert(dtypes_agree(), "plugin.h's dtype numbers are hal::DType's");

constexpr bool statuses_agree() {
  for (hal_status status = HAL_STATUS_OK; status <= HAL_STATUS_INTERNAL; ++status) {
    const std::optional<ErrorCode> code = error_code_of(status);
    if (!code || static_cast<hal_status>(*code) != status || status_of(*code) != status)
      return false;
  }
  return !status_of(ErrorCode::AsyncFailure) && !error_code_of(HAL_STATUS_INTERNAL + 1);
}
static_assert(statuses_agree(), "plugin.h's statuses are hal::ErrorCode's");

}  // namespace hal::plugin

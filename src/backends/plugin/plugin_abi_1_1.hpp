// The structs of plugin.h 1.0 and 1.1 that 1.2 changed (struct_size came first in 1.2), as
// plugins built against those headers read them, and the conversions hal makes before calling
// such a plugin. tests/plugin/abi_1_1_layouts.cpp checks these against the 1.1 header itself.
#pragma once

#include <cstdint>
#include <cstring>

#include "hal/plugin.h"

namespace hal::plugin::abi_1_1 {

struct Tensor {
  hal_plugin_buffer buffer;
  uint64_t offset;
  hal_plugin_dtype dtype;
  uint32_t rank;
  int64_t shape[HAL_PLUGIN_MAX_RANK];
  int64_t strides[HAL_PLUGIN_MAX_RANK];
};

struct KernelArg {
  int32_t kind;
  uint32_t size;
  hal_plugin_buffer buffer;
  uint64_t offset;
  uint8_t value[8];
};

// The minor version from which a plugin reads hal_plugin_tensor and hal_plugin_kernel_arg with
// their struct_size.
inline constexpr uint32_t kSizedStructsSince = 2;

inline Tensor to_1_1(const hal_plugin_tensor& t) {
  Tensor out{t.buffer, t.offset, t.dtype, t.rank, {}, {}};
  std::memcpy(out.shape, t.shape, sizeof out.shape);
  std::memcpy(out.strides, t.strides, sizeof out.strides);
  return out;
}

inline KernelArg to_1_1(const hal_plugin_kernel_arg& a) {
  KernelArg out{a.kind, a.size, a.buffer, a.offset, {}};
  std::memcpy(out.value, a.value, sizeof out.value);
  return out;
}

}  // namespace hal::plugin::abi_1_1

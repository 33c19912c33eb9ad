// Memory as its backend names it: what hal hands to other libraries (DLPack, a vendor's
// library called on hal's memory) and how it takes theirs without a copy.
#pragma once

#include <cstddef>
#include <functional>

#include "hal/buffer.hpp"
#include "hal/device.hpp"

namespace hal {

// Where a buffer lives, in its backend's terms: `handle` names the allocation the buffer is part
// of, and the buffer starts `offset` bytes into it.
//   CPU:    the host address of the allocation
//   CUDA:   its CUdeviceptr (in the device's primary context), cast to void*
//   OpenCL: its cl_mem (a cl_mem cannot be offset: pass `offset` beside it)
//   Vulkan: its VkBuffer (bound to its own VkDeviceMemory; `offset` beside it)
struct NativeMemory {
  void* handle = nullptr;
  size_t offset = 0;
};

// InvalidArgument for an empty buffer; Unsupported on a device whose backend names no memory
// (plugins, whose memory is theirs).
NativeMemory native_memory(const Buffer& buffer);

// `bytes` bytes that another library owns, named as native_memory() names `device`'s memory
// (CPU: a host address; CUDA: a CUdeviceptr of the device, valid in its primary context), as a
// buffer of kind `device`, without a copy. hal never frees the memory: `release` runs, on
// whichever thread lets go last, once the last handle and the last enqueued work using the
// buffer have let go. The memory bypasses the caching allocator (its statistics do not count
// it) and is as aligned as given, not to 256 bytes. InvalidArgument for a null handle or 0
// bytes; Unsupported on backends that cannot adopt memory (OpenCL: a cl_mem belongs to the
// context that made it; plugins). When it throws, `release` is not called: the caller still
// owns the memory.
Buffer wrap_native_memory(const Device& device, void* handle, size_t bytes,
                          std::function<void()> release);

}  // namespace hal

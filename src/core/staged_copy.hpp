// Copies between devices that cannot reach each other, staged through host memory.
#pragma once

#include <cstddef>

#include "hal/backend.hpp"

namespace hal::detail {

// Blocking copies to and from a buffer of any device, for host callbacks: straight through its
// host address where it has one, else through its device's transfer stream.
void read_now(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes);
void write_now(const BufferPtr& dst, size_t dst_offset, const void* src, size_t bytes);

// Enqueues on `stream` a copy of `bytes` from `src` at `src_offset` to `dst` at `dst_offset`,
// where at least one buffer is not on the stream's device, or the backend could not copy
// directly. In stream order: later work on `stream` sees the data.
void enqueue_staged_copy(StreamImpl& stream, const BufferPtr& dst, size_t dst_offset,
                         const BufferPtr& src, size_t src_offset, size_t bytes);

}  // namespace hal::detail

#include "core/caching_allocator.hpp"
#include "core/device_core.hpp"
#include "hal/allocator.hpp"
#include "hal/stream.hpp"

namespace hal {

void record_stream(const Buffer& buffer, const Stream& stream) {
  if (!buffer) throw Error(ErrorCode::InvalidArgument, "record_stream: the buffer is empty");
  if (!stream) throw Error(ErrorCode::InvalidArgument, "record_stream: the stream is empty");
  // The point in `stream`'s work that the memory must outlive.
  Stream target = stream;
  Event done = target.record();
  DeviceImpl& device = buffer.impl()->device();
  detail::core_of(device)
      .allocator(buffer.kind())
      .hold_until(buffer.impl(), done.impl()->fence(), target.impl().get());
}

}  // namespace hal

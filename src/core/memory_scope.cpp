#include "hal/allocator.hpp"
#include "hal/backend.hpp"
#include "hal/device.hpp"

namespace hal {

MemoryScope::MemoryScope(Device device) : device_(device.impl()) {
  if (!device_)
    throw Error(ErrorCode::InvalidArgument, "MemoryScope of an empty (default-constructed) Device");
}

MemoryScope::~MemoryScope() = default;  // dropping the handles returns what no work still holds

Buffer MemoryScope::allocate(size_t bytes, MemoryKind kind) {
  Buffer buffer = Device(device_).allocate(bytes, kind);
  buffers_.push_back(buffer);
  return buffer;
}

}  // namespace hal

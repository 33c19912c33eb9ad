#include "hal/native_memory.hpp"

#include <string>

#include "hal/backend.hpp"

namespace hal {

NativeMemory native_memory(const Buffer& buffer) {
  if (!buffer)
    throw Error(ErrorCode::InvalidArgument,
                "native_memory of an empty (default-constructed) Buffer");
  const BufferImpl& storage = buffer.impl()->storage();
  void* handle = storage.native_handle();
  if (!handle) throw_unsupported(storage.device(), "naming its memory to other libraries");
  return {handle, buffer.impl()->storage_offset()};
}

Buffer wrap_native_memory(const Device& device, void* handle, size_t bytes,
                          std::function<void()> release) {
  if (!device)
    throw Error(ErrorCode::InvalidArgument,
                "wrap_native_memory on an empty (default-constructed) Device");
  const std::string& id = device.id();
  if (!handle)
    throw Error(ErrorCode::InvalidArgument, "wrap_native_memory on " + id + ": the handle is null");
  if (bytes == 0)
    throw Error(ErrorCode::InvalidArgument, "wrap_native_memory on " + id + ": 0 bytes");
  return Buffer(device.impl()->wrap_native(handle, bytes, std::move(release)));
}

}  // namespace hal

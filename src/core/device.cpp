#include "hal/device.hpp"

#include <limits>

#include "hal/backend.hpp"
#include "hal/units.hpp"

namespace hal {
namespace {

DeviceImpl& checked(const std::shared_ptr<DeviceImpl>& impl) {
  if (!impl)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Device");
  return *impl;
}

}  // namespace

const std::string& Device::id() const { return checked(impl_).info().id; }
const DeviceInfo& Device::info() const { return checked(impl_).info(); }
MemoryFigure Device::memory_free() const { return checked(impl_).memory_free(); }

Buffer Device::allocate(size_t bytes, MemoryKind kind) const {
  DeviceImpl& device = checked(impl_);
  const std::string& id = device.info().id;
  if (bytes == 0)
    throw Error(ErrorCode::InvalidArgument,
                "allocate on " + id + ": size is 0 bytes; ask for at least 1");
  if (!device.supports(kind))
    throw Error(ErrorCode::InvalidArgument, "allocate on " + id + ": the device has no " +
                                                std::string(to_string(kind)) + " memory");
  const uint64_t limit = device.info().limits.max_allocation_bytes;
  if (limit != 0 && bytes > limit) {
    MemoryFigure free = device.memory_free();
    throw Error(ErrorCode::OutOfMemory,
                "allocate on " + id + ": " + std::to_string(bytes) + " bytes (" +
                    format_bytes(bytes) + ") exceeds the device's largest allocation of " +
                    std::to_string(limit) + " bytes (" + format_bytes(limit) + "); total " +
                    format_bytes(device.info().memory_total.bytes) + ", free " +
                    format_bytes(free.bytes));
  }
  return Buffer(device.allocate(bytes, kind));
}

Stream Device::create_stream() const { return Stream(checked(impl_).create_stream()); }
Event Device::create_event() const { return Event(checked(impl_).create_event()); }

}  // namespace hal

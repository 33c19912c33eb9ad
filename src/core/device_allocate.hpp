// Device::allocate for a device named by its implementation: what an op that allocates its
// result beside an operand calls, so that no Device handle is made for it (a reference count's
// increment and decrement on a line every thread of the device touches).
#pragma once

#include <cstddef>
#include <memory>

#include "hal/buffer.hpp"
#include "hal/device.hpp"

namespace hal::detail {

// As Device::allocate (the same checks, errors and trace span); `device` may be null, which is
// the error of a default-constructed Device.
Buffer allocate(const std::shared_ptr<DeviceImpl>& device, size_t bytes,
                MemoryKind kind = MemoryKind::device, AllocationMode mode = AllocationMode::cached);

}  // namespace hal::detail

// Device: a handle to one compute device, obtained from the Registry.
#pragma once

#include <memory>
#include <string>

#include "hal/buffer.hpp"
#include "hal/device_info.hpp"
#include "hal/event.hpp"
#include "hal/stream.hpp"

namespace hal {

class DeviceImpl;

// Cheap to copy; devices live as long as the process. Thread-safe.
class Device {
 public:
  Device() = default;
  explicit Device(std::shared_ptr<DeviceImpl> impl) : impl_(std::move(impl)) {}

  const std::string& id() const;
  const DeviceInfo& info() const;
  // Free memory read now (info().memory_free is the figure at discovery).
  MemoryFigure memory_free() const;

  // Throws InvalidArgument for 0 bytes or a kind the device lacks, OutOfMemory with the
  // figures when the device cannot provide the memory.
  Buffer allocate(size_t bytes, MemoryKind kind = MemoryKind::device) const;
  Stream create_stream() const;
  Event create_event() const;

  explicit operator bool() const { return impl_ != nullptr; }
  bool operator==(const Device& other) const { return impl_ == other.impl_; }
  const std::shared_ptr<DeviceImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<DeviceImpl> impl_;
};

}  // namespace hal

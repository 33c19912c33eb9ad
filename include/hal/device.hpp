// Device: a handle to one compute device, obtained from the Registry.
#pragma once

#include <memory>
#include <string>

#include "hal/allocator.hpp"
#include "hal/buffer.hpp"
#include "hal/device_info.hpp"
#include "hal/event.hpp"
#include "hal/kernel.hpp"
#include "hal/stream.hpp"

namespace hal {

class DeviceImpl;

// How Device::allocate gets its memory: from the device's caching allocator (the default), or
// straight from the backend, bypassing the cache (for debugging, or memory handed to others).
enum class AllocationMode : uint8_t { cached, direct };

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
  Buffer allocate(size_t bytes, MemoryKind kind = MemoryKind::device,
                  AllocationMode mode = AllocationMode::cached) const;

  // The caching allocator of a memory kind the device has (allocator.hpp): statistics,
  // snapshots, limits, configuration and pressure callbacks. Throws InvalidArgument for a kind
  // the device lacks.
  Allocator& allocator(MemoryKind kind = MemoryKind::device) const;
  // Returns cached, unused segments of every memory kind the device has to the backend.
  void empty_cache() const;
  Stream create_stream() const;
  Event create_event() const;
  // Waits for the work enqueued so far on every stream of this device made by create_stream
  // and still alive. Every stream is waited for; then the first failure found is thrown
  // (AsyncFailure, DeviceLost ...). InvalidState from a host callback of one of those streams,
  // which would wait for itself, before waiting for any stream.
  void synchronize() const;

  // Compiles a kernel for this device, or returns it from the kernel caches (see
  // Kernel::origin). Throws CompileFailed with the compiler's log, the kernel's name and the
  // device; Unsupported where the device compiles no kernels of that language.
  Kernel compile(const KernelSource& source, const CompileOptions& options = {}) const;
  // Forgets the kernels compiled so far in this process (the on-disk cache stays).
  void clear_kernel_cache() const;

  explicit operator bool() const { return impl_ != nullptr; }
  bool operator==(const Device& other) const { return impl_ == other.impl_; }
  const std::shared_ptr<DeviceImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<DeviceImpl> impl_;
};

// Device::synchronize for every device of the process that has made a stream: all work enqueued
// so far on any stream is done when it returns. Every stream is waited for before the first
// failure found is thrown; InvalidState from a host callback of any of them, as Device's.
void synchronize_all();

}  // namespace hal

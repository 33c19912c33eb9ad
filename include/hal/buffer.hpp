// Buffer: memory owned by a device, released when the last handle (and the last piece of
// enqueued work that uses it) lets go.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace hal {

class BufferImpl;
class Device;

enum class MemoryKind : uint8_t {
  device,       // device memory; host-addressable only on host-memory devices (the CPU)
  pinned_host,  // page-locked host memory the device reaches directly: fast staging
  unified,      // one address valid on the host and the device
};
std::string_view to_string(MemoryKind kind) noexcept;

// A handle with shared ownership: copies refer to the same memory. Work enqueued on a stream
// holds the buffers it uses, so dropping a handle never frees memory that work still reads.
// Thread-safe as a shared_ptr is.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<BufferImpl> impl) : impl_(std::move(impl)) {}

  size_t size() const;
  MemoryKind kind() const;
  Device device() const;
  // True when the host may read and write the memory directly (CPU memory, pinned, unified).
  bool host_accessible() const;
  // The host address of the memory, 256-byte aligned; throws Unsupported when
  // !host_accessible(). Reading it while stream work writes the buffer is a race: synchronize
  // first.
  void* host_data() const;
  template <class T>
  T* data() const {
    return static_cast<T*>(host_data());
  }

  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<BufferImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<BufferImpl> impl_;
};

}  // namespace hal

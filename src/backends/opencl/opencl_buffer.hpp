// OpenCL memory: a cl_mem; host-visible kinds (pinned_host, unified) are allocated by the
// driver in host memory (CL_MEM_ALLOC_HOST_PTR) and stay mapped for their whole life, so the
// host addresses them directly while the device reaches them through the same cl_mem.
#pragma once

#include "backends/opencl/opencl_device.hpp"

namespace hal::opencl {

class OpenClBuffer final : public BufferImpl {
 public:
  OpenClBuffer(std::shared_ptr<OpenClDevice> device, size_t size, MemoryKind kind, cl_mem mem,
               void* mapped)
      : BufferImpl(device, size, kind), device_(std::move(device)), mem_(mem), mapped_(mapped) {}
  ~OpenClBuffer() override;

  void* host_pointer() const noexcept override { return mapped_; }
  void* native_handle() const noexcept override { return mem_; }
  cl_mem mem() const { return mem_; }

 private:
  std::shared_ptr<OpenClDevice> device_;
  cl_mem mem_;
  void* mapped_;
};

// The cl_mem behind any buffer of an OpenCL device (a caching-allocator block is a piece of an
// OpenClBuffer), and where the buffer starts in it.
struct ClRegion {
  cl_mem mem;
  size_t offset;
};
inline ClRegion region_of(const BufferImpl& buffer, size_t offset = 0) {
  const auto& storage = static_cast<const OpenClBuffer&>(buffer.storage());
  return {storage.mem(), buffer.storage_offset() + offset};
}

}  // namespace hal::opencl

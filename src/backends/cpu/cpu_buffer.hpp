// CPU memory of every kind is ordinary, aligned host memory.
#pragma once

#include <cstdlib>

#include "hal/backend.hpp"

namespace hal::cpu {

class CpuBuffer final : public BufferImpl {
 public:
  // 64 bytes: a cache line, and the widest vector load (AVX-512).
  static constexpr size_t kAlignment = 256;  // what CUDA promises, so code may assume it anywhere

  CpuBuffer(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind, void* data)
      : BufferImpl(std::move(device), size, kind), data_(data) {}
  ~CpuBuffer() override { std::free(data_); }

  void* host_pointer() const noexcept override { return data_; }

 private:
  void* data_;
};

}  // namespace hal::cpu

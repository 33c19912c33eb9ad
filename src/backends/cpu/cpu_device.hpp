// The host processor as a hal device: cpu:0.
#pragma once

#include "backends/cpu/thread_pool.hpp"
#include "hal/backend.hpp"

namespace hal::cpu {

class CpuDevice final : public DeviceImpl {
 public:
  // Reads the machine (hwloc, cpuid, /proc); the pool has one thread per hardware thread.
  CpuDevice();

  const DeviceInfo& info() const override { return info_; }
  MemoryFigure memory_free() const override;
  BufferPtr allocate(size_t bytes, MemoryKind kind) override;
  BufferPtr wrap_native(void* data, size_t bytes, std::function<void()> release) override;
  bool supports(MemoryKind) const override { return true; }
  std::shared_ptr<StreamImpl> create_stream() override;
  std::shared_ptr<EventImpl> create_event() override;

  ThreadPool& pool() { return *pool_; }

 private:
  DeviceInfo info_;
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace hal::cpu

// A CPU stream: its work runs in order on its own thread; kernels spread over the device's pool.
#pragma once

#include <atomic>

#include "backends/async/wait_point.hpp"
#include "backends/async/work_queue.hpp"
#include "backends/cpu/launch_refs.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "hal/backend.hpp"

namespace hal::cpu {

class CpuStream final : public StreamImpl {
 public:
  CpuStream(std::shared_ptr<DeviceImpl> device, std::shared_ptr<ThreadPool> pool)
      : device_(std::move(device)),
        pool_(std::move(pool)),
        queue_(this, [this] { release_launch_refs(); }) {}

  DeviceImpl& device() const override { return *device_; }
  void copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                      size_t bytes) override;
  void copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) override;
  bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src, size_t src_offset,
            size_t bytes) override;
  void fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
            size_t pattern_size) override;
  void host_callback(std::function<void()> fn) override;
  void launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
              std::span<const KernelArg> args) override;
  void gemm(const GemmDesc& gemm) override;  // cpu_blas.cpp
  bool gemm_with_epilogue(const GemmDesc& gemm,
                          const GemmEpilogue& epilogue) override;  // cpu_matmul_epilogue.cpp
  void convolution(const ConvDesc& conv) override;                 // cpu_conv.cpp (oneDNN)
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

 private:
  // Drops what launches that have run no longer need: on the worker when it goes idle (and
  // every WorkQueue::kIdleEvery tasks), before an event is signalled, in synchronize and query.
  void release_launch_refs();
  // Queues a copy or fill named `name` (a literal) of `bytes`, timed while a trace records.
  template <class Task>
  void push(std::string_view name, size_t bytes, Task task);

  std::shared_ptr<DeviceImpl> device_;
  std::shared_ptr<ThreadPool> pool_;
  LaunchRefs refs_;  // under the queue's lock
  // Sweeps that have taken references out of refs_ and are dropping them; synchronize waits
  // for them.
  std::atomic<int> dropping_{0};
  async::WaitPoint dropped_;
  async::WorkQueue queue_;  // last: its destructor drains work that uses the members above
};

// Runs a host kernel over its whole range, in parallel on `pool` when the range is large.
void run_host_kernel(ThreadPool& pool, const HostKernelImpl& kernel, const LaunchConfig& config,
                     std::span<const KernelArg> args);

}  // namespace hal::cpu

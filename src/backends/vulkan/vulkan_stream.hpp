// A stream of a Vulkan device. Every command gets the next value of the stream's timeline
// semaphore when it is enqueued and runs on the stream's worker thread in that order:
//   device commands (copies, fills, dispatches) are recorded into a command buffer and
//     submitted to the device's compute queue, waiting for value N-1 and signalling N;
//   host commands (memcpy into or out of mapped memory, host callbacks, waits for other
//     streams' events) wait on the host for N-1, run, and signal N from the host.
// So the timeline is the stream's order, an event is (semaphore, value) and needs no command,
// and what a command uses is kept until its value is reached.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/async/work_queue.hpp"
#include "backends/vulkan/vulkan_event.hpp"

namespace hal::vulkan {

class VulkanStream final : public StreamImpl {
 public:
  explicit VulkanStream(std::shared_ptr<VulkanDevice> device);
  ~VulkanStream() override;

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
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

 private:
  using Ref = std::shared_ptr<const void>;
  using Record = std::function<void(VkCommandBuffer)>;

  // Enqueues a device command: `record` fills its command buffer on the worker; `refs` live
  // until it has run.
  // Returns the command's value.
  uint64_t device_command(std::vector<Ref> refs, Record record);
  // Enqueues a host command: `fn` runs on the worker once the work before it has completed.
  void host_command(std::function<void()> fn);
  void run_device_command(uint64_t value, std::vector<Ref>& refs, const Record& record);
  void run_host_command(uint64_t value, const std::function<void()>& fn);
  // Makes `value` complete from the host once value - 1 has (a command that failed).
  void complete_on_host(uint64_t value) noexcept;
  VkCommandBuffer acquire_command_buffer();
  // Recycles the command buffers and drops the references of completed commands.
  void reclaim();
  // Host memory where `bytes` of `buffer` at `offset` can be written or read on the worker,
  // or null when the copy must be staged.
  void* mapped(const BufferImpl& buffer, size_t offset) const;
  // A piece of host-visible staging memory (the device's pinned_host caching allocator).
  BufferPtr staging(size_t bytes) const;
  std::string where(std::string_view operation) const;

  std::shared_ptr<VulkanDevice> device_;
  const VkApi& api_;
  std::shared_ptr<Timeline> timeline_;
  std::mutex order_mutex_;  // hands out values in the order commands reach the worker
  uint64_t assigned_ = 0;   // under order_mutex_: the last value handed out
  // The worker's: the command pool, and command buffers by the value that frees them.
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::deque<std::pair<uint64_t, VkCommandBuffer>> in_flight_;
  std::vector<VkCommandBuffer> free_;
  std::mutex refs_mutex_;
  std::deque<std::pair<uint64_t, std::vector<Ref>>> refs_;  // under refs_mutex_
  async::WorkQueue worker_;  // last: its destructor runs what is queued, then joins
};

}  // namespace hal::vulkan

// A stream of a Vulkan device. Work is counted on the stream's timeline semaphore:
//   device commands (copies, fills, dispatches) are recorded on the caller's thread into the
//     stream's open batch, one command buffer with a barrier between consecutive commands;
//     a flush (synchronize, query, an event's record, a host command, or a full batch) gives
//     the batch the next value N and submits it, waiting for N-1 and signalling N;
//   host commands (memcpy into or out of mapped memory, host callbacks, waits for other
//     streams' events) take the next value and run on the stream's worker thread, which waits
//     on the host for N-1, runs them and signals N from the host.
// A batch is submitted from the caller's thread when the worker is idle (nothing to wait for
// on the host), else queued behind the worker's host commands, so values are submitted or
// signalled in order and no submission waits for a value nobody has yet submitted. An event
// is (semaphore, value), and what a command uses is kept until its batch's value is reached.
// While a trace records, each copy, fill and dispatch also shows on the stream's device track:
// device commands through their timestamps (vulkan_device_spans.hpp), host commands timed on
// the worker.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/async/work_queue.hpp"
#include "backends/vulkan/vulkan_device_spans.hpp"
#include "backends/vulkan/vulkan_event.hpp"
#include "core/event_record.hpp"

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

  // Records a device command into the open batch: `record(commands)` runs now, on the caller's
  // thread; `refs` live until the batch has run. Flushes a full batch.
  template <class Record>
  void device_command(std::vector<Ref> refs, const CommandSpan& span, Record&& record);
  // Enqueues a host command: `fn` runs on the worker once the work before it has completed.
  void host_command(std::function<void()> fn);
  // A host command that copies or fills `bytes`: a span named `name` (a literal) on the device
  // track while a trace records.
  void host_copy(std::string_view name, size_t bytes, std::function<void()> fn);
  void run_host_command(uint64_t value, const std::function<void()>& fn);
  // The open batch's command buffer, begun now if there is none; a barrier after the batch's
  // last command orders the next one after it. Under mutex_.
  VkCommandBuffer open_batch();
  // Ends and submits the open batch, if any, as the next value. Under mutex_.
  void flush();
  // flush(), keeping a failure for the next synchronize(). Under mutex_.
  void flush_keeping_error();
  // Submits `commands` as `value`, after value - 1; on failure completes `value` from the
  // host and throws.
  void submit(uint64_t value, VkCommandBuffer commands);
  // Makes `value` complete from the host once value - 1 has: a command that failed with
  // `failure`, which the records after it carry.
  void complete_on_host(uint64_t value, std::exception_ptr failure) noexcept;
  VkCommandBuffer acquire_command_buffer();
  // Recycles the command buffers of completed batches and moves their references into
  // `released`, to be let go of outside the lock. Under mutex_.
  using Released = std::vector<std::vector<Ref>>;
  void reclaim(Released& released);
  uint64_t last_value();  // flushes, then the last value handed out
  // Host memory where `bytes` of `buffer` at `offset` can be written or read on the worker,
  // or null when the copy must be staged.
  void* mapped(const BufferImpl& buffer, size_t offset) const;
  // A piece of host-visible staging memory (the device's pinned_host caching allocator).
  BufferPtr staging(size_t bytes) const;
  std::string where(std::string_view operation) const;

  std::shared_ptr<VulkanDevice> device_;
  const VkApi& api_;
  std::shared_ptr<Timeline> timeline_;
  // Guards everything below but the worker: values, the open batch, the command pool.
  std::mutex mutex_;
  uint64_t assigned_ = 0;  // the last value handed out
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer open_ = VK_NULL_HANDLE;  // the open batch, being recorded
  size_t open_commands_ = 0;
  std::vector<Ref> open_refs_;
  std::exception_ptr submit_error_;  // a failed submission from the caller's thread
  // Submitted batches' command buffers and references by the value that frees them.
  std::deque<std::pair<uint64_t, VkCommandBuffer>> in_flight_;
  std::vector<VkCommandBuffer> free_;
  std::deque<std::pair<uint64_t, std::vector<Ref>>> refs_;
  DeviceSpans spans_;
  detail::StreamFailures failures_;  // of host commands and submissions, by value
  async::WorkQueue worker_;          // last: its destructor runs what is queued, then joins
};

// A batch is submitted once it holds this many commands, so that the device starts on a long
// run of work before the stream is synchronized.
inline constexpr size_t kMaxBatchCommands = 64;
static_assert(kMaxBatchCommands <= DeviceSpans::kCapacity, "a batch's spans fit its query pool");

template <class Record>
void VulkanStream::device_command(std::vector<Ref> refs, const CommandSpan& span, Record&& record) {
  std::lock_guard lock(mutex_);
  const VkCommandBuffer commands = open_batch();
  if (spans_.wanted(span)) [[unlikely]] {
    spans_.begin(commands, span);
    record(commands);
    spans_.end(commands);
  } else {
    record(commands);
  }
  ++open_commands_;
  for (Ref& ref : refs) open_refs_.push_back(std::move(ref));
  if (open_commands_ >= kMaxBatchCommands) flush_keeping_error();
}

}  // namespace hal::vulkan

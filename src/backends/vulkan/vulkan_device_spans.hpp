// While a trace records, the device's own clock around each command of a Vulkan stream: two
// timestamps per command in a query pool that belongs to the command's batch, read once the
// batch's value is reached and recorded as spans on the stream's device track, mapped onto the
// host's steady clock through a calibrated reading of both clocks (VK_EXT_calibrated_timestamps).
// A device without calibration or without timestamps on its queue gets no device track: a span
// in the wrong place would be worse than none.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backends/vulkan/vulkan_device.hpp"
#include "core/trace_record.hpp"

namespace hal::vulkan {

using trace::detail::CommandSpan;  // an empty name: no span of its own

class DeviceSpans {
 public:
  DeviceSpans(std::shared_ptr<VulkanDevice> device, const StreamImpl& stream);
  ~DeviceSpans();
  DeviceSpans(const DeviceSpans&) = delete;
  DeviceSpans& operator=(const DeviceSpans&) = delete;

  // Whether `span` is to be timed now: a trace records and the device can map its clock.
  bool wanted(const CommandSpan& span) const {
    return !span.name.empty() && trace::enabled() && calibrated_;
  }
  // Around one command recorded into the open batch `commands`: a timestamp once everything
  // before it has completed, and one once it has. A batch holds at most `capacity` commands.
  void begin(VkCommandBuffer commands, const CommandSpan& span);
  void end(VkCommandBuffer commands);
  // The open batch was ended as `value` (`failed`: it could not be, and never runs).
  void flushed(uint64_t value, bool failed);
  // The submission of `value`, flushed before, failed: its batch never runs. Called from the
  // worker, where a new batch may already be open.
  void failed(uint64_t value);
  // Every value up to `done` has been reached: the spans of those batches are recorded (while
  // the trace still records) and their pools reused.
  void completed(uint64_t done);

  static constexpr uint32_t kCapacity = 64;  // kMaxBatchCommands

 private:
  struct Pending {
    trace::detail::Track track;
    std::string_view category;
    std::string name;
    trace::detail::SpanArgs args;
  };
  struct Batch {
    VkQueryPool pool = VK_NULL_HANDLE;
    uint64_t value = 0;
    bool failed = false;  // never ran: its queries were never written
    std::vector<Pending> spans;
  };
  VkQueryPool acquire_pool();
  void record(const Batch& batch, const ClockPair& clocks);
  // Device ticks to the host's steady nanoseconds, through one reading of both clocks.
  uint64_t to_steady_ns(uint64_t ticks, const ClockPair& clocks) const;

  std::shared_ptr<VulkanDevice> device_;
  const VkApi& api_;
  const bool calibrated_;
  const StreamImpl& stream_;
  // Under mutex_: the stream records and flushes under its own lock, but a submission that fails
  // on its worker reports here without it.
  std::mutex mutex_;
  std::unique_ptr<Batch> open_;
  std::deque<Batch> submitted_;
  std::vector<VkQueryPool> free_;
};

}  // namespace hal::vulkan

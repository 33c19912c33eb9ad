#include "backends/vulkan/vulkan_device_spans.hpp"

#include <array>

namespace hal::vulkan {

DeviceSpans::DeviceSpans(std::shared_ptr<VulkanDevice> device, const StreamImpl& stream)
    : device_(std::move(device)),
      api_(device_->api()),
      calibrated_(device_->can_read_clocks()),
      stream_(stream) {}

DeviceSpans::~DeviceSpans() {
  if (process_exiting()) return;  // the driver may be gone
  std::lock_guard lock(mutex_);
  if (open_) free_.push_back(open_->pool);
  for (const Batch& batch : submitted_) free_.push_back(batch.pool);
  for (VkQueryPool pool : free_) api_.vkDestroyQueryPool(device_->native(), pool, nullptr);
}

VkQueryPool DeviceSpans::acquire_pool() {
  if (!free_.empty()) {
    const VkQueryPool pool = free_.back();
    free_.pop_back();
    return pool;
  }
  auto info = make<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = 2 * kCapacity;
  VkQueryPool pool = VK_NULL_HANDLE;
  check(api_.vkCreateQueryPool(device_->native(), &info, nullptr, &pool), describe(*device_),
        "vkCreateQueryPool");
  return pool;
}

void DeviceSpans::begin(VkCommandBuffer commands, const CommandSpan& span) {
  std::lock_guard lock(mutex_);
  if (!open_) {
    auto batch = std::make_unique<Batch>();
    batch->pool = acquire_pool();
    batch->spans.reserve(kCapacity);
    // Reset inside the batch, before its first timestamp: the pool may hold a past batch's.
    api_.vkCmdResetQueryPool(commands, batch->pool, 0, 2 * kCapacity);
    open_ = std::move(batch);
  }
  const auto query = static_cast<uint32_t>(2 * open_->spans.size());
  // BOTTOM_OF_PIPE: written once every command before it has completed, which (after the
  // barrier between a batch's commands) is when this one may start.
  api_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, open_->pool, query);
  open_->spans.push_back(
      {trace::detail::execution_track(stream_), span.category, std::string(span.name), span.args});
}

void DeviceSpans::end(VkCommandBuffer commands) {
  std::lock_guard lock(mutex_);
  const auto query = static_cast<uint32_t>(2 * open_->spans.size() - 1);
  api_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, open_->pool, query);
}

void DeviceSpans::flushed(uint64_t value, bool failed) {
  std::lock_guard lock(mutex_);
  if (!open_) return;  // no traced command in the batch
  open_->value = value;
  open_->failed = failed;
  submitted_.push_back(std::move(*open_));
  open_.reset();
}

void DeviceSpans::failed(uint64_t value) {
  std::lock_guard lock(mutex_);
  for (Batch& batch : submitted_)
    if (batch.value == value) batch.failed = true;
}

void DeviceSpans::completed(uint64_t done) {
  std::lock_guard lock(mutex_);
  if (submitted_.empty() || submitted_.front().value > done) return;
  const std::optional<ClockPair> clocks = trace::enabled() ? device_->read_clocks() : std::nullopt;
  while (!submitted_.empty() && submitted_.front().value <= done) {
    const Batch& batch = submitted_.front();
    if (clocks && !batch.failed) record(batch, *clocks);
    free_.push_back(batch.pool);
    submitted_.pop_front();
  }
}

void DeviceSpans::record(const Batch& batch, const ClockPair& clocks) {
  // Each query's value and its availability: a query the device did not write (a batch that a
  // lost device never ran) gives no span.
  std::array<std::array<uint64_t, 2>, 2 * kCapacity> results{};
  const auto count = static_cast<uint32_t>(2 * batch.spans.size());
  const VkResult read = api_.vkGetQueryPoolResults(
      device_->native(), batch.pool, 0, count, sizeof results, results.data(), sizeof results[0],
      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
  if (read != VK_SUCCESS && read != VK_NOT_READY) return;
  for (size_t i = 0; i < batch.spans.size(); ++i) {
    const auto& [start, start_written] = results[2 * i];
    const auto& [end, end_written] = results[2 * i + 1];
    if (!start_written || !end_written) continue;
    const Pending& span = batch.spans[i];
    trace::detail::steady_span(span.track, span.category, span.name, to_steady_ns(start, clocks),
                               to_steady_ns(end, clocks), span.args);
  }
}

uint64_t DeviceSpans::to_steady_ns(uint64_t ticks, const ClockPair& clocks) const {
  const uint32_t bits = device_->traits().timestamp_valid_bits;
  // Ticks since the reading, as a signed count within the counter's valid bits (it wraps there).
  uint64_t delta = ticks - clocks.device_ticks;
  if (bits < 64) {
    const uint64_t mask = (uint64_t{1} << bits) - 1, sign = uint64_t{1} << (bits - 1);
    delta &= mask;
    if (delta & sign) delta |= ~mask;
  }
  const double ns = static_cast<double>(static_cast<int64_t>(delta)) *
                    static_cast<double>(device_->traits().timestamp_period);
  return clocks.steady_ns + static_cast<uint64_t>(static_cast<int64_t>(ns));
}

}  // namespace hal::vulkan

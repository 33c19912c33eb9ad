#include "backends/vulkan/vulkan_stream.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/vulkan/vulkan_buffer.hpp"
#include "core/caching_allocator.hpp"
#include "core/device_core.hpp"

namespace hal::vulkan {
namespace {

bool overlaps(VkDeviceSize a, VkDeviceSize b, size_t bytes) {
  return a < b + bytes && b < a + bytes;
}

// Repeats `pattern` over `bytes` bytes at `out`.
void write_pattern(unsigned char* out, size_t bytes, const unsigned char* pattern,
                   size_t pattern_size) {
  for (size_t at = 0; at < bytes; at += pattern_size)
    std::memcpy(out + at, pattern, std::min(pattern_size, bytes - at));
}

}  // namespace

VulkanStream::VulkanStream(std::shared_ptr<VulkanDevice> device)
    : device_(std::move(device)),
      api_(device_->api()),
      timeline_(std::make_shared<Timeline>(device_)),
      spans_(device_, *this) {
  auto info = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  info.flags =
      VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  info.queueFamilyIndex = device_->traits().queue_family;
  check(api_.vkCreateCommandPool(device_->native(), &info, nullptr, &pool_), where("create"),
        "vkCreateCommandPool");
}

VulkanStream::~VulkanStream() {
  if (process_exiting()) {  // the driver may be gone: what was not submitted is dropped
    worker_.wait_all();
    return;
  }
  const uint64_t last = last_value();  // a failed submission's value completed from the host
  worker_.wait_all();
  try {
    timeline_->wait(last);
    spans_.completed(last);
  } catch (const Error&) {  // a lost device: nothing more will complete
  }
  // A driver may still hold a command buffer for a moment after its submission signalled
  // (lavapipe's queue thread does): the pool goes only once the queue is idle.
  device_->wait_idle();
  std::lock_guard lock(mutex_);
  refs_.clear();
  free_.clear();
  api_.vkDestroyCommandPool(device_->native(), pool_, nullptr);  // frees its command buffers
}

std::string VulkanStream::where(std::string_view operation) const {
  return "stream of " + describe(*device_) + ": " + std::string(operation);
}

VkCommandBuffer VulkanStream::open_batch() {
  if (open_) {
    // The next command may read or overwrite what the last one wrote, or overwrite what it
    // read: kernels do not say which arguments they write, so every command waits for the last.
    auto barrier = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    api_.vkCmdPipelineBarrier(open_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    return open_;
  }
  VkCommandBuffer commands = acquire_command_buffer();
  auto begin = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  const VkResult result = api_.vkBeginCommandBuffer(commands, &begin);
  if (result != VK_SUCCESS) {
    free_.push_back(commands);
    check(result, where("record"), "vkBeginCommandBuffer");
  }
  open_ = commands;
  return open_;
}

void VulkanStream::flush() {
  if (!open_) return;
  // What the batch wrote becomes visible to the host once its value is reached.
  auto barrier = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api_.vkCmdPipelineBarrier(open_,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  const VkResult ended = api_.vkEndCommandBuffer(open_);
  const VkCommandBuffer commands = open_;
  const uint64_t value = ++assigned_;
  spans_.flushed(value, ended != VK_SUCCESS);
  open_ = VK_NULL_HANDLE;
  open_commands_ = 0;
  // Held until the value is reached, whether the submission below succeeds or not.
  in_flight_.emplace_back(value, commands);
  if (!open_refs_.empty()) refs_.emplace_back(value, std::move(open_refs_));
  open_refs_.clear();
  if (ended != VK_SUCCESS) {
    try {
      check(ended, where("record"), "vkEndCommandBuffer");
    } catch (...) {
      complete_on_host(value, std::current_exception());
      throw;
    }
  }
  if (!worker_.idle()) {  // host commands before it: submitted after them, on the worker
    worker_.push([this, value, commands] { submit(value, commands); });
    return;
  }
  submit(value, commands);
}

void VulkanStream::submit(uint64_t value, VkCommandBuffer commands) {
  // Wait for the stream's previous value, signal this one: the semaphore's wait and signal
  // carry the memory dependency between them too.
  const uint64_t wait_value = value - 1;
  const VkSemaphore semaphore = timeline_->native();
  const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  auto values =
      make<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  values.waitSemaphoreValueCount = 1;
  values.pWaitSemaphoreValues = &wait_value;
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &value;
  auto info = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  info.pNext = &values;
  info.waitSemaphoreCount = 1;
  info.pWaitSemaphores = &semaphore;
  info.pWaitDstStageMask = &stage;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &commands;
  info.signalSemaphoreCount = 1;
  info.pSignalSemaphores = &semaphore;
  const VkResult result = device_->submit(info);
  if (result == VK_SUCCESS) return;
  spans_.failed(value);
  try {
    check(result, where("submit"), "vkQueueSubmit");
  } catch (...) {
    complete_on_host(value, std::current_exception());
    throw;
  }
}

void VulkanStream::flush_keeping_error() {
  try {
    flush();
  } catch (const Error&) {  // kept for synchronize(), as a worker's failure would be
    if (!submit_error_) submit_error_ = std::current_exception();
  }
}

uint64_t VulkanStream::last_value() {
  std::lock_guard lock(mutex_);
  flush_keeping_error();
  return assigned_;
}

void VulkanStream::host_command(std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  flush_keeping_error();
  const uint64_t value = ++assigned_;
  worker_.push([this, value, fn = std::move(fn)] { run_host_command(value, fn); });
}

void VulkanStream::host_copy(std::string_view name, size_t bytes, std::function<void()> fn) {
  if (trace::enabled()) [[unlikely]]
    fn = [track = trace::detail::execution_track(*this), name, bytes, fn = std::move(fn)] {
      const uint64_t start = trace::detail::now();
      fn();
      trace::detail::span(track, "copy", name, start, trace::detail::now(),
                          trace::detail::transfer_args(bytes));
    };
  host_command(std::move(fn));
}

void VulkanStream::complete_on_host(uint64_t value, std::exception_ptr failure) noexcept {
  failures_.failed(value, std::move(failure));  // first: a record after it carries the failure
  try {
    timeline_->wait(value - 1);
    timeline_->signal(value);
  } catch (const Error&) {  // a lost device: every later wait reports it
  }
}

void VulkanStream::run_host_command(uint64_t value, const std::function<void()>& fn) {
  try {
    timeline_->wait(value - 1);
    fn();
  } catch (...) {
    complete_on_host(value, std::current_exception());
    throw;
  }
  timeline_->signal(value);
  Released released;  // let go of after the lock
  std::lock_guard lock(mutex_);
  reclaim(released);
}

VkCommandBuffer VulkanStream::acquire_command_buffer() {
  if (!free_.empty()) {
    VkCommandBuffer buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  auto info = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  info.commandPool = pool_;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer buffer = VK_NULL_HANDLE;
  check(api_.vkAllocateCommandBuffers(device_->native(), &info, &buffer), where("record"),
        "vkAllocateCommandBuffers");
  return buffer;
}

void VulkanStream::reclaim(Released& released) {
  const uint64_t done = timeline_->completed();
  // A command buffer is recycled once a later value has completed too: a driver may hold it
  // for a moment after its own submission signalled (lavapipe's queue thread does).
  while (!in_flight_.empty() && in_flight_.front().first < done) {
    api_.vkResetCommandBuffer(in_flight_.front().second, 0);
    free_.push_back(in_flight_.front().second);
    in_flight_.pop_front();
  }
  while (!refs_.empty() && refs_.front().first <= done) {
    released.push_back(std::move(refs_.front().second));
    refs_.pop_front();
  }
  spans_.completed(done);
}

void* VulkanStream::mapped(const BufferImpl& buffer, size_t offset) const {
  const VkRegion region = region_of(buffer, offset);
  if (!region.root->mapped()) return nullptr;
  if (device_->traits().force_staging && buffer.kind() == MemoryKind::device) return nullptr;
  return static_cast<unsigned char*>(region.root->mapped()) + region.offset;
}

BufferPtr VulkanStream::staging(size_t bytes) const {
  return detail::core_of(*device_).allocator(MemoryKind::pinned_host).allocate_block(bytes);
}

void VulkanStream::copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                                  size_t bytes) {
  if (void* to = mapped(*dst, dst_offset)) {
    host_copy("copy_from_host", bytes, [dst, to, src, bytes] { std::memcpy(to, src, bytes); });
    return;
  }
  // The host's part runs on the worker, after the stream's earlier host commands: a source
  // that an earlier copy_to_host fills is read once it has.
  BufferPtr stage = staging(bytes);
  const VkRegion from = region_of(*stage, 0), to = region_of(*dst, dst_offset);
  host_copy("copy_from_host (into staging)", bytes, [stage, from, src, bytes] {
    std::memcpy(static_cast<unsigned char*>(from.root->mapped()) + from.offset, src, bytes);
  });
  const CommandSpan span{"copy", "copy_from_host", trace::detail::transfer_args(bytes)};
  device_command({dst, stage}, span, [this, from, to, bytes](VkCommandBuffer commands) {
    const VkBufferCopy region{from.offset, to.offset, bytes};
    api_.vkCmdCopyBuffer(commands, from.root->native(), to.root->native(), 1, &region);
  });
}

void VulkanStream::copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  if (const void* from = mapped(*src, src_offset)) {
    host_copy("copy_to_host", bytes, [src, from, dst, bytes] { std::memcpy(dst, from, bytes); });
    return;
  }
  BufferPtr stage = staging(bytes);
  const VkRegion from = region_of(*src, src_offset), to = region_of(*stage, 0);
  const CommandSpan span{"copy", "copy_to_host", trace::detail::transfer_args(bytes)};
  device_command({src, stage}, span, [this, from, to, bytes](VkCommandBuffer commands) {
    const VkBufferCopy region{from.offset, to.offset, bytes};
    api_.vkCmdCopyBuffer(commands, from.root->native(), to.root->native(), 1, &region);
  });
  host_copy("copy_to_host (out of staging)", bytes, [stage, to, dst, bytes] {
    std::memcpy(dst, static_cast<const unsigned char*>(to.root->mapped()) + to.offset, bytes);
  });
}

bool VulkanStream::copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                        size_t src_offset, size_t bytes) {
  // Devices of one instance share no memory without external-memory extensions: hal stages.
  if (&dst->device() != device_.get() || &src->device() != device_.get()) return false;
  const VkRegion to = region_of(*dst, dst_offset), from = region_of(*src, src_offset);
  const CommandSpan span{"copy", "copy", trace::detail::transfer_args(bytes)};
  if (to.root != from.root || !overlaps(to.offset, from.offset, bytes)) {
    device_command({dst, src}, span, [this, from, to, bytes](VkCommandBuffer commands) {
      const VkBufferCopy region{from.offset, to.offset, bytes};
      api_.vkCmdCopyBuffer(commands, from.root->native(), to.root->native(), 1, &region);
    });
    return true;
  }
  // vkCmdCopyBuffer forbids overlapping regions: through scratch memory, with a barrier
  // between the two copies.
  BufferPtr scratch = detail::core_of(*device_).allocator(MemoryKind::device).allocate_block(bytes);
  const VkRegion middle = region_of(*scratch, 0);
  device_command(
      {dst, src, scratch}, span, [this, from, to, middle, bytes](VkCommandBuffer commands) {
        const VkBufferCopy in{from.offset, middle.offset, bytes},
            out{middle.offset, to.offset, bytes};
        api_.vkCmdCopyBuffer(commands, from.root->native(), middle.root->native(), 1, &in);
        auto barrier = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        api_.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                  VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                                  nullptr);
        api_.vkCmdCopyBuffer(commands, middle.root->native(), to.root->native(), 1, &out);
      });
  return true;
}

void VulkanStream::fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                        size_t pattern_size) {
  std::array<unsigned char, 16> value{};  // `pattern` is valid only during the call
  std::memcpy(value.data(), pattern, pattern_size);
  const VkRegion to = region_of(*dst, dst_offset);
  const CommandSpan span{"copy", "fill", trace::detail::transfer_args(bytes)};
  if (pattern_size <= 4 && to.offset % 4 == 0 && bytes % 4 == 0) {
    uint32_t word = 0;  // the pattern repeated to 32 bits, as vkCmdFillBuffer takes it
    write_pattern(reinterpret_cast<unsigned char*>(&word), 4, value.data(), pattern_size);
    device_command({dst}, span, [this, to, bytes, word](VkCommandBuffer commands) {
      api_.vkCmdFillBuffer(commands, to.root->native(), to.offset, bytes, word);
    });
    return;
  }
  if (void* out = mapped(*dst, dst_offset)) {
    host_copy("fill", bytes, [dst, out, bytes, value, pattern_size] {
      write_pattern(static_cast<unsigned char*>(out), bytes, value.data(), pattern_size);
    });
    return;
  }
  BufferPtr stage = staging(bytes);
  const VkRegion from = region_of(*stage, 0);
  write_pattern(static_cast<unsigned char*>(from.root->mapped()) + from.offset, bytes, value.data(),
                pattern_size);
  device_command({dst, stage}, span, [this, from, to, bytes](VkCommandBuffer commands) {
    const VkBufferCopy region{from.offset, to.offset, bytes};
    api_.vkCmdCopyBuffer(commands, from.root->native(), to.root->native(), 1, &region);
  });
}

void VulkanStream::host_callback(std::function<void()> fn) { host_command(std::move(fn)); }

void VulkanStream::record(EventImpl& event) {
  auto& vulkan_event = static_cast<VulkanEvent&>(event);
  if (device_->traits().timestamp_valid_bits == 0) {  // a record is then no command at all
    const uint64_t value = last_value();
    vulkan_event.set_fence(
        std::make_shared<TimelineFence>(timeline_, value, serial(), failures_.mark(value)));
    return;
  }
  // A command that writes the device's clock, for elapsed_ms_since: its own one-query pool,
  // owned by the fence, so that a later record never overwrites what this one measured.
  auto timestamp = std::make_shared<const Timestamp>(device_);
  const VkQueryPool pool = timestamp->native();
  device_command({timestamp}, CommandSpan{}, [this, pool](VkCommandBuffer commands) {
    api_.vkCmdResetQueryPool(commands, pool, 0, 1);
    api_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 0);
  });
  const uint64_t value = last_value();
  vulkan_event.set_fence(std::make_shared<TimelineFence>(
      timeline_, value, serial(), failures_.mark(value), std::move(timestamp)));
}

void VulkanStream::wait(EventImpl& event) {
  // Waited for on the worker: the other stream's value may not even be submitted yet, and a
  // host wait needs no wait-before-signal support from the driver.
  if (std::shared_ptr<HostFence> fence = event.fence())
    host_command([fence = std::move(fence)] { fence->wait(); });
}

void VulkanStream::synchronize() {
  // On the worker itself (a deleter of a host command that did not run, its wait having
  // failed): waiting would wait for this thread.
  if (worker_.on_worker_thread()) return;
  const uint64_t last = last_value();
  worker_.wait_all();
  timeline_->wait(last);
  std::exception_ptr error = worker_.take_error();
  {
    Released released;  // let go of after the lock
    std::lock_guard lock(mutex_);
    if (!error) error = submit_error_;
    submit_error_ = nullptr;
    reclaim(released);
  }
  if (error) {
    failures_.reported();
    throw_async_failure(*device_, error);
  }
}

bool VulkanStream::query() {
  const uint64_t last = last_value();
  return worker_.idle() && timeline_->completed() >= last;
}

}  // namespace hal::vulkan

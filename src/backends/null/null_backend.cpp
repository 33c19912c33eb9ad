#include "backends/null/null_backend.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>

#include "backends/async/work_queue.hpp"
#include "core/event_record.hpp"

namespace hal::null_backend {
namespace {

// Memory of the device. A real backend holds its driver's handle here (a cl_mem, a
// CUdeviceptr) and frees it in the destructor; host_pointer() stays null unless the host can
// address the memory (then hal copies with memcpy instead of staging).
class NullBuffer final : public BufferImpl {
 public:
  NullBuffer(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind)
      : BufferImpl(std::move(device), size, kind),
        memory_(new (std::nothrow) unsigned char[size]) {}
  bool allocated() const { return memory_ != nullptr; }
  unsigned char* memory() const { return memory_.get(); }

 private:
  std::unique_ptr<unsigned char[]> memory_;
};

// hal hands streams pieces of the caching allocator's segments: reach the backend's own buffer
// through storage() and storage_offset().
unsigned char* address(const BufferPtr& buffer, size_t offset) {
  const auto& root = static_cast<const NullBuffer&>(buffer->storage());
  return root.memory() + buffer->storage_offset() + offset;
}

// Completion of one record of an event, signalled by the stream's worker when the work before
// it has run. A real backend wraps its driver's event (a cl_event, a CUevent) and asks the
// driver instead. As a RecordFence it names its stream (a wait from that stream's own callback
// for a record behind it is refused) and carries the failure of the work before it, which the
// event reports.
class NullFence final : public HostFence, public detail::RecordFence {
 public:
  explicit NullFence(uint64_t stream) : RecordFence(stream) {}
  void signal(std::exception_ptr failure) {
    std::lock_guard lock(mutex_);
    at_ = std::chrono::steady_clock::now();
    failure_ = std::move(failure);
    done_ = true;
    signalled_.notify_all();
  }
  bool ready() const override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void wait() const override {
    std::unique_lock lock(mutex_);
    signalled_.wait(lock, [this] { return done_; });
  }
  std::chrono::steady_clock::time_point at() const {  // once ready()
    std::lock_guard lock(mutex_);
    return at_;
  }
  std::exception_ptr failure() const override {
    std::lock_guard lock(mutex_);
    return failure_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable signalled_;
  bool done_ = false;
  std::chrono::steady_clock::time_point at_;
  std::exception_ptr failure_;
};

class NullEvent final : public EventImpl {
 public:
  explicit NullEvent(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}
  DeviceImpl& device() const override { return *device_; }
  std::shared_ptr<HostFence> fence() const override {
    std::lock_guard lock(mutex_);
    return fence_;
  }
  double elapsed_ms_since(const EventImpl& start) const override {
    const auto& begin = static_cast<const NullFence&>(*start.fence());
    const auto& end = static_cast<const NullFence&>(*fence());
    return std::chrono::duration<double, std::milli>(end.at() - begin.at()).count();
  }
  // Points the event at a new fence of a record on `stream`, for the stream to signal.
  std::shared_ptr<NullFence> rearm(const StreamImpl& stream) {
    std::lock_guard lock(mutex_);
    fence_ = std::make_shared<NullFence>(stream.serial());
    return fence_;
  }

 private:
  std::shared_ptr<DeviceImpl> device_;
  mutable std::mutex mutex_;
  std::shared_ptr<NullFence> fence_;
};

// An in-order stream: each command runs on the stream's own worker thread, after the ones
// before it, while the enqueuing call returns at once. What a command uses (the BufferPtrs)
// is captured by its task, which keeps it alive until the task has run. A real backend
// enqueues on its driver's queue instead and hands those references to async::FencedRefs
// (src/backends/async/fenced_refs.hpp) with the driver's event as the fence.
class NullStream final : public StreamImpl {
 public:
  explicit NullStream(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}
  DeviceImpl& device() const override { return *device_; }

  void copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                      size_t bytes) override {
    queue_.push([=] { std::memcpy(address(dst, dst_offset), src, bytes); });
  }
  void copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) override {
    queue_.push([=] { std::memcpy(dst, address(src, src_offset), bytes); });
  }
  // Returning false makes hal stage the copy through host memory: the null backend reaches no
  // other device.
  bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src, size_t src_offset,
            size_t bytes) override {
    if (&dst->device() != device_.get() || &src->device() != device_.get()) return false;
    queue_.push([=] { std::memmove(address(dst, dst_offset), address(src, src_offset), bytes); });
    return true;
  }
  void fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
            size_t pattern_size) override {
    std::array<unsigned char, 16> value{};  // `pattern` is valid only during the call
    std::memcpy(value.data(), pattern, pattern_size);
    queue_.push([=] {
      unsigned char* out = address(dst, dst_offset);
      for (size_t at = 0; at < bytes; at += pattern_size)
        std::memcpy(out + at, value.data(), std::min(pattern_size, bytes - at));
    });
  }
  // Callbacks run on the worker, never on a driver's thread: they may call hal.
  void host_callback(std::function<void()> fn) override { queue_.push(std::move(fn)); }
  // The record carries the failure of a task before it that synchronize has not yet reported.
  void record(EventImpl& event) override {
    queue_.push([this, fence = static_cast<NullEvent&>(event).rearm(*this)] {
      fence->signal(queue_.peek_error());
    });
  }
  // `event` may belong to another stream of this backend.
  void wait(EventImpl& event) override {
    if (auto fence = event.fence()) queue_.push([fence] { fence->wait(); });
  }
  // A task that threw (a host callback, say) is reported here, once, as AsyncFailure.
  void synchronize() override {
    queue_.wait_all();
    if (std::exception_ptr error = queue_.take_error()) throw_async_failure(*device_, error);
  }
  bool query() override { return queue_.idle(); }
  // launch, gemm, run_builtin_op and graphs keep StreamImpl's defaults, which throw
  // Unsupported naming the device.

 private:
  std::shared_ptr<DeviceImpl> device_;
  async::WorkQueue queue_;  // last: its destructor runs what is queued, then joins
};

class NullDevice final : public DeviceImpl {
 public:
  explicit NullDevice(uint64_t memory_bytes) {
    info_.id = "null:0";
    info_.uuid = "4e554c4c-0000-4000-8000-000000000000";  // "NULL"
    info_.name = "hal template device";
    info_.vendor = "hal";
    info_.kind = DeviceKind::accelerator;
    info_.architecture = "null";
    info_.driver_version = "1.0";
    info_.memory_total = {memory_bytes, Provenance::estimated};
    info_.memory_free = {memory_bytes, Provenance::estimated};
    info_.compute_units = 1;
    info_.dtypes = {DType::f32};
    info_.limits.max_allocation_bytes = memory_bytes;
  }
  const DeviceInfo& info() const override { return info_; }
  // Called by hal's caching allocator for whole segments, never per tensor. A driver's own
  // out-of-memory status becomes OutOfMemory: the allocator then frees its cache and retries.
  BufferPtr allocate(size_t bytes, MemoryKind kind) override {
    const uint64_t used = used_.fetch_add(bytes) + bytes;
    if (used > info_.memory_total.bytes) {
      used_ -= bytes;
      throw Error(ErrorCode::OutOfMemory, "allocate on null:0: " + std::to_string(bytes) +
                                              " bytes would pass the device's " +
                                              std::to_string(info_.memory_total.bytes));
    }
    auto buffer = std::shared_ptr<NullBuffer>(
        new NullBuffer(shared_from_this(), bytes, kind),
        [device = std::static_pointer_cast<NullDevice>(shared_from_this())](NullBuffer* b) {
          device->used_ -= b->size();
          delete b;
        });
    if (!buffer->allocated())
      throw Error(ErrorCode::OutOfMemory,
                  "allocate on null:0: the host has no " + std::to_string(bytes) + " bytes left");
    return buffer;
  }
  MemoryFigure memory_free() const override {
    return {info_.memory_total.bytes - used_.load(), Provenance::estimated};
  }
  std::shared_ptr<StreamImpl> create_stream() override {
    return std::make_shared<NullStream>(shared_from_this());
  }
  std::shared_ptr<EventImpl> create_event() override {
    return std::make_shared<NullEvent>(shared_from_this());
  }
  // compile() keeps DeviceImpl's default: Unsupported. A real backend compiles the portable
  // dialect (kernels/ and src/ops/portable_defines.cpp) and its native language here.

 private:
  DeviceInfo info_;
  std::atomic<uint64_t> used_{0};
};

class NullBackend final : public Backend {
 public:
  explicit NullBackend(uint64_t memory_bytes) : memory_bytes_(memory_bytes) {}
  std::string name() const override { return "null"; }
  // Finds the devices, once. A backend whose driver is missing says why, and hal goes on
  // without it: probe.available = false, probe.reason = "...".
  BackendProbe probe() override {
    BackendProbe probe;
    probe.available = true;
    probe.devices.push_back(std::make_shared<NullDevice>(memory_bytes_));
    return probe;
  }

 private:
  uint64_t memory_bytes_;
};

}  // namespace

std::shared_ptr<Backend> make_backend(uint64_t memory_bytes) {
  return std::make_shared<NullBackend>(memory_bytes);
}

}  // namespace hal::null_backend

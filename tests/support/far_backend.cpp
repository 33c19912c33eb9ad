#include "far_backend.hpp"

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/async/work_queue.hpp"
#include "backends/cpu/cpu_event.hpp"
#include "hal/backend.hpp"
#include "hal/registry.hpp"

namespace hal::test {
namespace {

class FarBuffer final : public BufferImpl {
 public:
  FarBuffer(std::shared_ptr<DeviceImpl> device, size_t size)
      : BufferImpl(std::move(device), size, MemoryKind::device), storage_(size) {}
  char* storage() { return storage_.data(); }  // for FarStream only: never host_pointer()

 private:
  std::vector<char> storage_;
};

// Buffers may be blocks of the caching allocator's segments: reach the backend's own buffer.
char* storage(const BufferPtr& buffer, size_t offset) {
  auto& root = const_cast<FarBuffer&>(static_cast<const FarBuffer&>(buffer->storage()));
  return root.storage() + buffer->storage_offset() + offset;
}

class FarStream final : public StreamImpl {
 public:
  explicit FarStream(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}
  DeviceImpl& device() const override { return *device_; }

  void copy_from_host(const BufferPtr& dst, size_t offset, const void* src, size_t bytes) override {
    host_copy([=] { std::memcpy(storage(dst, offset), src, bytes); });
  }
  void copy_to_host(void* dst, const BufferPtr& src, size_t offset, size_t bytes) override {
    host_copy([=] { std::memcpy(dst, storage(src, offset), bytes); });
  }
  bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src, size_t src_offset,
            size_t bytes) override {
    if (&dst->device() != device_.get() || &src->device() != device_.get())
      return false;  // no peer access
    queue_.push([=] { std::memmove(storage(dst, dst_offset), storage(src, src_offset), bytes); });
    return true;
  }
  void fill(const BufferPtr& dst, size_t offset, size_t bytes, const void* pattern,
            size_t pattern_size) override {
    std::array<char, 16> value{};
    std::memcpy(value.data(), pattern, pattern_size);
    queue_.push([=] {
      for (size_t i = 0; i < bytes; i += pattern_size)
        std::memcpy(storage(dst, offset + i), value.data(), pattern_size);
    });
  }
  void host_callback(std::function<void()> fn) override {
    std::atomic<int>& allowed = far_faults().callbacks_allowed;
    int left = allowed.load();
    while (left > 0 && !allowed.compare_exchange_weak(left, left - 1)) {
    }
    if (left == 0)
      throw Error(ErrorCode::OutOfMemory,
                  device_->info().id + ": no room for another host callback");
    queue_.push(std::move(fn));
  }
  void record(EventImpl& event) override {
    auto fence = static_cast<cpu::CpuEvent&>(event).rearm(*this);
    queue_.push([this, fence] { fence->signal(queue_.peek_error()); });
  }
  void wait(EventImpl& event) override {
    auto fence = event.fence();
    queue_.push([fence] { fence->wait(); });
  }
  void synchronize() override {
    queue_.wait_all();
    if (auto error = queue_.take_error()) throw_async_failure(*device_, error);
  }
  bool query() override { return queue_.idle(); }

 private:
  // A copy to or from the host, taking far_faults().copy_delay_ms when it runs.
  template <class Copy>
  void host_copy(Copy copy) {
    FarFaults& faults = far_faults();
    ++faults.copies_pending;
    queue_.push([copy, &faults] {
      if (const int delay = faults.copy_delay_ms.load(); delay > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      copy();
      --faults.copies_pending;
    });
  }

  std::shared_ptr<DeviceImpl> device_;
  async::WorkQueue queue_;
};

class FarDevice final : public DeviceImpl {
 public:
  explicit FarDevice(unsigned index) {
    info_.id = "far:" + std::to_string(index);
    info_.uuid = "fa000000-0000-8000-8000-00000000000" + std::to_string(index);
    info_.name = "Far Test Accelerator";
    info_.vendor = "hal tests";
    info_.kind = DeviceKind::accelerator;
    info_.architecture = "far1";
    info_.driver_version = "1.0";
    info_.memory_total = {kFarMemoryBytes, Provenance::estimated};
    info_.memory_free = {kFarMemoryBytes, Provenance::estimated};
    info_.compute_units = 4;
    info_.dtypes = {DType::f32, DType::i32};
    info_.limits.max_allocation_bytes = kFarMemoryBytes;
  }
  const DeviceInfo& info() const override { return info_; }
  BufferPtr allocate(size_t bytes, MemoryKind) override {
    return std::make_shared<FarBuffer>(shared_from_this(), bytes);
  }
  std::shared_ptr<StreamImpl> create_stream() override {
    return std::make_shared<FarStream>(shared_from_this());
  }
  std::shared_ptr<EventImpl> create_event() override {
    return std::make_shared<cpu::CpuEvent>(shared_from_this());
  }

 private:
  DeviceInfo info_;
};

class FarBackend final : public Backend {
 public:
  std::string name() const override { return "far"; }
  BackendProbe probe() override {
    BackendProbe probe;
    probe.available = true;
    for (unsigned i = 0; i < kFarDevices; ++i)
      probe.devices.push_back(std::make_shared<FarDevice>(i));
    return probe;
  }
};

}  // namespace

FarFaults& far_faults() {
  static FarFaults faults;
  return faults;
}

void register_far_backend() {
  static std::once_flag once;
  std::call_once(once, [] { register_backend(std::make_shared<FarBackend>()); });
}

}  // namespace hal::test

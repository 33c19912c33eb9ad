// A copy between backends goes through host memory in parts (a copy into the staging memory, a
// host callback, a copy out of it). When a later part fails to enqueue, the staging memory is let
// go of only once the parts already enqueued have run: they read or write it. "brittle" is a
// backend whose streams refuse host callbacks on demand and whose copies take a while.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/async/work_queue.hpp"
#include "backends/cpu/cpu_event.hpp"
#include "far_backend.hpp"
#include "hal/backend.hpp"
#include "hal/hal.hpp"
#include "hal/registry.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

std::atomic<int> callbacks_allowed{-1};  // host callbacks a stream takes before refusing; -1: all
std::atomic<int> copies_pending{0};      // copies to or from the host enqueued and not yet run

class BrittleBuffer final : public BufferImpl {
 public:
  BrittleBuffer(std::shared_ptr<DeviceImpl> device, size_t size)
      : BufferImpl(std::move(device), size, MemoryKind::device), storage_(size) {}
  char* storage() { return storage_.data(); }

 private:
  std::vector<char> storage_;
};

char* storage(const BufferPtr& buffer, size_t offset) {
  auto& root = const_cast<BrittleBuffer&>(static_cast<const BrittleBuffer&>(buffer->storage()));
  return root.storage() + buffer->storage_offset() + offset;
}

class BrittleStream final : public StreamImpl {
 public:
  explicit BrittleStream(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}
  DeviceImpl& device() const override { return *device_; }

  void copy_from_host(const BufferPtr& dst, size_t offset, const void* src, size_t bytes) override {
    slow([=] { std::memcpy(storage(dst, offset), src, bytes); });
  }
  void copy_to_host(void* dst, const BufferPtr& src, size_t offset, size_t bytes) override {
    slow([=] { std::memcpy(dst, storage(src, offset), bytes); });
  }
  bool copy(const BufferPtr&, size_t, const BufferPtr&, size_t, size_t) override { return false; }
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
    int allowed = callbacks_allowed.load();
    while (allowed != -1 && !callbacks_allowed.compare_exchange_weak(allowed, allowed - 1)) {
    }
    if (allowed == 0) {
      callbacks_allowed = 0;
      throw Error(ErrorCode::OutOfMemory, "brittle:0: no room for another host callback");
    }
    queue_.push(std::move(fn));
  }
  void record(EventImpl& event) override {
    auto fence = static_cast<cpu::CpuEvent&>(event).rearm();
    queue_.push([fence] { fence->signal(); });
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
  // A copy that is still running when the caller has long returned.
  template <class Fn>
  void slow(Fn fn) {
    ++copies_pending;
    queue_.push([fn] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      fn();
      --copies_pending;
    });
  }
  std::shared_ptr<DeviceImpl> device_;
  async::WorkQueue queue_;
};

class BrittleDevice final : public DeviceImpl {
 public:
  BrittleDevice() {
    info_.id = "brittle:0";
    info_.uuid = "b0000000-0000-8000-8000-000000000000";
    info_.name = "Brittle Test Accelerator";
    info_.vendor = "hal tests";
    info_.kind = DeviceKind::accelerator;
    info_.memory_total = {size_t{64} << 20, Provenance::estimated};
    info_.memory_free = {size_t{64} << 20, Provenance::estimated};
    info_.compute_units = 1;
    info_.dtypes = {DType::f32};
    info_.limits.max_allocation_bytes = size_t{64} << 20;
  }
  const DeviceInfo& info() const override { return info_; }
  BufferPtr allocate(size_t bytes, MemoryKind) override {
    return std::make_shared<BrittleBuffer>(shared_from_this(), bytes);
  }
  std::shared_ptr<StreamImpl> create_stream() override {
    return std::make_shared<BrittleStream>(shared_from_this());
  }
  std::shared_ptr<EventImpl> create_event() override {
    return std::make_shared<cpu::CpuEvent>(shared_from_this());
  }

 private:
  DeviceInfo info_;
};

class BrittleBackend final : public Backend {
 public:
  std::string name() const override { return "brittle"; }
  BackendProbe probe() override {
    BackendProbe probe;
    probe.available = true;
    probe.devices.push_back(std::make_shared<BrittleDevice>());
    return probe;
  }
};

class StagedCopyFailure : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_far_backend();
    register_backend(std::make_shared<BrittleBackend>());
  }
  void TearDown() override { callbacks_allowed = -1; }
  static constexpr size_t kBytes = 64 << 10;
  Device brittle = device("brittle:0");
  Device far = device("far:0");
  Stream stream = brittle.create_stream();
};

TEST_F(StagedCopyFailure, OutOfADeviceTheCopyIntoStagingHasRunWhenTheCallbackIsRefused) {
  const Buffer src = brittle.allocate(kBytes), dst = far.allocate(kBytes);
  stream.fill(src, uint8_t{7}, kBytes);
  stream.synchronize();
  callbacks_allowed = 0;  // the callback that would write the staging memory to far:0
  expect_error([&] { stream.copy(dst, src, kBytes); }, ErrorCode::OutOfMemory,
               {"no room for another host callback"});
  // The staging memory went with the error: the copy into it must have run by then.
  EXPECT_EQ(copies_pending.load(), 0);
  callbacks_allowed = -1;
  stream.synchronize();
}

TEST_F(StagedCopyFailure, IntoADeviceTheCopyOutOfStagingHasRunWhenItsKeepIsRefused) {
  const Buffer src = far.allocate(kBytes), dst = brittle.allocate(kBytes);
  callbacks_allowed = 1;  // the read from far:0 is taken; keep_until_done's callback is not
  expect_error([&] { stream.copy(dst, src, kBytes); }, ErrorCode::OutOfMemory,
               {"no room for another host callback"});
  EXPECT_EQ(copies_pending.load(), 0);
  callbacks_allowed = -1;
  stream.synchronize();
}

}  // namespace
}  // namespace hal::test

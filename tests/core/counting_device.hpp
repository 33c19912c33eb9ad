// A device for allocator tests: counts what it hands out and refuses past a capacity.
#pragma once

#include <atomic>
#include <memory>

#include "hal/backend.hpp"
#include "hal/error.hpp"

namespace hal::detail::test_devices {

constexpr size_t kMiB = size_t{1} << 20;

class CountingDevice final : public DeviceImpl {
 public:
  explicit CountingDevice(size_t capacity) {
    info_.id = "counting:0";
    info_.memory_total = {capacity, Provenance::measured};
    info_.memory_free = info_.memory_total;
    info_.limits.max_allocation_bytes = capacity;
  }
  // Set before use: a largest allocation below the capacity, and pinned host memory besides
  // device memory (both counted against the capacity).
  void set_max_allocation(uint64_t bytes) { info_.limits.max_allocation_bytes = bytes; }
  void offer_pinned_host() { pinned_host_ = true; }

  const DeviceInfo& info() const override { return info_; }
  bool supports(MemoryKind kind) const override {
    return kind == MemoryKind::device || (pinned_host_ && kind == MemoryKind::pinned_host);
  }
  MemoryFigure memory_free() const override {
    return {info_.memory_total.bytes - live_.load(), Provenance::measured};
  }
  BufferPtr allocate(size_t bytes, MemoryKind kind) override {
    ++calls_;
    if (live_.load() + bytes > info_.memory_total.bytes)
      throw Error(ErrorCode::OutOfMemory, "counting device is full");
    live_ += bytes;
    return std::make_shared<Counted>(shared_from_this(), bytes, kind, live_);
  }
  std::shared_ptr<StreamImpl> create_stream() override { throw_unsupported(*this, "streams"); }
  std::shared_ptr<EventImpl> create_event() override { throw_unsupported(*this, "events"); }

  size_t live() const { return live_.load(); }
  int calls() const { return calls_.load(); }

 private:
  struct Counted final : BufferImpl {
    Counted(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind,
            std::atomic<size_t>& live)
        : BufferImpl(std::move(device), size, kind), live_(live) {}
    ~Counted() override { live_ -= size(); }
    std::atomic<size_t>& live_;
  };
  DeviceInfo info_;
  bool pinned_host_ = false;
  std::atomic<size_t> live_{0};
  std::atomic<int> calls_{0};  // allocations run on many threads in the fast-path tests
};

}  // namespace hal::detail::test_devices

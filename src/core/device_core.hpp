// What hal's core keeps for each device, apart from the backend: the caching allocators, the
// kernels compiled in this process and the stream for staged copies. The backend's DeviceImpl
// is a pure interface; this is the state every backend would otherwise have to carry.
//
// A device's core is made on first use and found from its DeviceImpl without a lock, since
// every Device::allocate and compile looks it up. It holds the device: devices live as long as
// the process, or until shutdown_device_cores() at exit.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hal/backend.hpp"

namespace hal::detail {

class CachingAllocator;

class DeviceCore {
 public:
  explicit DeviceCore(std::shared_ptr<DeviceImpl> device);
  ~DeviceCore();
  DeviceCore(const DeviceCore&) = delete;
  DeviceCore& operator=(const DeviceCore&) = delete;

  DeviceImpl& device() const { return *device_; }
  // The caching allocator for memory of `kind`, one of the three MemoryKinds (unchecked).
  CachingAllocator& allocator(MemoryKind kind) const {
    return *allocators_[static_cast<size_t>(kind)];
  }
  // A stream of this device that hal uses for staged copies between backends.
  std::shared_ptr<StreamImpl> transfer_stream();

  // Streams hal borrows for its own short work (an op falling back to cpu:0): one given back
  // is kept for the next borrower, so that a fallback does not make a stream (on the CPU, start
  // and join a thread) each time. Give back only a stream whose work has completed.
  std::shared_ptr<StreamImpl> borrow_stream();
  void give_back_stream(std::shared_ptr<StreamImpl> stream);

  // Streams made by Device::create_stream, held weakly, for Device::synchronize and
  // synchronize_all: track_stream adds one; live_streams gives those still alive, oldest first.
  void track_stream(const std::shared_ptr<StreamImpl>& stream);
  std::vector<std::shared_ptr<StreamImpl>> live_streams() const;

  // Kernels compiled earlier in this process, by source and options (Device::compile).
  std::shared_ptr<KernelImpl> cached_kernel(const std::string& key) const;
  void cache_kernel(const std::string& key, std::shared_ptr<KernelImpl> kernel);
  void clear_kernel_cache();

  // Returns cached memory to the backend, drops the transfer and spare streams and the kernels:
  // all of
  // them hold the device, which would otherwise outlive its backend's library.
  void shutdown();

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::array<std::shared_ptr<CachingAllocator>, 3> allocators_;
  mutable std::mutex mutex_;  // guards kernels_, transfer_stream_ and spare_streams_
  std::unordered_map<std::string, std::shared_ptr<KernelImpl>> kernels_;
  std::shared_ptr<StreamImpl> transfer_stream_;
  std::vector<std::shared_ptr<StreamImpl>> spare_streams_;
  mutable std::mutex streams_mutex_;  // guards streams_ (apart from mutex_: compiles are slow)
  std::vector<std::weak_ptr<StreamImpl>> streams_;
  size_t streams_pruned_at_ = 0;  // streams_.size() after the last sweep of expired entries
};

// The core of `device`, made on first use. `device` is owned by a shared_ptr (backends make
// their devices with std::make_shared).
DeviceCore& core_of(DeviceImpl& device);

// Every core made so far, in the order they were made.
std::vector<DeviceCore*> device_cores();

// Shuts down every core made so far (the registry calls it at exit). A core asked for later is
// made anew.
void shutdown_device_cores();

// Changes whenever cores are shut down: what is cached by device address (the ops' plans) is
// valid only within one generation.
uint64_t device_generation();

}  // namespace hal::detail

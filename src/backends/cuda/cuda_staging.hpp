// Pinned host memory that copies from and to pageable memory go through: the driver reads a
// pageable source at once (before earlier work on the stream has run) and returns from a copy
// into pageable memory only once it has run, so hal stages such copies itself.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_api.hpp"

namespace hal::cuda {

// Blocks of power-of-two sizes, kept for reuse: cuMemHostAlloc costs far more than the small
// copies it serves. Thread-safe.
class PinnedStaging : public std::enable_shared_from_this<PinnedStaging> {
 public:
  PinnedStaging(std::shared_ptr<const CuApi> api, std::string device_name);
  ~PinnedStaging();  // frees every block (all owners have dropped theirs)
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // A block of at least `bytes`, with the device's context current. It returns to the pool
  // when its last owner drops it; that calls no driver function, so a host function the driver
  // runs may drop it. OutOfMemory naming the device when the driver cannot pin more.
  std::shared_ptr<void> take(size_t bytes);

  // Whether `pointer` lies in memory pinned by the driver (anywhere in a cuMemHostAlloc range),
  // which the GPU reads and writes when a copy runs. With the context current; false for
  // anything else, memory pinned by cuMemHostRegister too (staged: correct, one copy more).
  bool pinned(const void* pointer) const;

 private:
  void give_back(void* block, size_t size);
  void free_blocks(std::vector<void*>& blocks);  // the context current

  std::shared_ptr<const CuApi> api_;
  std::string device_name_;
  CUcontext context_ = nullptr;  // the context of the first take()
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // by block size
  std::vector<void*> surplus_;  // over kMaxKeptBytes: freed by the next take()
  size_t kept_bytes_ = 0;
};

}  // namespace hal::cuda

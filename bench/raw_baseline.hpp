// The baseline of the dispatch and copy suites: the same work as a hal backend does, written
// against the driver's API directly, one implementation per driver.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace hal::bench {

class RawBaseline {
 public:
  virtual ~RawBaseline() = default;
  // Enqueues an empty kernel over one work item.
  virtual void enqueue_empty() = 0;
  // Waits for everything enqueued.
  virtual void finish() = 0;
  // Copies `bytes` from/to host memory into the first of two device buffers of the
  // baseline's own (grown to `bytes` when smaller), then waits.
  virtual void write(const void* src, size_t bytes) = 0;
  virtual void read(void* dst, size_t bytes) = 0;
  // Copies `bytes` from the first device buffer into the second, then waits.
  virtual void copy_on_device(size_t bytes) = 0;
};

// The device hal calls opencl:<index> (same platform and device order, same filter).
std::unique_ptr<RawBaseline> make_opencl_baseline(size_t index);
// kernels/vulkan/empty.comp's SPIR-V, which the dispatch suite launches on Vulkan devices;
// empty where hal was built without Vulkan.
std::string_view vulkan_empty_kernel();
// The Vulkan device with hal's `uuid`; null where hal was built without Vulkan.
std::unique_ptr<RawBaseline> make_vulkan_baseline(const std::string& uuid);
// The device hal calls cuda:<index>; null where hal was built without CUDA.
std::unique_ptr<RawBaseline> make_cuda_baseline(size_t index);

}  // namespace hal::bench

// A kernel compiled for one CUDA device: its module and function.
#pragma once

#include <atomic>

#include "backends/cuda/cuda_device.hpp"

namespace hal::cuda {

class CudaKernel final : public KernelImpl {
 public:
  // Takes over `module`. Holds the driver table, not the device: the device's kernel cache
  // holds kernels.
  CudaKernel(std::string name, const CudaDevice& device, CUmodule module, CUfunction function);
  ~CudaKernel() override;

  CUfunction native() const { return function_; }
  // The most threads a block of this kernel may have (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK):
  // below the device's limit when the kernel needs many registers a thread.
  uint32_t max_threads() const { return max_threads_; }
  // Raises the function's dynamic shared memory limit to `bytes` once (above 48 KiB a kernel
  // must opt in). Thread-safe.
  CUresult allow_shared_bytes(uint32_t bytes);

 private:
  std::shared_ptr<const CuApi> api_;
  CUmodule module_;
  CUfunction function_;
  uint32_t max_threads_;
  std::atomic<uint32_t> shared_allowed_{48 * 1024};
};

// The prelude that maps hal's portable kernel dialect onto CUDA C++.
extern const char* const kPortablePrelude;

}  // namespace hal::cuda

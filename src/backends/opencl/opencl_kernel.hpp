// A kernel compiled for one OpenCL device: its program and cl_kernel.
#pragma once

#include <mutex>

#include "backends/opencl/opencl_device.hpp"

namespace hal::opencl {

class OpenClKernel final : public KernelImpl {
 public:
  // Takes over one reference to each of `program` and `kernel`.
  // Holds the platform, not the device: the device's kernel cache holds kernels.
  // `portable`: built from hal's portable dialect, whose kernels check their bounds, so a launch
  // may round the global size up to whole work groups of hal's choosing.
  OpenClKernel(std::string name, const OpenClDevice& device, cl_program program, cl_kernel kernel,
               bool portable);
  ~OpenClKernel() override;

  cl_kernel native() const { return kernel_; }
  cl_uint num_args() const { return num_args_; }
  bool runs_past_global() const { return portable_; }
  // CL_KERNEL_WORK_GROUP_SIZE: the most work items a group of this kernel may have.
  uint64_t max_group_items() const { return max_group_items_; }
  // Arguments are state of the cl_kernel: setting them and enqueuing happen under this lock.
  std::mutex& launch_mutex() { return launch_mutex_; }

 private:
  std::shared_ptr<ClPlatform> platform_;
  cl_program program_;
  cl_kernel kernel_;
  cl_uint num_args_ = 0;
  bool portable_ = false;
  uint64_t max_group_items_ = 1;
  std::mutex launch_mutex_;
};

// The prelude that maps hal's portable kernel dialect onto OpenCL C.
extern const char* const kPortablePrelude;

}  // namespace hal::opencl

// The OpenCL baseline: the same work as hal's OpenCL backend does, written against the OpenCL
// API directly.
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "raw_baseline.hpp"

namespace hal::bench {
namespace {

void ok(cl_int status, const char* what) {
  if (status != CL_SUCCESS)
    throw std::runtime_error(std::string("raw OpenCL baseline: ") + what +
                             " failed: " + std::to_string(status));
}

bool usable(cl_device_id device) {
  cl_bool available = CL_FALSE, compiler = CL_FALSE;
  clGetDeviceInfo(device, CL_DEVICE_AVAILABLE, sizeof available, &available, nullptr);
  clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, nullptr);
  return available && compiler;
}

class RawOpenCl final : public RawBaseline {
 public:
  // The device hal calls opencl:<index> (same platform and device order, same filter).
  explicit RawOpenCl(size_t index) {
    cl_uint count = 0;
    ok(clGetPlatformIDs(0, nullptr, &count), "clGetPlatformIDs");
    std::vector<cl_platform_id> platforms(count);
    clGetPlatformIDs(count, platforms.data(), nullptr);
    std::vector<cl_device_id> devices;
    for (cl_platform_id platform : platforms) {
      cl_uint n = 0;
      if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS) continue;
      std::vector<cl_device_id> ids(n);
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
      for (cl_device_id id : ids)
        if (usable(id)) devices.push_back(id);
    }
    if (index >= devices.size()) throw std::runtime_error("raw OpenCL baseline: no such device");
    device_ = devices[index];
    cl_int status = CL_SUCCESS;
    context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &status);
    ok(status, "clCreateContext");
    // Profiling on, as hal's queues have it, so that both pay the same per-command cost.
    queue_ = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &status);
    ok(status, "clCreateCommandQueue");
    const char* source = "__kernel void empty() {}";
    program_ = clCreateProgramWithSource(context_, 1, &source, nullptr, &status);
    ok(status, "clCreateProgramWithSource");
    ok(clBuildProgram(program_, 1, &device_, "", nullptr, nullptr), "clBuildProgram");
    kernel_ = clCreateKernel(program_, "empty", &status);
    ok(status, "clCreateKernel");
  }
  ~RawOpenCl() override {
    for (cl_mem buffer : buffers_)
      if (buffer) clReleaseMemObject(buffer);
    clReleaseKernel(kernel_);
    clReleaseProgram(program_);
    clReleaseCommandQueue(queue_);
    clReleaseContext(context_);
  }
  RawOpenCl(const RawOpenCl&) = delete;
  RawOpenCl& operator=(const RawOpenCl&) = delete;

  void enqueue_empty() override {
    const size_t global = 1;
    ok(clEnqueueNDRangeKernel(queue_, kernel_, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
       "clEnqueueNDRangeKernel");
  }
  void finish() override { ok(clFinish(queue_), "clFinish"); }
  // Non-blocking write and read, then clFinish: as hal's stream does them.
  void write(const void* src, size_t bytes) override {
    reserve(bytes);
    ok(clEnqueueWriteBuffer(queue_, buffers_[0], CL_FALSE, 0, bytes, src, 0, nullptr, nullptr),
       "clEnqueueWriteBuffer");
    finish();
  }
  void read(void* dst, size_t bytes) override {
    reserve(bytes);
    ok(clEnqueueReadBuffer(queue_, buffers_[0], CL_FALSE, 0, bytes, dst, 0, nullptr, nullptr),
       "clEnqueueReadBuffer");
    finish();
  }
  void copy_on_device(size_t bytes) override {
    reserve(bytes);
    ok(clEnqueueCopyBuffer(queue_, buffers_[0], buffers_[1], 0, 0, bytes, 0, nullptr, nullptr),
       "clEnqueueCopyBuffer");
    finish();
  }

 private:
  void reserve(size_t bytes) {
    if (buffer_size_ >= bytes) return;
    for (cl_mem& buffer : buffers_) {
      if (buffer) clReleaseMemObject(buffer);
      cl_int status = CL_SUCCESS;
      buffer = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &status);
      ok(status, "clCreateBuffer");
    }
    buffer_size_ = bytes;
  }

  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  cl_kernel kernel_ = nullptr;
  cl_mem buffers_[2] = {nullptr, nullptr};
  size_t buffer_size_ = 0;
};

}  // namespace

std::unique_ptr<RawBaseline> make_opencl_baseline(size_t index) {
  return std::make_unique<RawOpenCl>(index);
}

}  // namespace hal::bench

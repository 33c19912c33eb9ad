#include "opencl_baseline.hpp"

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stdexcept>
#include <vector>

namespace hal::bench {

struct RawOpenCl::State {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem buffer = nullptr;
  size_t buffer_size = 0;
  cl_device_id device = nullptr;
};

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

}  // namespace

RawOpenCl::RawOpenCl(size_t index) : state_(new State) {
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
  state_->device = devices[index];
  cl_int status = CL_SUCCESS;
  state_->context = clCreateContext(nullptr, 1, &state_->device, nullptr, nullptr, &status);
  ok(status, "clCreateContext");
  // Profiling on, as hal's queues have it, so that both pay the same per-command cost.
  state_->queue =
      clCreateCommandQueue(state_->context, state_->device, CL_QUEUE_PROFILING_ENABLE, &status);
  ok(status, "clCreateCommandQueue");
  const char* source = "__kernel void empty() {}";
  state_->program = clCreateProgramWithSource(state_->context, 1, &source, nullptr, &status);
  ok(status, "clCreateProgramWithSource");
  ok(clBuildProgram(state_->program, 1, &state_->device, "", nullptr, nullptr), "clBuildProgram");
  state_->kernel = clCreateKernel(state_->program, "empty", &status);
  ok(status, "clCreateKernel");
}

RawOpenCl::~RawOpenCl() {
  if (state_->buffer) clReleaseMemObject(state_->buffer);
  clReleaseKernel(state_->kernel);
  clReleaseProgram(state_->program);
  clReleaseCommandQueue(state_->queue);
  clReleaseContext(state_->context);
  delete state_;
}

void RawOpenCl::enqueue_empty() {
  const size_t global = 1;
  ok(clEnqueueNDRangeKernel(state_->queue, state_->kernel, 1, nullptr, &global, nullptr, 0, nullptr,
                            nullptr),
     "clEnqueueNDRangeKernel");
}

void RawOpenCl::finish() { ok(clFinish(state_->queue), "clFinish"); }

void RawOpenCl::write(const void* src, size_t bytes) {
  if (state_->buffer_size < bytes) {
    if (state_->buffer) clReleaseMemObject(state_->buffer);
    cl_int status = CL_SUCCESS;
    state_->buffer = clCreateBuffer(state_->context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
    ok(status, "clCreateBuffer");
    state_->buffer_size = bytes;
  }
  ok(clEnqueueWriteBuffer(state_->queue, state_->buffer, CL_FALSE, 0, bytes, src, 0, nullptr,
                          nullptr),
     "clEnqueueWriteBuffer");
  finish();
}

void RawOpenCl::read(void* dst, size_t bytes) {
  ok(clEnqueueReadBuffer(state_->queue, state_->buffer, CL_FALSE, 0, bytes, dst, 0, nullptr,
                         nullptr),
     "clEnqueueReadBuffer");
  finish();
}

std::unique_ptr<RawBaseline> make_opencl_baseline(size_t index) {
  return std::make_unique<RawOpenCl>(index);
}

}  // namespace hal::bench

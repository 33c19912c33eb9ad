// The OpenCL entry points hal uses, read from the ICD loader (libOpenCL.so.1) at run time, and
// the translation of cl_int status codes into hal::Error.
#pragma once

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <memory>
#include <string>
#include <string_view>

#include "hal/error.hpp"

namespace hal::opencl {

// X(name): every function of the table, all OpenCL 1.2 core: ClApi::load refuses a loader that
// lacks one.
// clang-format off
#define HAL_CL_FUNCTIONS(X) \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) \
  X(clCreateBuffer) X(clCreateSubBuffer) X(clReleaseMemObject) X(clEnqueueReadBuffer) \
  X(clEnqueueWriteBuffer) X(clEnqueueCopyBuffer) X(clEnqueueFillBuffer) X(clEnqueueMapBuffer) \
  X(clEnqueueUnmapMemObject) X(clCreateProgramWithSource) X(clCreateProgramWithBinary) \
  X(clBuildProgram) X(clGetProgramInfo) X(clGetProgramBuildInfo) X(clReleaseProgram) \
  X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clGetKernelInfo) \
  X(clGetKernelArgInfo) X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel) \
  X(clEnqueueMarkerWithWaitList) X(clEnqueueBarrierWithWaitList) X(clCreateUserEvent) \
  X(clSetUserEventStatus) X(clSetEventCallback) X(clWaitForEvents) X(clGetEventInfo) \
  X(clGetEventProfilingInfo) X(clRetainEvent) X(clReleaseEvent) X(clFlush) X(clFinish)
// clang-format on

struct ClApi {
#define HAL_CL_MEMBER(name) decltype(&::name) name = nullptr;
  HAL_CL_FUNCTIONS(HAL_CL_MEMBER)
#undef HAL_CL_MEMBER

  // Opens the ICD loader. Throws BackendUnavailable naming what is missing.
  static std::shared_ptr<const ClApi> load();
};

// "CL_OUT_OF_RESOURCES", or "CL_<code>" for codes this table lacks.
std::string status_name(cl_int status);
// The hal ErrorCode that a cl_int stands for.
ErrorCode error_code(cl_int status);
// Throws hal::Error "<where>: <what> failed: CL_NAME (code)".
[[noreturn]] void throw_status(cl_int status, std::string_view where, std::string_view what);
// Checks a status; `where` and `what` are only read on failure. For hot paths, test the status
// first and build the message only when it failed.
inline void check(cl_int status, std::string_view where, std::string_view what) {
  if (status != CL_SUCCESS) [[unlikely]]
    throw_status(status, where, what);
}

}  // namespace hal::opencl

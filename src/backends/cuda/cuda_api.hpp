// The CUDA driver entry points hal uses, read from libcuda.so.1 at run time, and the translation
// of CUresult into hal::Error.
//
// Entry points come from cuGetProcAddress with the version of the headers hal was built with, so
// each is the variant (_v2, _v3 ...) whose signature those headers declare, whatever the driver.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <string_view>

#include "hal/error.hpp"

namespace hal::cuda {

// X(name): every driver function of the table, by its base name (cuda.h maps each name onto the
// versioned symbol its declaration belongs to; the member takes the declared type).
// clang-format off
#define HAL_CU_FUNCTIONS(X) \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetUuid) \
  X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDeviceGetPCIBusId) X(cuDeviceCanAccessPeer) \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) \
  X(cuCtxSetCurrent) X(cuCtxEnablePeerAccess) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) \
  X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuPointerGetAttributes) X(cuMemAllocManaged) X(cuStreamCreate) \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) \
  X(cuLaunchHostFunc) X(cuStreamWaitValue32) X(cuMemHostGetDevicePointer) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) \
  X(cuMemcpyDtoDAsync) X(cuMemcpyPeerAsync) X(cuMemsetD8Async) X(cuMemsetD16Async) \
  X(cuMemsetD32Async) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) X(cuGraphGetNodes) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) \
  X(cuGraphExecDestroy) X(cuGraphDestroy)
// clang-format on

struct CuApi {
#define HAL_CU_MEMBER(name) decltype(&::name) name = nullptr;
  HAL_CU_FUNCTIONS(HAL_CU_MEMBER)
#undef HAL_CU_MEMBER
  int driver_version = 0;  // 13000 for CUDA 13.0

  // Opens libcuda.so.1 and initialises the driver. Throws BackendUnavailable naming what is
  // missing: no driver, a driver older than CUDA 12, or cuInit's error (no device, ...).
  static std::shared_ptr<const CuApi> load();

  // "CUDA_ERROR_OUT_OF_MEMORY: out of memory", from the driver's own tables.
  std::string describe(CUresult result) const;
  // Throws hal::Error "<where>: <what> failed: CUDA_ERROR_NAME: string (code)".
  [[noreturn]] void throw_result(CUresult result, std::string_view where,
                                 std::string_view what) const;
  // Checks a result; `where` and `what` are only read on failure.
  void check(CUresult result, std::string_view where, std::string_view what) const {
    if (result != CUDA_SUCCESS) [[unlikely]]
      throw_result(result, where, what);
  }
};

// "CUDA 13.0" for the driver version 13000.
std::string cuda_version_name(int version);

// The hal ErrorCode that a CUresult stands for.
ErrorCode error_code(CUresult result);

}  // namespace hal::cuda

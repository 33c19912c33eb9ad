#include "backends/opencl/cl_api.hpp"

#include <dlfcn.h>

namespace hal::opencl {

std::shared_ptr<const ClApi> ClApi::load() {
  // Never unloaded: the loader and its drivers keep threads and exit handlers of their own, and
  // run-time tools (sanitizers, profilers) need their code mapped until the process ends.
  constexpr int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
  void* library = ::dlopen("libOpenCL.so.1", flags);
  if (!library) library = ::dlopen("libOpenCL.so", flags);
  if (!library) {
    const char* why = ::dlerror();
    throw Error(ErrorCode::BackendUnavailable,
                std::string("the OpenCL ICD loader libOpenCL.so.1 cannot be opened: ") +
                    (why ? why : "unknown reason") +
                    " (Debian: apt-get install ocl-icd-libopencl1 and a driver such as "
                    "pocl-opencl-icd)");
  }
  auto api = std::make_shared<ClApi>();
  std::string missing;
#define HAL_CL_LOAD(name)                                                   \
  api->name = reinterpret_cast<decltype(&::name)>(::dlsym(library, #name)); \
  if (!api->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HAL_CL_FUNCTIONS(HAL_CL_LOAD)
#undef HAL_CL_LOAD
  if (!missing.empty())
    throw Error(ErrorCode::BackendUnavailable,
                "the OpenCL ICD loader lacks OpenCL 1.2 functions: " + missing);
  return api;
}

std::string status_name(cl_int status) {
  switch (status) {
#define HAL_CL_STATUS(name) \
  case name:                \
    return #name;
    HAL_CL_STATUS(CL_SUCCESS)
    HAL_CL_STATUS(CL_DEVICE_NOT_FOUND)
    HAL_CL_STATUS(CL_DEVICE_NOT_AVAILABLE)
    HAL_CL_STATUS(CL_COMPILER_NOT_AVAILABLE)
    HAL_CL_STATUS(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    HAL_CL_STATUS(CL_OUT_OF_RESOURCES)
    HAL_CL_STATUS(CL_OUT_OF_HOST_MEMORY)
    HAL_CL_STATUS(CL_PROFILING_INFO_NOT_AVAILABLE)
    HAL_CL_STATUS(CL_MEM_COPY_OVERLAP)
    HAL_CL_STATUS(CL_IMAGE_FORMAT_MISMATCH)
    HAL_CL_STATUS(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    HAL_CL_STATUS(CL_BUILD_PROGRAM_FAILURE)
    HAL_CL_STATUS(CL_MAP_FAILURE)
    HAL_CL_STATUS(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    HAL_CL_STATUS(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    HAL_CL_STATUS(CL_COMPILE_PROGRAM_FAILURE)
    HAL_CL_STATUS(CL_LINKER_NOT_AVAILABLE)
    HAL_CL_STATUS(CL_LINK_PROGRAM_FAILURE)
    HAL_CL_STATUS(CL_DEVICE_PARTITION_FAILED)
    HAL_CL_STATUS(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    HAL_CL_STATUS(CL_INVALID_VALUE)
    HAL_CL_STATUS(CL_INVALID_DEVICE_TYPE)
    HAL_CL_STATUS(CL_INVALID_PLATFORM)
    HAL_CL_STATUS(CL_INVALID_DEVICE)
    HAL_CL_STATUS(CL_INVALID_CONTEXT)
    HAL_CL_STATUS(CL_INVALID_QUEUE_PROPERTIES)
    HAL_CL_STATUS(CL_INVALID_COMMAND_QUEUE)
    HAL_CL_STATUS(CL_INVALID_HOST_PTR)
    HAL_CL_STATUS(CL_INVALID_MEM_OBJECT)
    HAL_CL_STATUS(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    HAL_CL_STATUS(CL_INVALID_IMAGE_SIZE)
    HAL_CL_STATUS(CL_INVALID_SAMPLER)
    HAL_CL_STATUS(CL_INVALID_BINARY)
    HAL_CL_STATUS(CL_INVALID_BUILD_OPTIONS)
    HAL_CL_STATUS(CL_INVALID_PROGRAM)
    HAL_CL_STATUS(CL_INVALID_PROGRAM_EXECUTABLE)
    HAL_CL_STATUS(CL_INVALID_KERNEL_NAME)
    HAL_CL_STATUS(CL_INVALID_KERNEL_DEFINITION)
    HAL_CL_STATUS(CL_INVALID_KERNEL)
    HAL_CL_STATUS(CL_INVALID_ARG_INDEX)
    HAL_CL_STATUS(CL_INVALID_ARG_VALUE)
    HAL_CL_STATUS(CL_INVALID_ARG_SIZE)
    HAL_CL_STATUS(CL_INVALID_KERNEL_ARGS)
    HAL_CL_STATUS(CL_INVALID_WORK_DIMENSION)
    HAL_CL_STATUS(CL_INVALID_WORK_GROUP_SIZE)
    HAL_CL_STATUS(CL_INVALID_WORK_ITEM_SIZE)
    HAL_CL_STATUS(CL_INVALID_GLOBAL_OFFSET)
    HAL_CL_STATUS(CL_INVALID_EVENT_WAIT_LIST)
    HAL_CL_STATUS(CL_INVALID_EVENT)
    HAL_CL_STATUS(CL_INVALID_OPERATION)
    HAL_CL_STATUS(CL_INVALID_GL_OBJECT)
    HAL_CL_STATUS(CL_INVALID_BUFFER_SIZE)
    HAL_CL_STATUS(CL_INVALID_MIP_LEVEL)
    HAL_CL_STATUS(CL_INVALID_GLOBAL_WORK_SIZE)
    HAL_CL_STATUS(CL_INVALID_PROPERTY)
    HAL_CL_STATUS(CL_INVALID_IMAGE_DESCRIPTOR)
    HAL_CL_STATUS(CL_INVALID_COMPILER_OPTIONS)
    HAL_CL_STATUS(CL_INVALID_LINKER_OPTIONS)
    HAL_CL_STATUS(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef HAL_CL_STATUS
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_" + std::to_string(status);
  }
}

void throw_status(cl_int status, std::string_view where, std::string_view what) {
  throw Error(error_code(status),
              std::string(where) + ": " + std::string(what) + " failed: " + status_name(status) +
                  " (" + std::to_string(status) + ")",
              status);
}

ErrorCode error_code(cl_int status) {
  switch (status) {
    case CL_SUCCESS:
      return ErrorCode::Ok;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE:
      return ErrorCode::OutOfMemory;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
    case CL_INVALID_BUILD_OPTIONS:
    case CL_INVALID_COMPILER_OPTIONS:
      return ErrorCode::CompileFailed;
    case CL_INVALID_KERNEL_NAME:
      return ErrorCode::NotFound;
    case CL_DEVICE_NOT_AVAILABLE:
      return ErrorCode::DeviceLost;
    case CL_COMPILER_NOT_AVAILABLE:
    case CL_LINKER_NOT_AVAILABLE:
    case CL_PROFILING_INFO_NOT_AVAILABLE:
      return ErrorCode::Unsupported;
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
      return ErrorCode::AsyncFailure;
    default:
      return status <= CL_INVALID_VALUE ? ErrorCode::InvalidArgument : ErrorCode::Internal;
  }
}

}  // namespace hal::opencl

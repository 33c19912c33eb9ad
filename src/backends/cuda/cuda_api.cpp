#include "backends/cuda/cuda_api.hpp"

#include <dlfcn.h>

namespace hal::cuda {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);
using DriverGetVersion = CUresult (*)(int*);

[[noreturn]] void unavailable(const std::string& why) {
  throw Error(ErrorCode::BackendUnavailable, why);
}

}  // namespace

std::shared_ptr<const CuApi> CuApi::load() {
  // Never unloaded, like the OpenCL loader: the driver keeps threads of its own.
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library) {
    const char* why = ::dlerror();
    unavailable(std::string("no NVIDIA driver: libcuda.so.1 cannot be opened (") +
                (why ? why : "unknown reason") + ")");
  }
  auto get_version = reinterpret_cast<DriverGetVersion>(::dlsym(library, "cuDriverGetVersion"));
  auto get_proc = reinterpret_cast<GetProcAddress>(::dlsym(library, "cuGetProcAddress_v2"));
  int driver = 0;
  if (!get_version || get_version(&driver) != CUDA_SUCCESS || !get_proc)
    unavailable(
        "the NVIDIA driver is older than CUDA 12.0 (hal needs cuGetProcAddress_v2; "
        "driver version " +
        std::to_string(driver) + ")");

  auto api = std::make_shared<CuApi>();
  api->driver_version = driver;
  // Ask for the ABI of the headers, or the driver's own if it is older (it has no newer one).
  const int version = driver < CUDA_VERSION ? driver : CUDA_VERSION;
  std::string missing;
#define HAL_CU_LOAD(name)                                                                          \
  {                                                                                                \
    void* address = nullptr;                                                                       \
    CUdriverProcAddressQueryResult found{};                                                        \
    if (get_proc(#name, &address, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS && \
        found == CU_GET_PROC_ADDRESS_SUCCESS)                                                      \
      api->name = reinterpret_cast<decltype(api->name)>(address);                                  \
    else                                                                                           \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                                 \
  }
  HAL_CU_FUNCTIONS(HAL_CU_LOAD)
#undef HAL_CU_LOAD
  if (!missing.empty())
    unavailable("the NVIDIA driver (" + cuda_version_name(driver) + ") lacks " + missing);

  const CUresult init = api->cuInit(0);
  if (init != CUDA_SUCCESS)
    unavailable("cuInit failed: " + api->describe(init) +
                (init == CUDA_ERROR_NO_DEVICE
                     ? " (no NVIDIA GPU is visible; see CUDA_VISIBLE_DEVICES)"
                     : ""));
  return api;
}

std::string cuda_version_name(int version) {
  return "CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string CuApi::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(result, &name);
  if (cuGetErrorString) cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA_ERROR_" + std::to_string(static_cast<int>(result));
  if (text) out += std::string(": ") + text;
  return out;
}

void CuApi::throw_result(CUresult result, std::string_view where, std::string_view what) const {
  throw Error(error_code(result),
              std::string(where) + ": " + std::string(what) + " failed: " + describe(result) +
                  " (" + std::to_string(static_cast<int>(result)) + ")",
              static_cast<int>(result));
}

ErrorCode error_code(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return ErrorCode::Ok;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return ErrorCode::OutOfMemory;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
      return ErrorCode::InvalidArgument;
    case CUDA_ERROR_NOT_FOUND:
      return ErrorCode::NotFound;
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return ErrorCode::Unsupported;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return ErrorCode::BackendUnavailable;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return ErrorCode::DeviceLost;
    default:
      return ErrorCode::Internal;
  }
}

}  // namespace hal::cuda

#include "backends/cuda/cublas.hpp"

#include <dlfcn.h>

namespace hal::cuda {
namespace {

void* open_cublas() {
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
    if (void* library = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) return library;
  return nullptr;
}

std::shared_ptr<const Cublas> open_and_read() {
  void* library = open_cublas();
  if (!library) {
    const char* why = ::dlerror();
    throw Error(ErrorCode::BackendUnavailable,
                std::string("cuBLAS (libcublas.so.13 or .12) cannot be opened, so CUDA devices "
                            "have no matmul (install the CUDA toolkit's cuBLAS, or add its lib "
                            "folder to LD_LIBRARY_PATH): ") +
                    (why ? why : "unknown reason"));
  }
  auto cublas = std::make_shared<Cublas>();
  std::string missing;
  // The address of each declaration, cast to its member's type, checks that they agree.
#define HAL_CUBLAS_LOAD(name, type)                                   \
  static_assert(sizeof(static_cast<type>(&::name)) == sizeof(void*)); \
  cublas->name = reinterpret_cast<type>(::dlsym(library, #name));     \
  if (!cublas->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HAL_CUBLAS_FUNCTIONS(HAL_CUBLAS_LOAD)
#undef HAL_CUBLAS_LOAD
  if (!missing.empty())
    throw Error(ErrorCode::BackendUnavailable, "cuBLAS is too old: it lacks " + missing);
  return cublas;
}

}  // namespace

std::shared_ptr<const Cublas> Cublas::load() {
  // A failure is remembered too: the reason is the same every time.
  static const auto loaded = []() -> std::pair<std::shared_ptr<const Cublas>, std::string> {
    try {
      auto cublas = std::const_pointer_cast<Cublas>(open_and_read());
      cublas->cublasGetProperty(MAJOR_VERSION, &cublas->major_);
      cublas->cublasGetProperty(MINOR_VERSION, &cublas->minor_);
      cublas->cublasGetProperty(PATCH_LEVEL, &cublas->patch_);
      return {cublas, ""};
    } catch (const Error& error) {
      return {nullptr, error.what()};
    }
  }();
  if (!loaded.first) throw Error(ErrorCode::BackendUnavailable, loaded.second);
  return loaded.first;
}

std::string Cublas::version() const {
  return std::to_string(major_) + "." + std::to_string(minor_) + "." + std::to_string(patch_);
}

std::string Cublas::describe(cublasStatus_t status) const {
  const char* name = cublasGetStatusName(status);
  const char* text = cublasGetStatusString(status);
  std::string out = name ? name : "CUBLAS_STATUS_" + std::to_string(static_cast<int>(status));
  if (text) out += std::string(": ") + text;
  return out;
}

void Cublas::throw_status(cublasStatus_t status, std::string_view where,
                          std::string_view what) const {
  throw Error(error_code(status),
              std::string(where) + ": " + std::string(what) + " failed: " + describe(status) +
                  " (" + std::to_string(static_cast<int>(status)) + ")",
              static_cast<int>(status));
}

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, 8};
    case DType::f16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, 2};
    case DType::bf16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2};
    case DType::f32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F, 4};
    default:
      throw Error(ErrorCode::Unsupported, std::string("cuBLAS GEMM in ") +
                                              std::string(to_string(dtype)) +
                                              ": hal multiplies f32, f64, f16 and bf16 with it");
  }
}

ErrorCode error_code(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return ErrorCode::Ok;
    case CUBLAS_STATUS_ALLOC_FAILED:
      return ErrorCode::OutOfMemory;
    case CUBLAS_STATUS_INVALID_VALUE:
      return ErrorCode::InvalidArgument;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_LICENSE_ERROR:
      return ErrorCode::Unsupported;
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return ErrorCode::BackendUnavailable;
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return ErrorCode::AsyncFailure;
    default:  // CUBLAS_STATUS_MAPPING_ERROR, CUBLAS_STATUS_INTERNAL_ERROR
      return ErrorCode::Internal;
  }
}

}  // namespace hal::cuda

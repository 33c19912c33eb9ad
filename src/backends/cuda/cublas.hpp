// cuBLAS, read from libcublas.so at run time the first time a CUDA stream needs it (matmul):
// the entry points hal calls, and the translation of cublasStatus_t into hal::Error. Opening
// it needs no GPU, so it is tested wherever the toolkit is installed.
#pragma once

#include <cublas_v2.h>

#include <memory>
#include <string>
#include <string_view>

#include "hal/dtype.hpp"
#include "hal/error.hpp"

namespace hal::cuda {

// X(name, type): the exported symbols hal uses (the _v2 names are what cublas_v2.h maps the
// plain names onto), each with the type of its declaration. The Ex functions are named by
// their signature: C++ adds inline overloads of them that take a cudaDataType compute type.
#define HAL_CUBLAS_FUNCTIONS(X)                                \
  X(cublasGetProperty, decltype(&::cublasGetProperty))         \
  X(cublasGetStatusName, decltype(&::cublasGetStatusName))     \
  X(cublasGetStatusString, decltype(&::cublasGetStatusString)) \
  X(cublasCreate_v2, decltype(&::cublasCreate_v2))             \
  X(cublasDestroy_v2, decltype(&::cublasDestroy_v2))           \
  X(cublasSetStream_v2, decltype(&::cublasSetStream_v2))       \
  X(cublasSetWorkspace_v2, decltype(&::cublasSetWorkspace_v2)) \
  X(cublasSetMathMode, decltype(&::cublasSetMathMode))         \
  X(cublasSgemm_v2, decltype(&::cublasSgemm_v2))               \
  X(cublasGemmEx, hal::cuda::GemmEx)                           \
  X(cublasGemmStridedBatchedEx, hal::cuda::GemmStridedBatchedEx)

using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const void*, const void*, cudaDataType, int, const void*,
                                  cudaDataType, int, const void*, void*, cudaDataType, int,
                                  cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                cublasOperation_t, int, int, int, const void*,
                                                const void*, cudaDataType, int, long long,
                                                const void*, cudaDataType, int, long long,
                                                const void*, void*, cudaDataType, int, long long,
                                                int, cublasComputeType_t, cublasGemmAlgo_t);

class Cublas {
 public:
  // Opens libcublas.so.<major> (newest first) or libcublas.so, once per process. Throws
  // BackendUnavailable naming the library or the missing entry points.
  static std::shared_ptr<const Cublas> load();

  std::string version() const;  // "13.1.0"

  // "CUBLAS_STATUS_NOT_SUPPORTED: the functionality requested is not supported".
  std::string describe(cublasStatus_t status) const;
  // Throws hal::Error "<where>: <what> failed: CUBLAS_STATUS_NAME: string (code)".
  [[noreturn]] void throw_status(cublasStatus_t status, std::string_view where,
                                 std::string_view what) const;
  void check(cublasStatus_t status, std::string_view where, std::string_view what) const {
    if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
      throw_status(status, where, what);
  }

#define HAL_CUBLAS_MEMBER(name, type) type name = nullptr;
  HAL_CUBLAS_FUNCTIONS(HAL_CUBLAS_MEMBER)
#undef HAL_CUBLAS_MEMBER

 private:
  int major_ = 0, minor_ = 0, patch_ = 0;
};

// The math mode of hal's cuBLAS handles: cuBLAS's defaults, less reduced-precision reductions,
// so that f16 and bf16 products accumulate in f32 as hal's matmul does on every device.
inline constexpr cublasMath_t kMathMode = static_cast<cublasMath_t>(
    CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);

// cuBLAS's names of a GEMM's element type and of its arithmetic: f16 and bf16 multiply on the
// tensor cores and accumulate in f32 (CUBLAS_COMPUTE_32F), as hal's matmul does everywhere.
struct GemmTypes {
  cudaDataType element;
  cublasComputeType_t compute;
  size_t bytes;  // of one element
};
// Unsupported for a dtype other than f32, f64, f16 and bf16.
GemmTypes gemm_types(DType dtype);

// The hal ErrorCode that a cublasStatus_t stands for.
ErrorCode error_code(cublasStatus_t status);

}  // namespace hal::cuda

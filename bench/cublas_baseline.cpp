// The cuBLAS baseline: cublasGemmEx through the entry points hal reads from libcublas (no CUDA
// library is linked), on the driver's primary context of the operands' device.
#include "cublas_baseline.hpp"

#include <stdexcept>
#include <string>

#include "backends/cuda/cublas.hpp"
#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_buffer.hpp"

namespace hal::bench {
namespace {

class CublasGemm final : public GemmBaseline {
 public:
  CublasGemm(const Tensor& a, const Tensor& b, Tensor& c)
      : api_(cuda::CuApi::load()),
        blas_(cuda::Cublas::load()),
        type_(cuda::gemm_types(a.dtype()).element) {
    if (a.dtype() == DType::f64)  // alpha and beta below are floats
      throw std::invalid_argument("cuBLAS baseline: no GEMM in f64");
    m_ = static_cast<int>(a.shape()[0]);
    k_ = static_cast<int>(a.shape()[1]);
    n_ = static_cast<int>(b.shape()[1]);
    a_ = cuda::address_of(*a.storage().impl());
    b_ = cuda::address_of(*b.storage().impl());
    c_ = cuda::address_of(*c.storage().impl());
    const auto index = a.device().id().substr(a.device().id().find(':') + 1);
    ok(api_->cuDeviceGet(&device_, std::stoi(index)), "cuDeviceGet");
    ok(api_->cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    try {
      ok(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
      ok(api_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      // The workspace (Hopper's size) and the math mode hal gives cuBLAS.
      ok(api_->cuMemAlloc(&workspace_, kWorkspaceBytes), "cuMemAlloc");
      blas_ok(blas_->cublasCreate_v2(&handle_), "cublasCreate");
      blas_ok(blas_->cublasSetStream_v2(handle_, stream_), "cublasSetStream");
      blas_ok(blas_->cublasSetWorkspace_v2(handle_, reinterpret_cast<void*>(workspace_),
                                           kWorkspaceBytes),
              "cublasSetWorkspace");
      blas_ok(blas_->cublasSetMathMode(handle_, cuda::kMathMode), "cublasSetMathMode");
    } catch (...) {
      release();
      throw;
    }
  }
  ~CublasGemm() override { release(); }

  void run() override {
    ok(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T: B first, m and n swapped.
    blas_ok(blas_->cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n_, m_, k_, &one,
                                reinterpret_cast<const void*>(b_), type_, n_,
                                reinterpret_cast<const void*>(a_), type_, k_, &zero,
                                reinterpret_cast<void*>(c_), type_, n_, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    ok(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

 private:
  static constexpr size_t kWorkspaceBytes = 32 << 20;
  void release() {
    api_->cuCtxSetCurrent(context_);
    if (handle_) blas_->cublasDestroy_v2(handle_);
    if (workspace_) api_->cuMemFree(workspace_);
    if (stream_) api_->cuStreamDestroy(stream_);
    api_->cuDevicePrimaryCtxRelease(device_);
  }
  void ok(CUresult result, const char* what) const {
    if (result != CUDA_SUCCESS)
      throw std::runtime_error(std::string("cuBLAS baseline: ") + what +
                               " failed: " + api_->describe(result));
  }
  void blas_ok(cublasStatus_t status, const char* what) const {
    if (status != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error(std::string("cuBLAS baseline: ") + what +
                               " failed: " + blas_->describe(status));
  }

  std::shared_ptr<const cuda::CuApi> api_;
  std::shared_ptr<const cuda::Cublas> blas_;
  cudaDataType type_;
  int m_ = 0, n_ = 0, k_ = 0;
  CUdeviceptr a_ = 0, b_ = 0, c_ = 0, workspace_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

std::unique_ptr<GemmBaseline> make_cublas_gemm(const Tensor& a, const Tensor& b, Tensor& c) {
  return std::make_unique<CublasGemm>(a, b, c);
}

}  // namespace hal::bench

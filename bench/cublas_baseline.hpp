// cuBLAS called directly, the baseline of hal's matrix products on CUDA devices: one GEMM on
// operands hal made (so both sides multiply the same data), through its own cuBLAS handle and
// stream on the device's primary context, then a wait for it.
#pragma once

#include <memory>

#include "hal/tensor.hpp"

namespace hal::bench {

class GemmBaseline {
 public:
  virtual ~GemmBaseline() = default;
  // c = a @ b (row-major, a m x k, b k x n, all of one dtype; f32 accumulation for f16 and
  // bf16, as hal's), enqueued with cublasGemmEx, then waited for.
  virtual void run() = 0;
};

// Null where hal was built without CUDA. `c` is written.
std::unique_ptr<GemmBaseline> make_cublas_gemm(const Tensor& a, const Tensor& b, Tensor& c);

}  // namespace hal::bench

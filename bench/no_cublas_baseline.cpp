// hal built without CUDA: no cuBLAS baseline.
#include "cublas_baseline.hpp"

namespace hal::bench {

std::unique_ptr<GemmBaseline> make_cublas_gemm(const Tensor&, const Tensor&, Tensor&) {
  return nullptr;
}

}  // namespace hal::bench

// The GemmDesc of C = A x B over three row-major matrices held by tensors, for tests that call
// hal's GEMM kernel directly (ops::portable_gemm): a [m, k], b [k, n] (or [n, k], transposed),
// c [m, n], all contiguous from offset 0, in a's dtype.
#pragma once

#include "hal/backend.hpp"
#include "hal/tensor.hpp"

namespace hal::test {

inline GemmDesc row_major_gemm(const Tensor& a, const Tensor& b, const Tensor& c,
                               bool b_transposed = false) {
  GemmDesc gemm;
  gemm.dtype = a.dtype();
  gemm.m = a.size(0);
  gemm.k = a.size(1);
  gemm.n = b_transposed ? b.size(0) : b.size(1);
  gemm.a = {a.storage().impl(), 0, gemm.k, 0, false};
  gemm.b = {b.storage().impl(), 0, b_transposed ? gemm.k : gemm.n, 0, b_transposed};
  gemm.c = {c.storage().impl(), 0, gemm.n, 0, false};
  return gemm;
}

}  // namespace hal::test

// bf16 and f16 matrix products on the CPU through oneDNN's matmul: the operands read as they
// are (no cast kernels before or after), the products accumulated in f32 and the result
// rounded once. oneDNN picks its kernels for the processor (AVX512-BF16 where present). Where
// it has no kernel for f16 (oneDNN 2.6 has none short of AVX512-FP16) the product runs in the
// same host kernel as f32: each operand widened a panel at a time by the vector kernels,
// OpenBLAS's sgemm, and the result rounded back.
#include "backends/cpu/cpu_matmul_half.hpp"

#include <cblas.h>

#include <memory>
#include <string>
#include <vector>

#include "hal/error.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/element_codec.hpp"

#include "backends/cpu/cpu_onednn.hpp"

namespace hal::cpu {
namespace {

// Converts n elements between f32 and `half`'s storage: the vector kernels, else element by
// element as the reference does.
void convert(DType half, bool to_half, const void* in, void* out, size_t n,
             const ops::simd::Kernels* simd) {
  const auto storage = half == DType::bf16 ? ops::simd::Storage::bf16 : ops::simd::Storage::f16;
  if (simd) {
    if (to_half)
      simd->convert(ops::simd::Storage::f32, storage, in, out, n);
    else
      simd->convert(storage, ops::simd::Storage::f32, in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    if (to_half) {
      const float value = static_cast<const float*>(in)[i];
      static_cast<uint16_t*>(out)[i] =
          half == DType::bf16 ? tensor::f32_to_bf16(value) : tensor::f32_to_f16(value);
    } else {
      const uint16_t bits = static_cast<const uint16_t*>(in)[i];
      static_cast<float*>(out)[i] =
          half == DType::bf16 ? tensor::bf16_to_f32(bits) : tensor::f16_to_f32(bits);
    }
  }
}

// An operand's matrix (rows x cols as stored, leading dimension ld) widened to a dense f32 one.
std::vector<float> widened(DType half, const uint16_t* data, int64_t rows, int64_t cols, int64_t ld,
                           const ops::simd::Kernels* simd) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    convert(half, false, data + r * ld, out.data() + r * cols, static_cast<size_t>(cols), simd);
  return out;
}

void widened_gemm(const GemmDesc& g, const KernelArgs& args, const ops::simd::Kernels* simd) {
  const auto* a = args.ptr<const uint16_t>(0) + g.a.offset;
  const auto* b = args.ptr<const uint16_t>(1) + g.b.offset;
  auto* c = args.ptr<uint16_t>(2) + g.c.offset;
  std::vector<float> product(static_cast<size_t>(g.m * g.n));
  for (int64_t i = 0; i < g.batch; ++i) {
    // Stored shapes: a is m x k (k x m transposed), b is k x n (n x k transposed).
    const int64_t a_rows = g.a.transposed ? g.k : g.m, a_cols = g.a.transposed ? g.m : g.k;
    const int64_t b_rows = g.b.transposed ? g.n : g.k, b_cols = g.b.transposed ? g.k : g.n;
    const std::vector<float> wa =
        widened(g.dtype, a + i * g.a.batch_stride, a_rows, a_cols, g.a.ld, simd);
    const std::vector<float> wb =
        widened(g.dtype, b + i * g.b.batch_stride, b_rows, b_cols, g.b.ld, simd);
    cblas_sgemm(CblasRowMajor, g.a.transposed ? CblasTrans : CblasNoTrans,
                g.b.transposed ? CblasTrans : CblasNoTrans, static_cast<blasint>(g.m),
                static_cast<blasint>(g.n), static_cast<blasint>(g.k), 1.0f, wa.data(),
                static_cast<blasint>(a_cols), wb.data(), static_cast<blasint>(b_cols), 0.0f,
                product.data(), static_cast<blasint>(g.n));
    uint16_t* ci = c + i * g.c.batch_stride;
    for (int64_t r = 0; r < g.m; ++r)
      convert(g.dtype, true, product.data() + r * g.n, ci + r * g.c.ld, static_cast<size_t>(g.n),
              simd);
  }
}

}  // namespace

HostKernelFn half_gemm_kernel(const GemmDesc& desc) {
  const ops::simd::Kernels* simd = ops::simd::active();
#if HAL_HAVE_ONEDNN
  if (std::shared_ptr<const onednn::Matmul> prepared = onednn::prepare_matmul(desc, {}))
    return [desc, prepared](const KernelChunk& chunk) {
      onednn::run_matmul(desc, {}, *prepared, chunk.args);
    };
#endif
  return [desc, simd](const KernelChunk& chunk) { widened_gemm(desc, chunk.args, simd); };
}

}  // namespace hal::cpu

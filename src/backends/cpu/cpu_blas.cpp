// Matrix products on the CPU, run in order on the stream as a host kernel of one work item (the
// library spreads each product over its own threads): f32 through oneDNN's sgemm where hal has
// oneDNN, f64 (and f32 without it) through OpenBLAS's cblas; bf16 and f16 through oneDNN
// (cpu_matmul_half.cpp). oneDNN picks its kernels by the instructions the CPU has; Debian's
// OpenBLAS 0.3.21 by a list of processors that ends before AMD's Zen 5, which it runs with its
// Haswell (AVX2) kernels: a 2048^3 product there took 87 ms against oneDNN's 45
// (docs/PERFORMANCE.md, "Session 36").
#include <cblas.h>
#if HAL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include "backends/cpu/cpu_matmul_half.hpp"
#include "backends/cpu/cpu_onednn.hpp"
#include "backends/cpu/cpu_stream.hpp"
#include "hal/kernel.hpp"

namespace hal::cpu {
namespace {

CBLAS_TRANSPOSE transpose(const GemmOperand& operand) {
  return operand.transposed ? CblasTrans : CblasNoTrans;
}

template <class T>
void run(const GemmDesc& g, const KernelArgs& args) {
  const T* a = args.ptr<const T>(0) + g.a.offset;
  const T* b = args.ptr<const T>(1) + g.b.offset;
  T* c = args.ptr<T>(2) + g.c.offset;
  for (int64_t i = 0; i < g.batch; ++i) {
    const auto m = static_cast<blasint>(g.m), n = static_cast<blasint>(g.n),
               k = static_cast<blasint>(g.k);
    const T* ai = a + i * g.a.batch_stride;
    const T* bi = b + i * g.b.batch_stride;
    T* ci = c + i * g.c.batch_stride;
#if HAL_HAVE_ONEDNN
    if constexpr (std::is_same_v<T, float>) {
      // Row-major, as cblas's call below; a refusal (none expected) falls through to it. Each
      // matrix is its own call: one thread where that one is small.
      const onednn::OneThreadForSmall threads(static_cast<double>(g.m) * static_cast<double>(g.n) *
                                              static_cast<double>(g.k));
      if (dnnl_sgemm(g.a.transposed ? 'T' : 'N', g.b.transposed ? 'T' : 'N', m, n, k, 1.0f, ai,
                     g.a.ld, bi, g.b.ld, 0.0f, ci, g.c.ld) == dnnl_success)
        continue;
    }
#endif
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, transpose(g.a), transpose(g.b), m, n, k, 1.0f, ai,
                  static_cast<blasint>(g.a.ld), bi, static_cast<blasint>(g.b.ld), 0.0f, ci,
                  static_cast<blasint>(g.c.ld));
    else
      cblas_dgemm(CblasRowMajor, transpose(g.a), transpose(g.b), m, n, k, 1.0, ai,
                  static_cast<blasint>(g.a.ld), bi, static_cast<blasint>(g.b.ld), 0.0, ci,
                  static_cast<blasint>(g.c.ld));
  }
}

}  // namespace

void CpuStream::gemm(const GemmDesc& desc) {
  const KernelArg args[] = {Buffer(desc.a.buffer), Buffer(desc.b.buffer), Buffer(desc.c.buffer)};
  if (desc.dtype == DType::bf16 || desc.dtype == DType::f16) {
    const Kernel kernel = make_host_kernel("gemm", half_gemm_kernel(desc));
    launch(kernel.impl(), LaunchConfig::linear(1), args);
    return;
  }
  const Kernel kernel = host_kernel("gemm", [desc](const KernelChunk& chunk) {
    if (desc.dtype == DType::f64)
      run<double>(desc, chunk.args);
    else
      run<float>(desc, chunk.args);
  });
  launch(kernel.impl(), LaunchConfig::linear(1), args);
}

}  // namespace hal::cpu

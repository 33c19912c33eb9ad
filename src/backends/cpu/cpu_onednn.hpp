// What the CPU's oneDNN primitives share: the engine, and the matrix products (bf16 and f16
// products, products with an epilogue) as one oneDNN matmul. Only where hal was built with
// oneDNN (HAL_HAVE_ONEDNN).
#pragma once

#if HAL_HAVE_ONEDNN
#include <dnnl.hpp>

#include <memory>
#include <mutex>

#include "hal/backend.hpp"
#include "hal/kernel.hpp"

namespace hal::cpu::onednn {

// oneDNN's CPU engine, made once.
const dnnl::engine& engine();

// Held while a oneDNN primitive (matmul, convolution, reorder) is made: one at a time in the
// process. Each layout is made once, so nothing waits long; two streams that meet a new layout
// together make it once, not twice; and the statics and primitive cache that oneDNN fills on
// first use are published through a lock that ThreadSanitizer sees (Debian's oneDNN is not
// instrumented: its own guards and atomics are invisible to it, and read as races).
[[nodiscard]] std::unique_lock<std::mutex> making_primitives();

// While alive, oneDNN's calls on this thread use one OpenMP thread where a product of `work`
// multiply-adds (m n k, times the batch in one call) is too small to share: up to 2^20, about
// 100^3. There the fork and join of the second thread cost more than it saves (2 cores, oneDNN
// 2.6: a 64^3 product with a gelu epilogue 8.4 us on two threads, 5.1 on one; 128^3 20.8
// against 27.7; docs/PERFORMANCE.md, "Session 37"). A primitive made under it is made for one
// thread, and must run under it too.
class OneThreadForSmall {
 public:
  static constexpr double kMaxWork = 1 << 20;
  explicit OneThreadForSmall(double work);
  ~OneThreadForSmall();
  OneThreadForSmall(const OneThreadForSmall&) = delete;
  OneThreadForSmall& operator=(const OneThreadForSmall&) = delete;

 private:
  int previous_ = 0;  // the thread's OpenMP thread count to restore, 0 when unchanged
};
// m n k of one matrix of `gemm`, times its batch.
double gemm_work(const GemmDesc& gemm);

// oneDNN's matmul for a GemmDesc (f32, bf16, f16) with its epilogue: the bias as the matmul's
// bias argument, the activation (gelu, tanh, sigmoid, silu) as an eltwise post-op, applied to
// each block of the result while oneDNN's kernel holds it. Not relu: oneDNN's vector kernels
// take max(x, 0), which turns NaN into 0 where hal's relu keeps it.
struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};
// Null where oneDNN has none for these operands (f64, f16 on most CPUs) or this activation.
// Made once per layout (operand shapes, strides and transposes, the epilogue) and kept.
std::shared_ptr<const Matmul> prepare_matmul(const GemmDesc& gemm, const GemmEpilogue& epilogue);
// Runs it in a host kernel whose arguments are A, B, C and (with a bias) the bias.
void run_matmul(const GemmDesc& gemm, const GemmEpilogue& epilogue, const Matmul& matmul,
                const KernelArgs& args);

}  // namespace hal::cpu::onednn

#endif

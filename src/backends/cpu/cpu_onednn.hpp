// What the CPU's oneDNN primitives share: the engine, and the matrix products (bf16 and f16
// products, products with an epilogue) as one oneDNN matmul. Only where hal was built with
// oneDNN (HAL_HAVE_ONEDNN).
#pragma once

#if HAL_HAVE_ONEDNN
#include <dnnl.hpp>

#include <memory>

#include "hal/backend.hpp"
#include "hal/kernel.hpp"

namespace hal::cpu::onednn {

// oneDNN's CPU engine, made once.
const dnnl::engine& engine();

// oneDNN's matmul for a GemmDesc (f32, bf16, f16) with its epilogue: the bias as the matmul's
// bias argument, the activation (gelu, tanh, sigmoid, silu) as an eltwise post-op, applied to
// each block of the result while oneDNN's kernel holds it. Not relu: oneDNN's vector kernels
// take max(x, 0), which turns NaN into 0 where hal's relu keeps it.
struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};
// Null where oneDNN has none for these operands (f64, f16 on most CPUs) or this activation.
// oneDNN keeps made primitives in its own cache, so making the same one again is cheap.
std::shared_ptr<const Matmul> prepare_matmul(const GemmDesc& gemm, const GemmEpilogue& epilogue);
// Runs it in a host kernel whose arguments are A, B, C and (with a bias) the bias.
void run_matmul(const GemmDesc& gemm, const GemmEpilogue& epilogue, const Matmul& matmul,
                const KernelArgs& args);

}  // namespace hal::cpu::onednn

#endif

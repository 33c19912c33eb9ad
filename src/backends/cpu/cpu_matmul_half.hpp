// The CPU's bf16 and f16 matrix products (cpu_matmul_half.cpp): one host kernel each, oneDNN's
// matmul where it has one for the dtype, else the operands widened to f32 inside the kernel.
#pragma once

#include "hal/backend.hpp"
#include "hal/kernel.hpp"

namespace hal::cpu {

// The host kernel that computes `desc` (dtype bf16 or f16) from buffers a, b, c (arguments 0,
// 1, 2). Throws as ops::simd::active() does for a bad HAL_CPU_ISA.
HostKernelFn half_gemm_kernel(const GemmDesc& desc);

}  // namespace hal::cpu

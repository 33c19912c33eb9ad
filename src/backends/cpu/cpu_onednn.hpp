// What the CPU's oneDNN primitives share: the engine, and hal's GEMM operands as oneDNN memory
// descriptors. Only where hal was built with oneDNN (HAL_HAVE_ONEDNN).
#pragma once

#if HAL_HAVE_ONEDNN
#include <dnnl.hpp>

#include "hal/backend.hpp"

namespace hal::cpu::onednn {

// oneDNN's CPU engine, made once.
const dnnl::engine& engine();

// A batch of row-major matrices (rows x cols) with a leading dimension, stored transposed or
// not; a batch stride of 0 broadcasts one matrix over the batch.
dnnl::memory::desc matrices(dnnl::memory::data_type type, int64_t batch, int64_t rows, int64_t cols,
                            const GemmOperand& operand);

// oneDNN's type for a floating dtype of hal's (f32, bf16, f16); nullopt-like `undef` otherwise.
dnnl::memory::data_type data_type(DType dtype);

}  // namespace hal::cpu::onednn

#endif

// The defines that pick a variant of hal's portable op kernels (kernels/ops/*.kernel), without
// the -D: what the ops pass to Device::compile.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

namespace hal::ops {

// kernels/ops/elementwise.kernel
std::vector<std::string> binary_defines(Binary op, DType dtype);
std::vector<std::string> unary_defines(Unary op, DType dtype);
std::vector<std::string> where_defines(size_t element_size);  // 1, 2, 4 or 8
// A fused chain: elementwise.kernel's functions in `dtype` (f32 or f64), and the kernel "fused"
// generated for the program and the layout's rank, appended to them (portable_fused.cpp).
std::vector<std::string> fused_defines(DType dtype);
std::string fused_kernel_source(const FusedProgram& program, size_t rank);
// kernels/ops/embedding.kernel's embedding_add_rows in `dtype` (f32 or f64; its links take none).
std::vector<std::string> embedding_defines(DType dtype);
// kernels/ops/cast.kernel
std::vector<std::string> cast_defines(DType from, DType to);
// kernels/ops/reduce.kernel; group is the work-group size, a power of two.
std::vector<std::string> reduce_defines(Reduce op, DType dtype, uint32_t group);
// kernels/ops/rowwise.kernel in `dtype` (f32 or f64); `op` names rowwise's op (softmax,
// log_softmax, layer_norm, rms_norm), empty for the norms' gradients, which take it as a flag.
std::vector<std::string> rowwise_defines(std::string_view op, DType dtype, uint32_t group);

}  // namespace hal::ops

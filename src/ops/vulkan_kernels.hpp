// The ops' kernels on Vulkan devices: GLSL compute shaders (kernels/vulkan/*.comp) compiled to
// SPIR-V at build time, f32 only; the op table registers them for the vulkan backend.
#pragma once

#include "ops/op_table.hpp"

namespace hal::ops {

void vulkan_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                   const ElementwiseLayout<2>& layout, Stream& stream);
void vulkan_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                  Stream& stream);
// sum, mean, max, min and argmax.
void vulkan_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                   const std::vector<bool>& reduced_axes, Stream& stream);
void vulkan_rowwise(const OpDescriptor& op, const RowwiseArgs& args, Stream& stream);
void vulkan_gemm(const GemmDesc& gemm, Stream& stream);

}  // namespace hal::ops

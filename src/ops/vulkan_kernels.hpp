// The ops' kernels on Vulkan devices: GLSL compute shaders (kernels/vulkan/*.comp) compiled to
// SPIR-V at build time; the op table registers them for the vulkan backend in the dtypes the
// device lists (docs/vulkan.md).
#pragma once

#include "ops/op_table.hpp"

namespace hal::ops {

// `shader` (kernels/vulkan/<shader>.comp) compiled for `device` with specialization constants
// 0, 1, ... = `constants`, from the device's kernel cache after the first time.
Kernel vulkan_shader_kernel(const Device& device, std::string_view shader,
                            std::initializer_list<uint32_t> constants);

void vulkan_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                   const ElementwiseLayout<2>& layout, Stream& stream);
void vulkan_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                  Stream& stream);
// cond ? a : b for elements of 1, 2, 4 or 8 bytes.
// embedding's rows gathered (kernels/vulkan/gather.comp): contiguous table and indices; an
// index outside the table gives a row of zeros.
void vulkan_embedding(const Tensor& table, const Tensor& indices, const Tensor& out,
                      Stream& stream);
// embedding_backward's rows added (kernels/vulkan/embedding_*.comp): f32 or f64, contiguous
// gradient and indices; an index outside the table adds nothing.
void vulkan_embedding_backward(const Tensor& grad, const Tensor& indices, const Tensor& out,
                               Stream& stream);
void vulkan_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                  const ElementwiseLayout<3>& layout, Stream& stream);
// Between f32, f64, f16, i32, i64, i8, u8 and bool.
void vulkan_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                 Stream& stream);
// sum, mean, max, min and argmax.
void vulkan_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                   const std::vector<bool>& reduced_axes, Stream& stream);
void vulkan_rowwise(const OpDescriptor& op, const RowwiseArgs& args, Stream& stream);
// layer_norm_backward and rms_norm_backward in f32 (kernels/vulkan/norm_backward_*.comp): x's
// gradient a work group a row, the parameters' as column sums in parts of rows.
void vulkan_norm_backward(const OpDescriptor& op, const NormBackwardArgs& args, Stream& stream);
void vulkan_gemm(const GemmDesc& gemm, Stream& stream);
// Convolution as im2col (a shader) and one matmul per group, then bias, the residual and relu
// in one pass (vulkan_conv.cpp).
void vulkan_conv(const ConvDesc& conv, Stream& stream);

}  // namespace hal::ops

// Elementwise ops inside hal: their names, which dtypes they take, how their operands are laid
// out for a launch, and the two kernel tables (host kernels for the CPU, portable kernels for
// OpenCL and CUDA). One definition, ops/elementwise.cpp, checks the arguments and picks the
// table by what the device runs.
#pragma once

#include <array>
#include <string_view>

#include "hal/tensor.hpp"

namespace hal::ops {

enum class Binary : uint8_t { add, sub, mul, div, maximum, minimum };
enum class Unary : uint8_t { neg, abs, relu, exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, silu };

std::string_view name(Binary op);
std::string_view name(Unary op);

// The operands of one launch, broadcast to the output's shape (stride 0 where an operand is
// repeated) and with dimensions that every operand walks as one merged. The output is
// contiguous. `flat`: every operand is contiguous and unbroadcast, so element i of each is at
// its offset + i.
template <size_t kInputs>
struct ElementwiseLayout {
  Shape shape;
  std::array<Shape, kInputs> strides;
  std::array<int64_t, kInputs> offsets;
  int64_t count = 0;
  bool flat = false;
};

ElementwiseLayout<2> layout_of(const Tensor& a, const Tensor& b, const Shape& shape);
ElementwiseLayout<1> layout_of(const Tensor& x);

// Host kernels on the CPU's thread pool. dtype is f32, f64, i32 or i64.
void host_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                 const ElementwiseLayout<2>& layout, Stream& stream);
void host_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                Stream& stream);

// kernels/ops/elementwise.kernel, compiled for the device. Layouts of at most kMaxDims
// (merged) dimensions.
inline constexpr size_t kMaxDims = 6;
void portable_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                     const ElementwiseLayout<2>& layout, Stream& stream);
void portable_unary(Unary op, const Tensor& x, const Tensor& out,
                    const ElementwiseLayout<1>& layout, Stream& stream);

}  // namespace hal::ops

// Elementwise ops inside hal: their names, how their operands are laid out for a launch, and
// the kernels of the CPU (host kernels) and of OpenCL and CUDA (portable kernels), which the op
// table (op_table.hpp) registers. One definition, ops/elementwise.cpp, checks the arguments and
// runs the kernel the table plans for the device.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "hal/tensor.hpp"
#include "ops/layout_dims.hpp"

namespace hal::ops {

// Arithmetic keeps its operands' dtype; comparisons (eq ... ge) give bool.
enum class Binary : uint8_t { add, sub, mul, div, maximum, minimum, pow, eq, ne, lt, le, gt, ge };
enum class Unary : uint8_t {
  neg,
  abs,
  relu,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  sigmoid,
  gelu,
  silu,
  erf,
  floor,
  ceil,
  round,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  asinh,
  acosh,
  atanh
};

std::string_view name(Binary op);
constexpr bool is_comparison(Binary op) { return op >= Binary::eq; }
std::string_view name(Unary op);

// The operands of one launch, broadcast to the output's shape (stride 0 where an operand is
// repeated) and with dimensions that every operand walks as one merged. The output is
// contiguous. `flat`: every operand is contiguous and unbroadcast, so element i of each is at
// its offset + i.
template <size_t kInputs>
struct ElementwiseLayout {
  LayoutDims shape;
  std::array<LayoutDims, kInputs> strides;
  std::array<int64_t, kInputs> offsets;
  int64_t count = 0;
  bool flat = false;
};

// t's strides when broadcast to `shape` (which broadcast_shapes has checked): 0 where it repeats.
Shape broadcast_strides(const Tensor& t, const Shape& shape);
// The same along dimension d of `shape` alone.
int64_t broadcast_stride(const Tensor& t, const Shape& shape, size_t d);

ElementwiseLayout<2> layout_of(const Tensor& a, const Tensor& b, const Shape& shape);
ElementwiseLayout<1> layout_of(const Tensor& x);
ElementwiseLayout<3> layout_of(const Tensor& a, const Tensor& b, const Tensor& c,
                               const Shape& shape);

// A chain of elementwise ops fused into one pass (fused_elementwise): registers 0 .. inputs - 1
// hold the inputs, register inputs + j the result of step j; the last step's is the output.
// Every register has the compute dtype: no comparisons (they give bool).
inline constexpr size_t kMaxFusedInputs = 8;
struct FusedStep {
  bool binary = false;
  uint8_t code = 0;       // a Binary or a Unary
  uint16_t a = 0, b = 0;  // registers (b: binary steps only)
};
struct FusedProgram {
  size_t inputs = 0;
  std::vector<FusedStep> steps;
};
using FusedLayout = ElementwiseLayout<kMaxFusedInputs>;  // the operands past `inputs` unused
FusedLayout layout_of(const std::vector<Tensor>& inputs, const Shape& shape);

// Host kernels on the CPU's thread pool. dtype is f32, f64, i8, u8, i32 or i64 (comparisons:
// bool too); `where` moves elements of any dtype, `cast` converts between any two.
void host_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                 const ElementwiseLayout<2>& layout, Stream& stream);
void host_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                Stream& stream);
void host_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                const ElementwiseLayout<3>& layout, Stream& stream);
void host_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
               Stream& stream);
// Operand `t` of a host kernel's layout over `count` elements, copied into contiguous rows first
// where the layout walks it across rows (inner stride not 0 or 1: a transposed matrix), it is
// large, and the CPU copies it in tiles (tensor/host_transpose.hpp); else nothing. Walking such
// an operand an element at a time costs several times the copy.
std::optional<Tensor> host_rows_of(const Tensor& t, int64_t inner_stride, int64_t count,
                                   Stream& stream);
// f32 and f64.
void host_fused(const FusedProgram& program, const std::vector<Tensor>& inputs, const Tensor& out,
                const FusedLayout& layout, Stream& stream);

// kernels/ops/elementwise.kernel, compiled for the device. Layouts of at most kMaxDims
// (merged) dimensions.
inline constexpr size_t kMaxDims = 6;
void portable_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                     const ElementwiseLayout<2>& layout, Stream& stream);
void portable_unary(Unary op, const Tensor& x, const Tensor& out,
                    const ElementwiseLayout<1>& layout, Stream& stream);
// A kernel generated for the chain (portable_fused.cpp); f32 and f64.
void portable_fused(const FusedProgram& program, const std::vector<Tensor>& inputs,
                    const Tensor& out, const FusedLayout& layout, Stream& stream);
void portable_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                    const ElementwiseLayout<3>& layout, Stream& stream);
// embedding's rows gathered (a contiguous [rows, dim] table, contiguous indices): an index
// outside the table gives a row of zeros.
void portable_embedding(const Tensor& table, const Tensor& indices, const Tensor& out,
                        Stream& stream);
// embedding_backward's rows added (a contiguous [n, dim] gradient, contiguous indices, out
// [rows, dim]; f32 or f64): each row the sum of its positions' gradient rows in their order,
// an index outside the table adding nothing.
void portable_embedding_backward(const Tensor& grad, const Tensor& indices, const Tensor& out,
                                 Stream& stream);
// kernels/ops/cast.kernel.
void portable_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                   Stream& stream);

// The ops' entry points inside hal, for ops built from others (softmax, norms) and for the
// conversions of an op's plan.
Tensor binary(Binary op, const Tensor& a, const Tensor& b, Stream& stream);
Tensor unary(Unary op, const Tensor& x, Stream& stream);
Tensor where_of(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& stream);
Tensor cast_of(const Tensor& x, DType dtype, Stream& stream);

}  // namespace hal::ops

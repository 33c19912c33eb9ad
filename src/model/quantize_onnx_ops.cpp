// ONNX's linear quantization: QuantizeLinear and DequantizeLinear from elementwise ops (hal's
// round is half to even, as ONNX asks); the integer matrix products and convolutions computed in
// floating point, where sums of products of 8-bit values are exact, through hal's matmul and the
// Conv op, then requantized elementwise. DynamicQuantizeLinear is expanded into its function.
#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

std::string dtype_name(const Tensor& t) { return std::string(to_string(t.dtype())); }

bool is_8bit(DType dtype) { return dtype == DType::u8 || dtype == DType::i8; }

void require_8bit(const OpContext& ctx, const Tensor& t, const std::string& name) {
  if (!is_8bit(t.dtype()))
    ctx.unsupported(name + " of dtype " + dtype_name(t) + " (only u8 and i8)");
}

Tensor scalar(const OpContext& ctx, const Tensor& t, const std::string& name) {
  if (t.numel() != 1) ctx.invalid(name + " must be a scalar, got " + to_string(t.shape()));
  return t.reshape({});
}

// A scale or zero point shaped to broadcast against x: a scalar as it is, a 1-D one (opset 13's
// per-axis quantization) along the `axis` attribute.
Tensor along_axis(const OpContext& ctx, const Tensor& p, const Tensor& x, const std::string& name) {
  if (p.numel() == 1) return p.reshape({});
  if (p.dim() != 1 || ctx.opset() < 13)
    ctx.invalid(name + " must be a scalar" + (ctx.opset() >= 13 ? " or 1-D" : "") + ", got " +
                to_string(p.shape()));
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 1), x.dim());
  if (p.size(0) != x.size(axis))
    ctx.invalid(name + " has " + std::to_string(p.size(0)) + " elements, axis " +
                std::to_string(axis) + " of x " + to_string(x.shape()) + " has " +
                std::to_string(x.size(axis)));
  Shape shape(static_cast<size_t>(x.dim() - axis), 1);
  shape[0] = p.size(0);
  return p.reshape(shape);
}

// saturate(round(scaled) + zero_point) in `type` (u8 or i8), from f32 `scaled`.
Tensor saturate_round(const OpContext& ctx, const Tensor& scaled, const Tensor& zero_point,
                      DType type) {
  Stream& s = ctx.stream();
  Tensor y = round(scaled, s);
  if (zero_point.defined()) y = add(y, cast(zero_point, DType::f32, s), s);
  const double low = type == DType::u8 ? 0 : -128, high = type == DType::u8 ? 255 : 127;
  y = minimum(maximum(y, full({}, low, DType::f32, s), s), full({}, high, DType::f32, s), s);
  return cast(y, type, s);
}

Outputs quantize_linear(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (x.dtype() != DType::f32 && x.dtype() != DType::i32)
    ctx.unsupported("x of dtype " + dtype_name(x) + " (only f32 and i32)");
  Tensor zero_point;
  DType type = DType::u8;
  if (given(in, 2)) {
    require_8bit(ctx, in[2], "y_zero_point");
    zero_point = along_axis(ctx, in[2], x, "y_zero_point");
    type = in[2].dtype();
  }
  const Tensor scale = along_axis(ctx, in.at(1), x, "y_scale");
  return {saturate_round(ctx, div(x, scale, ctx.stream()), zero_point, type)};
}

Outputs dequantize_linear(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  if (!is_8bit(x.dtype()) && x.dtype() != DType::i32)
    ctx.unsupported("x of dtype " + dtype_name(x) + " (only u8, i8 and i32)");
  Tensor y = cast(x, DType::f32, s);
  if (given(in, 2)) y = sub(y, cast(along_axis(ctx, in[2], x, "x_zero_point"), DType::f32, s), s);
  return {mul(y, along_axis(ctx, in.at(1), x, "x_scale"), s)};
}

// A product of two 8-bit values less their zero points lies within ±255², so a sum of `terms`
// of them is exact in f32 while terms·255² ≤ 2²⁴, and in f64 far beyond: the dtype that sums
// them exactly on x's device.
DType exact_dtype(const OpContext& ctx, const Tensor& x, int64_t terms) {
  constexpr int64_t kExactInF32 = (int64_t{1} << 24) / (255 * 255);
  if (terms <= kExactInF32) return DType::f32;
  if (supports_op(x.device(), "matmul", DType::f64)) return DType::f64;
  ctx.unsupported("sums of " + std::to_string(terms) +
                  " products (more than f32 holds exactly) on " + x.device().id() +
                  ", which has no f64 matmul");
}

// x less its zero point (0 when not given), in `dtype`.
Tensor centred(const OpContext& ctx, const Tensor& x, const Tensor& zero_point, DType dtype) {
  Stream& s = ctx.stream();
  const Tensor wide = cast(x, dtype, s);
  return zero_point.defined() ? sub(wide, cast(zero_point, dtype, s), s) : wide;
}

// A's parameters per row: a vector of M becomes [M, 1]; [..., M, 1] and scalars broadcast as
// they are. B's per column ([N], [..., 1, N]) broadcast as they are.
Tensor per_row(const Tensor& p) {
  return p.defined() && p.dim() == 1 && p.numel() > 1 ? p.unsqueeze(1) : p;
}

// (a - a_zero_point) @ (b - b_zero_point), exactly, in i32.
Tensor integer_matmul(const OpContext& ctx, const Tensor& a, const Tensor& a_zero_point,
                      const Tensor& b, const Tensor& b_zero_point) {
  require_8bit(ctx, a, "A");
  require_8bit(ctx, b, "B");
  if (a.dim() == 0 || b.dim() == 0)
    ctx.invalid("A and B must have at least one dimension, got " + to_string(a.shape()) + " and " +
                to_string(b.shape()));
  const DType wide = exact_dtype(ctx, a, a.size(-1));
  Stream& s = ctx.stream();
  const Tensor product =
      matmul(centred(ctx, a, per_row(a_zero_point), wide), centred(ctx, b, b_zero_point, wide), s);
  return cast(product, DType::i32, s);
}

Outputs matmul_integer(const OpContext& ctx, const Inputs& in) {
  const Tensor a_zero_point = given(in, 2) ? in[2] : Tensor();
  const Tensor b_zero_point = given(in, 3) ? in[3] : Tensor();
  return {integer_matmul(ctx, in.at(0), a_zero_point, in.at(1), b_zero_point)};
}

// An i32 accumulator in the output's scale and zero point: the multiplier is
// input scale · weight scale / output scale, as ONNX Runtime computes it.
Tensor requantize(const OpContext& ctx, const Tensor& accumulator, const Tensor& multiplier,
                  const Tensor& zero_point) {
  require_8bit(ctx, zero_point, "y_zero_point");
  Stream& s = ctx.stream();
  const Tensor scaled = mul(cast(accumulator, DType::f32, s), multiplier, s);
  return saturate_round(ctx, scaled, zero_point, zero_point.dtype());
}

Outputs qlinear_matmul(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor accumulator = integer_matmul(ctx, in.at(0), in.at(2), in.at(3), in.at(5));
  const Tensor multiplier =
      div(mul(per_row(in.at(1)), in.at(4), s), scalar(ctx, in.at(6), "y_scale"), s);
  return {requantize(ctx, accumulator, multiplier, scalar(ctx, in.at(7), "y_zero_point"))};
}

// The weights' parameters per output channel: a vector of M becomes [M, 1, ...], with
// `trailing` ones, to broadcast against the weights [M, C/group, K...] (the kernel's rank plus
// one) or the output [N, M, D...] (the kernel's rank); a scalar stays one.
Tensor per_channel(const OpContext& ctx, const Tensor& p, const Tensor& weight, int64_t trailing,
                   const std::string& name) {
  if (p.numel() == 1) return p.reshape({});
  if (p.dim() != 1 || p.size(0) != weight.size(0))
    ctx.invalid(name + " must be a scalar or hold one element per output channel (" +
                std::to_string(weight.size(0)) + "), got " + to_string(p.shape()));
  Shape shape(static_cast<size_t>(trailing) + 1, 1);
  shape[0] = p.size(0);
  return p.reshape(shape);
}

// Conv's own implementation on the inputs less their zero points, exactly, in i32. Conv pads
// the centred input with zeros, which is padding x with its zero point, as ONNX means.
Tensor integer_conv(const OpContext& ctx, const Tensor& x, const Tensor& x_zero_point,
                    const Tensor& w, const Tensor& w_zero_point) {
  require_8bit(ctx, x, "x");
  require_8bit(ctx, w, "w");
  if (x.dim() < 3 || w.dim() != x.dim())
    ctx.invalid("expects x [N, C, D1, ...] and weights of the same rank, got " +
                to_string(x.shape()) + " and " + to_string(w.shape()));
  const int64_t terms = w.size(0) == 0 ? 0 : w.numel() / w.size(0);
  const DType wide = exact_dtype(ctx, x, terms);
  const Tensor x_zero =
      x_zero_point.defined() ? scalar(ctx, x_zero_point, "x_zero_point") : Tensor();
  const Tensor w_zero = w_zero_point.defined()
                            ? per_channel(ctx, w_zero_point, w, w.dim() - 1, "w_zero_point")
                            : Tensor();
  const OnnxOp* conv = find_onnx_op("Conv", ctx.opset());
  if (!conv) ctx.unsupported("Conv at opset " + std::to_string(ctx.opset()));
  const Tensor sum =
      conv->run(ctx, {centred(ctx, x, x_zero, wide), centred(ctx, w, w_zero, wide)}).at(0);
  return cast(sum, DType::i32, ctx.stream());
}

Outputs conv_integer(const OpContext& ctx, const Inputs& in) {
  const Tensor x_zero_point = given(in, 2) ? in[2] : Tensor();
  const Tensor w_zero_point = given(in, 3) ? in[3] : Tensor();
  return {integer_conv(ctx, in.at(0), x_zero_point, in.at(1), w_zero_point)};
}

Outputs qlinear_conv(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& w = in.at(3);
  Tensor accumulator = integer_conv(ctx, in.at(0), in.at(2), w, in.at(5));
  if (given(in, 8)) {
    // Added in i32, so the bias is rounded once, with the sum, on its way to f32.
    if (in[8].dtype() != DType::i32) ctx.invalid("B must be i32, got " + dtype_name(in[8]));
    if (in[8].dim() != 1 || in[8].size(0) != w.size(0))
      ctx.invalid("B must hold one element per output channel (" + std::to_string(w.size(0)) +
                  "), got " + to_string(in[8].shape()));
    accumulator = add(accumulator, per_channel(ctx, in[8], w, w.dim() - 2, "B"), s);
  }
  const Tensor weight_scale = per_channel(ctx, in.at(4), w, w.dim() - 2, "w_scale");
  const Tensor multiplier = div(mul(scalar(ctx, in.at(1), "x_scale"), weight_scale, s),
                                scalar(ctx, in.at(6), "y_scale"), s);
  return {requantize(ctx, accumulator, multiplier, scalar(ctx, in.at(7), "y_zero_point"))};
}

}  // namespace

std::vector<OnnxOp> quantize_onnx_ops() {
  return {
      {"QuantizeLinear", 10, quantize_linear}, {"DequantizeLinear", 10, dequantize_linear},
      {"MatMulInteger", 10, matmul_integer},   {"QLinearMatMul", 10, qlinear_matmul},
      {"ConvInteger", 10, conv_integer},       {"QLinearConv", 10, qlinear_conv},
  };
}

}  // namespace hal::model

// ONNX's elementwise math, logic and activation ops, from hal's elementwise ops. Constants take
// the input's dtype so that an f16 activation stays f16.
#include <cmath>
#include <cstddef>
#include <limits>

#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"
#include "tensor/element_codec.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

Tensor constant(double value, DType dtype, const OpContext& ctx) {
  return full({}, value, dtype, ctx.stream());
}
Tensor constant(double value, const Tensor& like, const OpContext& ctx) {
  return constant(value, like.dtype(), ctx);
}

using Binary = Tensor (*)(const Tensor&, const Tensor&, Stream&);
using Unary = Tensor (*)(const Tensor&, Stream&);

// Before opset 7, `broadcast=1` with `axis` aligns B's dimensions with A's from that axis
// (trailing ones are added); without `axis` it aligns them from the end, as NumPy does.
Tensor legacy_broadcast(const OpContext& ctx, const Tensor& a, const Tensor& b) {
  if (ctx.opset() >= 7 || ctx.attr_int("broadcast", 0) == 0 || !ctx.has("axis")) return b;
  int64_t axis = ctx.attr_int("axis", 0);
  if (axis < 0) axis += a.dim();
  const int64_t trailing = a.dim() - axis - b.dim();
  if (axis < 0 || trailing < 0)
    ctx.invalid("B " + to_string(b.shape()) + " does not fit A " + to_string(a.shape()) +
                " from axis " + std::to_string(ctx.attr_int("axis", 0)));
  Shape shape = b.shape();
  shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
  return b.contiguous(ctx.stream()).reshape(shape);
}

template <Binary op>
Outputs binary(const OpContext& ctx, const Inputs& in) {
  return {op(in.at(0), legacy_broadcast(ctx, in.at(0), in.at(1)), ctx.stream())};
}
template <Unary op>
Outputs unary(const OpContext& ctx, const Inputs& in) {
  return {op(in.at(0), ctx.stream())};
}

// Max, Min, Sum: any number of inputs, broadcast together.
template <Binary op>
Outputs variadic(const OpContext& ctx, const Inputs& in) {
  if (in.empty()) ctx.invalid("needs at least one input");
  Tensor result = in[0];
  for (size_t i = 1; i < in.size(); ++i) result = op(result, in[i], ctx.stream());
  return {in.size() == 1 ? result.contiguous(ctx.stream()) : result};
}

Outputs mean_of(const OpContext& ctx, const Inputs& in) {
  Tensor total = variadic<add>(ctx, in)[0];
  return {div(total, constant(static_cast<double>(in.size()), total, ctx), ctx.stream())};
}

// An integer base is raised in f64 and the power truncated back, as onnxruntime computes it
// (std::pow of doubles): exact wherever the power fits in 53 bits, 2^-1 is 0; a power beyond the
// type saturates (onnxruntime's conversion is undefined there).
Outputs pow_of(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor exponent = legacy_broadcast(ctx, in.at(0), in.at(1));
  if (is_floating(in[0].dtype())) return {as_dtype(pow(in[0], exponent, s), in[0].dtype(), s)};
  if (in[0].dtype() == DType::boolean || exponent.dtype() == DType::boolean)
    ctx.unsupported("bool operands");
  return {
      cast(pow(cast(in[0], DType::f64, s), cast(exponent, DType::f64, s), s), in[0].dtype(), s)};
}

Outputs reciprocal(const OpContext& ctx, const Inputs& in) {
  return {div(constant(1, in.at(0), ctx), in[0], ctx.stream())};
}

// (x > 0) - (x < 0); NaN, which is neither, stays NaN as in NumPy and PyTorch (the difference
// alone gave 0).
Outputs sign(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const Tensor zero = constant(0, x, ctx);
  const Tensor y = sub(cast(gt(x, zero, s), x.dtype(), s), cast(lt(x, zero, s), x.dtype(), s), s);
  if (!is_floating(x.dtype())) return {y};  // integers have no NaN
  return {where(ne(x, x, s), x, y, s)};
}

// x where x >= 0, else `negative(x)`: the shape of every leaky activation.
template <class Negative>
Tensor piecewise(const OpContext& ctx, const Tensor& x, Negative negative) {
  Stream& s = ctx.stream();
  return where(lt(x, constant(0, x, ctx), s), negative(x), x, s);
}

Outputs leaky_relu(const OpContext& ctx, const Inputs& in) {
  const double alpha = ctx.attr_float("alpha", 0.01f);
  return {piecewise(ctx, in.at(0), [&](const Tensor& x) {
    return mul(x, constant(alpha, x, ctx), ctx.stream());
  })};
}

Outputs prelu(const OpContext& ctx, const Inputs& in) {
  Tensor slope = in.at(1);
  const Tensor& input = in.at(0);
  // Before opset 7 a 1-d slope holds one value per channel (dimension 1).
  if (ctx.opset() < 7 && slope.dim() == 1 && input.dim() > 2 && slope.size(0) == input.size(1)) {
    Shape shape{slope.size(0)};
    shape.resize(static_cast<size_t>(input.dim() - 1), 1);
    slope = slope.contiguous(ctx.stream()).reshape(shape);
  }
  return {as_dtype(
      piecewise(ctx, in.at(0), [&](const Tensor& x) { return mul(x, slope, ctx.stream()); }),
      in[0].dtype(), ctx.stream())};
}

Tensor elu_of(const OpContext& ctx, const Tensor& x, double alpha) {
  Stream& s = ctx.stream();
  return piecewise(ctx, x, [&](const Tensor& v) {
    return mul(sub(exp(v, s), constant(1, v, ctx), s), constant(alpha, v, ctx), s);
  });
}

Outputs elu(const OpContext& ctx, const Inputs& in) {
  return {elu_of(ctx, in.at(0), ctx.attr_float("alpha", 1.0f))};
}

Outputs selu(const OpContext& ctx, const Inputs& in) {
  const double alpha = ctx.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = ctx.attr_float("gamma", 1.05070102214813232421875f);
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const Tensor negative =
      sub(mul(exp(x, s), constant(alpha, x, ctx), s), constant(alpha, x, ctx), s);
  const Tensor inner = where(le(x, constant(0, x, ctx), s), negative, x, s);
  return {mul(inner, constant(gamma, x, ctx), s)};
}

Tensor hard_sigmoid_of(const OpContext& ctx, const Tensor& x, double alpha, double beta) {
  Stream& s = ctx.stream();
  const Tensor linear = add(mul(x, constant(alpha, x, ctx), s), constant(beta, x, ctx), s);
  return maximum(constant(0, x, ctx), minimum(constant(1, x, ctx), linear, s), s);
}

Outputs hard_sigmoid(const OpContext& ctx, const Inputs& in) {
  return {
      hard_sigmoid_of(ctx, in.at(0), ctx.attr_float("alpha", 0.2f), ctx.attr_float("beta", 0.5f))};
}

// log(1 + t) for t in [0, 1], accurate where t is small: log(u) (t / (u - 1)) with u = 1 + t
// rounded (u - 1 is exact, and the ratio undoes the rounding of u; Goldberg's log1p), t itself
// where u rounds to 1. log(u) alone loses t's digits: 0 for t below half an ulp of 1. (The ratio
// first: log(u) t underflows to f16's subnormals.)
Tensor log1p_of(const OpContext& ctx, const Tensor& t) {
  Stream& s = ctx.stream();
  const Tensor one = constant(1, t, ctx);
  const Tensor u = add(one, t, s);
  const Tensor corrected = mul(log(u, s), div(t, sub(u, one, s), s), s);
  return where(eq(u, one, s), t, corrected, s);
}

// log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): exp(x) overflows from x = 89 in f32 (11 in
// f16), exp(-|x|) never; and log1p keeps exp(x) for very negative x (log(1 + exp(-20)) in f32
// was 0, not 2.06e-9).
Outputs softplus(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const Tensor tail = log1p_of(ctx, exp(neg(abs(x, s), s), s));
  return {add(maximum(x, constant(0, x, ctx), s), tail, s)};
}

Outputs softsign(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  return {div(x, add(constant(1, x, ctx), abs(x, s), s), s)};
}

Outputs thresholded_relu(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const double alpha = ctx.attr_float("alpha", 1.0f);
  return {where(gt(x, constant(alpha, x, ctx), s), x, constant(0, x, ctx), s)};
}

// Integers compare with the float lambd and move by the float bias in f64, as ONNX's reference
// does, the result truncated back to their type.
Outputs shrink(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& input = in.at(0);
  const Tensor x = is_floating(input.dtype()) ? input : cast(input, DType::f64, s);
  const double bias = ctx.attr_float("bias", 0.0f);
  const double lambd = ctx.attr_float("lambd", 0.5f);
  const Tensor above = where(gt(x, constant(lambd, x, ctx), s), sub(x, constant(bias, x, ctx), s),
                             constant(0, x, ctx), s);
  return {as_dtype(
      where(lt(x, constant(-lambd, x, ctx), s), add(x, constant(bias, x, ctx), s), above, s),
      input.dtype(), s)};
}

Outputs clip(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  Tensor low, high;
  if (ctx.opset() < 11) {
    if (ctx.has("min")) low = constant(ctx.attr_float("min", 0), x, ctx);
    if (ctx.has("max")) high = constant(ctx.attr_float("max", 0), x, ctx);
  } else {
    if (given(in, 1)) low = in[1];
    if (given(in, 2)) high = in[2];
  }
  Tensor result = x;
  if (low.defined()) result = as_dtype(maximum(result, low, s), x.dtype(), ctx.stream());
  if (high.defined()) result = as_dtype(minimum(result, high, s), x.dtype(), ctx.stream());
  return {result.contiguous(s)};
}

// std::fmod of the elements of `a` and `b` (broadcast), on the host: exact where
// a - trunc(a / b) * b rounds once the quotient outgrows the mantissa (fmod(1e10f, 3) = 1), with
// C's NaN for b = 0 and a for infinite b. In double, exact for every floating dtype: the result
// is a value of a's dtype.
Tensor host_fmod(const OpContext& ctx, const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  const std::vector<double> x = ctx.read_values(a.expand(shape));
  const std::vector<double> y = ctx.read_values(b.expand(shape));
  const size_t element = a.element_size();
  std::vector<std::byte> bytes(x.size() * element);
  for (size_t i = 0; i < x.size(); ++i)
    tensor::encode(std::fmod(x[i], y[i]), a.dtype(), bytes.data() + i * element, "Mod");
  return from_host(bytes.data(), shape, a.dtype(), ctx.stream());
}

// Mod: integers take the divisor's sign (Python's %), fmod=1 the dividend's (C's fmod), from
// truncating division: r = a - trunc(a / b) * b, moved by b where the signs disagree. Floating
// inputs (fmod=1 only) take C's fmod itself.
Outputs mod(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& a = in.at(0);
  const Tensor& b = in.at(1);
  const bool floating = is_floating(a.dtype());
  const bool fmod = ctx.attr_int("fmod", 0) != 0;
  if (floating && !fmod) ctx.invalid("fmod must be 1 for floating-point inputs");
  if (floating) return {host_fmod(ctx, a, b)};
  const Tensor r = sub(a, mul(div(a, b, s), b, s), s);
  if (fmod) return {r};
  const Tensor zero = constant(0, r, ctx);
  const Tensor disagree = ne(lt(r, zero, s), lt(b, zero, s), s);
  return {where(logical_and_of(ne(r, zero, s), disagree, s), add(r, b, s), r, s)};
}

// BitShift of unsigned integers, in their own type: x times (LEFT, wrapping as a shift drops
// the high bits) or over (RIGHT) 2^y, where 2^y is the product of 2^(2^k) over the bits k set in
// y, all integer ops, exact for every width; a shift by the width or more gives 0, as
// onnxruntime's shift of the promoted value narrowed back does.
Outputs bit_shift(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  const Tensor y = legacy_broadcast(ctx, x, in.at(1));
  if (!is_integer(x.dtype()) || is_signed_integer(x.dtype()) || y.dtype() != x.dtype())
    ctx.unsupported("BitShift of " + std::string(to_string(x.dtype())) + " by " +
                    std::string(to_string(y.dtype())) +
                    ": it takes two tensors of one unsigned integer type");
  const std::string direction = ctx.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.invalid("direction '" + direction + "' is not LEFT or RIGHT");
  const DType type = x.dtype();
  const auto value = [&](double v) { return full({}, v, type, s); };
  const int64_t width = static_cast<int64_t>(8 * size_of(type));
  const Tensor one = value(1), two = value(2);
  Tensor factor = one, rest = y;
  for (int64_t step = 1; step < width; step *= 2) {  // bit k of y: 2^step = 2^(2^k)
    const Tensor half = div(rest, two, s);
    const Tensor bit = sub(rest, mul(half, two, s), s);
    factor = mul(factor,
                 where(eq(bit, one, s), value(std::ldexp(1.0, static_cast<int>(step))), one, s), s);
    rest = half;
  }
  const Tensor shifted = direction == "LEFT" ? mul(x, factor, s) : div(x, factor, s);
  return {where(ge(y, value(static_cast<double>(width)), s), value(0), shifted, s)};
}

Outputs logical_not(const OpContext& ctx, const Inputs& in) {
  return {eq(in.at(0), constant(0, DType::boolean, ctx), ctx.stream())};
}
Outputs logical_and(const OpContext& ctx, const Inputs& in) {
  return {logical_and_of(in.at(0), legacy_broadcast(ctx, in.at(0), in.at(1)), ctx.stream())};
}
Outputs logical_or(const OpContext& ctx, const Inputs& in) {
  return {logical_or_of(in.at(0), legacy_broadcast(ctx, in.at(0), in.at(1)), ctx.stream())};
}

Outputs cast_to(const OpContext& ctx, const Inputs& in) {
  const int64_t to = ctx.attr_int("to", 0);
  const auto dtype = dtype_from_onnx(static_cast<int32_t>(to));
  if (!dtype) ctx.unsupported("cast to ONNX type " + std::to_string(to) + ", which hal has not");
  return {cast(in.at(0), *dtype, ctx.stream())};
}

Outputs cast_like(const OpContext& ctx, const Inputs& in) {
  return {cast(in.at(0), in.at(1).dtype(), ctx.stream())};
}

Outputs where_of(const OpContext& ctx, const Inputs& in) {
  return {where(in.at(0), in.at(1), in.at(2), ctx.stream())};
}

Outputs identity(const OpContext& ctx, const Inputs& in) {
  return {in.at(0).contiguous(ctx.stream())};
}

// Identity of any value (sequences from opset 14, optionals from 16) passes it on: it takes the
// executor's value path, where a tensor goes as above.
std::vector<Value> identity_of_values(const OpContext& ctx, const std::vector<Value>& in) {
  const Value& x = in.at(0);
  if (const Tensor* tensor = std::get_if<Tensor>(&x); tensor && tensor->defined())
    return {tensor->contiguous(ctx.stream())};
  return {x};
}

// Inference: the input unchanged, and a mask of ones where one is asked for (bool from opset 10,
// of the input's type before); training_mode (opset 12 on) drops elements
// (random_onnx_ops.cpp). Before opset 7 `is_test` = 0 asked for training, which hal refuses.
Outputs dropout(const OpContext& ctx, const Inputs& in) {
  const DType mask = ctx.opset() >= 10 ? DType::boolean : in.at(0).dtype();
  const bool mask_wanted = ctx.node().outputs.size() > 1 && !ctx.node().outputs[1].empty();
  if (given(in, 2) && ctx.read_scalar(in[2]) != 0.0) {
    std::vector<Tensor> out =
        training_dropout(ctx, in[0], given(in, 1) ? ctx.read_scalar(in[1]) : 0.5, mask);
    if (!mask_wanted) out.pop_back();
    return out;
  }
  if (ctx.opset() < 7 && ctx.attr_int("is_test", 0) == 0 && ctx.has("is_test"))
    ctx.unsupported("is_test = 0 (training) before opset 7");
  Tensor x = in.at(0).contiguous(ctx.stream());
  if (!mask_wanted) return {x};
  return {x, full(x.shape(), 1, mask, ctx.stream())};
}

}  // namespace

std::vector<OnnxOp> elementwise_onnx_ops() {
  return {
      {"Add", 1, binary<add>},
      {"Sub", 1, binary<sub>},
      {"Mul", 1, binary<mul>},
      {"Div", 1, binary<div>},
      {"Pow", 1, pow_of},
      {"Max", 1, variadic<maximum>},
      {"Min", 1, variadic<minimum>},
      {"Sum", 1, variadic<add>},
      {"Mean", 1, mean_of},
      {"Equal", 1, binary<eq>},
      {"Less", 1, binary<lt>},
      {"LessOrEqual", 12, binary<le>},
      {"Greater", 1, binary<gt>},
      {"GreaterOrEqual", 12, binary<ge>},
      {"BitShift", 11, bit_shift},
      {"Not", 1, logical_not},
      {"And", 1, logical_and},
      {"Or", 1, logical_or},
      {"Xor", 1, binary<ne>},
      {"Where", 9, where_of},
      {"Neg", 1, unary<neg>},
      {"Abs", 1, unary<abs>},
      {"Relu", 1, unary<relu>},
      {"Exp", 1, unary<exp>},
      {"Log", 1, unary<log>},
      {"Sqrt", 1, unary<sqrt>},
      {"Tanh", 1, unary<tanh>},
      {"Sigmoid", 1, unary<sigmoid>},
      {"Reciprocal", 1, reciprocal},
      {"Erf", 9, unary<erf>},
      {"Floor", 6, unary<floor>},
      {"Ceil", 6, unary<ceil>},
      {"Round", 11, unary<round>},
      {"Sin", 7, unary<sin>},
      {"Cos", 7, unary<cos>},
      {"Tan", 7, unary<tan>},
      {"Asin", 7, unary<asin>},
      {"Acos", 7, unary<acos>},
      {"Atan", 7, unary<atan>},
      {"Sinh", 9, unary<sinh>},
      {"Cosh", 9, unary<cosh>},
      {"Asinh", 9, unary<asinh>},
      {"Acosh", 9, unary<acosh>},
      {"Atanh", 9, unary<atanh>},
      {"Sign", 9, sign},
      {"LeakyRelu", 1, leaky_relu},
      {"PRelu", 1, prelu},
      {"Elu", 1, elu},
      {"Selu", 1, selu},
      {"HardSigmoid", 1, hard_sigmoid},
      {"Softplus", 1, softplus},
      {"Softsign", 1, softsign},
      {"ThresholdedRelu", 10, thresholded_relu},
      {"Shrink", 9, shrink},
      {"Clip", 1, clip},
      {"Mod", 10, mod},
      {"Cast", 6, cast_to, nullptr, cast_strings},
      {"CastLike", 15, cast_like, nullptr, cast_like_strings},
      {"Identity", 1, identity, identity_of_values},
      {.op_type = "Dropout", .since = 1, .run = dropout, .random = true},
  };
}

}  // namespace hal::model

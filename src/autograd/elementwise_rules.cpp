// Backward rules of the elementwise ops: arithmetic with broadcasting (each operand's gradient
// summed back to its shape), the element functions, where and cast. The engine casts each
// gradient to its input's dtype, so a rule may leave it in the promoted one.
#include <cmath>

#include "autograd/constants.hpp"
#include "autograd/gradient_math.hpp"
#include "autograd/record.hpp"

namespace hal::autograd {
namespace {

using ops::Binary;
using ops::Unary;

Tensor scalar(double value, const Tensor& like, Stream& s) {
  return constant(value, like.dtype(), s);
}

// dy where `mask` holds, else 0.
Tensor masked(const Tensor& mask, const Tensor& dy, Stream& s) {
  return where(mask, dy, scalar(0.0, dy, s), s);
}

std::vector<Tensor> binary_rule(Binary op, const Tensor& a, const Tensor& b, const Tensor& y,
                                bool want_a, bool want_b, const Tensor& dy, Stream& s) {
  Tensor da, db;
  switch (op) {
    case Binary::add:
      da = dy;
      db = dy;
      break;
    case Binary::sub:
      da = dy;
      if (want_b) db = neg(dy, s);
      break;
    case Binary::mul:
      if (want_a) da = mul(dy, b, s);
      if (want_b) db = mul(dy, a, s);
      break;
    case Binary::div: {
      const Tensor over_b = div(dy, b, s);
      da = over_b;
      if (want_b) db = neg(mul(over_b, y, s), s);
      break;
    }
    case Binary::maximum:
    case Binary::minimum: {
      // As PyTorch: a tie gives each side half the gradient, the side that lost none (with a
      // NaN neither lost: both get it whole).
      const Tensor a_wins = op == Binary::maximum ? gt(a, b, s) : lt(a, b, s);
      const Tensor b_wins = op == Binary::maximum ? lt(a, b, s) : gt(a, b, s);
      const Tensor shared = where(eq(a, b, s), mul(dy, scalar(0.5, dy, s), s), dy, s);
      if (want_a) da = where(b_wins, scalar(0.0, dy, s), shared, s);
      if (want_b) db = where(a_wins, scalar(0.0, dy, s), shared, s);
      break;
    }
    case Binary::pow: {
      // As PyTorch: 0 where the formula is 0 * inf but the derivative is 0, at b == 0 for a
      // (b a^(b-1) at a = 0) and at a == 0, b >= 0 for b (a^b log a).
      const Tensor zero = scalar(0.0, dy, s);
      if (want_a) {
        const Tensor exponent = cast(b, y.dtype(), s);
        const Tensor d =
            mul(dy, mul(exponent, pow(a, sub(exponent, scalar(1.0, exponent, s), s), s), s), s);
        da = where(eq(exponent, scalar(0.0, exponent, s), s), zero, d, s);
      }
      if (want_b) {
        const Tensor d = mul(dy, mul(y, log(a, s), s), s);
        const Tensor a_zero = eq(a, scalar(0.0, a, s), s);
        const Tensor b_nonnegative = ge(b, scalar(0.0, b, s), s);
        db = where(a_zero, where(b_nonnegative, zero, d, s), d, s);
      }
      break;
    }
    default:  // comparisons give bool: never recorded
      break;
  }
  return {want_a && da.defined() ? sum_to(da, a.shape(), s) : Tensor(),
          want_b && db.defined() ? sum_to(db, b.shape(), s) : Tensor()};
}

// d(op(x))/dx times dy, from x and the output y.
Tensor unary_rule(Unary op, const Tensor& x, const Tensor& y, const Tensor& dy, Stream& s) {
  const auto one = [&] { return scalar(1.0, dy, s); };
  const auto square = [&](const Tensor& t) { return mul(t, t, s); };
  switch (op) {
    case Unary::neg:
      return neg(dy, s);
    case Unary::abs: {
      // The sign of x: 0 at 0, as PyTorch's.
      const Tensor sign = sub(cast(gt(x, scalar(0.0, x, s), s), dy.dtype(), s),
                              cast(lt(x, scalar(0.0, x, s), s), dy.dtype(), s), s);
      return mul(dy, sign, s);
    }
    case Unary::relu:
      return masked(gt(y, scalar(0.0, y, s), s), dy, s);
    case Unary::exp:
      return mul(dy, y, s);
    case Unary::log:
      return div(dy, x, s);
    case Unary::sqrt:
      return div(dy, mul(scalar(2.0, y, s), y, s), s);
    case Unary::rsqrt:
      return mul(dy, mul(scalar(-0.5, y, s), mul(y, square(y), s), s), s);
    case Unary::tanh:
      return mul(dy, sub(one(), square(y), s), s);
    case Unary::sigmoid:
      return mul(dy, mul(y, sub(one(), y, s), s), s);
    case Unary::gelu: {
      // Phi(x) + x phi(x), the normal distribution's cdf and density.
      const Tensor cdf =
          mul(scalar(0.5, x, s), add(one(), erf(mul(x, scalar(M_SQRT1_2, x, s), s), s), s), s);
      const Tensor density = mul(scalar(0.5 * M_2_SQRTPI * M_SQRT1_2, x, s),
                                 exp(mul(scalar(-0.5, x, s), square(x), s), s), s);
      return mul(dy, add(cdf, mul(x, density, s), s), s);
    }
    case Unary::silu: {
      const Tensor sig = sigmoid(x, s);
      return mul(dy, mul(sig, add(one(), mul(x, sub(one(), sig, s), s), s), s), s);
    }
    case Unary::erf:
      return mul(dy, mul(scalar(M_2_SQRTPI, x, s), exp(neg(square(x), s), s), s), s);
    case Unary::sin:
      return mul(dy, cos(x, s), s);
    case Unary::cos:
      return neg(mul(dy, sin(x, s), s), s);
    case Unary::tan:
      return mul(dy, add(one(), square(y), s), s);
    case Unary::asin:
      return mul(dy, rsqrt(sub(one(), square(x), s), s), s);
    case Unary::acos:
      return neg(mul(dy, rsqrt(sub(one(), square(x), s), s), s), s);
    case Unary::atan:
      return div(dy, add(one(), square(x), s), s);
    case Unary::sinh:
      return mul(dy, cosh(x, s), s);
    case Unary::cosh:
      return mul(dy, sinh(x, s), s);
    case Unary::asinh:
      return mul(dy, rsqrt(add(square(x), one(), s), s), s);
    case Unary::acosh:
      return mul(dy, rsqrt(sub(square(x), one(), s), s), s);
    case Unary::atanh:
      return div(dy, sub(one(), square(x), s), s);
    case Unary::floor:
    case Unary::ceil:
    case Unary::round:
      break;  // refused when recorded
  }
  return Tensor();
}

// The operands and output binary_rule reads for `op` and the gradients wanted: what an
// in-place write must not change before backward (add and sub read none).
std::vector<SavedSlot> binary_saves(Binary op, bool want_a, bool want_b) {
  const SavedSlot a{0, "a"}, b{1, "b"}, y{kOutput, "y"};
  switch (op) {
    case Binary::mul: {
      std::vector<SavedSlot> out;
      if (want_b) out.push_back(a);
      if (want_a) out.push_back(b);
      return out;
    }
    case Binary::div:
      return want_b ? std::vector<SavedSlot>{b, y} : std::vector<SavedSlot>{b};
    case Binary::maximum:
    case Binary::minimum:
      return {a, b};
    case Binary::pow:
      return want_b ? std::vector<SavedSlot>{a, b, y} : std::vector<SavedSlot>{a, b};
    default:
      return {};
  }
}

// Whether unary_rule reads the output (else the input; neg reads neither).
bool reads_output(Unary op) {
  switch (op) {
    case Unary::relu:
    case Unary::exp:
    case Unary::sqrt:
    case Unary::rsqrt:
    case Unary::tanh:
    case Unary::sigmoid:
    case Unary::tan:
      return true;
    default:
      return false;
  }
}

std::vector<SavedSlot> unary_saves(Unary op) {
  if (op == Unary::neg) return {};
  if (reads_output(op)) return {{kOutput, "y"}};
  return {{0, "x"}};
}

}  // namespace

Tensor record_binary(Binary op, BinaryFn fn, const Tensor& a, const Tensor& b, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = fn(a, b, s);
  }
  const bool want_a = a.requires_grad(), want_b = b.requires_grad();
  return attach(ops::name(op), {&a, &b}, y, binary_saves(op, want_a, want_b),
                [op, a = saved(a), b = saved(b), y = saved(y), want_a, want_b](const Tensor& dy,
                                                                               Stream& stream) {
                  return binary_rule(op, a, b, y, want_a, want_b, dy, stream);
                });
}

Tensor record_unary(Unary op, UnaryFn fn, const Tensor& x, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = fn(x, s);
  }
  if (op == Unary::floor || op == Unary::ceil || op == Unary::round)
    return attach_refusal(ops::name(op), {&x}, y, "its gradient is zero wherever it exists");
  return attach(ops::name(op), {&x}, y, unary_saves(op),
                [op, x = saved(x), y = saved(y)](const Tensor& dy, Stream& stream) {
                  return std::vector<Tensor>{unary_rule(op, x, y, dy, stream)};
                });
}

Tensor record_where(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = where(cond, a, b, s);
  }
  const bool want_a = a.requires_grad(), want_b = b.requires_grad();
  return attach("where", {&cond, &a, &b}, y, {{0, "cond"}},
                [cond = saved(cond), a_shape = a.shape(), b_shape = b.shape(), want_a, want_b](
                    const Tensor& dy, Stream& stream) {
                  const Tensor zero = constant(0.0, dy.dtype(), stream);
                  return std::vector<Tensor>{
                      Tensor(),
                      want_a ? sum_to(where(cond, dy, zero, stream), a_shape, stream) : Tensor(),
                      want_b ? sum_to(where(cond, zero, dy, stream), b_shape, stream) : Tensor()};
                });
}

Tensor record_cast(const Tensor& x, DType dtype, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = cast(x, dtype, s);
  }
  // The engine casts the gradient back to x's dtype.
  return attach("cast", {&x}, y, [](const Tensor& dy, Stream&) { return std::vector<Tensor>{dy}; });
}

Tensor record_fused(const std::vector<Tensor>& inputs, Tensor out) {
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(&t);
  return attach_refusal("fused_elementwise", pointers, std::move(out),
                        "hal has no backward rule for a fused chain; run its steps as separate "
                        "ops to differentiate them");
}

}  // namespace hal::autograd

// Backward rules of the elementwise ops: arithmetic with broadcasting (each operand's gradient
// summed back to its shape), the element functions, where and cast. The engine casts each
// gradient to its input's dtype, so a rule may leave it in the promoted one.
#include <cmath>

#include "autograd/constants.hpp"
#include "autograd/gradient_math.hpp"
#include "autograd/record.hpp"
#include "ops/elementwise_program.hpp"

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

// d(op(x))/dx times dy, from x and the output y: one elementwise program where it takes more
// than one op (one pass over memory where the device fuses; gelu's was eleven).
Tensor unary_rule(Unary op, const Tensor& x, const Tensor& y, const Tensor& dy, Stream& s) {
  using Value = ops::ProgramBuilder::Value;
  ops::ProgramBuilder p;
  const Value g = p.input(dy);
  // x joins the program only where the rule reads it: a fused program reads every input.
  const auto in = [&] { return p.input(x); };
  const auto out = [&] { return p.input(y); };
  const auto c = [&](double value) { return p.input(scalar(value, dy, s)); };
  const auto f = [&](const char* name, Value v) { return p.apply(name, v); };
  const auto mul = [&](Value a, Value b) { return p.apply("mul", a, b); };
  const auto add = [&](Value a, Value b) { return p.apply("add", a, b); };
  const auto sub = [&](Value a, Value b) { return p.apply("sub", a, b); };
  const auto div = [&](Value a, Value b) { return p.apply("div", a, b); };
  const auto square = [&](Value v) { return mul(v, v); };
  const auto run = [&](Value result) { return p.run(result, s); };
  switch (op) {
    case Unary::neg:
      return neg(dy, s);
    case Unary::abs: {
      // The sign of x: 0 at 0, as PyTorch's.
      const Tensor sign = hal::sub(cast(gt(x, scalar(0.0, x, s), s), dy.dtype(), s),
                                   cast(lt(x, scalar(0.0, x, s), s), dy.dtype(), s), s);
      return hal::mul(dy, sign, s);
    }
    case Unary::relu:
      return masked(gt(y, scalar(0.0, y, s), s), dy, s);
    case Unary::exp:
      return hal::mul(dy, y, s);
    case Unary::log:
      return hal::div(dy, x, s);
    case Unary::sqrt:
      return run(div(g, mul(c(2.0), out())));
    case Unary::rsqrt: {
      const Value r = out();
      return run(mul(g, mul(c(-0.5), mul(r, square(r)))));
    }
    case Unary::tanh:
      return run(mul(g, sub(c(1.0), square(out()))));
    case Unary::sigmoid: {
      const Value r = out();
      return run(mul(g, mul(r, sub(c(1.0), r))));
    }
    case Unary::gelu: {
      // Phi(x) + x phi(x), the normal distribution's cdf and density.
      const Value cdf = mul(c(0.5), add(c(1.0), f("erf", mul(in(), c(M_SQRT1_2)))));
      const Value density =
          mul(c(0.5 * M_2_SQRTPI * M_SQRT1_2), f("exp", mul(c(-0.5), square(in()))));
      return run(mul(g, add(cdf, mul(in(), density))));
    }
    case Unary::silu: {
      const Value sig = f("sigmoid", in());
      return run(mul(g, mul(sig, add(c(1.0), mul(in(), sub(c(1.0), sig))))));
    }
    case Unary::erf:
      return run(mul(g, mul(c(M_2_SQRTPI), f("exp", f("neg", square(in()))))));
    case Unary::sin:
      return run(mul(g, f("cos", in())));
    case Unary::cos:
      return run(f("neg", mul(g, f("sin", in()))));
    case Unary::tan:
      return run(mul(g, add(c(1.0), square(out()))));
    case Unary::asin:
      return run(mul(g, f("rsqrt", sub(c(1.0), square(in())))));
    case Unary::acos:
      return run(f("neg", mul(g, f("rsqrt", sub(c(1.0), square(in()))))));
    case Unary::atan:
      return run(div(g, add(c(1.0), square(in()))));
    case Unary::sinh:
      return run(mul(g, f("cosh", in())));
    case Unary::cosh:
      return run(mul(g, f("sinh", in())));
    case Unary::asinh:
      return run(mul(g, f("rsqrt", add(square(in()), c(1.0)))));
    case Unary::acosh:
      return run(mul(g, f("rsqrt", sub(square(in()), c(1.0)))));
    case Unary::atanh:
      return run(div(g, sub(c(1.0), square(in()))));
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

// The CPU's element functions, one per elementwise op: what host_elementwise.cpp's kernels and
// the fused chains of host_fused.cpp compute for each element.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/elementwise.hpp"

namespace hal::ops::host {

template <class T>
T maximum_of(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x) || std::isnan(y)) return x + y;  // NaN, as the GPUs' kernels give
  return x > y ? x : y;
}

template <class T>
T minimum_of(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x) || std::isnan(y)) return x + y;
  return x < y ? x : y;
}

// Integer arithmetic wraps (two's complement), as on the GPUs: computed unsigned, where C++
// defines overflow, and at least as unsigned int: uint16_t would promote to int, whose product
// 65535 * 65535 overflows.
template <class T, class Fn>
T wrapping(T x, T y, Fn fn) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(fn(static_cast<U>(x), static_cast<U>(y))));
  } else {
    return fn(x, y);
  }
}

template <Binary kOp>
struct BinaryFn {
  template <class T>
  auto operator()(T x, T y) const {
    if constexpr (kOp == Binary::add) return wrapping(x, y, [](auto p, auto q) { return p + q; });
    if constexpr (kOp == Binary::sub) return wrapping(x, y, [](auto p, auto q) { return p - q; });
    if constexpr (kOp == Binary::mul) return wrapping(x, y, [](auto p, auto q) { return p * q; });
    if constexpr (kOp == Binary::div) {
      if constexpr (std::is_integral_v<T>) {
        // x / 0 is 0 and MIN / -1 wraps: both trap on x86, and a host never crashes on data.
        if (y == 0) return T(0);
        if constexpr (std::is_signed_v<T>)
          if (y == T(-1)) return wrapping(T(0), x, [](auto p, auto q) { return p - q; });
      }
      return T(x / y);
    }
    if constexpr (kOp == Binary::maximum) return maximum_of(x, y);
    if constexpr (kOp == Binary::minimum) return minimum_of(x, y);
    if constexpr (kOp == Binary::pow) return std::pow(x, y);
    if constexpr (kOp == Binary::eq) return uint8_t{x == y};
    if constexpr (kOp == Binary::ne) return uint8_t{x != y};
    if constexpr (kOp == Binary::lt) return uint8_t{x < y};
    if constexpr (kOp == Binary::le) return uint8_t{x <= y};
    if constexpr (kOp == Binary::gt) return uint8_t{x > y};
    if constexpr (kOp == Binary::ge) return uint8_t{x >= y};
  }
};

template <Unary kOp>
struct UnaryFn {
  template <class T>
  T operator()(T x) const {
    const auto negate = [](T v) -> T {
      if constexpr (std::is_integral_v<T>)
        return wrapping(T(0), v, [](auto p, auto q) { return p - q; });
      else
        return -v;  // -0.0 for 0.0, which 0 - v is not
    };
    if constexpr (kOp == Unary::neg) return negate(x);
    if constexpr (kOp == Unary::abs) {
      if constexpr (std::is_integral_v<T>)
        return x < T(0) ? negate(x) : x;
      else
        return x <= T(0) ? T(0) - x : x;  // |-0.0| is +0.0, as NumPy's (-x would keep -0.0)
    }
    if constexpr (kOp == Unary::relu) return x < T(0) ? T(0) : x;
    if constexpr (kOp == Unary::exp) return std::exp(x);
    if constexpr (kOp == Unary::log) return std::log(x);
    if constexpr (kOp == Unary::sqrt) return std::sqrt(x);
    if constexpr (kOp == Unary::rsqrt) return T(1) / std::sqrt(x);
    if constexpr (kOp == Unary::tanh) return std::tanh(x);
    if constexpr (kOp == Unary::sigmoid) return T(1) / (T(1) + std::exp(-x));
    if constexpr (kOp == Unary::gelu)
      return x * T(0.5) * (T(1) + std::erf(x * T(0.7071067811865476)));
    if constexpr (kOp == Unary::silu) return x / (T(1) + std::exp(-x));
    if constexpr (kOp == Unary::erf) return std::erf(x);
    if constexpr (kOp == Unary::floor) return std::floor(x);
    if constexpr (kOp == Unary::ceil) return std::ceil(x);
    if constexpr (kOp == Unary::round) return std::nearbyint(x);
    if constexpr (kOp == Unary::sin) return std::sin(x);
    if constexpr (kOp == Unary::cos) return std::cos(x);
    if constexpr (kOp == Unary::tan) return std::tan(x);
    if constexpr (kOp == Unary::asin) return std::asin(x);
    if constexpr (kOp == Unary::acos) return std::acos(x);
    if constexpr (kOp == Unary::atan) return std::atan(x);
    if constexpr (kOp == Unary::sinh) return std::sinh(x);
    if constexpr (kOp == Unary::cosh) return std::cosh(x);
    if constexpr (kOp == Unary::asinh) return std::asinh(x);
    if constexpr (kOp == Unary::acosh) return std::acosh(x);
    if constexpr (kOp == Unary::atanh) return std::atanh(x);
  }
};

// Calls fn.template operator()<T>() with T double for f64 and float otherwise: the host
// kernels of the floating ops (f16 and bf16 arrive computed in f32).
template <class Fn>
void with_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64)
    fn.template operator()<double>();
  else
    fn.template operator()<float>();
}

// Calls body.template operator()<kOp>() with `op` as a constant, so that each op's loop is
// compiled for it.
template <class Body>
void with_op(Binary op, Body&& body) {
  switch (op) {
#define HAL_CASE(name) \
  case Binary::name:   \
    return body.template operator()<Binary::name>();
    HAL_CASE(add)
    HAL_CASE(sub)
    HAL_CASE(mul)
    HAL_CASE(div)
    HAL_CASE(maximum)
    HAL_CASE(minimum)
    HAL_CASE(pow)
    HAL_CASE(eq)
    HAL_CASE(ne)
    HAL_CASE(lt)
    HAL_CASE(le)
    HAL_CASE(gt)
    HAL_CASE(ge)
#undef HAL_CASE
  }
}

template <class Body>
void with_op(Unary op, Body&& body) {
  switch (op) {
#define HAL_CASE(name) \
  case Unary::name:    \
    return body.template operator()<Unary::name>();
    HAL_CASE(neg)
    HAL_CASE(abs)
    HAL_CASE(relu)
    HAL_CASE(exp)
    HAL_CASE(log)
    HAL_CASE(sqrt)
    HAL_CASE(rsqrt)
    HAL_CASE(tanh)
    HAL_CASE(sigmoid)
    HAL_CASE(gelu)
    HAL_CASE(silu)
    HAL_CASE(erf)
    HAL_CASE(floor)
    HAL_CASE(ceil)
    HAL_CASE(round)
    HAL_CASE(sin)
    HAL_CASE(cos)
    HAL_CASE(tan)
    HAL_CASE(asin)
    HAL_CASE(acos)
    HAL_CASE(atan)
    HAL_CASE(sinh)
    HAL_CASE(cosh)
    HAL_CASE(asinh)
    HAL_CASE(acosh)
    HAL_CASE(atanh)
#undef HAL_CASE
  }
}

}  // namespace hal::ops::host

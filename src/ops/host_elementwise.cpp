// The CPU's elementwise kernels: host kernels over the output's elements, split across the
// thread pool. Contiguous operands run a plain loop the compiler vectorises; others walk their
// strides.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/elementwise.hpp"
#include "tensor/strided_walk.hpp"

namespace hal::ops {
namespace {

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
// defines overflow. Small types promote to int, whose products of two bytes cannot overflow.
template <class T, class Fn>
T wrapping(T x, T y, Fn fn) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
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
    if constexpr (kOp == Unary::abs) return x < T(0) ? negate(x) : x;
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

template <class T, class Fn>
void launch_binary(Fn fn, const Tensor& a, const Tensor& b, const Tensor& out,
                   const ElementwiseLayout<2>& layout, Stream& stream) {
  using Out = decltype(fn(T{}, T{}));
  const Kernel kernel = host_kernel("binary", [fn, layout](const KernelChunk& chunk) {
    Out* dst = chunk.args.ptr<Out>(0);
    const T* x = chunk.args.ptr<const T>(1) + layout.offsets[0];
    const T* y = chunk.args.ptr<const T>(2) + layout.offsets[1];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
    if (layout.flat) {
      for (uint64_t i = begin; i < end; ++i) dst[i] = fn(x[i], y[i]);
      return;
    }
    // A row of the innermost dimension at a time: the loops over contiguous or broadcast rows
    // (a bias added to every row) are plain and vectorise.
    tensor::StridedWalk<2> walk(layout.shape, layout.strides, {0, 0}, static_cast<int64_t>(begin));
    const int64_t sx = layout.strides[0].back(), sy = layout.strides[1].back();
    for (uint64_t i = begin; i < end;) {
      const int64_t n = std::min<int64_t>(walk.inner_left(), static_cast<int64_t>(end - i));
      const T* xr = x + walk.at(0);
      const T* yr = y + walk.at(1);
      Out* row = dst + i;
      if (sx == 1 && sy == 1) {
        for (int64_t k = 0; k < n; ++k) row[k] = fn(xr[k], yr[k]);
      } else if (sx == 1 && sy == 0) {
        const T right = *yr;
        for (int64_t k = 0; k < n; ++k) row[k] = fn(xr[k], right);
      } else if (sx == 0 && sy == 1) {
        const T left = *xr;
        for (int64_t k = 0; k < n; ++k) row[k] = fn(left, yr[k]);
      } else {
        for (int64_t k = 0; k < n; ++k) row[k] = fn(xr[k * sx], yr[k * sy]);
      }
      i += static_cast<uint64_t>(n);
      walk.advance_inner(n);
    }
  });
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)),
                {out.storage(), a.storage(), b.storage()});
}

template <class T, class Fn>
void launch_unary(Fn fn, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                  Stream& stream) {
  const Kernel kernel = host_kernel("unary", [fn, layout](const KernelChunk& chunk) {
    T* dst = chunk.args.ptr<T>(0);
    const T* in = chunk.args.ptr<const T>(1) + layout.offsets[0];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
    if (layout.flat) {
      for (uint64_t i = begin; i < end; ++i) dst[i] = fn(in[i]);
      return;
    }
    tensor::StridedWalk<1> walk(layout.shape, layout.strides, {0}, static_cast<int64_t>(begin));
    const int64_t step = layout.strides[0].back();
    for (uint64_t i = begin; i < end;) {
      const int64_t n = std::min<int64_t>(walk.inner_left(), static_cast<int64_t>(end - i));
      const T* row = in + walk.at(0);
      for (int64_t k = 0; k < n; ++k) dst[i + static_cast<uint64_t>(k)] = fn(row[k * step]);
      i += static_cast<uint64_t>(n);
      walk.advance_inner(n);
    }
  });
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)),
                {out.storage(), x.storage()});
}

// Calls body.template operator()<T>() with the C++ type of `dtype`.
template <class Body>
void with_type(DType dtype, Body&& body) {
  switch (dtype) {
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    case DType::i32:
      return body.template operator()<int32_t>();
    case DType::i64:
      return body.template operator()<int64_t>();
    case DType::i8:
      return body.template operator()<int8_t>();
    case DType::u8:
    case DType::boolean:  // comparisons only (the op table)
      return body.template operator()<uint8_t>();
    default:
      return;  // the op table registers no host kernel for the others
  }
}

template <Binary kOp>
void binary_of(const Tensor& a, const Tensor& b, const Tensor& out,
               const ElementwiseLayout<2>& layout, Stream& stream) {
  with_type(a.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T> && kOp == Binary::pow)
      return;  // the op table registers none
    else
      launch_binary<T>(BinaryFn<kOp>{}, a, b, out, layout, stream);
  });
}

template <Unary kOp>
void unary_of(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
              Stream& stream) {
  with_type(x.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T> &&
                  !(kOp == Unary::neg || kOp == Unary::abs || kOp == Unary::relu))
      return;  // the op table registers none
    else
      launch_unary<T>(UnaryFn<kOp>{}, x, out, layout, stream);
  });
}

}  // namespace

void host_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                 const ElementwiseLayout<2>& layout, Stream& stream) {
  switch (op) {
#define HAL_CASE(name) \
  case Binary::name:   \
    return binary_of<Binary::name>(a, b, out, layout, stream);
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

void host_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                Stream& stream) {
  switch (op) {
#define HAL_CASE(name) \
  case Unary::name:    \
    return unary_of<Unary::name>(x, out, layout, stream);
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

}  // namespace hal::ops

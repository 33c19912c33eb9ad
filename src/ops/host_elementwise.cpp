// The CPU's elementwise kernels: host kernels over the output's elements, split across the
// thread pool. Contiguous operands run a plain loop the compiler vectorises; others walk their
// strides.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/elementwise.hpp"
#include "ops/host_element_functions.hpp"
#include "tensor/strided_walk.hpp"

namespace hal::ops {
namespace {

using host::BinaryFn;
using host::UnaryFn;

template <class T, class Fn>
void launch_binary(Fn fn, const Tensor& a, const Tensor& b, const Tensor& out,
                   const ElementwiseLayout<2>& layout, Stream& stream) {
  using Out = decltype(fn(T{}, T{}));
  const LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(layout.count));
  if (layout.flat) {
    // Contiguous operands need their offsets alone: a kernel that carried the whole layout
    // would copy its shape and strides (three vectors) on every launch.
    const int64_t ox = layout.offsets[0], oy = layout.offsets[1];
    const Kernel kernel = host_kernel("binary", [fn, ox, oy](const KernelChunk& chunk) {
      Out* dst = chunk.args.ptr<Out>(0);
      const T* x = chunk.args.ptr<const T>(1) + ox;
      const T* y = chunk.args.ptr<const T>(2) + oy;
      const uint64_t begin = chunk.begin[0], end = chunk.end[0];
      for (uint64_t i = begin; i < end; ++i) dst[i] = fn(x[i], y[i]);
    });
    stream.launch(kernel, config, {out.storage(), a.storage(), b.storage()});
    return;
  }
  const Kernel kernel = host_kernel("binary", [fn, layout](const KernelChunk& chunk) {
    Out* dst = chunk.args.ptr<Out>(0);
    const T* x = chunk.args.ptr<const T>(1) + layout.offsets[0];
    const T* y = chunk.args.ptr<const T>(2) + layout.offsets[1];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
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
  stream.launch(kernel, config, {out.storage(), a.storage(), b.storage()});
}

template <class T, class Fn>
void launch_unary(Fn fn, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                  Stream& stream) {
  const LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(layout.count));
  if (layout.flat) {  // the offset alone, as in launch_binary
    const int64_t offset = layout.offsets[0];
    const Kernel kernel = host_kernel("unary", [fn, offset](const KernelChunk& chunk) {
      T* dst = chunk.args.ptr<T>(0);
      const T* in = chunk.args.ptr<const T>(1) + offset;
      const uint64_t begin = chunk.begin[0], end = chunk.end[0];
      for (uint64_t i = begin; i < end; ++i) dst[i] = fn(in[i]);
    });
    stream.launch(kernel, config, {out.storage(), x.storage()});
    return;
  }
  const Kernel kernel = host_kernel("unary", [fn, layout](const KernelChunk& chunk) {
    T* dst = chunk.args.ptr<T>(0);
    const T* in = chunk.args.ptr<const T>(1) + layout.offsets[0];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
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
  stream.launch(kernel, config, {out.storage(), x.storage()});
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
  host::with_op(op, [&]<Binary kOp>() { binary_of<kOp>(a, b, out, layout, stream); });
}

void host_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                Stream& stream) {
  host::with_op(op, [&]<Unary kOp>() { unary_of<kOp>(x, out, layout, stream); });
}

}  // namespace hal::ops

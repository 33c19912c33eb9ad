// The CPU's elementwise kernels: host kernels over the output's elements, split across the
// thread pool. Contiguous runs of f32, f16 and bf16 go to the vector kernels of the active
// instruction set (ops/simd; f16 and bf16 widened to f32 in registers); the rest, and every run
// under HAL_CPU_ISA=scalar, run the plain loops below, which are their reference. Other
// operands walk their strides a row at a time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "core/storage_types.hpp"
#include "ops/elementwise.hpp"
#include "ops/host_element_functions.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/element_codec.hpp"
#include "tensor/extent.hpp"
#include "tensor/strided_walk.hpp"

namespace hal::ops {
namespace {

using host::BinaryFn;
using host::UnaryFn;

// f16 and bf16 elements: stored as their bits, computed in f32.
template <DType kDType>
struct Half {
  uint16_t bits;
};
using F16 = Half<DType::f16>;
using BF16 = Half<DType::bf16>;

template <class T>
constexpr bool kHalf = std::is_same_v<T, F16> || std::is_same_v<T, BF16>;

// The value an element is computed as, and back.
template <class T>
auto widen(T x) {
  if constexpr (std::is_same_v<T, F16>)
    return tensor::f16_to_f32(x.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return tensor::bf16_to_f32(x.bits);
  else
    return x;
}
template <class T, class Value>
T narrow(Value v) {
  if constexpr (std::is_same_v<T, F16>)
    return F16{tensor::f32_to_f16(v)};
  else if constexpr (std::is_same_v<T, BF16>)
    return BF16{tensor::f32_to_bf16(v)};
  else
    return v;
}

// The vector kernels' name for T's storage, for the types they take.
template <class T>
constexpr bool kVectorised = std::is_same_v<T, float> || kHalf<T>;
template <class T>
constexpr simd::Storage storage_of() {
  if constexpr (std::is_same_v<T, F16>) return simd::Storage::f16;
  if constexpr (std::is_same_v<T, BF16>) return simd::Storage::bf16;
  return simd::Storage::f32;
}

// Runs below this many elements are not worth a call into the vector kernels.
constexpr int64_t kVectorRun = 16;

// One contiguous run of a binary op through the vector kernels (steps 1, or 0 for a broadcast
// element); false where they do not take it.
template <class T>
bool vector_binary(const simd::Kernels* simd, Binary op, const T* x, int x_step, const T* y,
                   int y_step, void* out, int64_t n) {
  if constexpr (kVectorised<T>)
    return simd && n >= kVectorRun &&
           simd->binary(op, storage_of<T>(), x, x_step, y, y_step, out, static_cast<size_t>(n));
  return false;
}

template <class T, class Fn>
void launch_binary(Binary op, Fn fn, const Tensor& a, const Tensor& b, const Tensor& out,
                   const ElementwiseLayout<2>& layout, Stream& stream) {
  using Computed = decltype(fn(widen(T{}), widen(T{})));
  using Out = std::conditional_t<std::is_same_v<Computed, uint8_t>, uint8_t, T>;
  const auto apply = [fn](T x, T y) { return narrow<Out>(fn(widen(x), widen(y))); };
  const simd::Kernels* simd = simd::active();  // throws here, at the call, for a bad HAL_CPU_ISA
  const LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(layout.count));
  if (layout.flat) {
    // Contiguous operands need their offsets alone, which travel with the buffer arguments: so
    // one kernel serves every launch of this op and type, made once (Fn is the op; simd fixed
    // for the process), and a launch builds no std::function.
    static const Kernel kernel = host_kernel("binary", [=](const KernelChunk& chunk) {
      Out* dst = chunk.args.ptr<Out>(0);
      const T* x = chunk.args.ptr<const T>(1);
      const T* y = chunk.args.ptr<const T>(2);
      const uint64_t begin = chunk.begin[0], end = chunk.end[0];
      if (vector_binary(simd, op, x + begin, 1, y + begin, 1, dst + begin,
                        static_cast<int64_t>(end - begin)))
        return;
      for (uint64_t i = begin; i < end; ++i) dst[i] = apply(x[i], y[i]);
    });
    const auto bytes = [](int64_t elements) { return static_cast<size_t>(elements) * sizeof(T); };
    stream.launch(
        kernel, config,
        {KernelArg::borrow(out.storage()), KernelArg::borrow(a.storage(), bytes(layout.offsets[0])),
         KernelArg::borrow(b.storage(), bytes(layout.offsets[1]))});
    return;
  }
  const Kernel kernel = host_kernel("binary", [=](const KernelChunk& chunk) {
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
      const bool unit = (sx == 0 || sx == 1) && (sy == 0 || sy == 1) && (sx || sy);
      if (unit &&
          vector_binary(simd, op, xr, static_cast<int>(sx), yr, static_cast<int>(sy), row, n)) {
      } else if (sx == 1 && sy == 1) {
        for (int64_t k = 0; k < n; ++k) row[k] = apply(xr[k], yr[k]);
      } else if (sx == 1 && sy == 0) {
        const T right = *yr;
        for (int64_t k = 0; k < n; ++k) row[k] = apply(xr[k], right);
      } else if (sx == 0 && sy == 1) {
        const T left = *xr;
        for (int64_t k = 0; k < n; ++k) row[k] = apply(left, yr[k]);
      } else {
        for (int64_t k = 0; k < n; ++k) row[k] = apply(xr[k * sx], yr[k * sy]);
      }
      i += static_cast<uint64_t>(n);
      walk.advance_inner(n);
    }
  });
  stream.launch(kernel, config,
                {KernelArg::borrow(out.storage()), KernelArg::borrow(a.storage()),
                 KernelArg::borrow(b.storage())});
}

template <class T>
bool vector_unary(const simd::Kernels* simd, Unary op, const T* x, T* out, int64_t n) {
  if constexpr (kVectorised<T>)
    return simd && n >= kVectorRun &&
           simd->unary(op, storage_of<T>(), x, out, static_cast<size_t>(n));
  return false;
}

template <class T, class Fn>
void launch_unary(Unary op, Fn fn, const Tensor& x, const Tensor& out,
                  const ElementwiseLayout<1>& layout, Stream& stream) {
  const auto apply = [fn](T v) { return narrow<T>(fn(widen(v))); };
  const simd::Kernels* simd = simd::active();  // throws here, at the call, for a bad HAL_CPU_ISA
  const LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(layout.count));
  if (layout.flat) {  // one kernel, offsets with the buffers, as in launch_binary
    static const Kernel kernel = host_kernel("unary", [=](const KernelChunk& chunk) {
      T* dst = chunk.args.ptr<T>(0);
      const T* in = chunk.args.ptr<const T>(1);
      const uint64_t begin = chunk.begin[0], end = chunk.end[0];
      if (vector_unary(simd, op, in + begin, dst + begin, static_cast<int64_t>(end - begin)))
        return;
      for (uint64_t i = begin; i < end; ++i) dst[i] = apply(in[i]);
    });
    const auto bytes = static_cast<size_t>(layout.offsets[0]) * sizeof(T);
    stream.launch(kernel, config,
                  {KernelArg::borrow(out.storage()), KernelArg::borrow(x.storage(), bytes)});
    return;
  }
  const Kernel kernel = host_kernel("unary", [=](const KernelChunk& chunk) {
    T* dst = chunk.args.ptr<T>(0);
    const T* in = chunk.args.ptr<const T>(1) + layout.offsets[0];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
    tensor::StridedWalk<1> walk(layout.shape, layout.strides, {0}, static_cast<int64_t>(begin));
    const int64_t step = layout.strides[0].back();
    for (uint64_t i = begin; i < end;) {
      const int64_t n = std::min<int64_t>(walk.inner_left(), static_cast<int64_t>(end - i));
      const T* row = in + walk.at(0);
      if (step != 1 || !vector_unary(simd, op, row, dst + i, n))
        for (int64_t k = 0; k < n; ++k) dst[i + static_cast<uint64_t>(k)] = apply(row[k * step]);
      i += static_cast<uint64_t>(n);
      walk.advance_inner(n);
    }
  });
  stream.launch(kernel, config, {KernelArg::borrow(out.storage()), KernelArg::borrow(x.storage())});
}

// Calls body.template operator()<T>() with the C++ type of `dtype`; bool's bytes only compare
// (the op table), as u8's.
template <class Body>
void with_type(DType dtype, Body&& body) {
  detail::with_storage_type<F16, BF16, uint8_t>(dtype, body);
}

template <Binary kOp>
void binary_of(const Tensor& a, const Tensor& b, const Tensor& out,
               const ElementwiseLayout<2>& layout, Stream& stream) {
  with_type(a.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T> && kOp == Binary::pow)
      return;  // the op table registers none
    else if constexpr (kHalf<T> && (kOp == Binary::pow || is_comparison(kOp)))
      return;  // nor these for f16 and bf16
    else
      launch_binary<T>(kOp, BinaryFn<kOp>{}, a, b, out, layout, stream);
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
      launch_unary<T>(kOp, UnaryFn<kOp>{}, x, out, layout, stream);
  });
}

}  // namespace

// exp of a transposed 4096 x 4096 f32 matrix took 42 ms walking it, 15 copying it first (the
// same exp of a contiguous one 6).
constexpr int64_t kCopyRowsAbove = 1 << 16;  // elements

std::optional<Tensor> host_rows_of(const Tensor& t, int64_t inner_stride, int64_t count,
                                   Stream& stream) {
  if (count < kCopyRowsAbove || inner_stride == 0 || inner_stride == 1 ||
      !tensor::copies_in_tiles(t))
    return std::nullopt;
  // A plain view of the storage, so that no gradient is recorded for the copy.
  return Tensor(t.storage(), t.dtype(), t.shape(), t.strides(), t.offset()).contiguous(stream);
}

void host_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                 const ElementwiseLayout<2>& layout, Stream& stream) {
  if (!layout.flat) {
    const auto a_rows = host_rows_of(a, layout.strides[0].back(), layout.count, stream);
    const auto b_rows = host_rows_of(b, layout.strides[1].back(), layout.count, stream);
    if (a_rows || b_rows) {
      const Tensor& x = a_rows ? *a_rows : a;
      const Tensor& y = b_rows ? *b_rows : b;
      return host_binary(op, x, y, out, layout_of(x, y, out.shape()), stream);
    }
  }
  host::with_op(op, [&]<Binary kOp>() { binary_of<kOp>(a, b, out, layout, stream); });
}

void host_unary(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                Stream& stream) {
  if (!layout.flat)
    if (const auto rows = host_rows_of(x, layout.strides[0].back(), layout.count, stream))
      return host_unary(op, *rows, out, layout_of(*rows), stream);
  host::with_op(op, [&]<Unary kOp>() { unary_of<kOp>(x, out, layout, stream); });
}

}  // namespace hal::ops

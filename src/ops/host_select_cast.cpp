// The CPU's `where` and `cast` kernels. `where` moves elements by their size, so it serves every
// dtype; `cast` converts through a wide value (double for floating dtypes, uint64 for u64, int64
// for the rest),
// but for contiguous casts among f32, f16 and bf16, which the vector kernels convert in
// registers (F16C where present; the same roundings).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/storage_types.hpp"
#include "ops/elementwise.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/element_codec.hpp"
#include "tensor/strided_walk.hpp"

namespace hal::ops {
namespace {

// Element storage types with their meaning: f16, bf16 and bool need more than their bits.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool {
  uint8_t value;
};

template <class Body>
void with_any_type(DType dtype, Body&& body) {
  detail::with_storage_type<F16, BF16, Bool>(dtype, body);
}

// The wide value of an element: double for floating types, uint64 for u64 (whose upper half int64
// has not), int64 for the others.
template <class In>
auto widen(In x) {
  if constexpr (std::is_same_v<In, F16>)
    return static_cast<double>(tensor::f16_to_f32(x.bits));
  else if constexpr (std::is_same_v<In, BF16>)
    return static_cast<double>(tensor::bf16_to_f32(x.bits));
  else if constexpr (std::is_same_v<In, Bool>)
    return static_cast<int64_t>(x.value != 0);
  else if constexpr (std::is_floating_point_v<In>)
    return static_cast<double>(x);
  else if constexpr (std::is_same_v<In, uint64_t>)
    return x;
  else
    return static_cast<int64_t>(x);
}

template <class Out, class Wide>
Out narrow(Wide v) {
  if constexpr (std::is_same_v<Out, Bool>)
    return Bool{static_cast<uint8_t>(v != 0)};
  else if constexpr (std::is_same_v<Out, F16> && std::is_floating_point_v<Wide>)
    return F16{tensor::f64_to_f16(v)};  // one rounding, not two through float
  else if constexpr (std::is_same_v<Out, F16> && std::is_same_v<Wide, uint64_t>)
    return F16{tensor::u64_to_f16(v)};
  else if constexpr (std::is_same_v<Out, F16>)
    return F16{tensor::i64_to_f16(v)};
  else if constexpr (std::is_same_v<Out, BF16> && std::is_floating_point_v<Wide>)
    return BF16{tensor::f64_to_bf16(v)};
  else if constexpr (std::is_same_v<Out, BF16> && std::is_same_v<Wide, uint64_t>)
    return BF16{tensor::u64_to_bf16(v)};
  else if constexpr (std::is_same_v<Out, BF16>)
    return BF16{tensor::i64_to_bf16(v)};
  else if constexpr (std::is_floating_point_v<Out>)
    return static_cast<Out>(v);
  else if constexpr (std::is_floating_point_v<Wide>) {
    // Saturating, NaN to 0: the bounds are powers of two, exact as doubles.
    constexpr double low = static_cast<double>(std::numeric_limits<Out>::min());
    constexpr double beyond = static_cast<double>(std::numeric_limits<Out>::max()) + 1.0;
    if (std::isnan(v)) return Out(0);
    if (v <= low) return std::numeric_limits<Out>::min();
    if (v >= beyond) return std::numeric_limits<Out>::max();
    return static_cast<Out>(v);
  } else {
    return static_cast<Out>(v);  // modular, as C++20 defines it
  }
}

template <class T>
constexpr bool kVectorised =
    std::is_same_v<T, float> || std::is_same_v<T, F16> || std::is_same_v<T, BF16>;
template <class T>
constexpr simd::Storage storage_of() {
  if constexpr (std::is_same_v<T, F16>) return simd::Storage::f16;
  if constexpr (std::is_same_v<T, BF16>) return simd::Storage::bf16;
  return simd::Storage::f32;
}

template <class In, class Out>
void launch_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
                 Stream& stream) {
  const simd::Kernels* simd = kVectorised<In> && kVectorised<Out> ? simd::active() : nullptr;
  const Kernel kernel = host_kernel("cast", [=](const KernelChunk& chunk) {
    Out* dst = chunk.args.ptr<Out>(0);
    const In* in = chunk.args.ptr<const In>(1) + layout.offsets[0];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
    if constexpr (kVectorised<In> && kVectorised<Out>) {
      if (simd && layout.flat) {
        simd->convert(storage_of<In>(), storage_of<Out>(), in + begin, dst + begin,
                      static_cast<size_t>(end - begin));
        return;
      }
    }
    if (layout.flat) {
      for (uint64_t i = begin; i < end; ++i) dst[i] = narrow<Out>(widen(in[i]));
      return;
    }
    tensor::StridedWalk<1> walk(layout.shape, layout.strides, {0}, static_cast<int64_t>(begin));
    for (uint64_t i = begin; i < end; ++i, walk.next()) dst[i] = narrow<Out>(widen(in[walk.at(0)]));
  });
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)),
                {out.storage(), x.storage()});
}

template <class Element>
void launch_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                  const ElementwiseLayout<3>& layout, Stream& stream) {
  const Kernel kernel = host_kernel("where", [layout](const KernelChunk& chunk) {
    Element* dst = chunk.args.ptr<Element>(0);
    const uint8_t* c = chunk.args.ptr<const uint8_t>(1) + layout.offsets[0];
    const Element* x = chunk.args.ptr<const Element>(2) + layout.offsets[1];
    const Element* y = chunk.args.ptr<const Element>(3) + layout.offsets[2];
    const uint64_t begin = chunk.begin[0], end = chunk.end[0];
    if (layout.flat) {
      for (uint64_t i = begin; i < end; ++i) dst[i] = c[i] ? x[i] : y[i];
      return;
    }
    tensor::StridedWalk<3> walk(layout.shape, layout.strides, {0, 0, 0},
                                static_cast<int64_t>(begin));
    for (uint64_t i = begin; i < end; ++i, walk.next())
      dst[i] = c[walk.at(0)] ? x[walk.at(1)] : y[walk.at(2)];
  });
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.count)),
                {out.storage(), cond.storage(), a.storage(), b.storage()});
}

}  // namespace

void host_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out,
                const ElementwiseLayout<3>& layout, Stream& stream) {
  if (!layout.flat) {
    const auto cond_rows = host_rows_of(cond, layout.strides[0].back(), layout.count, stream);
    const auto a_rows = host_rows_of(a, layout.strides[1].back(), layout.count, stream);
    const auto b_rows = host_rows_of(b, layout.strides[2].back(), layout.count, stream);
    if (cond_rows || a_rows || b_rows) {
      const Tensor& c = cond_rows ? *cond_rows : cond;
      const Tensor& x = a_rows ? *a_rows : a;
      const Tensor& y = b_rows ? *b_rows : b;
      return host_where(c, x, y, out, layout_of(c, x, y, out.shape()), stream);
    }
  }
  switch (a.element_size()) {
    case 1:
      return launch_where<uint8_t>(cond, a, b, out, layout, stream);
    case 2:
      return launch_where<uint16_t>(cond, a, b, out, layout, stream);
    case 4:
      return launch_where<uint32_t>(cond, a, b, out, layout, stream);
    default:
      return launch_where<uint64_t>(cond, a, b, out, layout, stream);
  }
}

void host_cast(const Tensor& x, const Tensor& out, const ElementwiseLayout<1>& layout,
               Stream& stream) {
  if (!layout.flat)
    if (const auto rows = host_rows_of(x, layout.strides[0].back(), layout.count, stream))
      return host_cast(*rows, out, layout_of(*rows), stream);
  with_any_type(x.dtype(), [&]<class In>() {
    with_any_type(out.dtype(), [&]<class Out>() { launch_cast<In, Out>(x, out, layout, stream); });
  });
}

}  // namespace hal::ops

// The CPU's reductions: each output reduced by one pass over its elements, split across the
// thread pool by output; when there are few outputs and many elements each, by part of each
// output too, and the parts combined in order by a second kernel. Sums of floats accumulate in
// double, of integers in 64 bits that wrap (two's complement, as the result does). Sums, maxima and
// minima over a contiguous run go to the vector kernels (ops/simd); sums, maxima, minima and argmax
// over an outer axis of rows (a matrix's columns) stream parts of the rows in the order memory
// lies, instead of one strided column at a time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/storage_types.hpp"
#include "ops/host_launch.hpp"
#include "ops/reduce.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/strided_walk.hpp"

namespace hal::ops {
namespace {

template <class T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(value);
  else
    return false;
}

template <Reduce kOp>
constexpr bool kExtreme = kOp == Reduce::max || kOp == Reduce::min;

// One element into a running max or min: NaN, once there, stays.
template <Reduce kOp, class T>
T extreme_of(T running, T x) {
  const bool replaces = kOp == Reduce::max ? x > running : x < running;
  return replaces || is_nan(x) ? x : running;
}

template <Reduce kOp, class T>
struct Accumulator {
  static constexpr bool kSums = kOp == Reduce::sum || kOp == Reduce::mean;
  using Value =
      std::conditional_t<kSums, std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>,
                         T>;

  Value value = initial();
  int64_t index = -1;  // argmax: the position of `value`; -1 before any element

  static Value initial() {
    if constexpr (kSums) return Value(0);
    if constexpr (kOp == Reduce::min)
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }

  // NaN is larger than everything, and the earlier position wins ties.
  static bool beats(T x, T y) { return (is_nan(x) && !is_nan(y)) || x > y; }

  void add(T x, int64_t position) {
    if constexpr (kSums) {
      value += static_cast<Value>(x);
    } else if constexpr (kOp == Reduce::argmax) {
      if (index < 0 || beats(x, value)) {
        value = x;
        index = position;
      }
    } else {
      value = extreme_of<kOp>(value, x);
    }
  }

  // `later` covers positions after this one's.
  void combine(const Accumulator& later) {
    if constexpr (kSums) {
      value += later.value;
    } else if constexpr (kOp == Reduce::argmax) {
      if (later.index >= 0 && (index < 0 || beats(later.value, value))) *this = later;
    } else {
      add(later.value, 0);
    }
  }

  auto result(int64_t count) const {
    if constexpr (kOp == Reduce::argmax)
      return index;
    else if constexpr (kOp == Reduce::mean)
      return static_cast<T>(value / static_cast<double>(count));
    else
      return static_cast<T>(value);
  }
};

// The input offset of output `o`'s first element.
int64_t kept_offset(const ReduceLayout& layout, int64_t o) {
  int64_t at = layout.offset;
  for (size_t d = layout.kept.size(); d-- > 0;) {
    at += (o % layout.kept[d]) * layout.kept_strides[d];
    o /= layout.kept[d];
  }
  return at;
}

// Reduces positions [first, last) of the output whose elements start at `base`.
template <Reduce kOp, class T>
Accumulator<kOp, T> reduce_range(const T* x, int64_t base, const ReduceLayout& layout,
                                 int64_t first, int64_t last, const simd::Kernels* simd) {
  Accumulator<kOp, T> acc;
  if (first >= last) return acc;
  if (layout.reduced.size() == 1 && layout.reduced_strides[0] == 1) {
    const T* row = x + base;
    if constexpr (std::is_same_v<T, float> && Accumulator<kOp, T>::kSums) {
      if (simd) {
        acc.value = simd->sum(row + first, static_cast<size_t>(last - first));
        return acc;
      }
    }
    if constexpr (std::is_same_v<T, float> && kExtreme<kOp>) {
      // A row holding NaN is left to the loop below, which keeps the NaN it finds.
      if (simd && simd->extreme(row + first, static_cast<size_t>(last - first), kOp == Reduce::max,
                                &acc.value))
        return acc;
    }
    for (int64_t r = first; r < last; ++r) acc.add(row[r], r);
    return acc;
  }
  if (layout.reduced.empty()) {  // size-1 axes reduced: each output is its one element
    for (int64_t r = first; r < last; ++r) acc.add(x[base], r);
    return acc;
  }
  // A row of the innermost reduced dimension at a time (mean over axes 0 and 2 of a 3-D tensor
  // walked its element offsets one by one: 5.6 ms for 8 Mi floats).
  const std::array<LayoutDims, 1> strides{layout.reduced_strides};
  tensor::StridedWalk<1> walk(layout.reduced, strides, {base}, first);
  const int64_t step = layout.reduced_strides.back();
  for (int64_t r = first; r < last;) {
    const int64_t n = std::min(walk.inner_left(), last - r);
    const T* row = x + walk.at(0);
    bool done = false;
    if constexpr (std::is_same_v<T, float> && Accumulator<kOp, T>::kSums) {
      if (simd && step == 1) {
        acc.value += simd->sum(row, static_cast<size_t>(n));
        done = true;
      }
    }
    if constexpr (std::is_same_v<T, float> && kExtreme<kOp>) {
      float extreme = 0;
      if (simd && step == 1 &&
          simd->extreme(row, static_cast<size_t>(n), kOp == Reduce::max, &extreme)) {
        acc.add(extreme, r);
        done = true;
      }
    }
    if (!done)
      for (int64_t k = 0; k < n; ++k) acc.add(row[k * step], r + k);
    r += n;
    walk.advance_inner(n);
  }
  return acc;
}

// Whether `layout` reduces over the rows of matrices whose columns are the innermost kept
// dimension: one reduced dimension and contiguous columns, enough of them to be read a band at
// a time.
bool column_reduction(const ReduceLayout& layout) {
  return layout.reduced.size() == 1 && !layout.kept.empty() && layout.kept_strides.back() == 1 &&
         layout.kept.back() >= 16 && layout.reduced_strides[0] != 1;
}

// Sums, means, maxima, minima and argmax over the rows of matrices. Work items are parts of the
// rows of a band of columns: each streams its rows in the order memory lies, a row at a time,
// into partial results of its own (f64 sums; argmax's positions beside its values); a second
// kernel combines the parts per column, in order.
template <Reduce kOp, class T>
void launch_columns(const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                    Stream& stream) {
  using Acc = Accumulator<kOp, T>;
  using Partial = typename Acc::Value;
  using Out = decltype(Acc{}.result(1));
  constexpr bool kPositions = kOp == Reduce::argmax;
  const simd::Kernels* simd = simd::active();
  const int64_t cols = layout.kept.back(), matrices = layout.outputs / cols;
  const int64_t rows = layout.count, row_stride = layout.reduced_strides[0];
  // Bands of at most 8192 columns (64 KiB of f64 sums, in L2), a few row parts per thread.
  const int64_t width = std::min<int64_t>(cols, 8192);
  const int64_t bands = (cols + width - 1) / width;
  const auto threads = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t parts = std::clamp<int64_t>(2 * threads / std::max<int64_t>(matrices * bands, 1), 1,
                                            std::max<int64_t>(rows / 64, 1));
  const int64_t items = matrices * bands * parts;
  auto partials =
      std::make_shared<std::vector<Partial>>(static_cast<size_t>(items * width), Acc::initial());
  auto positions =  // argmax: the row of each partial's value, -1 before any
      std::make_shared<std::vector<int64_t>>(kPositions ? static_cast<size_t>(items * width) : 0,
                                             -1);
  const Kernel part_kernel = host_kernel(std::string(name(kOp)), [=](const KernelChunk& chunk) {
    const T* in = chunk.args.ptr<const T>(0);
    for (uint64_t item = chunk.begin[1]; item < chunk.end[1]; ++item) {
      const auto i = static_cast<int64_t>(item);
      const int64_t part = i % parts, band = i / parts % bands, matrix = i / parts / bands;
      const int64_t first = band * width, n = std::min(width, cols - first);
      const int64_t row_begin = rows * part / parts, row_end = rows * (part + 1) / parts;
      const T* at = in + kept_offset(layout, matrix * cols + first) + row_begin * row_stride;
      Partial* acc = partials->data() + i * width;
      if constexpr (std::is_same_v<T, float> && Acc::kSums) {
        if (simd) {
          simd->sum_columns(at, static_cast<size_t>(row_end - row_begin),
                            static_cast<size_t>(row_stride), static_cast<size_t>(n), acc);
          continue;
        }
      }
      int64_t* position = kPositions ? positions->data() + i * width : nullptr;
      for (int64_t r = row_begin; r < row_end; ++r, at += row_stride)
        for (int64_t j = 0; j < n; ++j) {
          if constexpr (Acc::kSums) {
            acc[j] += at[j];
          } else if constexpr (kPositions) {
            if (position[j] < 0 || Acc::beats(at[j], acc[j])) {
              acc[j] = at[j];
              position[j] = r;
            }
          } else {
            acc[j] = extreme_of<kOp>(acc[j], at[j]);
          }
        }
    }
  });
  stream.launch(part_kernel, host_rows_config(rows / parts * width, items), {x.storage()});
  const Kernel combine_kernel = host_kernel(std::string(name(kOp)), [=](const KernelChunk& chunk) {
    Out* dst = chunk.args.ptr<Out>(0);
    for (uint64_t o = chunk.begin[0]; o < chunk.end[0]; ++o) {
      const auto output = static_cast<int64_t>(o);
      const int64_t matrix = output / cols, col = output % cols;
      const int64_t band = col / width, j = col % width;
      Partial total = Acc::initial();
      int64_t best = -1;
      for (int64_t part = 0; part < parts; ++part) {
        const auto at = static_cast<size_t>(((matrix * bands + band) * parts + part) * width + j);
        const Partial value = (*partials)[at];
        if constexpr (Acc::kSums) {
          total += value;
        } else if constexpr (kPositions) {  // a later part wins only by beating: ties go first
          if ((*positions)[at] >= 0 && (best < 0 || Acc::beats(value, total))) {
            total = value;
            best = (*positions)[at];
          }
        } else {
          total = extreme_of<kOp>(total, value);
        }
      }
      if constexpr (kPositions)
        dst[o] = best;
      else if constexpr (kOp == Reduce::mean)
        dst[o] = static_cast<T>(total / static_cast<double>(rows));
      else
        dst[o] = static_cast<T>(total);
    }
  });
  stream.launch(combine_kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.outputs)),
                {out.storage()});
}

template <Reduce kOp, class T>
void launch(const Tensor& x, const Tensor& out, const ReduceLayout& layout, Stream& stream) {
  using Acc = Accumulator<kOp, T>;
  using Out = decltype(Acc{}.result(1));
  // Float sums and means (integer sums wrap as the general path's do), maxima, minima, argmax.
  constexpr bool kByColumns = (Acc::kSums && std::is_floating_point_v<T>) || kOp == Reduce::max ||
                              kOp == Reduce::min || kOp == Reduce::argmax;
  if constexpr (kByColumns) {
    if (column_reduction(layout)) return launch_columns<kOp, T>(x, out, layout, stream);
  }
  const simd::Kernels* simd = simd::active();
  // Parts per output: enough work items to spread few outputs over the pool.
  const int64_t parts = layout.outputs < 64 && layout.count >= (1 << 16)
                            ? std::min<int64_t>(layout.count / (1 << 15), 64)
                            : 1;
  if (parts == 1) {
    const Kernel kernel =
        host_kernel(std::string(name(kOp)), [layout, simd](const KernelChunk& chunk) {
          Out* dst = chunk.args.ptr<Out>(0);
          const T* in = chunk.args.ptr<const T>(1);
          for (uint64_t o = chunk.begin[1]; o < chunk.end[1]; ++o) {
            const auto out_index = static_cast<int64_t>(o);
            dst[o] =
                reduce_range<kOp>(in, kept_offset(layout, out_index), layout, 0, layout.count, simd)
                    .result(layout.count);
          }
        });
    stream.launch(kernel, host_rows_config(layout.count, layout.outputs),
                  {out.storage(), x.storage()});
    return;
  }
  auto partials = std::make_shared<std::vector<Acc>>(static_cast<size_t>(layout.outputs * parts));
  const Kernel part_kernel = host_kernel(
      std::string(name(kOp)), [layout, parts, partials, simd](const KernelChunk& chunk) {
        const T* in = chunk.args.ptr<const T>(0);
        for (uint64_t item = chunk.begin[1]; item < chunk.end[1]; ++item) {
          const auto o = static_cast<int64_t>(item) / parts, p = static_cast<int64_t>(item) % parts;
          (*partials)[item] =
              reduce_range<kOp>(in, kept_offset(layout, o), layout, layout.count * p / parts,
                                layout.count * (p + 1) / parts, simd);
        }
      });
  // Counted in elements: a count of parts alone (64 at most) stayed under the pool's threshold,
  // and a sum of all of a 4096 x 4096 matrix ran on one thread.
  stream.launch(part_kernel, host_rows_config(layout.count / parts, layout.outputs * parts),
                {x.storage()});
  const Kernel combine_kernel =
      host_kernel(std::string(name(kOp)), [layout, parts, partials](const KernelChunk& chunk) {
        Out* dst = chunk.args.ptr<Out>(0);
        for (uint64_t o = chunk.begin[0]; o < chunk.end[0]; ++o) {
          Acc acc = (*partials)[o * static_cast<uint64_t>(parts)];
          for (int64_t p = 1; p < parts; ++p)
            acc.combine((*partials)[o * static_cast<uint64_t>(parts) + static_cast<uint64_t>(p)]);
          dst[o] = acc.result(layout.count);
        }
      });
  stream.launch(combine_kernel, LaunchConfig::linear(static_cast<uint64_t>(layout.outputs)),
                {out.storage()});
}

// f16, bf16 and bool have no reduction kernel of their own (the op table computes them in
// another dtype), nor do integers a mean (an exact i64 sum, divided in f32).
struct NoKernel {};

template <Reduce kOp>
void reduce_of(const Tensor& x, const Tensor& out, const ReduceLayout& layout, Stream& stream) {
  detail::with_storage_type<NoKernel, NoKernel, NoKernel>(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, NoKernel> && !(std::is_integral_v<T> && kOp == Reduce::mean))
      launch<kOp, T>(x, out, layout, stream);
  });
}

}  // namespace

void host_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                 Stream& stream) {
  switch (op) {
    case Reduce::sum:
      return reduce_of<Reduce::sum>(x, out, layout, stream);
    case Reduce::mean:
      return reduce_of<Reduce::mean>(x, out, layout, stream);
    case Reduce::max:
      return reduce_of<Reduce::max>(x, out, layout, stream);
    case Reduce::min:
      return reduce_of<Reduce::min>(x, out, layout, stream);
    case Reduce::argmax:
      return reduce_of<Reduce::argmax>(x, out, layout, stream);
  }
}

}  // namespace hal::ops

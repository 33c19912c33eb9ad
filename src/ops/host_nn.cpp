// The CPU's host kernels of the layer ops. Each splits its work across the thread pool where the
// pieces are independent (rows, planes, columns, blocks of random draws) and sums in the order
// the ops they stand for would, so that a device building the op from its parts agrees.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "hal/error.hpp"
#include "hal/kernel.hpp"
#include "ops/host_element_functions.hpp"
#include "ops/host_launch.hpp"
#include "ops/nn_kernels.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/philox.hpp"

namespace hal::ops {
namespace {

using host::with_float;

// The index at position i of an i32 or i64 tensor's data.
int64_t index_at(const void* data, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
}

[[noreturn]] void index_out_of_range(const char* op, int64_t index, int64_t at, int64_t rows) {
  throw Error(ErrorCode::InvalidArgument,
              std::string(op) + ": index " + std::to_string(index) + " at position " +
                  std::to_string(at) + " is out of range for " + std::to_string(rows) + " rows");
}

}  // namespace

void host_concat(const std::vector<Tensor>& parts, int64_t axis, const Tensor& out,
                 Stream& stream) {
  const size_t element = out.element_size();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.size(d);
  for (int64_t d = axis + 1; d < out.dim(); ++d) inner *= out.size(d);
  const size_t out_row = static_cast<size_t>(out.size(axis) * inner) * element;
  std::vector<KernelArg> args{out.storage()};
  std::vector<size_t> rows, sources, places;  // per part: bytes per row, start, place in a row
  size_t place = 0;
  for (const Tensor& part : parts) {
    const size_t row = static_cast<size_t>(part.size(axis) * inner) * element;
    if (row > 0) {
      args.emplace_back(part.storage());
      rows.push_back(row);
      sources.push_back(static_cast<size_t>(part.offset()) * element);
      places.push_back(place);
    }
    place += row;
  }
  const size_t out_start = static_cast<size_t>(out.offset()) * element;
  // Parts whose rows are one small value each (stacking in a new last dimension: complex parts,
  // coordinates, interleaved phases): a copy of known size per row, a move, where memcpy's call
  // per element moved 1.2 GB/s.
  const size_t common = rows.empty() ? 0 : rows[0];
  const bool same = std::all_of(rows.begin(), rows.end(), [&](size_t r) { return r == common; });
  const auto copy_rows = [&]<size_t kBytes>() {
    return [=](const KernelChunk& chunk) {
      auto* dst = chunk.args.ptr<unsigned char>(0) + out_start;
      for (size_t p = 0; p < places.size(); ++p) {
        const unsigned char* src = chunk.args.ptr<const unsigned char>(p + 1) + sources[p];
        for (uint64_t o = chunk.begin[1]; o < chunk.end[1]; ++o)
          std::memcpy(dst + o * out_row + places[p], src + o * kBytes, kBytes);
      }
    };
  };
  std::function<void(const KernelChunk&)> body;
  if (same && common == 4)
    body = copy_rows.operator()<4>();
  else if (same && common == 8)
    body = copy_rows.operator()<8>();
  else if (same && common == 16)
    body = copy_rows.operator()<16>();
  else if (same && common == 2)
    body = copy_rows.operator()<2>();
  else
    body = [=](const KernelChunk& chunk) {
      auto* dst = chunk.args.ptr<unsigned char>(0) + out_start;
      for (uint64_t o = chunk.begin[1]; o < chunk.end[1]; ++o)
        for (size_t p = 0; p < rows.size(); ++p)
          std::memcpy(dst + o * out_row + places[p],
                      chunk.args.ptr<const unsigned char>(p + 1) + sources[p] + o * rows[p],
                      rows[p]);
    };
  const Kernel kernel = host_kernel("concat", std::move(body));
  stream.launch(kernel, host_rows_config(out_row / element, outer), args);
}

void host_embedding(const Tensor& weight, const Tensor& indices, const Tensor& out,
                    Stream& stream) {
  const int64_t rows = weight.size(0), count = indices.numel();
  const size_t row = static_cast<size_t>(weight.size(1)) * weight.element_size();
  const bool wide = indices.dtype() == DType::i64;
  const size_t w_at = static_cast<size_t>(weight.offset()) * weight.element_size();
  const size_t i_at = static_cast<size_t>(indices.offset()) * indices.element_size();
  const size_t o_at = static_cast<size_t>(out.offset()) * out.element_size();
  const Kernel kernel = host_kernel("embedding", [=](const KernelChunk& chunk) {
    const auto* table = chunk.args.ptr<const unsigned char>(0) + w_at;
    const void* picks = chunk.args.ptr<const unsigned char>(1) + i_at;
    auto* dst = chunk.args.ptr<unsigned char>(2) + o_at;
    for (uint64_t i = chunk.begin[1]; i < chunk.end[1]; ++i) {
      const int64_t index = index_at(picks, wide, static_cast<int64_t>(i));
      if (index < 0 || index >= rows)
        index_out_of_range("embedding", index, static_cast<int64_t>(i), rows);
      std::memcpy(dst + i * row, table + static_cast<size_t>(index) * row, row);
    }
  });
  stream.launch(kernel, host_rows_config(weight.size(1), count),
                {weight.storage(), indices.storage(), out.storage()});
}

void host_embedding_backward(const Tensor& grad, const Tensor& indices, const Tensor& out,
                             Stream& stream) {
  const int64_t rows = out.size(0), dim = out.size(1), count = indices.numel();
  const bool wide = indices.dtype() == DType::i64;
  const int64_t g_at = grad.offset(), i_at = indices.offset(), o_at = out.offset();
  with_float(out.dtype(), [&]<class T>() {
    // Split by columns: every thread sees every index, and no two write one element.
    const Kernel kernel = host_kernel("embedding_backward", [=](const KernelChunk& chunk) {
      const T* g = chunk.args.ptr<const T>(0) + g_at;
      const void* picks = wide ? static_cast<const void*>(chunk.args.ptr<const int64_t>(1) + i_at)
                               : static_cast<const void*>(chunk.args.ptr<const int32_t>(1) + i_at);
      T* dst = chunk.args.ptr<T>(2) + o_at;
      const auto first = static_cast<int64_t>(chunk.begin[0]);
      const auto last = static_cast<int64_t>(chunk.end[0]);
      for (int64_t r = 0; r < rows; ++r)
        std::fill(dst + r * dim + first, dst + r * dim + last, T(0));
      for (int64_t i = 0; i < count; ++i) {
        const int64_t index = index_at(picks, wide, i);
        if (index < 0 || index >= rows) index_out_of_range("embedding_backward", index, i, rows);
        T* to = dst + index * dim;
        const T* from = g + i * dim;
        for (int64_t c = first; c < last; ++c) to[c] += from[c];
      }
    });
    stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(dim)),
                  {grad.storage(), indices.storage(), out.storage()});
  });
}

void host_cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& out,
                        int64_t ignore_index, double smoothing, Stream& stream) {
  const int64_t n = logits.size(0), classes = logits.size(1);
  const bool wide = targets.dtype() == DType::i64;
  const int64_t l_at = logits.offset(), t_at = targets.offset(), o_at = out.offset();
  // Per row: its loss and whether it counts; the rows in parallel, then their mean in order.
  auto losses = std::make_shared<std::vector<double>>(static_cast<size_t>(n));
  auto counts = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n));
  with_float(logits.dtype(), [&]<class T>() {
    // f32 rows through the vector kernels' log_softmax row (8192 rows of 1000 classes: 40 ms in
    // f64 exps a class, 8 times PyTorch); f64 rows, and every row under HAL_CPU_ISA=scalar,
    // through the plain loops below, their reference.
    const simd::Kernels* simd = std::is_same_v<T, float> ? simd::active() : nullptr;
    const Kernel rows = host_kernel("cross_entropy", [=](const KernelChunk& chunk) {
      const T* x = chunk.args.ptr<const T>(0) + l_at;
      const void* picks = wide ? static_cast<const void*>(chunk.args.ptr<const int64_t>(1) + t_at)
                               : static_cast<const void*>(chunk.args.ptr<const int32_t>(1) + t_at);
      std::vector<float> log_p(simd ? static_cast<size_t>(classes) : 0);
      for (uint64_t r = chunk.begin[1]; r < chunk.end[1]; ++r) {
        const T* row = x + static_cast<int64_t>(r) * classes;
        const int64_t target = index_at(picks, wide, static_cast<int64_t>(r));
        (*counts)[r] = target != ignore_index;
        if (target == ignore_index) continue;
        if (target < 0 || target >= classes)
          throw Error(ErrorCode::InvalidArgument,
                      "cross_entropy: target " + std::to_string(target) + " of row " +
                          std::to_string(r) + " is out of range for " + std::to_string(classes) +
                          " classes (and is not ignore_index " + std::to_string(ignore_index) +
                          ")");
        if constexpr (std::is_same_v<T, float>) {
          if (simd) {  // loss = -log p[target]; smoothing's term -mean(log p) = lse - mean(x)
            simd->softmax_row(row, log_p.data(), static_cast<size_t>(classes), true);
            double loss = -double(log_p[static_cast<size_t>(target)]);
            if (smoothing != 0)
              loss = (1 - smoothing) * loss - smoothing * simd->sum(log_p.data(), log_p.size()) /
                                                  static_cast<double>(classes);
            (*losses)[r] = loss;
            continue;
          }
        }
        double top = -std::numeric_limits<double>::infinity(), total = 0, mean = 0;
        for (int64_t c = 0; c < classes; ++c) top = std::max(top, double(row[c]));
        for (int64_t c = 0; c < classes; ++c) {
          total += std::exp(double(row[c]) - top);
          mean += double(row[c]);
        }
        const double lse = top + std::log(total);
        // The smoothing term only where it is asked for: a class masked with -inf makes the
        // row's mean -inf, and 0 * inf would turn the row's loss into NaN.
        double loss = lse - double(row[target]);
        if (smoothing != 0)
          loss = (1 - smoothing) * loss + smoothing * (lse - mean / static_cast<double>(classes));
        (*losses)[r] = loss;
      }
    });
    stream.launch(rows, host_rows_config(classes, n), {logits.storage(), targets.storage()});
    const Kernel mean = host_kernel("cross_entropy_mean", [=](const KernelChunk& chunk) {
      double total = 0;
      int64_t counted = 0;
      for (size_t r = 0; r < losses->size(); ++r)
        if ((*counts)[r]) {
          total += (*losses)[r];
          ++counted;
        }
      chunk.args.ptr<T>(0)[o_at] = static_cast<T>(total / static_cast<double>(counted));
    });
    stream.launch(mean, LaunchConfig::linear(1), {out.storage()});
  });
}

void host_cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& grad,
                                 const Tensor& out, int64_t ignore_index, double smoothing,
                                 Stream& stream) {
  const int64_t n = logits.size(0), classes = logits.size(1);
  const bool wide = targets.dtype() == DType::i64;
  const int64_t l_at = logits.offset(), t_at = targets.offset(), g_at = grad.offset(),
                o_at = out.offset();
  with_float(logits.dtype(), [&]<class T>() {
    const simd::Kernels* simd = std::is_same_v<T, float> ? simd::active() : nullptr;  // as above
    const Kernel kernel = host_kernel("cross_entropy_backward", [=](const KernelChunk& chunk) {
      const T* x = chunk.args.ptr<const T>(0) + l_at;
      const void* picks = wide ? static_cast<const void*>(chunk.args.ptr<const int64_t>(1) + t_at)
                               : static_cast<const void*>(chunk.args.ptr<const int32_t>(1) + t_at);
      const double dy = static_cast<double>(chunk.args.ptr<const T>(2)[g_at]);
      T* dst = chunk.args.ptr<T>(3) + o_at;
      int64_t counted = 0;  // every chunk counts the rows for itself: one pass over n indices
      for (int64_t r = 0; r < n; ++r) counted += index_at(picks, wide, r) != ignore_index;
      const double scale = dy / static_cast<double>(counted);
      const double uniform = smoothing / static_cast<double>(classes);
      for (uint64_t r = chunk.begin[1]; r < chunk.end[1]; ++r) {
        const T* row = x + static_cast<int64_t>(r) * classes;
        T* g = dst + static_cast<int64_t>(r) * classes;
        const int64_t target = index_at(picks, wide, static_cast<int64_t>(r));
        if (target == ignore_index) {
          std::fill(g, g + classes, T(0));
          continue;
        }
        if (target < 0 || target >= classes)
          throw Error(ErrorCode::InvalidArgument, "cross_entropy_backward: target " +
                                                      std::to_string(target) + " of row " +
                                                      std::to_string(r) + " is out of range for " +
                                                      std::to_string(classes) + " classes");
        if constexpr (std::is_same_v<T, float>) {
          if (simd) {  // softmax into the gradient's row, then less the wanted distribution
            simd->softmax_row(row, g, static_cast<size_t>(classes), false);
            const auto step = static_cast<float>(scale);
            const auto off = static_cast<float>(uniform), on = static_cast<float>(1 - smoothing);
            for (int64_t c = 0; c < classes; ++c) g[c] = (g[c] - off) * step;
            g[target] -= on * step;
            continue;
          }
        }
        double top = -std::numeric_limits<double>::infinity(), total = 0;
        for (int64_t c = 0; c < classes; ++c) top = std::max(top, double(row[c]));
        for (int64_t c = 0; c < classes; ++c) total += std::exp(double(row[c]) - top);
        for (int64_t c = 0; c < classes; ++c) {
          const double p = std::exp(double(row[c]) - top) / total;
          const double wanted = (c == target ? 1 - smoothing : 0) + uniform;
          g[c] = static_cast<T>((p - wanted) * scale);
        }
      }
    });
    stream.launch(kernel, host_rows_config(classes, n),
                  {logits.storage(), targets.storage(), grad.storage(), out.storage()});
  });
}

void host_dropout(const Tensor& x, const Tensor& out, double p, uint64_t seed, Stream& stream) {
  const int64_t n = x.numel(), x_at = x.offset(), o_at = out.offset();
  const float threshold = static_cast<float>(p);
  with_float(x.dtype(), [&]<class T>() {
    const T scale = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    const Kernel kernel = host_kernel("dropout", [=](const KernelChunk& chunk) {
      const T* in = chunk.args.ptr<const T>(0) + x_at;
      T* dst = chunk.args.ptr<T>(1) + o_at;
      for (uint64_t block = chunk.begin[0]; block < chunk.end[0]; ++block) {
        const tensor::Philox4 draws = tensor::philox_block(seed, block);
        for (uint64_t j = 0; j < 4; ++j) {
          const uint64_t i = block * 4 + j;
          if (i >= static_cast<uint64_t>(n)) break;
          // x times the mask's 0 or scale, as PyTorch and the other devices have it: a
          // dropped infinity or NaN gives NaN, not 0.
          dst[i] = in[i] * (tensor::unit_f32(draws[j]) >= threshold ? scale : T(0));
        }
      }
    });
    stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>((n + 3) / 4)),
                  {x.storage(), out.storage()});
  });
}

void host_pool(bool max, const Tensor& x, const Tensor& out, const Window& window,
               bool count_include_pad, Stream& stream) {
  // Three spatial dimensions always: the missing leading ones of size 1.
  struct Dim {
    int64_t size = 1, kernel = 1, stride = 1, dilation = 1, before = 0, after = 0, out = 1;
  };
  std::array<Dim, 3> dims;
  const size_t spatial = window.kernel.size();
  for (size_t i = 0; i < spatial; ++i)
    dims[3 - spatial + i] = {x.size(static_cast<int64_t>(i) + 2),
                             window.kernel[i],
                             window.strides[i],
                             window.dilations[i],
                             window.pad_before[i],
                             window.pad_after[i],
                             window.out[i]};
  // Per dimension and output position, worked out once rather than per element: the first
  // input index of the window, its kernel positions inside x [first, last), and how many are
  // inside x or its explicit padding (avg_pool's count_include_pad divisor).
  struct Span {
    int64_t start, first, last, covered;
  };
  std::array<std::vector<Span>, 3> spans;
  for (size_t d = 0; d < 3; ++d) {
    const Dim& dim = dims[d];
    for (int64_t o = 0; o < dim.out; ++o) {
      Span span{o * dim.stride - dim.before, dim.kernel, 0, 0};
      for (int64_t k = 0; k < dim.kernel; ++k) {
        const int64_t at = span.start + k * dim.dilation;
        if (at >= 0 && at < dim.size) {
          span.first = std::min(span.first, k);
          span.last = k + 1;
        }
        span.covered += at >= -dim.before && at < dim.size + dim.after;
      }
      if (span.last == 0) span.first = 0;  // the window lies wholly in the padding
      spans[d].push_back(span);
    }
  }
  const int64_t planes = x.size(0) * x.size(1);
  const int64_t in_plane = dims[0].size * dims[1].size * dims[2].size;
  const int64_t out_plane = dims[0].out * dims[1].out * dims[2].out;
  const int64_t x_at = x.offset(), o_at = out.offset();
  with_float(x.dtype(), [&]<class T>() {
    const Kernel kernel = host_kernel(max ? "max_pool" : "avg_pool", [=](const KernelChunk& chunk) {
      const T* in = chunk.args.ptr<const T>(0) + x_at;
      T* dst = chunk.args.ptr<T>(1) + o_at;
      const int64_t d1 = dims[1].dilation * dims[2].size, d2 = dims[2].dilation;
      for (uint64_t plane = chunk.begin[1]; plane < chunk.end[1]; ++plane) {
        const T* p = in + static_cast<int64_t>(plane) * in_plane;
        T* o = dst + static_cast<int64_t>(plane) * out_plane;
        for (const Span& sa : spans[0])
          for (const Span& sb : spans[1])
            for (const Span& sc : spans[2]) {
              T best = -std::numeric_limits<T>::infinity(), total = 0;
              bool nan = false;
              for (int64_t i = sa.first; i < sa.last; ++i) {
                // Relative to the window's corner, which may lie in the padding.
                const int64_t corner =
                    ((sa.start + i * dims[0].dilation) * dims[1].size + sb.start) * dims[2].size +
                    sc.start;
                for (int64_t j = sb.first; j < sb.last; ++j)
                  for (int64_t k = sc.first; k < sc.last; ++k) {
                    const T value = p[corner + j * d1 + k * d2];
                    if (max) {
                      nan |= value != value;
                      best = value > best ? value : best;
                    } else {
                      total += value;
                    }
                  }
              }
              const int64_t valid =
                  (sa.last - sa.first) * (sb.last - sb.first) * (sc.last - sc.first);
              const int64_t divisor =
                  count_include_pad ? sa.covered * sb.covered * sc.covered : valid;
              *o++ = max ? (nan ? std::numeric_limits<T>::quiet_NaN() : best)
                         : total / static_cast<T>(divisor);
            }
      }
    });
    const int64_t taps = dims[0].kernel * dims[1].kernel * dims[2].kernel;
    stream.launch(kernel, host_rows_config(out_plane * taps, planes), {x.storage(), out.storage()});
  });
}

}  // namespace hal::ops

// The CPU's fused kernels for the composite ops that normalise rows: softmax, log_softmax,
// layer_norm and rms_norm over the trailing dimensions of a contiguous x, one pass per row for
// the statistics and one for the result, split across the thread pool by rows. Built from
// their parts they take five to seven passes and launches; rows of a transformer's attention
// or hidden state are short, so launches dominated. f32 rows go to the vector kernels
// (ops/simd); the loops below are their reference (HAL_CPU_ISA=scalar) and run f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "hal/kernel.hpp"
#include "ops/host_launch.hpp"
#include "ops/op_table.hpp"
#include "ops/simd/simd_kernels.hpp"

namespace hal::ops {
namespace {

enum class RowOp : uint8_t { softmax, log_softmax, layer_norm, rms_norm };

RowOp row_op(const OpDescriptor& op) {
  if (op.name == "softmax") return RowOp::softmax;
  if (op.name == "log_softmax") return RowOp::log_softmax;
  if (op.name == "layer_norm") return RowOp::layer_norm;
  return RowOp::rms_norm;
}

template <class T>
void softmax_row(const T* x, T* y, int64_t n, bool logarithm) {
  T top = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) top = std::max(top, x[i]);
  if (std::isinf(top) && top < 0) top = 0;  // a row of -inf: exp gives 0s, as the parts do
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T e = std::exp(x[i] - top);
    if (!logarithm) y[i] = e;
    total += e;
  }
  if (logarithm) {
    // (x - top) - log(total), not x - (top + log(total)): where |top| is large, the sum would
    // round the log away (log_softmax([1e8, 1e8]) gave [0, 0]).
    const T log_total = static_cast<T>(std::log(total));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - top) - log_total;
  } else {
    const T scale = static_cast<T>(1.0 / total);
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  }
}

template <class T>
void norm_row(const T* x, T* y, int64_t n, const T* weight, const T* bias, double eps,
              bool centre) {
  double mean = 0;
  if (centre) {
    for (int64_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<double>(n);
  }
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    squares += d * d;
  }
  const T scale = static_cast<T>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
  const T m = static_cast<T>(mean);
  for (int64_t i = 0; i < n; ++i) {
    T v = (x[i] - m) * scale;
    if (weight) v *= weight[i];
    if (bias) v += bias[i];
    y[i] = v;
  }
}

template <class T>
void launch_rows(RowOp op, const RowwiseArgs& a, Stream& stream) {
  const int64_t cols = a.cols;
  const bool has_weight = a.weight.defined(), has_bias = a.bias.defined();
  const double eps = a.eps;
  const int64_t x_at = a.x.offset(), y_at = a.out.offset();
  const int64_t weight_at = has_weight ? a.weight.offset() : 0;
  const int64_t bias_at = has_bias ? a.bias.offset() : 0;
  const simd::Kernels* simd = std::is_same_v<T, float> ? simd::active() : nullptr;
  const Kernel kernel = host_kernel("rowwise", [=](const KernelChunk& chunk) {
    const T* x = chunk.args.ptr<const T>(0) + x_at;
    T* y = chunk.args.ptr<T>(1) + y_at;
    const T* weight = has_weight ? chunk.args.ptr<const T>(2) + weight_at : nullptr;
    const T* bias = has_bias ? chunk.args.ptr<const T>(has_weight ? 3 : 2) + bias_at : nullptr;
    for (uint64_t row = chunk.begin[1]; row < chunk.end[1]; ++row) {
      const T* in = x + row * cols;
      T* out = y + row * cols;
      const bool softmax = op == RowOp::softmax || op == RowOp::log_softmax;
      if constexpr (std::is_same_v<T, float>) {
        if (simd && softmax) {
          simd->softmax_row(in, out, static_cast<size_t>(cols), op == RowOp::log_softmax);
          continue;
        }
        if (simd) {
          simd->norm_row(in, out, static_cast<size_t>(cols), weight, bias, eps,
                         op == RowOp::layer_norm);
          continue;
        }
      }
      if (softmax)
        softmax_row(in, out, cols, op == RowOp::log_softmax);
      else
        norm_row(in, out, cols, weight, bias, eps, op == RowOp::layer_norm);
    }
  });
  std::vector<KernelArg> args{Buffer(a.x.storage()), Buffer(a.out.storage())};
  if (has_weight) args.emplace_back(Buffer(a.weight.storage()));
  if (has_bias) args.emplace_back(Buffer(a.bias.storage()));
  stream.launch(kernel, host_rows_config(cols, a.rows), args);
}

}  // namespace

void host_rowwise(const OpDescriptor& op, const RowwiseArgs& args, Stream& stream) {
  if (args.x.dtype() == DType::f64)
    launch_rows<double>(row_op(op), args, stream);
  else
    launch_rows<float>(row_op(op), args, stream);
}

}  // namespace hal::ops

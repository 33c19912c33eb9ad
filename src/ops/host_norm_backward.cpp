// The CPU's kernel for layer_norm_backward and rms_norm_backward: x's gradient a row at a time,
// three passes over the row while it stays in cache (x's statistics; the sums of g and g * xhat;
// dx) where the closed form from parts takes about seventeen passes over whole tensors. f32 rows
// go to the vector kernels (ops/simd); the loop below is their reference (HAL_CPU_ISA=scalar)
// and runs f64.
#include <cmath>
#include <type_traits>
#include <vector>

#include "hal/kernel.hpp"
#include "ops/host_launch.hpp"
#include "ops/op_table.hpp"
#include "ops/simd/simd_kernels.hpp"

namespace hal::ops {
namespace {

template <class T>
void norm_row_backward(const T* x, const T* dy, T* dx, int64_t n, const T* weight, double eps,
                       bool centre) {
  const double count = static_cast<double>(n);
  double mean = 0;
  if (centre) {
    for (int64_t i = 0; i < n; ++i) mean += x[i];
    mean /= count;
  }
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    squares += d * d;
  }
  const double rstd = 1.0 / std::sqrt(squares / count + eps);
  const auto g_at = [&](int64_t i) {
    return weight ? static_cast<double>(dy[i]) * weight[i] : static_cast<double>(dy[i]);
  };
  double sum_g = 0, sum_g_xhat = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = g_at(i);
    sum_g += g;
    sum_g_xhat += g * (x[i] - mean) * rstd;
  }
  const double mean_g = centre ? sum_g / count : 0, mean_g_xhat = sum_g_xhat / count;
  for (int64_t i = 0; i < n; ++i) {
    const double xhat = (x[i] - mean) * rstd;
    dx[i] = static_cast<T>(rstd * (g_at(i) - mean_g - xhat * mean_g_xhat));
  }
}

template <class T>
void launch(bool centre, const NormBackwardArgs& a, Stream& stream) {
  const int64_t cols = a.cols;
  const bool has_weight = a.weight.defined();
  const double eps = a.eps;
  const int64_t x_at = a.x.offset(), grad_at = a.grad.offset(), dx_at = a.dx.offset();
  const int64_t weight_at = has_weight ? a.weight.offset() : 0;
  const simd::Kernels* simd = std::is_same_v<T, float> ? simd::active() : nullptr;
  const Kernel kernel = host_kernel("norm_backward", [=](const KernelChunk& chunk) {
    const T* x = chunk.args.ptr<const T>(0) + x_at;
    const T* dy = chunk.args.ptr<const T>(1) + grad_at;
    T* dx = chunk.args.ptr<T>(2) + dx_at;
    const T* weight = has_weight ? chunk.args.ptr<const T>(3) + weight_at : nullptr;
    for (uint64_t row = chunk.begin[1]; row < chunk.end[1]; ++row) {
      const uint64_t at = row * static_cast<uint64_t>(cols);
      if constexpr (std::is_same_v<T, float>) {
        if (simd) {
          simd->norm_row_backward(x + at, dy + at, dx + at, static_cast<size_t>(cols), weight, eps,
                                  centre);
          continue;
        }
      }
      norm_row_backward(x + at, dy + at, dx + at, cols, weight, eps, centre);
    }
  });
  std::vector<KernelArg> args{Buffer(a.x.storage()), Buffer(a.grad.storage()),
                              Buffer(a.dx.storage())};
  if (has_weight) args.emplace_back(Buffer(a.weight.storage()));
  stream.launch(kernel, host_rows_config(cols, a.rows), args);
}

}  // namespace

void host_norm_backward(const OpDescriptor& op, const NormBackwardArgs& args, Stream& stream) {
  const bool centre = op.name == "layer_norm_backward";
  if (args.x.dtype() == DType::f64)
    launch<double>(centre, args, stream);
  else
    launch<float>(centre, args, stream);
}

}  // namespace hal::ops

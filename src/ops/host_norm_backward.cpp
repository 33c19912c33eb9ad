// The CPU's kernel for layer_norm_backward and rms_norm_backward: x's gradient a row at a time,
// three passes over the row while it stays in cache (x's statistics; the sums of g and g * xhat;
// dx) where the closed form from parts takes about seventeen passes over whole tensors; the
// weight's and bias's gradients, where asked, summed in the last pass. f32 rows go to the vector
// kernels (ops/simd); the loop below is their reference (HAL_CPU_ISA=scalar) and runs f64.
#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
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
                       bool centre, T* weight_sum, T* bias_sum) {
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
    if (weight_sum) weight_sum[i] += static_cast<T>(dy[i] * xhat);
    if (bias_sum) bias_sum[i] += dy[i];
  }
}

// The rows' gradients, each row through `row(row, weight_sum, bias_sum)`. Without the
// parameters' gradients, a launch over rows; with them, over a few parts of the rows (two per
// thread), each adding into running sums of its own, then a second kernel that adds the parts'
// sums per column, in order: the same sums whatever the pool's split.
template <class T, class Row>
void launch_rows(const NormBackwardArgs& a, std::vector<KernelArg> args, const Row& row,
                 Stream& stream) {
  const int64_t rows = a.rows, cols = a.cols;
  const bool weight_sums = a.weight_grad.defined(), bias_sums = a.bias_grad.defined();
  if (!weight_sums && !bias_sums) {
    const Kernel kernel = host_kernel("norm_backward", [=](const KernelChunk& chunk) {
      for (uint64_t r = chunk.begin[1]; r < chunk.end[1]; ++r)
        row(chunk.args, static_cast<int64_t>(r), nullptr, nullptr);
    });
    stream.launch(kernel, host_rows_config(cols, rows), args);
    return;
  }
  const auto threads = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t parts = std::clamp<int64_t>(2 * threads, 1, std::max<int64_t>(rows, 1));
  // Per part: the weight's sums, then the bias's.
  auto sums = std::make_shared<std::vector<T>>(static_cast<size_t>(parts * 2 * cols), T(0));
  const Kernel part_kernel = host_kernel("norm_backward", [=](const KernelChunk& chunk) {
    for (uint64_t item = chunk.begin[1]; item < chunk.end[1]; ++item) {
      const auto part = static_cast<int64_t>(item);
      T* weight_sum = sums->data() + part * 2 * cols;
      T* bias_sum = weight_sum + cols;
      for (int64_t r = rows * part / parts; r < rows * (part + 1) / parts; ++r)
        row(chunk.args, r, weight_sums ? weight_sum : nullptr, bias_sums ? bias_sum : nullptr);
    }
  });
  stream.launch(part_kernel, host_rows_config(cols * (rows / parts), parts), args);
  const int64_t weight_at = weight_sums ? a.weight_grad.offset() : 0;
  const int64_t bias_at = bias_sums ? a.bias_grad.offset() : 0;
  const Kernel combine = host_kernel("norm_backward", [=](const KernelChunk& chunk) {
    T* weight_grad = weight_sums ? chunk.args.ptr<T>(0) + weight_at : nullptr;
    T* bias_grad = bias_sums ? chunk.args.ptr<T>(weight_sums ? 1 : 0) + bias_at : nullptr;
    for (uint64_t c = chunk.begin[1]; c < chunk.end[1]; ++c) {
      double weight_total = 0, bias_total = 0;
      for (int64_t part = 0; part < parts; ++part) {
        const size_t at = static_cast<size_t>(part * 2 * cols) + c;
        weight_total += (*sums)[at];
        bias_total += (*sums)[at + static_cast<size_t>(cols)];
      }
      if (weight_grad) weight_grad[c] = static_cast<T>(weight_total);
      if (bias_grad) bias_grad[c] = static_cast<T>(bias_total);
    }
  });
  std::vector<KernelArg> outputs;
  if (weight_sums) outputs.emplace_back(Buffer(a.weight_grad.storage()));
  if (bias_sums) outputs.emplace_back(Buffer(a.bias_grad.storage()));
  stream.launch(combine, host_rows_config(parts, cols), outputs);
}

template <class T>
void launch(bool centre, const NormBackwardArgs& a, Stream& stream) {
  const int64_t cols = a.cols;
  const bool has_weight = a.weight.defined();
  const double eps = a.eps;
  const int64_t x_at = a.x.offset(), grad_at = a.grad.offset(), dx_at = a.dx.offset();
  const int64_t weight_at = has_weight ? a.weight.offset() : 0;
  const simd::Kernels* simd = std::is_same_v<T, float> ? simd::active() : nullptr;
  const auto row = [=](const KernelArgs& args, int64_t r, T* weight_sum, T* bias_sum) {
    const int64_t at = r * cols;
    const T* x = args.ptr<const T>(0) + x_at + at;
    const T* dy = args.ptr<const T>(1) + grad_at + at;
    T* dx = args.ptr<T>(2) + dx_at + at;
    const T* weight = has_weight ? args.ptr<const T>(3) + weight_at : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (simd) {
        simd->norm_row_backward(x, dy, dx, static_cast<size_t>(cols), weight, eps, centre,
                                weight_sum, bias_sum);
        return;
      }
    }
    norm_row_backward(x, dy, dx, cols, weight, eps, centre, weight_sum, bias_sum);
  };
  std::vector<KernelArg> args{Buffer(a.x.storage()), Buffer(a.grad.storage()),
                              Buffer(a.dx.storage())};
  if (has_weight) args.emplace_back(Buffer(a.weight.storage()));
  launch_rows<T>(a, std::move(args), row, stream);
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

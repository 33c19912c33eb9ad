// The CPU's vector kernels (Google Highway), one table per instruction set, chosen at run time:
// the best the processor has, or the one HAL_CPU_ISA names (avx512, avx2, sse4, scalar).
// `scalar` has no table: the host kernels then run their own plain C++ loops, which are the
// reference every table is tested against. The kernels work on plain arrays; the host kernels
// (host_elementwise.cpp, host_reduce.cpp, host_rowwise.cpp, host_fused.cpp,
// host_select_cast.cpp) hand them the contiguous runs of their tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ops/elementwise.hpp"

namespace hal::ops::simd {

enum class Isa : uint8_t { scalar, sse4, avx2, avx512 };
std::string_view name(Isa isa);

// A HAL_CPU_ISA value; InvalidArgument naming the value and the choices for any other.
Isa parse_isa(std::string_view value);
// Whether this processor (and this build) runs `isa`.
bool supported(Isa isa);
// The best instruction set supported here.
Isa best_isa();
// HAL_CPU_ISA's choice, else best_isa(); read once. InvalidArgument for an unknown value,
// Unsupported for an instruction set this processor lacks, on every call.
Isa active_isa();

// How elements are stored; every kernel computes in f32.
enum class Storage : uint8_t { f32, f16, bf16 };

struct Kernels {
  Isa isa;
  // Arithmetic (add, sub, mul, div, maximum, minimum): out[i] = op(a[i * a_step], b[i * b_step])
  // with steps 0 (a broadcast value) or 1. False, having done nothing, for another op.
  bool (*binary)(Binary op, Storage type, const void* a, int a_step, const void* b, int b_step,
                 void* out, size_t n);
  // out[i] = op(x[i]) for the element functions listed in simd_kernels.cpp; false for others.
  bool (*unary)(Unary op, Storage type, const void* x, void* out, size_t n);
  // Converts n elements between f32 and f16 or bf16 (or copies f32), rounding to nearest even.
  void (*convert)(Storage from, Storage to, const void* in, void* out, size_t n);
  // The sum of n floats, accumulated in f64 lanes.
  double (*sum)(const float* x, size_t n);
  // The largest (or smallest) of n >= 1 floats into *out; false, *out untouched, where one of
  // them is NaN (the caller's scalar loop says which NaN).
  bool (*extreme)(const float* x, size_t n, bool largest, float* out);
  // acc[j] += x[r * row_stride + j] for every row r < rows and column j < cols, walking x in
  // the order memory lies (a row at a time), accumulating in f64.
  void (*sum_columns)(const float* x, size_t rows, size_t row_stride, size_t cols, double* acc);
  // One row of softmax (or log_softmax), as host_rowwise.cpp's reference computes it.
  void (*softmax_row)(const float* x, float* y, size_t n, bool logarithm);
  // One row of layer_norm (centre) or rms_norm; weight and bias may be null.
  void (*norm_row)(const float* x, float* y, size_t n, const float* weight, const float* bias,
                   double eps, bool centre);
  // One row of x's gradient through layer_norm (centre) or rms_norm, from x and the result's
  // gradient dy, as host_norm_backward.cpp's reference computes it; weight may be null. Where
  // weight_sum (bias_sum) is given, dy * xhat (dy) is added into it, element by element: the
  // running sums of the weight's (bias's) gradient over rows.
  void (*norm_row_backward)(const float* x, const float* dy, float* dx, size_t n,
                            const float* weight, double eps, bool centre, float* weight_sum,
                            float* bias_sum);
};

// The table of `isa`, or null for Isa::scalar (or an instruction set this build lacks).
const Kernels* kernels(Isa isa);
// The active instruction set's table, or null when it is scalar. Throws as active_isa() does.
const Kernels* active();

}  // namespace hal::ops::simd

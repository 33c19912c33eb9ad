// The simulated device's built-in ops, computed on its arena: f32, f64, i32 and i64 elementwise,
// reductions over any set of dimensions, and matmul in f32 and f64.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "sim.hpp"

namespace sim {
namespace {

template <class T>
T* data(const hal_plugin_tensor& t) {
  return reinterpret_cast<T*>(t.buffer->bytes.get()) + t.offset;
}

int64_t count(const hal_plugin_tensor& t) {
  int64_t n = 1;
  for (uint32_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// The element offset of row-major position `i` of `shape` in a view with `strides`.
int64_t offset_of(int64_t i, const int64_t* shape, const int64_t* strides, uint32_t rank) {
  int64_t at = 0;
  for (uint32_t d = rank; d-- > 0;) {
    at += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return at;
}

// Calls body.template operator()<T>() for the dtype; false for a dtype the ops do not take.
template <class Body>
bool with_type(hal_plugin_dtype dtype, Body&& body) {
  switch (dtype) {
    case HAL_PLUGIN_DTYPE_F32:
      body.template operator()<float>();
      return true;
    case HAL_PLUGIN_DTYPE_F64:
      body.template operator()<double>();
      return true;
    case HAL_PLUGIN_DTYPE_I32:
      body.template operator()<int32_t>();
      return true;
    case HAL_PLUGIN_DTYPE_I64:
      body.template operator()<int64_t>();
      return true;
    default:
      return false;
  }
}

hal_status unsupported_dtype(const char* op, hal_plugin_dtype dtype) {
  return fail(HAL_STATUS_UNSUPPORTED, std::string("sim: ") + op +
                                          " takes f32, f64, i32 and i64, not dtype " +
                                          std::to_string(dtype));
}

template <class T>
T apply_binary(hal_plugin_op op, T x, T y) {
  switch (op) {
    case HAL_PLUGIN_BINARY_ADD:
      return T(x + y);
    case HAL_PLUGIN_BINARY_SUB:
      return T(x - y);
    case HAL_PLUGIN_BINARY_MUL:
      return T(x * y);
    case HAL_PLUGIN_BINARY_DIV:
      if constexpr (std::is_integral_v<T>) {
        if (y == 0) return T(0);  // as hal's kernels: never a trap
        if (y == T(-1)) return T(0) - x;
      }
      return T(x / y);
    case HAL_PLUGIN_BINARY_MAXIMUM:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(x) || std::isnan(y)) return x + y;
      return x > y ? x : y;
    default:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(x) || std::isnan(y)) return x + y;
      return x < y ? x : y;
  }
}

template <class T>
T apply_unary(hal_plugin_op op, T x) {
  if constexpr (std::is_integral_v<T>) {
    if (op == HAL_PLUGIN_UNARY_NEG) return T(0) - x;
    if (op == HAL_PLUGIN_UNARY_ABS) return x < 0 ? T(0) - x : x;
    return x < 0 ? T(0) : x;  // relu: the definition admits no other integer op
  } else {
    switch (op) {
      case HAL_PLUGIN_UNARY_NEG:
        return -x;
      case HAL_PLUGIN_UNARY_ABS:
        return std::fabs(x);
      case HAL_PLUGIN_UNARY_RELU:
        return x < 0 ? T(0) : x;
      case HAL_PLUGIN_UNARY_EXP:
        return std::exp(x);
      case HAL_PLUGIN_UNARY_LOG:
        return std::log(x);
      case HAL_PLUGIN_UNARY_SQRT:
        return std::sqrt(x);
      case HAL_PLUGIN_UNARY_RSQRT:
        return T(1) / std::sqrt(x);
      case HAL_PLUGIN_UNARY_TANH:
        return std::tanh(x);
      case HAL_PLUGIN_UNARY_SIGMOID:
        return T(1) / (T(1) + std::exp(-x));
      case HAL_PLUGIN_UNARY_GELU:
        return x * T(0.5) * (T(1) + std::erf(x * T(0.7071067811865476)));
      default:
        return x / (T(1) + std::exp(-x));  // silu
    }
  }
}

bool computed(hal_plugin_dtype dtype) {
  return dtype == HAL_PLUGIN_DTYPE_F32 || dtype == HAL_PLUGIN_DTYPE_F64 ||
         dtype == HAL_PLUGIN_DTYPE_I32 || dtype == HAL_PLUGIN_DTYPE_I64;
}

}  // namespace

hal_status check_binary(hal_plugin_op op, hal_plugin_dtype dtype) {
  if (op < HAL_PLUGIN_BINARY_ADD || op > HAL_PLUGIN_BINARY_MINIMUM)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no binary op " + std::to_string(op));
  return computed(dtype) ? HAL_STATUS_OK : unsupported_dtype("binary ops", dtype);
}

hal_status check_unary(hal_plugin_op op, hal_plugin_dtype dtype) {
  if (op < HAL_PLUGIN_UNARY_NEG || op > HAL_PLUGIN_UNARY_SILU)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no unary op " + std::to_string(op));
  const bool integer = dtype == HAL_PLUGIN_DTYPE_I32 || dtype == HAL_PLUGIN_DTYPE_I64;
  if (integer && op > HAL_PLUGIN_UNARY_RELU)
    return fail(HAL_STATUS_UNSUPPORTED,
                "sim: unary op " + std::to_string(op) + " takes f32 and f64 only");
  return computed(dtype) ? HAL_STATUS_OK : unsupported_dtype("unary ops", dtype);
}

hal_status check_reduce(hal_plugin_op op, hal_plugin_dtype dtype) {
  if (op < HAL_PLUGIN_REDUCE_SUM || op > HAL_PLUGIN_REDUCE_ARGMAX)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no reduction " + std::to_string(op));
  if (op == HAL_PLUGIN_REDUCE_MEAN && dtype != HAL_PLUGIN_DTYPE_F32 &&
      dtype != HAL_PLUGIN_DTYPE_F64)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: mean takes f32 and f64 only");
  return computed(dtype) ? HAL_STATUS_OK : unsupported_dtype("reductions", dtype);
}

hal_status binary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& a,
                  const hal_plugin_tensor& b) {
  if (op < HAL_PLUGIN_BINARY_ADD || op > HAL_PLUGIN_BINARY_MINIMUM)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no binary op " + std::to_string(op));
  const bool known = with_type(out.dtype, [&]<class T>() {
    T* dst = data<T>(out);
    const T* x = data<T>(a);
    const T* y = data<T>(b);
    const int64_t n = count(out);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = apply_binary(op, x[offset_of(i, out.shape, a.strides, out.rank)],
                            y[offset_of(i, out.shape, b.strides, out.rank)]);
  });
  return known ? HAL_STATUS_OK : unsupported_dtype("binary ops", out.dtype);
}

hal_status unary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x) {
  if (op < HAL_PLUGIN_UNARY_NEG || op > HAL_PLUGIN_UNARY_SILU)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no unary op " + std::to_string(op));
  const bool integer = out.dtype == HAL_PLUGIN_DTYPE_I32 || out.dtype == HAL_PLUGIN_DTYPE_I64;
  if (integer && op > HAL_PLUGIN_UNARY_RELU)
    return fail(HAL_STATUS_UNSUPPORTED,
                "sim: unary op " + std::to_string(op) + " takes f32 and f64 only");
  const bool known = with_type(out.dtype, [&]<class T>() {
    T* dst = data<T>(out);
    const T* in = data<T>(x);
    const int64_t n = count(out);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = apply_unary(op, in[offset_of(i, out.shape, x.strides, out.rank)]);
  });
  return known ? HAL_STATUS_OK : unsupported_dtype("unary ops", out.dtype);
}

hal_status reduce(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x,
                  uint32_t axes) {
  if (op < HAL_PLUGIN_REDUCE_SUM || op > HAL_PLUGIN_REDUCE_ARGMAX)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no reduction " + std::to_string(op));
  // Kept and reduced dimensions of x, each with x's strides.
  int64_t kept[HAL_PLUGIN_MAX_RANK], kept_strides[HAL_PLUGIN_MAX_RANK];
  int64_t reduced[HAL_PLUGIN_MAX_RANK], reduced_strides[HAL_PLUGIN_MAX_RANK];
  uint32_t kept_rank = 0, reduced_rank = 0;
  int64_t outputs = 1, per_output = 1;
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (axes & (1u << d)) {
      reduced[reduced_rank] = x.shape[d];
      reduced_strides[reduced_rank++] = x.strides[d];
      per_output *= x.shape[d];
    } else {
      kept[kept_rank] = x.shape[d];
      kept_strides[kept_rank++] = x.strides[d];
      outputs *= x.shape[d];
    }
  }
  const bool known = with_type(x.dtype, [&]<class T>() {
    const T* in = data<T>(x);
    for (int64_t o = 0; o < outputs; ++o) {
      const T* base = in + offset_of(o, kept, kept_strides, kept_rank);
      // Integers sum exactly, wrapping in two's complement as hal's other backends do; floats
      // in double.
      double total = 0;
      uint64_t integer_total = 0;
      T best = T(0);
      int64_t best_at = -1;
      for (int64_t r = 0; r < per_output; ++r) {
        const T v = base[offset_of(r, reduced, reduced_strides, reduced_rank)];
        const bool v_nan = std::isnan(static_cast<double>(v));
        if constexpr (std::is_integral_v<T>)
          integer_total += static_cast<uint64_t>(v);
        else
          total += static_cast<double>(v);
        bool take = best_at < 0;
        if (!take && !std::isnan(static_cast<double>(best))) {
          if (op == HAL_PLUGIN_REDUCE_MIN)
            take = v_nan || v < best;
          else
            take = v_nan || v > best;
        }
        if (take) {
          best = v;
          best_at = r;
        }
      }
      if (op == HAL_PLUGIN_REDUCE_ARGMAX) {
        data<int64_t>(out)[o] = best_at;
      } else if (op == HAL_PLUGIN_REDUCE_SUM) {
        if constexpr (std::is_integral_v<T>)
          data<T>(out)[o] = static_cast<T>(integer_total);
        else
          data<T>(out)[o] = static_cast<T>(total);
      } else if (op == HAL_PLUGIN_REDUCE_MEAN) {
        data<T>(out)[o] = static_cast<T>(total / static_cast<double>(per_output));
      } else {
        data<T>(out)[o] = best;
      }
    }
  });
  return known ? HAL_STATUS_OK : unsupported_dtype("reductions", x.dtype);
}

hal_status matmul(const hal_plugin_gemm& g) {
  // Row by row, in double like the other ops: each row of C accumulates a[i][p] * B's row p
  // (a transposed B is read a column at a time), so the inner loop is contiguous and
  // vectorises. The host's time counts towards a paced device's deadline, so it must stay well
  // below the modelled time of a fleet's devices on a couple of host cores.
  auto run = [&]<class T>() {
    std::vector<double> row(static_cast<size_t>(g.n)), column(static_cast<size_t>(g.k));
    for (int64_t batch = 0; batch < g.batch; ++batch) {
      const T* a =
          reinterpret_cast<const T*>(g.a->bytes.get()) + g.a_offset + batch * g.a_batch_stride;
      const T* b =
          reinterpret_cast<const T*>(g.b->bytes.get()) + g.b_offset + batch * g.b_batch_stride;
      T* c = reinterpret_cast<T*>(g.c->bytes.get()) + g.c_offset + batch * g.c_batch_stride;
      for (int64_t i = 0; i < g.m; ++i) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int64_t p = 0; p < g.k; ++p) {
          const double x =
              static_cast<double>(g.a_transposed ? a[p * g.lda + i] : a[i * g.lda + p]);
          if (g.b_transposed) {
            column[static_cast<size_t>(p)] = x;
            continue;
          }
          const T* b_row = b + p * g.ldb;
          for (int64_t j = 0; j < g.n; ++j)
            row[static_cast<size_t>(j)] += x * static_cast<double>(b_row[j]);
        }
        if (g.b_transposed)
          for (int64_t j = 0; j < g.n; ++j) {
            const T* b_column = b + j * g.ldb;  // B's column j: row j of its memory
            double sum = 0;
            for (int64_t p = 0; p < g.k; ++p)
              sum += column[static_cast<size_t>(p)] * static_cast<double>(b_column[p]);
            row[static_cast<size_t>(j)] = sum;
          }
        for (int64_t j = 0; j < g.n; ++j)
          c[i * g.ldc + j] = static_cast<T>(row[static_cast<size_t>(j)]);
      }
    }
  };
  if (g.dtype == HAL_PLUGIN_DTYPE_F32)
    run.template operator()<float>();
  else if (g.dtype == HAL_PLUGIN_DTYPE_F64)
    run.template operator()<double>();
  else
    return fail(HAL_STATUS_UNSUPPORTED, "sim: matmul takes f32 and f64");
  return HAL_STATUS_OK;
}

}  // namespace sim

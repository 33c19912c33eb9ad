// The simulated device's built-in ops, computed on its arena: f32, f64, i32 and i64 elementwise,
// reductions over any set of dimensions, and matmul in f32 and f64. Integers wrap as hal's CPU
// backend's do, and every view is checked against its buffer when the op is enqueued.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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

// The product of `rank` sizes: 0 when one is 0, however large the others, whose product
// check_view bounds only for views with elements (as hal's numel).
int64_t product(const int64_t* sizes, uint32_t rank) {
  if (std::find(sizes, sizes + rank, 0) != sizes + rank) return 0;
  int64_t n = 1;
  for (uint32_t d = 0; d < rank; ++d) n *= sizes[d];
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

// Integer arithmetic wraps (two's complement) as on hardware and on hal's CPU backend
// (src/ops/host_element_functions.hpp): computed in the unsigned type, where C++ defines
// overflow, and converted back (modulo 2^N since C++20). Signed overflow would be undefined.
template <class T, class Fn>
T wrapping(T x, T y, Fn fn) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(fn(static_cast<U>(x), static_cast<U>(y))));
}

template <class T>
T apply_binary(hal_plugin_op op, T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    if (op == HAL_PLUGIN_BINARY_ADD) return wrapping(x, y, std::plus<>());
    if (op == HAL_PLUGIN_BINARY_SUB) return wrapping(x, y, std::minus<>());
    if (op == HAL_PLUGIN_BINARY_MUL) return wrapping(x, y, std::multiplies<>());
    if (op == HAL_PLUGIN_BINARY_DIV) {
      // As the CPU's: x / 0 is 0 and MIN / -1 wraps to MIN (both trap on x86; a device never
      // crashes on data).
      if (y == 0) return T(0);
      return y == T(-1) ? wrapping(T(0), x, std::minus<>()) : T(x / y);
    }
  } else {
    if (op == HAL_PLUGIN_BINARY_ADD) return x + y;
    if (op == HAL_PLUGIN_BINARY_SUB) return x - y;
    if (op == HAL_PLUGIN_BINARY_MUL) return x * y;
    if (op == HAL_PLUGIN_BINARY_DIV) return x / y;
    if (std::isnan(x) || std::isnan(y)) return x + y;  // maximum and minimum of NaN: NaN
  }
  if (op == HAL_PLUGIN_BINARY_MAXIMUM) return x > y ? x : y;
  return x < y ? x : y;  // minimum
}

template <class T>
T apply_unary(hal_plugin_op op, T x) {
  if constexpr (std::is_integral_v<T>) {
    const T negated = wrapping(T(0), x, std::minus<>());  // -MIN is MIN, as on the CPU
    if (op == HAL_PLUGIN_UNARY_NEG) return negated;
    if (op == HAL_PLUGIN_UNARY_ABS) return x < 0 ? negated : x;
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

// Bytes of an element of a computed dtype.
uint64_t element_size(hal_plugin_dtype dtype) {
  return dtype == HAL_PLUGIN_DTYPE_F64 || dtype == HAL_PLUGIN_DTYPE_I64 ? 8 : 4;
}

const char* const kBinaryNames[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
const char* const kUnaryNames[] = {"neg",   "abs",  "relu",    "exp",  "log", "sqrt",
                                   "rsqrt", "tanh", "sigmoid", "gelu", "silu"};
const char* const kReduceNames[] = {"sum", "mean", "max", "min", "argmax"};

std::string list(const int64_t* values, uint32_t count) {
  std::string text = "[";
  for (uint32_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// Row-major strides of `shape`, as the ops write `out` (contiguous, plugin.h) whatever strides
// it carries. A product that overflows saturates: check_view then refuses the view.
void contiguous(const int64_t* shape, uint32_t rank, int64_t* strides) {
  int64_t step = 1;
  for (uint32_t d = rank; d-- > 0;) {
    strides[d] = step;
    if (__builtin_mul_overflow(step, shape[d], &step)) step = std::numeric_limits<int64_t>::max();
  }
}

// Refuses, with INVALID_ARGUMENT naming the op and the operand, a view the op would read or
// write outside its buffer: `rank` dimensions of `shape` walked with `strides` (negative ones
// too) from element `offset`, `element` bytes each. hal checks its own tensors, but host memory
// (the arena) must not depend on every caller of the ABI doing so. A view of no elements
// reaches nothing whatever its offset and strides, as hal's tensors; the ops then read none.
hal_status check_view(const std::string& op, const char* operand, hal_plugin_buffer buffer,
                      uint64_t offset, const int64_t* shape, const int64_t* strides, uint32_t rank,
                      uint64_t element) {
  const std::string what = "sim: " + op + "'s operand " + operand;
  if (buffer == nullptr) return fail(HAL_STATUS_INVALID_ARGUMENT, what + " has no buffer");
  if (rank > HAL_PLUGIN_MAX_RANK)
    return fail(HAL_STATUS_INVALID_ARGUMENT, what + " has " + std::to_string(rank) +
                                                 " dimensions, more than " +
                                                 std::to_string(HAL_PLUGIN_MAX_RANK));
  bool empty = false, overflow = false;
  int64_t elements = 1;  // the ops count them in int64 (a broadcast view reaches fewer)
  for (uint32_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      return fail(HAL_STATUS_INVALID_ARGUMENT,
                  what + " has a negative size: shape " + list(shape, rank));
    empty = empty || shape[d] == 0;
    overflow = overflow || __builtin_mul_overflow(elements, shape[d], &elements);
  }
  if (empty) return HAL_STATUS_OK;
  if (overflow)
    return fail(HAL_STATUS_INVALID_ARGUMENT,
                what + " has more elements than int64 counts: shape " + list(shape, rank));
  // The furthest elements reached before and after `offset`, unless the arithmetic overflows.
  int64_t low = 0, high = 0;
  for (uint32_t d = 0; d < rank && !overflow; ++d) {
    int64_t span = 0;
    int64_t& side = strides[d] < 0 ? low : high;
    overflow = __builtin_mul_overflow(shape[d] - 1, strides[d], &span) ||
               __builtin_add_overflow(side, span, &side);
  }
  // In unsigned arithmetic: offset - (-low) and offset + high need not fit int64.
  const uint64_t capacity = buffer->size / element;
  const uint64_t before = uint64_t{0} - static_cast<uint64_t>(low);
  const uint64_t after = static_cast<uint64_t>(high);
  if (!overflow && offset >= before && offset < capacity && after < capacity - offset)
    return HAL_STATUS_OK;
  return fail(HAL_STATUS_INVALID_ARGUMENT,
              what + " (element offset " + std::to_string(offset) + ", shape " + list(shape, rank) +
                  ", strides " + list(strides, rank) + ") reaches outside its buffer of " +
                  std::to_string(capacity) + " elements");
}

// check_view of `out`, which the op writes contiguously with `shape`.
hal_status check_out(const std::string& op, const hal_plugin_tensor& out, const int64_t* shape,
                     uint32_t rank, uint64_t element) {
  int64_t strides[HAL_PLUGIN_MAX_RANK] = {};
  if (rank <= HAL_PLUGIN_MAX_RANK) contiguous(shape, rank, strides);
  return check_view(op, "out", out.buffer, out.offset, shape, strides, rank, element);
}

}  // namespace

hal_status check_binary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& a,
                        const hal_plugin_tensor& b) {
  if (op < HAL_PLUGIN_BINARY_ADD || op > HAL_PLUGIN_BINARY_MINIMUM)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no binary op " + std::to_string(op));
  if (!computed(out.dtype)) return unsupported_dtype("binary ops", out.dtype);
  // binary() reads a and b through out's shape, all three in out's dtype.
  const std::string name = kBinaryNames[op];
  const uint64_t element = element_size(out.dtype);
  if (hal_status status = check_out(name, out, out.shape, out.rank, element)) return status;
  if (hal_status status =
          check_view(name, "a", a.buffer, a.offset, out.shape, a.strides, out.rank, element))
    return status;
  return check_view(name, "b", b.buffer, b.offset, out.shape, b.strides, out.rank, element);
}

hal_status check_unary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x) {
  if (op < HAL_PLUGIN_UNARY_NEG || op > HAL_PLUGIN_UNARY_SILU)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no unary op " + std::to_string(op));
  const bool integer = out.dtype == HAL_PLUGIN_DTYPE_I32 || out.dtype == HAL_PLUGIN_DTYPE_I64;
  if (integer && op > HAL_PLUGIN_UNARY_RELU)
    return fail(HAL_STATUS_UNSUPPORTED,
                "sim: unary op " + std::to_string(op) + " takes f32 and f64 only");
  if (!computed(out.dtype)) return unsupported_dtype("unary ops", out.dtype);
  const std::string name = kUnaryNames[op];
  const uint64_t element = element_size(out.dtype);
  if (hal_status status = check_out(name, out, out.shape, out.rank, element)) return status;
  return check_view(name, "x", x.buffer, x.offset, out.shape, x.strides, out.rank, element);
}

hal_status check_reduce(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x,
                        uint32_t axes) {
  if (op < HAL_PLUGIN_REDUCE_SUM || op > HAL_PLUGIN_REDUCE_ARGMAX)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no reduction " + std::to_string(op));
  if (op == HAL_PLUGIN_REDUCE_MEAN && x.dtype != HAL_PLUGIN_DTYPE_F32 &&
      x.dtype != HAL_PLUGIN_DTYPE_F64)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: mean takes f32 and f64 only");
  if (!computed(x.dtype)) return unsupported_dtype("reductions", x.dtype);
  const std::string name = kReduceNames[op];
  if (hal_status status = check_view(name, "x", x.buffer, x.offset, x.shape, x.strides, x.rank,
                                     element_size(x.dtype)))
    return status;
  // reduce() writes x's kept dimensions in order, in x's dtype (argmax: i64 positions).
  int64_t kept[HAL_PLUGIN_MAX_RANK];
  uint32_t kept_rank = 0;
  for (uint32_t d = 0; d < x.rank; ++d)
    if (!(axes & (1u << d))) kept[kept_rank++] = x.shape[d];
  const uint64_t written = op == HAL_PLUGIN_REDUCE_ARGMAX ? 8 : element_size(x.dtype);
  return check_out(name, out, kept, kept_rank, written);
}

hal_status check_matmul(const hal_plugin_gemm& g) {
  if (g.dtype != HAL_PLUGIN_DTYPE_F32 && g.dtype != HAL_PLUGIN_DTYPE_F64)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: matmul takes f32 and f64");
  // Each operand is a [batch, rows, columns] view: rows ld apart, matrices batch_stride apart,
  // a transposed one holding its k x m (or n x k) matrix.
  const uint64_t element = element_size(g.dtype);
  const int64_t a_shape[] = {g.batch, g.a_transposed ? g.k : g.m, g.a_transposed ? g.m : g.k};
  const int64_t b_shape[] = {g.batch, g.b_transposed ? g.n : g.k, g.b_transposed ? g.k : g.n};
  const int64_t c_shape[] = {g.batch, g.m, g.n};
  const int64_t a_strides[] = {g.a_batch_stride, g.lda, 1};
  const int64_t b_strides[] = {g.b_batch_stride, g.ldb, 1};
  const int64_t c_strides[] = {g.c_batch_stride, g.ldc, 1};
  if (hal_status status =
          check_view("matmul", "a", g.a, g.a_offset, a_shape, a_strides, 3, element))
    return status;
  if (hal_status status =
          check_view("matmul", "b", g.b, g.b_offset, b_shape, b_strides, 3, element))
    return status;
  return check_view("matmul", "c", g.c, g.c_offset, c_shape, c_strides, 3, element);
}

hal_status binary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& a,
                  const hal_plugin_tensor& b) {
  if (op < HAL_PLUGIN_BINARY_ADD || op > HAL_PLUGIN_BINARY_MINIMUM)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: no binary op " + std::to_string(op));
  const int64_t n = product(out.shape, out.rank);
  if (n == 0) return HAL_STATUS_OK;  // check_view checked no view of no elements: read none
  const bool known = with_type(out.dtype, [&]<class T>() {
    T* dst = data<T>(out);
    const T* x = data<T>(a);
    const T* y = data<T>(b);
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
  const int64_t n = product(out.shape, out.rank);
  if (n == 0) return HAL_STATUS_OK;  // as in binary()
  const bool known = with_type(out.dtype, [&]<class T>() {
    T* dst = data<T>(out);
    const T* in = data<T>(x);
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
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (axes & (1u << d)) {
      reduced[reduced_rank] = x.shape[d];
      reduced_strides[reduced_rank++] = x.strides[d];
    } else {
      kept[kept_rank] = x.shape[d];
      kept_strides[kept_rank++] = x.strides[d];
    }
  }
  // With outputs, x has elements (checked) or the reduced sizes hold its 0 (no element read).
  const int64_t outputs = product(kept, kept_rank);
  if (outputs == 0) return HAL_STATUS_OK;
  const int64_t per_output = product(reduced, reduced_rank);
  const bool known = with_type(x.dtype, [&]<class T>() {
    // x's offset and strides were checked only if it has elements; without, none is read.
    const T* in = per_output == 0 ? nullptr : data<T>(x);
    for (int64_t o = 0; o < outputs; ++o) {
      const T* base = in ? in + offset_of(o, kept, kept_strides, kept_rank) : nullptr;
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
  // check_matmul checked no operand without elements, so none is pointed into: without C there
  // is nothing to do, and without A and B (k = 0) C holds empty sums.
  if (g.m == 0 || g.n == 0 || g.batch == 0) return HAL_STATUS_OK;
  // Row by row, in double like the other ops: each row of C accumulates a[i][p] * B's row p
  // (a transposed B is read a column at a time), so the inner loop is contiguous and
  // vectorises. The host's time counts towards a paced device's deadline, so it must stay well
  // below the modelled time of a fleet's devices on a couple of host cores.
  auto run = [&]<class T>() {
    std::vector<double> row(static_cast<size_t>(g.n)), column(static_cast<size_t>(g.k));
    for (int64_t batch = 0; batch < g.batch; ++batch) {
      T* c = reinterpret_cast<T*>(g.c->bytes.get()) + g.c_offset + batch * g.c_batch_stride;
      if (g.k == 0) {
        for (int64_t i = 0; i < g.m; ++i) std::fill_n(c + i * g.ldc, g.n, T(0));
        continue;
      }
      const T* a =
          reinterpret_cast<const T*>(g.a->bytes.get()) + g.a_offset + batch * g.a_batch_stride;
      const T* b =
          reinterpret_cast<const T*>(g.b->bytes.get()) + g.b_offset + batch * g.b_batch_stride;
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

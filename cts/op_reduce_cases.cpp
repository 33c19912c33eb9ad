// op.* for reductions, normalisation and matmul against plain loops on the host in double
// precision: any axes, keepdim, views, NaN and ties, reductions long enough to be split, exact
// integer sums; softmax on inputs that overflow exp() unshifted; matmul over transposed,
// strided, batched and vector operands. Each runs the dtypes `hal ops` lists for the device
// (CPU fallback off).
#include <array>
#include <cmath>
#include <limits>

#include "values.hpp"

namespace hal::cts {
namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);

struct ReduceCase {
  const char* name;
  ReduceFn op;
};

const ReduceCase kReductions[] = {
    {"sum", sum}, {"mean", mean}, {"max", max}, {"min", min}, {"argmax", argmax}};

std::string axes_text(const std::vector<int64_t>& axes) {
  std::string out = "{";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + std::to_string(axes[i]);
  return out + "}";
}

// The reference: every element of x (row-major values over `shape`) goes to the output its kept
// coordinates name, in row-major order of the reduced ones; then each output folds its list.
std::vector<double> reduce_reference(const std::string& op, const std::vector<double>& x,
                                     const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + int64_t(shape.size()) : a)] = true;
  int64_t outputs = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d]) outputs *= shape[d];
  std::vector<std::vector<double>> lists(static_cast<size_t>(outputs));
  std::vector<int64_t> index(shape.size(), 0);
  for (double v : x) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) o = o * shape[d] + index[d];
    lists[static_cast<size_t>(o)].push_back(v);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  std::vector<double> out;
  for (const auto& list : lists) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (op == "sum" || op == "mean") {
      double total = 0;
      for (double v : list) total += v;
      out.push_back(op == "sum" ? total : total / static_cast<double>(list.size()));
    } else if (op == "argmax") {
      size_t best = 0;
      for (size_t i = 1; i < list.size(); ++i)
        if (!std::isnan(list[best]) && (std::isnan(list[i]) || list[i] > list[best])) best = i;
      out.push_back(static_cast<double>(best));
    } else {
      double best = op == "max" ? -INFINITY : INFINITY;
      for (double v : list) {
        if (std::isnan(v)) best = nan;
        if (std::isnan(best)) break;
        best = op == "max" ? std::max(best, v) : std::min(best, v);
      }
      out.push_back(best);
    }
  }
  return out;
}

// Checks op(x) against the reference, x given by its values and shape: dtype, shape, values.
void check_reduction(const ReduceCase& c, const Tensor& x, const std::vector<double>& values,
                     const std::vector<int64_t>& axes, bool keepdim, const std::string& what,
                     Stream& stream) {
  const Tensor out = c.op(x, axes, keepdim, stream);
  const std::string op = c.name;
  // Sums of integers count in i64, u64's in u64 (PyTorch).
  const bool counts = op == "sum" && integral(x.dtype()) && x.dtype() != DType::u64;
  check(out.dtype() == (op == "argmax" || counts ? DType::i64 : x.dtype()),
        what + ": dtype " + std::string(to_string(out.dtype())));
  Shape want_shape;
  std::vector<bool> reduced(x.shape().size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + x.dim() : a)] = true;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (!reduced[d] || keepdim) want_shape.push_back(reduced[d] ? 1 : x.shape()[d]);
  check(out.shape() == want_shape, what + ": shape " + to_string(out.shape()));
  const auto want = reduce_reference(op, values, x.shape(), axes);
  const auto got = numbers(out, stream);
  check(got.size() == want.size(), what + ": the number of outputs");
  if (op == "argmax") {
    check(got == want, what + ": the indices");
    return;
  }
  // Sums round once per addition: the tolerance grows with the sum of magnitudes.
  std::vector<double> absolute = values;
  for (double& v : absolute) v = std::fabs(v);
  const auto magnitudes = reduce_reference("sum", absolute, x.shape(), axes);
  for (size_t i = 0; i < got.size(); ++i) {
    const double exact = want[i];
    const std::string at = what + " output " + std::to_string(i) + " is " + std::to_string(got[i]) +
                           ", expected " + std::to_string(exact);
    if (std::isnan(exact)) {
      check(std::isnan(got[i]), at);
      continue;
    }
    const double spread = op == "sum" ? magnitudes[i] : op == "mean" ? std::fabs(exact) : 0;
    const double allowed = std::max(tolerance(x.dtype(), exact), tolerance(x.dtype(), spread));
    check(std::fabs(got[i] - rounded(exact, x.dtype())) <= allowed, at);
  }
}

// op.reduce.<op>.any_axes: size-1, 0-d and empty shapes, negative axes, keepdim.
void any_axes(const Device& d, const ReduceCase& c) {
  const std::pair<Shape, std::vector<int64_t>> shapes[] = {
      {{7}, {}},
      {{3, 5}, {1}},
      {{3, 5}, {0}},
      {{3, 5}, {-1}},
      {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {}},
      {{4, 1, 3}, {1}},
      {{2, 3, 4}, {2, 1}},
      {{1}, {0}},
      {{}, {}},
      {{3, 0}, {0}},
      {{33, 257}, {1}},
      {{257, 33}, {0}},
      {{5, 6, 7}, {0, 1, 2}},
      // Columns of several matrices, and of one matrix in parts of its rows (the CPU reads
      // both a band of columns at a time, and combines the parts).
      {{3, 40, 17}, {1}},
      {{300, 20}, {0}},
  };
  std::vector<DType> dtypes = compute_dtypes();
  dtypes.insert(dtypes.end(), {DType::f16, DType::bf16, DType::i16, DType::u16, DType::u32,
                               DType::u64, DType::u8, DType::i8});
  if (std::string(c.name) == "mean") std::erase_if(dtypes, integral);
  Stream stream = d.create_stream();
  for_listed(d, {c.name}, dtypes, [&](DType dtype) {
    for (const auto& [shape, axes] : shapes)
      for (bool keepdim : {false, true}) {
        const std::string what = describe(c.name, dtype) + " of " + to_string(shape) + " over " +
                                 axes_text(axes) + (keepdim ? " keepdim" : "");
        const auto values = inputs(static_cast<size_t>(numel(shape)), dtype, 21);
        check_reduction(c, make(values, shape, dtype, stream), values, axes, keepdim, what, stream);
      }
  });
}

// op.reduce.<op>.views: transposed, sliced, permuted and expanded inputs.
void reduce_views(const Device& d, const ReduceCase& c) {
  Stream stream = d.create_stream();
  for_listed(d, {c.name}, {DType::f32}, [&](DType) {
    const auto values = inputs(120, DType::f32, 22);
    const Tensor base = make(values, {4, 5, 6}, DType::f32, stream);
    const Tensor views[] = {base.transpose(0, 2), base.slice(1, 1, 5, 2), base.permute({1, 2, 0}),
                            base.slice(0, 1, 2).expand({3, 5, 6})};
    for (const Tensor& view : views)
      for (const std::vector<int64_t>& axes : {std::vector<int64_t>{0}, {1, 2}, {}, {-1}})
        check_reduction(c, view, numbers(view, stream), axes, false,
                        std::string(c.name) + " of " + view.describe() + " over " + axes_text(axes),
                        stream);
  });
}

// op.reduce.<op>.long: few outputs of many elements each, which a device may split (the CPU
// splits each output across its threads).
void long_reduction(const Device& d, const ReduceCase& c) {
  Stream stream = d.create_stream();
  for_listed(d, {c.name}, {DType::f32}, [&](DType) {
    const auto values = inputs(1 << 18, DType::f32, 23);
    const Tensor x = make(values, {2, 1 << 17}, DType::f32, stream);
    check_reduction(c, x, values, {1}, false, std::string(c.name) + " of 2 x 2^17", stream);
    check_reduction(c, x, values, {}, false, std::string(c.name) + " of all 2^18", stream);
  });
}

// Applies fn to each line of `shape` along `axis` (values row-major), in place.
template <class Fn>
void along_axis(std::vector<double>& values, const Shape& shape, size_t axis, Fn fn) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t size = shape[axis], outer = numel(shape) / (size * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double*> line;
      for (int64_t k = 0; k < size; ++k)
        line.push_back(&values[static_cast<size_t>((o * size + k) * inner + i)]);
      fn(line);
    }
}

const std::vector<DType> kFloating{DType::f32, DType::f16, DType::bf16, DType::f64};

// op.softmax.stable and op.log_softmax.stable: inputs up to 90, where exp() overflows f32.
void softmax_values(const Device& d, bool logarithm) {
  const std::pair<Shape, int64_t> shapes[] = {{{4, 10}, -1}, {{3, 5, 2}, 1}, {{6}, 0}};
  Stream stream = d.create_stream();
  for_listed(d, {logarithm ? "log_softmax" : "softmax"}, kFloating, [&](DType dtype) {
    for (const auto& [shape, axis] : shapes) {
      const auto x = inputs(static_cast<size_t>(numel(shape)), dtype, 31, -90, 90);
      const Tensor in = make(x, shape, dtype, stream);
      const Tensor out = logarithm ? log_softmax(in, axis, stream) : softmax(in, axis, stream);
      std::vector<double> want = x;
      along_axis(want, shape, static_cast<size_t>(axis < 0 ? axis + int64_t(shape.size()) : axis),
                 [&](std::vector<double*>& line) {
                   double top = -INFINITY, total = 0;
                   for (double* v : line) top = std::max(top, *v);
                   for (double* v : line) total += std::exp(*v - top);
                   for (double* v : line)
                     *v = logarithm ? *v - top - std::log(total) : std::exp(*v - top) / total;
                 });
      for (double& v : want) v = rounded(v, dtype);
      // log-softmax values reach -180: the tolerance is relative.
      check_close(numbers(out, stream), want, dtype,
                  describe(logarithm ? "log_softmax" : "softmax", dtype) + " " + to_string(shape));
    }
    if (logarithm && (dtype == DType::f32 || dtype == DType::f64)) {
      // Far from 0: x - (top + log(total)) rounds the log away ([1e6, 1e6] gave -0.6875 each).
      const Tensor far = make({1e6, 1e6, 3e4, 3e4 - 1}, {2, 2}, dtype, stream);
      const double tail = std::log(1 + std::exp(-1.0));
      check_close(numbers(log_softmax(far, 1, stream), stream),
                  {-std::log(2.0), -std::log(2.0), -tail, -1 - tail}, dtype,
                  describe("log_softmax", dtype) + " far from 0");
    }
  });
}

// op.layer_norm_and_rms_norm: over the last one and two dimensions, with and without weights.
void norms(const Device& d) {
  const Shape shape{4, 6, 8};
  Stream stream = d.create_stream();
  for_listed(d, {"layer_norm", "rms_norm"}, kFloating, [&](DType dtype) {
    for (const Shape& normalized : {Shape{8}, Shape{6, 8}}) {
      const auto x = inputs(static_cast<size_t>(numel(shape)), dtype, 32, -4, 4);
      const auto w = inputs(static_cast<size_t>(numel(normalized)), dtype, 33, 0.5, 2);
      const auto b = inputs(static_cast<size_t>(numel(normalized)), dtype, 34, -1, 1);
      const Tensor in = make(x, shape, dtype, stream), weight = make(w, normalized, dtype, stream),
                   bias = make(b, normalized, dtype, stream);
      const auto group = static_cast<size_t>(numel(normalized));
      std::vector<double> want_layer(x.size()), want_rms(x.size());
      for (size_t start = 0; start < x.size(); start += group) {
        double m = 0, var = 0, squares = 0;
        for (size_t i = 0; i < group; ++i) m += x[start + i] / static_cast<double>(group);
        for (size_t i = 0; i < group; ++i) {
          var += (x[start + i] - m) * (x[start + i] - m) / static_cast<double>(group);
          squares += x[start + i] * x[start + i] / static_cast<double>(group);
        }
        for (size_t i = 0; i < group; ++i) {
          want_layer[start + i] =
              rounded((x[start + i] - m) / std::sqrt(var + 1e-5) * w[i] + b[i], dtype);
          want_rms[start + i] = rounded(x[start + i] / std::sqrt(squares + 1e-5) * w[i], dtype);
        }
      }
      const std::string what = std::string(to_string(dtype)) + " over " + to_string(normalized);
      check_close(numbers(layer_norm(in, normalized, weight, bias, 1e-5, stream), stream),
                  want_layer, dtype, "layer_norm " + what);
      check_close(numbers(rms_norm(in, normalized, weight, 1e-5, stream), stream), want_rms, dtype,
                  "rms_norm " + what);
      // Without weight and bias: plain normalisation, mean 0 per group.
      const auto plain = numbers(layer_norm(in, normalized, Tensor(), Tensor(), 0, stream), stream);
      double total = 0;
      for (size_t i = 0; i < group; ++i) total += plain[i];
      check(std::fabs(total / static_cast<double>(group)) <= 50 * tolerance(dtype, 1),
            "layer_norm " + what + " without weights: the mean is " +
                std::to_string(total / static_cast<double>(group)));
    }
  });
}

// x's gradient through layer_norm (centred) or rms_norm in double, a group of `group` at a
// time: rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w (w empty: 1).
std::vector<double> norm_gradient(bool centred, const std::vector<double>& x,
                                  const std::vector<double>& dy, const std::vector<double>& w,
                                  size_t group, double eps) {
  std::vector<double> dx(x.size());
  const auto n = static_cast<double>(group);
  for (size_t start = 0; start < x.size(); start += group) {
    double m = 0, var = 0;
    if (centred)
      for (size_t i = 0; i < group; ++i) m += x[start + i] / n;
    for (size_t i = 0; i < group; ++i) var += (x[start + i] - m) * (x[start + i] - m) / n;
    const double rstd = 1 / std::sqrt(var + eps);
    std::vector<double> g(group), xhat(group);
    double mean_g = 0, mean_g_xhat = 0;
    for (size_t i = 0; i < group; ++i) {
      g[i] = dy[start + i] * (w.empty() ? 1.0 : w[i]);
      xhat[i] = (x[start + i] - m) * rstd;
      mean_g += g[i] / n;
      mean_g_xhat += g[i] * xhat[i] / n;
    }
    for (size_t i = 0; i < group; ++i)
      dx[start + i] = rstd * (g[i] - (centred ? mean_g : 0) - xhat[i] * mean_g_xhat);
  }
  return dx;
}

// op.norm_backward: layer_norm_backward and rms_norm_backward against the double reference,
// over rows of 8, 37 (past a vector's lanes, with a tail) and 6 x 8, with and without a weight,
// a broadcast view as the gradient, and a row of equal values (variance 0: eps keeps it finite).
void norm_backward(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"layer_norm_backward", "rms_norm_backward"}, kFloating, [&](DType dtype) {
    for (const Shape& normalized : {Shape{8}, Shape{37}, Shape{6, 8}}) {
      Shape shape{3};
      shape.insert(shape.end(), normalized.begin(), normalized.end());
      const auto count = static_cast<size_t>(numel(shape));
      const auto group = static_cast<size_t>(numel(normalized));
      auto x = inputs(count, dtype, 41, -4, 4);
      for (size_t i = 0; i < group; ++i) x[i] = rounded(1.5, dtype);  // row 0: all equal
      const auto dy = inputs(count, dtype, 42, -1, 1);
      const auto w = inputs(group, dtype, 43, 0.5, 2);
      const Tensor in = make(x, shape, dtype, stream), weight = make(w, normalized, dtype, stream);
      const Tensor grad = make(dy, shape, dtype, stream);
      const std::string what = std::string(to_string(dtype)) + " over " + to_string(normalized);
      for (bool centred : {true, false}) {
        const char* op = centred ? "layer_norm_backward" : "rms_norm_backward";
        const auto run = [&](const Tensor& g, const Tensor& w_t) {
          return centred ? layer_norm_backward(in, g, normalized, w_t, 1e-5, stream)
                         : rms_norm_backward(in, g, normalized, w_t, 1e-5, stream);
        };
        const std::vector<double> want = norm_gradient(centred, x, dy, w, group, 1e-5);
        std::vector<double> want_rounded(want.size());
        for (size_t i = 0; i < want.size(); ++i) want_rounded[i] = rounded(want[i], dtype);
        check_close(numbers(run(grad, weight), stream), want_rounded, dtype,
                    std::string(op) + " " + what);
        const std::vector<double> plain = norm_gradient(centred, x, dy, {}, group, 1e-5);
        for (size_t i = 0; i < plain.size(); ++i) want_rounded[i] = rounded(plain[i], dtype);
        check_close(numbers(run(grad, Tensor()), stream), want_rounded, dtype,
                    std::string(op) + " " + what + " without a weight");
        // The same gradient held as a broadcast view (every row the first) gives the first
        // row's reference in every row.
        const Tensor first_rows = grad.slice(0, 0, 1).expand(shape);
        std::vector<double> dy_first(count);
        for (size_t i = 0; i < count; ++i) dy_first[i] = dy[i % group];
        const std::vector<double> broadcast = norm_gradient(centred, x, dy_first, w, group, 1e-5);
        for (size_t i = 0; i < broadcast.size(); ++i)
          want_rounded[i] = rounded(broadcast[i], dtype);
        check_close(numbers(run(first_rows, weight), stream), want_rounded, dtype,
                    std::string(op) + " " + what + " with a broadcast gradient");
      }
    }
  });
}

std::vector<double> matmul_values(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<double> out(n);
  for (double& v : out) v = static_cast<float>(value(random));  // exact in f32 too
  return out;
}

// The reference: row-major m x k times k x n.
std::vector<double> product(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                            int64_t k, int64_t n) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t col = 0; col < n; ++col) c[r * n + col] += a[r * k + p] * b[p * n + col];
  return c;
}

void check_product(const Tensor& got, const std::vector<double>& want, int64_t k,
                   const std::string& what, Stream& stream) {
  const std::vector<double> values = numbers(got, stream);
  check(values.size() == want.size(), what + ": the number of elements");
  const double allowed = got.dtype() == DType::f32 ? 1e-5 * static_cast<double>(k + 1) : 1e-12;
  for (size_t i = 0; i < values.size(); ++i)
    check(std::fabs(values[i] - want[i]) <= allowed, what + " element " + std::to_string(i) +
                                                         " is " + std::to_string(values[i]) +
                                                         ", expected " + std::to_string(want[i]));
}

// op.matmul.sizes: 1x1x1 up to 64x64x64.
void matmul_sizes(const Device& d) {
  const std::array<int64_t, 3> sizes[] = {{1, 1, 1}, {3, 4, 5}, {17, 33, 9}, {64, 64, 64}};
  Stream stream = d.create_stream();
  for_listed(d, {"matmul"}, {DType::f32, DType::f64}, [&](DType dtype) {
    for (const auto& [m, k, n] : sizes) {
      const auto a = matmul_values(static_cast<size_t>(m * k), 1);
      const auto b = matmul_values(static_cast<size_t>(k * n), 2);
      const Tensor c =
          matmul(make(a, {m, k}, dtype, stream), make(b, {k, n}, dtype, stream), stream);
      const std::string what = std::to_string(m) + "x" + std::to_string(k) + "x" +
                               std::to_string(n) + " " + std::string(to_string(dtype));
      check(c.shape() == Shape{m, n}, what + ": shape " + to_string(c.shape()));
      check_product(c, product(a, b, m, k, n), k, what, stream);
    }
  });
}

// op.matmul.transposed_and_strided: operands stored transposed reach the BLAS as they are;
// every other column of a wider matrix has neither rows nor columns contiguous.
void matmul_views(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"matmul"}, {DType::f32}, [&](DType) {
    const int64_t m = 6, k = 5, n = 7;
    const auto a = matmul_values(m * k, 3), b = matmul_values(k * n, 4);
    const std::vector<double> want = product(a, b, m, k, n);
    std::vector<double> a_t(a.size()), b_t(b.size());
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) a_t[c * m + r] = a[r * k + c];
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c) b_t[c * k + r] = b[r * n + c];
    const Tensor at = make(a_t, {k, m}, DType::f32, stream).transpose(0, 1);
    const Tensor bt = make(b_t, {n, k}, DType::f32, stream).transpose(0, 1);
    const Tensor bb = make(b, {k, n}, DType::f32, stream);
    check_product(matmul(at, bt, stream), want, k, "A^T-stored @ B^T-stored", stream);
    check_product(matmul(at, bb, stream), want, k, "A^T-stored @ B", stream);
    std::vector<double> wide(static_cast<size_t>(m * k * 2), 9.0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) wide[r * 2 * k + 2 * c] = a[r * k + c];
    const Tensor strided = make(wide, {m, 2 * k}, DType::f32, stream).slice(1, 0, 2 * k, 2);
    check_product(matmul(strided, bb, stream), want, k, "strided A @ B", stream);
  });
}

// op.matmul.batches_and_vectors: broadcast batches, vectors that squeeze, an empty inner
// dimension.
void matmul_batches(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"matmul"}, {DType::f32}, [&](DType) {
    const int64_t m = 4, k = 5, n = 6;
    const auto a = matmul_values(2 * m * k, 5), b = matmul_values(3 * k * n, 6);
    // [2, 1, m, k] @ [3, k, n] -> [2, 3, m, n]: entry (i, j) is a[i] @ b[j].
    const Tensor c = matmul(make(a, {2, 1, m, k}, DType::f32, stream),
                            make(b, {3, k, n}, DType::f32, stream), stream);
    check(c.shape() == Shape{2, 3, m, n}, "batched shape " + to_string(c.shape()));
    const std::vector<double> got = numbers(c, stream);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const std::vector<double> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
        const std::vector<double> bj(b.begin() + j * k * n, b.begin() + (j + 1) * k * n);
        const std::vector<double> want = product(ai, bj, m, k, n);
        for (int64_t e = 0; e < m * n; ++e)
          check(std::fabs(got[static_cast<size_t>((i * 3 + j) * m * n + e)] - want[e]) <= 1e-4,
                "batch " + std::to_string(i) + "," + std::to_string(j));
      }
    const auto v = matmul_values(k, 7);
    const Tensor vector = make(v, {k}, DType::f32, stream);
    const Tensor row =
        matmul(vector, make(b, {3, k, n}, DType::f32, stream).slice(0, 0, 1).squeeze(0), stream);
    check(row.shape() == Shape{n}, "vector @ matrix: shape " + to_string(row.shape()));
    check_product(row, product(v, b, 1, k, n), k, "vector @ matrix", stream);
    const Tensor column = matmul(make(a, {2 * m, k}, DType::f32, stream), vector, stream);
    check(column.shape() == Shape{2 * m}, "matrix @ vector: shape " + to_string(column.shape()));
    check_product(column, product(a, v, 2 * m, k, 1), k, "matrix @ vector", stream);
    // A batch of matrices times one vector: one product of the stacked rows, squeezed too.
    const Tensor batched = matmul(make(a, {2, m, k}, DType::f32, stream), vector, stream);
    check(batched.shape() == Shape{2, m},
          "batch of matrices @ vector: shape " + to_string(batched.shape()));
    check_product(batched.reshape({2 * m}), product(a, v, 2 * m, k, 1), k,
                  "batch of matrices @ vector", stream);
    const Tensor empty_sum =
        matmul(zeros({3, 0}, DType::f32, stream), zeros({0, 2}, DType::f32, stream), stream);
    check(numbers(empty_sum, stream) == std::vector<double>(6, 0.0),
          "an empty inner dimension gives zeros");
  });
}

// op.matmul.half_precision: f16 and bf16 products with an inner dimension of 1000 are within
// about one unit in the last place of the exact product of their (rounded) inputs: f32
// accumulation, rounded once at the end. Accumulating in the half type itself misses by tens.
void matmul_half(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"matmul"}, {DType::f16, DType::bf16}, [&](DType dtype) {
    const int64_t m = 9, k = 1000, n = 17;
    const auto a = inputs(static_cast<size_t>(m * k), dtype, 8, -1.0, 1.0);
    const auto b = inputs(static_cast<size_t>(k * n), dtype, 9, -1.0, 1.0);
    const Tensor c = matmul(make(a, {m, k}, dtype, stream), make(b, {k, n}, dtype, stream), stream);
    check(c.dtype() == dtype, "the product's dtype is " + std::string(to_string(c.dtype())));
    const std::vector<double> got = numbers(c, stream), want = product(a, b, m, k, n);
    const double unit = dtype == DType::f16 ? 0x1p-10 : 0x1p-7;  // relative spacing
    for (size_t i = 0; i < got.size(); ++i) {
      const double allowed = unit * std::fabs(want[i]) + 1e-6 * static_cast<double>(k);
      check(std::fabs(got[i] - want[i]) <= allowed,
            describe("matmul", dtype) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                std::to_string(n) + " element " + std::to_string(i) + " is " +
                std::to_string(got[i]) + ", expected " + std::to_string(want[i]) + " +- " +
                std::to_string(allowed));
    }
  });
}

}  // namespace

void add_op_reduce_cases(Cases& cases) {
  for (const ReduceCase& c : kReductions) {
    const std::string name = std::string("op.reduce.") + c.name;
    cases.push_back({name + ".any_axes", [&c](const Device& d) { any_axes(d, c); }});
    cases.push_back({name + ".views", [&c](const Device& d) { reduce_views(d, c); }});
    cases.push_back({name + ".long", [&c](const Device& d) { long_reduction(d, c); }});
  }
  cases.push_back(
      {"op.reduce.nan_wins_and_ties_go_to_the_first", [](const Device& d) {
         Stream stream = d.create_stream();
         for_listed(d, {"argmax", "max", "min", "sum"}, {DType::f32}, [&](DType) {
           const double nan = std::numeric_limits<double>::quiet_NaN();
           const Tensor x = make({1, 5, 5, 2, nan, 7, nan, 3}, {2, 4}, DType::f32, stream);
           check(argmax(x, {1}, false, stream).to_vector<int64_t>(stream) ==
                     std::vector<int64_t>{1, 0},
                 "argmax of rows");
           check(argmax(x, {}, false, stream).to_vector<int64_t>(stream) == std::vector<int64_t>{4},
                 "argmax of all");
           const auto maxima = max(x, {1}, false, stream).to_vector<float>(stream);
           check(maxima[0] == 5.0f && std::isnan(maxima[1]), "max of rows");
           check(std::isnan(min(x, {}, false, stream).to_vector<float>(stream)[0]), "min of all");
           check(std::isnan(sum(x, {1}, false, stream).to_vector<float>(stream)[1]),
                 "sum of a row with NaN");
           // Over columns: one NaN late in column 3 of 300 rows, past the first part of them.
           std::vector<double> tall(300 * 20, 1.0);
           tall[250 * 20 + 3] = nan;
           tall[260 * 20 + 3] = 9.0;
           const Tensor columns = make(tall, {300, 20}, DType::f32, stream);
           for (const bool largest : {true, false}) {
             const Tensor extreme =
                 largest ? max(columns, {0}, false, stream) : min(columns, {0}, false, stream);
             const auto values = extreme.to_vector<float>(stream);
             check(std::isnan(values[3]) && values[2] == 1.0f && values[4] == 1.0f,
                   std::string(largest ? "max" : "min") + " of columns with a NaN");
           }
           // Along rows long enough for vector kernels: a NaN in the tail of row 1, infinities
           // the extremes of row 2, row 0 finite with its maximum last and minimum first.
           std::vector<double> wide(3 * 1001);
           for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<double>(i % 97) - 40;
           wide[1000] = 99;
           wide[0] = -99;
           wide[1001 + 998] = nan;
           wide[2002 + 500] = std::numeric_limits<double>::infinity();
           wide[2002 + 3] = -std::numeric_limits<double>::infinity();
           const Tensor rows = make(wide, {3, 1001}, DType::f32, stream);
           const auto tops = max(rows, {1}, false, stream).to_vector<float>(stream);
           const auto bottoms = min(rows, {1}, false, stream).to_vector<float>(stream);
           check(tops[0] == 99 && std::isnan(tops[1]) && std::isinf(tops[2]) && tops[2] > 0,
                 "max of long rows");
           check(bottoms[0] == -99 && std::isnan(bottoms[1]) && std::isinf(bottoms[2]) &&
                     bottoms[2] < 0,
                 "min of long rows");
           // argmax of columns: the first NaN, a late maximum, and the first of two equal ones
           // far apart (in different parts of the rows where a device splits them).
           tall[200 * 20 + 5] = 5.0;
           tall[10 * 20 + 6] = 7.0;
           tall[290 * 20 + 6] = 7.0;
           const auto picks = argmax(make(tall, {300, 20}, DType::f32, stream), {0}, false, stream)
                                  .to_vector<int64_t>(stream);
           check(picks[3] == 250 && picks[5] == 200 && picks[6] == 10 && picks[0] == 0,
                 "argmax of columns gave " + std::to_string(picks[3]) + ", " +
                     std::to_string(picks[5]) + ", " + std::to_string(picks[6]) + ", " +
                     std::to_string(picks[0]));
         });
       }});
  cases.push_back(
      {"op.reduce.empty", [](const Device& d) {
         Stream stream = d.create_stream();
         for_listed(d, {"sum", "mean", "max"}, {DType::f32}, [&](DType) {
           const Tensor x = zeros({3, 0}, DType::f32, stream);
           check(sum(x, {1}, false, stream).to_vector<float>(stream) == std::vector<float>{0, 0, 0},
                 "a sum of nothing is 0");
           for (float m : mean(x, {1}, false, stream).to_vector<float>(stream))
             check(std::isnan(m), "a mean of nothing is NaN");
           check(sum(x, {0}, false, stream).shape() == Shape{0}, "sum's shape");
           check(max(x, {0}, false, stream).shape() == Shape{0}, "no outputs: nothing to refuse");
         });
       }});
  // Integer sums count in i64 and are exact, where a sum through double loses the 1s.
  cases.push_back({"op.sum.integers_exact_in_i64", [](const Device& d) {
                     Stream stream = d.create_stream();
                     for_listed(d, {"sum"}, {DType::i64}, [&](DType) {
                       const int64_t big[] = {int64_t{1} << 53, 1, 1};
                       check(sum(from_host(big, {3}, DType::i64, stream), {}, false, stream)
                                     .to_vector<int64_t>(stream) ==
                                 std::vector<int64_t>{(int64_t{1} << 53) + 2},
                             "2^53 + 1 + 1");
                       const int64_t wrap[] = {std::numeric_limits<int64_t>::max(), 2};
                       check(sum(from_host(wrap, {2}, DType::i64, stream), {}, false, stream)
                                     .to_vector<int64_t>(stream) ==
                                 std::vector<int64_t>{std::numeric_limits<int64_t>::min() + 1},
                             "i64 sums wrap in two's complement");
                     });
                   }});
  // A long f32 sum stays within a few units in the last place of the sum of its terms in
  // double (Vulkan's lanes added a 128th of it each, plainly: 5.6e-5 off at 1 Mi values).
  cases.push_back({"op.sum.long_f32_sums_stay_accurate", [](const Device& d) {
                     Stream stream = d.create_stream();
                     for_listed(d, {"sum", "mean"}, {DType::f32}, [&](DType) {
                       constexpr int64_t n = int64_t{1} << 20;
                       const Tensor tenths = full({n}, 0.1, DType::f32, stream);
                       const double want = static_cast<double>(n) * static_cast<double>(0.1f);
                       const double got =
                           sum(tenths, {}, false, stream).to_vector<float>(stream).at(0);
                       check(std::fabs(got - want) <= 4e-6 * want,
                             "sum of 2^20 values 0.1f: " + std::to_string(got) + ", expected " +
                                 std::to_string(want));
                       const double average =
                           mean(tenths, {}, false, stream).to_vector<float>(stream).at(0);
                       check(std::fabs(average - 0.1f) <= 4e-6 * 0.1,
                             "mean of 2^20 values 0.1f: " + std::to_string(average));
                     });
                   }});
  cases.push_back(
      {"op.sum.i32_and_bool_count_in_i64", [](const Device& d) {
         Stream stream = d.create_stream();
         for_listed(d, {"sum", "mean"}, {DType::i32}, [&](DType) {
           const int32_t narrow[] = {std::numeric_limits<int32_t>::max(), 1};
           const Tensor total = sum(from_host(narrow, {2}, DType::i32, stream), {}, false, stream);
           check(total.dtype() == DType::i64, "sum of i32 counts in i64 (PyTorch)");
           check(total.to_vector<int64_t>(stream) == std::vector<int64_t>{int64_t{1} << 31},
                 "2^31 - 1 + 1");
           const Tensor average =
               mean(make({1, 2, 4, 4}, {4}, DType::i32, stream), {}, false, stream);
           check(average.dtype() == DType::f32, "mean of i32 is f32");
           check(average.to_vector<float>(stream) == std::vector<float>{2.75f},
                 "mean of 1, 2, 4, 4");
         });
         if (supports_op(d, "sum", DType::boolean)) {
           const Tensor flags = make({1, 0, 1, 1}, {4}, DType::boolean, stream);
           check(
               sum(flags, {}, false, stream).to_vector<int64_t>(stream) == std::vector<int64_t>{3},
               "sum of bool counts");
         }
       }});
  for (bool logarithm : {false, true})
    cases.push_back({logarithm ? "op.log_softmax.stable" : "op.softmax.stable",
                     [logarithm](const Device& d) { softmax_values(d, logarithm); }});
  cases.push_back({"op.layer_norm_and_rms_norm", norms});
  cases.push_back({"op.norm_backward", norm_backward});
  cases.push_back({"op.matmul.sizes", matmul_sizes});
  cases.push_back({"op.matmul.transposed_and_strided", matmul_views});
  cases.push_back({"op.matmul.batches_and_vectors", matmul_batches});
  cases.push_back({"op.matmul.half_precision", matmul_half});
}

}  // namespace hal::cts

// ONNX's Det: the determinant of each [n, n] matrix of X [..., n, n], worked out on the host
// (the values read back, Gaussian elimination with partial pivoting in double, the results
// uploaded), as NumPy's and onnxruntime's LU factorisations give it. Small matrices are what
// models take determinants of; a product of pivots in double keeps their rounding to f32's.
#include <cmath>
#include <utility>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// The determinant of the n x n matrix at `a` (overwritten by its elimination).
double determinant(double* a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r)
      if (std::fabs(a[r * n + k]) > std::fabs(a[pivot * n + k])) pivot = r;
    if (a[pivot * n + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[k * n + c], a[pivot * n + c]);
      det = -det;
    }
    det *= a[k * n + k];
    for (int64_t r = k + 1; r < n; ++r) {
      const double factor = a[r * n + k] / a[k * n + k];
      for (int64_t c = k + 1; c < n; ++c) a[r * n + c] -= factor * a[k * n + c];
    }
  }
  return det;
}

Outputs det(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (x.dim() < 2 || x.size(-1) != x.size(-2))
    ctx.invalid("X " + to_string(x.shape()) + " is not [..., n, n]");
  if (!is_floating(x.dtype()))
    ctx.unsupported("X of " + std::string(to_string(x.dtype())) + ": floating types only");
  const int64_t n = x.size(-1);
  std::vector<double> values = ctx.read_values(x.contiguous(ctx.stream()));
  const Shape shape(x.shape().begin(), x.shape().end() - 2);
  std::vector<double> dets;
  for (size_t at = 0; at < values.size(); at += static_cast<size_t>(n * n))
    dets.push_back(determinant(values.data() + at, n));
  if (n == 0) dets.assign(static_cast<size_t>(numel(shape)), 1.0);  // the empty product
  Stream& s = ctx.stream();
  return {upload_values(dets, shape, x.dtype(), s)};
}

}  // namespace

std::vector<OnnxOp> det_onnx_ops() { return {{"Det", 11, det}}; }

}  // namespace hal::model

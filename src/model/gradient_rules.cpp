// One backward rule per op, each from hal's ops; `dy` is the gradient of the op's (first)
// output. Operands that broadcast get their gradient summed back to their own shape (sum_to).
// The arithmetic autograd shares (sum_to, matmul's and softmax's gradients) is hal's
// (autograd/gradient_math.hpp).
#include "model/gradient_rules.hpp"

#include <map>
#include <numeric>

#include "autograd/gradient_math.hpp"
#include "hal/ops.hpp"

namespace hal::model {
namespace {

using autograd::log_softmax_backward;
using autograd::softmax_backward;
using autograd::sum_to;

using Grads = std::vector<Tensor>;

bool wanted(const Backward& b, size_t input) {
  return input < b.wanted.size() && b.wanted[input] && input < b.inputs.size() &&
         b.inputs[input].defined();
}

Tensor scalar(double value, const Tensor& like, Stream& s) {
  return full({}, value, like.dtype(), s);
}

// `grad` as the gradient of input `index`: summed over its broadcast dimensions, in its dtype.
Tensor to_input(const Backward& b, size_t index, const Tensor& grad) {
  Stream& s = b.ctx.stream();
  const Tensor& input = b.inputs[index];
  return as_dtype(sum_to(grad, input.shape(), s), input.dtype(), s);
}

// y = a + b, a - b: dy to a, +-dy to b. Sum: dy to each.
Grads add_rule(const Backward& b) {
  Grads g(b.inputs.size());
  for (size_t i = 0; i < g.size(); ++i)
    if (wanted(b, i)) g[i] = to_input(b, i, b.grads[0]);
  return g;
}
Grads sub_rule(const Backward& b) {
  Grads g(2);
  if (wanted(b, 0)) g[0] = to_input(b, 0, b.grads[0]);
  if (wanted(b, 1)) g[1] = to_input(b, 1, neg(b.grads[0], b.ctx.stream()));
  return g;
}

// y = a * b: dy * b to a, dy * a to b.
Grads mul_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  Grads g(2);
  if (wanted(b, 0)) g[0] = to_input(b, 0, mul(b.grads[0], b.inputs[1], s));
  if (wanted(b, 1)) g[1] = to_input(b, 1, mul(b.grads[0], b.inputs[0], s));
  return g;
}

// y = a / b: dy / b to a, -dy * y / b to b.
Grads div_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  Grads g(2);
  const Tensor over_b = div(b.grads[0], b.inputs[1], s);
  if (wanted(b, 0)) g[0] = to_input(b, 0, over_b);
  if (wanted(b, 1)) g[1] = to_input(b, 1, neg(mul(over_b, b.outputs[0], s), s));
  return g;
}

Grads neg_rule(const Backward& b) { return {neg(b.grads[0], b.ctx.stream())}; }

// Identity, Reshape, Flatten, Squeeze, Unsqueeze: the same elements in the input's shape (the
// shape and axes inputs have none).
Grads reshape_rule(const Backward& b) {
  Grads g(b.inputs.size());
  if (wanted(b, 0)) g[0] = b.grads[0].contiguous(b.ctx.stream()).reshape(b.inputs[0].shape());
  return g;
}

// y = a @ b with batch dimensions broadcast (autograd::matmul_backward).
Grads matmul_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& a = b.inputs[0];
  const Tensor& bm = b.inputs[1];
  autograd::MatmulGrads g =
      autograd::matmul_backward(a, bm, b.grads[0], wanted(b, 0), wanted(b, 1), s);
  Grads out(2);
  if (g.a.defined()) out[0] = as_dtype(g.a, a.dtype(), s);
  if (g.b.defined()) out[1] = as_dtype(g.b, bm.dtype(), s);
  return out;
}

// y = alpha * A' B' + beta * C (A', B' transposed where asked): dA' = alpha dy B'^T and
// dB' = alpha A'^T dy, transposed back; dC = beta dy summed to C's shape.
Grads gemm_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const bool trans_a = b.ctx.attr_int("transA", 0) != 0;
  const bool trans_b = b.ctx.attr_int("transB", 0) != 0;
  const double alpha = b.ctx.attr_float("alpha", 1.0f);
  const double beta = b.ctx.attr_float("beta", 1.0f);
  const Tensor a = trans_a ? b.inputs[0].transpose(0, 1) : b.inputs[0];
  const Tensor bm = trans_b ? b.inputs[1].transpose(0, 1) : b.inputs[1];
  const Tensor dy = alpha == 1.0 ? b.grads[0] : mul(b.grads[0], scalar(alpha, b.grads[0], s), s);
  Grads g(b.inputs.size());
  if (wanted(b, 0)) {
    const Tensor da = matmul(dy, bm.transpose(0, 1), s);
    g[0] = trans_a ? da.transpose(0, 1).contiguous(s) : da;
  }
  if (wanted(b, 1)) {
    const Tensor db = matmul(a.transpose(0, 1), dy, s);
    g[1] = trans_b ? db.transpose(0, 1).contiguous(s) : db;
  }
  if (wanted(b, 2))
    g[2] = to_input(b, 2, beta == 1.0 ? b.grads[0] : mul(b.grads[0], scalar(beta, dy, s), s));
  return g;
}

// dy where x > 0, else 0.
Grads relu_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& x = b.inputs[0];
  return {where(gt(x, scalar(0.0, x, s), s), b.grads[0], scalar(0.0, b.grads[0], s), s)};
}

// From the output y: sigmoid dy * y * (1 - y); tanh dy * (1 - y^2); exp dy * y; sqrt dy / 2y.
Grads sigmoid_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& y = b.outputs[0];
  return {mul(b.grads[0], mul(y, sub(scalar(1.0, y, s), y, s), s), s)};
}
Grads tanh_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& y = b.outputs[0];
  return {mul(b.grads[0], sub(scalar(1.0, y, s), mul(y, y, s), s), s)};
}
Grads exp_rule(const Backward& b) { return {mul(b.grads[0], b.outputs[0], b.ctx.stream())}; }
Grads sqrt_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& y = b.outputs[0];
  return {div(b.grads[0], mul(scalar(2.0, y, s), y, s), s)};
}
// log: dy / x.
Grads log_rule(const Backward& b) { return {div(b.grads[0], b.inputs[0], b.ctx.stream())}; }

// y = a^b: dy * b * a^(b - 1) to a; dy * y * log(a) to b (asked for only where the exponent
// depends on xs; a constant exponent gets none). As hal's autograd and PyTorch: 0 where the
// formula is 0 * inf but the derivative is 0, at b == 0 for a and at a == 0, b >= 0 for b.
Grads pow_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& a = b.inputs[0];
  const Tensor& e = b.inputs[1];
  const Tensor zero = scalar(0.0, b.grads[0], s);
  Grads g(2);
  if (wanted(b, 0)) {
    const Tensor e_a = as_dtype(e, a.dtype(), s);
    const Tensor slope = mul(e_a, pow(a, sub(e_a, scalar(1.0, e_a, s), s), s), s);
    const Tensor d = mul(b.grads[0], slope, s);
    g[0] = to_input(b, 0, where(eq(e_a, scalar(0.0, e_a, s), s), zero, d, s));
  }
  if (wanted(b, 1)) {
    const Tensor d = mul(b.grads[0], mul(b.outputs[0], log(a, s), s), s);
    const Tensor nonnegative = ge(e, scalar(0.0, e, s), s);
    g[1] = to_input(b, 1, where(eq(a, scalar(0.0, a, s), s), where(nonnegative, zero, d, s), d, s));
  }
  return g;
}

// Transpose: dy permuted back by the inverse of perm.
Grads transpose_rule(const Backward& b) {
  const int64_t rank = b.inputs[0].dim();
  std::vector<int64_t> perm = b.ctx.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(b.ctx.axis(perm[i], rank))] = static_cast<int64_t>(i);
  return {b.grads[0].permute(inverse).contiguous(b.ctx.stream())};
}

// The reduced axes of a ReduceSum/ReduceMean (axes an input from `axes_input_since`), counted
// from 0; empty with `identity` where noop_with_empty_axes leaves the input as it is.
struct Reduced {
  std::vector<int64_t> axes;
  bool identity = false;
};
Reduced reduced_axes(const Backward& b, int64_t axes_input_since) {
  const OpContext& ctx = b.ctx;
  const int64_t rank = b.inputs[0].dim();
  Reduced r;
  if (ctx.opset() >= axes_input_since) {
    if (b.inputs.size() > 1 && b.inputs[1].defined()) r.axes = ctx.read_ints(b.inputs[1]);
    r.identity = r.axes.empty() && ctx.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    r.axes = ctx.attr_ints("axes");
  }
  if (r.axes.empty() && !r.identity) {
    r.axes.resize(static_cast<size_t>(rank));
    std::iota(r.axes.begin(), r.axes.end(), 0);
  }
  for (int64_t& axis : r.axes) axis = ctx.axis(axis, rank);
  return r;
}

// dy spread back over the reduced axes (kept as size 1 first where keepdims=0 dropped them).
Tensor spread(const Backward& b, const Reduced& r) {
  const Tensor& x = b.inputs[0];
  Shape kept = x.shape();
  for (int64_t axis : r.axes) kept[static_cast<size_t>(axis)] = 1;
  const Tensor dy = b.grads[0].contiguous(b.ctx.stream()).reshape(kept);
  return dy.expand(x.shape()).contiguous(b.ctx.stream());
}

Grads reduce_sum_rule(const Backward& b) {
  const Reduced r = reduced_axes(b, 13);
  Grads g(b.inputs.size());
  g[0] = r.identity ? b.grads[0] : spread(b, r);
  return g;
}

Grads reduce_mean_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Reduced r = reduced_axes(b, 18);
  Grads g(b.inputs.size());
  if (r.identity) {
    g[0] = b.grads[0];
    return g;
  }
  int64_t count = 1;
  for (int64_t axis : r.axes) count *= b.inputs[0].size(axis);
  const Tensor dy = spread(b, r);
  g[0] = div(dy, scalar(static_cast<double>(count), dy, s), s);
  return g;
}

// Softmax and LogSoftmax over one axis (opset 13 on) or, before 13, over the input seen as
// [prod(dims before axis), prod(the rest)]: `rule` gets y and dy in that view, the axis.
template <Tensor (*rule)(const Tensor& y, const Tensor& dy, int64_t axis, Stream& s)>
Grads softmax_family_rule(const Backward& b) {
  Stream& s = b.ctx.stream();
  const Tensor& y = b.outputs[0];
  if (b.ctx.opset() >= 13) {
    const int64_t axis = b.ctx.axis(b.ctx.attr_int("axis", -1), y.dim());
    return {rule(y, b.grads[0], axis, s)};
  }
  const Shape flat = as_2d(b.ctx, y, b.ctx.attr_int("axis", 1));
  const Tensor dx =
      rule(y.contiguous(s).reshape(flat), b.grads[0].contiguous(s).reshape(flat), 1, s);
  return {dx.reshape(y.shape())};
}

const std::map<std::string_view, BackwardRule, std::less<>>& rules() {
  static const std::map<std::string_view, BackwardRule, std::less<>> table{
      {"Add", add_rule},
      {"Div", div_rule},
      {"Exp", exp_rule},
      {"Flatten", reshape_rule},
      {"Gemm", gemm_rule},
      {"Identity", reshape_rule},
      {"Log", log_rule},
      {"LogSoftmax", softmax_family_rule<log_softmax_backward>},
      {"MatMul", matmul_rule},
      {"Mul", mul_rule},
      {"Neg", neg_rule},
      {"Pow", pow_rule},
      {"ReduceMean", reduce_mean_rule},
      {"ReduceSum", reduce_sum_rule},
      {"Relu", relu_rule},
      {"Reshape", reshape_rule},
      {"Sigmoid", sigmoid_rule},
      {"Softmax", softmax_family_rule<softmax_backward>},
      {"Sqrt", sqrt_rule},
      {"Squeeze", reshape_rule},
      {"Sub", sub_rule},
      {"Sum", add_rule},
      {"Tanh", tanh_rule},
      {"Transpose", transpose_rule},
      {"Unsqueeze", reshape_rule},
  };
  return table;
}

}  // namespace

BackwardRule find_backward_rule(std::string_view op_type) {
  const auto found = rules().find(op_type);
  return found == rules().end() ? nullptr : found->second;
}

std::vector<std::string> differentiable_op_types() {
  std::vector<std::string> types;
  for (const auto& [type, rule] : rules()) types.emplace_back(type);
  return types;
}

}  // namespace hal::model

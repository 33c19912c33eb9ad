// ONNX's optimizers (domain ai.onnx.preview.training, opset 1): one step of Adagrad, Adam and
// Momentum over any number of (X, G, state...) groups, as the spec's pseudo code and ONNX's
// reference (onnx/reference/ops/aionnx_preview_training) write them. Built from hal's
// elementwise ops on the device holding the tensors: the step count T stays there too, its
// conditions (T > 0) taken with where() rather than read back.
#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// The inputs every optimizer shares: R and T, then `per_group` lists of `groups` tensors.
struct Step {
  Tensor rate;     // R as a scalar of X's dtype
  Tensor count;    // T as a scalar of X's dtype
  Tensor started;  // bool scalar: T > 0
  size_t groups = 0;
};

Tensor scalar(double value, const Tensor& like, Stream& s) {
  return full({}, value, like.dtype(), s);
}

// a * x, skipping the multiply where a is 1.
Tensor scaled(double a, const Tensor& x, Stream& s) {
  return a == 1.0 ? x : mul(scalar(a, x, s), x, s);
}

Step step_of(const OpContext& ctx, const Inputs& in, size_t per_group) {
  if (in.size() < 2 + per_group || (in.size() - 2) % per_group != 0)
    ctx.invalid("takes R, T and " + std::to_string(per_group) +
                " tensors per optimized tensor; got " + std::to_string(in.size()) + " inputs");
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].defined()) ctx.invalid("input " + std::to_string(i) + " is missing");
  const Tensor& r = in[0];
  const Tensor& t = in[1];
  const Tensor& x = in[2];
  if (r.numel() != 1 || t.numel() != 1)
    ctx.invalid("R and T must be scalars, got " + r.describe() + " and " + t.describe());
  if (t.dtype() != DType::i64) ctx.invalid("T must be int64, got " + t.describe());
  Stream& s = ctx.stream();
  Step step;
  step.groups = (in.size() - 2) / per_group;
  step.rate = as_dtype(r.reshape({}), x.dtype(), s);
  step.count = cast(t.reshape({}), x.dtype(), s);
  step.started = gt(t.reshape({}), full({}, 0, DType::i64, s), s);
  return step;
}

// norm_coefficient * X + G: the gradient of 0.5 * norm_coefficient * ||X||^2 added.
Tensor regularized(double norm_coefficient, const Tensor& x, const Tensor& g, Stream& s) {
  return norm_coefficient == 0.0 ? g : add(scaled(norm_coefficient, x, s), g, s);
}

// Inputs R, T, X..., G..., H...; outputs X_new..., H_new....
//   r = R / (1 + T * decay_factor); g = norm_coefficient * X + G
//   H_new = H + g * g; X_new = X - r * g / (sqrt(H_new) + epsilon)
Outputs adagrad(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Step step = step_of(ctx, in, 3);
  const double decay = ctx.attr_float("decay_factor", 0.0f);
  const double epsilon = ctx.attr_float("epsilon", 0.0f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const Tensor one = scalar(1.0, step.rate, s);
  const Tensor r = div(step.rate, add(one, scaled(decay, step.count, s), s), s);
  const size_t n = step.groups;
  Outputs out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = in[2 + i];
    const Tensor g = regularized(norm, x, in[2 + n + i], s);
    const Tensor h = add(in[2 + 2 * n + i], mul(g, g, s), s);
    const Tensor adaptive = add(sqrt(h, s), scalar(epsilon, h, s), s);
    out[i] = sub(x, div(mul(r, g, s), adaptive, s), s);
    out[n + i] = h;
  }
  return out;
}

// Inputs R, T, X..., G..., V..., H...; outputs X_new..., V_new..., H_new....
//   g = norm_coefficient * X + G
//   V_new = alpha * V + (1 - alpha) * g; H_new = beta * H + (1 - beta) * g * g
//   R_adjusted = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
//   X_new = (1 - norm_coefficient_post) * (X - R_adjusted * V_new / (sqrt(H_new) + epsilon))
Outputs adam(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Step step = step_of(ctx, in, 4);
  const double alpha = ctx.attr_float("alpha", 0.9f);
  const double beta = ctx.attr_float("beta", 0.999f);
  const double epsilon = ctx.attr_float("epsilon", 0.0f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const double norm_post = ctx.attr_float("norm_coefficient_post", 0.0f);
  const Tensor& t = step.count;
  const Tensor one = scalar(1.0, t, s);
  // At T = 0 the corrected rate divides by zero; where() takes R there.
  const Tensor corrected =
      div(mul(step.rate, sqrt(sub(one, pow(scalar(beta, t, s), t, s), s), s), s),
          sub(one, pow(scalar(alpha, t, s), t, s), s), s);
  const Tensor rate = where(step.started, corrected, step.rate, s);
  const size_t n = step.groups;
  Outputs out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = in[2 + i];
    const Tensor g = regularized(norm, x, in[2 + n + i], s);
    const Tensor v = add(scaled(alpha, in[2 + 2 * n + i], s), scaled(1.0 - alpha, g, s), s);
    const Tensor h =
        add(scaled(beta, in[2 + 3 * n + i], s), scaled(1.0 - beta, mul(g, g, s), s), s);
    const Tensor h_sqrt = add(sqrt(h, s), scalar(epsilon, h, s), s);
    const Tensor x_new = sub(x, div(mul(rate, v, s), h_sqrt, s), s);
    out[i] = norm_post == 0.0 ? x_new : scaled(1.0 - norm_post, x_new, s);
    out[n + i] = v;
    out[2 * n + i] = h;
  }
  return out;
}

// Inputs R, T, X..., G..., V...; outputs X_new..., V_new....
//   g = norm_coefficient * X + G; V_new = alpha * V + (T > 0 ? beta : 1) * g
//   standard: X_new = X - R * V_new; nesterov: X_new = X - R * (g + alpha * V_new)
Outputs momentum(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Step step = step_of(ctx, in, 3);
  for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!ctx.has(required)) ctx.invalid("needs attribute '" + std::string(required) + "'");
  const double alpha = ctx.attr_float("alpha", 0.0f);
  const double beta = ctx.attr_float("beta", 0.0f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const std::string mode = ctx.attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov")
    ctx.invalid("mode '" + mode + "' is neither 'standard' nor 'nesterov'");
  // The gradient's coefficient is 1 at the first step.
  const Tensor beta_adjusted =
      where(step.started, scalar(beta, step.rate, s), scalar(1.0, step.rate, s), s);
  const size_t n = step.groups;
  Outputs out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = in[2 + i];
    const Tensor g = regularized(norm, x, in[2 + n + i], s);
    const Tensor v = add(scaled(alpha, in[2 + 2 * n + i], s), mul(beta_adjusted, g, s), s);
    const Tensor direction = mode == "standard" ? v : add(g, scaled(alpha, v, s), s);
    out[i] = sub(x, mul(step.rate, direction, s), s);
    out[n + i] = v;
  }
  return out;
}

}  // namespace

std::vector<OnnxOp> optimizer_onnx_ops() {
  return {
      {.op_type = "Adagrad", .since = 1, .run = adagrad, .domain = kTrainingDomain},
      {.op_type = "Adam", .since = 1, .run = adam, .domain = kTrainingDomain},
      {.op_type = "Momentum", .since = 1, .run = momentum, .domain = kTrainingDomain},
  };
}

}  // namespace hal::model

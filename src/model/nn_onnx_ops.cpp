// ONNX's matrix products and normalisations, from hal's matmul (the device's BLAS), layer_norm
// and elementwise ops.
#include "hal/ops.hpp"
#include "model/fusion.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

Tensor constant(double value, const Tensor& like, const OpContext& ctx) {
  return full({}, value, like.dtype(), ctx.stream());
}

// The product then its epilogue, where the epilogue cannot go into it (a bias that is not
// [n] of the product's dtype: the Add broadcasting as ONNX's does).
Tensor with_epilogue(const Tensor& a, const Tensor& b, const Tensor& bias,
                     const std::string& activation, Stream& s) {
  const DType dtype = promote_types(a.dtype(), b.dtype());
  const bool fits = !bias.defined() || (b.dim() >= 2 && bias.dim() == 1 &&
                                        bias.size(0) == b.size(-1) && bias.dtype() == dtype);
  if (fits) return matmul(a, b, {bias, activation}, s);
  return activate(add(matmul(a, b, s), bias, s), activation, s);
}

Outputs matmul_of(const OpContext& ctx, const Inputs& in) {
  // Nodes fused in at load (fusion.hpp): a bias Add (input 2) and an activation after it.
  const std::string& fused = ctx.node().fused;
  if (fused.empty()) return {matmul(in.at(0), in.at(1), ctx.stream())};
  return {with_epilogue(in.at(0), in.at(1), in.at(2), std::string(fused_activation(fused)),
                        ctx.stream())};
}

// alpha * A' B' + beta * C, A' and B' transposed where asked: transposed views go to the BLAS
// as they are.
Outputs gemm(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  Tensor a = in.at(0), b = in.at(1);
  if (a.dim() != 2 || b.dim() != 2)
    ctx.invalid("A and B must be 2-d, got " + to_string(a.shape()) + " and " +
                to_string(b.shape()));
  if (ctx.attr_int("transA", 0)) a = a.transpose(0, 1);
  if (ctx.attr_int("transB", 0)) b = b.transpose(0, 1);
  const double alpha = ctx.attr_float("alpha", 1.0f);
  const double beta = ctx.attr_float("beta", 1.0f);
  // An activation fused in at load (fusion.hpp) and C, where they can, in the product's epilogue.
  const std::string activation(fused_activation(ctx.node().fused));
  const bool has_c = given(in, 2) && beta != 0.0;
  if (alpha == 1.0 && (!has_c || beta == 1.0))
    return {with_epilogue(a, b, has_c ? in[2] : Tensor(), activation, s)};
  Tensor y = matmul(a, b, s);
  if (alpha != 1.0) y = mul(y, constant(alpha, y, ctx), s);
  if (has_c) {
    const Tensor c = beta == 1.0 ? in[2] : mul(in[2], constant(beta, in[2], ctx), s);
    y = add(y, c, s);
  }
  return {activate(y, activation, s)};
}

// Per-channel parameters [C] seen as [C, 1, ...] against an [N, C, ...] input.
Tensor per_channel(const Tensor& p, int64_t rank) {
  Shape shape{p.numel()};
  shape.resize(static_cast<size_t>(std::max<int64_t>(rank - 1, 1)), 1);
  return p.reshape(shape);
}

// Training mode (opset 14 on, training_mode=1): the batch's own statistics per channel, over
// every axis but the channel's (an [N] input is one channel), the variance the population's
// (divided by N, as the spec and ONNX's reference say), computed in f32 for f16 and bf16.
// Outputs Y and, where asked, the running statistics moved towards the batch's by `momentum`:
// running = input * momentum + batch * (1 - momentum).
Outputs batch_norm_training(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const double momentum = ctx.attr_float("momentum", 0.9f);
  const int64_t rank = x.dim();
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1) axes.push_back(d);
  const bool narrow = x.dtype() == DType::f16 || x.dtype() == DType::bf16;
  const Tensor xf = narrow ? cast(x, DType::f32, s) : x;
  const Tensor batch_mean = mean(xf, axes, true, s);
  const Tensor centred = sub(xf, batch_mean, s);
  const Tensor batch_var = mean(mul(centred, centred, s), axes, true, s);
  const Tensor inv_std = rsqrt(add(batch_var, constant(eps, batch_var, ctx), s), s);
  const Tensor scale = per_channel(in.at(1), rank), bias = per_channel(in.at(2), rank);
  Outputs out{as_dtype(add(mul(mul(centred, inv_std, s), scale, s), bias, s), x.dtype(), s)};
  // In the running statistics' dtype (T2, which may differ from x's).
  auto running = [&](const Tensor& input, const Tensor& batch) {
    const Tensor per_channel_batch = as_dtype(batch.reshape({input.numel()}), input.dtype(), s);
    return add(mul(input, constant(momentum, input, ctx), s),
               mul(per_channel_batch, constant(1.0 - momentum, input, ctx), s), s);
  };
  const auto& outputs = ctx.node().outputs;
  if (outputs.size() > 1) out.push_back(running(in.at(3), batch_mean));
  if (outputs.size() > 2) out.push_back(running(in.at(4), batch_var));
  return out;
}

// Inference: (x - mean) / sqrt(var + eps) * scale + bias, with the running statistics. Y has
// x's dtype though the parameters' (T1, T2 from opset 15) may be wider.
Outputs batch_norm(const OpContext& ctx, const Inputs& in) {
  const size_t outputs = ctx.node().outputs.size();
  if (ctx.opset() < 14 && outputs > 1)
    ctx.unsupported(
        "the statistics outputs of opsets before 14 (mean, var, saved_mean, saved_var)");
  if (ctx.opset() >= 14 && ctx.attr_int("training_mode", 0) != 0)
    return batch_norm_training(ctx, in);
  if (outputs > 1) ctx.invalid("gives running statistics only in training mode");
  if (ctx.opset() < 9 && ctx.attr_int("spatial", 1) == 0)
    ctx.unsupported("spatial=0 (statistics per element, not per channel)");
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const int64_t rank = x.dim();
  const Tensor scale = per_channel(in.at(1), rank), bias = per_channel(in.at(2), rank);
  const Tensor mean = per_channel(in.at(3), rank), var = per_channel(in.at(4), rank);
  const Tensor inv_std = rsqrt(add(var, constant(eps, var, ctx), s), s);
  return {as_dtype(add(mul(mul(sub(x, mean, s), inv_std, s), scale, s), bias, s), x.dtype(), s)};
}

std::vector<int64_t> spatial_axes(const Tensor& x) {
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < x.dim(); ++d) axes.push_back(d);
  return axes;
}

// Statistics per instance and channel, over the spatial axes. An [N, C] input has none: as in
// ONNX's reference (NumPy's mean and var over no axes) each element is its own mean, of variance
// 0, so y is B (NaN where x is not finite). hal's mean over no axes would reduce every axis.
Outputs instance_norm(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  if (x.dim() < 2) ctx.invalid("expects [N, C, D1, ...], got " + to_string(x.shape()));
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const auto axes = spatial_axes(x);
  const auto mean_over = [&](const Tensor& t) { return axes.empty() ? t : mean(t, axes, true, s); };
  const Tensor centred = sub(x, mean_over(x), s);
  const Tensor var = mean_over(mul(centred, centred, s));
  const Tensor normalized = mul(centred, rsqrt(add(var, constant(eps, var, ctx), s), s), s);
  return {
      add(mul(normalized, per_channel(in.at(1), x.dim()), s), per_channel(in.at(2), x.dim()), s)};
}

// Opset 17: over the dimensions from `axis` on; the optional outputs are the mean and
// 1 / sqrt(var + eps), computed in f32 (stash_type 1) with the reduced dimensions kept.
Outputs layer_norm_of(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  const int64_t axis = ctx.axis(ctx.attr_int("axis", -1), x.dim());
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  auto as_normalized = [&](const Tensor& p) {
    return p.shape() == normalized ? p : p.expand(normalized).contiguous(s);
  };
  const Tensor scale = as_normalized(in.at(1));
  const Tensor bias = given(in, 2) ? as_normalized(in[2]) : Tensor();
  Outputs out{layer_norm(x, normalized, scale, bias, eps, s)};
  const auto& outputs = ctx.node().outputs;
  const bool wants_stats =
      (outputs.size() > 1 && !outputs[1].empty()) || (outputs.size() > 2 && !outputs[2].empty());
  if (wants_stats) {
    std::vector<int64_t> axes;
    for (int64_t d = axis; d < x.dim(); ++d) axes.push_back(d);
    const Tensor x32 = x.dtype() == DType::f32 ? x : cast(x, DType::f32, s);
    const Tensor mu = mean(x32, axes, true, s);
    const Tensor centred = sub(x32, mu, s);
    const Tensor var = mean(mul(centred, centred, s), axes, true, s);
    out.push_back(mu);
    out.push_back(rsqrt(add(var, full({}, eps, DType::f32, s), s), s));
  }
  return out;
}

// Local response normalisation across channels: x / (bias + alpha / size * the sum of x^2 over
// the `size` channels around each)^beta, the window from c - floor((size - 1) / 2) to
// c + ceil((size - 1) / 2), clipped at the edges (zeros padded in, then `size` shifted slices
// summed).
Outputs lrn(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  if (x.dim() < 3) ctx.invalid("expects [N, C, D1, ...], got " + to_string(x.shape()));
  const int64_t size = ctx.attr_int("size", 0);
  if (size < 1 || size > (int64_t{1} << 20))
    ctx.invalid("size " + std::to_string(size) + " (the window of channels) must be at least 1");
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f);
  const double bias = ctx.attr_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before, channels = x.size(1);
  std::vector<int64_t> pad_before(static_cast<size_t>(x.dim()), 0), pad_after = pad_before;
  pad_before[1] = before;
  pad_after[1] = after;
  const Tensor squares = pad_constant(ctx, mul(x, x, s), pad_before, pad_after, 0.0);
  Tensor window = squares.slice(1, 0, channels).contiguous(s);
  for (int64_t offset = 1; offset < size; ++offset)
    window = add(window, squares.slice(1, offset, offset + channels), s);
  const Tensor scaled = add(mul(window, constant(alpha / static_cast<double>(size), x, ctx), s),
                            constant(bias, x, ctx), s);
  return {div(x, pow(scaled, constant(beta, x, ctx), s), s)};
}

// Over the spatial axes. A [N, C] input has none and is its own result: to mean and max an
// empty list of axes would be every axis.
Outputs global_pool(const OpContext& ctx, const Inputs& in,
                    Tensor (*reduce)(const Tensor&, const std::vector<int64_t>&, bool, Stream&)) {
  const Tensor& x = in.at(0);
  const std::vector<int64_t> axes = spatial_axes(x);
  if (axes.empty()) return {x.contiguous(ctx.stream())};
  return {reduce(x, axes, true, ctx.stream())};
}
Outputs global_average_pool(const OpContext& ctx, const Inputs& in) {
  return global_pool(ctx, in, mean);
}
Outputs global_max_pool(const OpContext& ctx, const Inputs& in) {
  return global_pool(ctx, in, max);
}

}  // namespace

std::vector<OnnxOp> nn_onnx_ops() {
  return {
      {"MatMul", 1, matmul_of},
      {"Gemm", 1, gemm},
      {"BatchNormalization", 1, batch_norm},
      {"InstanceNormalization", 1, instance_norm},
      {"LayerNormalization", 17, layer_norm_of},
      {"LRN", 1, lrn},
      {"GlobalAveragePool", 1, global_average_pool},
      {"GlobalMaxPool", 1, global_max_pool},
  };
}

}  // namespace hal::model

// ONNX's random ops: RandomUniform, RandomNormal, their -Like forms, Bernoulli, Multinomial, and
// the training mode of Dropout. Draws are hal's Philox4x32-10 (hal::uniform, hal::normal), the
// same on every device for a seed. A node's `seed` attribute fixes its sequence of draws (each
// run the next, as onnxruntime's generators advance); without one each run draws afresh, as
// ONNX says ("auto-generated"), from a process-wide sequence started from std::random_device.
#include <atomic>
#include <bit>
#include <limits>
#include <random>

#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// This run's seed: from the node's `seed` (the random ops' is a float, whose bits are taken;
// Dropout's an int) and its count of runs, so a seeded node repeats its sequence of draws from
// one load to the next while each run draws afresh, as onnxruntime's generators do; without a
// seed, from a process-wide sequence started from std::random_device.
uint64_t seed_of(const OpContext& ctx, bool integer = false) {
  if (ctx.has("seed")) {
    const uint64_t seed = integer ? static_cast<uint64_t>(ctx.attr_int("seed", 0))
                                  : std::bit_cast<uint32_t>(ctx.attr_float("seed", 0));
    const std::shared_ptr<std::atomic<uint64_t>>& runs = ctx.node().runs;
    const uint64_t run = runs ? runs->fetch_add(1, std::memory_order_relaxed) : 0;
    return seed + run * 0x9E3779B97F4A7C15ULL;  // Philox mixes the key itself
  }
  static std::atomic<uint64_t> next{(uint64_t{std::random_device{}()} << 32) |
                                    std::random_device{}()};
  return next.fetch_add(0x9E3779B97F4A7C15ULL, std::memory_order_relaxed);
}

// The `dtype` attribute's type (`fallback` where absent), a floating one.
DType dtype_of(const OpContext& ctx, DType fallback) {
  if (!ctx.has("dtype")) return fallback;
  const auto type = static_cast<int32_t>(ctx.attr_int("dtype", 1));
  const std::optional<DType> dtype = dtype_from_onnx(type);
  if (!dtype || !is_floating(*dtype))
    ctx.unsupported("dtype " + std::to_string(type) + ": draws are of floating types");
  return *dtype;
}

// hal draws f32 and f64; halves are drawn in f32 and rounded.
Tensor draws(bool normal_draws, const Shape& shape, DType dtype, uint64_t seed, double a, double b,
             Stream& s) {
  const DType drawn = dtype == DType::f64 ? DType::f64 : DType::f32;
  const Tensor t =
      normal_draws ? normal(shape, drawn, seed, s, a, b) : uniform(shape, drawn, seed, s, a, b);
  return drawn == dtype ? t : cast(t, dtype, s);
}

Shape shape_attribute(const OpContext& ctx) {
  const std::vector<int64_t> shape = ctx.attr_ints("shape");
  for (int64_t d : shape)
    if (d < 0) ctx.invalid("shape " + to_string(shape) + " has a negative dimension");
  return Shape(shape.begin(), shape.end());
}

template <bool kNormal>
Outputs random(const OpContext& ctx, const Inputs&) {
  const double a = kNormal ? ctx.attr_float("mean", 0) : ctx.attr_float("low", 0);
  const double b = kNormal ? ctx.attr_float("scale", 1) : ctx.attr_float("high", 1);
  return {draws(kNormal, shape_attribute(ctx), dtype_of(ctx, DType::f32), seed_of(ctx), a, b,
                ctx.stream())};
}

template <bool kNormal>
Outputs random_like(const OpContext& ctx, const Inputs& in) {
  const Tensor& like = in.at(0);
  const DType fallback = is_floating(like.dtype()) ? like.dtype() : DType::f32;
  const double a = kNormal ? ctx.attr_float("mean", 0) : ctx.attr_float("low", 0);
  const double b = kNormal ? ctx.attr_float("scale", 1) : ctx.attr_float("high", 1);
  return {draws(kNormal, like.shape(), dtype_of(ctx, fallback), seed_of(ctx), a, b, ctx.stream())};
}

// 1 with probability p, elementwise. Native: ONNX 1.12's function body for it compares
// Greater(draw, p), which gives 1 with probability 1 - p; its definition (and onnxruntime,
// which runs it natively) says p.
Outputs bernoulli(const OpContext& ctx, const Inputs& in) {
  const Tensor& p = in.at(0);
  if (!is_floating(p.dtype()))
    ctx.unsupported("input of " + std::string(to_string(p.dtype())) + ": floating types only");
  Stream& s = ctx.stream();
  const DType drawn = p.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor u = uniform(p.shape(), drawn, seed_of(ctx), s);
  const std::optional<DType> dtype =
      ctx.has("dtype") ? dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("dtype", 1)))
                       : std::optional<DType>(p.dtype());
  if (!dtype) ctx.unsupported("dtype " + std::to_string(ctx.attr_int("dtype", 1)));
  return {cast(lt(u, cast(p, drawn, s), s), *dtype, s)};
}

// sample_size draws per row of input [batch, classes] (unnormalized log-probabilities) by the
// Gumbel-max rule: the class whose logit plus -log(-log u) is largest is drawn with its softmax
// probability, in [batch, samples, classes] memory.
Outputs multinomial(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (x.dim() != 2) ctx.invalid("input " + to_string(x.shape()) + " is not [batch, classes]");
  if (!is_floating(x.dtype()))
    ctx.unsupported("input of " + std::string(to_string(x.dtype())) + ": floating types only");
  const int64_t batch = x.size(0), classes = x.size(1);
  const int64_t samples = ctx.attr_int("sample_size", 1);
  if (samples < 0) ctx.invalid("sample_size " + std::to_string(samples) + " is negative");
  if (classes < 1) ctx.invalid("input " + to_string(x.shape()) + " has no classes to draw");
  const auto type = static_cast<int32_t>(ctx.attr_int("dtype", 6));  // INT32
  const std::optional<DType> out_dtype = dtype_from_onnx(type);
  if (!out_dtype || (*out_dtype != DType::i32 && *out_dtype != DType::i64))
    ctx.invalid("dtype " + std::to_string(type) + " is not int32 or int64");
  Stream& s = ctx.stream();
  const DType dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor logits = cast(x, dtype, s);
  const Tensor lowest = full({}, -std::numeric_limits<double>::infinity(), dtype, s);
  // A NaN logit is never drawn (argmax would take it as the largest); +inf is drawn always,
  // the limit of its probability.
  const Tensor finite = where(eq(logits, logits, s), logits, lowest, s);
  const Tensor u = uniform({batch, samples, classes}, dtype, seed_of(ctx), s);
  const Tensor gumbel = neg(log(neg(log(u, s), s), s), s);
  const Tensor picked = argmax(add(finite.reshape({batch, 1, classes}), gumbel, s), {2}, false, s);
  return {cast(picked, *out_dtype, s)};
}

}  // namespace

// Dropout in training mode (elementwise_onnx_ops.cpp's Dropout calls it): each element kept with
// probability 1 - ratio and scaled by 1 / (1 - ratio), by hal::dropout's draws, the mask the
// same draws compared. Returns {output, mask}.
std::vector<Tensor> training_dropout(const OpContext& ctx, const Tensor& x, double ratio,
                                     DType mask_dtype) {
  Stream& s = ctx.stream();
  if (!(ratio >= 0 && ratio < 1))
    ctx.invalid("ratio " + std::to_string(ratio) + " is not in [0, 1)");
  if (ratio == 0) return {x.contiguous(s), full(x.shape(), 1, mask_dtype, s)};
  const uint64_t seed = seed_of(ctx, true);
  const Tensor kept =
      ge(uniform(x.shape(), DType::f32, seed, s), full({}, ratio, DType::f32, s), s);
  return {dropout(x, ratio, seed, s), cast(kept, mask_dtype, s)};
}

std::vector<OnnxOp> random_onnx_ops() {
  return {
      {.op_type = "RandomUniform", .since = 1, .run = random<false>, .random = true},
      {.op_type = "RandomNormal", .since = 1, .run = random<true>, .random = true},
      {.op_type = "RandomUniformLike", .since = 1, .run = random_like<false>, .random = true},
      {.op_type = "RandomNormalLike", .since = 1, .run = random_like<true>, .random = true},
      {.op_type = "Multinomial", .since = 7, .run = multinomial, .random = true},
      {.op_type = "Bernoulli", .since = 15, .run = bernoulli, .random = true},
  };
}

}  // namespace hal::model

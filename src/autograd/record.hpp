// Recording, for the op definitions: each public op checks `recording(inputs)` (a null check per
// input while nothing requires grad) and, when it holds, hands over to its recorder here, which
// runs the op itself with recording off and gives the result a node with the op's backward rule.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/graph.hpp"
#include "hal/ops.hpp"
#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

namespace hal::autograd {

// Whether an op on `inputs` records: one of them requires grad and grad mode is on here.
inline bool recording(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t->requires_grad()) return grad_enabled();
  return false;
}
inline bool recording(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return grad_enabled();
  return false;
}

// `t` without its autograd state: what a rule saves (a saved output must not hold its own node).
inline Tensor saved(const Tensor& t) { return t.detach(); }

// Gives `out` a node named `op` (a static string) over `inputs`, whose gradients `rule` computes
// from out's. A result of integer or bool dtype is returned as it is. Inputs that do not require
// grad get no edge; the rule may return undefined for them. `saves` names each input (or the
// output) whose values the rule reads, as it captured them with saved(): their versions are
// recorded now and checked before the rule runs, so list exactly what the gradient depends on
// (an undefined input is skipped). Without `saves`: a rule that reads no values (views, sums).
Tensor attach(std::string_view op, const std::vector<const Tensor*>& inputs, Tensor out,
              const std::vector<SavedSlot>& saves, Rule rule);
Tensor attach(std::string_view op, const std::vector<const Tensor*>& inputs, Tensor out, Rule rule);
// A node that refuses backward: Unsupported naming `op` and `why`.
Tensor attach_refusal(std::string_view op, const std::vector<const Tensor*>& inputs, Tensor out,
                      std::string why);
// An op without a gradient rule: `run` as it is where none of `inputs` records; else run with
// recording off, its result given a node that refuses backward (never a result without history,
// whose gradient would be silently zero).
template <class Run>
Tensor run_refusing_backward(std::string_view op, std::initializer_list<const Tensor*> inputs,
                             std::string why, Run run) {
  if (!recording(inputs)) return run();
  Tensor out;
  {
    const NoGrad untracked;
    out = run();
  }
  return attach_refusal(op, std::vector<const Tensor*>(inputs), std::move(out), std::move(why));
}

// Recorders of the ops of hal/ops.hpp (elementwise_rules.cpp, reduce_rules.cpp, ...). Each runs
// the op with recording off and attaches its rule.
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
using UnaryFn = Tensor (*)(const Tensor&, Stream&);
Tensor record_binary(ops::Binary op, BinaryFn fn, const Tensor& a, const Tensor& b, Stream& s);
Tensor record_unary(ops::Unary op, UnaryFn fn, const Tensor& x, Stream& s);
Tensor record_where(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& s);
Tensor record_cast(const Tensor& x, DType dtype, Stream& s);
Tensor record_reduce(ops::Reduce op, const Tensor& x, const std::vector<int64_t>& axes,
                     bool keepdim, Stream& s);
Tensor record_softmax(const Tensor& x, int64_t axis, bool logarithm, Stream& s);
Tensor record_layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                         const Tensor& bias, double eps, Stream& s);
Tensor record_rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                       double eps, Stream& s);
Tensor record_matmul(const Tensor& a, const Tensor& b, Stream& s);
Tensor record_conv(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const ConvOptions& options, Stream& s);
Tensor record_conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const ConvTransposeOptions& options, Stream& s);
Tensor record_fused(const std::vector<Tensor>& inputs, Tensor out);

// Views and copies of Tensor (layout_rules.cpp): `out` is what the member already made of `x`.
// reshape, view, squeeze and unsqueeze: the same elements in another shape.
Tensor record_reshape(std::string_view op, const Tensor& x, Tensor out);
Tensor record_permute(std::string_view op, const Tensor& x, const std::vector<int64_t>& order,
                      Tensor out);
Tensor record_slice(const Tensor& x, int64_t dim, int64_t start, int64_t step, Tensor out);
Tensor record_expand(const Tensor& x, Tensor out);
// contiguous() and to(): copies; to() may cross devices.
Tensor record_copy(std::string_view op, const Tensor& x, Tensor out);
Tensor record_concat(const std::vector<Tensor>& parts, int64_t axis, Stream& s);

// The nn ops (nn_rules.cpp).
Tensor record_embedding(const Tensor& weight, const Tensor& indices, Stream& s);
Tensor record_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                            double label_smoothing, Stream& s);
Tensor record_dropout(const Tensor& x, double p, uint64_t seed, Stream& s);
Tensor record_pool(bool max, const Tensor& x, const PoolOptions& options, Stream& s);

}  // namespace hal::autograd

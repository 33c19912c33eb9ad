// cross_entropy and cross_entropy_backward: the definitions, the CPU's host kernels (each row's
// log-sum-exp in double; the loss then the mean of the rows that count), and elsewhere the same
// from log_softmax or softmax and a one-hot matrix of the targets.
#include <cmath>

#include "autograd/record.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/fallback.hpp"
#include "ops/nn_kernels.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"

namespace hal {
namespace ops {
namespace {

Tensor scalar(double value, DType dtype, Stream& s) { return full({}, value, dtype, s); }

// [N, C], true at row i's target (nowhere for a target outside [0, C)).
Tensor one_hot(const Tensor& targets, int64_t classes, Stream& s) {
  return eq(targets.reshape({targets.numel(), 1}), arange(classes, targets.dtype(), s), s);
}

// [N]: true where the row counts (its target is not ignore_index).
Tensor counted_rows(const Tensor& targets, int64_t ignore_index, Stream& s) {
  return ne(targets, full({}, ignore_index, targets.dtype(), s), s);
}

// Selections rather than products with 0/1 masks: a class masked with -inf (log p = -inf) or an
// ignored row of them (NaN) would make 0 * inf = NaN of every sum it enters.

// From the parts: the per-row losses of the rows that count, over their number.
Tensor cross_entropy_from_parts(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                                double smoothing, Stream& s) {
  const DType dtype = logits.dtype();
  const Tensor log_p = log_softmax(logits, 1, s);
  const Tensor zero = scalar(0, dtype, s);
  const Tensor counted = counted_rows(targets, ignore_index, s);
  Tensor rows =
      neg(sum(where(one_hot(targets, logits.size(1), s), log_p, zero, s), {1}, false, s), s);
  if (smoothing != 0) {
    const Tensor uniform = neg(mean(log_p, {1}, false, s), s);
    rows = add(mul(rows, scalar(1 - smoothing, dtype, s), s),
               mul(uniform, scalar(smoothing, dtype, s), s), s);
  }
  return div(sum(where(counted, rows, zero, s), {}, false, s),
             sum(cast(counted, dtype, s), {}, false, s), s);
}

// From the parts: (softmax - ((1 - s) one_hot + s / C)) * grad / count on the rows that count,
// 0 on the others.
Tensor cross_entropy_backward_from_parts(const Tensor& logits, const Tensor& targets,
                                         const Tensor& grad, int64_t ignore_index, double smoothing,
                                         Stream& s) {
  const DType dtype = logits.dtype();
  const int64_t rows = logits.size(0), classes = logits.size(1);
  Tensor wanted = cast(one_hot(targets, classes, s), dtype, s);
  if (smoothing != 0)
    wanted = add(mul(wanted, scalar(1 - smoothing, dtype, s), s),
                 scalar(smoothing / static_cast<double>(classes), dtype, s), s);
  const Tensor counted = counted_rows(targets, ignore_index, s);
  const Tensor weight = div(grad, sum(cast(counted, dtype, s), {}, false, s), s);
  const Tensor rows_grad = mul(sub(softmax(logits, 1, s), wanted, s), weight, s);
  return where(counted.reshape({rows, 1}), rows_grad, scalar(0, dtype, s), s);
}

// The checks both ops make of the logits, targets and smoothing.
void check_operands(std::string_view op, const Tensor& logits, const Tensor& targets,
                    double smoothing, Stream& s) {
  check_defined(op, logits);
  check_defined(op, targets);
  check_stream(op, logits, s);
  check_same_device(op, logits, targets);
  const auto both = [&] {
    return std::string(op) + " of " + logits.describe() + " and targets " + targets.describe();
  };
  if (logits.dim() != 2 || targets.dim() != 1 || targets.size(0) != logits.size(0))
    throw Error(ErrorCode::InvalidArgument,
                both() + ": expects logits [N, C] and targets [N] (class indices)");
  if (targets.dtype() != DType::i32 && targets.dtype() != DType::i64)
    throw Error(ErrorCode::InvalidArgument, both() + ": targets must be class indices, i32 or i64");
  if (!(smoothing >= 0 && smoothing <= 1))
    throw Error(ErrorCode::InvalidArgument,
                both() + ": label_smoothing " + std::to_string(smoothing) + " is not in [0, 1]");
}

Tensor cross_entropy_of(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                        double smoothing, Stream& s) {
  check_operands("cross_entropy", logits, targets, smoothing, s);
  static const OpDescriptor& op = descriptor("cross_entropy");
  const OpPlan plan = plan_or_throw(op, logits.dtype(), {&logits, &targets});
  if (plan.compute != logits.dtype())
    return cast(
        cross_entropy_of(cast(logits, plan.compute, s), targets, ignore_index, smoothing, s),
        logits.dtype(), s);
  if (plan.implementation && logits.numel() > 0) {
    Tensor out = empty_beside(logits, {}, logits.dtype());
    std::get<CrossEntropyKernel>(plan.implementation->kernel)(
        logits.contiguous(s), targets.contiguous(s), out, ignore_index, smoothing, s);
    return out;
  }
  // The parts in f32 for half types: the rows' sum and their count pass f16's 65504 at
  // ordinary batch sizes (8192 rows of loss 10 summed to inf).
  if (is_half(logits.dtype()))
    return cast(
        cross_entropy_from_parts(cast(logits, DType::f32, s), targets, ignore_index, smoothing, s),
        logits.dtype(), s);
  return cross_entropy_from_parts(logits, targets, ignore_index, smoothing, s);
}

Tensor cross_entropy_backward_of(const Tensor& logits, const Tensor& targets, const Tensor& grad,
                                 int64_t ignore_index, double smoothing, Stream& s) {
  check_operands("cross_entropy_backward", logits, targets, smoothing, s);
  check_defined("cross_entropy_backward", grad);
  check_same_device("cross_entropy_backward", logits, grad);
  if (grad.dim() != 0 || grad.dtype() != logits.dtype())
    throw Error(ErrorCode::InvalidArgument, "cross_entropy_backward of " + logits.describe() +
                                                ": the gradient " + grad.describe() +
                                                " must be 0-d, of the logits' dtype");
  static const OpDescriptor& op = descriptor("cross_entropy_backward");
  const OpPlan plan = plan_or_throw(op, logits.dtype(), {&logits, &targets});
  if (plan.compute != logits.dtype())
    return cast(cross_entropy_backward_of(cast(logits, plan.compute, s), targets,
                                          cast(grad, plan.compute, s), ignore_index, smoothing, s),
                logits.dtype(), s);
  if (plan.implementation) {
    Tensor out = empty_beside(logits, logits.shape(), logits.dtype());
    if (out.numel() > 0)
      std::get<CrossEntropyBackwardKernel>(plan.implementation->kernel)(
          logits.contiguous(s), targets.contiguous(s), grad, out, ignore_index, smoothing, s);
    return out;
  }
  if (is_half(logits.dtype()))
    return cast(
        cross_entropy_backward_from_parts(cast(logits, DType::f32, s), targets,
                                          cast(grad, DType::f32, s), ignore_index, smoothing, s),
        logits.dtype(), s);
  return cross_entropy_backward_from_parts(logits, targets, grad, ignore_index, smoothing, s);
}

}  // namespace
}  // namespace ops

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                     double label_smoothing, Stream& stream) {
  if (autograd::recording({&logits}))
    return autograd::record_cross_entropy(logits, targets, ignore_index, label_smoothing, stream);
  return ops::run_op("cross_entropy", {logits, targets}, stream,
                     [=](const std::vector<Tensor>& in, Stream& s) {
                       return ops::cross_entropy_of(in[0], in[1], ignore_index, label_smoothing, s);
                     });
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& grad,
                              int64_t ignore_index, double label_smoothing, Stream& stream) {
  const auto run = [&] {
    return ops::run_op("cross_entropy_backward", {logits, targets, grad}, stream,
                       [=](const std::vector<Tensor>& in, Stream& s) {
                         return ops::cross_entropy_backward_of(in[0], in[1], in[2], ignore_index,
                                                               label_smoothing, s);
                       });
  };
  return autograd::run_refusing_backward("cross_entropy_backward", {&logits, &grad},
                                         "hal has no rule for a gradient of a gradient", run);
}

}  // namespace hal

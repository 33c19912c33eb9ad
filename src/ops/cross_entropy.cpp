// cross_entropy: the definition, the CPU's host kernel (each row's log-sum-exp in double, then
// the mean of the rows that count), and elsewhere the same from log_softmax and a one-hot
// matrix of the targets.
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

const OpDescriptor& cross_entropy_descriptor() {
  static const OpDescriptor& op = descriptor("cross_entropy");
  return op;
}

Tensor scalar(double value, DType dtype, Stream& s) { return full({}, value, dtype, s); }

// From the parts: the per-row losses weighted by the rows that count, over their number.
Tensor cross_entropy_from_parts(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                                double smoothing, Stream& s) {
  const DType dtype = logits.dtype();
  const int64_t classes = logits.size(1);
  const Tensor log_p = log_softmax(logits, 1, s);
  const Tensor picks = cast(
      eq(targets.reshape({targets.numel(), 1}), arange(classes, targets.dtype(), s), s), dtype, s);
  const Tensor counted = cast(
      ne(targets, full({}, static_cast<double>(ignore_index), targets.dtype(), s), s), dtype, s);
  Tensor rows = neg(sum(mul(log_p, picks, s), {1}, false, s), s);
  if (smoothing != 0) {
    const Tensor uniform = neg(mean(log_p, {1}, false, s), s);
    rows = add(mul(rows, scalar(1 - smoothing, dtype, s), s),
               mul(uniform, scalar(smoothing, dtype, s), s), s);
  }
  return div(sum(mul(rows, counted, s), {}, false, s), sum(counted, {}, false, s), s);
}

Tensor cross_entropy_of(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                        double smoothing, Stream& s) {
  const std::string_view name = "cross_entropy";
  check_defined(name, logits);
  check_defined(name, targets);
  check_stream(name, logits, s);
  check_same_device(name, logits, targets);
  const auto both = [&] {
    return "cross_entropy of " + logits.describe() + " and targets " + targets.describe();
  };
  if (logits.dim() != 2 || targets.dim() != 1 || targets.size(0) != logits.size(0))
    throw Error(ErrorCode::InvalidArgument,
                both() + ": expects logits [N, C] and targets [N] (class indices)");
  if (targets.dtype() != DType::i32 && targets.dtype() != DType::i64)
    throw Error(ErrorCode::InvalidArgument, both() + ": targets must be class indices, i32 or i64");
  if (!(smoothing >= 0 && smoothing <= 1))
    throw Error(ErrorCode::InvalidArgument,
                both() + ": label_smoothing " + std::to_string(smoothing) + " is not in [0, 1]");
  const OpPlan plan =
      plan_or_throw(cross_entropy_descriptor(), logits.dtype(), {&logits, &targets});
  if (plan.compute != logits.dtype())
    return cast(
        cross_entropy_of(cast(logits, plan.compute, s), targets, ignore_index, smoothing, s),
        logits.dtype(), s);
  if (plan.implementation && logits.numel() > 0) {
    Tensor out = empty({}, logits.dtype(), logits.device());
    std::get<CrossEntropyKernel>(plan.implementation->kernel)(
        logits.contiguous(s), targets.contiguous(s), out, ignore_index, smoothing, s);
    return out;
  }
  return cross_entropy_from_parts(logits, targets, ignore_index, smoothing, s);
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

}  // namespace hal

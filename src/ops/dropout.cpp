// dropout: the definition, the CPU's host kernel, and elsewhere the same from the Philox draws
// hal::uniform makes, a comparison and products. Both keep element i when draw i >= p.
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

const OpDescriptor& dropout_descriptor() {
  static const OpDescriptor& op = descriptor("dropout");
  return op;
}

Tensor dropout_of(const Tensor& x, double p, uint64_t seed, Stream& s) {
  check_defined("dropout", x);
  check_stream("dropout", x, s);
  if (!(p >= 0 && p <= 1))
    throw Error(ErrorCode::InvalidArgument,
                "dropout of " + x.describe() + ": p " + std::to_string(p) + " is not in [0, 1]");
  const OpPlan plan = plan_or_throw(dropout_descriptor(), x.dtype(), {&x});
  if (plan.compute != x.dtype())
    return cast(dropout_of(cast(x, plan.compute, s), p, seed, s), x.dtype(), s);
  if (x.numel() == 0) return empty_beside(x, x.shape(), x.dtype());
  if (plan.implementation) {
    Tensor out = empty_beside(x, x.shape(), x.dtype());
    std::get<DropoutKernel>(plan.implementation->kernel)(x.contiguous(s), out, p, seed, s);
    return out;
  }
  const Tensor draws = uniform(x.shape(), DType::f32, seed, s);
  const Tensor kept =
      cast(ge(draws, full({}, static_cast<double>(static_cast<float>(p)), DType::f32, s), s),
           x.dtype(), s);
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  return mul(mul(x, kept, s), full({}, scale, x.dtype(), s), s);
}

}  // namespace
}  // namespace ops

Tensor dropout(const Tensor& x, double p, uint64_t seed, Stream& stream) {
  if (autograd::recording({&x})) return autograd::record_dropout(x, p, seed, stream);
  return ops::run_op("dropout", {x}, stream, [p, seed](const std::vector<Tensor>& in, Stream& s) {
    return ops::dropout_of(in[0], p, seed, s);
  });
}

}  // namespace hal

// embedding and embedding_backward: the definitions, run by the op table's kernels (rows
// gathered, rows added: the CPU's host kernels, the portable kernels, Vulkan's shaders), and
// on devices without them as products with a one-hot matrix of the indices.
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

const OpDescriptor& embedding_descriptor() {
  static const OpDescriptor& op = descriptor("embedding");
  return op;
}
const OpDescriptor& embedding_backward_descriptor() {
  static const OpDescriptor& op = descriptor("embedding_backward");
  return op;
}

void check_indices(std::string_view op, const Tensor& table, const Tensor& indices) {
  check_defined(op, indices);
  check_same_device(op, table, indices);
  if (indices.dtype() != DType::i32 && indices.dtype() != DType::i64)
    throw Error(
        ErrorCode::InvalidArgument,
        std::string(op) + " with indices " + indices.describe() + ": indices must be i32 or i64");
}

// [n, rows] in `dtype`: row i is 1 at indices[i].
Tensor one_hot(const Tensor& indices, int64_t rows, DType dtype, Stream& s) {
  const Tensor flat = indices.contiguous(s).reshape({indices.numel(), 1});
  return cast(eq(flat, arange(rows, indices.dtype(), s), s), dtype, s);
}

Tensor embedding_of(const Tensor& weight, const Tensor& indices, Stream& s) {
  const std::string_view name = "embedding";
  check_defined(name, weight);
  check_stream(name, weight, s);
  check_indices(name, weight, indices);
  if (weight.dim() != 2)
    throw Error(ErrorCode::InvalidArgument, "embedding of " + weight.describe() +
                                                ": the weights must be [num_embeddings, dim]");
  const OpPlan plan = plan_or_throw(embedding_descriptor(), weight.dtype(), {&weight, &indices});
  if (plan.compute != weight.dtype())
    return cast(embedding_of(cast(weight, plan.compute, s), indices, s), weight.dtype(), s);
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  if (plan.implementation) {
    Tensor out = empty_beside(weight, shape, weight.dtype());
    if (out.numel() > 0)
      std::get<RowsKernel>(plan.implementation->kernel)(weight.contiguous(s), indices.contiguous(s),
                                                        out, s);
    return out;
  }
  return matmul(one_hot(indices, weight.size(0), weight.dtype(), s), weight, s).reshape(shape);
}

Tensor embedding_backward_of(const Tensor& grad, const Tensor& indices, int64_t rows, Stream& s) {
  const std::string_view name = "embedding_backward";
  check_defined(name, grad);
  check_stream(name, grad, s);
  check_indices(name, grad, indices);
  if (rows < 0 || grad.dim() != indices.dim() + 1 ||
      !std::equal(indices.shape().begin(), indices.shape().end(), grad.shape().begin()))
    throw Error(ErrorCode::InvalidArgument,
                "embedding_backward of " + grad.describe() + " with indices " + indices.describe() +
                    " for " + std::to_string(rows) +
                    " rows: the gradient must be [indices..., dim], and rows >= 0");
  const OpPlan plan =
      plan_or_throw(embedding_backward_descriptor(), grad.dtype(), {&grad, &indices});
  if (plan.compute != grad.dtype())
    return cast(embedding_backward_of(cast(grad, plan.compute, s), indices, rows, s), grad.dtype(),
                s);
  const int64_t dim = grad.size(-1);
  const Tensor flat = grad.contiguous(s).reshape({indices.numel(), dim});
  if (plan.implementation) {
    Tensor out = empty_beside(grad, {rows, dim}, grad.dtype());
    if (out.numel() == 0) return out;
    if (indices.numel() == 0) return zeros({rows, dim}, grad.dtype(), s);
    std::get<RowsKernel>(plan.implementation->kernel)(flat, indices.contiguous(s), out, s);
    return out;
  }
  const Tensor picks = one_hot(indices, rows, grad.dtype(), s);
  return matmul(picks.transpose(0, 1), flat, s);
}

}  // namespace
}  // namespace ops

Tensor embedding(const Tensor& weight, const Tensor& indices, Stream& stream) {
  if (autograd::recording({&weight})) return autograd::record_embedding(weight, indices, stream);
  return ops::run_op(
      "embedding", {weight, indices}, stream,
      [](const std::vector<Tensor>& in, Stream& s) { return ops::embedding_of(in[0], in[1], s); });
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_embeddings,
                          Stream& stream) {
  const auto run = [&] {
    return ops::run_op("embedding_backward", {grad, indices}, stream,
                       [num_embeddings](const std::vector<Tensor>& in, Stream& s) {
                         return ops::embedding_backward_of(in[0], in[1], num_embeddings, s);
                       });
  };
  return autograd::run_refusing_backward("embedding_backward", {&grad},
                                         "hal has no rule for a gradient of a gradient", run);
}

}  // namespace hal

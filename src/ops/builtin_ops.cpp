#include "ops/builtin_ops.hpp"

#include "hal/backend.hpp"
#include "hal/error.hpp"

namespace hal::ops {
namespace {

void check_rank(std::string_view op, const Tensor& x, size_t rank) {
  if (rank > kMaxBuiltinRank)
    throw Error(ErrorCode::Unsupported, std::string(op) + " of " + x.describe() + ": " +
                                            std::to_string(rank) +
                                            " dimensions, more than the device's built-in ops "
                                            "take (" +
                                            std::to_string(kMaxBuiltinRank) + ")");
}

// `t` as seen through `shape` (which it broadcasts to): stride 0 where it repeats.
OpOperand operand(const Tensor& t, const Shape& shape) {
  return {t.storage().impl(), static_cast<uint64_t>(t.offset()), t.dtype(), shape,
          broadcast_strides(t, shape)};
}

void run(BuiltinOp op, Stream& stream) { stream.impl()->run_builtin_op(op); }

}  // namespace

void builtin_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                    Stream& stream) {
  check_rank(name(op), out, out.shape().size());
  run({BuiltinOpKind::binary,
       static_cast<int32_t>(op),
       operand(out, out.shape()),
       {operand(a, out.shape()), operand(b, out.shape())}},
      stream);
}

void builtin_unary(Unary op, const Tensor& x, const Tensor& out, Stream& stream) {
  check_rank(name(op), x, x.shape().size());
  run({BuiltinOpKind::unary,
       static_cast<int32_t>(op),
       operand(out, out.shape()),
       {operand(x, x.shape())}},
      stream);
}

void builtin_reduce(Reduce op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out,
                    Stream& stream) {
  check_rank(name(op), x, x.shape().size());
  uint32_t axes = 0;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) axes |= 1u << d;
  // The result's shape without keepdim's 1s: the kept dimensions in order.
  Shape kept;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (!reduced[d]) kept.push_back(x.shape()[d]);
  run({BuiltinOpKind::reduce,
       static_cast<int32_t>(op),
       operand(out.reshape(kept), kept),
       {operand(x, x.shape())},
       axes},
      stream);
}

}  // namespace hal::ops

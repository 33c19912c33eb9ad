// concat: the definition (checks, the result's shape) and, for every device, concatenation by
// device copies: with the axis moved to the front each part is one contiguous block of the
// result, placed by a copy, and the result is moved back (along axis 0, the copies alone). The
// CPU outranks it with a host kernel that copies each part's rows into place.
#include <algorithm>

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

// The dimensions with `axis` first, the others in order.
std::vector<int64_t> axis_first(int64_t axis, int64_t rank) {
  std::vector<int64_t> order{axis};
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) order.push_back(d);
  return order;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& order) {
  std::vector<int64_t> out(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    out[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return out;
}

Tensor concat_of(const std::vector<Tensor>& parts, int64_t axis_in, Stream& stream) {
  if (parts.empty())
    throw Error(ErrorCode::InvalidArgument, "concat of no tensors: give at least one");
  const Tensor& first = parts[0];
  check_defined("concat", first);
  check_stream("concat", first, stream);
  const int64_t axis = wrap_axis("concat", first, axis_in);
  Shape shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor& part : parts) {
    check_defined("concat", part);
    check_same_device("concat", first, part);
    check_same_dtype("concat", first, part);
    bool fits = part.dim() == first.dim();
    for (int64_t d = 0; fits && d < first.dim(); ++d)
      fits = d == axis || part.size(d) == first.size(d);
    if (!fits)
      throw Error(ErrorCode::InvalidArgument,
                  "concat of " + first.describe() + " and " + part.describe() + " along axis " +
                      std::to_string(axis) + ": the shapes differ off the axis");
    shape[static_cast<size_t>(axis)] += part.size(axis);
  }
  const OpPlan plan = plan_or_throw(concat_descriptor(), first.dtype(), {&first});
  Tensor out = empty_beside(first, shape, first.dtype());
  if (out.numel() == 0) return out;
  std::vector<Tensor> packed;
  for (const Tensor& part : parts) packed.push_back(part.contiguous(stream));
  std::get<ConcatKernel>(plan.implementation->kernel)(packed, axis, out, stream);
  return out;
}

}  // namespace

void copied_concat(const std::vector<Tensor>& parts, int64_t axis, const Tensor& out,
                   Stream& stream) {
  const std::vector<int64_t> order = axis_first(axis, out.dim());
  const bool moved = axis != 0 && std::any_of(out.shape().begin(), out.shape().begin() + axis,
                                              [](int64_t size) { return size != 1; });
  Shape moved_shape;
  for (int64_t d : order) moved_shape.push_back(out.size(d));
  const Tensor target = moved ? empty_beside(out, moved_shape, out.dtype()) : out;
  size_t offset = 0;
  for (const Tensor& part : parts) {
    const Tensor block = moved ? part.permute(order).contiguous(stream) : part;
    if (block.nbytes() > 0)
      stream.copy(target.storage(), block.storage(), block.nbytes(),
                  offset + static_cast<size_t>(target.offset()) * target.element_size(),
                  static_cast<size_t>(block.offset()) * block.element_size());
    offset += block.nbytes();
  }
  if (moved) {
    const Tensor back = target.permute(inverse(order)).contiguous(stream);
    stream.copy(out.storage(), back.storage(), out.nbytes(),
                static_cast<size_t>(out.offset()) * out.element_size(),
                static_cast<size_t>(back.offset()) * back.element_size());
  }
}

}  // namespace ops

Tensor concat(const std::vector<Tensor>& tensors, int64_t axis, Stream& stream) {
  if (autograd::recording(tensors)) return autograd::record_concat(tensors, axis, stream);
  return ops::run_op("concat", tensors, stream, [axis](const std::vector<Tensor>& in, Stream& s) {
    return ops::concat_of(in, axis, s);
  });
}

}  // namespace hal

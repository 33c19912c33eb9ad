// Broadcasting and the layout of an elementwise launch.
#include <algorithm>
#include <span>
#include <vector>

#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/elementwise.hpp"

namespace hal {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned from the last dimension; a missing dimension is 1.
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      throw Error(ErrorCode::InvalidArgument, "shapes " + to_string(a) + " and " + to_string(b) +
                                                  " do not broadcast: dimension " +
                                                  std::to_string(i) + " of the result has " +
                                                  std::to_string(x) + " and " + std::to_string(y));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

namespace ops {

int64_t broadcast_stride(const Tensor& t, const Shape& shape, size_t d) {
  const size_t lead = shape.size() - t.shape().size();
  return d >= lead && t.shape()[d - lead] == shape[d] ? t.strides()[d - lead] : 0;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  Shape out(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) out[d] = broadcast_stride(t, shape, d);
  return out;
}

namespace {

// `in` (at most kInputs tensors; the layout's further operands stay unused, stride 0) broadcast
// to `shape`, with the dimensions every operand walks as one merged.
template <size_t kInputs>
ElementwiseLayout<kInputs> merge(const Shape& shape, std::span<const Tensor* const> in) {
  ElementwiseLayout<kInputs> layout;
  layout.count = hal::numel(shape);
  for (size_t v = 0; v < kInputs; ++v) layout.offsets[v] = v < in.size() ? in[v]->offset() : 0;
  layout.flat = true;
  for (const Tensor* t : in) layout.flat = layout.flat && t->shape() == shape && t->is_contiguous();
  if (layout.flat && layout.count > 1) {
    // What the merge below makes of contiguous operands of the result's shape, without its
    // walk over the dimensions: one dimension, every operand at stride 1 (unused ones at 0).
    layout.shape.assign(1, layout.count);
    for (size_t v = 0; v < kInputs; ++v) layout.strides[v].assign(1, v < in.size() ? 1 : 0);
    return layout;
  }
  // At most one merged dimension per dimension of `shape`, and one for a single element (for
  // kernels that walk rows); sized once, trimmed at the end.
  const size_t most = std::max<size_t>(shape.size(), 1);
  layout.shape.resize(most);
  for (LayoutDims& strides : layout.strides) strides.resize(most);
  size_t rank = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    // The operands' strides along d (computed per dimension, not kept in vectors of their own:
    // a tiny op would spend more on those than on its elements).
    std::array<int64_t, kInputs> stride{};
    for (size_t v = 0; v < kInputs && v < in.size(); ++v)
      stride[v] = broadcast_stride(*in[v], shape, d);
    bool joins = rank > 0;
    for (size_t v = 0; v < kInputs && joins; ++v)
      joins = layout.strides[v][rank - 1] == stride[v] * shape[d];
    if (joins) {
      layout.shape[rank - 1] *= shape[d];
    } else {
      layout.shape[rank++] = shape[d];
    }
    for (size_t v = 0; v < kInputs; ++v) layout.strides[v][rank - 1] = stride[v];
  }
  if (rank == 0) {  // one element
    layout.shape[0] = 1;
    for (LayoutDims& strides : layout.strides) strides[0] = 0;
    rank = 1;
  }
  layout.shape.resize(rank);
  for (LayoutDims& strides : layout.strides) strides.resize(rank);
  return layout;
}

template <size_t kInputs>
ElementwiseLayout<kInputs> merge(const Shape& shape, const std::array<const Tensor*, kInputs>& in) {
  return merge<kInputs>(shape, std::span<const Tensor* const>(in));
}

}  // namespace

ElementwiseLayout<2> layout_of(const Tensor& a, const Tensor& b, const Shape& shape) {
  return merge<2>(shape, {&a, &b});
}

ElementwiseLayout<1> layout_of(const Tensor& x) { return merge<1>(x.shape(), {&x}); }

ElementwiseLayout<3> layout_of(const Tensor& a, const Tensor& b, const Tensor& c,
                               const Shape& shape) {
  return merge<3>(shape, {&a, &b, &c});
}

FusedLayout layout_of(const std::vector<Tensor>& inputs, const Shape& shape) {
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(&t);
  return merge<kMaxFusedInputs>(shape, pointers);
}

}  // namespace ops
}  // namespace hal

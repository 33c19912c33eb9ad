// ONNX's MaxUnpool: X's values written at MaxPool's Indices (flat positions in the output) into
// zeros. The indices are read to the host and checked there, and turned into the
// inverse map, each output position's source in X (the last one where an index repeats, as
// onnxruntime writes them in turn; a position no index names reads a zero appended to X);
// `embedding` then gathers the output as rows, on any device that runs it.
#include <algorithm>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// The shape MaxPool's input had by the attributes: per spatial axis (in - 1) * stride + kernel
// - pads.
Shape unpooled_shape(const OpContext& ctx, const Tensor& x) {
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  std::vector<int64_t> strides = ctx.attr_ints("strides"), pads = ctx.attr_ints("pads");
  if (strides.empty()) strides.assign(spatial, 1);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial)
    ctx.invalid("kernel_shape " + to_string(kernel) + ", strides " + to_string(strides) +
                " and pads " + to_string(pads) + " do not match X " + to_string(x.shape()));
  Shape shape{x.size(0), x.size(1)};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t size = (x.size(static_cast<int64_t>(d) + 2) - 1) * strides[d] + kernel[d] -
                         pads[d] - pads[d + spatial];
    if (size < 0)
      ctx.invalid("axis " + std::to_string(d + 2) + " of X " + to_string(x.shape()) +
                  " unpools to (in - 1) * stride " + std::to_string(strides[d]) + " + kernel " +
                  std::to_string(kernel[d]) + " - pads " + std::to_string(pads[d]) + " and " +
                  std::to_string(pads[d + spatial]) + " = " + std::to_string(size) + " elements");
    shape.push_back(size);
  }
  return shape;
}

// The output's shape: `output_shape` where given (MaxPool's input shape, which pooling made
// ambiguous), else the unpooled shape. The indices number positions in it, N and C included,
// as onnxruntime reads them (PyTorch's count within each [N, C] plane; its export adds the
// planes).
Shape output_shape(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (!given(in, 2)) return unpooled_shape(ctx, x);
  const std::vector<int64_t> wanted = ctx.read_ints(in[2]);
  if (wanted.size() != static_cast<size_t>(x.dim()) || wanted[0] != x.size(0) ||
      wanted[1] != x.size(1) ||
      std::any_of(wanted.begin(), wanted.end(), [](int64_t d) { return d < 0; }))
    ctx.invalid("output_shape " + to_string(wanted) + " is not [N, C, D1, ...] of X " +
                to_string(x.shape()));
  return Shape(wanted.begin(), wanted.end());
}

Outputs max_unpool(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const Tensor& indices = in.at(1);
  if (x.dim() < 3) ctx.invalid("X " + to_string(x.shape()) + " is not [N, C, D1, ...]");
  if (indices.shape() != x.shape())
    ctx.invalid("I " + to_string(indices.shape()) + " is not X's shape " + to_string(x.shape()));
  if (!is_floating(x.dtype()))
    ctx.unsupported("X of " + std::string(to_string(x.dtype())) + ": floating types only");
  const Shape shape = output_shape(ctx, in);
  // The inverse map takes 8 bytes an output element on the host: 2^34 elements at most.
  constexpr int64_t kMostElements = int64_t{1} << 34;
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d > 0 && total > kMostElements / d)
      ctx.invalid("the output " + to_string(shape) + " has more than 2^34 elements");
    total *= d;
  }
  const std::vector<int64_t> picks = ctx.read_ints(indices);
  const int64_t count = x.numel();
  std::vector<int64_t> source(static_cast<size_t>(total), count);  // count: the zero row
  for (int64_t i = 0; i < count; ++i) {
    const int64_t at = picks[static_cast<size_t>(i)];
    if (at < 0 || at >= total)
      ctx.invalid("index " + std::to_string(at) + " at position " + std::to_string(i) +
                  " of I is outside the output " + to_string(shape));
    source[static_cast<size_t>(at)] = i;
  }
  Stream& s = ctx.stream();
  const Tensor table =
      concat(ctx, {x.contiguous(s).reshape({count, 1}), zeros({1, 1}, x.dtype(), s)}, 0);
  return {embedding(table, from_vector(source, {total}, s), s).reshape(shape)};
}

}  // namespace

std::vector<OnnxOp> unpool_onnx_ops() { return {{"MaxUnpool", 9, max_unpool}}; }

}  // namespace hal::model

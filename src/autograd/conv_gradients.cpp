#include "autograd/conv_gradients.hpp"

#include "ops/op_table.hpp"

namespace hal::autograd {
namespace {

// dw[m, c, k] = sum over n and positions p of dz[n, m, p] patches[n, c k, p]: im2col's patches
// as conv_from_matmul makes them, one product batched over the batch, summed over it.
Tensor weight_gradient_by_patches(const Tensor& dz, const Tensor& x, const Shape& weight_shape,
                                  const ops::Window& w, Stream& s) {
  const int64_t batch = x.size(0), features = weight_shape[0];
  const Tensor patches = ops::patches_of(x, w, s);  // [N, C K, P]
  const Tensor flat_dz = dz.contiguous(s).reshape({batch, features, w.positions()});
  const Tensor product = matmul(flat_dz, patches.transpose(1, 2), s);  // [N, M, C K]
  return (batch == 1 ? product : sum(product, {0}, false, s)).reshape(weight_shape);
}

// With groups, per kernel offset k: dw[m, c, k] = sum over n, p of dz[n, m, p] x_k[n, c, p], x_k
// the padded input's strided view at that offset. Depthwise (one channel and one feature a
// group), a product of dz and the view summed over all but the channels; otherwise one product
// batched over the batch and the groups. The K results stacked last. (im2col's patches and a
// product per group took 20 ms of a depthwise 3 x 3 over 8 x 256 x 28 x 28 on cpu:0: laying out
// the patches, 9 times x, cost most of it, and the 256 groups' slices, products and sums.)
Tensor weight_gradient_by_offsets(const Tensor& dz, const Tensor& x, const Shape& weight_shape,
                                  const ops::Window& w, int64_t groups, Stream& s) {
  const int64_t batch = x.size(0), features = weight_shape[0], per_group = weight_shape[1];
  const int64_t features_per_group = features / groups;
  const bool depthwise = per_group == 1 && features_per_group == 1;
  const Tensor flat_dz = dz.contiguous(s);
  const Tensor grouped_dz = flat_dz.reshape({batch, groups, features_per_group, w.positions()});
  std::vector<int64_t> all_but_channels{0};
  for (int64_t d = 2; d < dz.dim(); ++d) all_but_channels.push_back(d);
  std::vector<Tensor> per_offset;  // [M, C/g, 1] each
  ops::for_each_offset(ops::padded(x, w, 0.0, s), w, [&](const Tensor& view) {
    if (depthwise) {
      per_offset.push_back(
          sum(mul(flat_dz, view, s), all_but_channels, false, s).reshape({features, 1, 1}));
      return;
    }
    const Tensor grouped_x =
        view.contiguous(s).reshape({batch, groups, per_group, w.positions()}).transpose(2, 3);
    const Tensor product = matmul(grouped_dz, grouped_x, s);  // [N, g, M/g, C/g]
    per_offset.push_back(
        (batch == 1 ? product : sum(product, {0}, false, s)).reshape({features, per_group, 1}));
  });
  return (per_offset.size() == 1 ? per_offset[0] : concat(per_offset, 2, s)).reshape(weight_shape);
}

// Whether x's device convolves x's dtype with a kernel of its own (oneDNN on the CPU, Vulkan's
// shaders). Elsewhere a convolution is itself im2col and a product, and the weight's gradient
// as one would lay out the whole input for a kernel as large as the output: opencl:0, a 3 x 3
// kernel over 8 x 64 x 28 x 28, 294 ms a training step that way against 206 by the patches.
bool convolves_itself(const Tensor& x) {
  return ops::plan(ops::conv_descriptor(), x.dtype(), x.device().info()).implementation != nullptr;
}

}  // namespace

// dx: the transposed convolution of dz (ops/conv_transpose.cpp: the device's own, else a
// convolution per phase of the strides, the forward's work).
Tensor conv_input_gradient(const Tensor& dz, const Tensor& weight, const Shape& x_shape,
                           const ops::Window& w, int64_t groups, Stream& s) {
  return ops::transposed_conv(dz, weight, Tensor(), x_shape, w, groups, s);
}

// dw[m, c, k] = sum over n, o of dz[n, m, o] x[n, c, o s + k d - pad_before]: a convolution of x
// with its batch as channels ([C, N, D...]) by dz alike ([M, N, O...]) as the kernel, the
// forward's dilation as its stride and the forward's stride as its dilation, padded in front as
// the forward was and behind by what leaves exactly K outputs; [C, M, K...] transposed. The
// device's own convolution then does the work (oneDNN on the CPU: a 3 x 3 kernel over 8 x 64 x
// 28 x 28 took 3 ms this way against 7.5 by the patches' products; a training step on vulkan:0
// 3.3 s to 2.3). With groups, one convolution would pair every group with every other (per
// kernel offset instead), and a device without a convolution of its own would lay out more
// (im2col's patches instead).
Tensor conv_weight_gradient(const Tensor& dz, const Tensor& x, const Shape& weight_shape,
                            const ops::Window& w, int64_t groups, Stream& s) {
  if (dz.numel() == 0 || x.numel() == 0) return zeros(weight_shape, dz.dtype(), s);
  if (groups != 1) return weight_gradient_by_offsets(dz, x, weight_shape, w, groups, s);
  if (!convolves_itself(x)) return weight_gradient_by_patches(dz, x, weight_shape, w, s);
  const size_t spatial = w.kernel.size();
  Tensor input = x.transpose(0, 1);  // [C, N, D...]
  ConvOptions options;
  for (size_t i = 0; i < spatial; ++i) {
    const auto d = static_cast<int64_t>(i) + 2;
    // What the forward's last window left unread at the end of the padded input.
    const int64_t unread = x.size(d) + w.pad_before[i] + w.pad_after[i] -
                           w.dilations[i] * (w.kernel[i] - 1) - 1 - (w.out[i] - 1) * w.strides[i];
    int64_t after = w.pad_after[i] - unread;
    if (after < 0) {  // the unread end lies in x itself: cropped
      input = input.slice(d, 0, input.size(d) + after);
      after = 0;
    }
    options.strides.push_back(w.dilations[i]);
    options.dilations.push_back(w.strides[i]);
    options.pads_before.push_back(w.pad_before[i]);
    options.pads_after.push_back(after);
  }
  const Tensor kernel = dz.transpose(0, 1).contiguous(s);  // [M, N, O...]
  return conv(input.contiguous(s), kernel, Tensor(), options, s).transpose(0, 1).contiguous(s);
}

Tensor conv_bias_gradient(const Tensor& dz, Stream& s) {
  std::vector<int64_t> axes{0};
  for (int64_t d = 2; d < dz.dim(); ++d) axes.push_back(d);
  return sum(dz, axes, false, s);
}

}  // namespace hal::autograd

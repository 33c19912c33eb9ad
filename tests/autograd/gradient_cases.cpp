// Every differentiable op of hal/ops.hpp and every view of Tensor, as gradient check cases:
// broadcasting operands, several axes, strided views, and the attributes that change a rule
// (keepdim, ignore_index, label smoothing, padding, strides, groups). Inputs keep away from the
// points where an op has no derivative (kinks, ties, the edges of a domain).
#include "gradient_cases.hpp"

namespace hal::test {
namespace {

using In = std::vector<Tensor>;

GradCase unary_case(const std::string& name, Tensor (*fn)(const Tensor&, Stream&), double low,
                    double high) {
  return {name, {{{3, 4}, low, high}}, [fn](const In& in, Stream& s) { return fn(in[0], s); }};
}

GradCase binary_case(const std::string& name, Tensor (*fn)(const Tensor&, const Tensor&, Stream&),
                     Shape a, Shape b, double low = -2, double high = 2) {
  return {name,
          {{std::move(a), low, high}, {std::move(b), low, high}},
          [fn](const In& in, Stream& s) { return fn(in[0], in[1], s); }};
}

Tensor scalar(double value, const Tensor& like, Stream& s) {
  return full({}, value, like.dtype(), s);
}

}  // namespace

std::vector<GradCase> gradient_cases() {
  std::vector<GradCase> cases{
      // Arithmetic, broadcasting both ways.
      binary_case("add_broadcast", add, {3, 1, 4}, {2, 4}),
      binary_case("sub_broadcast", sub, {4}, {3, 4}),
      binary_case("mul_broadcast", mul, {2, 3, 1}, {3, 5}),
      binary_case("div_broadcast", div, {3, 4}, {4}, 0.5, 2),
      binary_case("maximum", maximum, {3, 4}, {3, 4}),
      binary_case("minimum_broadcast", minimum, {3, 4}, {1, 4}),
      binary_case("pow", pow, {3, 4}, {3, 4}, 0.5, 2),
      {"where",
       {{{3, 4}, -1, 1, false}, {{3, 4}}, {{3, 1}}},
       [](const In& in, Stream& s) {
         return where(gt(in[0], scalar(0, in[0], s), s), in[1], in[2], s);
       }},
      {"cast_to_own_dtype",
       {{{2, 3}}},
       [](const In& in, Stream& s) { return mul(cast(in[0], in[0].dtype(), s), in[0], s); }},
      // Element functions.
      unary_case("neg", neg, -2, 2),
      unary_case("abs", abs, -2, 2),
      unary_case("relu", relu, -2, 2),
      unary_case("exp", exp, -2, 2),
      unary_case("log", log, 0.5, 3),
      unary_case("sqrt", sqrt, 0.5, 3),
      unary_case("rsqrt", rsqrt, 0.5, 3),
      unary_case("tanh", tanh, -2, 2),
      unary_case("sigmoid", sigmoid, -3, 3),
      unary_case("gelu", gelu, -3, 3),
      unary_case("silu", silu, -3, 3),
      unary_case("erf", erf, -2, 2),
      unary_case("sin", sin, -3, 3),
      unary_case("cos", cos, -3, 3),
      unary_case("tan", tan, -1.2, 1.2),
      unary_case("asin", asin, -0.9, 0.9),
      unary_case("acos", acos, -0.9, 0.9),
      unary_case("atan", atan, -3, 3),
      unary_case("sinh", sinh, -2, 2),
      unary_case("cosh", cosh, -2, 2),
      unary_case("asinh", asinh, -3, 3),
      unary_case("acosh", acosh, 1.2, 3),
      unary_case("atanh", atanh, -0.9, 0.9),
      // Reductions.
      {"sum_axes",
       {{{2, 3, 4}}},
       [](const In& in, Stream& s) {
         return sum(in[0], {0, 2}, false, s);
       }},
      {"sum_all", {{{2, 3}}}, [](const In& in, Stream& s) { return sum(in[0], {}, false, s); }},
      {"mean_keepdim",
       {{{2, 3, 4}}},
       [](const In& in, Stream& s) { return mean(in[0], {-1}, true, s); }},
      {"max_axis", {{{3, 5}}}, [](const In& in, Stream& s) { return max(in[0], {1}, false, s); }},
      {"min_all", {{{3, 5}}}, [](const In& in, Stream& s) { return min(in[0], {}, true, s); }},
      {"softmax_last",
       {{{3, 5}, -3, 3}},
       [](const In& in, Stream& s) { return softmax(in[0], -1, s); }},
      {"softmax_first",
       {{{4, 3}, -3, 3}},
       [](const In& in, Stream& s) { return softmax(in[0], 0, s); }},
      {"log_softmax",
       {{{3, 5}, -3, 3}},
       [](const In& in, Stream& s) { return log_softmax(in[0], 1, s); }},
      {"layer_norm",
       {{{3, 2, 4}, -2, 2}, {{2, 4}, 0.5, 1.5}, {{2, 4}}},
       [](const In& in, Stream& s) {
         return layer_norm(in[0], {2, 4}, in[1], in[2], 1e-5, s);
       }},
      {"layer_norm_rows",  // rows in parts on the CPU, the parameters' sums added across them
       {{{29, 11}, -2, 2}, {{11}, 0.5, 1.5}, {{11}}},
       [](const In& in, Stream& s) { return layer_norm(in[0], {11}, in[1], in[2], 1e-5, s); }},
      // Rows enough that OpenCL and CUDA sum the parameters' gradients in parts of rows, added
      // in a second pass (portable_rowwise.cpp: 6 parts of 16 rows; rms_norm's weight alone, 5).
      {"layer_norm_many_rows",
       {{{96, 7}, -2, 2}, {{7}, 0.5, 1.5}, {{7}}},
       [](const In& in, Stream& s) { return layer_norm(in[0], {7}, in[1], in[2], 1e-5, s); }},
      {"rms_norm_many_rows",
       {{{80, 9}, -2, 2}, {{9}, 0.5, 1.5}},
       [](const In& in, Stream& s) { return rms_norm(in[0], {9}, in[1], 1e-6, s); }},
      {"layer_norm_plain",
       {{{4, 6}, -2, 2}},
       [](const In& in, Stream& s) { return layer_norm(in[0], {6}, Tensor(), Tensor(), 1e-5, s); }},
      {"rms_norm",
       {{{3, 5}, -2, 2}, {{5}, 0.5, 1.5}},
       [](const In& in, Stream& s) { return rms_norm(in[0], {5}, in[1], 1e-6, s); }},
      // Products.
      binary_case("matmul", matmul, {3, 4}, {4, 5}),
      binary_case("matmul_batched_broadcast", matmul, {2, 3, 4}, {4, 2}),
      binary_case("matmul_batch_both", matmul, {2, 1, 3, 4}, {3, 4, 2}),
      binary_case("matmul_vector_matrix", matmul, {4}, {4, 3}),
      binary_case("matmul_matrix_vector", matmul, {3, 4}, {4}),
      {"matmul_transposed_view",
       {{{4, 3}}, {{5, 4}}},
       [](const In& in, Stream& s) {
         return matmul(in[0].transpose(0, 1), in[1].transpose(0, 1), s);
       }},
      {"conv2d",
       {{{2, 3, 6, 5}}, {{4, 3, 3, 2}}, {{4}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.strides = {2, 1};
         o.pads_before = {1, 0};
         o.pads_after = {1, 1};
         return conv(in[0], in[1], in[2], o, s);
       }},
      {"conv2d_groups_dilated",
       {{{1, 4, 7, 7}}, {{6, 2, 2, 2}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.dilations = {2, 1};
         o.groups = 2;
         return conv(in[0], in[1], Tensor(), o, s);
       }},
      // A padding past the kernel's span in front (x's gradient then crops its input), one
      // stride that leaves a remainder, a dilation.
      {"conv2d_strided_dilated_padded",
       {{{2, 3, 9, 8}}, {{4, 3, 2, 3}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.strides = {2, 3};
         o.dilations = {2, 1};
         o.pads_before = {3, 0};
         o.pads_after = {0, 2};
         return conv(in[0], in[1], Tensor(), o, s);
       }},
      {"conv3d_groups_strided",
       {{{1, 4, 4, 5, 3}}, {{2, 2, 2, 3, 1}}, {{2}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.groups = 2;
         o.strides = {1, 2, 1};
         o.pads_before = {1, 1, 0};
         o.pads_after = {0, 1, 0};
         return conv(in[0], in[1], in[2], o, s);
       }},
      // The weight's gradient as a convolution with strides and dilations swapped, where the
      // forward leaves the end of x unread (cropped: dimension 0) or of its padding (dimension 2).
      {"conv3d_strided_dilated",
       {{{2, 2, 5, 4, 6}}, {{3, 2, 2, 2, 3}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.strides = {2, 1, 2};
         o.dilations = {1, 2, 1};
         o.pads_before = {0, 1, 1};
         o.pads_after = {0, 0, 1};
         return conv(in[0], in[1], Tensor(), o, s);
       }},
      // x's gradient by phases of the strides (ops/transposed_conv.cpp): a kernel narrower than
      // its stride (phases no tap reaches) and a dilation sharing a factor with the stride
      // (every other tap in a phase, at half the dilation).
      {"conv2d_stride_past_kernel",
       {{{2, 2, 9, 11}}, {{3, 2, 1, 3}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.strides = {3, 2};
         o.dilations = {1, 2};
         o.pads_before = {0, 1};
         o.pads_after = {2, 0};
         return conv(in[0], in[1], Tensor(), o, s);
       }},
      // The weight's gradient per kernel offset: depthwise (a product of the gradient and x's
      // view summed over all but the channels) and with groups of several channels above.
      {"conv2d_depthwise_strided",
       {{{2, 3, 7, 6}}, {{3, 1, 3, 2}}, {{3}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.groups = 3;
         o.strides = {2, 1};
         o.dilations = {1, 2};
         o.pads_before = {1, 0};
         o.pads_after = {1, 1};
         return conv(in[0], in[1], in[2], o, s);
       }},
      {"conv1d_relu_residual",
       {{{2, 2, 7}}, {{3, 2, 3}}, {{3}}, {{2, 3, 5}}},
       [](const In& in, Stream& s) {
         ConvOptions o;
         o.relu = true;
         o.residual = in[3];
         return conv(in[0], in[1], in[2], o, s);
       }},
      // conv_transpose's gradients: conv of dy for x, conv's weight gradient with x and dy
      // exchanged for the weight. Groups, output_padding within the stride; past it (below the
      // dilation), where conv of dy reaches past x and is cut; three dimensions.
      {"conv_transpose2d_groups",
       {{{2, 4, 3, 4}}, {{4, 3, 3, 2}}, {{6}}},
       [](const In& in, Stream& s) {
         ConvTransposeOptions o;
         o.groups = 2;
         o.strides = {2, 1};
         o.pads_before = {1, 0};
         o.pads_after = {0, 1};
         o.output_padding = {1, 0};
         return conv_transpose(in[0], in[1], in[2], o, s);
       }},
      {"conv_transpose1d_output_padding_past_stride",
       {{{2, 2, 5}}, {{2, 3, 2}}},
       [](const In& in, Stream& s) {
         ConvTransposeOptions o;
         o.dilations = {3};
         o.output_padding = {2};
         return conv_transpose(in[0], in[1], Tensor(), o, s);
       }},
      {"conv_transpose3d_strided_dilated",
       {{{1, 2, 2, 3, 2}}, {{2, 2, 2, 2, 3}}, {{2}}},
       [](const In& in, Stream& s) {
         ConvTransposeOptions o;
         o.strides = {2, 1, 2};
         o.dilations = {1, 2, 1};
         o.pads_before = {1, 0, 1};
         o.pads_after = {0, 1, 1};
         return conv_transpose(in[0], in[1], in[2], o, s);
       }},
      {"max_pool2d",
       {{{2, 2, 5, 6}, -3, 3}},
       [](const In& in, Stream& s) {
         PoolOptions o;
         o.kernel = {2, 3};
         o.strides = {2, 2};
         o.pads_before = {1, 1};
         o.pads_after = {0, 1};
         return max_pool(in[0], o, s);
       }},
      {"avg_pool2d_ceil_include_pad",
       {{{1, 3, 5, 5}}},
       [](const In& in, Stream& s) {
         PoolOptions o;
         o.kernel = {3, 3};
         o.strides = {2, 2};
         o.pads_before = {1, 1};
         o.pads_after = {1, 1};
         o.ceil_mode = true;
         o.count_include_pad = true;
         return avg_pool(in[0], o, s);
       }},
      {"avg_pool1d",
       {{{2, 3, 8}}},
       [](const In& in, Stream& s) {
         PoolOptions o;
         o.kernel = {2};
         return avg_pool(in[0], o, s);
       }},
      // Layers.
      {"embedding",
       {{{6, 3}}, {{2, 4}, 0, 6, false, DType::i64}},
       [](const In& in, Stream& s) { return embedding(in[0], in[1], s); }},
      {"cross_entropy",
       {{{5, 4}, -2, 2}, {{5}, 0, 4, false, DType::i64}},
       [](const In& in, Stream& s) { return cross_entropy(in[0], in[1], -100, 0.0, s); }},
      {"cross_entropy_ignore_smoothing",
       {{{6, 5}, -2, 2}, {{6}, 0, 5, false, DType::i32}},
       [](const In& in, Stream& s) {
         // Targets equal to 2 are ignored.
         return cross_entropy(in[0], in[1], 2, 0.2, s);
       }},
      {"dropout", {{{4, 6}}}, [](const In& in, Stream& s) { return dropout(in[0], 0.4, 11, s); }},
      // Views and copies.
      {"reshape_view",
       {{{2, 3, 4}}},
       [](const In& in, Stream& s) {
         return mul(in[0].reshape({4, 6}), in[0].view({4, 6}), s);
       }},
      {"transpose_permute",
       {{{2, 3, 4}}},
       [](const In& in, Stream& s) {
         return add(in[0].transpose(0, 2).contiguous(s), in[0].permute({2, 1, 0}), s);
       }},
      {"slice_steps",
       {{{7, 5}}},
       [](const In& in, Stream& s) {
         return mul(in[0].slice(0, 1, 7, 2).slice(1, 1, 4), in[0].slice(1, 0, 5, 2).slice(0, 0, 3),
                    s);
       }},
      {"expand_squeeze_unsqueeze",
       {{{3, 1}}},
       [](const In& in, Stream& s) {
         return in[0].expand({2, 3, 4}).unsqueeze(0).squeeze(0).contiguous(s);
       }},
      {"concat",
       {{{2, 3}}, {{2, 1}}, {{2, 2}}},
       [](const In& in, Stream& s) {
         return concat({in[0], in[1], in[2], in[0]}, 1, s);
       }},
      {"concat_axis0_views",
       {{{4, 4}}},
       [](const In& in, Stream& s) {
         return concat({in[0].slice(0, 0, 2), in[0].transpose(0, 1)}, 0, s);
       }},
      // A composition: a leaf used twice, through several ops.
      {"mlp_layer",
       {{{4, 3}}, {{3, 5}}, {{5}}},
       [](const In& in, Stream& s) {
         const Tensor h = tanh(add(matmul(in[0], in[1], s), in[2], s), s);
         return mul(h, sum(in[1], {0}, false, s), s);
       }},
  };
  return cases;
}

}  // namespace hal::test

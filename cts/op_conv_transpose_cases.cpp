// op.conv_transpose.*: the transposed convolution against plain loops on the host in double
// precision (each input element scattered through the kernel): 1 to 3 spatial dimensions,
// strides, dilations, asymmetric padding, output_padding, groups (depthwise too), bias, strided
// views as inputs, and the errors. Each runs where `hal ops` lists conv_transpose (CPU fallback
// off): oneDNN's deconvolution on cpu:0 (but 2d_output_padding_past_stride, which takes the
// phases there too), the phases' convolutions elsewhere.
#include <cmath>

#include "values.hpp"

namespace hal::cts {
namespace {

ConvTransposeOptions options_of(std::vector<int64_t> strides, std::vector<int64_t> dilations,
                                std::vector<int64_t> before, std::vector<int64_t> after,
                                std::vector<int64_t> output_padding, int64_t groups) {
  ConvTransposeOptions options;
  options.strides = std::move(strides);
  options.dilations = std::move(dilations);
  options.pads_before = std::move(before);
  options.pads_after = std::move(after);
  options.output_padding = std::move(output_padding);
  options.groups = groups;
  return options;
}

struct ConvTransposeCase {
  const char* name;
  Shape x, w;  // [N, C, D...], [C, M/groups, K...]
  ConvTransposeOptions options;
  bool bias;
};

const ConvTransposeCase kCases[] = {
    {"1d", {2, 3, 7}, {3, 4, 3}, {}, true},
    {"1d_groups", {2, 4, 6}, {4, 3, 3}, options_of({2}, {}, {1}, {2}, {1}, 2), true},
    {"1d_strided_dilated_output_padding",
     {1, 2, 6},
     {2, 3, 4},
     options_of({3}, {2}, {1}, {2}, {1}, 1),
     false},
    // A decoder's upsampling: 4 x 4, stride 2, pads 1 doubles the size.
    {"2d_upsampling",
     {2, 4, 5, 6},
     {4, 3, 4, 4},
     options_of({2, 2}, {}, {1, 1}, {1, 1}, {}, 1),
     true},
    {"2d_asymmetric_pads",
     {1, 3, 5, 4},
     {3, 2, 3, 2},
     options_of({2, 3}, {1, 2}, {2, 0}, {0, 1}, {1, 2}, 1),
     true},
    {"2d_groups", {1, 6, 4, 5}, {6, 2, 3, 3}, options_of({2, 1}, {}, {1, 0}, {0, 1}, {}, 3), true},
    {"2d_depthwise",
     {2, 4, 5, 5},
     {4, 1, 3, 3},
     options_of({2, 2}, {}, {1, 1}, {1, 1}, {1, 1}, 4),
     false},
    // output_padding past the stride, below the dilation: more than the stride past the padding,
    // by phases on every device.
    {"2d_output_padding_past_stride",
     {1, 2, 4, 4},
     {2, 2, 2, 2},
     options_of({1, 1}, {3, 3}, {}, {}, {2, 1}, 1),
     true},
    {"3d",
     {1, 2, 3, 4, 3},
     {2, 3, 2, 3, 2},
     options_of({2, 1, 2}, {}, {0, 1, 1}, {1, 0, 1}, {1, 0, 1}, 1),
     true},
};

int64_t at(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return v.empty() ? fallback : v[i];
}

Shape output_shape(const Shape& xs, const Shape& ws, const ConvTransposeOptions& o) {
  Shape ys{xs[0], ws[1] * o.groups};
  for (size_t d = 0; d + 2 < xs.size(); ++d)
    ys.push_back((xs[d + 2] - 1) * at(o.strides, d, 1) - at(o.pads_before, d, 0) -
                 at(o.pads_after, d, 0) + at(o.dilations, d, 1) * (ws[d + 2] - 1) +
                 at(o.output_padding, d, 0) + 1);
  return ys;
}

// y[n, m, j s + k d - pad] += x[n, c, j] w[c, m within c's group, k], bias added first.
std::vector<double> reference(const std::vector<double>& x, const Shape& xs,
                              const std::vector<double>& w, const Shape& ws,
                              const std::vector<double>& bias, const ConvTransposeOptions& o,
                              const Shape& ys) {
  const size_t spatial = xs.size() - 2;
  const int64_t in_per_group = xs[1] / o.groups, out_per_group = ws[1];
  const int64_t positions = numel(Shape(xs.begin() + 2, xs.end()));
  const int64_t offsets = numel(Shape(ws.begin() + 2, ws.end()));
  const int64_t out_positions = numel(Shape(ys.begin() + 2, ys.end()));
  std::vector<double> y(static_cast<size_t>(numel(ys)), 0.0);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t m = 0; m < ys[1]; ++m)
      for (int64_t p = 0; p < out_positions; ++p)
        y[static_cast<size_t>((n * ys[1] + m) * out_positions + p)] =
            bias.empty() ? 0.0 : bias[static_cast<size_t>(m)];
  std::vector<int64_t> j(spatial), k(spatial);
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c) {
      const int64_t g = c / in_per_group;
      for (int64_t pos = 0; pos < positions; ++pos) {
        int64_t rest = pos;
        for (size_t d = spatial; d-- > 0;) {
          j[d] = rest % xs[d + 2];
          rest /= xs[d + 2];
        }
        const double xv = x[static_cast<size_t>((n * xs[1] + c) * positions + pos)];
        for (int64_t kpos = 0; kpos < offsets; ++kpos) {
          rest = kpos;
          for (size_t d = spatial; d-- > 0;) {
            k[d] = rest % ws[d + 2];
            rest /= ws[d + 2];
          }
          int64_t out = 0;
          bool inside = true;
          for (size_t d = 0; d < spatial; ++d) {
            const int64_t coord =
                j[d] * at(o.strides, d, 1) + k[d] * at(o.dilations, d, 1) - at(o.pads_before, d, 0);
            inside = inside && coord >= 0 && coord < ys[d + 2];
            out = out * ys[d + 2] + coord;
          }
          if (!inside) continue;
          for (int64_t mo = 0; mo < out_per_group; ++mo) {
            const int64_t m = g * out_per_group + mo;
            y[static_cast<size_t>((n * ys[1] + m) * out_positions + out)] +=
                xv * w[static_cast<size_t>((c * ws[1] + mo) * offsets + kpos)];
          }
        }
      }
    }
  return y;
}

void check_against_reference(const std::string& what, const std::vector<double>& got,
                             const std::vector<double>& want, double terms) {
  check(got.size() == want.size(), what + ": element count");
  // Sums of products of values up to 3 in magnitude: tolerance grows with their length.
  for (size_t i = 0; i < got.size(); ++i)
    check(std::fabs(got[i] - want[i]) <= 1e-5 * 9 * terms,
          what + " element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
              std::to_string(want[i]));
}

void check_case(const ConvTransposeCase& c, const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv_transpose"}, {DType::f32}, [&](DType dtype) {
    const Shape ys = output_shape(c.x, c.w, c.options);
    const auto x = inputs(static_cast<size_t>(numel(c.x)), dtype, 21);
    const auto w = inputs(static_cast<size_t>(numel(c.w)), dtype, 22);
    const auto b = c.bias ? inputs(static_cast<size_t>(ys[1]), dtype, 23) : std::vector<double>{};
    const Tensor y =
        conv_transpose(make(x, c.x, dtype, stream), make(w, c.w, dtype, stream),
                       c.bias ? make(b, {ys[1]}, dtype, stream) : Tensor(), c.options, stream);
    const std::string what = std::string(c.name) + " " + describe("conv_transpose", dtype);
    check(y.shape() == ys,
          what + ": shape " + to_string(y.shape()) + ", expected " + to_string(ys));
    check_against_reference(what, numbers(y, stream), reference(x, c.x, w, c.w, b, c.options, ys),
                            static_cast<double>(c.x[1] * numel(Shape(c.w.begin() + 2, c.w.end()))));
  });
}

// op.conv_transpose.views: x as a transposed view and w as every other filter of a larger
// tensor give what the reference gives for their contents.
void views(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv_transpose"}, {DType::f32}, [&](DType dtype) {
    const Shape xs{2, 3, 4, 5}, ws{3, 2, 3, 3};
    const auto x = inputs(static_cast<size_t>(numel(xs)), dtype, 24);
    const auto w = inputs(3 * 4 * 3 * 3, dtype, 25);
    std::vector<double> x_swapped(x.size()), w_every_other;
    for (int64_t nc = 0; nc < 6; ++nc)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 5; ++j)
          x_swapped[static_cast<size_t>((nc * 5 + j) * 4 + i)] =
              x[static_cast<size_t>((nc * 4 + i) * 5 + j)];
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t m = 0; m < 4; m += 2)
        for (int64_t k = 0; k < 9; ++k)
          w_every_other.push_back(w[static_cast<size_t>((c * 4 + m) * 9 + k)]);
    const Tensor xt = make(x_swapped, {2, 3, 5, 4}, dtype, stream).transpose(2, 3);
    const Tensor wv = make(w, {3, 4, 3, 3}, dtype, stream).slice(1, 0, 4, 2);
    const ConvTransposeOptions options = options_of({2, 2}, {}, {1, 1}, {1, 1}, {1, 0}, 1);
    const Shape ys = output_shape(xs, ws, options);
    check_against_reference("conv_transpose of views",
                            numbers(conv_transpose(xt, wv, Tensor(), options, stream), stream),
                            reference(x, xs, w_every_other, ws, {}, options, ys), 27);
  });
}

// op.conv_transpose.errors: shapes and options that do not fit are InvalidArgument naming
// conv_transpose and what.
void errors(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv_transpose"}, {DType::f32}, [&](DType dtype) {
    const Tensor x = zeros({1, 4, 5, 5}, dtype, stream);
    const Tensor w = zeros({4, 6, 3, 3}, dtype, stream);
    const auto bad = [&](const Tensor& xx, const Tensor& ww, const Tensor& bias,
                         const ConvTransposeOptions& o, const std::vector<std::string>& parts,
                         const std::string& what) {
      check_error([&] { conv_transpose(xx, ww, bias, o, stream); }, ErrorCode::InvalidArgument,
                  parts, what);
    };
    const ConvTransposeOptions plain;
    ConvTransposeOptions three_groups, zero_stride, big_output_padding, too_much_padding;
    three_groups.groups = 3;
    zero_stride.strides = {0, 1};
    big_output_padding.strides = {2, 2};
    big_output_padding.output_padding = {2, 0};
    too_much_padding.pads_before = {4, 0};
    too_much_padding.pads_after = {3, 0};
    bad(x, zeros({3, 6, 3, 3}, dtype, stream), {}, plain, {"conv_transpose", "[C, M/groups"},
        "weights for other channels");
    bad(x, w, {}, three_groups, {"groups 3"}, "groups that do not divide");
    bad(x, w, {}, zero_stride, {"strides", "[1, 16777216]"}, "a zero stride");
    bad(x, w, {}, big_output_padding, {"output_padding", "below the stride"},
        "output_padding as large as the stride");
    bad(x, w, {}, too_much_padding, {"no elements", "dimension 0"}, "padding past the window");
    bad(x, w, zeros({4}, dtype, stream), plain, {"bias", "[6]"}, "a bias of the wrong size");
    bad(zeros({4, 5}, dtype, stream), w, {}, plain, {"[N, C, D1]"}, "a 2-d input");
  });
}

}  // namespace

void add_op_conv_transpose_cases(Cases& cases) {
  for (const ConvTransposeCase& c : kCases)
    cases.push_back(
        {std::string("op.conv_transpose.") + c.name, [&c](const Device& d) { check_case(c, d); }});
  cases.push_back({"op.conv_transpose.views", views});
  cases.push_back({"op.conv_transpose.errors", errors});
}

}  // namespace hal::cts

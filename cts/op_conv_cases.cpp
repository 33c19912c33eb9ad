// op.conv.*: convolution against plain loops on the host in double precision: 1 to 3 spatial
// dimensions, strides, dilations, asymmetric padding, groups (depthwise too), bias, the fused
// ReLU, strided views as inputs, weights kept in the device's layout between calls, and the
// errors. Each runs where `hal ops` lists conv (CPU fallback off).
#include <cmath>

#include "values.hpp"

namespace hal::cts {
namespace {

ConvOptions options_of(std::vector<int64_t> strides, std::vector<int64_t> dilations,
                       std::vector<int64_t> before, std::vector<int64_t> after, int64_t groups) {
  ConvOptions options;
  options.strides = std::move(strides);
  options.dilations = std::move(dilations);
  options.pads_before = std::move(before);
  options.pads_after = std::move(after);
  options.groups = groups;
  return options;
}

struct ConvCase {
  const char* name;
  Shape x, w;  // [N, C, D...], [M, C/groups, K...]
  ConvOptions options;
  bool bias;
};

const ConvCase kConvCases[] = {
    {"1d", {2, 3, 11}, {4, 3, 3}, {}, true},
    {"1d_strided_dilated", {1, 2, 17}, {3, 2, 4}, options_of({2}, {3}, {1}, {2}, 1), false},
    {"2d", {1, 3, 8, 9}, {5, 3, 3, 3}, options_of({1, 1}, {}, {1, 1}, {1, 1}, 1), true},
    {"2d_asymmetric_pads",
     {2, 4, 7, 6},
     {6, 4, 2, 3},
     options_of({2, 1}, {1, 2}, {0, 2}, {1, 0}, 1),
     true},
    {"2d_groups", {1, 6, 9, 9}, {4, 3, 3, 3}, options_of({2, 2}, {}, {1, 1}, {1, 1}, 2), true},
    {"2d_depthwise", {2, 8, 6, 6}, {8, 1, 3, 3}, options_of({1, 1}, {}, {1, 1}, {1, 1}, 8), false},
    {"2d_pointwise_many_channels", {1, 64, 5, 5}, {32, 64, 1, 1}, {}, true},
    {"3d",
     {1, 2, 5, 6, 4},
     {3, 2, 2, 3, 2},
     options_of({1, 2, 1}, {}, {1, 0, 1}, {0, 1, 1}, 1),
     true},
};

// y[n, m, o...] = bias[m] + sum over c in m's group and k... of x[n, c, o*s + k*d - pad] w[m, c,
// k], for any number of spatial dimensions, then max(y, 0) where asked.
std::vector<double> conv_reference(const std::vector<double>& x, const Shape& xs,
                                   const std::vector<double>& w, const Shape& ws,
                                   const std::vector<double>& bias, const ConvOptions& o,
                                   const Shape& ys) {
  const size_t spatial = xs.size() - 2;
  auto at = [&](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[i];
  };
  const int64_t groups = o.groups, in_per_group = ws[1], out_per_group = ws[0] / groups;
  std::vector<double> y(static_cast<size_t>(numel(ys)), 0.0);
  std::vector<int64_t> out(spatial), k(spatial);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t m = 0; m < ys[1]; ++m) {
      std::fill(out.begin(), out.end(), 0);
      for (int64_t pos = 0; pos < numel(Shape(ys.begin() + 2, ys.end())); ++pos) {
        double total = bias.empty() ? 0.0 : bias[static_cast<size_t>(m)];
        const int64_t g = m / out_per_group;
        for (int64_t c = 0; c < in_per_group; ++c) {
          std::fill(k.begin(), k.end(), 0);
          for (int64_t kpos = 0; kpos < numel(Shape(ws.begin() + 2, ws.end())); ++kpos) {
            int64_t xi = n * xs[1] + g * in_per_group + c, wi = m * ws[1] + c;
            bool inside = true;
            for (size_t d = 0; d < spatial; ++d) {
              const int64_t coord = out[d] * at(o.strides, d, 1) + k[d] * at(o.dilations, d, 1) -
                                    at(o.pads_before, d, 0);
              inside = inside && coord >= 0 && coord < xs[d + 2];
              xi = xi * xs[d + 2] + coord;
              wi = wi * ws[d + 2] + k[d];
            }
            if (inside) total += x[static_cast<size_t>(xi)] * w[static_cast<size_t>(wi)];
            for (size_t d = spatial; d-- > 0;) {
              if (++k[d] < ws[d + 2]) break;
              k[d] = 0;
            }
          }
        }
        int64_t yi = n * ys[1] + m;
        for (size_t d = 0; d < spatial; ++d) yi = yi * ys[d + 2] + out[d];
        y[static_cast<size_t>(yi)] = o.relu ? std::max(total, 0.0) : total;
        for (size_t d = spatial; d-- > 0;) {
          if (++out[d] < ys[d + 2]) break;
          out[d] = 0;
        }
      }
    }
  return y;
}

Shape output_shape(const Shape& xs, const Shape& ws, const ConvOptions& o) {
  Shape ys{xs[0], ws[0]};
  for (size_t d = 0; d + 2 < xs.size(); ++d) {
    auto at = [&](const std::vector<int64_t>& v, int64_t fallback) {
      return v.empty() ? fallback : v[d];
    };
    const int64_t span = at(o.dilations, 1) * (ws[d + 2] - 1) + 1;
    ys.push_back(
        (xs[d + 2] + at(o.pads_before, 0) + at(o.pads_after, 0) - span) / at(o.strides, 1) + 1);
  }
  return ys;
}

void check_conv(const ConvCase& c, bool relu, const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv"}, {DType::f32}, [&](DType dtype) {
    ConvOptions options = c.options;
    options.relu = relu;
    const auto x = inputs(static_cast<size_t>(numel(c.x)), dtype, 1);
    const auto w = inputs(static_cast<size_t>(numel(c.w)), dtype, 2);
    const auto b = c.bias ? inputs(static_cast<size_t>(c.w[0]), dtype, 3) : std::vector<double>{};
    const Shape ys = output_shape(c.x, c.w, options);
    const Tensor y = conv(make(x, c.x, dtype, stream), make(w, c.w, dtype, stream),
                          c.bias ? make(b, {c.w[0]}, dtype, stream) : Tensor(), options, stream);
    const std::string what =
        std::string(c.name) + (relu ? " relu " : " ") + describe("conv", dtype);
    check(y.shape() == ys,
          what + ": shape " + to_string(y.shape()) + ", expected " + to_string(ys));
    std::vector<double> want = conv_reference(x, c.x, w, c.w, b, options, ys);
    // Sums of products of values up to 3 in magnitude: tolerance grows with their length.
    const double terms = static_cast<double>(numel(Shape(c.w.begin() + 1, c.w.end())));
    const std::vector<double> got = numbers(y, stream);
    check(got.size() == want.size(), what + ": element count");
    for (size_t i = 0; i < got.size(); ++i)
      check(std::fabs(got[i] - want[i]) <= 1e-5 * 9 * terms,
            what + " element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                ", expected " + std::to_string(want[i]));
  });
}

// op.conv.residual: relu(conv(x) + r), the sum and the ReLU fused, r a strided view too.
void conv_residual(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv"}, {DType::f32}, [&](DType dtype) {
    const ConvCase& c = kConvCases[2];  // 2d, padded to keep its size
    const Shape ys = output_shape(c.x, c.w, c.options);
    const auto x = inputs(static_cast<size_t>(numel(c.x)), dtype, 11);
    const auto w = inputs(static_cast<size_t>(numel(c.w)), dtype, 12);
    const auto b = inputs(static_cast<size_t>(c.w[0]), dtype, 13);
    const auto r = inputs(static_cast<size_t>(numel(ys)), dtype, 14);
    ConvOptions options = c.options;
    options.relu = true;
    Shape swapped = ys;
    std::swap(swapped[2], swapped[3]);
    std::vector<double> r_swapped(r.size());  // stored with the spatial axes swapped
    for (int64_t m = 0; m < ys[1]; ++m)
      for (int64_t i = 0; i < ys[2]; ++i)
        for (int64_t j = 0; j < ys[3]; ++j)
          r_swapped[static_cast<size_t>((m * ys[3] + j) * ys[2] + i)] =
              r[static_cast<size_t>((m * ys[2] + i) * ys[3] + j)];
    options.residual = make(r_swapped, swapped, dtype, stream).transpose(2, 3);
    const Tensor y = conv(make(x, c.x, dtype, stream), make(w, c.w, dtype, stream),
                          make(b, {c.w[0]}, dtype, stream), options, stream);
    ConvOptions plain = c.options;
    std::vector<double> want = conv_reference(x, c.x, w, c.w, b, plain, ys);
    for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(want[i] + r[i], 0.0);
    const std::vector<double> got = numbers(y, stream);
    check(got.size() == want.size(), "residual: element count");
    for (size_t i = 0; i < got.size(); ++i)
      check(std::fabs(got[i] - want[i]) <= 1e-5 * 9 * 28,
            "residual element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                ", expected " + std::to_string(want[i]));
  });
}

// op.conv.views: x as a transposed view and w as every other filter of a larger tensor give the
// same result as their contiguous copies.
void conv_views(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv"}, {DType::f32}, [&](DType dtype) {
    const auto x = inputs(2 * 3 * 6 * 5, dtype, 4);
    const auto w = inputs(8 * 3 * 3 * 3, dtype, 5);
    const Tensor xt = make(x, {2, 3, 5, 6}, dtype, stream).transpose(2, 3);  // [2, 3, 6, 5]
    const Tensor wv = make(w, {8, 3, 3, 3}, dtype, stream).slice(0, 0, 8, 2);
    const ConvOptions options = options_of({1, 1}, {}, {1, 1}, {1, 1}, 1);
    const auto got = numbers(conv(xt, wv, Tensor(), options, stream), stream);
    const auto want = numbers(
        conv(xt.contiguous(stream), wv.contiguous(stream), Tensor(), options, stream), stream);
    check_close(got, want, dtype, "conv of views");
  });
}

// op.conv.constant_weights: weights declared constant are kept in the device's layout; new
// weights in a buffer at the same place (the caching allocator hands the freed block back)
// must be read again, not the kept copy.
void conv_constant_weights(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv"}, {DType::f32}, [&](DType dtype) {
    const Shape xs{1, 16, 6, 6}, ws{16, 16, 3, 3};
    ConvOptions options = options_of({1, 1}, {}, {1, 1}, {1, 1}, 1);
    options.constant_weights = true;
    const auto x = inputs(static_cast<size_t>(numel(xs)), dtype, 6);
    const Tensor xt = make(x, xs, dtype, stream);
    const Shape ys = output_shape(xs, ws, options);
    for (uint32_t seed = 7; seed < 10; ++seed) {
      const auto w = inputs(static_cast<size_t>(numel(ws)), dtype, seed);
      const Tensor wt = make(w, ws, dtype, stream);
      const auto want = conv_reference(x, xs, w, ws, {}, options, ys);
      for (int run = 0; run < 2; ++run) {
        const auto got = numbers(conv(xt, wt, Tensor(), options, stream), stream);
        for (size_t i = 0; i < got.size(); ++i)
          check(std::fabs(got[i] - want[i]) <= 1e-5 * 9 * 144,
                "weights " + std::to_string(seed) + ", run " + std::to_string(run) + ": element " +
                    std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                    std::to_string(want[i]));
      }
    }
  });
}

// op.conv.errors: shapes and options that do not fit are InvalidArgument naming conv and what.
void conv_errors(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"conv"}, {DType::f32}, [&](DType dtype) {
    const Tensor x = zeros({1, 4, 5, 5}, dtype, stream);
    const Tensor w = zeros({6, 4, 3, 3}, dtype, stream);
    const auto bad = [&](const Tensor& xx, const Tensor& ww, const Tensor& bias,
                         const ConvOptions& o, const std::vector<std::string>& parts,
                         const std::string& what) {
      check_error([&] { conv(xx, ww, bias, o, stream); }, ErrorCode::InvalidArgument, parts, what);
    };
    const ConvOptions plain;
    ConvOptions three_groups, zero_stride, one_stride, negative_pad;
    three_groups.groups = 3;
    zero_stride.strides = {0, 1};
    one_stride.strides = {1};
    negative_pad.pads_before = {-1, 0};
    bad(x, zeros({6, 3, 3, 3}, dtype, stream), {}, plain, {"conv", "groups 1"}, "channels differ");
    bad(x, w, {}, three_groups, {"groups 3"}, "groups that do not divide");
    bad(x, w, {}, zero_stride, {"strides", "[1, 16777216]"}, "a zero stride");
    bad(x, w, {}, one_stride, {"strides", "2 spatial"}, "one stride for two dimensions");
    bad(x, w, {}, negative_pad, {"pads_before"}, "a negative pad");
    bad(x, zeros({6, 4, 7, 7}, dtype, stream), {}, plain, {"larger than the padded input"},
        "a window larger than the input");
    bad(x, w, zeros({5}, dtype, stream), plain, {"bias", "[6]"}, "a bias of the wrong size");
    bad(zeros({4, 5}, dtype, stream), w, {}, plain, {"[N, C, D1]"}, "a 2-d input");
    bad(x, zeros({6, 4, 3}, dtype, stream), {}, plain, {"rank"}, "weights of another rank");
    ConvOptions small_residual;
    small_residual.residual = zeros({1, 6, 2, 2}, dtype, stream);
    bad(x, w, {}, small_residual, {"residual", "[1, 6, 3, 3]"}, "a residual of another shape");
  });
}

}  // namespace

void add_op_conv_cases(Cases& cases) {
  for (const ConvCase& c : kConvCases) {
    cases.push_back(
        {std::string("op.conv.") + c.name, [&c](const Device& d) { check_conv(c, false, d); }});
  }
  cases.push_back({"op.conv.relu", [](const Device& d) { check_conv(kConvCases[3], true, d); }});
  cases.push_back({"op.conv.residual", conv_residual});
  cases.push_back({"op.conv.views", conv_views});
  cases.push_back({"op.conv.constant_weights", conv_constant_weights});
  cases.push_back({"op.conv.errors", conv_errors});
}

}  // namespace hal::cts

// ONNX's GridSample (opset 16, PyTorch's grid_sample, from which ONNX's test data comes): X
// [N, C, H, W] read at the points of grid [N, Ho, Wo, 2] (x then y, -1 to 1 across X) by
// bilinear, nearest or bicubic interpolation, with zeros, border or reflection padding. The
// taps' positions and weights are elementwise ops over the grid; each tap's values are rows of
// X seen as [N * H * W, C], gathered by `embedding`. So it runs wherever those run, and its
// sums are PyTorch's, term by term in PyTorch's order.
#include <array>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

enum class Mode { bilinear, nearest, bicubic };
enum class Padding { zeros, border, reflection };

class Sampler {
 public:
  Sampler(const OpContext& ctx, const Tensor& x, const Tensor& grid, Padding padding,
          bool align_corners)
      : s_(ctx.stream()),
        dtype_(x.dtype() == DType::f64 ? DType::f64 : DType::f32),
        n_(x.size(0)),
        c_(x.size(1)),
        h_(x.size(2)),
        w_(x.size(3)),
        ho_(grid.size(1)),
        wo_(grid.size(2)),
        padding_(padding),
        align_corners_(align_corners) {
    // X's pixels as rows of C channels, one image after another; a tap at (x, y) of image n
    // is row n * H * W + y * W + x.
    table_ = cast(x, dtype_, s_).permute({0, 2, 3, 1}).contiguous(s_).reshape({n_ * h_ * w_, c_});
    image_rows_ = mul(arange(0, static_cast<double>(n_), 1, DType::i64, s_).reshape({n_, 1, 1}),
                      full({}, h_ * w_, DType::i64, s_), s_);
    const Tensor points = cast(grid, dtype_, s_);
    gx_ = points.slice(3, 0, 1).reshape({n_, ho_, wo_});
    gy_ = points.slice(3, 1, 2).reshape({n_, ho_, wo_});
  }

  // [N, C, Ho, Wo] in the dtype computed in.
  Tensor sample(Mode mode) const {
    Tensor out;
    if (mode == Mode::bicubic) {
      out = bicubic();
    } else {
      const Tensor ix = pad(unnormalize(gx_, w_), w_);
      const Tensor iy = pad(unnormalize(gy_, h_), h_);
      out = mode == Mode::nearest ? at(round(ix, s_), round(iy, s_)) : bilinear(ix, iy);
    }
    return out.permute({0, 3, 1, 2}).contiguous(s_);
  }

 private:
  Tensor scalar(double value) const { return full({}, value, dtype_, s_); }
  Tensor plus(const Tensor& x, double value) const { return add(x, scalar(value), s_); }
  // Each of [N, Ho, Wo] weights applied to every channel of [N, Ho, Wo, C].
  Tensor weighed(const Tensor& values, const Tensor& weights) const {
    return mul(values, weights.reshape({n_, ho_, wo_, 1}), s_);
  }

  // grid_sampler_unnormalize: -1 and 1 are the corner pixels' centres with align_corners, their
  // outer edges without.
  Tensor unnormalize(const Tensor& coordinate, int64_t size) const {
    const Tensor shifted = plus(coordinate, 1);
    if (align_corners_)
      return mul(div(shifted, scalar(2), s_), scalar(static_cast<double>(size - 1)), s_);
    return div(plus(mul(shifted, scalar(static_cast<double>(size)), s_), -1), scalar(2), s_);
  }

  // clip_coordinates: into [0, size - 1], NaN to 0 (as PyTorch clamps it, on purpose).
  Tensor clip(const Tensor& x, int64_t size) const {
    const Tensor zero = scalar(0);
    return minimum(where(gt(x, zero, s_), x, zero, s_), scalar(static_cast<double>(size - 1)), s_);
  }

  // reflect_coordinates: x mirrored into [twice_low / 2, twice_high / 2] at its ends, as often
  // as it takes.
  Tensor reflect(const Tensor& x, int64_t twice_low, int64_t twice_high) const {
    if (twice_low == twice_high) return full(x.shape(), 0, dtype_, s_);
    const double low = static_cast<double>(twice_low) / 2;
    const double span = static_cast<double>(twice_high - twice_low) / 2;
    const Tensor distance = abs(plus(x, -low), s_);
    const Tensor flips = floor(div(distance, scalar(span), s_), s_);
    const Tensor extra = sub(distance, mul(flips, scalar(span), s_), s_);  // fmod: distance >= 0
    const Tensor half = floor(div(flips, scalar(2), s_), s_);
    const Tensor even = eq(flips, mul(half, scalar(2), s_), s_);
    return where(even, plus(extra, low), plus(sub(scalar(span), extra, s_), low), s_);
  }

  // compute_coordinates: where padding moves a coordinate (bilinear and nearest move the
  // point, bicubic each of its taps); zeros leaves it, and taps outside read 0.
  Tensor pad(const Tensor& x, int64_t size) const {
    switch (padding_) {
      case Padding::border:
        return clip(x, size);
      case Padding::reflection:
        return clip(align_corners_ ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1),
                    size);
      case Padding::zeros:
        break;
    }
    return x;
  }

  // X at whole-numbered points (xi, yi), [N, Ho, Wo] each: [N, Ho, Wo, C], 0 outside X.
  Tensor at(const Tensor& xi, const Tensor& yi) const {
    const auto within = [&](const Tensor& t, int64_t size) {
      return logical_and_of(ge(t, scalar(0), s_), le(t, scalar(size - 1.0), s_), s_);
    };
    const Tensor inside = logical_and_of(within(xi, w_), within(yi, h_), s_);
    // Points outside (NaN too) read row 0 of their image, then give 0.
    const Tensor column = cast(where(inside, xi, scalar(0), s_), DType::i64, s_);
    const Tensor row = cast(where(inside, yi, scalar(0), s_), DType::i64, s_);
    const Tensor rows =
        add(add(image_rows_, mul(row, full({}, w_, DType::i64, s_), s_), s_), column, s_);
    return where(inside.reshape({n_, ho_, wo_, 1}), embedding(table_, rows, s_), scalar(0), s_);
  }

  Tensor bilinear(const Tensor& ix, const Tensor& iy) const {
    const Tensor x0 = floor(ix, s_), y0 = floor(iy, s_);
    const Tensor x1 = plus(x0, 1), y1 = plus(y0, 1);
    const Tensor east = sub(ix, x0, s_), west = sub(x1, ix, s_);
    const Tensor south = sub(iy, y0, s_), north = sub(y1, iy, s_);
    Tensor out = weighed(at(x0, y0), mul(west, north, s_));
    out = add(out, weighed(at(x1, y0), mul(east, north, s_)), s_);
    out = add(out, weighed(at(x0, y1), mul(west, south, s_)), s_);
    return add(out, weighed(at(x1, y1), mul(east, south, s_)), s_);
  }

  // get_cubic_upsample_coefficients with A = -0.75: the weights of the taps at -1, 0, 1 and 2
  // from the point's whole part, t its fraction.
  std::array<Tensor, 4> cubic_weights(const Tensor& t) const {
    constexpr double a = -0.75;
    const auto near = [&](const Tensor& x) {  // ((A + 2) x - (A + 3)) x x + 1, |x| <= 1
      return plus(mul(mul(plus(mul(x, scalar(a + 2), s_), -(a + 3)), x, s_), x, s_), 1);
    };
    const auto far = [&](const Tensor& x) {  // ((A x - 5A) x + 8A) x - 4A, 1 < |x| < 2
      return plus(mul(plus(mul(plus(mul(x, scalar(a), s_), -5 * a), x, s_), 8 * a), x, s_), -4 * a);
    };
    const Tensor rest = sub(scalar(1), t, s_);
    return {far(plus(t, 1)), near(t), near(rest), far(plus(rest, 1))};
  }

  Tensor bicubic() const {
    const Tensor ix = unnormalize(gx_, w_), iy = unnormalize(gy_, h_);
    const Tensor x0 = floor(ix, s_), y0 = floor(iy, s_);
    const std::array<Tensor, 4> wx = cubic_weights(sub(ix, x0, s_));
    const std::array<Tensor, 4> wy = cubic_weights(sub(iy, y0, s_));
    Tensor out;
    for (int j = 0; j < 4; ++j) {
      const Tensor yj = pad(plus(y0, j - 1), h_);
      Tensor row;
      for (int i = 0; i < 4; ++i) {
        const Tensor tap = weighed(at(pad(plus(x0, i - 1), w_), yj), wx[i]);
        row = i == 0 ? tap : add(row, tap, s_);
      }
      out = j == 0 ? weighed(row, wy[j]) : add(out, weighed(row, wy[j]), s_);
    }
    return out;
  }

  Stream& s_;
  DType dtype_;
  int64_t n_, c_, h_, w_, ho_, wo_;
  Padding padding_;
  bool align_corners_;
  Tensor table_, image_rows_, gx_, gy_;
};

Outputs grid_sample(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const Tensor& grid = in.at(1);
  if (x.dim() != 4)
    ctx.unsupported("X " + to_string(x.shape()) + ": only 4-d inputs [N, C, H, W] (opset 16)");
  if (grid.dim() != 4 || grid.size(3) != 2 || grid.size(0) != x.size(0))
    ctx.invalid("grid " + to_string(grid.shape()) + " is not [N, H_out, W_out, 2] for X " +
                to_string(x.shape()));
  if (!is_floating(x.dtype()) || !is_floating(grid.dtype()))
    ctx.unsupported("X of " + std::string(to_string(x.dtype())) + " and grid of " +
                    std::string(to_string(grid.dtype())) + ": floating types only");
  const std::string mode_name = ctx.attr_string("mode", "bilinear");
  Mode mode = Mode::bilinear;
  if (mode_name == "nearest")
    mode = Mode::nearest;
  else if (mode_name == "bicubic")
    mode = Mode::bicubic;
  else if (mode_name != "bilinear")
    ctx.invalid("mode '" + mode_name + "' is not bilinear, nearest or bicubic");
  const std::string padding_name = ctx.attr_string("padding_mode", "zeros");
  Padding padding = Padding::zeros;
  if (padding_name == "border")
    padding = Padding::border;
  else if (padding_name == "reflection")
    padding = Padding::reflection;
  else if (padding_name != "zeros")
    ctx.invalid("padding_mode '" + padding_name + "' is not zeros, border or reflection");
  Stream& s = ctx.stream();
  const Shape out_shape{x.size(0), x.size(1), grid.size(1), grid.size(2)};
  if (x.numel() == 0 || grid.numel() == 0) return {zeros(out_shape, x.dtype(), s)};
  const Sampler sampler(ctx, x, grid, padding, ctx.attr_int("align_corners", 0) != 0);
  return {cast(sampler.sample(mode), x.dtype(), s)};
}

}  // namespace

std::vector<OnnxOp> grid_sample_onnx_ops() { return {{"GridSample", 16, grid_sample}}; }

}  // namespace hal::model

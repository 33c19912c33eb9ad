// ONNX's RoiAlign (opset 10 and 16), as onnxruntime and torchvision compute it: each region of
// interest cut into output_height x output_width bins, each bin sampled on a grid of points
// (sampling_ratio a side, or as many as the bin is pixels wide), each point read bilinearly
// from X; a bin's value is the mean of its points, or with mode "max" the largest weighted tap
// (onnxruntime's rule). The regions are read to the host, which works out every point's four
// taps and weights; the taps are rows of X seen as [N * H * W, C], gathered by `embedding`, so
// it runs wherever embedding, mul and the reductions run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

struct Region {
  int64_t image = 0;
  double start_x = 0, start_y = 0, width = 0, height = 0;
};

struct Geometry {
  int64_t height = 0, width = 0;          // X's
  int64_t out_height = 0, out_width = 0;  // the bins
  int64_t sampling = 0;                   // points a side per bin; 0: adaptive
  double scale = 1;
  bool half_pixel = true;
  bool max = false;
};

// The taps of every point of a chunk of regions: `rows` index X's pixels as rows (the row past
// the last is zeros: taps of absent points and points off the image read it), `weights` their
// bilinear weights, `real` whether the point exists (bins of a region with fewer points than the
// chunk's most are padded), `counts` each bin's number of points.
struct Taps {
  std::vector<int64_t> rows;
  std::vector<double> weights;
  std::vector<uint8_t> real;
  std::vector<double> counts;
  int64_t per_bin = 0;  // points per bin in the chunk, each four taps
};

// An inverted region (x2 < x1) has none adaptively: onnxruntime's loops run no times there.
int64_t points_a_side(int64_t sampling, double extent, int64_t bins) {
  if (sampling > 0) return sampling;
  return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(extent / static_cast<double>(bins))));
}

// onnxruntime's bilinear_interpolate: a point more than one pixel off the image reads nothing;
// one within a pixel of the edge is moved onto it.
void add_point(const Geometry& g, int64_t image, double y, double x, Taps& taps) {
  const int64_t nothing = 0;  // the zero row
  if (y < -1.0 || y > static_cast<double>(g.height) || x < -1.0 ||
      x > static_cast<double>(g.width)) {
    for (int k = 0; k < 4; ++k) {
      taps.rows.push_back(nothing);
      taps.weights.push_back(0);
    }
    return;
  }
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= g.height - 1) {
    y_high = y_low = g.height - 1;
    y = static_cast<double>(y_low);
  }
  if (x_low >= g.width - 1) {
    x_high = x_low = g.width - 1;
    x = static_cast<double>(x_low);
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  const int64_t base = image * g.height * g.width;
  for (const auto& [row, weight] : {std::pair{y_low * g.width + x_low, hy * hx},
                                    {y_low * g.width + x_high, hy * lx},
                                    {y_high * g.width + x_low, ly * hx},
                                    {y_high * g.width + x_high, ly * lx}}) {
    taps.rows.push_back(base + row + 1);  // + 1: row 0 of the table is the zero row
    taps.weights.push_back(weight);
  }
}

Taps taps_of(const Geometry& g, const std::vector<Region>& regions) {
  Taps taps;
  taps.per_bin = 1;
  for (const Region& r : regions)
    taps.per_bin = std::max(taps.per_bin, points_a_side(g.sampling, r.height, g.out_height) *
                                              points_a_side(g.sampling, r.width, g.out_width));
  for (const Region& r : regions) {
    const double bin_h = r.height / static_cast<double>(g.out_height);
    const double bin_w = r.width / static_cast<double>(g.out_width);
    const int64_t grid_h = points_a_side(g.sampling, r.height, g.out_height);
    const int64_t grid_w = points_a_side(g.sampling, r.width, g.out_width);
    for (int64_t ph = 0; ph < g.out_height; ++ph)
      for (int64_t pw = 0; pw < g.out_width; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy)
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double y = r.start_y + static_cast<double>(ph) * bin_h +
                             (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            const double x = r.start_x + static_cast<double>(pw) * bin_w +
                             (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            add_point(g, r.image, y, x, taps);
            taps.real.insert(taps.real.end(), 4, 1);
          }
        // A bin of no points (a region of no height or width) is 0 in either mode, as in
        // onnxruntime: its first padded point reads the zero row as a real one.
        for (int64_t extra = grid_h * grid_w; extra < taps.per_bin; ++extra)
          for (int k = 0; k < 4; ++k) {
            taps.rows.push_back(0);
            taps.weights.push_back(0);
            taps.real.push_back(extra == 0 ? 1 : 0);
          }
        taps.counts.push_back(static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1)));
      }
  }
  return taps;
}

// [regions, C, out_height, out_width] for one chunk of regions.
Tensor align(const OpContext& ctx, const Geometry& g, const Tensor& table, DType dtype,
             const std::vector<Region>& regions) {
  Stream& s = ctx.stream();
  const Taps taps = taps_of(g, regions);
  const auto bins = static_cast<int64_t>(taps.counts.size());
  const int64_t per_bin = 4 * taps.per_bin, channels = table.size(1);
  const Tensor rows = from_vector(taps.rows, {bins, per_bin}, s);
  const Tensor weights = upload_values(taps.weights, {bins, per_bin, 1}, dtype, s);
  const Tensor weighed = mul(embedding(table, rows, s), weights, s);  // [bins, taps, C]
  Tensor out;
  if (g.max) {
    const Tensor exists = cast(from_vector(taps.real, {bins, per_bin, 1}, s), DType::boolean, s);
    const Tensor lowest = full({}, -std::numeric_limits<double>::infinity(), dtype, s);
    out = max(where(exists, weighed, lowest, s), {1}, false, s);
  } else {
    out = div(sum(weighed, {1}, false, s), upload_values(taps.counts, {bins, 1}, dtype, s), s);
  }
  return out.reshape({static_cast<int64_t>(regions.size()), g.out_height, g.out_width, channels})
      .permute({0, 3, 1, 2});
}

Outputs roi_align(const OpContext& ctx, const Inputs& in, bool half_pixel_default) {
  const Tensor& x = in.at(0);
  const Tensor& rois = in.at(1);
  const Tensor& batch = in.at(2);
  if (x.dim() != 4) ctx.invalid("X " + to_string(x.shape()) + " is not [N, C, H, W]");
  if (rois.dim() != 2 || rois.size(1) != 4)
    ctx.invalid("rois " + to_string(rois.shape()) + " is not [num_rois, 4]");
  if (batch.dim() != 1 || batch.size(0) != rois.size(0))
    ctx.invalid("batch_indices " + to_string(batch.shape()) + " is not [" +
                std::to_string(rois.size(0)) + "], one per region");
  if (!is_floating(x.dtype()))
    ctx.unsupported("X of " + std::string(to_string(x.dtype())) + ": floating types only");
  Geometry g;
  g.height = x.size(2);
  g.width = x.size(3);
  g.out_height = ctx.attr_int("output_height", 1);
  g.out_width = ctx.attr_int("output_width", 1);
  g.sampling = ctx.attr_int("sampling_ratio", 0);
  g.scale = ctx.attr_float("spatial_scale", 1.0);
  const std::string mode = ctx.attr_string("mode", "avg");
  const std::string transform = ctx.attr_string(
      "coordinate_transformation_mode", half_pixel_default ? "half_pixel" : "output_half_pixel");
  if (mode != "avg" && mode != "max") ctx.invalid("mode '" + mode + "' is not avg or max");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    ctx.invalid("coordinate_transformation_mode '" + transform +
                "' is not half_pixel or output_half_pixel");
  if (g.out_height < 1 || g.out_width < 1 || g.sampling < 0)
    ctx.invalid("output_height " + std::to_string(g.out_height) + ", output_width " +
                std::to_string(g.out_width) + " and sampling_ratio " + std::to_string(g.sampling) +
                ": sizes must be positive, the ratio >= 0");
  g.max = mode == "max";
  g.half_pixel = transform == "half_pixel";
  Stream& s = ctx.stream();
  const int64_t count = rois.size(0), channels = x.size(1);
  const Shape out_shape{count, channels, g.out_height, g.out_width};
  if (count == 0 || channels == 0) return {zeros(out_shape, x.dtype(), s)};
  if (x.numel() == 0) ctx.invalid("X " + to_string(x.shape()) + " has no pixels to sample");

  const std::vector<double> corners = ctx.read_values(rois);
  const std::vector<int64_t> images = ctx.read_ints(batch);
  const double offset = g.half_pixel ? 0.5 : 0;
  std::vector<Region> regions;
  for (int64_t r = 0; r < count; ++r) {
    const auto at = static_cast<size_t>(4 * r);
    if (images[static_cast<size_t>(r)] < 0 || images[static_cast<size_t>(r)] >= x.size(0))
      ctx.invalid("batch_indices[" + std::to_string(r) +
                  "] = " + std::to_string(images[static_cast<size_t>(r)]) +
                  " is not an image of X " + to_string(x.shape()));
    Region region;
    region.image = images[static_cast<size_t>(r)];
    region.start_x = corners[at] * g.scale - offset;
    region.start_y = corners[at + 1] * g.scale - offset;
    region.width = corners[at + 2] * g.scale - offset - region.start_x;
    region.height = corners[at + 3] * g.scale - offset - region.start_y;
    if (!std::isfinite(region.start_x) || !std::isfinite(region.start_y) ||
        !std::isfinite(region.width) || !std::isfinite(region.height))
      ctx.invalid("rois[" + std::to_string(r) + "] is not finite");
    if (!g.half_pixel) {  // output_half_pixel: regions at least a pixel a side
      region.width = std::max(region.width, 1.0);
      region.height = std::max(region.height, 1.0);
    }
    regions.push_back(region);
  }

  // X's pixels as rows of C channels after one row of zeros.
  const DType dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor pixels = cast(x, dtype, s)
                            .permute({0, 2, 3, 1})
                            .contiguous(s)
                            .reshape({x.size(0) * g.height * g.width, channels});
  const Tensor table = concat(ctx, {zeros({1, channels}, dtype, s), pixels}, 0);
  // Regions in chunks whose gathered taps stay near 2^25 elements, every region of a chunk
  // padded to its most points a bin.
  constexpr int64_t kGathered = int64_t{1} << 25;
  const int64_t per_point = 4 * g.out_height * g.out_width * channels;
  // Adaptive sampling takes ceil(extent / bins) points a side of every bin, all of a region's
  // kept on the host at once: refused past 2^26 a region (one region of 1e6 x 1e6 pixels was
  // 1e12 points, taken until memory ran out), or for a region whose extent is no number.
  if (g.sampling <= 0)
    for (size_t i = 0; i < regions.size(); ++i) {
      const Region& r = regions[i];
      const auto side = [](double extent, int64_t bins) {
        return std::max(0.0, std::ceil(extent / static_cast<double>(bins)));
      };
      const double points = side(r.height, g.out_height) * side(r.width, g.out_width) *
                            static_cast<double>(g.out_height * g.out_width);
      if (!(points <= 0x1p26)) {
        char text[96];
        std::snprintf(text, sizeof text, "spans %g x %g pixels: %g points", r.height, r.width,
                      points);
        ctx.invalid("roi " + std::to_string(i) + " " + text +
                    " by adaptive sampling (sampling_ratio 0), past 2^26; give sampling_ratio");
      }
    }
  std::vector<Tensor> parts;
  for (size_t first = 0; first < regions.size();) {
    size_t last = first;
    int64_t most = 1;
    do {
      const Region& r = regions[last];
      most = std::max(most, points_a_side(g.sampling, r.height, g.out_height) *
                                points_a_side(g.sampling, r.width, g.out_width));
      ++last;
    } while (last < regions.size() &&
             static_cast<int64_t>(last + 1 - first) * most * per_point < kGathered);
    parts.push_back(
        align(ctx, g, table, dtype,
              std::vector<Region>(regions.begin() + static_cast<std::ptrdiff_t>(first),
                                  regions.begin() + static_cast<std::ptrdiff_t>(last))));
    first = last;
  }
  const Tensor out = parts.size() == 1 ? parts[0].contiguous(s) : concat(ctx, parts, 0);
  return {cast(out, x.dtype(), s)};
}

Outputs roi_align_10(const OpContext& ctx, const Inputs& in) { return roi_align(ctx, in, false); }
Outputs roi_align_16(const OpContext& ctx, const Inputs& in) { return roi_align(ctx, in, true); }

}  // namespace

std::vector<OnnxOp> roi_align_onnx_ops() {
  return {{"RoiAlign", 16, roi_align_16}, {"RoiAlign", 10, roi_align_10}};
}

}  // namespace hal::model

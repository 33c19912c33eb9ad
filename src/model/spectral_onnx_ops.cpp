// ONNX's signal ops (opset 17): DFT, STFT and MelWeightMatrix, an audio model's front end.
// A transform of length L = L1 x L2 (L1 the largest factor up to sqrt L) takes Bailey's four
// steps: a DFT of length L2 down the columns of the signal seen as [L2, L1], then one of length
// L1 along each row with the twiddle factors in its matrix; each a product with a matrix of
// e^(-2 pi i nk/N) (angles reduced mod N in double on the host). So a length whose factors stay
// within 2048 points runs in O(L (L1 + L2)) multiply-adds on any device that runs matmul; a
// length with a larger prime factor (up to 2^21), or a large factor that too few rows share,
// takes Bluestein's algorithm, a convolution by two such transforms of a power-of-two length.
// STFT's frames are a strided view of the signal; MelWeightMatrix is worked out on the host as
// ONNX's reference does.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// e^(-+2 pi i t / n) for t in [0, n): a matrix's entries looked up by their angle as an integer
// count of 1/n turns (reduced mod n, so double keeps its digits), n sines and cosines for all
// of a transform's matrices rather than one an entry.
class UnitRoots {
 public:
  UnitRoots(int64_t n, bool inverse) : n_(n), parts_(2 * static_cast<size_t>(n)) {
    const double sign = inverse ? 1 : -1;
    for (int64_t t = 0; t < n; ++t) {
      const double angle = 2 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(n);
      parts_[2 * static_cast<size_t>(t)] = std::cos(angle);
      parts_[2 * static_cast<size_t>(t) + 1] = sign * std::sin(angle);
    }
  }
  // e^(-+2 pi i turns / n): its real and imaginary parts.
  const double* at(int64_t turns) const { return &parts_[2 * static_cast<size_t>(turns % n_)]; }

 private:
  int64_t n_;
  std::vector<double> parts_;
};

// A complex product by one real one: x = a + ib times w = c + id is ac - bd + i(ad + bc), so a
// row of parts [a | b] times the block matrix [[c, d], [-d, c]] is the row [re | im].
//
// Writes at `w` the block matrix whose entry (r, c) is `roots` at `turns(r, c)`, times `scale`
// (an inverse's 1/L): [2 rows or rows (a real input), 2 columns].
template <class Turns>
void fill_block(double* w, int64_t rows, int64_t columns, const UnitRoots& roots, bool real_input,
                double scale, Turns turns) {
  const auto at = [&](int64_t r, int64_t c) -> double& { return w[r * 2 * columns + c]; };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) {
      const double* root = roots.at(turns(r, c));
      const double re = scale * root[0], im = scale * root[1];
      at(r, c) = re;
      at(r, columns + c) = im;
      if (real_input) continue;
      at(rows + r, c) = -im;
      at(rows + r, columns + c) = re;
    }
}

// The first `columns` columns of the n-point DFT matrix (entry (r, c) at r c turns) in block
// form, in `dtype`.
Tensor dft_matrix(int64_t n, int64_t columns, bool inverse, bool real_input, double scale,
                  DType dtype, Stream& s) {
  const int64_t in_rows = real_input ? n : 2 * n;
  std::vector<double> w(static_cast<size_t>(in_rows * 2 * columns));
  fill_block(w.data(), n, columns, UnitRoots(n, inverse), real_input, scale,
             [](int64_t r, int64_t c) { return r * c; });
  return upload_values(w, {in_rows, 2 * columns}, dtype, s);
}

int64_t largest_factor_to_root(int64_t n) {
  for (auto f = static_cast<int64_t>(std::sqrt(static_cast<double>(n))); f > 1; --f)
    if (n % f == 0) return f;
  return 1;
}

// The first `bins` of the DFT of each row of x [M, L, P] (P = 1: real, 2: complex parts), scaled
// by `scale`: [M, bins, 2] (a onesided transform's half computed, not cut from the whole).
// Bailey's four steps for L = L1 x L2 with n = n1 + L1 n2 and k = k2 + L2 k1:
//   X[k2 + L2 k1] = sum over n1 of e^(-2 pi i n1 (k2 + L2 k1) / L) sum over n2 of
//                   e^(-2 pi i n2 k2 / L2) x[n1 + L1 n2],
// the inner sums one product [L2 points, L2] by [L2, M x L1], the outer one batched product per
// k2 whose matrix holds the twiddles too where enough rows share it (else the twiddles are an
// elementwise product first). Both in block form.
// The most points a side of a dense DFT matrix (its block form (2n)^2 elements: 64 MiB of f32
// at 2048), and the most elements of the per-residue matrices with the twiddles folded in
// (4 L L1), built on the host each run: they pay only when there are at least 10 rows a point of
// L1 to share them (cpu:0, [4, 4099] by Bluestein: 281 ms folded, 6.2 unfolded; [3000, 400]:
// 10.7 folded, 17.2 unfolded). Otherwise the twiddles are multiplied in on their own, in O(L)
// memory, and one L1-point matrix serves every residue.
constexpr int64_t kMostDensePoints = 2048;
constexpr int64_t kMostFoldedElements = int64_t{1} << 24;
constexpr int64_t kRowsPerFoldedPoint = 10;

Tensor bluestein_rows(const OpContext& ctx, const Tensor& x, int64_t length, int64_t bins,
                      bool inverse, double scale, DType dtype);

// Whether Bailey's four steps take a length whole: the larger of its two factors is within
// the dense matrices' points.
bool dense_enough(int64_t length) {
  return length / largest_factor_to_root(length) <= kMostDensePoints;
}

// Whether `rows` transforms of `length` points take Bluestein's convolution: a length the four
// steps cannot take, or one whose larger factor L2 (the whole length when prime) is above 128 and
// whose dense L2-point matrix (4 L2^2 entries, built on the host each run) fewer than L2 / 2
// columns share (rows x L1). cpu:0, [4, 2 039]: 229 ms dense, 1.8 by Bluestein; [512, 2 039]:
// 291 and 109; [512, 401]: 8 and 40, so dense there (docs/PERFORMANCE.md, session 41).
bool takes_bluestein(int64_t length, int64_t rows) {
  if (!dense_enough(length)) return true;
  const int64_t l1 = largest_factor_to_root(length), l2 = length / l1;
  return l2 > 128 && rows * l1 < l2 / 2;
}

Tensor dft_rows(const OpContext& ctx, const Tensor& x, int64_t length, int64_t bins, bool inverse,
                double scale, DType dtype) {
  if (takes_bluestein(length, x.size(0)))
    return bluestein_rows(ctx, x, length, bins, inverse, scale, dtype);
  Stream& s = ctx.stream();
  const int64_t m = x.size(0), parts = x.size(2);
  const bool real = parts == 1;
  const int64_t l1 = largest_factor_to_root(length), l2 = length / l1;
  if (l1 == 1) {  // a prime length: one product with the whole matrix
    const Tensor rows = x.permute({0, 2, 1}).contiguous(s).reshape({m, parts * length});
    const Tensor w = dft_matrix(length, bins, inverse, real, scale, dtype, s);
    return matmul(rows, w, s).reshape({m, 2, bins}).permute({0, 2, 1}).contiguous(s);
  }
  // [part, n2] rows by [m, n1] columns; the L2-point matrix on the left, transposed (it is
  // symmetric, its block form is not).
  const Tensor columns = x.reshape({m, l2, l1, parts})
                             .permute({3, 1, 0, 2})
                             .contiguous(s)
                             .reshape({parts * l2, m * l1});
  const Tensor w2 = dft_matrix(l2, l2, inverse, real, scale, dtype, s);
  const Tensor inner = matmul(w2.transpose(0, 1), columns, s);  // [2 x L2 (part, k2), M x L1]
  // Only the k1 that reach a wanted bin k = k2 + L2 k1 < bins: the first `reach` of each k2's,
  // rounded up to 16 (32 columns of parts): the devices' tiled products pay for a partial tile of
  // columns as for a whole one (PoCL, STFT's [20, 2 998, 40] rows: 40 columns 9.4 ms, 22 20.7).
  const int64_t reach = std::min(l1, ((bins + l2 - 1) / l2 + 15) / 16 * 16);
  Tensor outer;  // [L2, M, 2 x reach (part, k1)]
  if (4 * length * l1 <= kMostFoldedElements && m >= kRowsPerFoldedPoint * l1) {
    // Per k2: rows [m] of [part, n1] times the L1-point matrix with its twiddles.
    const Tensor rows =
        inner.reshape({2, l2, m, l1}).permute({1, 2, 0, 3}).contiguous(s).reshape({l2, m, 2 * l1});
    const UnitRoots roots(length, inverse);
    const int64_t size = 2 * l1 * 2 * reach;
    std::vector<double> per_k2(static_cast<size_t>(l2 * size));
    for (int64_t k2 = 0; k2 < l2; ++k2)
      fill_block(per_k2.data() + k2 * size, l1, reach, roots, false, 1.0,
                 [&](int64_t n1, int64_t k1) { return n1 * (k2 + l2 * k1); });
    outer = matmul(rows, upload_values(per_k2, {l2, 2 * l1, 2 * reach}, dtype, s), s);
  } else {
    // The twiddles e^(-2 pi i n1 k2 / L) multiplied in, then one L1-point matrix for all.
    std::vector<double> twiddle_re(static_cast<size_t>(length)), twiddle_im(twiddle_re.size());
    const UnitRoots roots(length, inverse);
    for (int64_t k2 = 0; k2 < l2; ++k2)
      for (int64_t n1 = 0; n1 < l1; ++n1) {
        const double* root = roots.at(n1 * k2);
        twiddle_re[static_cast<size_t>(k2 * l1 + n1)] = root[0];
        twiddle_im[static_cast<size_t>(k2 * l1 + n1)] = root[1];
      }
    const Tensor t_re = upload_values(twiddle_re, {l2, 1, l1}, dtype, s);
    const Tensor t_im = upload_values(twiddle_im, {l2, 1, l1}, dtype, s);
    const Tensor split = inner.reshape({2, l2, m, l1});
    const Tensor re = split.slice(0, 0, 1).reshape({l2, m, l1});
    const Tensor im = split.slice(0, 1, 2).reshape({l2, m, l1});
    const Tensor rows = concat(
        {sub(mul(re, t_re, s), mul(im, t_im, s), s), add(mul(re, t_im, s), mul(im, t_re, s), s)}, 2,
        s);
    outer = matmul(rows, dft_matrix(l1, reach, inverse, false, 1.0, dtype, s), s);
  }
  // X[m, k2 + L2 k1, part] is outer[k2, m, part, k1].
  const Tensor spectrum = outer.reshape({l2, m, 2, reach})
                              .permute({1, 3, 0, 2})
                              .contiguous(s)
                              .reshape({m, reach * l2, 2});
  return bins == reach * l2 ? spectrum : spectrum.slice(1, 0, bins).contiguous(s);
}

// The product of complex rows a [..., 2] and b [..., 2] (broadcast), parts last.
Tensor complex_product(const Tensor& a, const Tensor& b, Stream& s) {
  const int64_t last_a = a.dim() - 1, last_b = b.dim() - 1;
  const Tensor ar = a.slice(last_a, 0, 1), ai = a.slice(last_a, 1, 2);
  const Tensor br = b.slice(last_b, 0, 1), bi = b.slice(last_b, 1, 2);
  return concat({sub(mul(ar, br, s), mul(ai, bi, s), s), add(mul(ar, bi, s), mul(ai, br, s), s)},
                last_a, s);
}

// Bluestein's algorithm, for the lengths `takes_bluestein` names: with the chirp w[n] = e^(-+ pi i
// n^2 / L), nk = (n^2 + k^2 - (k - n)^2) / 2 makes
//   X[k] = w[k] sum over n of (x[n] w[n]) conj(w[k - n]),
// a convolution, cyclic of length P >= 2L - 1 (a power of two, which Bailey's steps take) and so
// two DFTs of length P with a product of spectra between. n^2 is reduced mod 2L in integers
// (UnitRoots) before it becomes an angle, so the chirp keeps its digits at any length.
Tensor bluestein_rows(const OpContext& ctx, const Tensor& x, int64_t length, int64_t bins,
                      bool inverse, double scale, DType dtype) {
  Stream& s = ctx.stream();
  int64_t points = 1;
  while (points < 2 * length - 1) points *= 2;
  if (!dense_enough(points))
    ctx.unsupported("a DFT of length " + std::to_string(length) +
                    " is not supported (hal's DFT takes a length whose two factors stay within " +
                    std::to_string(kMostDensePoints) +
                    " points, and others up to 2^21 by Bluestein's algorithm, whose convolution "
                    "would take " +
                    std::to_string(points) + " points here)");
  // w[n] = e^(-+ 2 pi i (n^2 mod 2L) / 2L) and w[n] times the transform's scale (the output's);
  // conj(w[j]) at j and at P - j: the convolution's kernel for offsets -(L - 1) to L - 1, zero
  // between.
  const UnitRoots half_turns(2 * length, inverse);
  std::vector<double> chirp(2 * static_cast<size_t>(length)), scaled(chirp.size()),
      kernel(2 * static_cast<size_t>(points));
  for (int64_t n = 0; n < length; ++n) {
    const double* root = half_turns.at(n * n);  // n < 2^21: n^2 fits
    const double re = root[0], im = root[1];
    const auto i = static_cast<size_t>(2 * n);
    chirp[i] = re;
    chirp[i + 1] = im;
    scaled[i] = scale * re;
    scaled[i + 1] = scale * im;
    for (const int64_t at : {n, (points - n) % points}) {
      kernel[static_cast<size_t>(2 * at)] = re;
      kernel[static_cast<size_t>(2 * at + 1)] = -im;
    }
  }
  const Tensor kernel_spectrum = dft_rows(ctx, upload_values(kernel, {1, points, 2}, dtype, s),
                                          points, points, false, 1.0, dtype);
  // x w (a real x's rows [M, L, 1] broadcast against the chirp's parts), zero-padded to P.
  Tensor weighted = x.size(2) == 1
                        ? mul(x, upload_values(chirp, {1, length, 2}, dtype, s), s)
                        : complex_product(x, upload_values(chirp, {1, length, 2}, dtype, s), s);
  weighted = pad_constant(ctx, weighted, {0, 0, 0}, {0, points - length, 0}, 0.0).contiguous(s);
  const Tensor spectrum = dft_rows(ctx, weighted, points, points, false, 1.0, dtype);
  const Tensor convolved =
      dft_rows(ctx, complex_product(spectrum, kernel_spectrum, s).contiguous(s), points, bins, true,
               1.0 / static_cast<double>(points), dtype);
  scaled.resize(2 * static_cast<size_t>(bins));
  return complex_product(convolved, upload_values(scaled, {1, bins, 2}, dtype, s), s).contiguous(s);
}

DType computed_in(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }

// ONNX's DFT of x [..., 1 or 2] (real or complex parts last) along `axis`: zero-padded or cut
// to `length`, scaled by 1 / length when inverse, the first length / 2 + 1 bins when onesided.
// [..., 2] in x's dtype.
Tensor dft_of(const OpContext& ctx, const Tensor& x, int64_t axis, int64_t length, bool inverse,
              bool onesided) {
  Stream& s = ctx.stream();
  const int64_t rank = x.dim();
  // The transformed axis next to last, the parts last, the others flattened into rows.
  std::vector<int64_t> order;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) order.push_back(d);
  order.push_back(axis);
  order.push_back(rank - 1);
  Tensor t = cast(x, computed_in(x.dtype()), s).permute(order);
  const int64_t n = t.size(-2);
  if (n > length) t = t.slice(rank - 2, 0, length);
  if (n < length) {
    std::vector<int64_t> before(static_cast<size_t>(rank), 0), after(before);
    after[static_cast<size_t>(rank - 2)] = length - n;
    t = pad_constant(ctx, t, before, after, 0.0);
  }
  Shape shape(t.shape().begin(), t.shape().end() - 2);
  const int64_t rows = t.numel() / (length * t.size(-1));
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  const int64_t bins = onesided ? length / 2 + 1 : length;
  const Tensor out = dft_rows(ctx, t.contiguous(s).reshape({rows, length, t.size(-1)}), length,
                              bins, inverse, scale, computed_in(x.dtype()));
  // Back to x's order of axes, the bins where the axis was.
  shape.insert(shape.end(), {bins, 2});
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return cast(out.reshape(shape).permute(back).contiguous(s), x.dtype(), s);
}

void check_signal(const OpContext& ctx, const Tensor& x, const std::string& name) {
  if (x.dim() < 2 || (x.size(-1) != 1 && x.size(-1) != 2))
    ctx.invalid(name + " " + to_string(x.shape()) +
                " does not end in 1 (real) or 2 (complex) parts");
  if (!is_floating(x.dtype()))
    ctx.unsupported(name + " of " + std::string(to_string(x.dtype())) + ": floating types only");
}

Outputs dft(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  check_signal(ctx, x, "input");
  const int64_t rank = x.dim();
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank - 2)
    ctx.invalid("axis " + std::to_string(ctx.attr_int("axis", 1)) + " of input " +
                to_string(x.shape()) + " is not one of its signal axes (-" + std::to_string(rank) +
                " to -2, 0 to " + std::to_string(rank - 2) + "; the last holds the parts)");
  const bool inverse = ctx.attr_int("inverse", 0) != 0;
  const bool onesided = ctx.attr_int("onesided", 0) != 0;
  if (inverse && onesided) ctx.unsupported("onesided with inverse");
  const int64_t length = given(in, 1) ? ctx.read_int(in[1]) : x.size(axis);
  if (length < 1) ctx.invalid("dft_length " + std::to_string(length) + " is not at least 1");
  return {dft_of(ctx, x, axis, length, inverse, onesided)};
}

Outputs stft(const OpContext& ctx, const Inputs& in) {
  const Tensor& signal = in.at(0);
  check_signal(ctx, signal, "signal");
  if (signal.dim() != 3)
    ctx.invalid("signal " + to_string(signal.shape()) + " is not [batch, length, 1 or 2]");
  const int64_t step = ctx.read_int(in.at(1));
  const Tensor window = given(in, 2) ? in[2] : Tensor();
  if (window.defined() && window.dim() != 1)
    ctx.invalid("window " + to_string(window.shape()) + " is not 1-d");
  if (!given(in, 3) && !window.defined()) ctx.invalid("neither frame_length nor a window given");
  const int64_t frame = given(in, 3) ? ctx.read_int(in[3]) : window.size(0);
  if (window.defined() && window.size(0) != frame)
    ctx.invalid("window " + to_string(window.shape()) + " is not frame_length " +
                std::to_string(frame) + " long");
  const int64_t batch = signal.size(0), length = signal.size(1), parts = signal.size(2);
  if (step < 1) ctx.invalid("frame_step " + std::to_string(step) + " is not at least 1");
  if (frame < 1 || frame > length)
    ctx.invalid("frame_length " + std::to_string(frame) + " is not within the signal's " +
                std::to_string(length) + " samples");
  const int64_t frames = (length - frame) / step + 1;
  Stream& s = ctx.stream();
  const DType dtype = computed_in(signal.dtype());
  // The frames as a view of the signal, [batch, frames, frame, parts] with a frame's start
  // `step` samples after the last's: overlapping frames read the same memory, and the window's
  // product (or dft_of's copy) lays them out once. One frame's step is never taken (a step of
  // 2^62 would overflow as a stride).
  const Tensor samples = cast(signal, dtype, s).contiguous(s);
  Tensor framed(samples.storage(), dtype, {batch, frames, frame, parts},
                {length * parts, (frames > 1 ? step : 1) * parts, parts, 1}, samples.offset());
  if (window.defined()) framed = mul(framed, cast(window, dtype, s).reshape({1, 1, frame, 1}), s);
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  return {cast(dft_of(ctx, framed, 2, frame, false, onesided), signal.dtype(), s)};
}

// ONNX's reference: mel_bins + 2 points evenly spaced in mel from the lower to the upper edge,
// each mapped to a spectrogram bin ((dft_length + 1) * hertz // sample_rate), and a triangle
// from each point to the next but one, peaking at 1 on the middle one.
Outputs mel_weight_matrix(const OpContext& ctx, const Inputs& in) {
  const int64_t mel_bins = ctx.read_int(in.at(0)), dft_length = ctx.read_int(in.at(1));
  const int64_t sample_rate = ctx.read_int(in.at(2));
  const double lower = ctx.read_scalar(in.at(3)), upper = ctx.read_scalar(in.at(4));
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1 || !(lower >= 0) || !(upper > lower))
    ctx.invalid("num_mel_bins " + std::to_string(mel_bins) + ", dft_length " +
                std::to_string(dft_length) + ", sample_rate " + std::to_string(sample_rate) +
                " and edges " + std::to_string(lower) + " to " + std::to_string(upper) +
                " Hz: counts must be positive and 0 <= lower < upper");
  const auto mel = [](double hertz) { return 2595 * std::log10(1 + hertz / 700); };
  const double low_mel = mel(lower),
               step = (mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  // Refused before anything is allocated: the product wrapped to 0 for a dft_length near 2^62,
  // and the triangles were written past an empty matrix.
  constexpr int64_t kMaxMatrix = int64_t{1} << 28;
  if (spectrogram_bins > kMaxMatrix / mel_bins)
    ctx.invalid("dft_length " + std::to_string(dft_length) + " and num_mel_bins " +
                std::to_string(mel_bins) + " make a matrix of more than 2^28 elements");
  std::vector<int64_t> points;
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hertz = 700 * (std::pow(10, (static_cast<double>(i) * step + low_mel) / 2595) - 1);
    points.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hertz /
                                                     static_cast<double>(sample_rate))));
  }
  // The last triangle peaks at points[mel_bins] and ends before points.back().
  if (points[static_cast<size_t>(mel_bins)] >= spectrogram_bins || points.back() > spectrogram_bins)
    ctx.invalid("upper_edge_hertz " + std::to_string(upper) + " maps to spectrogram bin " +
                std::to_string(points.back()) + ", past the " + std::to_string(spectrogram_bins) +
                " of dft_length " + std::to_string(dft_length));
  std::vector<double> out(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
  const auto at = [&](int64_t bin, int64_t m) -> double& {
    return out[static_cast<size_t>(bin * mel_bins + m)];
  };
  for (int64_t m = 0; m < mel_bins; ++m) {
    const int64_t left = points[m], centre = points[m + 1], right = points[m + 2];
    if (centre == left)
      at(centre, m) = 1;
    else
      for (int64_t j = left; j <= centre; ++j)
        at(j, m) = static_cast<double>(j - left) / static_cast<double>(centre - left);
    for (int64_t j = centre; j < right; ++j)
      at(j, m) = static_cast<double>(right - j) / static_cast<double>(right - centre);
  }
  const auto type = static_cast<int32_t>(ctx.attr_int("output_datatype", 1));
  const std::optional<DType> dtype = dtype_from_onnx(type);
  if (!dtype) ctx.unsupported("output_datatype " + std::to_string(type));
  Stream& s = ctx.stream();
  const Shape shape{spectrogram_bins, mel_bins};
  return {upload_values(out, shape, *dtype, s)};
}

}  // namespace

std::vector<OnnxOp> spectral_onnx_ops() {
  return {
      {"DFT", 17, dft},
      {"STFT", 17, stft},
      {"MelWeightMatrix", 17, mel_weight_matrix},
  };
}

}  // namespace hal::model

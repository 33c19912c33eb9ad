// The transposed convolution by phases (the "sub-pixel" decomposition): for a stride s, the
// outputs h with the same (h + pad) mod s read the same taps of the kernel, those k with
// k d = h + pad (mod s), every s / gcd(d, s)-th one. Each such phase is a convolution of the
// gradient at stride 1 with that subsampled kernel, and the phases interleave into the result.
// The work is the forward's; dilating the gradient with s - 1 zeros between its elements and
// convolving that instead does s^spatial times as many multiplications, most of them by zero.
#include <numeric>

#include "hal/ops.hpp"
#include "ops/window.hpp"

namespace hal::ops {
namespace {

// Floor modulo: the residue in [0, s) of a value that may be negative.
int64_t residue(int64_t value, int64_t s) { return (value % s + s) % s; }

// One phase along one spatial dimension: the outputs first, first + s, ... (count of them), made
// by a convolution of the gradient with `taps` taps of the flipped kernel from `tap_start`, every
// `tap_step`-th, at `dilation`, the gradient padded by `pad_before` and `pad_after` (a negative
// pad crops).
struct Phase {
  int64_t first = 0, count = 0;
  int64_t taps = 0, tap_start = 0, tap_step = 1;
  int64_t dilation = 1, pad_before = 0, pad_after = 0;
};

// dx[h] = sum over j, k with j s + k d - pad = h of dz[j] w[k]. For the outputs h = first + s i,
// t = h + pad has one residue rho mod s; the taps that reach them are k_m = k0 + m L (L = s / g,
// g = gcd(d, s), k0 the first k with k d = rho mod s), and j = i + c - m d / g with
// c = (first + pad - rho) / s + (rho - k0 d) / s: a correlation of dz with those taps reversed
// at dilation d / g, padded in front by (taps - 1) d / g - c.
Phase phase_of(int64_t first, int64_t size, int64_t dz_size, int64_t kernel, int64_t stride,
               int64_t dilation, int64_t pad) {
  Phase p;
  p.first = first;
  p.count = first < size ? (size - first + stride - 1) / stride : 0;
  const int64_t rho = residue(first + pad, stride);
  int64_t k0 = 0;
  while (k0 < std::min(kernel, stride) && residue(k0 * dilation, stride) != rho) ++k0;
  const int64_t g = std::gcd(dilation, stride), step = stride / g;
  if (k0 >= std::min(kernel, stride)) return p;  // no tap reaches these outputs: zeros
  p.taps = (kernel - 1 - k0) / step + 1;
  p.tap_step = step;
  // In the flipped kernel, tap k is at kernel - 1 - k: the last tap first.
  p.tap_start = kernel - 1 - (k0 + (p.taps - 1) * step);
  p.dilation = dilation / g;
  const int64_t c = (first + pad - rho) / stride + (rho - k0 * dilation) / stride;
  const int64_t span = (p.taps - 1) * p.dilation;
  p.pad_before = span - c;
  p.pad_after = p.count - dz_size - p.pad_before + span;
  return p;
}

// The convolution of one combination of phases: [N, C, counts...], or zeros where no tap
// reaches it or every window lies in the padding. `bias` is added to every element.
Tensor phase_result(const Tensor& dz, const Tensor& flipped, const Tensor& bias,
                    const std::vector<const Phase*>& phases, int64_t groups, Stream& s) {
  Shape shape{dz.size(0), flipped.size(1) * groups};
  for (const Phase* p : phases) shape.push_back(p->count);
  const auto constant = [&] {
    // The convolutions' dtype: dz's, the weight's and the bias's promoted.
    DType dtype = promote_types(dz.dtype(), flipped.dtype());
    if (bias.defined()) dtype = promote_types(dtype, bias.dtype());
    Tensor z = zeros(shape, dtype, s);
    if (!bias.defined() || z.numel() == 0) return z;
    Shape per_channel(shape.size(), 1);
    per_channel[1] = shape[1];
    return add(z, bias.reshape(per_channel), s);
  };
  Tensor input = dz, kernel = flipped;
  ConvOptions options;
  options.groups = groups;
  Window w;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = *phases[i];
    if (p.taps == 0 || p.count == 0) return constant();
    const auto d = static_cast<int64_t>(i) + 2;
    kernel = kernel.slice(d, p.tap_start, p.tap_start + (p.taps - 1) * p.tap_step + 1, p.tap_step);
    int64_t before = p.pad_before, after = p.pad_after;
    if (before < 0) {
      input = input.slice(d, -before, input.size(d));
      before = 0;
    }
    if (after < 0) {
      input = input.slice(d, 0, std::max<int64_t>(input.size(d) + after, 0));
      after = 0;
    }
    if (input.size(d) == 0) return constant();  // every window in the padding
    options.strides.push_back(1);
    options.dilations.push_back(p.dilation);
    options.pads_before.push_back(before);
    options.pads_after.push_back(after);
    w.kernel.push_back(p.taps);
    w.out.push_back(p.count);
  }
  // [M, C/g, K...] -> [C, M/g, K...]
  const Tensor weight = swap_kernel_channels(kernel, groups, s);
  if (input.dim() <= 5) return conv(input, weight, bias, options, s);
  w.strides = options.strides;
  w.dilations = options.dilations;
  w.pad_before = options.pads_before;
  w.pad_after = options.pads_after;
  return conv_from_matmul(input, weight, bias, w, groups, s);
}

// The phases' results, [N, C, count...] each in row-major order of their combinations,
// interleaved into [N, C, x_shape's sizes...]: each padded with zeros to the first's counts (the
// largest), stacked as [s1, ..., sD, N, C, n1, ..., nD], permuted to [N, C, n1, s1, ..., nD, sD]
// in one layout copy, merged and cut to size. (Concatenating two phases at a time in a new
// innermost dimension copied element by element: 5 ms a level for [8, 64, 56, 56] on cpu:0,
// against under 1 ms for the one permutation.)
Tensor interleaved(std::vector<Tensor> parts, const Shape& x_shape, const Window& w, Stream& s) {
  const size_t spatial = w.kernel.size();
  if (parts.size() == 1) return parts[0];
  const Shape longest = parts[0].shape();
  for (Tensor& part : parts) {
    std::vector<int64_t> after(longest.size(), 0);
    for (size_t d = 2; d < longest.size(); ++d) after[d] = longest[d] - part.size(d);
    part = pad_constant(part, std::vector<int64_t>(longest.size(), 0), after, 0.0, s).unsqueeze(0);
  }
  Shape stacked(w.strides.begin(), w.strides.end());
  stacked.insert(stacked.end(), longest.begin(), longest.end());
  std::vector<int64_t> order{static_cast<int64_t>(spatial), static_cast<int64_t>(spatial) + 1};
  Shape merged{longest[0], longest[1]};
  for (size_t i = 0; i < spatial; ++i) {
    order.push_back(static_cast<int64_t>(spatial + 2 + i));
    order.push_back(static_cast<int64_t>(i));
    merged.push_back(longest[i + 2] * w.strides[i]);
  }
  Tensor result = concat(parts, 0, s).reshape(stacked).permute(order).contiguous(s).reshape(merged);
  for (size_t i = 0; i < spatial; ++i)
    result = result.slice(static_cast<int64_t>(i) + 2, 0, x_shape[i + 2]);
  return result;
}

// t reversed along dimension d, by concatenating its slices last to first.
Tensor reversed(const Tensor& t, int64_t d, Stream& s) {
  if (t.size(d) <= 1) return t;
  std::vector<Tensor> slices;
  for (int64_t k = t.size(d) - 1; k >= 0; --k) slices.push_back(t.slice(d, k, k + 1));
  return concat(slices, d, s);
}

}  // namespace

Tensor transposed_conv_by_phases(const Tensor& dz, const Tensor& weight, const Tensor& bias,
                                 const Shape& x_shape, const Window& w, int64_t groups, Stream& s) {
  const size_t spatial = w.kernel.size();
  Tensor flipped = weight;
  for (size_t i = 0; i < spatial; ++i) flipped = reversed(flipped, static_cast<int64_t>(i) + 2, s);
  // Per dimension, its phases by their first output (0 to s - 1).
  std::vector<std::vector<Phase>> phases(spatial);
  for (size_t i = 0; i < spatial; ++i)
    for (int64_t first = 0; first < w.strides[i]; ++first)
      phases[i].push_back(phase_of(first, x_shape[i + 2], dz.size(static_cast<int64_t>(i) + 2),
                                   w.kernel[i], w.strides[i], w.dilations[i], w.pad_before[i]));
  // Every combination, row-major (the last dimension's phase fastest).
  std::vector<Tensor> parts;
  std::vector<size_t> at(spatial, 0);
  for (bool more = true; more;) {
    std::vector<const Phase*> combination;
    for (size_t i = 0; i < spatial; ++i) combination.push_back(&phases[i][at[i]]);
    parts.push_back(phase_result(dz, flipped, bias, combination, groups, s));
    more = false;
    for (size_t i = spatial; i-- > 0;) {
      if (++at[i] < phases[i].size()) {
        more = true;
        break;
      }
      at[i] = 0;
    }
  }
  return interleaved(std::move(parts), x_shape, w, s).contiguous(s);
}

}  // namespace hal::ops

#include "ops/window.hpp"

#include <algorithm>
#include <limits>

#include "hal/error.hpp"
#include "ops/dtype_set.hpp"

namespace hal::ops {

int64_t Window::offsets() const {
  int64_t count = 1;
  for (int64_t k : kernel) count *= k;
  return count;
}

int64_t Window::positions() const {
  int64_t count = 1;
  for (int64_t o : out) count *= o;
  return count;
}

Window window_of(std::string_view op, const Tensor& x, const std::vector<int64_t>& kernel,
                 std::vector<int64_t> strides, std::vector<int64_t> dilations,
                 std::vector<int64_t> pads_before, std::vector<int64_t> pads_after, bool ceil_mode,
                 bool strides_default_to_kernel) {
  const auto invalid = [&](const std::string& why) {
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() + ": " + why);
  };
  if (x.dim() < 3) invalid("expects x of [N, C, D1, ...]");
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  if (kernel.size() != spatial)
    invalid("the kernel " + to_string(kernel) + " does not have " + std::to_string(spatial) +
            " spatial dimensions");
  const auto filled = [&](std::vector<int64_t>& values, int64_t fallback, const char* name) {
    if (values.empty()) values.assign(spatial, fallback);
    if (values.size() != spatial)
      invalid(std::string(name) + " " + to_string(values) + " has " +
              std::to_string(values.size()) + " values for " + std::to_string(spatial) +
              " spatial dimensions");
  };
  if (strides.empty() && strides_default_to_kernel) strides = kernel;
  filled(strides, 1, "strides");
  filled(dilations, 1, "dilations");
  filled(pads_before, 0, "pads_before");
  filled(pads_after, 0, "pads_after");
  // Sizes a window can have: positive, and small enough that no product of them overflows.
  constexpr int64_t kLimit = int64_t{1} << 24;
  const auto check = [&](const std::vector<int64_t>& values, const char* name, int64_t low) {
    for (int64_t v : values)
      if (v < low || v > kLimit)
        invalid(std::string(name) + " " + to_string(values) + " must lie in [" +
                std::to_string(low) + ", " + std::to_string(kLimit) + "]");
  };
  check(kernel, "kernel", 1);
  check(strides, "strides", 1);
  check(dilations, "dilations", 1);
  check(pads_before, "pads_before", 0);
  check(pads_after, "pads_after", 0);
  Window w{kernel,
           std::move(strides),
           std::move(dilations),
           std::move(pads_before),
           std::move(pads_after),
           {}};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t size = x.size(static_cast<int64_t>(i) + 2);
    const int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
    const int64_t room = size + w.pad_before[i] + w.pad_after[i] - span;
    if (room < 0) invalid("the window is larger than the padded input");
    int64_t out = (ceil_mode ? (room + w.strides[i] - 1) / w.strides[i] : room / w.strides[i]) + 1;
    // A last window that would start in the end padding is dropped (PyTorch and ONNX agree).
    if (ceil_mode && (out - 1) * w.strides[i] >= size + w.pad_before[i]) --out;
    w.out.push_back(out);
  }
  return w;
}

Tensor pad_constant(Tensor x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                    double value, Stream& stream) {
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t head = before[static_cast<size_t>(d)];
    const int64_t tail = after[static_cast<size_t>(d)];
    if (head < 0 || tail < 0) {
      const int64_t start = std::max<int64_t>(-head, 0);
      const int64_t end = x.size(d) - std::max<int64_t>(-tail, 0);
      if (end < start)
        throw Error(ErrorCode::InvalidArgument, "padding of " + x.describe() +
                                                    " crops more than dimension " +
                                                    std::to_string(d) + " holds");
      x = x.slice(d, start, end);
    }
    std::vector<Tensor> parts;
    const auto block = [&](int64_t count) {
      Shape shape = x.shape();
      shape[static_cast<size_t>(d)] = count;
      parts.push_back(full(shape, value, x.dtype(), stream));
    };
    if (head > 0) block(head);
    parts.push_back(x);
    if (tail > 0) block(tail);
    if (parts.size() > 1) x = concat(parts, d, stream);
  }
  return x.contiguous(stream);
}

Tensor padded(const Tensor& x, const Window& w, double value, Stream& stream) {
  std::vector<int64_t> before{0, 0}, after{0, 0};
  bool any = false;
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    const int64_t size = x.size(static_cast<int64_t>(i) + 2);
    const int64_t needed = (w.out[i] - 1) * w.strides[i] + w.dilations[i] * (w.kernel[i] - 1) + 1;
    before.push_back(w.pad_before[i]);
    after.push_back(std::max(w.pad_after[i], needed - size - w.pad_before[i]));
    any = any || before.back() != 0 || after.back() != 0;
  }
  return any ? pad_constant(x, before, after, value, stream) : x;
}

Tensor patches_of(const Tensor& x, const Window& w, Stream& s) {
  const Tensor input = padded(x, w, 0.0, s);
  std::vector<Tensor> columns;
  for_each_offset(input, w, [&](const Tensor& view) { columns.push_back(view.unsqueeze(2)); });
  // [N, C, offsets, out...] -> [N, C * offsets, positions]
  return (columns.size() == 1 ? columns[0].contiguous(s) : concat(columns, 2, s))
      .reshape({x.size(0), x.size(1) * w.offsets(), w.positions()});
}

Tensor conv_from_matmul(const Tensor& x, const Tensor& weight, const Tensor& bias, const Window& w,
                        int64_t groups, Stream& s) {
  const int64_t batch = x.size(0), channels = x.size(1), features = weight.size(0);
  const Tensor patches = patches_of(x, w, s);
  const int64_t per_group = channels / groups * w.offsets();
  const int64_t features_per_group = features / groups;
  const Tensor flat_weight = weight.contiguous(s).reshape({features, per_group});
  std::vector<Tensor> results;
  for (int64_t g = 0; g < groups; ++g) {
    const Tensor w_g = flat_weight.slice(0, g * features_per_group, (g + 1) * features_per_group);
    const Tensor p_g = patches.slice(1, g * per_group, (g + 1) * per_group);
    results.push_back(matmul(w_g, p_g, s));  // [N, M/g, positions]
  }
  Tensor y = groups == 1 ? results[0] : concat(results, 1, s);
  if (bias.defined()) y = add(y, bias.reshape({features, 1}), s);
  Shape shape{batch, features};
  shape.insert(shape.end(), w.out.begin(), w.out.end());
  return y.reshape(shape);
}

Tensor swap_kernel_channels(const Tensor& weight, int64_t groups, Stream& s) {
  const Shape kernel(weight.shape().begin() + 2, weight.shape().end());
  const int64_t per_group = weight.size(0) / groups, other = weight.size(1);
  Shape grouped{groups, per_group, other};
  grouped.insert(grouped.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> swap{0, 2, 1};
  for (size_t i = 0; i < kernel.size(); ++i) swap.push_back(static_cast<int64_t>(i) + 3);
  Shape swapped{groups * other, per_group};
  swapped.insert(swapped.end(), kernel.begin(), kernel.end());
  return weight.contiguous(s).reshape(grouped).permute(swap).contiguous(s).reshape(swapped);
}

namespace {
// Padding that never wins: -inf, or the integer dtype's lowest value.
double lowest_of(DType dtype) {
  if (is_integer(dtype) && !is_signed_integer(dtype)) return 0;
  if (dtype == DType::i8) return std::numeric_limits<int8_t>::lowest();
  if (dtype == DType::i16) return std::numeric_limits<int16_t>::lowest();
  if (dtype == DType::i32) return std::numeric_limits<int32_t>::lowest();
  if (dtype == DType::i64) return static_cast<double>(std::numeric_limits<int64_t>::lowest());
  return -std::numeric_limits<double>::infinity();
}
}  // namespace

Tensor max_pool_from_views(const Tensor& x, const Window& w, Stream& s) {
  Tensor result;
  for_each_offset(padded(x, w, lowest_of(x.dtype()), s), w, [&](const Tensor& view) {
    result = result.defined() ? maximum(result, view, s) : view.contiguous(s);
  });
  return result;
}

Tensor max_pool_picking_from_views(const Tensor& x, const Window& w, Stream& s) {
  const bool floating = dtypes::kFloating.has(x.dtype());
  Tensor result;
  for_each_offset(padded(x, w, lowest_of(x.dtype()), s), w, [&](const Tensor& view) {
    if (!result.defined()) {
      result = view.contiguous(s);
      return;
    }
    // Strictly greater: a tie stays with the earlier element. A NaN wins over anything.
    Tensor later = gt(view, result, s);
    if (floating) {
      const Tensor nan = ne(view, view, s);
      later = where(nan, nan, later, s);
    }
    result = where(later, view, result, s);
  });
  return result;
}

// The mean of each window: its sum over the count of elements it covers, the explicit padding
// counted or not; a tensor of ones pooled the same way gives the counts.
Tensor avg_pool_from_views(const Tensor& x, const Window& w, bool count_include_pad, Stream& s) {
  Tensor total;
  for_each_offset(padded(x, w, 0.0, s), w, [&](const Tensor& view) {
    total = total.defined() ? add(total, view, s) : view.contiguous(s);
  });
  Shape ones_shape{1, 1};
  for (int64_t d = 2; d < x.dim(); ++d) ones_shape.push_back(x.size(d));
  Tensor ones = full(ones_shape, 1.0, x.dtype(), s);
  if (count_include_pad) {
    // Explicit pads count; ceil_mode's extra end does not.
    std::vector<int64_t> before{0, 0}, after{0, 0};
    before.insert(before.end(), w.pad_before.begin(), w.pad_before.end());
    after.insert(after.end(), w.pad_after.begin(), w.pad_after.end());
    ones = pad_constant(ones, before, after, 1.0, s);
    Window inner = w;
    std::fill(inner.pad_before.begin(), inner.pad_before.end(), 0);
    std::fill(inner.pad_after.begin(), inner.pad_after.end(), 0);
    ones = padded(ones, inner, 0.0, s);
  } else {
    ones = padded(ones, w, 0.0, s);
  }
  Tensor count;
  for_each_offset(ones, w, [&](const Tensor& view) {
    count = count.defined() ? add(count, view, s) : view.contiguous(s);
  });
  return div(total, count, s);
}

}  // namespace hal::ops

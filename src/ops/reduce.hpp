// Reductions inside hal: the ops, how an input is laid out for one (the dimensions kept and
// those reduced, each merged where memory allows), and the kernels of each table.
#pragma once

#include <string_view>

#include "hal/tensor.hpp"
#include "ops/layout_dims.hpp"

namespace hal::ops {

enum class Reduce : uint8_t { sum, mean, max, min, argmax };
std::string_view name(Reduce op);

// Output element o (row-major over `kept`) reduces the input elements at
// offset + position(o in kept, kept_strides) + position(r in reduced, reduced_strides) for r in
// [0, count), r row-major over `reduced` — the order argmax counts in.
struct ReduceLayout {
  LayoutDims kept, kept_strides;  // inline: laying out a small reduction allocates nothing
  LayoutDims reduced, reduced_strides;
  int64_t offset = 0;
  int64_t outputs = 0;  // elements of the result
  int64_t count = 0;    // elements each one reduces
};

ReduceLayout reduce_layout(const Tensor& x, const std::vector<bool>& reduced_axes);

// `out` is contiguous with `layout.outputs` elements of x's dtype (i64 for argmax); x is f32,
// f64, i32 or i64, and count > 0 for max, min and argmax.
void host_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                 Stream& stream);
// kernels/ops/reduce.kernel: one work-group per output. Layouts of at most kMaxDims kept and
// kMaxDims reduced dimensions (Unsupported beyond).
void portable_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                     Stream& stream);

Tensor reduce(Reduce op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
              Stream& stream);

}  // namespace hal::ops

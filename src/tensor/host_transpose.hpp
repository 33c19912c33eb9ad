// A strided gather on the host whose source runs along memory in a dimension other than the
// result's last one (a transpose, NCHW to NHWC), or whose rows lie in another order (a permute of
// attention's heads): copied in square tiles of elements or of rows, so that reads and writes
// both run along cache lines instead of one of them jumping a row (and often a page) a step.
#pragma once

#include <cstdint>
#include <optional>

#include "hal/tensor.hpp"

namespace hal::tensor {

class HostTranspose {
 public:
  // The plan for gathering a view of `shape` and `strides` (in elements, dimensions merged as
  // contiguous() merges them) into row-major storage, or nothing where row copies in the
  // result's order serve as well: the view's last dimension runs along memory in rows too long
  // to tile, no dimension runs along memory, or the rows are one repeated (stride 0).
  static std::optional<HostTranspose> plan(const Shape& shape, const Shape& strides,
                                           size_t element_size);

  // Work units: one per span of the columns that run along the source's memory (a few tiles
  // side by side) and band of rows, per outer index. `elements_per_unit` tells the launch how
  // much work a unit is.
  uint64_t units() const { return static_cast<uint64_t>(outer_count_ * blocks_ * bands_); }
  uint64_t elements_per_unit() const {
    return static_cast<uint64_t>(rows_ / bands_ * span_ * run_elements_);
  }

  // Copies units [first, end) from `in` (at the view's offset) into `out` (the result's start).
  void run(unsigned char* out, const unsigned char* in, uint64_t first, uint64_t end) const;

 private:
  // One unit's span of `cols` columns of single elements of type T, tile by tile.
  template <class T>
  void copy_span(unsigned char* to, const unsigned char* from, int64_t cols, int64_t row_begin,
                 int64_t row_end) const;

  // Where a view's rows are runs of contiguous elements (a permute that keeps the last
  // dimension, such as attention's heads), the runs move whole, a tile of them at a time.
  int64_t run_bytes_ = 0;     // bytes moved whole: an element, or a row of the last dimension
  int64_t tile_ = 0;          // runs in a tile's side
  int64_t span_ = 0;          // columns a unit copies: a few tiles' widths
  int64_t rows_ = 0;          // runs in the result's last row dimension
  int64_t cols_ = 0;          // the dimension along which the view's runs lie side by side
  int64_t in_row_step_ = 0;   // bytes between the view's rows
  int64_t out_col_step_ = 0;  // bytes between the result's columns
  int64_t blocks_ = 0;        // spans across cols_
  int64_t bands_ = 0;         // bands of rows across rows_
  int64_t run_elements_ = 1;  // elements in a run
  int64_t outer_count_ = 1;
  Shape outer_shape_, outer_in_steps_, outer_out_steps_;  // the other dimensions (steps in bytes)
};

}  // namespace hal::tensor

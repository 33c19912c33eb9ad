// Walks the elements of one or more strided views of the same shape in row-major order, keeping
// each view's element offset: an odometer over the index, last dimension fastest. For host code
// (host kernels, gathers) that visits a range of elements [first, first + count).
#pragma once

#include <array>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <span>

namespace hal::tensor {

template <size_t kViews>
class StridedWalk {
 public:
  // `strides[v]` are view v's strides (in elements) and `offsets[v]` its offset; the walk starts
  // at row-major element `first`.
  // `Dims`: any contiguous container of int64_t (a Shape, an elementwise layout's inline dims);
  // the walk refers to `shape` and `strides`, which must outlive it.
  template <class Dims>
  StridedWalk(const Dims& shape, const std::array<Dims, kViews>& strides,
              const std::array<int64_t, kViews>& offsets, int64_t first)
      : shape_(shape.data(), shape.size()), at_(offsets), index_(shape.size()) {
    for (size_t v = 0; v < kViews; ++v) strides_[v] = {strides[v].data(), strides[v].size()};
    for (size_t d = shape_.size(); d-- > 0;) {
      index_[d] = first % shape_[d];
      first /= shape_[d];
      for (size_t v = 0; v < kViews; ++v) at_[v] += index_[d] * strides_[v][d];
    }
  }

  // View v's element offset at the current element.
  int64_t at(size_t v) const { return at_[v]; }

  void next() { carry_from(shape_.size()); }

  // The elements left in the innermost dimension from the current one (shape not empty).
  int64_t inner_left() const { return shape_.back() - index_.back(); }
  // Moves `n` elements along the innermost dimension, n at most inner_left(): a row at a time
  // for kernels whose inner loop runs along it.
  void advance_inner(int64_t n) {
    const size_t last = shape_.size() - 1;
    if (index_[last] + n < shape_[last]) {
      for (size_t v = 0; v < kViews; ++v) at_[v] += strides_[v][last] * n;
      index_[last] += n;
      return;
    }
    for (size_t v = 0; v < kViews; ++v) at_[v] -= strides_[v][last] * index_[last];
    index_[last] = 0;
    carry_from(last);
  }

 private:
  // One step in dimension `end - 1`, carrying into the outer ones.
  void carry_from(size_t end) {
    for (size_t d = end; d-- > 0;) {
      for (size_t v = 0; v < kViews; ++v) at_[v] += strides_[v][d];
      if (++index_[d] < shape_[d]) return;
      for (size_t v = 0; v < kViews; ++v) at_[v] -= strides_[v][d] * shape_[d];
      index_[d] = 0;
    }
  }

  std::span<const int64_t> shape_;
  std::array<std::span<const int64_t>, kViews> strides_;
  std::array<int64_t, kViews> at_;
  boost::container::small_vector<int64_t, 6>
      index_;  // inline: a chunk of a kernel allocates nothing
};

}  // namespace hal::tensor

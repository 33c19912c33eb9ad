// Walks the elements of one or more strided views of the same shape in row-major order, keeping
// each view's element offset: an odometer over the index, last dimension fastest. For host code
// (host kernels, gathers) that visits a range of elements [first, first + count).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace hal::tensor {

template <size_t kViews>
class StridedWalk {
 public:
  // `strides[v]` are view v's strides (in elements) and `offsets[v]` its offset; the walk starts
  // at row-major element `first`.
  StridedWalk(const std::vector<int64_t>& shape,
              const std::array<std::vector<int64_t>, kViews>& strides,
              const std::array<int64_t, kViews>& offsets, int64_t first)
      : shape_(shape), strides_(strides), at_(offsets), index_(shape.size()) {
    for (size_t d = shape_.size(); d-- > 0;) {
      index_[d] = first % shape_[d];
      first /= shape_[d];
      for (size_t v = 0; v < kViews; ++v) at_[v] += index_[d] * strides_[v][d];
    }
  }

  // View v's element offset at the current element.
  int64_t at(size_t v) const { return at_[v]; }

  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      for (size_t v = 0; v < kViews; ++v) at_[v] += strides_[v][d];
      if (++index_[d] < shape_[d]) return;
      for (size_t v = 0; v < kViews; ++v) at_[v] -= strides_[v][d] * shape_[d];
      index_[d] = 0;
    }
  }

 private:
  const std::vector<int64_t>& shape_;
  const std::array<std::vector<int64_t>, kViews>& strides_;
  std::array<int64_t, kViews> at_;
  std::vector<int64_t> index_;
};

}  // namespace hal::tensor

// The checked arithmetic of a tensor's extent: its element count, its bytes and the furthest
// element a view reaches. Each overflow is InvalidArgument naming the shape, since a wrapped
// count or extent would pass the bounds check and let a view reach outside its buffer.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "hal/tensor.hpp"

namespace hal::tensor {

// InvalidArgument naming `operation` unless `dtype` is one of hal's dtypes.
void check_dtype(DType dtype, std::string_view operation);
// The same, with the operation's text built by `describe()` only for the error: tensors are
// made on every op's hot path, where formatting a shape would cost more than the op.
template <class Describe>
requires std::is_invocable_v<Describe>
void check_dtype(DType dtype, Describe&& describe) {
  if (!is_valid(dtype)) [[unlikely]]
    check_dtype(dtype, std::string_view(describe()));
}
// The bytes of numel(shape) elements of `dtype` (a valid one); InvalidArgument naming the
// dtype and shape when they do not fit in int64.
int64_t byte_count(const Shape& shape, DType dtype);
// offset + sum of stride * (size - 1): the furthest element a view with at least one element
// reaches, or -1 when the sum overflows int64. Sizes, strides and the offset are not negative.
int64_t furthest_element(const Shape& shape, const Shape& strides, int64_t offset);
// Whether contiguous() of `t` gathers on its device (a host kernel, or a portable kernel of its
// merged dimensions) rather than through the host, which copy_to_host does itself.
bool gathers_on_device(const Tensor& t);
// Whether contiguous() of `t` on the CPU copies it in tiles (tensor/host_transpose.hpp): its
// rows do not run along memory in the result's order, as in a transposed matrix.
bool copies_in_tiles(const Tensor& t);

}  // namespace hal::tensor

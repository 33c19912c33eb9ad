#include "tensor/extent.hpp"

#include <string>

#include "core/checked_math.hpp"
#include "hal/error.hpp"

namespace hal::tensor {

using detail::checked_add;
using detail::checked_mul;

void check_dtype(DType dtype, std::string_view operation) {
  if (is_valid(dtype)) return;
  std::string known;
  for (DType each : kAllDTypes) known += (known.empty() ? "" : ", ") + std::string(to_string(each));
  throw Error(ErrorCode::InvalidArgument, std::string(operation) + ": dtype " +
                                              std::to_string(static_cast<int>(dtype)) +
                                              " is not one of hal's dtypes (" + known + ")");
}

int64_t byte_count(const Shape& shape, DType dtype) {
  const int64_t count = numel(shape);
  const auto element = static_cast<int64_t>(size_of(dtype));
  if (const auto bytes = checked_mul(count, element)) return *bytes;
  throw Error(ErrorCode::InvalidArgument, std::string(to_string(dtype)) + to_string(shape) + ": " +
                                              std::to_string(count) + " elements of " +
                                              std::to_string(element) +
                                              " bytes are more bytes than int64 can count");
}

int64_t furthest_element(const Shape& shape, const Shape& strides, int64_t offset) {
  int64_t last = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    const auto step = checked_mul(strides[d], shape[d] - 1);
    const auto reached = step ? checked_add(last, *step) : std::nullopt;
    if (!reached) return -1;
    last = *reached;
  }
  return last;
}

}  // namespace hal::tensor

// Creating tensors: empty storage, fills, ranges and host data, enqueued on a stream.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/device_allocate.hpp"
#include "hal/error.hpp"
#include "hal/tensor.hpp"
#include "tensor/element_codec.hpp"
#include "tensor/extent.hpp"

namespace hal {
namespace {

// Enqueues a copy of `bytes` into `dst`; the host data is moved into the stream's keeping until
// the copy has run.
void upload(Stream& stream, const Buffer& dst, std::vector<unsigned char> bytes) {
  if (bytes.empty()) return;
  auto held = std::make_shared<std::vector<unsigned char>>(std::move(bytes));
  stream.copy_from_host(dst, held->data(), held->size());
  stream.keep_until_done(held);  // until the copy has run
}

}  // namespace

Tensor detail::empty_on(const Shape& shape, DType dtype,
                        const std::shared_ptr<DeviceImpl>& device) {
  tensor::check_dtype(dtype, [&] { return "empty of " + to_string(shape); });
  // A tensor without elements still has storage (of one element), so that it has a device.
  const auto bytes =
      std::max<int64_t>(tensor::byte_count(shape, dtype), static_cast<int64_t>(size_of(dtype)));
  return Tensor(detail::allocate(device, static_cast<size_t>(bytes)), dtype, shape,
                Tensor::Fresh{});
}

Tensor empty(const Shape& shape, DType dtype, const Device& device) {
  return detail::empty_on(shape, dtype, device.impl());
}

namespace {

template <class Value>
Tensor fill_with(const Shape& shape, Value value, DType dtype, Stream& stream) {
  tensor::check_dtype(dtype, [&] { return "full of " + to_string(shape); });
  unsigned char pattern[8];
  if constexpr (std::is_integral_v<Value>)
    tensor::encode_integer(value, dtype, pattern, "full");
  else
    tensor::encode(value, dtype, pattern, "full");
  Tensor out = empty(shape, dtype, stream.device());
  if (out.numel() > 0) stream.fill(out.storage(), pattern, size_of(dtype), out.nbytes());
  return out;
}

}  // namespace

Tensor full(const Shape& shape, double value, DType dtype, Stream& stream) {
  return fill_with(shape, value, dtype, stream);
}

Tensor full(const Shape& shape, int64_t value, DType dtype, Stream& stream) {
  return fill_with(shape, value, dtype, stream);
}

Tensor full(const Shape& shape, uint64_t value, DType dtype, Stream& stream) {
  return fill_with(shape, value, dtype, stream);
}

namespace {

__extension__ typedef __int128 Wide;  // holds start + i * step of any int64 start, step and i

// Whether `value` is a whole number that int64 holds: one arange can count from exactly.
bool whole_int64(double value) {
  return std::trunc(value) == value && value >= -0x1p63 && value < 0x1p63;
}

// start + i * step for i below `count`, as elements of the integer `dtype`, computed in integers:
// in doubles they round past 2^53 (2^53 - 2 + i gave 2^53 twice).
std::vector<unsigned char> integer_range(int64_t start, int64_t step, int64_t count, DType dtype) {
  const size_t element = size_of(dtype);
  std::vector<unsigned char> bytes(static_cast<size_t>(count) * element);
  for (int64_t i = 0; i < count; ++i) {
    const Wide value = Wide{start} + Wide{i} * step;
    unsigned char* out = bytes.data() + static_cast<size_t>(i) * element;
    if (dtype == DType::i64 && value >= INT64_MIN && value <= INT64_MAX) {
      const auto exact = static_cast<int64_t>(value);
      std::memcpy(out, &exact, sizeof exact);
    } else if (dtype == DType::u64 && value >= 0 && value <= Wide{UINT64_MAX}) {
      const auto exact = static_cast<uint64_t>(value);
      std::memcpy(out, &exact, sizeof exact);
    } else {  // exact in a double for every narrower type's range; refused beyond it
      tensor::encode(static_cast<double>(value), dtype, out, "arange");
    }
  }
  return bytes;
}

}  // namespace

Tensor arange(double start, double end, double step, DType dtype, Stream& stream) {
  const std::string what = "arange(" + tensor::number_text(start) + ", " +
                           tensor::number_text(end) + ", " + tensor::number_text(step) + ")";
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    throw Error(ErrorCode::InvalidArgument, what +
                                                ": the bounds and step must be finite and "
                                                "the step non-zero");
  tensor::check_dtype(dtype, what);
  const double span = std::ceil((end - start) / step);
  // A larger count (or an infinite one, from a finite but tiny step) is no int64.
  if (!(span < 0x1p63))
    throw Error(ErrorCode::InvalidArgument, what + ": its " + tensor::number_text(span) +
                                                " elements are more than int64 can count");
  const bool exact = is_integer(dtype) && whole_int64(start) && whole_int64(step);
  int64_t count = static_cast<int64_t>(std::max(span, 0.0));
  if (exact) {
    // The values below `end` (above it for a negative step), counted in integers: an integer
    // is below a fractional end exactly when it is below its ceiling. |end - start| is under
    // 2^63 * |step| < 2^126 (the span was checked), so Wide holds it.
    const auto first = static_cast<Wide>(start), stride = static_cast<Wide>(step);
    const auto last = static_cast<Wide>(step > 0 ? std::ceil(end) : std::floor(end));
    const Wide distance = step > 0 ? last - first : first - last;
    const Wide size = step > 0 ? stride : -stride;
    const Wide values = distance <= 0 ? 0 : (distance + size - 1) / size;
    if (values > INT64_MAX)  // the span's double rounded below 2^63
      throw Error(ErrorCode::InvalidArgument,
                  what + ": its elements are more than int64 can count");
    count = static_cast<int64_t>(values);
  }
  // Made first: its checks and allocation come before the host copy of that size.
  Tensor out = empty({count}, dtype, stream.device());
  std::vector<unsigned char> bytes;
  if (exact) {
    bytes = integer_range(static_cast<int64_t>(start), static_cast<int64_t>(step), count, dtype);
  } else {
    const size_t element = size_of(dtype);
    bytes.resize(out.nbytes());
    for (int64_t i = 0; i < count; ++i)
      tensor::encode(start + static_cast<double>(i) * step, dtype,
                     bytes.data() + static_cast<size_t>(i) * element, "arange");
  }
  upload(stream, out.storage(), std::move(bytes));
  return out;
}

Tensor from_host(const void* data, const Shape& shape, DType dtype, Stream& stream) {
  Tensor out = empty(shape, dtype, stream.device());
  if (!data && out.nbytes() > 0)
    throw Error(ErrorCode::InvalidArgument, "from_host of " + out.describe() +
                                                ": the host pointer is null for " +
                                                std::to_string(out.nbytes()) + " bytes");
  const auto* first = static_cast<const unsigned char*>(data);
  std::vector<unsigned char> bytes(first, first + out.nbytes());
  // A bool is stored as 0 or 1: kernels read its byte as a number (OpenCL's and Vulkan's casts
  // turned a byte of 2 into 2 where the CPU's gave 1), so any other byte is made 1 here.
  if (dtype == DType::boolean)
    for (unsigned char& byte : bytes) byte = byte != 0;
  upload(stream, out.storage(), std::move(bytes));
  return out;
}

}  // namespace hal

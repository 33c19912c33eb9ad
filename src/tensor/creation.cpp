// Creating tensors: empty storage, fills, ranges and host data, enqueued on a stream.
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>

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

Tensor full(const Shape& shape, double value, DType dtype, Stream& stream) {
  tensor::check_dtype(dtype, [&] { return "full of " + to_string(shape); });
  unsigned char pattern[8];
  tensor::encode(value, dtype, pattern, "full");
  Tensor out = empty(shape, dtype, stream.device());
  if (out.numel() > 0) stream.fill(out.storage(), pattern, size_of(dtype), out.nbytes());
  return out;
}

Tensor arange(double start, double end, double step, DType dtype, Stream& stream) {
  const std::string what = "arange(" + std::to_string(start) + ", " + std::to_string(end) + ", " +
                           std::to_string(step) + ")";
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    throw Error(ErrorCode::InvalidArgument, what +
                                                ": the bounds and step must be finite and "
                                                "the step non-zero");
  tensor::check_dtype(dtype, what);
  const double span = std::ceil((end - start) / step);
  // A larger count (or an infinite one, from a finite but tiny step) is no int64.
  if (!(span < 0x1p63)) {
    std::ostringstream elements;
    elements << span;
    throw Error(ErrorCode::InvalidArgument,
                what + ": its " + elements.str() + " elements are more than int64 can count");
  }
  const auto count = static_cast<int64_t>(std::max(span, 0.0));
  // Made first: its checks and allocation come before the host copy of that size.
  Tensor out = empty({count}, dtype, stream.device());
  const size_t element = size_of(dtype);
  std::vector<unsigned char> bytes(out.nbytes());
  for (int64_t i = 0; i < count; ++i)
    tensor::encode(start + static_cast<double>(i) * step, dtype,
                   bytes.data() + static_cast<size_t>(i) * element, "arange");
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
  upload(stream, out.storage(), std::vector<unsigned char>(first, first + out.nbytes()));
  return out;
}

}  // namespace hal

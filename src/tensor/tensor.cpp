// Tensor's metadata, checks and copies; views are in views.cpp, creation in creation.cpp.
#include "hal/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "autograd/record.hpp"
#include "core/checked_math.hpp"
#include "hal/autograd.hpp"
#include "hal/backend.hpp"
#include "hal/error.hpp"
#include "tensor/extent.hpp"
#include "tensor/strided_walk.hpp"

namespace hal {

std::string to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

int64_t numel(const Shape& shape) {
  // One pass (numel is asked several times by every op): a negative size is an error; a zero
  // makes the count 0 however large the other sizes are, so an overflow is reported only when
  // no size is zero.
  int64_t count = 1;
  bool negative = false, zero = false, overflow = false;
  for (int64_t size : shape) {
    negative |= size < 0;
    zero |= size == 0;
    if (const auto product = detail::checked_mul(count, size))
      count = *product;
    else
      overflow = true;
  }
  if (negative) [[unlikely]]
    throw Error(ErrorCode::InvalidArgument, "shape " + to_string(shape) + " has a negative size");
  if (zero) return 0;
  if (overflow) [[unlikely]]
    throw Error(ErrorCode::InvalidArgument,
                "shape " + to_string(shape) + " has more elements than int64 can count");
  return count;
}

void check_element_count(size_t count, const Shape& shape) {
  if (static_cast<int64_t>(count) != numel(shape))
    throw Error(ErrorCode::InvalidArgument, std::to_string(count) + " elements cannot fill shape " +
                                                to_string(shape) + " (" +
                                                std::to_string(numel(shape)) + " elements)");
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    if (i == 0) break;  // the outermost size multiplies no stride
    const auto next = detail::checked_mul(stride, std::max<int64_t>(shape[i], 1));
    if (!next)
      throw Error(ErrorCode::InvalidArgument,
                  "shape " + to_string(shape) + ": its row-major strides overflow int64");
    stride = *next;
  }
  return strides;
}

Tensor::Tensor(Buffer storage, DType dtype, Shape shape, Shape strides, int64_t offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(strides.empty() ? contiguous_strides(shape_) : std::move(strides)),
      offset_(offset) {
  // Built only for an error: tensors are made on every op's hot path.
  const auto what = [this] {
    return "tensor " + std::string(hal::to_string(dtype_)) + to_string(shape_);
  };
  if (!storage_) throw Error(ErrorCode::InvalidArgument, what() + ": no storage");
  if (strides_.size() != shape_.size())
    throw Error(ErrorCode::InvalidArgument, what() + ": " + std::to_string(strides_.size()) +
                                                " strides " + to_string(strides_) + " for " +
                                                std::to_string(shape_.size()) + " dimensions");
  tensor::check_dtype(dtype_, what);
  if (offset_ < 0) throw Error(ErrorCode::InvalidArgument, what() + ": negative offset");
  for (int64_t stride : strides_)
    if (stride < 0)
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": negative stride " + std::to_string(stride));
  // Also checks that the elements, and their bytes (nbytes()), can be counted.
  if (tensor::byte_count(shape_, dtype_) == 0) return;  // no element is reached
  const int64_t last = tensor::furthest_element(shape_, strides_, offset_);
  const auto where = [&] {
    return what() + " with strides " + to_string(strides_) + " and offset " +
           std::to_string(offset_);
  };
  if (last < 0)
    throw Error(ErrorCode::InvalidArgument,
                where() + ": the index of its furthest element overflows int64");
  const auto capacity = static_cast<int64_t>(storage_.size() / element_size());
  if (last >= capacity)
    throw Error(ErrorCode::OutOfRange, where() + " reaches element " + std::to_string(last) +
                                           ", past the " + std::to_string(capacity) +
                                           " elements of its storage");
}

Tensor::Tensor(Buffer storage, DType dtype, const Shape& shape, Fresh)
    : storage_(std::move(storage)),
      dtype_(dtype),
      shape_(shape),
      strides_(contiguous_strides(shape_)) {}

int64_t Tensor::numel() const { return hal::numel(shape_); }

Device Tensor::device() const { return storage_.device(); }

uint32_t Tensor::version() const { return storage_ ? storage_.impl()->version() : 0; }

void Tensor::bump_version() const {
  if (storage_) storage_.impl()->bump_version();
}

int64_t Tensor::size(int64_t dim) const {
  return shape_[static_cast<size_t>(wrap_dim(dim, "size"))];
}

bool Tensor::is_contiguous() const {
  // No elements: nothing to gather, whatever the strides (which no bounds check limited, so
  // arithmetic on them could overflow).
  if (std::find(shape_.begin(), shape_.end(), 0) != shape_.end()) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;  // any stride walks a single element
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "an undefined tensor";
  return std::string(hal::to_string(dtype_)) + to_string(shape_) + " on " + device().id();
}

int64_t Tensor::wrap_dim(int64_t dim, const char* operation, int64_t extra) const {
  const int64_t rank = this->dim() + extra;
  if (dim < -rank || dim >= rank)
    throw Error(ErrorCode::InvalidArgument, std::string(operation) + " of " + describe() +
                                                ": dimension " + std::to_string(dim) +
                                                " is out of range for " + std::to_string(rank) +
                                                " dimensions");
  return dim < 0 ? dim + rank : dim;
}

void Tensor::check_host_type(bool matches, std::string_view host_type) const {
  if (!matches)
    throw Error(ErrorCode::InvalidArgument, "to_vector of " + describe() + ": elements of " +
                                                std::string(hal::to_string(dtype_)) +
                                                " cannot be read as " + std::string(host_type));
}

Tensor Tensor::to(const Device& device, Stream& stream) const {
  if (!is_contiguous()) {
    if (!(stream.device() == this->device()))
      throw Error(ErrorCode::InvalidArgument,
                  "to(" + device.id() + ") of " + describe() + " with strides " +
                      to_string(strides_) + " on a stream of " + stream.device().id() +
                      ": a tensor that is not contiguous is packed on its own device first; "
                      "use a stream of " +
                      this->device().id() + ", or call contiguous() first");
    return contiguous(stream).to(device, stream);
  }
  Tensor out = empty(shape_, dtype_, device);
  if (numel() > 0)
    stream.copy(out.storage_, storage_, nbytes(), 0, static_cast<size_t>(offset_) * element_size());
  return requires_grad() ? autograd::record_copy("to", *this, std::move(out)) : out;
}

void Tensor::copy_to_host(void* dst, Stream& stream) const {
  if (numel() == 0) return;
  const size_t element = element_size();
  if (is_contiguous()) {
    stream.copy_to_host(dst, storage_, nbytes(), static_cast<size_t>(offset_) * element);
    return;
  }
  const auto gather = [dst, shape = shape_, strides = std::array{strides_},
                       element](const unsigned char* from) {
    auto* out = static_cast<unsigned char*>(dst);
    tensor::StridedWalk<1> walk(shape, strides, {0}, 0);
    for (int64_t n = hal::numel(shape); n > 0; --n, walk.next(), out += element)
      std::memcpy(out, from + static_cast<size_t>(walk.at(0)) * element, element);
  };
  if (storage_.host_accessible()) {
    // Gathered in place, in the stream's order: staging the span a view reaches took a second
    // copy of all of it (a column of a 1 GiB matrix staged the whole gigabyte).
    stream.host_callback([gather, storage = storage_, at = static_cast<size_t>(offset_) * element] {
      gather(static_cast<const unsigned char*>(storage.host_data()) + at);
    });
    return;
  }
  // The constructor checked that this extent fits in the storage.
  const int64_t span = tensor::furthest_element(shape_, strides_, offset_) - offset_ + 1;
  if (span > 2 * numel() && stream.device() == device() && tensor::gathers_on_device(*this)) {
    // Sparse in its span: gathered on the device, only the elements cross to the host (through
    // the host, contiguous() would come back here).
    const NoGrad untracked;
    contiguous(stream).copy_to_host(dst, stream);
    return;
  }
  // Strided: bring the span of storage the view reaches to the host, then gather from it in
  // row-major order once the copy has run.
  auto staging = std::make_shared<std::vector<unsigned char>>(static_cast<size_t>(span) * element);
  stream.copy_to_host(staging->data(), storage_, staging->size(),
                      static_cast<size_t>(offset_) * element);
  stream.host_callback([staging, gather] { gather(staging->data()); });
}

}  // namespace hal

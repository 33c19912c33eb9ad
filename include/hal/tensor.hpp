// Tensor: a strided view of elements of one dtype in a Buffer of one device.
//
// A tensor is a small value: its dtype, shape, strides and offset (both in elements), and shared
// storage. Views (reshape, transpose, permute, slice, expand, squeeze, unsqueeze) make new
// tensors over the same storage and copy nothing. Creation and copies are enqueued on a Stream,
// like every other piece of work in hal, and the host sees their results after synchronisation;
// `to_vector` is the one call that waits, since it hands the values to the host.
//
// Dimensions may be negative, counted from the end as in NumPy and PyTorch. Errors are
// hal::Error naming the operation, the shapes and the dimension involved. Thread-safe as values
// are: a Tensor may be copied and read from many threads; the storage is shared, not locked.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hal/buffer.hpp"
#include "hal/device.hpp"
#include "hal/dtype.hpp"
#include "hal/stream.hpp"

namespace hal {

using Shape = std::vector<int64_t>;

namespace autograd {
struct Meta;
class Access;
}  // namespace autograd

class Tensor;
namespace detail {
// Not API: empty() on the device `device` names, what hal's ops use to allocate a result
// beside an operand without making a Device handle.
Tensor empty_on(const Shape& shape, DType dtype, const std::shared_ptr<DeviceImpl>& device);
}  // namespace detail

// "[2, 3, 4]".
std::string to_string(const Shape& shape);
// The product of the sizes (1 for a 0-d shape); InvalidArgument for a negative size or a
// product past INT64_MAX.
int64_t numel(const Shape& shape);

// The dtype of a C++ element type, for typed creation and read-back.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::i8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::u8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::i16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::u32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DType::u64;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::boolean;
  else
    static_assert(sizeof(T) == 0,
                  "no dtype for this type; uint16_t is f16's, bf16's or u16's: name the dtype");
}

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage
  // A view of `storage`. Throws OutOfRange when the elements it reaches do not lie inside the
  // buffer, and InvalidArgument for a dtype that is not one of hal's, negative sizes, strides or
  // offset, or when its element count, its bytes or its furthest element overflow int64.
  // Empty `strides` means contiguous (row-major).
  Tensor(Buffer storage, DType dtype, Shape shape, Shape strides = {}, int64_t offset = 0);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements; 0 along expanded dims
  int64_t offset() const { return offset_; }         // in elements, into the storage
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t dim) const;  // of one dimension
  int64_t numel() const;
  size_t element_size() const { return size_of(dtype_); }
  // Bytes of the elements themselves: numel() * element_size(), which the constructor checked
  // fits in int64.
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Buffer& storage() const { return storage_; }
  Device device() const;
  bool defined() const { return static_cast<bool>(storage_); }
  // Row-major with no gaps: element i is at offset() + i.
  bool is_contiguous() const;
  // "f32[2, 3] on cpu:0", for messages.
  std::string describe() const;

  // Views. reshape and view accept one -1 for the size the others leave; they throw
  // InvalidArgument when the strides cannot express the new shape without a copy.
  Tensor reshape(const Shape& shape) const;
  Tensor view(const Shape& shape) const { return reshape(shape); }
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  // Elements start, start + step, ... before end along `dim`; start and end are clamped to the
  // dimension and may be negative, as in Python. step >= 1.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  // Broadcasts size-1 dimensions (and new leading ones) to `shape` with stride 0; -1 keeps a
  // dimension's size.
  Tensor expand(const Shape& shape) const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;

  // This tensor if it is contiguous, else a contiguous copy on the same device, enqueued on
  // `stream` (a stream of that device): a kernel on devices that run them, the host
  // otherwise.
  Tensor contiguous(Stream& stream) const;
  // A contiguous copy on `device`, enqueued on `stream` (a stream of either device; across
  // backends hal stages the copy). A tensor that is not contiguous is packed first, which
  // needs a stream of its own device (InvalidArgument otherwise).
  Tensor to(const Device& device, Stream& stream) const;
  // Enqueues a copy of the elements, in row-major order, into `dst` (nbytes() bytes, valid
  // until the copy has run). Works for every layout: strided tensors are gathered.
  void copy_to_host(void* dst, Stream& stream) const;
  // The elements in row-major order, after waiting for `stream`. T is the dtype's type:
  // uint16_t holds f16 and bf16 bits, uint8_t holds bool.
  // Autograd (hal/autograd.hpp). Copies of a Tensor share its autograd state, so set
  // requires_grad_() before copying. Views, contiguous() and to() record like ops.
  //
  // Makes this tensor a leaf whose gradient backward() accumulates (a parameter); floating
  // dtypes only (InvalidArgument otherwise). requires_grad_(false) on a leaf freezes it, as
  // PyTorch's: ops stop recording for it, its grad() stays, and so does the state its copies
  // share (an optimizer's), so that requires_grad_(true) trains the same leaf again. On a result
  // of recorded ops it is InvalidArgument (use detach()).
  Tensor& requires_grad_(bool enabled = true);
  bool requires_grad() const { return autograd_ != nullptr && !frozen(); }
  // No op made it: a leaf (also true of tensors that do not require grad).
  bool is_leaf() const;
  // The op that made it ("matmul", "reshape"), or "" for leaves.
  std::string grad_fn() const;
  // The gradient backward() accumulated into this leaf; undefined before, or after zero_grad().
  Tensor grad() const;
  // Replaces the accumulated gradient (undefined clears it); InvalidArgument for a tensor that
  // does not require grad, or a gradient of another shape, dtype or device.
  void set_grad(const Tensor& grad);
  void zero_grad() { set_grad(Tensor()); }
  // Called with this leaf's gradient, complete for the running backward (after accumulation),
  // and the stream it is ready on: the seam for a gradient all-reduce. InvalidArgument for a
  // tensor that is not a leaf requiring grad.
  void on_grad_ready(std::function<void(const Tensor& grad, Stream& stream)> hook);
  // The same elements, with no autograd history and not requiring grad.
  Tensor detach() const;
  // In-place writes into this tensor's storage through hal's API (an optimizer's step, a
  // checkpoint load, a collective into it, bump_version()), one count for every view of that
  // storage, as PyTorch's _version; ops never write in place and leave it alone. backward()
  // refuses a tensor its ops saved whose count moved after forward (hal/autograd.hpp). Only
  // changes mean anything: a new tensor may start above 0 (the caching allocator reuses its
  // buffers); 0 for an undefined tensor.
  uint32_t version() const;
  // Counts an in-place write, for code that writes storage() itself (Stream::copy, fill, a
  // kernel) while a graph may have saved the tensor: one relaxed atomic increment.
  void bump_version() const;
  // hal::backward(*this, stream, grad, {retain_graph}); without a gradient, 1 (a single-element
  // tensor only).
  void backward(Stream& stream) const;
  void backward(Stream& stream, const Tensor& grad, bool retain_graph = false) const;

  template <class T>
  std::vector<T> to_vector(Stream& stream) const {
    static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no data(): use uint8_t");
    if constexpr (std::is_same_v<T, uint16_t>)
      check_host_type(dtype_ == DType::f16 || dtype_ == DType::bf16 || dtype_ == DType::u16,
                      "uint16_t");
    else if constexpr (std::is_same_v<T, uint8_t>)
      check_host_type(dtype_ == DType::u8 || dtype_ == DType::boolean, "uint8_t");
    else
      check_host_type(dtype_ == dtype_of<T>(), hal::to_string(dtype_of<T>()));
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_to_host(out.data(), stream);
    stream.synchronize();
    return out;
  }

 private:
  friend class autograd::Access;
  // empty()'s tensor: contiguous storage it has just sized for the shape, after its own checks
  // of the dtype and the byte count, so only the strides are left to make.
  friend Tensor detail::empty_on(const Shape& shape, DType dtype,
                                 const std::shared_ptr<DeviceImpl>& device);
  struct Fresh {};
  Tensor(Buffer storage, DType dtype, const Shape& shape, Fresh);
  void check_host_type(bool matches, std::string_view host_type) const;
  // A leaf after requires_grad_(false); asked only of a tensor with autograd state.
  bool frozen() const;
  int64_t wrap_dim(int64_t dim, const char* operation, int64_t extra = 0) const;

  Buffer storage_;
  DType dtype_ = DType::f32;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  // Null unless the tensor requires grad: its node, or its accumulated gradient as a leaf.
  std::shared_ptr<autograd::Meta> autograd_;
};

// Row-major strides of a shape, in elements.
Shape contiguous_strides(const Shape& shape);

// Creation. Each enqueues its work on `stream` and returns the tensor at once, on the stream's
// device.
Tensor empty(const Shape& shape, DType dtype, const Device& device);
// `value` as an element of `dtype`: InvalidArgument for one an integer dtype cannot hold (2.5 in
// i32, 300 in u8). An integer `value` fills exactly (2^53 + 1 in i64, 2^64 - 1 in u64), where a
// double would round it; floating dtypes get its nearest value.
Tensor full(const Shape& shape, double value, DType dtype, Stream& stream);
Tensor full(const Shape& shape, int64_t value, DType dtype, Stream& stream);
Tensor full(const Shape& shape, uint64_t value, DType dtype, Stream& stream);
namespace detail {
template <class I>
concept OtherInteger =
    std::integral<I> && !std::same_as<I, int64_t> && !std::same_as<I, uint64_t> && sizeof(I) <= 8;
template <class F>
concept OtherFloating = std::floating_point<F> && !std::same_as<F, double>;
}  // namespace detail
// Every other integer type (int, unsigned, bool ...) and floating type (float, long double),
// which would otherwise be ambiguous between the three.
template <detail::OtherInteger I>
Tensor full(const Shape& shape, I value, DType dtype, Stream& stream) {
  if constexpr (std::is_signed_v<I>)
    return full(shape, static_cast<int64_t>(value), dtype, stream);
  else
    return full(shape, static_cast<uint64_t>(value), dtype, stream);
}
template <detail::OtherFloating F>
Tensor full(const Shape& shape, F value, DType dtype, Stream& stream) {
  return full(shape, static_cast<double>(value), dtype, stream);
}
inline Tensor zeros(const Shape& shape, DType dtype, Stream& stream) {
  return full(shape, 0.0, dtype, stream);
}
inline Tensor ones(const Shape& shape, DType dtype, Stream& stream) {
  return full(shape, 1.0, dtype, stream);
}
// start, start + step, ... below end (above it for a negative step), as a 1-d tensor. For an
// integer dtype with a whole start and step they are computed in integers, exact past 2^53.
// InvalidArgument for a value the dtype cannot hold (2.5 in i32, 300 in u8).
Tensor arange(double start, double end, double step, DType dtype, Stream& stream);
inline Tensor arange(int64_t end, DType dtype, Stream& stream) {
  return arange(0.0, static_cast<double>(end), 1.0, dtype, stream);
}
// InvalidArgument unless `count` elements fill `shape`.
void check_element_count(size_t count, const Shape& shape);
// Random numbers from Philox4x32-10, a counter-based generator: element i depends only on
// `seed` and i, so every device makes the same draws for the same seed (uniform values in
// [0, 1) bit for bit; scaled and normal values to within each device's rounding of the same
// arithmetic). f32 and f64 (made on the host for devices without f64 arithmetic); other
// dtypes are Unsupported. uniform's values lie in [low, high): the range is shortened by the
// ulps that keep low + u * (high - low), rounded, below high for the largest u, so a draw never
// rounds up to high itself. InvalidArgument for low not below high, and where the dtype has no
// value in [low, high) (f32 between 1e8 + 5 and 1e8 + 6).
Tensor uniform(const Shape& shape, DType dtype, uint64_t seed, Stream& stream, double low = 0.0,
               double high = 1.0);
Tensor normal(const Shape& shape, DType dtype, uint64_t seed, Stream& stream, double mean = 0.0,
              double stddev = 1.0);
// From host elements of `dtype` in row-major order; the data is copied before return, so the
// caller's memory may go at once. A bool byte other than 0 is true and stored as 1 (what every
// device's kernels expect; read_npy, load_safetensors and Python's arrays come through here).
// A Tensor made over a Buffer is not converted: its bool bytes must already be 0 or 1.
Tensor from_host(const void* data, const Shape& shape, DType dtype, Stream& stream);
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Stream& stream) {
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no data(): use from_host");
  check_element_count(values.size(), shape);
  return from_host(values.data(), shape, dtype_of<T>(), stream);
}

}  // namespace hal

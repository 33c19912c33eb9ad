// The interfaces a backend implements. Applications never need this header; authors of
// in-process backends (hal::register_backend) and of hal's own backends do.
//
// hal's public classes validate every argument (devices, sizes, offsets, bounds) before they
// call these, so an implementation may assume valid input. Default methods throw Unsupported
// so that a backend can be brought up one capability at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hal/buffer.hpp"
#include "hal/device_info.hpp"
#include "hal/dtype.hpp"
#include "hal/error.hpp"
#include "hal/kernel.hpp"

namespace hal {

class DeviceImpl;

// Throws Unsupported: "<device> does not support <what>".
[[noreturn]] void throw_unsupported(const DeviceImpl& device, std::string_view what);
// Throws AsyncFailure for `failure`, an exception that work enqueued on a stream of `device`
// threw while it ran: what StreamImpl::synchronize reports.
[[noreturn]] void throw_async_failure(const DeviceImpl& device, std::exception_ptr failure);

class BufferImpl {
 public:
  BufferImpl(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind)
      : device_(std::move(device)), size_(size), kind_(kind) {}
  // A buffer that is a piece of `storage` (a block of the caching allocator's segment).
  BufferImpl(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind,
             const BufferImpl& storage, size_t storage_offset)
      : device_(std::move(device)),
        size_(size),
        kind_(kind),
        storage_(&storage),
        storage_offset_(storage_offset) {}
  virtual ~BufferImpl() = default;  // releases the native memory
  BufferImpl(const BufferImpl&) = delete;
  BufferImpl& operator=(const BufferImpl&) = delete;

  DeviceImpl& device() const { return *device_; }
  const std::shared_ptr<DeviceImpl>& device_ptr() const { return device_; }
  size_t size() const { return size_; }
  MemoryKind kind() const { return kind_; }
  // The host address of the memory, or nullptr when the host cannot address it.
  virtual void* host_pointer() const noexcept { return nullptr; }
  // The backend's own name for the memory (hal/native_memory.hpp): a host address, a
  // CUdeviceptr, a cl_mem; nullptr where it has none to give. Asked of storage() only.
  virtual void* native_handle() const noexcept { return nullptr; }
  // The buffer the backend allocated, and where this one starts in it. A backend reaches its
  // native handle through these: every buffer hal hands to a stream may be a piece of another.
  const BufferImpl& storage() const { return storage_ ? *storage_ : *this; }
  size_t storage_offset() const { return storage_offset_; }
  // In-place writes into this memory through hal's API (Tensor::version): what autograd compares
  // for a tensor saved for backward. Relaxed: a count, it orders no memory.
  uint32_t version() const noexcept { return version_.load(std::memory_order_relaxed); }
  void bump_version() noexcept { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::shared_ptr<DeviceImpl> device_;
  size_t size_;
  MemoryKind kind_;
  // 32 bits, as PyTorch's, beside kind_: it fills padding, so a buffer is no larger.
  std::atomic<uint32_t> version_{0};
  const BufferImpl* storage_ = nullptr;
  size_t storage_offset_ = 0;
};
using BufferPtr = std::shared_ptr<BufferImpl>;

// Completion of one record of an event, as the host sees it.
class HostFence {
 public:
  virtual ~HostFence() = default;
  virtual bool ready() const = 0;
  virtual void wait() const = 0;
};

class EventImpl {
 public:
  EventImpl();
  virtual ~EventImpl() = default;
  // A number no other event of this process has had: what a trace keys the event by, since a
  // new event may be made where a dropped one's memory was.
  uint64_t serial() const { return serial_; }
  virtual DeviceImpl& device() const = 0;
  // The fence of the latest record, nullptr if the event was never recorded.
  virtual std::shared_ptr<HostFence> fence() const = 0;
  // Milliseconds from `start`'s latest record to this one's; both have completed and belong
  // to this device.
  virtual double elapsed_ms_since(const EventImpl& start) const;

 private:
  const uint64_t serial_;
};

class KernelImpl {
 public:
  // `device`: the device a compiled kernel runs on; nullptr for host kernels.
  explicit KernelImpl(std::string name, const DeviceImpl* device = nullptr)
      : name_(std::move(name)), device_(device) {}
  virtual ~KernelImpl() = default;
  const std::string& name() const { return name_; }
  const DeviceImpl* device() const { return device_; }
  // Whether this is a HostKernelImpl (as_host_kernel): asked on every launch, where a
  // dynamic_cast would cost more than the rest of the launch's checks.
  bool is_host() const { return is_host_; }
  // The signature launches are checked against (Kernel::params). A backend that reflects it
  // sets it in compile; hal fills in the declared one where the backend left none. Set only
  // before the kernel is shared: it is read without a lock.
  const std::optional<std::vector<KernelParam>>& params() const { return params_; }
  void set_params(std::optional<std::vector<KernelParam>> params) { params_ = std::move(params); }

 private:
  friend class HostKernelImpl;
  std::string name_;
  const DeviceImpl* device_;
  std::optional<std::vector<KernelParam>> params_;
  bool is_host_ = false;
};

// What DeviceImpl::compile returns: the kernel and whether the disk cache supplied it.
struct CompiledKernel {
  std::shared_ptr<KernelImpl> kernel;
  bool from_disk_cache = false;
};

// A kernel made from a C++ callable (hal::host_kernel).
class HostKernelImpl final : public KernelImpl {
 public:
  HostKernelImpl(std::string name, HostKernelFn fn)
      : KernelImpl(std::move(name)), fn_(std::move(fn)) {
    is_host_ = true;
  }
  const HostKernelFn& fn() const { return fn_; }

 private:
  HostKernelFn fn_;
};

// `kernel` as a host kernel, or null.
inline const HostKernelImpl* as_host_kernel(const KernelImpl& kernel) {
  return kernel.is_host() ? static_cast<const HostKernelImpl*>(&kernel) : nullptr;
}

// A captured graph, ready to replay.
class GraphImpl {
 public:
  virtual ~GraphImpl() = default;
  virtual DeviceImpl& device() const = 0;
  virtual size_t node_count() const = 0;
};

// One (batched) matrix product for a backend's BLAS, row-major: for each batch entry,
// C[m x n] = op(A)[m x k] * op(B)[k x n], where op transposes an operand marked `transposed`
// (its memory then holds the k x m or n x k matrix). Offsets, leading dimensions and batch
// strides count elements.
struct GemmOperand {
  BufferPtr buffer;
  uint64_t offset = 0;
  int64_t ld = 0;
  int64_t batch_stride = 0;
  bool transposed = false;
};
struct GemmDesc {
  DType dtype = DType::f32;  // f32 or f64
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  GemmOperand a, b, c;  // c is never transposed
};
// What a product applies to each result as it stores it (hal::MatmulEpilogue): `bias`, n
// values of the product's dtype from `bias_offset` (elements), added to every row (null: none);
// then `activation`: "" (none), "relu", "gelu" (erf), "tanh", "sigmoid" or "silu".
struct GemmEpilogue {
  BufferPtr bias;
  uint64_t bias_offset = 0;
  std::string activation;
};

// One convolution (1 to 3 spatial dimensions) for a backend's DNN library (oneDNN on the CPU),
// cross-correlation as ONNX and PyTorch define it: y[N, M, O...] = x[N, C, D...] (*) w[M, C/groups,
// K...] + bias[M]. Operands are contiguous row-major, offsets count elements; `bias` may be null.
// Where `transposed`, the transposed convolution (a deconvolution) instead: w is [C, M/groups,
// K...], the window's arithmetic runs from y to x (pads_before >= 0; pads_after may be negative,
// down to 1 - stride, where output_padding exceeds the padding), and `sum` and `relu` are unset.
struct ConvDesc {
  DType dtype = DType::f32;
  BufferPtr x, w, bias, y;
  uint64_t x_offset = 0, w_offset = 0, bias_offset = 0, y_offset = 0;
  std::vector<int64_t> x_shape, w_shape, y_shape;
  int64_t groups = 1;
  std::vector<int64_t> strides, dilations, pads_before, pads_after;  // per spatial dimension
  // The caller promises w's contents stay as they are while its buffer lives (a model's
  // weights): the backend may keep them in its own layout between calls.
  bool constant_weights = false;
  // `sum` (y's shape, may be null) added to the result, then max(y, 0) where `relu`: fused.
  BufferPtr sum;
  uint64_t sum_offset = 0;
  bool relu = false;
  bool transposed = false;
};

// One op a device runs itself, for devices that offer ops instead of kernels (plugins). Operands
// are strided views with offsets and strides in elements; `out` is contiguous.
struct OpOperand {
  BufferPtr buffer;
  uint64_t offset = 0;
  DType dtype = DType::f32;
  std::vector<int64_t> shape, strides;
};
enum class BuiltinOpKind : uint8_t { binary, unary, reduce };
struct BuiltinOp {
  BuiltinOpKind kind = BuiltinOpKind::binary;
  // As plugin.h numbers them: add, sub, mul, div, maximum, minimum; neg, abs, relu, exp, log,
  // sqrt, rsqrt, tanh, sigmoid, gelu, silu; sum, mean, max, min, argmax.
  int32_t op = 0;
  OpOperand out;
  // binary: a and b with out's shape (stride 0 where broadcast); unary: x with out's shape;
  // reduce: x, whose dimensions with their bit set in `reduced_axes` are folded.
  std::vector<OpOperand> inputs;
  uint32_t reduced_axes = 0;
};

class StreamImpl {
 public:
  StreamImpl();
  virtual ~StreamImpl() = default;  // waits for enqueued work to finish
  // A number no other stream of this process has had: what a trace keys the stream's track by,
  // since a new stream may be made where a dropped one's memory was.
  uint64_t serial() const { return serial_; }
  virtual DeviceImpl& device() const = 0;

  virtual void copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                              size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) = 0;
  // Both buffers belong to this backend; either may be on another of its devices. Returns false,
  // enqueuing nothing, when the backend cannot copy between those devices (hal then stages
  // through host memory).
  virtual bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                    size_t src_offset, size_t bytes) = 0;
  virtual void fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                    size_t pattern_size) = 0;
  virtual void host_callback(std::function<void()> fn) = 0;
  // One of hal's own callbacks that must run even on a device lost before it began, because it
  // finds the loss itself and reports it (an MPI collective's gate tells the other ranks). A
  // plugin stream of ABI 1.3 drops other callbacks that begin after a loss (plugin.h); every
  // other backend runs this as host_callback.
  virtual void host_callback_even_if_lost(std::function<void()> fn) {
    host_callback(std::move(fn));
  }
  // Holds `value` until the work enqueued so far has run. The default enqueues a host callback
  // that holds it; a backend that keeps its commands' references (CUDA) holds it with them,
  // without a callback, which on CUDA would hold up the stream for a thread's round trip.
  virtual void keep_until_done(std::shared_ptr<const void> value);
  // `args` is valid only during the call: copy what the enqueued work needs.
  virtual void launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
                      std::span<const KernelArg> args);
  // Graphs: the default says the backend has none. `graph` belongs to this stream's device.
  virtual void begin_capture();
  virtual std::shared_ptr<GraphImpl> end_capture();
  virtual void launch_graph(const std::shared_ptr<GraphImpl>& graph);
  // A matrix product through the backend's vendor BLAS; the default says there is none. The
  // buffers belong to this stream's device.
  virtual void gemm(const GemmDesc& gemm);
  // The product with its epilogue applied as the result is stored, where the backend's library
  // can (oneDNN's post-ops on the CPU): true once enqueued; false, enqueuing nothing, where it
  // cannot (the default), and the caller applies the epilogue itself.
  virtual bool gemm_with_epilogue(const GemmDesc& gemm, const GemmEpilogue& epilogue);
  // A convolution (or a transposed one) through the backend's DNN library; the default says
  // there is none.
  virtual void convolution(const ConvDesc& conv);
  // A built-in op (devices with the builtin_* features); the default says there is none.
  virtual void run_builtin_op(const BuiltinOp& op);
  // `event` belongs to this stream's device.
  virtual void record(EventImpl& event) = 0;
  // `event` belongs to this backend.
  virtual void wait(EventImpl& event) = 0;
  virtual void synchronize() = 0;
  virtual bool query() = 0;

 private:
  const uint64_t serial_;
};

// A device as its backend drives it: a pure interface. What hal keeps per device (the caching
// allocators, the kernels compiled in this process, the stream for staged copies) lives in
// hal's core, not here. Devices are owned by shared_ptr (make them with std::make_shared).
class DeviceImpl : public std::enable_shared_from_this<DeviceImpl> {
 public:
  virtual ~DeviceImpl() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual MemoryFigure memory_free() const { return info().memory_free; }
  // `bytes` > 0 and `kind` is one the device supports (see supports()).
  virtual BufferPtr allocate(size_t bytes, MemoryKind kind) = 0;
  virtual bool supports(MemoryKind kind) const { return kind == MemoryKind::device; }
  virtual std::shared_ptr<StreamImpl> create_stream() = 0;
  virtual std::shared_ptr<EventImpl> create_event() = 0;
  // Compiles `source` (name and code not empty). Throws CompileFailed with the build log, or
  // Unsupported for a language the backend does not compile.
  virtual CompiledKernel compile(const KernelSource& source, const CompileOptions& options);
  // A buffer over memory another library owns, named as native_handle() names this device's
  // memory (`handle` not null, `bytes` > 0): never freed by hal; `release` runs when the buffer
  // goes. The default says the backend cannot adopt memory; then `release` is not called.
  virtual BufferPtr wrap_native(void* handle, size_t bytes, std::function<void()> release);
};

struct BackendProbe {
  bool available = false;
  std::string reason;                                // why not available
  std::vector<std::shared_ptr<DeviceImpl>> devices;  // ids "name:0", "name:1", ... in order
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Finds the devices. Called once, on first need, under the registry's lock.
  virtual BackendProbe probe() = 0;
};

}  // namespace hal

// Kernels, their arguments and launch geometry. A kernel is either compiled by a backend
// from source, or, on devices with the "host_kernels" feature, a C++ callable (host_kernel).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hal/buffer.hpp"

namespace hal {

using Index3 = std::array<uint64_t, 3>;

template <class T>
concept Arithmetic = std::is_arithmetic_v<T>;

// Launch geometry: `global` work items in up to three dimensions (x fastest), optionally
// grouped in work groups of `local` items (0 lets the backend choose). On the CPU, `local`
// along the split dimension is the smallest chunk a thread takes.
struct LaunchConfig {
  Index3 global{1, 1, 1};
  std::array<uint32_t, 3> local{0, 0, 0};
  // Dynamic work-group memory (CUDA's extern __shared__). OpenCL and Vulkan refuse a nonzero
  // value (Unsupported): an OpenCL kernel takes a __local argument (KernelArg::local_memory).
  // CPU host kernels and plugins do not use it.
  uint32_t shared_bytes = 0;

  static LaunchConfig linear(uint64_t n) { return LaunchConfig{{n, 1, 1}}; }
  static LaunchConfig grid(uint64_t x, uint64_t y, uint64_t z = 1) {
    return LaunchConfig{{x, y, z}};
  }
  uint64_t total() const { return global[0] * global[1] * global[2]; }
};

// One kernel argument: a buffer (with a byte offset), a scalar passed by value (at most 8
// bytes), or a size of work-group local memory.
class KernelArg {
 public:
  enum class Kind : uint8_t { buffer, scalar, local_memory };

  KernelArg() = default;                       // an empty scalar
  KernelArg(Buffer buffer, size_t offset = 0)  // NOLINT: implicit by design
      : kind_(Kind::buffer), offset_(offset), buffer_(std::move(buffer)) {}
  template <Arithmetic T>
  KernelArg(T value)  // NOLINT: implicit by design
      : kind_(Kind::scalar), scalar_size_(static_cast<uint8_t>(sizeof(T))) {
    static_assert(sizeof(T) <= sizeof(scalar_));
    std::memcpy(scalar_.data(), &value, sizeof(T));
  }
  static KernelArg local_memory(size_t bytes) {
    KernelArg arg(uint64_t{0});
    arg.kind_ = Kind::local_memory;
    arg.offset_ = bytes;
    return arg;
  }
  // A buffer argument that refers to `buffer` without a reference of its own, for an argument
  // list built and dropped around one launch call (taking and dropping a reference costs two
  // atomic operations an argument). `buffer` must outlive this KernelArg; a copy or a move of it
  // holds a reference of its own, so a stream that keeps its arguments keeps their buffers.
  static KernelArg borrow(const Buffer& buffer, size_t offset = 0) {
    return KernelArg(&buffer, offset);
  }

  KernelArg(const KernelArg& other) { take(other, Buffer(other.buffer())); }
  KernelArg(KernelArg&& other) noexcept { take(other, other.moved_buffer()); }
  KernelArg& operator=(const KernelArg& other) {
    take(other, Buffer(other.buffer()));
    return *this;
  }
  KernelArg& operator=(KernelArg&& other) noexcept {
    take(other, other.moved_buffer());
    return *this;
  }
  ~KernelArg() = default;

  Kind kind() const { return kind_; }
  const Buffer& buffer() const { return borrowed_ ? *borrowed_ : buffer_; }
  size_t offset() const { return offset_; }  // bytes into buffer(); the size for local_memory
  const void* scalar_data() const { return scalar_.data(); }
  size_t scalar_size() const { return scalar_size_; }

 private:
  Kind kind_ = Kind::scalar;
  uint8_t scalar_size_ = 0;
  std::array<unsigned char, 8> scalar_{};
  size_t offset_ = 0;
  Buffer buffer_;
  const Buffer* borrowed_ = nullptr;  // instead of buffer_ (borrow)

  KernelArg(const Buffer* borrowed, size_t offset)
      : kind_(Kind::buffer), offset_(offset), borrowed_(borrowed) {}
  Buffer moved_buffer() noexcept { return borrowed_ ? *borrowed_ : std::move(buffer_); }
  void take(const KernelArg& other, Buffer buffer) noexcept {
    kind_ = other.kind_;
    scalar_size_ = other.scalar_size_;
    scalar_ = other.scalar_;
    offset_ = other.offset_;
    buffer_ = std::move(buffer);
    borrowed_ = nullptr;
  }
};

// One parameter of a kernel's signature: what Stream::launch checks the argument against.
// The kind must match; a scalar must also have `scalar_bytes` bytes, unless that is 0 (a size the
// signature does not fix: size_t, a typedef hal cannot resolve); local memory must be at least
// 1 byte. `name` and `type` ("__global const float*", "uint") are for messages and may be empty.
struct KernelParam {
  KernelArg::Kind kind = KernelArg::Kind::scalar;
  size_t scalar_bytes = 0;
  std::string name{};
  std::string type{};

  static KernelParam buffer(std::string name = {}) {
    return {KernelArg::Kind::buffer, 0, std::move(name)};
  }
  template <Arithmetic T>
  static KernelParam scalar(std::string name = {}) {
    return {KernelArg::Kind::scalar, sizeof(T), std::move(name)};
  }
  static KernelParam local_memory(std::string name = {}) {
    return {KernelArg::Kind::local_memory, 0, std::move(name)};
  }
  friend bool operator==(const KernelParam&, const KernelParam&) = default;
};

// Typed access to the arguments inside a host kernel.
class KernelArgs {
 public:
  explicit KernelArgs(std::span<const KernelArg> args) : args_(args) {}
  size_t size() const { return args_.size(); }
  // Host pointer to buffer argument `i`, offset applied.
  template <class T>
  T* ptr(size_t i) const {
    return reinterpret_cast<T*>(static_cast<char*>(buffer_data(i)) + args_[i].offset());
  }
  template <class T>
  T scalar(size_t i) const {
    T value;
    check_scalar(i, sizeof(T));
    std::memcpy(&value, args_[i].scalar_data(), sizeof(T));
    return value;
  }

 private:
  void* buffer_data(size_t i) const;
  void check_scalar(size_t i, size_t bytes) const;
  std::span<const KernelArg> args_;
};

// The part of the range one call of a host kernel covers: [begin, end) in each dimension.
struct KernelChunk {
  Index3 begin;
  Index3 end;
  const KernelArgs& args;
};

using HostKernelFn = std::function<void(const KernelChunk&)>;

// The language of a kernel's source. `portable` is hal's kernel dialect: C with a prelude
// that each backend maps onto its own compiler:
//   KERNEL           marks an entry point:  KERNEL void scale(GLOBAL float* x, float a, int n)
//   GLOBAL           a pointer into device memory (a buffer argument)
//   SHARED           work-group shared memory, for arrays declared in the kernel
//   DEVICE_FN        a helper function callable from kernels
//   global_id(d) local_id(d) group_id(d)  indices in dimension d (0 = x)
//   global_size(d) local_size(d) num_groups(d)
//   barrier()        synchronises the work group, for shared and global memory
// Launches may run whole work groups past `global`, so kernels check their bounds.
// native: the device's own format: OpenCL C on OpenCL, CUDA C++ on CUDA, what a plugin documents.
enum class KernelLanguage : uint8_t { portable, opencl_c, cuda, native };
std::string_view to_string(KernelLanguage language) noexcept;

struct KernelSource {
  std::string name;  // the entry point to return
  std::string code;
  KernelLanguage language = KernelLanguage::portable;
};

// Compiled kernels are cached per device in memory and on disk (HAL_CACHE_DIR), keyed by the
// source, the options, the device and its driver. A kernel whose source has an #include
// directive, or whose flags name include paths or files (-I, -isystem, -include,
// --include-path...), is never read from or written to the disk cache, since the key cannot
// hold the headers' contents; each process compiles it afresh. The in-memory cache keeps it
// for the process under the same key: after changing a header in a running process, call
// Device::clear_kernel_cache() before compiling again.
struct CompileOptions {
  std::vector<std::string> defines{};  // "NAME" or "NAME=VALUE", passed as -D
  std::string flags{};                 // appended to the native compiler's options (see above)
  bool disk_cache = true;              // read and write the on-disk cache under HAL_CACHE_DIR
};

// Where a compiled kernel came from: the compiler, the on-disk cache, or the device's
// in-memory cache of kernels compiled earlier in this process.
enum class KernelOrigin : uint8_t { host, compiled, disk_cache, memory_cache };
std::string_view to_string(KernelOrigin origin) noexcept;

class KernelImpl;

class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(std::shared_ptr<KernelImpl> impl, KernelOrigin origin = KernelOrigin::host)
      : impl_(std::move(impl)), origin_(origin) {}

  const std::string& name() const;
  // The kernel's parameters, which every launch's arguments are checked against (count, kinds,
  // scalar sizes), failing with InvalidArgument before anything is enqueued. Where they come
  // from: OpenCL reflects them from the driver (clGetKernelArgInfo; a typedef'd scalar's size,
  // which the driver does not give, from the source's typedefs); otherwise hal reads the
  // entry point's declaration in portable, OpenCL C or CUDA source; host kernels have those
  // given to host_kernel. nullopt when none of these tells (native plugin kernels, source hal
  // cannot read unambiguously): the launch is then checked only by the backend.
  const std::optional<std::vector<KernelParam>>& params() const;
  KernelOrigin origin() const { return origin_; }
  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<KernelImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<KernelImpl> impl_;
  KernelOrigin origin_ = KernelOrigin::host;
};

Kernel make_host_kernel(std::string name, HostKernelFn fn,
                        std::optional<std::vector<KernelParam>> params = std::nullopt);

namespace detail {
// A host kernel's callable as the chunk function hal calls.
template <class F>
HostKernelFn chunk_function(F fn) {
  if constexpr (std::is_invocable_v<F&, const KernelChunk&>) {
    return HostKernelFn(std::move(fn));
  } else {
    static_assert(std::is_invocable_v<F&, Index3, const KernelArgs&>,
                  "host_kernel needs fn(const KernelChunk&) or fn(Index3, const KernelArgs&)");
    return [fn = std::move(fn)](const KernelChunk& c) {
      for (uint64_t z = c.begin[2]; z < c.end[2]; ++z)
        for (uint64_t y = c.begin[1]; y < c.end[1]; ++y)
          for (uint64_t x = c.begin[0]; x < c.end[0]; ++x) fn(Index3{x, y, z}, c.args);
    };
  }
}
}  // namespace detail

// A kernel from a C++ callable, run on devices with the "host_kernels" feature (the CPU).
// `fn` is either called per chunk, as fn(const KernelChunk&), or per work item, as
// fn(Index3 item, const KernelArgs&); per-item calls are inlined into the chunk loop.
// Without declared `params`, a KernelArgs accessor that reads an argument as the wrong kind
// fails the running kernel, and synchronize reports it (AsyncFailure); with them, launches are
// checked first (see Kernel::params):
//   host_kernel("scale", {KernelParam::buffer("x"), KernelParam::scalar<float>("a")}, fn)
template <class F>
Kernel host_kernel(std::string name, F fn) {
  return make_host_kernel(std::move(name), detail::chunk_function(std::move(fn)));
}
template <class F>
Kernel host_kernel(std::string name, std::vector<KernelParam> params, F fn) {
  return make_host_kernel(std::move(name), detail::chunk_function(std::move(fn)),
                          std::move(params));
}

}  // namespace hal

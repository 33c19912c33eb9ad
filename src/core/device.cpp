#include "hal/device.hpp"
#include "core/embedded_kernels.hpp"
#include "core/error_context.hpp"
#include "core/kernel_build_stats.hpp"
#include "core/program_kernels.hpp"
#include "core/trace_record.hpp"

#include <chrono>
#include <limits>
#include <optional>

#include "core/caching_allocator.hpp"
#include "core/declared_signature.hpp"
#include "core/device_allocate.hpp"
#include "core/device_core.hpp"
#include "core/stream_reaper.hpp"
#include "hal/backend.hpp"
#include "hal/units.hpp"

namespace hal {
namespace {

DeviceImpl& checked(const std::shared_ptr<DeviceImpl>& impl) {
  if (!impl)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Device");
  return *impl;
}

// The allocator for `kind`; a MemoryKind cast from any other number would index past them.
detail::CachingAllocator& allocator_of(DeviceImpl& device, MemoryKind kind, const char* operation) {
  switch (kind) {
    case MemoryKind::device:
    case MemoryKind::pinned_host:
    case MemoryKind::unified:
      return detail::core_of(device).allocator(kind);
  }
  throw Error(ErrorCode::InvalidArgument,
              std::string(operation) + " on " + device.info().id + ": memory kind " +
                  std::to_string(static_cast<int>(kind)) +
                  " is not one of hal's (device, pinned_host, unified)");
}

// Everything that changes the compiled result, separated by characters no part contains.
std::string memory_key(const KernelSource& source, const CompileOptions& options) {
  std::string key;
  key.reserve(source.code.size() + source.name.size() + options.flags.size() + 32);
  key += to_string(source.language);
  key += '\0';
  key += source.name;
  key += '\0';
  for (const std::string& define : options.defines) {
    key += define;
    key += '\1';
  }
  key += '\0';
  key += options.flags;
  key += '\0';
  key += source.code;
  return key;
}

}  // namespace

const std::string& Device::id() const { return checked(impl_).info().id; }
const DeviceInfo& Device::info() const { return checked(impl_).info(); }
MemoryFigure Device::memory_free() const { return checked(impl_).memory_free(); }

namespace {

[[gnu::always_inline]] inline Buffer allocate_untraced(const std::shared_ptr<DeviceImpl>& impl,
                                                       size_t bytes, MemoryKind kind,
                                                       AllocationMode mode) {
  DeviceImpl& device = checked(impl);
  // The fast path: a buffer of this size that this thread freed, which passed the checks
  // below when it was first allocated.
  if (mode == AllocationMode::cached && static_cast<size_t>(kind) < 3 && bytes > 0) [[likely]]
    if (BufferPtr parked = detail::core_of(device).allocator(kind).try_parked(bytes))
      return Buffer(std::move(parked));
  const std::string& id = device.info().id;
  const detail::ErrorContext context(id, "allocate");
  if (bytes == 0)
    throw Error(ErrorCode::InvalidArgument,
                "allocate on " + id + ": size is 0 bytes; ask for at least 1");
  detail::CachingAllocator& allocator = allocator_of(device, kind, "allocate");
  if (!device.supports(kind))
    throw Error(ErrorCode::InvalidArgument, "allocate on " + id + ": the device has no " +
                                                std::string(to_string(kind)) + " memory");
  if (mode != AllocationMode::cached && mode != AllocationMode::direct)
    throw Error(ErrorCode::InvalidArgument, "allocate on " + id + ": allocation mode " +
                                                std::to_string(static_cast<int>(mode)) +
                                                " is neither cached nor direct");
  if (mode == AllocationMode::direct) {
    detail::refuse_past_largest(device, kind, bytes);
    return Buffer(device.allocate(bytes, kind));
  }
  // The allocator refuses a request past the largest allocation itself, and counts it (num_ooms).
  return allocator.allocate(bytes);
}

// The same in a span on the thread's track with the bytes, the kind and whether the caching
// allocator served it from its cache; apart so that tracing off costs allocate one branch.
[[gnu::noinline, gnu::cold]] Buffer traced_allocate(const std::shared_ptr<DeviceImpl>& impl,
                                                    size_t bytes, MemoryKind kind,
                                                    AllocationMode mode) {
  trace::detail::Span span(trace::detail::thread_track(), "memory",
                           "alloc " + checked(impl).info().id);
  Buffer buffer = allocate_untraced(impl, bytes, kind, mode);
  span.set_args(
      {trace::detail::SpanArgs::Kind::allocation,
       {bytes, static_cast<uint64_t>(kind),
        mode == AllocationMode::cached && trace::detail::last_allocation_hit() ? 1u : 0u}});
  return buffer;
}

}  // namespace

Buffer detail::allocate(const std::shared_ptr<DeviceImpl>& device, size_t bytes, MemoryKind kind,
                        AllocationMode mode) {
  if (trace::enabled()) [[unlikely]]
    return traced_allocate(device, bytes, kind, mode);
  return allocate_untraced(device, bytes, kind, mode);
}

Buffer Device::allocate(size_t bytes, MemoryKind kind, AllocationMode mode) const {
  return detail::allocate(impl_, bytes, kind, mode);
}

Allocator& Device::allocator(MemoryKind kind) const {
  DeviceImpl& device = checked(impl_);
  detail::CachingAllocator& allocator = allocator_of(device, kind, "allocator");
  if (!device.supports(kind))
    throw Error(ErrorCode::InvalidArgument, "allocator of " + device.info().id +
                                                ": the device has no " +
                                                std::string(to_string(kind)) + " memory");
  return allocator;
}

void Device::empty_cache() const {
  DeviceImpl& device = checked(impl_);
  for (MemoryKind kind : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unified})
    if (device.supports(kind)) detail::core_of(device).allocator(kind).empty_cache();
}

Stream Device::create_stream() const {
  DeviceImpl& device = checked(impl_);
  const detail::ErrorContext context(device.info().id, "create_stream");
  std::shared_ptr<StreamImpl> stream = detail::reaped_when_dropped_at_home(device.create_stream());
  detail::core_of(device).track_stream(stream);  // for Device::synchronize, synchronize_all
  return Stream(std::move(stream));
}
Event Device::create_event() const { return Event(checked(impl_).create_event()); }

Kernel Device::compile(const KernelSource& source, const CompileOptions& options) const {
  DeviceImpl& device = checked(impl_);
  const detail::ErrorContext context(device.info().id, "compile");
  const std::string where = "compile of " + std::string(to_string(source.language)) + " kernel '" +
                            source.name + "' for " + device.info().id;
  if (source.language > KernelLanguage::native)
    throw Error(ErrorCode::InvalidArgument,
                where + ": kernel language " + std::to_string(static_cast<int>(source.language)) +
                    " is not one of hal's (portable, opencl_c, cuda, native)");
  if (source.name.empty())
    throw Error(ErrorCode::InvalidArgument, where + ": the kernel has no name (entry point)");
  if (source.code.empty()) throw Error(ErrorCode::InvalidArgument, where + ": the source is empty");
  for (const std::string& define : options.defines)
    if (define.empty() || define.front() == '=' ||
        define.find_first_of(" \t\n\"'") != std::string::npos)
      throw Error(ErrorCode::InvalidArgument,
                  where + ": define '" + define + "' is not NAME or NAME=VALUE without spaces");

  const std::string key = memory_key(source, options);
  detail::DeviceCore& core = detail::core_of(device);
  if (auto kernel = core.cached_kernel(key)) return Kernel(kernel, KernelOrigin::memory_cache);
  const auto start = std::chrono::steady_clock::now();
  CompiledKernel compiled = device.compile(source, options);
  const KernelOrigin origin =
      compiled.from_disk_cache ? KernelOrigin::disk_cache : KernelOrigin::compiled;
  detail::count_kernel_build(
      origin, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  // Where the backend reflected no signature, the one the source declares (before the kernel
  // is shared through the cache).
  if (!compiled.kernel->params())
    compiled.kernel->set_params(detail::declared_params(source, options));
  core.cache_kernel(key, compiled.kernel);
  return Kernel(std::move(compiled.kernel), origin);
}

namespace detail {

Kernel compile_program(const Device& device, std::string_view program, std::string_view entry,
                       const std::vector<std::string>& defines, std::string_view generated) {
  DeviceImpl& impl = checked(device.impl());
  // '\2' starts no memory_key (which starts with a language's name): the two never collide.
  std::string key;
  key.reserve(program.size() + entry.size() + 16 * defines.size() + generated.size() + 5);
  key += '\2';
  key += program;
  key += '\0';
  key += entry;
  for (const std::string& define : defines) {
    key += '\1';
    key += define;
  }
  key += '\3';
  key += generated;
  DeviceCore& core = core_of(impl);
  if (auto kernel = core.cached_kernel(key)) return Kernel(kernel, KernelOrigin::memory_cache);
  std::string source(embedded_kernel(program));
  if (!generated.empty()) source.append("\n").append(generated);
  // The program's other kernels are left out (docs/design.md, "Kernels"): a driver compiles
  // every kernel of a program, and PoCL compiles each again when asked for the binary that the
  // disk cache keeps.
  Kernel kernel = device.compile({std::string(entry), std::move(source)},
                                 {.defines = entry_defines(defines, entry)});
  core.cache_kernel(key, kernel.impl());
  return kernel;
}

std::vector<std::string> entry_defines(std::vector<std::string> defines, std::string_view entry) {
  defines.emplace_back("HAL_ENTRY");
  defines.push_back("HAL_ENTRY_" + std::string(entry));
  return defines;
}

}  // namespace detail

void Device::clear_kernel_cache() const { detail::core_of(checked(impl_)).clear_kernel_cache(); }

}  // namespace hal

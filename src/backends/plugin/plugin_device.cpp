#include "backends/plugin/plugin_device.hpp"

#include <algorithm>
#include <cmath>

#include "backends/plugin/plugin_abi_1_1.hpp"
#include "backends/plugin/plugin_enums.hpp"
#include "backends/plugin/plugin_stream.hpp"
#include "core/uuid.hpp"

namespace hal::plugin {
namespace {

std::string text(const char* field, size_t size) {
  return std::string(field, strnlen(field, size));
}

// A peak the plugin states: negative or not finite is a plugin's slip, read as unknown (0).
double stated_figure(double value) { return value > 0 && std::isfinite(value) ? value : 0; }

DeviceKind kind_of(int32_t kind) {
  switch (kind) {
    case HAL_PLUGIN_DEVICE_GPU:
      return DeviceKind::gpu;
    case HAL_PLUGIN_DEVICE_CPU:
      return DeviceKind::cpu;
    default:
      return DeviceKind::accelerator;
  }
}

// The plugin's message without the device's id in front: hal names the device itself, once
// ("sim:0: add: op 1 failed", not "sim:0: add: sim:0: op 1 failed").
std::string without_id(std::string message, const std::string& id) {
  const std::string prefix = id + ": ";
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  return message;
}

// A plugin that says OK hands back what it made: a null handle is its bug, refused before hal
// keeps it (as device_get's is).
void check_made(const void* handle, const PluginLibrary& library, const std::string& device,
                const std::string& call) {
  if (!handle)
    throw Error(ErrorCode::Internal, "plugin " + library.path + ": " + device + ": " + call +
                                         " returned success and a null handle");
}

}  // namespace

PluginDevice::PluginDevice(std::shared_ptr<const PluginLibrary> library, uint32_t index,
                           hal_plugin_device handle)
    : library_(std::move(library)), handle_(handle) {
  info_.id = library_->name() + ":" + std::to_string(index);
  hal_plugin_device_properties properties{};
  properties.struct_size = sizeof properties;
  check(library_->api->device_properties(handle_, &properties), "device properties");
  info_.name = text(properties.name, sizeof properties.name);
  info_.vendor = text(properties.vendor, sizeof properties.vendor);
  info_.architecture = text(properties.architecture, sizeof properties.architecture);
  info_.driver_version = text(properties.driver_version, sizeof properties.driver_version);
  // A plugin that leaves the UUID zero would give all its devices one identity (one calibration
  // file, one tuning cache entry): each gets a name-based one, as OpenCL devices without one do.
  if (!is_nil_uuid(properties.uuid))
    info_.uuid = format_uuid(properties.uuid);
  else
    info_.uuid = name_based_uuid("plugin|" + info_.id + "|" + info_.vendor + "|" + info_.name +
                                 "|" + info_.driver_version);
  info_.kind = kind_of(properties.kind);
  info_.memory_total = {properties.memory_bytes, Provenance::measured};
  info_.memory_free = memory_free();
  info_.compute_units = properties.compute_units;
  info_.clock_mhz = properties.clock_mhz;
  info_.limits.max_allocation_bytes = properties.max_allocation_bytes;
  info_.peak = {stated_figure(properties.peak_f32_gflops),
                stated_figure(properties.peak_bandwidth_gbps),
                stated_figure(properties.launch_latency_us)};
  for (DType dtype : kAllDTypes)
    if (properties.dtypes & (1u << to_plugin(dtype))) info_.dtypes.push_back(dtype);
  // Fields a plugin of an older minor version did not know stay 0, as hal zeroed them.
  kernel_formats_ = properties.kernel_formats;
  sized_structs_ = library_->api->abi_minor >= abi_1_1::kSizedStructsSince;
  if (sized_structs_) info_.limits.max_shared_memory_bytes = properties.local_memory_bytes;
  if (supports(MemoryKind::pinned_host)) info_.features.emplace_back(feature::kPinnedHostMemory);
  // Kernels need all three: without kernel_destroy every kernel made would be kept for good.
  if (HAL_PLUGIN_FN(*library_, kernel_compile) == nullptr ||
      HAL_PLUGIN_FN(*library_, kernel_launch) == nullptr ||
      HAL_PLUGIN_FN(*library_, kernel_destroy) == nullptr)
    kernel_formats_ = 0;
  if (kernel_formats_ & HAL_PLUGIN_KERNEL_PORTABLE)
    info_.features.emplace_back(feature::kPortableKernels);
  if (info_.supports(DType::f64)) info_.features.emplace_back(feature::kFp64);
  if (info_.supports(DType::f16)) info_.features.emplace_back(feature::kFp16);
  if (info_.supports(DType::bf16)) info_.features.emplace_back(feature::kBf16);
  const auto offers = [&](uint32_t bit, auto function) {
    return (properties.ops & bit) != 0 && function != nullptr;
  };
  if (offers(HAL_PLUGIN_OPS_BINARY, HAL_PLUGIN_FN(*library_, op_binary)))
    info_.features.emplace_back(feature::kBuiltinBinary);
  if (offers(HAL_PLUGIN_OPS_UNARY, HAL_PLUGIN_FN(*library_, op_unary)))
    info_.features.emplace_back(feature::kBuiltinUnary);
  if (offers(HAL_PLUGIN_OPS_REDUCE, HAL_PLUGIN_FN(*library_, op_reduce)))
    info_.features.emplace_back(feature::kBuiltinReduce);
  if (offers(HAL_PLUGIN_OPS_MATMUL, HAL_PLUGIN_FN(*library_, op_matmul)))
    info_.features.emplace_back(feature::kBuiltinMatmul);
  std::sort(info_.features.begin(), info_.features.end());
}

PluginDevice::PluginDevice(std::shared_ptr<const PluginLibrary> library, uint32_t index,
                           const Error& error)
    : library_(std::move(library)), handle_(nullptr) {
  info_.id = library_->name() + ":" + std::to_string(index);
  info_.name = "(lost: " + error.message() + ")";
  info_.kind = DeviceKind::accelerator;
  lost_ = error.message();
  is_lost_ = true;
}

void PluginDevice::check_not_lost() const {
  if (!is_lost_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(lost_mutex_);
  throw Error(ErrorCode::DeviceLost, info_.id + " was lost earlier and stays lost: " + lost_,
              HAL_STATUS_DEVICE_LOST);
}

void PluginDevice::check(hal_status status, const std::string& what) const {
  if (status == HAL_STATUS_OK) return;
  const std::string message = what + ": " + without_id(library_->last_error(), info_.id);
  if (status == HAL_STATUS_DEVICE_LOST) {
    std::lock_guard lock(lost_mutex_);
    if (!is_lost_.exchange(true)) lost_ = message;
  }
  // A number plugin.h lacks is the plugin's bug.
  const ErrorCode code = error_code_of(status).value_or(ErrorCode::Internal);
  throw Error(code, info_.id + ": " + message, status);
}

MemoryFigure PluginDevice::memory_free() const {
  if (is_lost()) return {0, Provenance::unknown};
  uint64_t bytes = 0;
  check(library_->api->device_memory_free(handle_, &bytes), "free memory");
  return {bytes, Provenance::measured};
}

bool PluginDevice::supports(MemoryKind kind) const {
  return kind == MemoryKind::device ||
         (kind == MemoryKind::pinned_host && HAL_PLUGIN_FN(*library_, host_buffer_allocate));
}

BufferPtr PluginDevice::allocate(size_t bytes, MemoryKind kind) {
  check_not_lost();
  if (!supports(kind)) throw_unsupported(*this, std::string(to_string(kind)) + " memory");
  hal_plugin_buffer handle = nullptr;
  if (kind == MemoryKind::pinned_host) {
    void* host = nullptr;
    const std::string what = "allocate " + std::to_string(bytes) + " bytes of pinned host memory";
    check(HAL_PLUGIN_FN(*library_, host_buffer_allocate)(handle_, bytes, &handle, &host), what);
    check_made(handle, *library_, info_.id, "host_buffer_allocate (" + what + ")");
    if (!host) library_->api->buffer_free(handle);  // no memory the host can reach: refused
    check_made(host, *library_, info_.id, "host_buffer_allocate's host pointer (" + what + ")");
    try {
      return std::make_shared<PluginBuffer>(
          std::static_pointer_cast<PluginDevice>(shared_from_this()), bytes, handle, host);
    } catch (...) {
      library_->api->buffer_free(handle);
      throw;
    }
  }
  const std::string what = "allocate " + std::to_string(bytes) + " bytes";
  check(library_->api->buffer_allocate(handle_, bytes, &handle), what);
  check_made(handle, *library_, info_.id, "buffer_allocate (" + what + ")");
  try {
    return std::make_shared<PluginBuffer>(
        std::static_pointer_cast<PluginDevice>(shared_from_this()), bytes, handle);
  } catch (...) {  // the wrapper's own allocation failed: the plugin's buffer goes back
    library_->api->buffer_free(handle);
    throw;
  }
}

std::shared_ptr<StreamImpl> PluginDevice::create_stream() {
  check_not_lost();
  hal_plugin_stream handle = nullptr;
  check(library_->api->stream_create(handle_, &handle), "create a stream");
  check_made(handle, *library_, info_.id, "stream_create");
  return std::make_shared<PluginStream>(std::static_pointer_cast<PluginDevice>(shared_from_this()),
                                        handle);
}

std::shared_ptr<EventImpl> PluginDevice::create_event() {
  check_not_lost();
  hal_plugin_event handle = nullptr;
  check(library_->api->event_create(handle_, &handle), "create an event");
  check_made(handle, *library_, info_.id, "event_create");
  return std::make_shared<PluginEvent>(std::make_shared<EventHandle>(
      std::static_pointer_cast<PluginDevice>(shared_from_this()), handle));
}

CompiledKernel PluginDevice::compile(const KernelSource& source, const CompileOptions& options) {
  check_not_lost();
  uint32_t format = 0;
  switch (source.language) {
    case KernelLanguage::portable:
      format = HAL_PLUGIN_KERNEL_PORTABLE;
      break;
    case KernelLanguage::opencl_c:
      format = HAL_PLUGIN_KERNEL_OPENCL_C;
      break;
    case KernelLanguage::native:
      format = HAL_PLUGIN_KERNEL_NATIVE;
      break;
    case KernelLanguage::cuda:
      break;
  }
  if ((kernel_formats_ & format) == 0)
    throw_unsupported(*this, "compiling kernels in " + std::string(to_string(source.language)) +
                                 " ('" + source.name + "')");
  std::string flags;
  for (const std::string& define : options.defines) flags += "-D" + define + " ";
  flags += options.flags;
  hal_plugin_kernel handle = nullptr;
  const hal_status status = HAL_PLUGIN_FN(*library_, kernel_compile)(
      handle_, format, source.code.data(), source.code.size(), source.name.c_str(), flags.c_str(),
      &handle);
  const std::string what =
      "compile of " + std::string(to_string(source.language)) + " kernel '" + source.name + "'";
  check(status, what);
  check_made(handle, *library_, info_.id, "kernel_compile (" + what + ")");
  return {std::make_shared<PluginKernel>(
              source.name, std::static_pointer_cast<PluginDevice>(shared_from_this()), handle),
          false};
}

PluginKernel::~PluginKernel() {
  if (auto destroy = HAL_PLUGIN_FN(device_->library(), kernel_destroy)) destroy(handle_);
}

PluginBuffer::~PluginBuffer() {
  auto& device = static_cast<PluginDevice&>(this->device());
  device.library().api->buffer_free(handle_);  // nothing to do about a failure here
}

NativeRange native(const BufferPtr& buffer, size_t offset) {
  const auto& storage = static_cast<const PluginBuffer&>(buffer->storage());
  return {storage.handle(), buffer->storage_offset() + offset};
}

namespace {

class PluginFence final : public HostFence, public detail::RecordFence {
 public:
  PluginFence(std::shared_ptr<EventHandle> event, uint64_t stream,
              detail::StreamFailures::Mark callbacks)
      : RecordFence(stream), event_(std::move(event)), callbacks_(std::move(callbacks)) {}
  bool ready() const override {
    const PluginDevice& device = *event_->device;
    device.check_not_lost();
    int32_t complete = 0;
    device.check(device.library().api->event_query(event_->handle, &complete), "query an event");
    return complete != 0;
  }
  void wait() const override {
    const PluginDevice& device = *event_->device;
    device.check_not_lost();
    device.check(device.library().api->event_synchronize(event_->handle), "wait for an event");
  }
  // Plugins fail work only by losing the device, which ready() and wait() report: what fails
  // later is hal's host callbacks.
  std::exception_ptr failure() const override { return callbacks_.failure(); }

 private:
  std::shared_ptr<EventHandle> event_;
  detail::StreamFailures::Mark callbacks_;
};

}  // namespace

EventHandle::~EventHandle() { device->library().api->event_destroy(handle); }

void PluginEvent::mark_recorded(uint64_t stream, detail::StreamFailures::Mark callbacks) {
  std::lock_guard lock(mutex_);
  recorded_ = true;
  stream_ = stream;
  callbacks_ = std::move(callbacks);
}

std::shared_ptr<HostFence> PluginEvent::fence() const {
  std::lock_guard lock(mutex_);
  if (!recorded_) return nullptr;
  // The fence reads the event's latest record, which is the one asked for unless the event is
  // recorded again before the fence is read: then it waits longer, never shorter.
  return std::make_shared<PluginFence>(handle_, stream_, callbacks_);
}

double PluginEvent::elapsed_ms_since(const EventImpl& start) const {
  const PluginDevice& device = *handle_->device;
  device.check_not_lost();
  double ms = 0;
  device.check(device.library().api->event_elapsed_ms(
                   static_cast<const PluginEvent&>(start).handle(), handle(), &ms),
               "elapsed time between events");
  return ms;
}

}  // namespace hal::plugin

// A plugin's device, buffer and event as hal's DeviceImpl, BufferImpl and EventImpl. A device
// remembers that it was lost: after the plugin first says DEVICE_LOST, hal refuses every call
// on it without asking the plugin again. A device lost before hal could read its properties is
// still listed (ids stay name:index), named as lost, and refuses every call.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "backends/plugin/plugin_library.hpp"
#include "core/event_record.hpp"
#include "hal/backend.hpp"

namespace hal::plugin {

class PluginDevice final : public DeviceImpl {
 public:
  PluginDevice(std::shared_ptr<const PluginLibrary> library, uint32_t index,
               hal_plugin_device handle);
  // A device that failed while hal read its facts: `error` says how.
  PluginDevice(std::shared_ptr<const PluginLibrary> library, uint32_t index, const Error& error);

  const DeviceInfo& info() const override { return info_; }
  // A lost device has none: 0, of unknown provenance, rather than an error, so that listings of
  // devices still show the others.
  MemoryFigure memory_free() const override;
  BufferPtr allocate(size_t bytes, MemoryKind kind) override;
  // Device memory, and pinned host memory where the plugin has host_buffer_allocate (1.2).
  bool supports(MemoryKind kind) const override;
  std::shared_ptr<StreamImpl> create_stream() override;
  std::shared_ptr<EventImpl> create_event() override;
  // Kernels of the formats the device declares (plugin ABI 1.1).
  CompiledKernel compile(const KernelSource& source, const CompileOptions& options) override;

  const PluginLibrary& library() const { return *library_; }
  // Whether the plugin reads hal_plugin_tensor and hal_plugin_kernel_arg with struct_size.
  bool sized_structs() const { return sized_structs_; }
  uint64_t local_memory_bytes() const { return info_.limits.max_shared_memory_bytes; }
  hal_plugin_device handle() const { return handle_; }
  // Checks a status of a call on this device ("what" names the operation), and that the device
  // is not lost; throws hal::Error naming the device.
  void check(hal_status status, const std::string& what) const;
  void check_not_lost() const;
  bool is_lost() const { return is_lost_.load(std::memory_order_acquire); }

 private:
  std::shared_ptr<const PluginLibrary> library_;
  hal_plugin_device handle_;
  DeviceInfo info_;
  uint32_t kernel_formats_ = 0;
  bool sized_structs_ = false;
  mutable std::mutex lost_mutex_;
  mutable std::string lost_;  // the message of the call that found the device lost
  mutable std::atomic<bool> is_lost_{false};
};

class PluginBuffer final : public BufferImpl {
 public:
  PluginBuffer(std::shared_ptr<PluginDevice> device, size_t size, hal_plugin_buffer handle)
      : BufferImpl(device, size, MemoryKind::device), handle_(handle) {}
  // Pinned host memory: the plugin's buffer, which the host reaches at `host`.
  PluginBuffer(std::shared_ptr<PluginDevice> device, size_t size, hal_plugin_buffer handle,
               void* host)
      : BufferImpl(device, size, MemoryKind::pinned_host), handle_(handle), host_(host) {}
  ~PluginBuffer() override;
  hal_plugin_buffer handle() const { return handle_; }
  void* host_pointer() const noexcept override { return host_; }

 private:
  hal_plugin_buffer handle_;
  void* host_ = nullptr;
};

// The plugin buffer behind a hal buffer (a block of a segment), and where the block starts.
struct NativeRange {
  hal_plugin_buffer buffer;
  uint64_t offset;
};
NativeRange native(const BufferPtr& buffer, size_t offset);

// A kernel the plugin compiled, destroyed with the last Kernel and launch that holds it.
class PluginKernel final : public KernelImpl {
 public:
  PluginKernel(std::string name, std::shared_ptr<PluginDevice> device, hal_plugin_kernel handle)
      : KernelImpl(std::move(name), device.get()), device_(std::move(device)), handle_(handle) {}
  ~PluginKernel() override;
  hal_plugin_kernel handle() const { return handle_; }

 private:
  std::shared_ptr<PluginDevice> device_;
  hal_plugin_kernel handle_;
};

// A plugin event's handle, shared by the event and the fences of its records, destroyed with
// the last of them.
struct EventHandle {
  EventHandle(std::shared_ptr<PluginDevice> owner, hal_plugin_event event)
      : device(std::move(owner)), handle(event) {}
  ~EventHandle();
  EventHandle(const EventHandle&) = delete;
  EventHandle& operator=(const EventHandle&) = delete;

  std::shared_ptr<PluginDevice> device;
  hal_plugin_event handle;
};

class PluginEvent final : public EventImpl {
 public:
  explicit PluginEvent(std::shared_ptr<EventHandle> handle) : handle_(std::move(handle)) {}
  DeviceImpl& device() const override { return *handle_->device; }
  std::shared_ptr<HostFence> fence() const override;
  double elapsed_ms_since(const EventImpl& start) const override;

  hal_plugin_event handle() const { return handle_->handle; }
  // After the plugin recorded the event on the stream `stream` (its serial), whose host
  // callbacks before the record `callbacks` covers.
  void mark_recorded(uint64_t stream, detail::StreamFailures::Mark callbacks);

 private:
  std::shared_ptr<EventHandle> handle_;
  mutable std::mutex mutex_;
  bool recorded_ = false;  // under mutex_, as the two below
  uint64_t stream_ = 0;
  detail::StreamFailures::Mark callbacks_;
};

}  // namespace hal::plugin

// A plugin's stream as hal's StreamImpl. Calls into the plugin are serialised per stream, as
// plugin.h promises plugins. What enqueued work uses (buffers, kernels) is held until the
// plugin says that work completed, since a plugin may run work after its call returns: behind
// the plugin's events as fences (async::FencedRefs, as in the OpenCL and CUDA backends), one
// per command that holds anything, because an accelerator's memory may be small and each
// buffer should come back as soon as its work is done.
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/async/fenced_refs.hpp"
#include "backends/plugin/plugin_device.hpp"

namespace hal::plugin {

class PluginStream final : public StreamImpl {
 public:
  PluginStream(std::shared_ptr<PluginDevice> device, hal_plugin_stream handle);
  ~PluginStream() override;

  DeviceImpl& device() const override { return *device_; }
  void copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                      size_t bytes) override;
  void copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) override;
  bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src, size_t src_offset,
            size_t bytes) override;
  void fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
            size_t pattern_size) override;
  void host_callback(std::function<void()> fn) override;
  void host_callback_even_if_lost(std::function<void()> fn) override;
  void launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
              std::span<const KernelArg> args) override;
  void gemm(const GemmDesc& gemm) override;
  void run_builtin_op(const BuiltinOp& op) override;
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

 private:
  using Ref = std::shared_ptr<const void>;
  // The plugin's events as the fences of FencedRefs.
  struct PluginFences {
    using Fence = hal_plugin_event;
    using Status = hal_status;
    static constexpr hal_status kSuccess = HAL_STATUS_OK;
    const hal_plugin_api* api;
    // Done when complete, or when the device is lost (plugin.h: a lost device runs none of
    // the work any more). Any other error promises nothing about the work, which may still
    // run: it counts as pending, and what the work holds waits for synchronize.
    std::optional<hal_status> poll(hal_plugin_event fence) const {
      int32_t complete = 0;
      const hal_status status = api->event_query(fence, &complete);
      if (status == HAL_STATUS_DEVICE_LOST) return status;
      if (status != HAL_STATUS_OK || !complete) return std::nullopt;
      return HAL_STATUS_OK;
    }
    void destroy(hal_plugin_event fence) const { api->event_destroy(fence); }
  };
  using Batches = async::FencedRefs<PluginFences>::Batches;

  const hal_plugin_api& api() const { return *device_->library().api; }
  // The stream's lock for a call named `what`; InvalidState from the stream's own host callback.
  std::unique_lock<std::mutex> lock_for(const char* what);
  // host_callback_status where the plugin has it (1.3): what began after a loss runs only
  // `even_if_lost`, else is dropped.
  void enqueue_callback(std::function<void()> fn, bool even_if_lost);
  // Checks a status (lock held) and keeps `refs` until the enqueued command has run.
  void enqueued(hal_status status, const std::string& what, std::vector<Ref> refs);
  // Records an event behind the open batch and closes the batch with it, then lets go of
  // what completed work held (lock held). Returns the plugin's status; on a failure the batch
  // stays open, its references kept until the stream is synchronised.
  hal_status fence_open_batch();
  // Lets go of everything held (lock held): the stream is idle, or its device is lost.
  void release_all();
  // Checks a status (lock held); on DEVICE_LOST, lets go of what the work held first (the
  // plugin runs none of it any more once it says so).
  void check(hal_status status, const std::string& what);
  void check_not_lost();  // lock held
  void check_failure();   // rethrows a host callback's exception as AsyncFailure

  std::shared_ptr<PluginDevice> device_;
  hal_plugin_stream handle_;
  std::mutex mutex_;
  async::FencedRefs<PluginFences> refs_;
  std::shared_ptr<std::exception_ptr> failure_;  // written by host callbacks
  std::shared_ptr<std::mutex> failure_mutex_ = std::make_shared<std::mutex>();
  uint64_t callbacks_enqueued_ = 0;  // under mutex_
  // The callbacks' failures again, for the records after them.
  std::shared_ptr<detail::StreamFailures> failures_ = std::make_shared<detail::StreamFailures>();
};

}  // namespace hal::plugin

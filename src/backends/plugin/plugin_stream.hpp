// A plugin's stream as hal's StreamImpl. Calls into the plugin are serialised per stream, as
// plugin.h promises plugins. What enqueued work uses (buffers, kernels) is held until the
// plugin says that work completed (WorkHolds), since a plugin may run work after its call
// returns.
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/plugin/plugin_device.hpp"
#include "backends/plugin/plugin_work_holds.hpp"

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
  void launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
              std::span<const KernelArg> args) override;
  void gemm(const GemmDesc& gemm) override;
  void run_builtin_op(const BuiltinOp& op) override;
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

 private:
  const hal_plugin_api& api() const { return *device_->library().api; }
  // Checks a status (lock held) and holds `holds` for the enqueued work.
  void enqueued(hal_status status, const std::string& what, std::vector<WorkHolds::Hold> holds);
  // Checks a status (lock held); on DEVICE_LOST, lets go of what the work held first (the
  // plugin runs none of it any more once it says so).
  void check(hal_status status, const std::string& what);
  void check_not_lost();  // lock held
  void check_failure();   // rethrows a host callback's exception as AsyncFailure

  std::shared_ptr<PluginDevice> device_;
  hal_plugin_stream handle_;
  std::mutex mutex_;
  WorkHolds holds_;
  std::shared_ptr<std::exception_ptr> failure_;  // written by host callbacks
  std::shared_ptr<std::mutex> failure_mutex_ = std::make_shared<std::mutex>();
};

}  // namespace hal::plugin

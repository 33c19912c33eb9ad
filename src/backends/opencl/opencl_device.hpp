// One OpenCL device as a hal device: opencl:N.
#pragma once

#include <memory>
#include <mutex>

#include "backends/opencl/opencl_clock.hpp"
#include "backends/opencl/opencl_device_info.hpp"
#include "hal/backend.hpp"

namespace hal::opencl {

class OpenClDevice final : public DeviceImpl {
 public:
  OpenClDevice(std::shared_ptr<ClPlatform> platform, cl_device_id device,
               ClDeviceDescription description);
  ~OpenClDevice() override;

  const DeviceInfo& info() const override { return info_; }
  MemoryFigure memory_free() const override;
  BufferPtr allocate(size_t bytes, MemoryKind kind) override;
  bool supports(MemoryKind kind) const override;
  std::shared_ptr<StreamImpl> create_stream() override;
  std::shared_ptr<EventImpl> create_event() override;
  CompiledKernel compile(const KernelSource& source, const CompileOptions& options) override;

  const ClApi& api() const { return *platform_->api; }
  const std::shared_ptr<ClPlatform>& platform() const { return platform_; }
  cl_context context() const { return platform_->context; }
  cl_device_id native() const { return device_; }
  const ClDeviceTraits& traits() const { return traits_; }
  // A new in-order queue with profiling, for a stream.
  cl_command_queue create_queue() const;
  // The device's queue for mapping and unmapping host-visible buffers.
  cl_command_queue map_queue();
  // Its profiling clock against the host's, for traces' device tracks (opencl_clock.hpp).
  std::optional<int64_t> clock_offset_ns() const { return clock_.offset_ns(*this); }

 private:
  std::shared_ptr<ClPlatform> platform_;
  cl_device_id device_;
  DeviceInfo info_;
  ClDeviceTraits traits_;
  std::once_flag map_queue_once_;
  cl_command_queue map_queue_ = nullptr;
  mutable DeviceClock clock_;
};

// "opencl:0 (pthread-skylake-avx512-Intel(R) Xeon(R) Processor)": how errors name a device.
inline std::string describe(const OpenClDevice& device) {
  return device.info().id + " (" + device.info().name + ")";
}

}  // namespace hal::opencl

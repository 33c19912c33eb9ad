#include "backends/opencl/opencl_device.hpp"

#include "backends/opencl/opencl_buffer.hpp"
#include "backends/opencl/opencl_event.hpp"
#include "backends/opencl/opencl_stream.hpp"
#include "hal/units.hpp"

namespace hal::opencl {

OpenClDevice::OpenClDevice(std::shared_ptr<ClPlatform> platform, cl_device_id device,
                           ClDeviceDescription description)
    : platform_(std::move(platform)),
      device_(device),
      info_(std::move(description.info)),
      traits_(std::move(description.traits)) {}

OpenClDevice::~OpenClDevice() {
  if (map_queue_) api().clReleaseCommandQueue(map_queue_);
}

MemoryFigure OpenClDevice::memory_free() const { return read_free_memory(api(), device_, traits_); }

bool OpenClDevice::supports(MemoryKind kind) const {
  return kind != MemoryKind::unified || traits_.host_unified_memory;
}

cl_command_queue OpenClDevice::create_queue() const {
  cl_int status = CL_SUCCESS;
  cl_command_queue queue =
      api().clCreateCommandQueue(context(), device_, CL_QUEUE_PROFILING_ENABLE, &status);
  check(status, describe(*this), "clCreateCommandQueue");
  return queue;
}

cl_command_queue OpenClDevice::map_queue() {
  std::call_once(map_queue_once_, [this] { map_queue_ = create_queue(); });
  return map_queue_;
}

BufferPtr OpenClDevice::allocate(size_t bytes, MemoryKind kind) {
  const bool host_visible = kind != MemoryKind::device;
  const cl_mem_flags flags = CL_MEM_READ_WRITE | (host_visible ? CL_MEM_ALLOC_HOST_PTR : 0);
  const std::string what = "allocate " + std::to_string(bytes) + " bytes (" + format_bytes(bytes) +
                           ") of " + std::string(to_string(kind)) + " memory";
  cl_int status = CL_SUCCESS;
  cl_mem mem = api().clCreateBuffer(context(), flags, bytes, nullptr, &status);
  check(status, describe(*this), what);
  void* mapped = nullptr;
  if (host_visible) {
    mapped = api().clEnqueueMapBuffer(map_queue(), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      bytes, 0, nullptr, nullptr, &status);
    if (status != CL_SUCCESS) {
      api().clReleaseMemObject(mem);
      check(status, describe(*this), what + ": map");
    }
  }
  return std::make_shared<OpenClBuffer>(std::static_pointer_cast<OpenClDevice>(shared_from_this()),
                                        bytes, kind, mem, mapped);
}

OpenClBuffer::~OpenClBuffer() {
  const ClApi& api = device_->api();
  if (mapped_) {
    // The unmap is enqueued; the driver frees the memory once it has run.
    api.clEnqueueUnmapMemObject(device_->map_queue(), mem_, mapped_, 0, nullptr, nullptr);
    api.clFlush(device_->map_queue());
  }
  api.clReleaseMemObject(mem_);
}

std::shared_ptr<StreamImpl> OpenClDevice::create_stream() {
  return std::make_shared<OpenClStream>(std::static_pointer_cast<OpenClDevice>(shared_from_this()));
}

std::shared_ptr<EventImpl> OpenClDevice::create_event() {
  return std::make_shared<OpenClEvent>(std::static_pointer_cast<OpenClDevice>(shared_from_this()));
}

}  // namespace hal::opencl

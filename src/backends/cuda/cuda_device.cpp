#include "backends/cuda/cuda_device.hpp"

#include "backends/cuda/cuda_buffer.hpp"
#include "backends/cuda/cuda_event.hpp"
#include "backends/cuda/cuda_stream.hpp"
#include "hal/units.hpp"

namespace hal::cuda {

CudaDevice::CudaDevice(std::shared_ptr<const CuApi> api, CUdevice device,
                       CuDeviceDescription description)
    : api_(std::move(api)),
      device_(device),
      info_(std::move(description.info)),
      traits_(std::move(description.traits)),
      staging_(std::make_shared<PinnedStaging>(api_, describe(*this))) {}

CudaDevice::~CudaDevice() {
  // At process exit the driver may already be gone; there is nothing to do about an error.
  staging_.reset();  // its blocks are freed in the context, before it is released
  CUcontext context = context_.load();
  if (!context) return;
  if (allocation_stream_ && api_->cuCtxSetCurrent(context) == CUDA_SUCCESS)
    api_->cuStreamDestroy(allocation_stream_);
  api_->cuDevicePrimaryCtxRelease(device_);
}

CUcontext CudaDevice::context() const {
  // Read before the once-flag: every enqueue asks.
  if (CUcontext context = context_.load(std::memory_order_acquire)) [[likely]]
    return context;
  std::call_once(context_once_, [this] {
    CUcontext context = nullptr;
    api_->check(api_->cuDevicePrimaryCtxRetain(&context, device_), describe(*this),
                "cuDevicePrimaryCtxRetain");
    context_.store(context, std::memory_order_release);
  });
  return context_.load(std::memory_order_acquire);
}

void CudaDevice::make_current() const {
  CUcontext wanted = context();
  CUcontext current = nullptr;
  if (api_->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == wanted) return;
  api_->check(api_->cuCtxSetCurrent(wanted), describe(*this), "cuCtxSetCurrent");
}

CUstream CudaDevice::allocation_stream() const {
  if (!traits_.memory_pools) return nullptr;
  std::call_once(allocation_stream_once_, [this] {
    make_current();
    CUstream stream = nullptr;
    api_->check(api_->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), describe(*this),
                "cuStreamCreate (the allocation stream)");
    allocation_stream_ = stream;
  });
  return allocation_stream_;
}

MemoryFigure CudaDevice::memory_free() const {
  make_current();
  size_t free = 0, total = 0;
  api_->check(api_->cuMemGetInfo(&free, &total), describe(*this), "cuMemGetInfo");
  return {free, Provenance::measured};
}

bool CudaDevice::supports(MemoryKind kind) const {
  return kind != MemoryKind::unified || traits_.managed_memory;
}

BufferPtr CudaDevice::allocate(size_t bytes, MemoryKind kind) {
  make_current();
  const auto what = [&] {
    return "allocate " + std::to_string(bytes) + " bytes (" + format_bytes(bytes) + ") of " +
           std::string(to_string(kind)) + " memory";
  };
  CUdeviceptr address = 0;
  void* host = nullptr;
  CUresult result = CUDA_SUCCESS;
  switch (kind) {
    case MemoryKind::device:
      if (CUstream stream = allocation_stream()) {
        // Synchronised at once, so that every stream may use the memory on return.
        result = api_->cuMemAllocAsync(&address, bytes, stream);
        if (result == CUDA_SUCCESS) result = api_->cuStreamSynchronize(stream);
      } else {
        result = api_->cuMemAlloc(&address, bytes);
      }
      break;
    case MemoryKind::pinned_host:
      // Portable: usable from every context; device-mapped: kernels may read it directly.
      result =
          api_->cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
      address = reinterpret_cast<CUdeviceptr>(host);
      break;
    case MemoryKind::unified: {
      // Managed memory may oversubscribe the GPU and then pages on every access: refuse more
      // than the device has free, as an exact out-of-memory error.
      const uint64_t free = memory_free().bytes;
      if (bytes > free)
        throw Error(ErrorCode::OutOfMemory,
                    describe(*this) + ": " + what() + ": only " + format_bytes(free) +
                        " of the device's " + format_bytes(info_.memory_total.bytes) +
                        " are free, and hal does not oversubscribe managed memory");
      result = api_->cuMemAllocManaged(&address, bytes, CU_MEM_ATTACH_GLOBAL);
      host = reinterpret_cast<void*>(address);
      break;
    }
  }
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    api_->cuMemGetInfo(&free, &total);
    throw Error(ErrorCode::OutOfMemory,
                describe(*this) + ": " + what() + ": the driver is out of memory; total " +
                    format_bytes(total) + ", free " + format_bytes(free),
                result);
  }
  api_->check(result, describe(*this), what());
  return std::make_shared<CudaBuffer>(std::static_pointer_cast<CudaDevice>(shared_from_this()),
                                      bytes, kind, address, host);
}

BufferPtr CudaDevice::wrap_native(void* handle, size_t bytes, std::function<void()> release) {
  return std::make_shared<CudaBuffer>(std::static_pointer_cast<CudaDevice>(shared_from_this()),
                                      bytes, reinterpret_cast<CUdeviceptr>(handle),
                                      std::move(release));
}

CudaBuffer::~CudaBuffer() {
  if (adopted_) {
    if (release_) release_();
    return;
  }
  const CuApi& api = device_->api();
  try {
    device_->make_current();
  } catch (const Error&) {
    return;  // the driver is gone (process exit, device lost): its memory went with it
  }
  if (kind() == MemoryKind::pinned_host) {
    api.cuMemFreeHost(host_);
  } else if (CUstream stream =
                 kind() == MemoryKind::device ? device_->allocation_stream() : nullptr) {
    // The caching allocator frees a segment only when no enqueued work holds it, so the free
    // need not wait for other streams. The synchronisation hands the memory back to the
    // system at once (the pool's release threshold is 0 unless someone raised it), as
    // cuMemFree would.
    api.cuMemFreeAsync(address_, stream);
    api.cuStreamSynchronize(stream);
  } else {
    api.cuMemFree(address_);
  }
}

std::shared_ptr<StreamImpl> CudaDevice::create_stream() {
  return std::make_shared<CudaStream>(std::static_pointer_cast<CudaDevice>(shared_from_this()));
}

std::shared_ptr<EventImpl> CudaDevice::create_event() {
  return std::make_shared<CudaEvent>(std::static_pointer_cast<CudaDevice>(shared_from_this()));
}

}  // namespace hal::cuda

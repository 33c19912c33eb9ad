#include "backends/cuda/cuda_event.hpp"

#include "core/error_context.hpp"

namespace hal::cuda {

CudaFence::CudaFence(std::shared_ptr<CudaDevice> device, bool timing, uint64_t stream)
    : RecordFence(stream), device_(std::move(device)) {
  device_->make_current();
  device_->api().check(
      device_->api().cuEventCreate(&event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
      describe(*device_), "cuEventCreate");
}

CudaFence::~CudaFence() { device_->api().cuEventDestroy(event_); }

bool CudaFence::ready() const {
  // An error other than "not ready" ends the wait; failure() and the stream's synchronize report
  // it.
  return device_->api().cuEventQuery(event_) != CUDA_ERROR_NOT_READY;
}

void CudaFence::wait() const { device_->api().cuEventSynchronize(event_); }

std::exception_ptr CudaFence::failure() const {
  if (std::exception_ptr failed = callbacks_.failure()) return failed;
  const CUresult result = device_->api().cuEventQuery(event_);
  if (result == CUDA_SUCCESS || result == CUDA_ERROR_NOT_READY) return nullptr;
  const detail::ErrorReportsMuted reported_by_the_caller;  // which rethrows it as its own
  return std::make_exception_ptr(
      Error(ErrorCode::AsyncFailure,
            device_->api().describe(result) + " (" + std::to_string(static_cast<int>(result)) + ")",
            static_cast<int>(result)));
}

std::shared_ptr<CudaFence> CudaEvent::cuda_fence() const {
  std::lock_guard lock(mutex_);
  return fence_;
}

void CudaEvent::set_fence(std::shared_ptr<CudaFence> fence) {
  std::lock_guard lock(mutex_);
  fence_ = std::move(fence);
}

double CudaEvent::elapsed_ms_since(const EventImpl& start) const {
  auto begin = static_cast<const CudaEvent&>(start).cuda_fence();
  auto end = cuda_fence();
  float ms = 0;
  const CUresult result = device_->api().cuEventElapsedTime(&ms, begin->native(), end->native());
  // Event::elapsed_ms saw both fences complete, but another thread may have recorded either
  // event again since: its new fence has not completed, as the generic check reports it.
  if (result == CUDA_ERROR_NOT_READY)
    throw Error(ErrorCode::InvalidState, "elapsed_ms on an event of " + describe(*device_) +
                                             " recorded again meanwhile, whose work has not "
                                             "completed; synchronize it first");
  device_->api().check(result, describe(*device_), "cuEventElapsedTime");
  return ms;
}

}  // namespace hal::cuda

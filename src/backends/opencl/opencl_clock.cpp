#include "backends/opencl/opencl_clock.hpp"

#include <limits>

#include "backends/opencl/opencl_device.hpp"
#include "core/trace_record.hpp"
#include "hal/error.hpp"

namespace hal::opencl {
namespace {

constexpr uint64_t kRemeasureNs = 1'000'000'000;
constexpr int kMarkers = 5;

std::optional<int64_t> measure(const OpenClDevice& device) {
  const ClApi& api = device.api();
  cl_command_queue queue = nullptr;
  try {
    queue = device.create_queue();
  } catch (const Error&) {
    return std::nullopt;
  }
  std::optional<int64_t> best;
  uint64_t best_bracket = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < kMarkers; ++i) {
    cl_event marker = nullptr;
    const uint64_t before = trace::detail::steady_now_ns();
    const cl_int status = api.clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker);
    const uint64_t after = trace::detail::steady_now_ns();
    if (status != CL_SUCCESS) break;
    cl_ulong queued = 0;
    if (api.clFinish(queue) == CL_SUCCESS &&
        api.clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued,
                                    nullptr) == CL_SUCCESS &&
        queued > 0 && after - before < best_bracket) {
      best_bracket = after - before;
      best = static_cast<int64_t>(before + (after - before) / 2) - static_cast<int64_t>(queued);
    }
    api.clReleaseEvent(marker);
  }
  api.clReleaseCommandQueue(queue);
  return best;
}

}  // namespace

std::optional<int64_t> DeviceClock::offset_ns(const OpenClDevice& device) {
  const uint64_t now = trace::detail::steady_now_ns();
  std::lock_guard lock(mutex_);
  if (measured_at_ == 0 || now - measured_at_ >= kRemeasureNs) {
    offset_ = measure(device);
    measured_at_ = trace::detail::steady_now_ns();
  }
  return offset_;
}

}  // namespace hal::opencl

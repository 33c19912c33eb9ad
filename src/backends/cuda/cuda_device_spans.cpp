#include "backends/cuda/cuda_device_spans.hpp"

#include <cmath>
#include <limits>

namespace hal::cuda {
namespace {

constexpr uint64_t kReferenceLifetimeNs = 1'000'000'000;  // then measured again
constexpr int kReferenceTries = 5;

}  // namespace

DeviceSpans::Reference::~Reference() {
  if (event) api->cuEventDestroy(event);
}

DeviceSpans::DeviceSpans(std::shared_ptr<CudaDevice> device, const StreamImpl& stream)
    : device_(std::move(device)), api_(device_->api()), stream_(stream) {}

DeviceSpans::~DeviceSpans() {
  for (Pending& pending : pending_) release(pending);
  for (CUevent event : free_) api_.cuEventDestroy(event);
  reference_.reset();
  if (clock_stream_) api_.cuStreamDestroy(clock_stream_);
}

const std::shared_ptr<const DeviceSpans::Reference>& DeviceSpans::reference() {
  const uint64_t now = trace::detail::steady_now_ns();
  if (reference_ && now - reference_taken_ns_ < kReferenceLifetimeNs) return reference_;
  reference_taken_ns_ = now;
  reference_.reset();
  if (!clock_stream_ &&
      api_.cuStreamCreate(&clock_stream_, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    clock_stream_ = nullptr;
    return reference_;
  }
  std::shared_ptr<Reference> best;
  uint64_t best_bracket = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < kReferenceTries; ++i) {
    auto candidate = std::make_shared<Reference>();
    candidate->api = &api_;
    if (api_.cuEventCreate(&candidate->event, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      candidate->event = nullptr;
      return reference_;
    }
    const uint64_t before = trace::detail::steady_now_ns();
    if (api_.cuEventRecord(candidate->event, clock_stream_) != CUDA_SUCCESS ||
        api_.cuEventSynchronize(candidate->event) != CUDA_SUCCESS)
      return reference_;
    const uint64_t after = trace::detail::steady_now_ns();
    if (after - before < best_bracket) {
      best_bracket = after - before;
      candidate->steady_ns = before + (after - before) / 2;
      best = std::move(candidate);
    }
  }
  reference_ = std::move(best);
  return reference_;
}

CUevent DeviceSpans::acquire_event() {
  if (!free_.empty()) {
    const CUevent event = free_.back();
    free_.pop_back();
    return event;
  }
  CUevent event = nullptr;
  return api_.cuEventCreate(&event, CU_EVENT_DEFAULT) == CUDA_SUCCESS ? event : nullptr;
}

void DeviceSpans::release(Pending& pending) {
  for (CUevent event : {pending.start, pending.end})
    if (event) free_.push_back(event);
  pending.start = pending.end = nullptr;
}

void DeviceSpans::begin(CUstream stream, const CommandSpan& span) {
  if (pending_.size() >= kCollectAt) collect();
  Pending pending{reference(),   nullptr,
                  nullptr,       trace::detail::execution_track(stream_),
                  span.category, std::string(span.name),
                  span.args};
  // Without a reference or an event, the command still runs; it gets no span (a pending entry
  // without a start, which end and collect pass over).
  if (pending.reference) {
    pending.start = acquire_event();
    if (pending.start && api_.cuEventRecord(pending.start, stream) != CUDA_SUCCESS)
      release(pending);
  }
  pending_.push_back(std::move(pending));
}

void DeviceSpans::end(CUstream stream) {
  Pending& pending = pending_.back();
  if (!pending.start) return;
  pending.end = acquire_event();
  if (!pending.end || api_.cuEventRecord(pending.end, stream) != CUDA_SUCCESS) release(pending);
}

void DeviceSpans::cancel() {
  release(pending_.back());
  pending_.pop_back();
}

void DeviceSpans::collect() {
  while (!pending_.empty()) {
    Pending& pending = pending_.front();
    if (pending.end) {
      const CUresult done = api_.cuEventQuery(pending.end);
      if (done == CUDA_ERROR_NOT_READY) return;
      float start_ms = 0, end_ms = 0;
      // A failed command, or times the driver will not give, leave the span out.
      if (done == CUDA_SUCCESS && trace::enabled() &&
          api_.cuEventElapsedTime(&start_ms, pending.reference->event, pending.start) ==
              CUDA_SUCCESS &&
          api_.cuEventElapsedTime(&end_ms, pending.reference->event, pending.end) == CUDA_SUCCESS &&
          start_ms >= 0 && end_ms >= start_ms) {
        const uint64_t origin = pending.reference->steady_ns;
        trace::detail::steady_span(pending.track, pending.category, pending.name,
                                   origin + static_cast<uint64_t>(std::llround(start_ms * 1e6)),
                                   origin + static_cast<uint64_t>(std::llround(end_ms * 1e6)),
                                   pending.args);
      }
    }
    release(pending);
    pending_.pop_front();
  }
}

}  // namespace hal::cuda

// While a trace records, the GPU's own times of each command of a CUDA stream, for the stream's
// device track: a pair of timing events around the command, read once the second has completed.
// Event times are placed on the host's steady clock through a reference event whose host time
// is bracketed: recorded on an idle stream of its own between two reads of the host's clock and
// waited for, the tightest of five brackets kept (its midpoint is within half that bracket of
// the truth), measured again once a second has passed. cuEventElapsedTime gives milliseconds
// as a float (about half a microsecond of resolution), which over at most a second after its
// reference keeps well under that.
//
// Not thread-safe: the stream's lock guards it, with the stream's context current.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "core/trace_record.hpp"

namespace hal::cuda {

using trace::detail::CommandSpan;  // an empty name: no span of its own

class DeviceSpans {
 public:
  DeviceSpans(std::shared_ptr<CudaDevice> device, const StreamImpl& stream);
  ~DeviceSpans();  // the context current
  DeviceSpans(const DeviceSpans&) = delete;
  DeviceSpans& operator=(const DeviceSpans&) = delete;

  // Around one command enqueued on `stream`: begin before it, then end after it, or cancel
  // when it could not be enqueued. A span the driver cannot time is left out, never misplaced.
  void begin(CUstream stream, const CommandSpan& span);
  void end(CUstream stream);
  void cancel();
  // Records the spans of the commands that have completed, in order, up to the first that has
  // not (all of them after a synchronize).
  void collect();

  static constexpr size_t kCollectAt = 256;  // pending spans that make begin collect first

 private:
  struct Reference {
    const CuApi* api = nullptr;
    CUevent event = nullptr;
    uint64_t steady_ns = 0;  // the host's time of `event`
    ~Reference();
  };
  struct Pending {
    std::shared_ptr<const Reference> reference;
    CUevent start = nullptr, end = nullptr;
    trace::detail::Track track;
    std::string_view category;
    std::string name;
    trace::detail::SpanArgs args;
  };
  // The current reference, measured again once a second has passed; null where the driver
  // cannot record one.
  const std::shared_ptr<const Reference>& reference();
  CUevent acquire_event();
  void release(Pending& pending);

  std::shared_ptr<CudaDevice> device_;
  const CuApi& api_;
  const StreamImpl& stream_;
  CUstream clock_stream_ = nullptr;  // idle but for the reference events
  std::shared_ptr<const Reference> reference_;
  uint64_t reference_taken_ns_ = 0;
  std::deque<Pending> pending_;
  std::vector<CUevent> free_;
};

}  // namespace hal::cuda

// Where a device's profiling clock stands against the host's steady clock, for the device
// tracks of traces: the offset to add to a command's START and END times. Measured with empty
// markers on a queue of its own, whose QUEUED time the driver stamps inside the enqueue call
// that the host brackets with two readings of its clock: the tightest bracket of a few gives
// the offset to within half an empty enqueue (microseconds), where a command's own bracket
// holds whatever the driver does inside that call (PoCL copies a write's host data there).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

namespace hal::opencl {

class OpenClDevice;

class DeviceClock {
 public:
  // Host steady nanoseconds minus device nanoseconds; measured on first use and again once a
  // second has passed (clocks may drift apart). nullopt where the driver stamps no QUEUED time.
  std::optional<int64_t> offset_ns(const OpenClDevice& device);

 private:
  std::mutex mutex_;
  std::optional<int64_t> offset_;
  uint64_t measured_at_ = 0;  // steady ns; 0: never
};

}  // namespace hal::opencl

// "far": an in-process test backend of two accelerators whose memory the host cannot address.
// It exercises what CPU memory would hide: staged copies between backends, events across
// backends, and register_backend. Its streams run on worker threads, like a real device.
#pragma once

#include <atomic>
#include <cstddef>

namespace hal::test {

inline constexpr unsigned kFarDevices = 2;
inline constexpr size_t kFarMemoryBytes = size_t{64} << 20;

// Faults the far streams inject while a test sets them (all off by default), for what hal does
// when a later part of its work cannot be enqueued.
struct FarFaults {
  std::atomic<int> callbacks_allowed{-1};  // host callbacks taken before refusing; -1: all
  std::atomic<int> copy_delay_ms{0};       // how long each copy to or from the host takes
  std::atomic<int> copies_pending{0};      // copies to or from the host enqueued, not yet run
};
FarFaults& far_faults();

// Registers the backend once per process; later calls do nothing.
void register_far_backend();

}  // namespace hal::test

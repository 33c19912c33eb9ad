// "far": an in-process test backend of two accelerators whose memory the host cannot address.
// It exercises what CPU memory would hide: staged copies between backends, events across
// backends, and register_backend. Its streams run on worker threads, like a real device.
#pragma once

#include <cstddef>

namespace hal::test {

inline constexpr unsigned kFarDevices = 2;
inline constexpr size_t kFarMemoryBytes = size_t{64} << 20;

// Registers the backend once per process; later calls do nothing.
void register_far_backend();

}  // namespace hal::test

// Names of the small enums of device_info.hpp and buffer.hpp.
#include "hal/buffer.hpp"
#include "hal/device_info.hpp"

namespace hal {

std::string_view to_string(DeviceKind kind) noexcept {
  switch (kind) {
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::gpu:
      return "gpu";
    case DeviceKind::accelerator:
      return "accelerator";
  }
  return "?";
}

std::string_view to_string(Provenance provenance) noexcept {
  switch (provenance) {
    case Provenance::unknown:
      return "unknown";
    case Provenance::estimated:
      return "estimated";
    case Provenance::measured:
      return "measured";
  }
  return "?";
}

std::string_view to_string(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::device:
      return "device";
    case MemoryKind::pinned_host:
      return "pinned_host";
    case MemoryKind::unified:
      return "unified";
  }
  return "?";
}

}  // namespace hal

// Device::synchronize and synchronize_all: every live stream of a device (of every device), each
// waited for through Stream::synchronize, which refuses a stream's own host callback.
#include <exception>

#include "core/device_core.hpp"
#include "hal/device.hpp"

namespace hal {
namespace {

// Waits for each stream; remembers the first failure instead of stopping at it, so that no
// stream is left running when the caller hears of one.
void synchronize_each(const std::vector<std::shared_ptr<StreamImpl>>& streams,
                      std::exception_ptr& first) {
  for (const auto& impl : streams) {
    try {
      Stream(impl).synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
}

}  // namespace

void Device::synchronize() const {
  if (!impl_)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Device");
  std::exception_ptr first;
  synchronize_each(detail::core_of(*impl_).live_streams(), first);
  if (first) std::rethrow_exception(first);
}

void synchronize_all() {
  std::exception_ptr first;
  for (detail::DeviceCore* core : detail::device_cores())
    synchronize_each(core->live_streams(), first);
  if (first) std::rethrow_exception(first);
}

}  // namespace hal

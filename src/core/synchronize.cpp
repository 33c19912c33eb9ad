// Device::synchronize and synchronize_all: every live stream of a device (of every device), each
// waited for through Stream::synchronize, which refuses a stream's own host callback.
#include <exception>
#include <string>
#include <vector>

#include "core/callback_thread.hpp"
#include "core/device_core.hpp"
#include "hal/device.hpp"

namespace hal {
namespace {

// From a host callback of one of `streams`: refused before waiting for any. Waiting for the
// others first could wait for ever (a stream that waits for an event its caller's stream
// records after this callback), and the caller's own stream would be refused anyway.
void refuse_own_callback(const std::vector<std::shared_ptr<StreamImpl>>& streams,
                         const char* what) {
  const StreamImpl* running = detail::RunningCallback::current();
  if (!running) return;
  for (const auto& impl : streams)
    if (impl.get() == running)
      throw Error(ErrorCode::InvalidState,
                  std::string(what) + " from a host callback of a stream of " +
                      running->device().info().id +
                      ", which it would wait for: it would wait for itself; record an event "
                      "and wait for it elsewhere");
}

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
  const std::vector<std::shared_ptr<StreamImpl>> streams = detail::core_of(*impl_).live_streams();
  refuse_own_callback(streams, "Device::synchronize");
  synchronize_each(streams, first);
  if (first) std::rethrow_exception(first);
}

void synchronize_all() {
  std::exception_ptr first;
  std::vector<std::vector<std::shared_ptr<StreamImpl>>> all;
  for (detail::DeviceCore* core : detail::device_cores()) {
    all.push_back(core->live_streams());
    refuse_own_callback(all.back(), "synchronize_all");
  }
  for (const auto& streams : all) synchronize_each(streams, first);
  if (first) std::rethrow_exception(first);
}

}  // namespace hal

// default_device() and DeviceScope.
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "hal/select.hpp"

namespace hal {
namespace {

// The innermost scope's device on this thread; empty outside every scope.
thread_local Device scoped_device;
thread_local bool in_scope = false;

}  // namespace

Device default_device() {
  if (in_scope) return scoped_device;
  const std::vector<Device> devices = Registry::instance().devices();
  if (devices.empty())
    throw Error(ErrorCode::NotFound, "default_device: no device is visible (check HAL_DEVICES)");
  return rank_devices({}, devices).device;
}

DeviceScope::DeviceScope(Device device)
    : previous_(std::move(scoped_device)), had_previous_(in_scope) {
  if (!device) {
    scoped_device = std::move(previous_);
    throw Error(ErrorCode::InvalidArgument, "DeviceScope: no device given");
  }
  scoped_device = std::move(device);
  in_scope = true;
}

DeviceScope::~DeviceScope() {
  scoped_device = std::move(previous_);
  in_scope = had_previous_;
}

}  // namespace hal

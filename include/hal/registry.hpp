// Registry: the process-wide list of backends and their devices.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hal/device.hpp"
#include "hal/visible_devices.hpp"

namespace hal {

class Backend;

namespace detail {
Device host_cpu();  // core/host_cpu.hpp
}  // namespace detail

struct BackendStatus {
  std::string name;
  bool compiled_in = false;  // false: this build of hal lacks the backend
  bool available = false;    // probed, and its driver answered
  std::string reason;        // why not available; empty when available
  size_t device_count = 0;   // all devices, visible or not
};

// Backends are probed lazily, once each, on the first call that needs their devices. The
// HAL_DEVICES selector (visible_devices.hpp) decides which devices are visible; a malformed one is
// an InvalidArgument error from every call that lists or finds devices. Thread-safe.
class Registry {
 public:
  static Registry& instance();

  std::vector<BackendStatus> backends();
  // Visible devices, by backend in registration order, then by index.
  std::vector<Device> devices();
  // Every device, ignoring the selector.
  std::vector<Device> all_devices();
  // By id ("cuda:0") or by a UUID prefix of at least 4 hex digits. Throws NotFound naming
  // the visible devices, or saying that HAL_DEVICES hides it.
  Device device(std::string_view id_or_uuid);

  // Adds an in-process backend (see backend.hpp); it replaces a backend of the same name that
  // is not compiled in. Throws InvalidArgument for a name already taken.
  void register_backend(std::shared_ptr<Backend> backend);
  // Overrides HAL_DEVICES for this process; std::nullopt goes back to the environment.
  void set_selector(std::optional<std::string> selector);

  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

 private:
  Registry();
  ~Registry();
  struct Entry;
  Entry& probed(Entry& entry);
  // The devices of backend `name`, probing that backend alone, whatever the selector shows.
  std::vector<Device> devices_of(std::string_view name);
  friend Device detail::host_cpu();
  DeviceSelector current_selector();
  std::vector<Device> visible(const DeviceSelector& selector);  // lock held

  std::mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::optional<std::string> selector_override_;
};

inline std::vector<Device> devices() { return Registry::instance().devices(); }
inline Device device(std::string_view id) { return Registry::instance().device(id); }
inline void register_backend(std::shared_ptr<Backend> backend) {
  Registry::instance().register_backend(std::move(backend));
}

}  // namespace hal

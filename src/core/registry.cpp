#include "hal/registry.hpp"
#include "core/host_cpu.hpp"

#include "core/error_context.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/builtin_backends.hpp"
#include "core/device_core.hpp"
#include "core/text.hpp"
#include "hal/backend.hpp"
#include "hal/log.hpp"

namespace hal {

struct Registry::Entry {
  std::string name;
  std::shared_ptr<Backend> backend;  // null: not compiled in
  std::string absent_reason;
  bool probed = false;
  bool available = false;
  std::string reason;
  std::vector<Device> devices;
};

namespace {

std::string id_list(const std::vector<Device>& devices) {
  std::string list;
  for (const Device& device : devices) list += (list.empty() ? "" : ", ") + device.id();
  return list.empty() ? "none" : list;
}

}  // namespace

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

Registry::Registry() {
  for (auto& builtin : detail::builtin_backends()) {
    auto entry = std::make_unique<Entry>();
    entry->name = builtin.name;
    if (builtin.make)
      entry->backend = builtin.make();
    else
      entry->absent_reason = "not compiled in: " + builtin.absent_reason;
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> taken;
  for (const auto& entry : entries_) taken.push_back(entry->name);
  for (auto& backend : detail::plugin_backends(taken)) {
    auto entry = std::make_unique<Entry>();
    entry->name = backend->name();
    entry->backend = std::move(backend);
    entries_.push_back(std::move(entry));
  }
}

Registry::~Registry() {
  // Cached memory, transfer streams and kernels hold their devices: let go of them while the
  // backends are still here.
  detail::shutdown_device_cores();
}

Registry::Entry& Registry::probed(Entry& entry) {
  if (entry.probed) return entry;
  entry.probed = true;
  if (!entry.backend) {
    entry.reason = entry.absent_reason;
    return entry;
  }
  try {
    // A backend that fails here is reported as unavailable, with the reason: handled, so not
    // an error for the handler.
    detail::ErrorReportsMuted handled;
    BackendProbe probe = entry.backend->probe();
    entry.available = probe.available;
    entry.reason = probe.available ? "" : probe.reason;
    for (size_t i = 0; i < probe.devices.size(); ++i) {
      const std::string expected = entry.name + ":" + std::to_string(i);
      if (!probe.devices[i] || probe.devices[i]->info().id != expected)
        throw Error(ErrorCode::Internal, "backend " + entry.name + " reported device " +
                                             std::to_string(i) + " with id '" +
                                             (probe.devices[i] ? probe.devices[i]->info().id : "") +
                                             "', expected '" + expected + "'");
      entry.devices.emplace_back(probe.devices[i]);
    }
  } catch (const std::exception& error) {
    entry.available = false;
    entry.devices.clear();
    entry.reason = std::string("probe failed: ") + error.what();
  }
  if (entry.available)
    log(LogLevel::info,
        "backend " + entry.name + ": " + std::to_string(entry.devices.size()) + " device(s)");
  else
    log(LogLevel::info, "backend " + entry.name + " unavailable: " + entry.reason);
  return entry;
}

DeviceSelector Registry::current_selector() {
  std::string text;
  std::string origin;
  if (selector_override_) {
    text = *selector_override_;
    origin = "the selector set by Registry::set_selector";
  } else if (const char* env = std::getenv("HAL_DEVICES")) {
    text = env;
    origin = "HAL_DEVICES";
  }
  if (text.find_first_not_of(" \t") == std::string::npos) return DeviceSelector();
  try {
    DeviceSelector selector = DeviceSelector::parse(text);
    std::vector<std::string> known;
    for (auto& entry : entries_) known.push_back(entry->name);
    selector.check_backends(known);
    return selector;
  } catch (const Error& error) {
    throw Error(error.code(), origin + ": " + error.message());
  }
}

std::vector<BackendStatus> Registry::backends() {
  std::lock_guard lock(mutex_);
  std::vector<BackendStatus> statuses;
  for (auto& entry : entries_) {
    probed(*entry);
    statuses.push_back({entry->name, entry->backend != nullptr, entry->available, entry->reason,
                        entry->devices.size()});
  }
  return statuses;
}

std::vector<Device> Registry::all_devices() {
  std::lock_guard lock(mutex_);
  std::vector<Device> devices;
  for (auto& entry : entries_)
    for (const Device& device : probed(*entry).devices) devices.push_back(device);
  return devices;
}

std::vector<Device> Registry::devices_of(std::string_view name) {
  std::lock_guard lock(mutex_);
  for (auto& entry : entries_)
    if (entry->name == name) return probed(*entry).devices;
  return {};
}

std::vector<Device> Registry::visible(const DeviceSelector& selector) {
  std::vector<Device> devices;
  for (auto& entry : entries_) {
    if (!selector.may_show_backend(entry->name)) continue;  // its driver stays unloaded
    for (const Device& device : probed(*entry).devices)
      if (selector.matches(device.info())) devices.push_back(device);
  }
  return devices;
}

std::vector<Device> Registry::devices() {
  std::lock_guard lock(mutex_);
  return visible(current_selector());
}

Device Registry::device(std::string_view id_or_uuid) {
  const std::string wanted = detail::to_lower(id_or_uuid);
  std::lock_guard lock(mutex_);
  const DeviceSelector selector = current_selector();
  const std::vector<Device> shown = visible(selector);

  // The backend the id names, probed even where the selector hides it entirely: its device is
  // then named as hidden, not unknown.
  const size_t colon = wanted.find(':');
  Entry* named = nullptr;
  if (colon != std::string::npos)
    for (auto& entry : entries_)
      if (entry->name == std::string_view(wanted).substr(0, colon)) named = &probed(*entry);

  for (auto& entry : entries_) {
    for (const Device& device : entry->devices) {
      if (device.id() != wanted) continue;
      if (!selector.matches(device.info()))
        throw Error(ErrorCode::NotFound, "device " + device.id() +
                                             " is hidden by the device selector '" +
                                             selector.text() + "'; visible: " + id_list(shown));
      return device;
    }
  }

  if (colon != std::string::npos) {
    if (named && !named->available)
      throw Error(ErrorCode::NotFound, "no device '" + std::string(id_or_uuid) + "': backend " +
                                           named->name + " is unavailable (" + named->reason + ")");
  } else if (wanted.size() >= 4) {
    std::vector<Device> matches;
    const std::string prefix = detail::without_dashes(wanted);
    for (const Device& device : shown)
      if (detail::without_dashes(detail::to_lower(device.info().uuid)).starts_with(prefix))
        matches.push_back(device);
    if (matches.size() == 1) return matches.front();
    if (matches.size() > 1)
      throw Error(ErrorCode::InvalidArgument, "UUID prefix '" + std::string(id_or_uuid) +
                                                  "' is ambiguous: it matches " + id_list(matches));
    // A hidden device of a backend already probed is named as hidden, as by its id. Backends the
    // selector keeps unloaded are not probed for it.
    std::vector<Device> hidden;
    for (const auto& entry : entries_)
      for (const Device& device : entry->devices)
        if (detail::without_dashes(detail::to_lower(device.info().uuid)).starts_with(prefix))
          hidden.push_back(device);
    if (!hidden.empty())
      throw Error(ErrorCode::NotFound, "UUID prefix '" + std::string(id_or_uuid) + "' names " +
                                           id_list(hidden) + ", hidden by the device selector '" +
                                           selector.text() + "'; visible: " + id_list(shown));
  }
  throw Error(ErrorCode::NotFound,
              "no device '" + std::string(id_or_uuid) +
                  "'; expected an id like 'cpu:0' or a UUID prefix; visible: " + id_list(shown));
}

void Registry::register_backend(std::shared_ptr<Backend> backend) {
  if (!backend) throw Error(ErrorCode::InvalidArgument, "register_backend: null backend");
  const std::string name = detail::to_lower(backend->name());
  if (!detail::is_backend_name(name) || name != backend->name())
    throw Error(ErrorCode::InvalidArgument, "register_backend: backend name '" + backend->name() +
                                                "' must be lower-case letters, digits and '_'");
  std::lock_guard lock(mutex_);
  for (auto& entry : entries_) {
    if (entry->name != name) continue;
    if (entry->backend)
      throw Error(ErrorCode::InvalidArgument,
                  "register_backend: a backend named '" + name + "' is already registered");
    entry->backend = std::move(backend);
    entry->probed = false;
    entry->reason.clear();
    return;
  }
  auto entry = std::make_unique<Entry>();
  entry->name = name;
  entry->backend = std::move(backend);
  entries_.push_back(std::move(entry));
}

void Registry::set_selector(std::optional<std::string> selector) {
  std::lock_guard lock(mutex_);
  selector_override_ = std::move(selector);
}

namespace detail {

Device host_cpu() {
  // Found once per process, probing the CPU backend alone: a program that shows only its GPUs
  // (or a bad-input child only its sim device) loads no other driver for the host's work.
  // Registry::instance() is made first, so it outlives this handle.
  static const Device host = [] {
    for (const Device& device : Registry::instance().devices_of("cpu"))
      if (device.id() == "cpu:0") return device;
    throw Error(ErrorCode::NotFound, "no cpu:0: the host's CPU backend did not load");
  }();
  return host;
}

}  // namespace detail

}  // namespace hal

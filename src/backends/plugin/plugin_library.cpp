#include "backends/plugin/plugin_library.hpp"

#include <dlfcn.h>

#include <cctype>

#include "backends/plugin/plugin_enums.hpp"
#include "hal/version.hpp"

namespace hal::plugin {
namespace {

std::string status_name(hal_status status) {
  if (const std::optional<ErrorCode> code = error_code_of(status))
    return std::string(to_string(*code));
  return "status " + std::to_string(status);
}

bool valid_name(const char* name) {
  if (name == nullptr || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  for (const char* c = name; *c; ++c)
    if (!std::islower(static_cast<unsigned char>(*c)) &&
        !std::isdigit(static_cast<unsigned char>(*c)) && *c != '_')
      return false;
  return true;
}

// Closes the library unless released: for the failures of load_plugin.
struct LibraryGuard {
  void* handle;
  ~LibraryGuard() {
    if (handle) dlclose(handle);
  }
};

std::string version_of(const hal_plugin_api& api) {
  return std::to_string(api.abi_major) + "." + std::to_string(api.abi_minor);
}

}  // namespace

std::string PluginLibrary::last_error() const {
  const char* message = api && api->last_error ? api->last_error() : nullptr;
  return message && *message ? message : "(the plugin gave no message)";
}

void PluginLibrary::check(hal_status status, const std::string& what) const {
  if (status == HAL_STATUS_OK) return;
  // OK is handled above; a number plugin.h lacks is the plugin's bug.
  const ErrorCode code = error_code_of(status).value_or(ErrorCode::Internal);
  throw Error(code, what + ": " + last_error(), status);
}

void check_plugin_table(const hal_plugin_api* api, const std::string& path) {
  const std::string ours =
      std::to_string(HAL_PLUGIN_ABI_MAJOR) + "." + std::to_string(HAL_PLUGIN_ABI_MINOR);
  if (!api) throw Error(ErrorCode::BackendUnavailable, "plugin " + path + " returned no table");
  if (api->struct_size < offsetof(hal_plugin_api, abi_minor) + sizeof(api->abi_minor) ||
      api->abi_major != HAL_PLUGIN_ABI_MAJOR)
    throw Error(ErrorCode::PluginAbiMismatch, "plugin " + path + " speaks plugin ABI " +
                                                  version_of(*api) + "; this hal speaks " + ours +
                                                  " and loads plugins of major version " +
                                                  std::to_string(HAL_PLUGIN_ABI_MAJOR) + " only");
  const size_t required =
      offsetof(hal_plugin_api, event_elapsed_ms) + sizeof(api->event_elapsed_ms);
  if (api->struct_size < required)
    throw Error(ErrorCode::PluginAbiMismatch,
                "plugin " + path + ": its table holds " + std::to_string(api->struct_size) +
                    " bytes, fewer than the " + std::to_string(required) +
                    " that every version of the ABI requires");
  // Named, so that a vendor reading the error knows which entry to fill in.
  const std::pair<const char*, const void*> required_functions[] = {
      {"last_error", reinterpret_cast<const void*>(api->last_error)},
      {"device_count", reinterpret_cast<const void*>(api->device_count)},
      {"device_get", reinterpret_cast<const void*>(api->device_get)},
      {"device_properties", reinterpret_cast<const void*>(api->device_properties)},
      {"device_memory_free", reinterpret_cast<const void*>(api->device_memory_free)},
      {"buffer_allocate", reinterpret_cast<const void*>(api->buffer_allocate)},
      {"buffer_free", reinterpret_cast<const void*>(api->buffer_free)},
      {"stream_create", reinterpret_cast<const void*>(api->stream_create)},
      {"stream_destroy", reinterpret_cast<const void*>(api->stream_destroy)},
      {"stream_synchronize", reinterpret_cast<const void*>(api->stream_synchronize)},
      {"stream_query", reinterpret_cast<const void*>(api->stream_query)},
      {"copy_to_device", reinterpret_cast<const void*>(api->copy_to_device)},
      {"copy_to_host", reinterpret_cast<const void*>(api->copy_to_host)},
      {"copy_on_device", reinterpret_cast<const void*>(api->copy_on_device)},
      {"fill", reinterpret_cast<const void*>(api->fill)},
      {"host_callback", reinterpret_cast<const void*>(api->host_callback)},
      {"event_create", reinterpret_cast<const void*>(api->event_create)},
      {"event_destroy", reinterpret_cast<const void*>(api->event_destroy)},
      {"event_record", reinterpret_cast<const void*>(api->event_record)},
      {"stream_wait_event", reinterpret_cast<const void*>(api->stream_wait_event)},
      {"event_synchronize", reinterpret_cast<const void*>(api->event_synchronize)},
      {"event_query", reinterpret_cast<const void*>(api->event_query)},
      {"event_elapsed_ms", reinterpret_cast<const void*>(api->event_elapsed_ms)}};
  for (const auto& [field, function] : required_functions)
    if (!function)
      throw Error(
          ErrorCode::BackendUnavailable,
          "plugin " + path + " leaves the required function " + field + " of its table NULL");
  if (!valid_name(api->name))
    throw Error(ErrorCode::BackendUnavailable,
                "plugin " + path + " names its backend '" + (api->name ? api->name : "") +
                    "': a name is lower-case letters, digits and '_', starting with a letter");
}

PluginLibrary load_plugin(const std::string& path) {
  PluginLibrary library;
  library.path = path;
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error(ErrorCode::BackendUnavailable,
                "cannot load plugin " + path + ": " + (why ? why : "dlopen failed"));
  }
  LibraryGuard guard{handle};
  auto init = reinterpret_cast<hal_plugin_init_fn>(dlsym(handle, HAL_PLUGIN_INIT_SYMBOL));
  if (!init)
    throw Error(ErrorCode::BackendUnavailable,
                "plugin " + path + " exports no " HAL_PLUGIN_INIT_SYMBOL ": not a hal plugin");
  const hal_plugin_host_info host{sizeof(hal_plugin_host_info), HAL_PLUGIN_ABI_MAJOR,
                                  HAL_PLUGIN_ABI_MINOR, kVersion.data(), path.c_str()};
  const hal_plugin_api* api = nullptr;
  const hal_status status = init(&host, &api);
  library.api = api;
  if (status != HAL_STATUS_OK) {
    const std::string message =
        api && api->last_error && api->last_error() ? api->last_error() : "no message";
    throw Error(status == HAL_STATUS_ABI_MISMATCH ? ErrorCode::PluginAbiMismatch
                                                  : ErrorCode::BackendUnavailable,
                "plugin " + path + ": " HAL_PLUGIN_INIT_SYMBOL " failed with " +
                    status_name(status) + ": " + message,
                status);
  }
  check_plugin_table(api, path);
  library.handle = handle;
  guard.handle = nullptr;
  return library;
}

}  // namespace hal::plugin

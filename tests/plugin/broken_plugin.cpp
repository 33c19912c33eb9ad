// Plugins that fail to load, each in its own way, built from this file with one of:
// BROKEN_MAJOR (speaks plugin ABI 2.0), BROKEN_INIT (its init fails with a message),
// BROKEN_NO_ENTRY (exports no hal_plugin_init), BROKEN_TABLE (its init succeeds with a table
// whose functions, but last_error, are NULL).
#include <cstddef>

#include "hal/plugin.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

#if defined(BROKEN_NO_ENTRY)
EXPORT int not_a_hal_plugin() { return 0; }
#else
namespace {

const char* last_error() { return "no such hardware in this machine"; }

hal_plugin_api make_api() {
  hal_plugin_api api{};
  api.struct_size = sizeof api;
#ifdef BROKEN_MAJOR
  api.abi_major = HAL_PLUGIN_ABI_MAJOR + 1;
#else
  api.abi_major = HAL_PLUGIN_ABI_MAJOR;
#endif
  api.abi_minor = 0;
  api.name = "broken";
  api.version = "0";
  api.last_error = last_error;
  return api;
}

const hal_plugin_api kApi = make_api();

}  // namespace

EXPORT hal_status hal_plugin_init(const hal_plugin_host_info*, const hal_plugin_api** api) {
  *api = &kApi;
#ifdef BROKEN_INIT
  return HAL_STATUS_UNAVAILABLE;
#else
  return HAL_STATUS_OK;
#endif
}
#endif

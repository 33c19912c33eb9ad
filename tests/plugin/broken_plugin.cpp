// Plugins that fail to load, each in its own way, built from this file with one of:
// BROKEN_MAJOR (speaks plugin ABI 2.0), BROKEN_INIT (its init fails with a message),
// BROKEN_NO_ENTRY (exports no hal_plugin_init), BROKEN_TABLE (its init succeeds with a table
// whose functions, but last_error, are NULL), BROKEN_THROWS (its init throws a C++ exception),
// BROKEN_SHORT (a table of 8 bytes, too short for its version), BROKEN_SHORT_INIT (that table,
// and its init fails: the table's last_error lies past the 8 bytes, so hal must not call it),
// BROKEN_KEY (its init leaves a
// thread-local destructor of its own on the calling thread, then fails: unloading it then
// would crash that thread's exit).
#include <pthread.h>

#include <cstddef>
#include <stdexcept>

#include "hal/plugin.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

#if defined(BROKEN_NO_ENTRY)
EXPORT int not_a_hal_plugin() { return 0; }
#else
namespace {

#ifdef BROKEN_SHORT_INIT
const char* last_error() { return "read past the table's 8 bytes"; }
#else
const char* last_error() { return "no such hardware in this machine"; }
#endif

hal_plugin_api make_api() {
  hal_plugin_api api{};
#if defined(BROKEN_SHORT) || defined(BROKEN_SHORT_INIT)
  api.struct_size = 8;
#else
  api.struct_size = sizeof api;
#endif
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

#ifdef BROKEN_KEY
void forget(void* value) { static_cast<void>(value); }
#endif

}  // namespace

EXPORT hal_status hal_plugin_init(const hal_plugin_host_info*, const hal_plugin_api** api) {
  *api = &kApi;
#if defined(BROKEN_THROWS)
  throw std::runtime_error("vendor runtime: no license");
#elif defined(BROKEN_KEY)
  pthread_key_t key;
  static int value = 1;
  if (pthread_key_create(&key, forget) == 0) pthread_setspecific(key, &value);
  return HAL_STATUS_UNAVAILABLE;
#elif defined(BROKEN_INIT) || defined(BROKEN_SHORT_INIT)
  return HAL_STATUS_UNAVAILABLE;
#else
  return HAL_STATUS_OK;
#endif
}
#endif

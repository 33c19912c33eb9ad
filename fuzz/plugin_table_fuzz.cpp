// libFuzzer target: the checks hal makes of the table a plugin returns. The input decides the
// table's size, versions, name and which functions are NULL; hal must accept it or refuse it
// with PluginAbiMismatch or BackendUnavailable, never crash or read past the table.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backends/plugin/plugin_library.hpp"
#include "hal/error.hpp"

namespace {

const char* last_error() { return "fuzzed"; }
hal_status any_call() { return HAL_STATUS_OK; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 12) return 0;
  // A table of the size the input says (at most the real one's), on an allocation of exactly
  // that size, so that AddressSanitizer catches a read past what the plugin gave.
  uint32_t declared = 0, major = 0, minor = 0;
  std::memcpy(&declared, data, 4);
  std::memcpy(&major, data + 4, 4);
  std::memcpy(&minor, data + 8, 4);
  data += 12;
  size -= 12;
  const size_t bytes = std::max<size_t>(declared % (sizeof(hal_plugin_api) + 1),
                                        offsetof(hal_plugin_api, abi_minor) + sizeof(uint32_t));
  auto storage = std::make_unique<unsigned char[]>(bytes);
  hal_plugin_api api{};
  api.struct_size = declared % (sizeof(hal_plugin_api) + 1);
  api.abi_major = major % 4;
  api.abi_minor = minor;
  const std::string name(reinterpret_cast<const char*>(data), std::min<size_t>(size, 8));
  api.name = name.c_str();
  api.version = "fuzz";
  // Every function slot: set, or NULL where the input's bits say so.
  auto* slots = reinterpret_cast<void (**)()>(reinterpret_cast<unsigned char*>(&api) +
                                              offsetof(hal_plugin_api, last_error));
  const size_t slot_count =
      (sizeof(hal_plugin_api) - offsetof(hal_plugin_api, last_error)) / sizeof(void (*)());
  for (size_t i = 0; i < slot_count; ++i) {
    const bool present = i / 8 + 8 < size ? (data[8 + i / 8] >> (i % 8)) & 1 : true;
    slots[i] = present ? reinterpret_cast<void (*)()>(&any_call) : nullptr;
  }
  api.last_error = last_error;
  std::memcpy(storage.get(), &api, bytes);
  try {
    hal::plugin::check_plugin_table(reinterpret_cast<const hal_plugin_api*>(storage.get()),
                                    "fuzz.so");
  } catch (const hal::Error& error) {
    if (error.code() != hal::ErrorCode::PluginAbiMismatch &&
        error.code() != hal::ErrorCode::BackendUnavailable)
      std::abort();
  }
  return 0;
}

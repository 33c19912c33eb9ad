// One plugin's shared library, loaded and checked: the table it returned, and how to call it.
#pragma once

#include <cstddef>
#include <string>

#include "hal/error.hpp"
#include "hal/plugin.h"

namespace hal::plugin {

struct PluginLibrary {
  std::string path;
  void* handle = nullptr;  // never closed: the plugin's objects live as long as the process
  const hal_plugin_api* api = nullptr;

  std::string name() const { return api->name; }
  std::string abi_version() const {
    return std::to_string(api->abi_major) + "." + std::to_string(api->abi_minor);
  }
  // The plugin's message for the calling thread's last failed call.
  std::string last_error() const;
  // Throws hal::Error for a failed status: the code is the status's, the message names
  // `what` (the device and the operation) and the plugin's own message.
  void check(hal_status status, const std::string& what) const;
};

// Checks the table a plugin's init returned (`path` names the plugin in messages): present,
// of hal's major version, long enough for every required function, none of them NULL, and a
// valid name. Throws hal::Error (PluginAbiMismatch, BackendUnavailable) saying what is wrong.
void check_plugin_table(const hal_plugin_api* api, const std::string& path);

// Why the file at `path` must not reach dlopen, empty when it may: it is an ELF shared library
// for this machine (class, byte order, architecture) whose headers and segments all lie within
// the file. dlopen maps a file cut short (a partial copy) and the process dies of SIGBUS where
// the file ends, so this reads the headers with pread first. The message names the file.
std::string elf_defect(const std::string& path);

// Loads the plugin at `path` and checks what it returned: the entry point, the ABI's major
// version (PluginAbiMismatch naming both versions), the table's required functions, the name.
// Throws hal::Error saying what failed (elf_defect's reason, before dlopen); a library that
// failed before hal_plugin_init ran is closed again, one whose init ran stays mapped (it may have
// started threads).
PluginLibrary load_plugin(const std::string& path);

}  // namespace hal::plugin

// The table's entry `field`, or nullptr where the plugin's table ends before it (a plugin of an
// older minor version) or leaves it out.
#define HAL_PLUGIN_FN(library, field)                                                             \
  ((offsetof(hal_plugin_api, field) + sizeof((library).api->field) <= (library).api->struct_size) \
       ? (library).api->field                                                                     \
       : nullptr)

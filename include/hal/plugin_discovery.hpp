// Plugins: shared libraries that speak the C ABI of hal/plugin.h, found in HAL_PLUGIN_PATH
// (directories or files, ':'-separated) and in the hal/plugins folder next to libhal. Each one
// that loads becomes a backend named as the plugin says ("sim" -> devices "sim:0", ...). One
// that fails to load never stops hal: plugins() says why.
#pragma once

#include <string>
#include <vector>

namespace hal {

struct PluginInfo {
  std::string path;         // the file examined
  bool loaded = false;      // its backend is registered
  std::string name;         // the backend's name, when the plugin got as far as saying it
  std::string abi_version;  // of plugin.h that it was built against ("1.0"), when known
  std::string version;      // the plugin's own version, when known
  std::string reason;       // why it did not load; empty when it did
};

// Every candidate file, in the order examined: HAL_PLUGIN_PATH first, then the install's
// plugin folder. Loads them on first call (the registry does so too).
std::vector<PluginInfo> plugins();

}  // namespace hal

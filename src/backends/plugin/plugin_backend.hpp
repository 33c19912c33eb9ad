// Plugins as backends: finding the candidate files, loading them, and one Backend per plugin
// that loaded.
#pragma once

#include <memory>
#include <vector>

#include "backends/plugin/plugin_library.hpp"
#include "hal/backend.hpp"
#include "hal/plugin_discovery.hpp"

namespace hal::plugin {

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<const PluginLibrary> library)
      : library_(std::move(library)) {}
  std::string name() const override { return library_->name(); }
  BackendProbe probe() override;

 private:
  std::shared_ptr<const PluginLibrary> library_;
};

struct Discovery {
  std::vector<PluginInfo> candidates;
  std::vector<std::shared_ptr<Backend>> backends;  // one per plugin that loaded
};

// Loads every candidate once per process; `taken` names backends already registered, which a
// plugin may not reuse.
const Discovery& discover_plugins(const std::vector<std::string>& taken);

}  // namespace hal::plugin

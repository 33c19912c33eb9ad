// The backends this build of hal knows by name. Defined in src/backends/builtin.cpp, so that
// core names no backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hal/backend.hpp"

namespace hal::detail {

struct BuiltinBackend {
  std::string name;
  std::function<std::shared_ptr<Backend>()> make;  // empty when not compiled in
  std::string absent_reason;                       // why not compiled in
};

std::vector<BuiltinBackend> builtin_backends();
// The backends of the plugins that load (see hal/plugin_discovery.hpp), whose names are not in
// `taken`.
std::vector<std::shared_ptr<Backend>> plugin_backends(const std::vector<std::string>& taken);

}  // namespace hal::detail

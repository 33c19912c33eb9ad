#include "hal/version.hpp"

#include "core/builtin_backends.hpp"

namespace hal {

std::string_view version() noexcept { return kVersion; }

std::vector<std::string> compiled_backends() {
  std::vector<std::string> names;
  for (const auto& backend : detail::builtin_backends())
    if (backend.make) names.push_back(backend.name);
  return names;
}

}  // namespace hal

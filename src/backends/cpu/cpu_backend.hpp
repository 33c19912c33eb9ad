// The CPU backend: always there, one device for the whole host.
#pragma once

#include "hal/backend.hpp"

namespace hal::cpu {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  BackendProbe probe() override;
};

}  // namespace hal::cpu

// The OpenCL backend: every device of every platform the ICD loader finds.
#pragma once

#include "hal/backend.hpp"

namespace hal::opencl {

class OpenClBackend final : public Backend {
 public:
  std::string name() const override { return "opencl"; }
  // Opens libOpenCL.so.1; without it, or without a platform with devices, the backend is
  // unavailable with the reason.
  BackendProbe probe() override;
};

}  // namespace hal::opencl

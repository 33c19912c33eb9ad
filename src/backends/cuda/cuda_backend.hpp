// The CUDA backend: every NVIDIA GPU the driver shows (CUDA_VISIBLE_DEVICES applies), through
// the driver API opened at run time.
#pragma once

#include "hal/backend.hpp"

namespace hal::cuda {

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  BackendProbe probe() override;
};

}  // namespace hal::cuda

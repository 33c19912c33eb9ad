// The device address of a CUDA tensor's first element, for a CUDA-aware MPI; nullptr for
// other devices, and in builds without the CUDA backend.
#pragma once

#include "hal/tensor.hpp"

namespace hal::dist::detail {

void* mpi_device_pointer(const Tensor& tensor);

}  // namespace hal::dist::detail

#include "dist/mpi/device_pointer.hpp"

#ifdef HAL_HAVE_CUDA
#include "backends/cuda/cuda_buffer.hpp"
#endif

namespace hal::dist::detail {

void* mpi_device_pointer(const Tensor& tensor) {
#ifdef HAL_HAVE_CUDA
  if (tensor.device().info().backend() == "cuda") {
    const CUdeviceptr address = cuda::address_of(
        *tensor.storage().impl(), static_cast<size_t>(tensor.offset()) * tensor.element_size());
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }
#endif
  (void)tensor;
  return nullptr;
}

}  // namespace hal::dist::detail

#include "hal/kernel.hpp"

#include "hal/backend.hpp"

namespace hal {

std::string_view to_string(KernelLanguage language) noexcept {
  switch (language) {
    case KernelLanguage::portable:
      return "portable";
    case KernelLanguage::opencl_c:
      return "opencl_c";
    case KernelLanguage::cuda:
      return "cuda";
    case KernelLanguage::native:
      return "native";
  }
  return "unknown";
}

std::string_view to_string(KernelOrigin origin) noexcept {
  switch (origin) {
    case KernelOrigin::host:
      return "host";
    case KernelOrigin::compiled:
      return "compiled";
    case KernelOrigin::disk_cache:
      return "disk_cache";
    case KernelOrigin::memory_cache:
      return "memory_cache";
  }
  return "unknown";
}

const std::string& Kernel::name() const {
  if (!impl_)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Kernel");
  return impl_->name();
}

const std::optional<std::vector<KernelParam>>& Kernel::params() const {
  if (!impl_)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Kernel");
  return impl_->params();
}

Kernel make_host_kernel(std::string name, HostKernelFn fn,
                        std::optional<std::vector<KernelParam>> params) {
  if (!fn) throw Error(ErrorCode::InvalidArgument, "host_kernel '" + name + "': empty function");
  auto kernel = std::make_shared<HostKernelImpl>(std::move(name), std::move(fn));
  kernel->set_params(std::move(params));
  return Kernel(std::move(kernel));
}

void* KernelArgs::buffer_data(size_t i) const {
  if (i >= args_.size() || args_[i].kind() != KernelArg::Kind::buffer)
    throw Error(ErrorCode::InvalidArgument, "kernel argument " + std::to_string(i) +
                                                " is not a buffer (" +
                                                std::to_string(args_.size()) + " arguments)");
  return args_[i].buffer().host_data();
}

void KernelArgs::check_scalar(size_t i, size_t bytes) const {
  if (i >= args_.size() || args_[i].kind() != KernelArg::Kind::scalar)
    throw Error(ErrorCode::InvalidArgument, "kernel argument " + std::to_string(i) +
                                                " is not a scalar (" +
                                                std::to_string(args_.size()) + " arguments)");
  if (args_[i].scalar_size() != bytes)
    throw Error(ErrorCode::InvalidArgument, "kernel argument " + std::to_string(i) + " is a " +
                                                std::to_string(args_[i].scalar_size()) +
                                                "-byte scalar, read as " + std::to_string(bytes) +
                                                " bytes");
}

}  // namespace hal

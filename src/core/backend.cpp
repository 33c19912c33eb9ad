// Default methods of the backend interfaces (backend.hpp).
#include "hal/backend.hpp"

#include "caching_allocator.hpp"

namespace hal {

void throw_unsupported(const DeviceImpl& device, std::string_view what) {
  throw Error(ErrorCode::Unsupported, device.info().id + " does not support " + std::string(what));
}

double EventImpl::elapsed_ms_since(const EventImpl&) const {
  throw_unsupported(device(), "event timing");
}

void StreamImpl::launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig&,
                        std::span<const KernelArg>) {
  throw_unsupported(device(), "launching kernel '" + kernel->name() + "'");
}

std::shared_ptr<StreamImpl> DeviceImpl::transfer_stream() {
  std::call_once(transfer_once_, [this] { transfer_stream_ = create_stream(); });
  return transfer_stream_;
}

const std::shared_ptr<detail::CachingAllocator>& DeviceImpl::caching_allocator(MemoryKind kind) {
  std::lock_guard lock(allocators_mutex_);
  auto& allocator = allocators_[static_cast<size_t>(kind)];
  if (!allocator) allocator = std::make_shared<detail::CachingAllocator>(*this, kind);
  return allocator;
}

void DeviceImpl::shutdown() {
  std::array<std::shared_ptr<detail::CachingAllocator>, 3> allocators;
  {
    std::lock_guard lock(allocators_mutex_);
    allocators.swap(allocators_);
  }
  for (auto& allocator : allocators)
    if (allocator) allocator->empty_cache();
  transfer_stream_.reset();
}

}  // namespace hal

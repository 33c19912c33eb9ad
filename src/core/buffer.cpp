#include "hal/buffer.hpp"

#include "hal/backend.hpp"
#include "hal/device.hpp"

namespace hal {
namespace {

const BufferImpl& checked(const std::shared_ptr<BufferImpl>& impl) {
  if (!impl)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Buffer");
  return *impl;
}

}  // namespace

size_t Buffer::size() const { return checked(impl_).size(); }
MemoryKind Buffer::kind() const { return checked(impl_).kind(); }
Device Buffer::device() const { return Device(checked(impl_).device_ptr()); }
bool Buffer::host_accessible() const { return checked(impl_).host_pointer() != nullptr; }

void* Buffer::host_data() const {
  void* pointer = checked(impl_).host_pointer();
  if (!pointer)
    throw Error(ErrorCode::Unsupported, "the host cannot address this " +
                                            std::string(to_string(impl_->kind())) + " buffer of " +
                                            impl_->device().info().id +
                                            "; copy it to the host with Stream::copy_to_host");
  return pointer;
}

}  // namespace hal

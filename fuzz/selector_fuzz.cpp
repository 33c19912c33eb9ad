// libFuzzer target: the HAL_DEVICES selector parser. Any text either parses, and then matches
// devices without failing, or is refused with InvalidArgument; nothing else may happen.
#include <cstdlib>
#include <string_view>

#include "hal/error.hpp"
#include "hal/visible_devices.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const hal::DeviceSelector selector = hal::DeviceSelector::parse(text);
    hal::DeviceInfo info;
    for (const char* id : {"cpu:0", "opencl:1", "cuda:12", "sim:3"}) {
      info.id = id;
      info.uuid = "0123abcd-4567-89ef-0123-456789abcdef";
      info.kind = hal::DeviceKind::gpu;
      (void)selector.matches(info);
    }
    try {
      selector.check_backends({"cpu", "opencl", "cuda", "sim"});
    } catch (const hal::Error& error) {
      if (error.code() != hal::ErrorCode::InvalidArgument) std::abort();
    }
  } catch (const hal::Error& error) {
    if (error.code() != hal::ErrorCode::InvalidArgument) std::abort();
  }
  return 0;
}

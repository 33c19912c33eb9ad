// DeviceSelector: the HAL_DEVICES grammar, modeled on oneAPI's ONEAPI_DEVICE_SELECTOR.
//
//   selector := term (';' term)*
//   term     := ['!'] backend ':' device (',' device)*
//   backend  := a backend name ("cpu", "opencl", "cuda", ...) or '*'
//   device   := '*' | index | 'cpu' | 'gpu' | 'accelerator' | uuid-prefix
//
// An index is decimal; a UUID prefix is at least 4 hexadecimal digits (dashes allowed) that
// are not all decimal. Matching ignores case and spaces around tokens. A device is visible
// when it matches a positive term (or there is none) and matches no '!' term.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hal/device_info.hpp"

namespace hal {

class DeviceSelector {
 public:
  // Everything visible.
  DeviceSelector() = default;
  // Throws InvalidArgument quoting `text` and saying what was expected where.
  static DeviceSelector parse(std::string_view text);

  bool matches(const DeviceInfo& info) const;
  // False when no device of `backend` can match: the registry does not probe (load the driver
  // of) such a backend for the visible list, so `HAL_DEVICES=cpu:*` starts without OpenCL's or
  // Vulkan's drivers.
  bool may_show_backend(std::string_view backend) const;
  // Throws InvalidArgument if a term names a backend not in `known`.
  void check_backends(const std::vector<std::string>& known) const;
  const std::string& text() const { return text_; }

 private:
  struct DeviceTerm {
    enum class Kind : uint8_t { any, index, device_kind, uuid_prefix } kind = Kind::any;
    uint64_t index = 0;
    DeviceKind device_kind = DeviceKind::cpu;
    std::string uuid_prefix;  // lower-case hex, no dashes
  };
  struct Term {
    bool discard = false;
    std::string backend;  // lower-case; "*" for any
    std::vector<DeviceTerm> devices;
  };
  static bool term_matches(const Term& term, const DeviceInfo& info);

  std::string text_;
  std::vector<Term> terms_;
};

}  // namespace hal

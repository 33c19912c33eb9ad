// hal's own programs (kernels/**.kernel, embedded in the library) compiled for a device. The
// device keeps each by (program, entry, defines): a key of a few dozen bytes, where
// Device::compile's key for any source holds the whole source text, which the ops would copy
// and hash on every call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hal/device.hpp"

namespace hal::detail {

// `program` is a name embedded_kernel knows ("ops/elementwise"); `generated`, code appended to
// it (a fused chain's kernel: portable_fused.cpp), is part of the key.
Kernel compile_program(const Device& device, std::string_view program, std::string_view entry,
                       const std::vector<std::string>& defines, std::string_view generated = {});

// `defines` and the two that keep `entry` the program's only kernel (HAL_ENTRY and
// HAL_ENTRY_<entry>, which guard each kernel of a program with several), as compile_program
// passes them to the device.
std::vector<std::string> entry_defines(std::vector<std::string> defines, std::string_view entry);

}  // namespace hal::detail

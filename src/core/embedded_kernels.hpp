// The portable kernels of kernels/, built into the library (cmake/embed_kernels.cmake).
#pragma once

#include <string_view>

namespace hal {

// The source of kernels/<name>.kernel ("tensor/strided_copy"). Throws Internal for a name that
// is not there: a bug in hal.
std::string_view embedded_kernel(std::string_view name);

}  // namespace hal

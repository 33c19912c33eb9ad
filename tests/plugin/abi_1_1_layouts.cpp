// Compile-time checks that hal's copies of the 1.1 structs (src/backends/plugin/plugin_abi_1_1.hpp)
// are laid out as the 1.1 header itself lays them out: this file sees tests/plugin/abi_1_1's
// plugin.h, whose include guard keeps the current header out.
#include "abi_1_1/hal/plugin.h"
// The 1.1 header first: plugin_abi_1_1.hpp's own include of hal/plugin.h is then skipped.
#include <cstddef>

#include "backends/plugin/plugin_abi_1_1.hpp"

namespace {

using hal::plugin::abi_1_1::KernelArg;
using hal::plugin::abi_1_1::Tensor;

static_assert(HAL_PLUGIN_ABI_MAJOR == 1 && HAL_PLUGIN_ABI_MINOR == 1, "the 1.1 header is in use");

#define SAME_FIELD(ours, theirs, field) \
  static_assert(offsetof(ours, field) == offsetof(theirs, field), #field)
static_assert(sizeof(Tensor) == sizeof(hal_plugin_tensor));
SAME_FIELD(Tensor, hal_plugin_tensor, buffer);
SAME_FIELD(Tensor, hal_plugin_tensor, offset);
SAME_FIELD(Tensor, hal_plugin_tensor, dtype);
SAME_FIELD(Tensor, hal_plugin_tensor, rank);
SAME_FIELD(Tensor, hal_plugin_tensor, shape);
SAME_FIELD(Tensor, hal_plugin_tensor, strides);
static_assert(sizeof(KernelArg) == sizeof(hal_plugin_kernel_arg));
SAME_FIELD(KernelArg, hal_plugin_kernel_arg, kind);
SAME_FIELD(KernelArg, hal_plugin_kernel_arg, size);
SAME_FIELD(KernelArg, hal_plugin_kernel_arg, buffer);
SAME_FIELD(KernelArg, hal_plugin_kernel_arg, offset);
SAME_FIELD(KernelArg, hal_plugin_kernel_arg, value);
#undef SAME_FIELD

}  // namespace

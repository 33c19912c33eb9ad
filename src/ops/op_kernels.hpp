// The implementations the op table holds for each op, registered in op_kernels.cpp.
#pragma once

#include <span>

#include "ops/op_table.hpp"

namespace hal::ops {

std::span<const OpImplementation> implementations_of(const OpDescriptor& op);

}  // namespace hal::ops

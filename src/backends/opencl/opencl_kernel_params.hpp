// A kernel's parameters as the OpenCL driver reflects them (clGetKernelArgInfo).
#pragma once

#include <optional>
#include <vector>

#include "backends/opencl/cl_api.hpp"
#include "hal/kernel.hpp"

namespace hal::opencl {

// Build options that make the driver keep what reflected_params reads.
inline constexpr const char* kKernelArgInfoOption = "-cl-kernel-arg-info";

// The parameters of `kernel`, which takes `count` arguments; nullopt when the driver has no
// argument information (a program built without kKernelArgInfoOption, or, on some drivers,
// one created from a binary).
std::optional<std::vector<KernelParam>> reflected_params(const ClApi& api, cl_kernel kernel,
                                                         cl_uint count);

// Fills the scalar sizes that reflection leaves at 0 (any size) where `source` defines the type
// (detail::declared_type_sizes): the driver names a typedef's type as the source spells it
// ("real") without a size, and a double passed for a float typedef reached the kernel as a
// wrong value. Vectors, structs and types from headers stay at any size.
void size_typedef_scalars(std::vector<KernelParam>& params, const KernelSource& source,
                          const CompileOptions& options);

}  // namespace hal::opencl

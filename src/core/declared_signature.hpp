// The signature a kernel's source declares for its entry point, read by hal itself: for the
// backends whose drivers offer no reflection (CUDA, plugins), and for OpenCL programs whose
// binaries lack the arguments' information.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hal/kernel.hpp"

namespace hal::detail {

// The parameters of `source.name` as its definition declares them, read from portable, OpenCL
// C or CUDA C++ source (native gives nullopt). Strict: nullopt whenever the source does not
// say unambiguously, since no check beats a check against a wrong signature: no definition or
// several that disagree, preprocessor lines inside the parameter list, macros whose values
// are not plain words (or that have several values), typedefs that hide a pointer or a
// struct, arrays, references, templates, types it does not know.
std::optional<std::vector<KernelParam>> declared_params(const KernelSource& source,
                                                        const CompileOptions& options = {});

// The sizes in bytes of scalar `types` ("real", "unsigned int") as `source` defines them: built
// in, or typedefs of those that every definition agrees on, macros followed as declared_params
// does; 0 for a type it cannot size (a vector, a struct, a typedef from a header, typedefs that
// differ in size). OpenCL's reflection names a typedef's type ("real") without its size.
std::vector<size_t> declared_type_sizes(const KernelSource& source, const CompileOptions& options,
                                        std::span<const std::string> types);

}  // namespace hal::detail

// KServe v2's tensor datatypes ("FP32", "INT64", "BOOL", ...) and hal's dtypes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hal/dtype.hpp"

namespace hal::serve {

std::string kserve_datatype(DType dtype);
// nullopt for a name KServe does not define or hal has no dtype for (BYTES, UINT16, ...).
std::optional<DType> parse_kserve_datatype(std::string_view name);

}  // namespace hal::serve

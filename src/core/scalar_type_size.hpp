// Sizes of the C scalar types kernels take by value, as OpenCL C, CUDA C++ (64-bit Linux) and
// hal's portable dialect agree on them. Shared by the declared-signature reader and OpenCL's
// reflection, which both know a parameter's type only by name.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace hal::detail {

// The size of the type spelled by `words` ({"unsigned", "int"}, {"uint"}, {"float"}): 0 for a
// built-in scalar whose size depends on the device (size_t, ptrdiff_t), nullopt for words that
// name no built-in scalar type (typedefs, structs, vectors, long double, nonsense).
std::optional<size_t> builtin_scalar_bytes(std::span<const std::string_view> words);
// The same for a type name as one string, words separated by spaces ("unsigned int").
std::optional<size_t> builtin_scalar_bytes(std::string_view type);

}  // namespace hal::detail

// Ops on devices that run them themselves (StreamImpl::run_builtin_op: plugins), for the op
// definitions: operands as strided views, no kernels.
#pragma once

#include <vector>

#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

namespace hal::ops {

// plugin.h takes views of at most this many dimensions.
inline constexpr size_t kMaxBuiltinRank = 8;

// Binary ops the built-in table has (add ... minimum; not pow or comparisons).
inline bool has_builtin(Binary op) { return op <= Binary::minimum; }

void builtin_binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out, Stream& stream);
void builtin_unary(Unary op, const Tensor& x, const Tensor& out, Stream& stream);
void builtin_reduce(Reduce op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out,
                    Stream& stream);

}  // namespace hal::ops

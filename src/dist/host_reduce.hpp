// Reductions of element arrays on the host: the MPI engine's user ops for f16 and bf16, its
// small all-reduce (gathered, then reduced here in rank order), avg's division, and the local
// engine's reductions on devices whose op tables lack the dtype.
#pragma once

#include <cstddef>

#include "hal/dist.hpp"
#include "hal/dtype.hpp"

namespace hal::dist::detail {

// dst[i] = dst[i] (op) src[i] for `count` elements of `dtype`. Integers wrap; f16 and bf16 are
// computed in f32 and rounded once; bool is logic (sum, max: or; prod, min: and). avg adds
// (divide_by_ranks finishes it).
void reduce_into(DType dtype, ReduceOp op, void* dst, const void* src, size_t count);

// data[i] /= ranks, for avg (floating dtypes; f16 and bf16 rounded once).
void divide_by_ranks(DType dtype, void* data, size_t count, int ranks);

// Whether `op` applies to `dtype`: avg needs a floating dtype.
bool reduces(ReduceOp op, DType dtype);

}  // namespace hal::dist::detail

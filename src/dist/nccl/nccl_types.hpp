// hal's dtypes and reductions as NCCL names them. bool travels as bytes of 0 and 1, reduced as
// logic (sum and max: ncclMax, "or"; prod and min: ncclMin, "and").
#pragma once

#include <nccl.h>

#include "hal/dist.hpp"

namespace hal::dist::detail {

ncclDataType_t nccl_dtype(DType dtype);
ncclRedOp_t nccl_op(ReduceOp op, DType dtype);

}  // namespace hal::dist::detail

#include "dist/nccl/nccl_types.hpp"

#include "hal/error.hpp"

namespace hal::dist::detail {

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f64:
      return ncclFloat64;
    case DType::i8:
      return ncclInt8;
    case DType::u8:
    case DType::boolean:
      return ncclUint8;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
  }
  throw Error(ErrorCode::Internal, "nccl_dtype: unknown dtype");
}

ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  if (dtype == DType::boolean)
    return (op == ReduceOp::sum || op == ReduceOp::max) ? ncclMax : ncclMin;
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::prod:
      return ncclProd;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

}  // namespace hal::dist::detail

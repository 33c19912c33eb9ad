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
    case DType::u32:
      return ncclUint32;
    case DType::u64:
      return ncclUint64;
    case DType::i16:
    case DType::u16:
      throw Error(ErrorCode::Unsupported,
                  std::string("NCCL has no ") + (dtype == DType::i16 ? "int16" : "uint16") +
                      " data type: collectives of " + std::string(to_string(dtype)) +
                      " tensors need the MPI or local engine, or a cast to i32");
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

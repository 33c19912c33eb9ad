// out = op(x) for integers: neg, abs, relu (wrapping as two's complement does; abs and relu of
// unsigned integers are x). Flat or strided.
// hal-variant unary_i32 -DT=int -DBYTES=4
// hal-variant unary_i64 -DT=int64_t -DBYTES=8
// hal-variant unary_i8 -DT=int8_t -DBYTES=1
// hal-variant unary_u8 -DT=uint8_t -DBYTES=1
// hal-variant unary_i16 -DT=int16_t -DBYTES=2
// hal-variant unary_u16 -DT=uint16_t -DBYTES=2
// hal-variant unary_u32 -DT=uint -DBYTES=4
// hal-variant unary_u64 -DT=uint64_t -DBYTES=8
#version 450
#include "types.glsl"
#include "common.glsl"
#define DIMS 6
#include "strided.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_x, count;
  uint shape[DIMS];
  uint stride_x[DIMS];
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ix = STRIDED != 0 ? walk(i, args.shape, args.stride_x) : i;
  const T x = x_[args.buffer_offset[1] / BYTES + args.offset_x + ix];
  T y = x;
  if (OP == 0) y = T(0) - x;
  if (OP == 1) y = x < T(0) ? T(0) - x : x;
  if (OP == 2) y = x > T(0) ? x : T(0);
  out_[args.buffer_offset[0] / BYTES + i] = y;
}

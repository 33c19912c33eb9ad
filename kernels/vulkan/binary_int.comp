// out = op(a, b) for integers: add, sub, mul, div (truncating; x / 0 is 0 and MIN / -1 wraps, as
// on the CPU), maximum, minimum; wrapping as two's complement does. Flat or strided.
// hal-variant binary_i32 -DT=int -DBYTES=4
// hal-variant binary_i64 -DT=int64_t -DBYTES=8
// hal-variant binary_i8 -DT=int8_t -DBYTES=1
// hal-variant binary_u8 -DT=uint8_t -DBYTES=1 -DUNSIGNED
// hal-variant binary_i16 -DT=int16_t -DBYTES=2
// hal-variant binary_u16 -DT=uint16_t -DBYTES=2 -DUNSIGNED
// hal-variant binary_u32 -DT=uint -DBYTES=4 -DUNSIGNED
// hal-variant binary_u64 -DT=uint64_t -DBYTES=8 -DUNSIGNED
#version 450
#include "types.glsl"
#include "common.glsl"
#define DIMS 6
#include "strided.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_a, offset_b, count;
  uint shape[DIMS];
  uint stride_a[DIMS];
  uint stride_b[DIMS];
} args;

T apply(T a, T b) {
  switch (OP) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
#ifdef UNSIGNED
    case 3: return b == T(0) ? T(0) : a / b;
#else
    case 3: return b == T(0) ? T(0) : (b == T(-1) ? T(0) - a : a / b);
#endif
    case 4: return max(a, b);
    case 5: return min(a, b);
  }
  return T(0);
}

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ia = STRIDED != 0 ? walk(i, args.shape, args.stride_a) : i;
  const uint ib = STRIDED != 0 ? walk(i, args.shape, args.stride_b) : i;
  out_[args.buffer_offset[0] / BYTES + i] =
      apply(a_[args.buffer_offset[1] / BYTES + args.offset_a + ia],
            b_[args.buffer_offset[2] / BYTES + args.offset_b + ib]);
}

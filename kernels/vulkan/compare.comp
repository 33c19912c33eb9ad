// out = a OP b as bool (one byte, 0 or 1): eq, ne, lt, le, gt, ge; NaN compares unequal to all.
// Flat or strided.
// hal-variant compare_f32 -DT=float -DBYTES=4
// hal-variant compare_i32 -DT=int -DBYTES=4
// hal-variant compare_i64 -DT=int64_t -DBYTES=8
// hal-variant compare_bool -DT=uint8_t -DBYTES=1
// hal-variant compare_f16 -DT=float16_t -DBYTES=2
// hal-variant compare_f64 -DT=double -DBYTES=8
// hal-variant compare_i8 -DT=int8_t -DBYTES=1
// hal-variant compare_u8 -DT=uint8_t -DBYTES=1
// hal-variant compare_i16 -DT=int16_t -DBYTES=2
// hal-variant compare_u16 -DT=uint16_t -DBYTES=2
// hal-variant compare_u32 -DT=uint -DBYTES=4
// hal-variant compare_u64 -DT=uint64_t -DBYTES=8
#version 450
#include "types.glsl"
#include "common.glsl"
#define DIMS 6
#include "strided.glsl"

layout(constant_id = 0) const uint OP = 0;  // Binary::eq is 0 here
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { uint8_t out_[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_a, offset_b, count;
  uint shape[DIMS];
  uint stride_a[DIMS];
  uint stride_b[DIMS];
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ia = STRIDED != 0 ? walk(i, args.shape, args.stride_a) : i;
  const uint ib = STRIDED != 0 ? walk(i, args.shape, args.stride_b) : i;
  const T a = a_[args.buffer_offset[1] / BYTES + args.offset_a + ia];
  const T b = b_[args.buffer_offset[2] / BYTES + args.offset_b + ib];
  bool result = false;
  switch (OP) {
    case 0: result = a == b; break;
    case 1: result = a != b; break;
    case 2: result = a < b; break;
    case 3: result = a <= b; break;
    case 4: result = a > b; break;
    case 5: result = a >= b; break;
  }
  out_[args.buffer_offset[0] + i] = uint8_t(result ? 1 : 0);
}

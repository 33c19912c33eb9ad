// out = cond ? a : b for elements of 1, 2, 4 or 8 bytes (moved as bits), cond one byte. Flat or
// strided over up to 4 merged dimensions.
// hal-variant where_1 -DT=uint8_t -DBYTES=1
// hal-variant where_2 -DT=uint16_t -DBYTES=2
// hal-variant where_4 -DT=uint -DBYTES=4
// hal-variant where_8 -DT=uint64_t -DBYTES=8
#version 450
#include "types.glsl"
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#include "common.glsl"
#define DIMS 4
#include "strided.glsl"

layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer C { uint8_t cond_[]; };
layout(set = 0, binding = 2) readonly buffer A { T a_[]; };
layout(set = 0, binding = 3) readonly buffer B { T b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_c, offset_a, offset_b, count;
  uint shape[DIMS];
  uint stride_c[DIMS];
  uint stride_a[DIMS];
  uint stride_b[DIMS];
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ic = STRIDED != 0 ? walk(i, args.shape, args.stride_c) : i;
  const uint ia = STRIDED != 0 ? walk(i, args.shape, args.stride_a) : i;
  const uint ib = STRIDED != 0 ? walk(i, args.shape, args.stride_b) : i;
  const bool take_a = cond_[args.buffer_offset[1] + args.offset_c + ic] != uint8_t(0);
  out_[args.buffer_offset[0] / BYTES + i] =
      take_a ? a_[args.buffer_offset[2] / BYTES + args.offset_a + ia]
             : b_[args.buffer_offset[3] / BYTES + args.offset_b + ib];
}

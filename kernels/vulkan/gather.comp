// embedding's rows: out[i] = row indices[i / dim] of a contiguous [rows, dim] table, element
// i % dim, moved as bits (2, 4 or 8 bytes); indices i32 or i64. A row outside [0, rows) gives
// zeros: a shader cannot refuse it as the CPU's host kernel does.
// hal-variant gather_2_i32 -DT=uint16_t -DBYTES=2 -DI=int -DI_BYTES=4
// hal-variant gather_4_i32 -DT=uint -DBYTES=4 -DI=int -DI_BYTES=4
// hal-variant gather_8_i32 -DT=uint64_t -DBYTES=8 -DI=int -DI_BYTES=4
// hal-variant gather_2_i64 -DT=uint16_t -DBYTES=2 -DI=int64_t -DI_BYTES=8
// hal-variant gather_4_i64 -DT=uint -DBYTES=4 -DI=int64_t -DI_BYTES=8
// hal-variant gather_8_i64 -DT=uint64_t -DBYTES=8 -DI=int64_t -DI_BYTES=8
#version 450
#include "types.glsl"
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer Indices { I indices_[]; };
layout(set = 0, binding = 2) readonly buffer Table { T table_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_indices, offset_table, dim, rows, count;
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const I row = indices_[args.buffer_offset[1] / I_BYTES + args.offset_indices + i / args.dim];
  const bool inside = row >= I(0) && row < I(args.rows);
  out_[args.buffer_offset[0] / BYTES + i] =
      inside ? table_[args.buffer_offset[2] / BYTES + args.offset_table + uint(row) * args.dim +
                      i % args.dim]
             : T(0);
}

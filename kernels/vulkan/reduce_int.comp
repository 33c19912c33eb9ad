// Integer reductions, one output per work group of 128, laid out as reduce.comp: sum (of i64 and
// u64, which the sum op widens every integer to; wrapping as two's complement does), max and
// min (of every integer type, in int or uint for the narrow ones). No subgroup variant: subgroup
// arithmetic on 64-bit integers needs shaderSubgroupExtendedTypes, which few drivers have.
// hal-variant reduce_i64 -DT=int64_t -DBYTES=8 -DACC=int64_t -DSIGNED
// hal-variant reduce_u64 -DT=uint64_t -DBYTES=8 -DACC=uint64_t
// hal-variant reduce_i32 -DT=int -DBYTES=4 -DACC=int -DSIGNED
// hal-variant reduce_u32 -DT=uint -DBYTES=4 -DACC=uint
// hal-variant reduce_i16 -DT=int16_t -DBYTES=2 -DACC=int -DSIGNED
// hal-variant reduce_u16 -DT=uint16_t -DBYTES=2 -DACC=uint
// hal-variant reduce_i8 -DT=int8_t -DBYTES=1 -DACC=int -DSIGNED
// hal-variant reduce_u8 -DT=uint8_t -DBYTES=1 -DACC=uint
#version 450
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint OP = 0;  // Reduce: sum (0), max (2), min (3)

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset, count, outputs;
  uint kept[4];
  uint kept_stride[4];
  uint reduced[4];
  uint reduced_stride[4];
} args;

shared ACC partial[128];

ACC combine(ACC a, ACC b) {
  if (OP <= 1) return a + b;
  return OP == 2 ? max(a, b) : min(a, b);
}

// The accumulator's least and greatest values: every output folds at least one element, so
// an identity never reaches the result.
ACC identity() {
#ifdef SIGNED
  const ACC lowest = ACC(1) << (BYTES == 8 ? 63 : 31);
#else
  const ACC lowest = ACC(0);
#endif
  return OP <= 1 ? ACC(0) : OP == 2 ? lowest : ~lowest;
}

void main() {
  const uint o = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (o >= args.outputs) return;  // the whole group leaves together
  uint base = args.buffer_offset[1] / BYTES + args.offset;
  uint rest = o;
  for (int d = 3; d >= 0; --d) {
    base += (rest % args.kept[d]) * args.kept_stride[d];
    rest /= args.kept[d];
  }
  const uint lane = gl_LocalInvocationID.x;
  ACC value = identity();
  // r = lane, lane + 128, ... below count, HAL_UNROLL a round (common.glsl).
  const uint rounds = hal_rounds(args.count, 128u);
  for (uint round = 0u; round < rounds; ++round) {
    const uint first = round * 128u * HAL_UNROLL;
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      const uint step = u * 128u + lane;
      if (step < args.count - first) {
        uint at = base, left = first + step;
        for (int d = 3; d >= 0; --d) {
          at += (left % args.reduced[d]) * args.reduced_stride[d];
          left /= args.reduced[d];
        }
        value = combine(value, ACC(x_[at]));
      }
    }
  }
  partial[lane] = value;
  barrier();
  for (uint width = 64; width > 0; width /= 2) {
    if (lane < width) partial[lane] = combine(partial[lane], partial[lane + width]);
    barrier();
  }
  if (lane == 0) out_[args.buffer_offset[0] / BYTES + o] = T(partial[0]);
}

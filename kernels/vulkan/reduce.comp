// One output of a reduction per work group of 128 (sum, mean, max, min): output o folds x at
// offset + position(o in kept) + position(r in reduced) for r in [0, count), each over up to 4
// merged dimensions (src/ops/reduce.hpp's ReduceLayout). f16 accumulates in f32, f64 in f64.
// The _subgroup variants fold each subgroup with subgroup arithmetic, then the subgroups'
// results through shared memory; the others fold the group as a tree in shared memory.
// Integers: sum of i64 and u64 (which the sum op widens every integer to; wrapping as two's
// complement does), max and min of every integer type (the narrow ones in int or uint). They
// have no subgroup variant: subgroup arithmetic on 64-bit integers needs
// shaderSubgroupExtendedTypes, which few drivers have.
// hal-variant reduce -DT=float -DBYTES=4 -DACC=float -DFLOATING
// hal-variant reduce_f16 -DT=float16_t -DBYTES=2 -DACC=float -DFLOATING
// hal-variant reduce_f64 -DT=double -DBYTES=8 -DACC=double -DFLOATING
// hal-variant reduce_subgroup -DT=float -DBYTES=4 -DACC=float -DFLOATING -DSUBGROUP
// hal-variant reduce_f16_subgroup -DT=float16_t -DBYTES=2 -DACC=float -DFLOATING -DSUBGROUP
// hal-variant reduce_f64_subgroup -DT=double -DBYTES=8 -DACC=double -DFLOATING -DSUBGROUP
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
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint OP = 0;  // Reduce: sum, mean, max, min (integers: no mean)

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
#ifdef FLOATING
  if (isnan(a) || isnan(b)) return a + b;
#endif
  return OP == 2 ? max(a, b) : min(a, b);
}

#ifdef FLOATING
ACC identity() { return OP <= 1 ? ACC(0.0) : ACC(OP == 2 ? -1.0 / 0.0 : 1.0 / 0.0); }
#else
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
#endif

#ifdef SUBGROUP
// The subgroup's fold, in every lane. Drivers need not keep NaN in subgroupMax and
// subgroupMin: a NaN anywhere makes the result the (NaN) sum.
ACC fold_subgroup(ACC value) {
  if (OP <= 1) return subgroupAdd(value);
  const ACC extreme = OP == 2 ? subgroupMax(value) : subgroupMin(value);
  return subgroupAny(isnan(value)) ? subgroupAdd(value) : extreme;
}
#endif

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
#ifdef FLOATING
  // A lane adds count / 128 elements one after another: Kahan's compensation keeps the sum to
  // a few units in the last place (32 Mi values of 0.1 summed plainly in f32 were 2e-3 off).
  // precise: the compiler must not reassociate the compensation away.
  precise ACC carry = ACC(0.0);
#endif
  // r = lane, lane + 128, ... below count, in order, HAL_UNROLL a round (common.glsl).
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
        const ACC x = ACC(x_[at]);
        // No `continue` here: spirv-opt does not unroll a loop with one, and lavapipe counts
        // every round of a loop left rolled.
#ifdef FLOATING
        if (OP <= 1) {
          precise const ACC y = x - carry;
          precise const ACC t = value + y;
          carry = isinf(t) ? ACC(0.0) : (t - value) - y;  // past infinity, the plain sum
          value = t;
        } else
#endif
          value = combine(value, x);
      }
    }
  }
#ifdef SUBGROUP
  value = fold_subgroup(value);
  if (subgroupElect()) partial[gl_SubgroupID] = value;
  barrier();
  if (gl_SubgroupID != 0) return;
  ACC total = identity();
  for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize)
    total = combine(total, partial[s]);
  total = fold_subgroup(total);
  if (!subgroupElect()) return;
#else
  partial[lane] = value;
  barrier();
  for (uint width = 64; width > 0; width /= 2) {
    if (lane < width) partial[lane] = combine(partial[lane], partial[lane + width]);
    barrier();
  }
  if (lane != 0) return;
  ACC total = partial[0];
#endif
#ifdef FLOATING
  if (OP == 1) total /= ACC(args.count);
#endif
  out_[args.buffer_offset[0] / BYTES + o] = T(total);
}

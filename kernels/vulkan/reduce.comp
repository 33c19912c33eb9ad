// One output of a reduction per work group of 128 (sum, mean, max, min over f32): output o
// folds x at offset + position(o in kept) + position(r in reduced) for r in [0, count), each
// over up to 4 merged dimensions (src/ops/reduce.hpp's ReduceLayout).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint OP = 0;  // Reduce: sum, mean, max, min

layout(set = 0, binding = 0) writeonly buffer Out { float out_[]; };
layout(set = 0, binding = 1) readonly buffer X { float x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset, count, outputs;
  uint kept[4];
  uint kept_stride[4];
  uint reduced[4];
  uint reduced_stride[4];
} args;

shared float partial[128];

float combine(float a, float b) {
  if (OP <= 1) return a + b;
  if (isnan(a) || isnan(b)) return a + b;
  return OP == 2 ? max(a, b) : min(a, b);
}

void main() {
  const uint o = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (o >= args.outputs) return;  // the whole group leaves together
  uint base = args.buffer_offset[1] / 4 + args.offset;
  uint rest = o;
  for (int d = 3; d >= 0; --d) {
    base += (rest % args.kept[d]) * args.kept_stride[d];
    rest /= args.kept[d];
  }
  const uint lane = gl_LocalInvocationID.x;
  float value = OP <= 1 ? 0.0 : (OP == 2 ? -1.0 / 0.0 : 1.0 / 0.0);
  for (uint r = lane; r < args.count; r += 128) {
    uint at = base, left = r;
    for (int d = 3; d >= 0; --d) {
      at += (left % args.reduced[d]) * args.reduced_stride[d];
      left /= args.reduced[d];
    }
    value = combine(value, x_[at]);
  }
  partial[lane] = value;
  barrier();
  for (uint width = 64; width > 0; width /= 2) {
    if (lane < width) partial[lane] = combine(partial[lane], partial[lane + width]);
    barrier();
  }
  if (lane == 0) {
    float result = partial[0];
    if (OP == 1) result /= float(args.count);
    out_[args.buffer_offset[0] / 4 + o] = result;
  }
}

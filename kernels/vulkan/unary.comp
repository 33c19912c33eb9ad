// out = op(x), f32: flat or strided over up to 6 merged dimensions.
#version 450
#include "common.glsl"
#include "elementwise_ops.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { float out_[]; };
layout(set = 0, binding = 1) readonly buffer X { float x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_x, count;
  uint shape[6];
  uint stride_x[6];
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  uint ix = i;
  if (STRIDED != 0) {
    ix = 0;
    uint rest = i;
    for (int d = 5; d >= 0; --d) {
      const uint at = rest % args.shape[d];
      rest /= args.shape[d];
      ix += at * args.stride_x[d];
    }
  }
  out_[args.buffer_offset[0] / 4 + i] = apply_unary(OP, x_[args.buffer_offset[1] / 4 + args.offset_x + ix]);
}

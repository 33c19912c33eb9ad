// out = op(a, b), f32: flat (every operand contiguous) or strided over up to 6 merged
// dimensions (broadcast operands have stride 0).
#version 450
#include "common.glsl"
#include "elementwise_ops.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { float out_[]; };
layout(set = 0, binding = 1) readonly buffer A { float a_[]; };
layout(set = 0, binding = 2) readonly buffer B { float b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_a, offset_b, count;
  uint shape[6];
  uint stride_a[6];
  uint stride_b[6];
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  uint ia = i, ib = i;
  if (STRIDED != 0) {
    ia = 0;
    ib = 0;
    uint rest = i;
    for (int d = 5; d >= 0; --d) {
      const uint at = rest % args.shape[d];
      rest /= args.shape[d];
      ia += at * args.stride_a[d];
      ib += at * args.stride_b[d];
    }
  }
  const float a = a_[args.buffer_offset[1] / 4 + args.offset_a + ia];
  const float b = b_[args.buffer_offset[2] / 4 + args.offset_b + ib];
  out_[args.buffer_offset[0] / 4 + i] = apply_binary(OP, a, b);
}

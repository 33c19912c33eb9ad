// The weight's and bias's gradients through layer_norm and rms_norm in parts:
// invocation (part, c) sums column c over rows [part * chunk, part * chunk + chunk) of grad * xhat
// into weight_parts (WANT_WEIGHT) and of grad into bias_parts (WANT_BIAS), at [part * cols + c],
// xhat from each row's mean and rstd that norm_backward_rows.comp wrote; then
// norm_backward_final.comp adds each column's parts in order. The rows go HAL_UNROLL a round
// (common.glsl: lavapipe's 65535 rounds a shader).
#version 450
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint WANT_WEIGHT = 0;
layout(constant_id = 1) const uint WANT_BIAS = 0;

layout(set = 0, binding = 0) writeonly buffer WeightParts { float weight_parts_[]; };
layout(set = 0, binding = 1) writeonly buffer BiasParts { float bias_parts_[]; };
layout(set = 0, binding = 2) readonly buffer X { float x_[]; };
layout(set = 0, binding = 3) readonly buffer Grad { float grad_[]; };
layout(set = 0, binding = 4) readonly buffer Stats { float stats_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_x, offset_grad, offset_stats, rows, cols, parts, chunk;
} args;

void main() {
  const uint at = linear_id();
  const uint cols = args.cols;
  if (at >= args.parts * cols) return;
  const uint part = at / cols, c = at % cols;
  const uint begin = part * args.chunk;
  const uint count = min(args.chunk, args.rows - min(begin, args.rows));
  const uint x0 = args.buffer_offset[2] / 4u + args.offset_x + begin * cols + c;
  const uint g0 = args.buffer_offset[3] / 4u + args.offset_grad + begin * cols + c;
  const uint s0 = args.buffer_offset[4] / 4u + args.offset_stats + 2u * begin;
  float sum_w = 0.0, sum_b = 0.0;
  for (uint round = 0u; round < hal_rounds(count, 1u); ++round) {
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      const uint r = round * HAL_UNROLL + u;
      if (r < count) {
        const float g = grad_[g0 + r * cols];
        sum_w += g * ((x_[x0 + r * cols] - stats_[s0 + 2u * r]) * stats_[s0 + 2u * r + 1u]);
        sum_b += g;
      }
    }
  }
  if (WANT_WEIGHT != 0) weight_parts_[args.buffer_offset[0] / 4u + at] = sum_w;
  if (WANT_BIAS != 0) bias_parts_[args.buffer_offset[1] / 4u + at] = sum_b;
}

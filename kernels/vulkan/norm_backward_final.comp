// The weight's and bias's gradients through the norms: invocation c adds column c's parts that
// norm_backward_columns.comp summed, in order, HAL_UNROLL parts a round (common.glsl).
#version 450
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint WANT_WEIGHT = 0;
layout(constant_id = 1) const uint WANT_BIAS = 0;

layout(set = 0, binding = 0) writeonly buffer WeightGrad { float weight_grad_[]; };
layout(set = 0, binding = 1) writeonly buffer BiasGrad { float bias_grad_[]; };
layout(set = 0, binding = 2) readonly buffer WeightParts { float weight_parts_[]; };
layout(set = 0, binding = 3) readonly buffer BiasParts { float bias_parts_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_weight_grad, offset_bias_grad, cols, parts;
} args;

void main() {
  const uint c = linear_id();
  const uint cols = args.cols;
  if (c >= cols) return;
  const uint w0 = args.buffer_offset[2] / 4u + c, b0 = args.buffer_offset[3] / 4u + c;
  float sum_w = 0.0, sum_b = 0.0;
  for (uint round = 0u; round < hal_rounds(args.parts, 1u); ++round) {
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {
      const uint part = round * HAL_UNROLL + u;
      if (part < args.parts) {
        if (WANT_WEIGHT != 0) sum_w += weight_parts_[w0 + part * cols];
        if (WANT_BIAS != 0) sum_b += bias_parts_[b0 + part * cols];
      }
    }
  }
  if (WANT_WEIGHT != 0)
    weight_grad_[args.buffer_offset[0] / 4u + args.offset_weight_grad + c] = sum_w;
  if (WANT_BIAS != 0) bias_grad_[args.buffer_offset[1] / 4u + args.offset_bias_grad + c] = sum_b;
}

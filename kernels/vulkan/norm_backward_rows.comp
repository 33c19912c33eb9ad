// x's gradient through layer_norm (CENTRED = 1) or rms_norm over the rows of a contiguous f32 x,
// one work group of 128 a row: with g = grad * weight and xhat = (x - mean) * rstd,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) (rms_norm: without mean(g)). With STATS = 1
// each row's mean and rstd go to stats[2 row], for the parameters' gradients
// (norm_backward_columns.comp). src/ops/host_norm_backward.cpp is the reference; the same passes
// as kernels/ops/rowwise.kernel's norm_backward_rows.
#version 450
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint CENTRED = 0;
layout(constant_id = 1) const uint HAS_WEIGHT = 0;
layout(constant_id = 2) const uint STATS = 0;

layout(set = 0, binding = 0) writeonly buffer Dx { float dx_[]; };
layout(set = 0, binding = 1) writeonly buffer Stats { float stats_[]; };
layout(set = 0, binding = 2) readonly buffer X { float x_[]; };
layout(set = 0, binding = 3) readonly buffer Grad { float grad_[]; };
layout(set = 0, binding = 4) readonly buffer W { float w_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_dx, offset_stats, offset_x, offset_grad, offset_w, rows, cols;
  float eps;
} args;

shared float partial[128];

// The work group's sum of each lane's `value`.
float group_sum(float value) {
  const uint lane = gl_LocalInvocationID.x;
  barrier();  // the previous sum's readers are done with `partial`
  partial[lane] = value;
  barrier();
  for (uint width = 64; width > 0; width /= 2) {
    if (lane < width) partial[lane] += partial[lane + width];
    barrier();
  }
  return partial[0];
}

// BODY for each element i of the row this lane takes: lane, lane + 128, ... below n, in order,
// HAL_UNROLL of them a round (common.glsl: a row's loops together stay below lavapipe's 65535).
#define FOR_LANE_ELEMENTS(BODY)                                        \
  for (uint round = 0u; round < rounds; ++round) {                     \
    const uint first = round * 128u * HAL_UNROLL;                      \
    [[unroll]] for (uint u = 0u; u < HAL_UNROLL; ++u) {                \
      const uint step = u * 128u + lane;                               \
      if (step < n - first) {                                          \
        const uint i = first + step;                                   \
        BODY                                                           \
      }                                                                \
    }                                                                  \
  }

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= args.rows) return;  // the whole group leaves together
  const uint lane = gl_LocalInvocationID.x;
  const uint n = args.cols;
  const uint x0 = args.buffer_offset[2] / 4u + args.offset_x + row * n;
  const uint g0 = args.buffer_offset[3] / 4u + args.offset_grad + row * n;
  const uint w0 = args.buffer_offset[4] / 4u + args.offset_w;
  const uint d0 = args.buffer_offset[0] / 4u + args.offset_dx + row * n;
  const uint rounds = hal_rounds(n, 128u);
  float mean = 0.0;
  if (CENTRED != 0) {
    float sum = 0.0;
    FOR_LANE_ELEMENTS(sum += x_[x0 + i];)
    mean = group_sum(sum) / float(n);
  }
  float squares = 0.0;
  FOR_LANE_ELEMENTS({
    const float d = x_[x0 + i] - mean;
    squares += d * d;
  })
  const float rstd = inversesqrt(group_sum(squares) / float(n) + args.eps);
  if (STATS != 0 && lane == 0) {
    const uint s0 = args.buffer_offset[1] / 4u + args.offset_stats + 2u * row;
    stats_[s0] = mean;
    stats_[s0 + 1u] = rstd;
  }
  float sum_g = 0.0, sum_g_xhat = 0.0;
  FOR_LANE_ELEMENTS({
    const float g = HAS_WEIGHT != 0 ? grad_[g0 + i] * w_[w0 + i] : grad_[g0 + i];
    sum_g += g;
    sum_g_xhat += g * ((x_[x0 + i] - mean) * rstd);
  })
  const float mean_g = CENTRED != 0 ? group_sum(sum_g) / float(n) : 0.0;
  const float mean_g_xhat = group_sum(sum_g_xhat) / float(n);
  FOR_LANE_ELEMENTS({
    const float g = HAS_WEIGHT != 0 ? grad_[g0 + i] * w_[w0 + i] : grad_[g0 + i];
    dx_[d0 + i] = rstd * (g - mean_g - (x_[x0 + i] - mean) * rstd * mean_g_xhat);
  })
}

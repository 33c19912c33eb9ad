// softmax, log_softmax, layer_norm and rms_norm over the rows of a contiguous f32 or f16 x
// (computed in f32, rounded once): one work group of 128 per row (src/ops/host_rowwise.cpp is
// the reference).
// hal-variant rowwise -DT=float -DBYTES=4
// hal-variant rowwise_f16 -DT=float16_t -DBYTES=2
#version 450
#include "types.glsl"
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 0) const uint OP = 0;  // softmax, log_softmax, layer_norm, rms_norm
layout(constant_id = 1) const uint HAS_WEIGHT = 0;
layout(constant_id = 2) const uint HAS_BIAS = 0;

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_[]; };
layout(set = 0, binding = 2) readonly buffer W { T w_[]; };
layout(set = 0, binding = 3) readonly buffer B { T b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_out, offset_x, offset_w, offset_b, rows, cols;
  float eps;
} args;

shared float partial[128];

// The work group's sum (or max) of each lane's `value`.
float group_reduce(float value, bool take_max) {
  const uint lane = gl_LocalInvocationID.x;
  barrier();  // the previous reduction's readers are done with `partial`
  partial[lane] = value;
  barrier();
  for (uint width = 64; width > 0; width /= 2) {
    if (lane < width)
      partial[lane] = take_max ? max(partial[lane], partial[lane + width])
                               : partial[lane] + partial[lane + width];
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
  const uint x0 = args.buffer_offset[1] / BYTES + args.offset_x + row * n;
  const uint y0 = args.buffer_offset[0] / BYTES + args.offset_out + row * n;
  const uint rounds = hal_rounds(n, 128u);
  if (OP <= 1) {
    float top = -1.0 / 0.0;
    FOR_LANE_ELEMENTS(top = max(top, float(x_[x0 + i]));)
    top = group_reduce(top, true);
    if (isinf(top) && top < 0.0) top = 0.0;  // a row of -inf: exp gives 0s, as the parts do
    float total = 0.0;
    FOR_LANE_ELEMENTS(total += exp(float(x_[x0 + i]) - top);)
    total = group_reduce(total, false);
    if (OP == 1) {
      // (x - top) - log(total): their sum would round the log away where |top| is large.
      const float log_total = log(total);
      FOR_LANE_ELEMENTS(out_[y0 + i] = T((float(x_[x0 + i]) - top) - log_total);)
    } else {
      const float scale = 1.0 / total;
      FOR_LANE_ELEMENTS(out_[y0 + i] = T(exp(float(x_[x0 + i]) - top) * scale);)
    }
    return;
  }
  float mean = 0.0;
  if (OP == 2) {
    float sum = 0.0;
    FOR_LANE_ELEMENTS(sum += float(x_[x0 + i]);)
    mean = group_reduce(sum, false) / float(n);
  }
  float squares = 0.0;
  FOR_LANE_ELEMENTS({
    const float d = float(x_[x0 + i]) - mean;
    squares += d * d;
  })
  squares = group_reduce(squares, false);
  const float scale = inversesqrt(squares / float(n) + args.eps);
  const uint w0 = args.buffer_offset[2] / BYTES + args.offset_w;
  const uint b0 = args.buffer_offset[3] / BYTES + args.offset_b;
  FOR_LANE_ELEMENTS({
    float v = (float(x_[x0 + i]) - mean) * scale;
    if (HAS_WEIGHT != 0) v *= float(w_[w0 + i]);
    if (HAS_BIAS != 0) v += float(b_[b0 + i]);
    out_[y0 + i] = T(v);
  })
}

// What follows a convolution's matmul, in place: y[i] += bias[(i / positions) % features]
// (HAS_BIAS), y[i] += sum[i] (HAS_SUM), then max(y, 0) keeping NaN (RELU).
// hal-variant conv_epilogue -DT=float -DBYTES=4
// hal-variant conv_epilogue_f16 -DT=float16_t -DBYTES=2
// hal-variant conv_epilogue_f64 -DT=double -DBYTES=8
#version 450
#include "types.glsl"
#include "common.glsl"

layout(constant_id = 0) const uint HAS_BIAS = 0;
layout(constant_id = 1) const uint HAS_SUM = 0;
layout(constant_id = 2) const uint RELU = 0;

layout(set = 0, binding = 0) buffer Y { T y_[]; };
layout(set = 0, binding = 1) readonly buffer Bias { T bias_[]; };
layout(set = 0, binding = 2) readonly buffer Sum { T sum_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_y, offset_bias, offset_sum, count, positions, features;
} args;

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint at = args.buffer_offset[0] / BYTES + args.offset_y + i;
  T value = y_[at];
  if (HAS_BIAS != 0)
    value += bias_[args.buffer_offset[1] / BYTES + args.offset_bias + (i / args.positions) % args.features];
  if (HAS_SUM != 0) value += sum_[args.buffer_offset[2] / BYTES + args.offset_sum + i];
  if (RELU != 0 && !(value > T(0)) && !isnan(value)) value = T(0);
  y_[at] = value;
}

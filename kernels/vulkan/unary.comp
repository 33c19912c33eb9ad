// out = op(x) for floating dtypes, flat or strided over up to 6 merged dimensions: f32; f16
// computed in f32 and rounded once, as the CPU does; f64 in f64 for the functions GLSL computes
// exactly in f64 (neg, abs, relu, sqrt, rsqrt, floor, ceil, round: src/ops refuses the rest).
// hal-variant unary -DT=float -DBYTES=4
// hal-variant unary_f16 -DT=float16_t -DBYTES=2
// hal-variant unary_f64 -DT=double -DBYTES=8 -DF64
#version 450
#include "types.glsl"
#include "common.glsl"
#include "elementwise_ops.glsl"
#define DIMS 6
#include "strided.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_x, count;
  uint shape[DIMS];
  uint stride_x[DIMS];
} args;

#ifdef F64
double apply(double x) {
  if (isnan(x) && OP != 0 && OP != 1) return x;
  switch (OP) {
    case 0: return -x;
    case 1: return abs(x);
    case 2: return x > 0.0LF ? x : 0.0LF;
    case 5: return sqrt(x);
    case 6: return 1.0LF / sqrt(x);
    case 12: return floor(x);
    case 13: return ceil(x);
    case 14: return roundEven(x);
  }
  return 0.0LF;
}
#else
T apply(T x) { return T(apply_unary(OP, float(x))); }
#endif

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ix = STRIDED != 0 ? walk(i, args.shape, args.stride_x) : i;
  out_[args.buffer_offset[0] / BYTES + i] = apply(x_[args.buffer_offset[1] / BYTES + args.offset_x + ix]);
}

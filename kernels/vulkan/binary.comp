// out = op(a, b) for floating dtypes, flat (every operand contiguous) or strided over up to 6
// merged dimensions (broadcast operands have stride 0): f32; f16 computed in f32 and rounded
// once, as the CPU does; f64 in f64 (GLSL has no f64 pow: src/ops refuses it).
// hal-variant binary -DT=float -DBYTES=4
// hal-variant binary_f16 -DT=float16_t -DBYTES=2
// hal-variant binary_f64 -DT=double -DBYTES=8 -DF64
#version 450
#include "types.glsl"
#include "common.glsl"
#include "elementwise_ops.glsl"
#define DIMS 6
#include "strided.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint STRIDED = 0;

layout(set = 0, binding = 0) writeonly buffer Out { T out_[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_[]; };
layout(push_constant) uniform Args {
  HAL_BUFFER_OFFSETS
  uint offset_a, offset_b, count;
  uint shape[DIMS];
  uint stride_a[DIMS];
  uint stride_b[DIMS];
} args;

#ifdef F64
double apply(double a, double b) {
  switch (OP) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return (isnan(a) || isnan(b)) ? a + b : max(a, b);
    case 5: return (isnan(a) || isnan(b)) ? a + b : min(a, b);
  }
  return 0.0LF;
}
#else
T apply(T a, T b) { return T(apply_binary(OP, float(a), float(b))); }
#endif

void main() {
  const uint i = linear_id();
  if (i >= args.count) return;
  const uint ia = STRIDED != 0 ? walk(i, args.shape, args.stride_a) : i;
  const uint ib = STRIDED != 0 ? walk(i, args.shape, args.stride_b) : i;
  out_[args.buffer_offset[0] / BYTES + i] =
      apply(a_[args.buffer_offset[1] / BYTES + args.offset_a + ia],
            b_[args.buffer_offset[2] / BYTES + args.offset_b + ib]);
}

// out = op(x) for floating dtypes, flat or strided over up to 6 merged dimensions: f32; f16
// computed in f32 and rounded once, as the CPU does; f64 in f64 for neg, abs, relu, sqrt, rsqrt,
// floor, ceil, round, and exp and log of their own below (GLSL has no f64 exp or log; src/ops
// refuses the other functions in f64).
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
// exp(x) = 2^k exp(r), r = x - k ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 split in two so that r is
// exact), exp(r) by its Taylor series to r^16 / 16!, below half an ulp there.
double exp_f64(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384LF) return 1.0LF / 0.0LF;
  if (x < -745.1332191019412LF) return 0.0LF;
  const double k = roundEven(x * 1.4426950408889634LF);
  const double r = (x - k * 6.93147180369123816490e-01LF) - k * 1.90821492927058770002e-10LF;
  double term = 1.0LF, sum = 1.0LF;
  for (int n = 1; n <= 16; ++n) {
    term *= r / double(n);
    sum += term;
  }
  // 2^k in two steps: k reaches 1024 below the overflow bound, and 2^-1075 rounds to 0 at once.
  const int first = int(k) / 2;
  return ldexp(ldexp(sum, first), int(k) - first);
}

// log(x) = e ln 2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^31.
double log_f64(double x) {
  if (isnan(x) || x < 0.0LF) return (x - x) / (x - x);  // NaN
  if (x == 0.0LF) return -1.0LF / 0.0LF;
  if (isinf(x)) return x;
  // Subnormals scaled by 2^54 first: drivers' frexp may get them wrong (lavapipe's does).
  const bool subnormal = x < 2.2250738585072014e-308LF;
  if (subnormal) x *= 18014398509481984.0LF;
  int e;
  double m = frexp(x, e);  // m in [1/2, 1)
  if (subnormal) e -= 54;
  if (m < 0.7071067811865476LF) {
    m *= 2.0LF;
    e -= 1;
  }
  const double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s;
  double power = s, series = 0.0LF;
  for (int n = 1; n <= 31; n += 2) {
    series += power / double(n);
    power *= s2;
  }
  return double(e) * 6.93147180559945309417e-01LF + 2.0LF * series;
}

double apply(double x) {
  if (isnan(x) && OP != 0 && OP != 1) return x;
  switch (OP) {
    case 0: return -x;
    case 1: return abs(x);
    case 2: return x > 0.0LF ? x : 0.0LF;
    case 3: return exp_f64(x);
    case 4: return log_f64(x);
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

// The elementwise functions, numbered as hal's Binary and Unary enums (src/ops/elementwise.hpp).

float erf_approx(float x) {
  // Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7.
  const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  const float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t -
                          0.284496736) * t + 0.254829592) * t * exp(-x * x);
  return x < 0.0 ? -y : y;
}

// asin as Cephes' asinf: drivers' own (llvmpipe's) are off by 1e-4.
float asin_precise(float x) {
  const float a = abs(x);
  if (isnan(x) || a > 1.0) return (x - x) / (x - x);  // NaN
  float z, s, r;
  if (a > 0.5) {
    z = 0.5 * (1.0 - a);
    s = sqrt(z);
  } else {
    z = a * a;
    s = a;
  }
  r = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z +
       1.6666752422e-1) * z * s + s;
  if (a > 0.5) r = 1.5707963267948966 - 2.0 * r;
  return x < 0.0 ? -r : r;
}

float acos_precise(float x) {
  if (isnan(x) || abs(x) > 1.0) return (x - x) / (x - x);
  if (x > 0.5) return 2.0 * asin_precise(sqrt(0.5 * (1.0 - x)));
  if (x < -0.5) return 3.14159265358979 - 2.0 * asin_precise(sqrt(0.5 * (1.0 + x)));
  return 1.5707963267948966 - asin_precise(x);
}

// atan as Cephes' atanf, for the same reason.
float atan_precise(float x) {
  float a = abs(x), base = 0.0;
  if (a > 2.414213562373095) {
    base = 1.5707963267948966;
    a = -1.0 / a;
  } else if (a > 0.4142135623730950) {
    base = 0.7853981633974483;
    a = (a - 1.0) / (a + 1.0);
  }
  const float z = a * a;
  const float y = base + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z -
                           3.33329491539e-1) * z * a + a);
  return x < 0.0 ? -y : y;
}

// log of subnormals too, which some drivers treat as tiny normals.
float log_precise(float x) {
  if (x > 0.0 && x < 1.17549435e-38) return log(x * 8388608.0) - 15.942385152878742;  // 2^23
  return log(x);
}

// pow as C's: GLSL's pow is undefined for a < 0, and for a == 0 with b <= 0 (drivers compute
// exp2(b * log2(a)), NaN there). Negative bases take integer exponents, with the sign of a for
// odd ones; zeros, infinities and infinite exponents give C's limits.
float pow_c(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;  // even for NaN
  if (isnan(a) || isnan(b)) return a + b;
  const float m = abs(a);
  if (isinf(b)) {
    if (m == 1.0) return 1.0;                          // (-1)^inf
    return (m > 1.0) == (b > 0.0) ? 1.0 / 0.0 : 0.0;  // |a|^inf grows or vanishes
  }
  const bool integer = floor(b) == b;
  // Floats of 2^24 and beyond are even integers.
  const bool odd = integer && abs(b) < 16777216.0 && (int(abs(b)) & 1) == 1;
  const bool negative = (floatBitsToUint(a) & 0x80000000u) != 0u;  // -0 too
  float r;
  if (m == 0.0 || isinf(m))
    r = (m == 0.0) == (b < 0.0) ? 1.0 / 0.0 : 0.0;
  else if (negative && !integer)
    return uintBitsToFloat(0x7fc00000u);  // NaN: a negative base's non-integer power
  else
    r = pow(m, b);
  return negative && odd ? -r : r;
}

// sinh, cosh, asinh and acosh where GLSL's (defined through e^x and x * x) overflow: beyond
// |x| = 88 e^-|x| is below float's precision and e^|x| / 2 is taken as e^(|x|/2) * e^(|x|/2) / 2,
// which overflows only where the result does; beyond 2^12 the 1 in sqrt(x^2 +- 1) is, and
// asinh(|x|) = acosh(|x|) = log(2|x|). asinh of |x| keeps x + sqrt(x^2 + 1) from cancelling for
// negative x.
float cosh_wide(float x) {
  const float a = abs(x);
  if (a <= 88.0) return cosh(x);
  const float half_power = exp(0.5 * a);
  return half_power * (0.5 * half_power);
}

float sinh_wide(float x) { return abs(x) <= 88.0 ? sinh(x) : sign(x) * cosh_wide(x); }

float asinh_wide(float x) {
  const float a = abs(x);
  return sign(x) * (a > 4096.0 ? log_precise(a) + 0.6931471805599453 : asinh(a));
}

float acosh_wide(float x) {
  if (x < 1.0) return uintBitsToFloat(0x7fc00000u);  // NaN, which GLSL leaves undefined
  return x > 4096.0 ? log_precise(x) + 0.6931471805599453 : acosh(x);
}

float apply_binary(uint op, float a, float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return (isnan(a) || isnan(b)) ? a + b : max(a, b);
    case 5: return (isnan(a) || isnan(b)) ? a + b : min(a, b);
    case 6: return pow_c(a, b);
  }
  return 0.0;
}

float apply_unary(uint op, float x) {
  // Every function keeps its NaN, and the odd ones that are x near 0 (tanh, sin, tan, asin, atan,
  // sinh, asinh, atanh: x^3 is below float's precision there) give x, with a zero's sign and
  // subnormals as they are, whatever the driver does.
  if (isnan(x) && op != 0 && op != 1) return x;
  if (abs(x) < 2.44140625e-4 && (op == 7 || op == 15 || op == 17 || op == 18 || op == 20 ||
                                 op == 21 || op == 23 || op == 25))
    return x;
  switch (op) {
    case 0: return -x;
    case 1: return abs(x);
    case 2: return x > 0.0 ? x : (isnan(x) ? x : 0.0);
    case 3: return exp(x);
    case 4: return log_precise(x);
    case 5: return sqrt(x);
    case 6: return inversesqrt(x);
    case 7: return tanh(x);
    case 8: return 1.0 / (1.0 + exp(-x));
    case 9: return x * 0.5 * (1.0 + erf_approx(x * 0.7071067811865476));
    case 10: return x / (1.0 + exp(-x));
    case 11: return erf_approx(x);
    case 12: return floor(x);
    case 13: return ceil(x);
    case 14: return roundEven(x);
    case 15: return sin(x);
    case 16: return cos(x);
    case 17: return tan(x);
    case 18: return asin_precise(x);
    case 19: return acos_precise(x);
    case 20: return atan_precise(x);
    case 21: return sinh_wide(x);
    case 22: return cosh_wide(x);
    case 23: return asinh_wide(x);
    case 24: return acosh_wide(x);
    case 25: return atanh(x);
  }
  return 0.0;
}

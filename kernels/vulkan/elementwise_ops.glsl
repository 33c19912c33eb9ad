// The elementwise functions, numbered as hal's Binary and Unary enums (src/ops/elementwise.hpp).

float erf_approx(float x) {
  // Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7.
  const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  const float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t -
                          0.284496736) * t + 0.254829592) * t * exp(-x * x);
  return x < 0.0 ? -y : y;
}

float apply_binary(uint op, float a, float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return (isnan(a) || isnan(b)) ? a + b : max(a, b);
    case 5: return (isnan(a) || isnan(b)) ? a + b : min(a, b);
    case 6: return pow(a, b);
  }
  return 0.0;
}

float apply_unary(uint op, float x) {
  switch (op) {
    case 0: return -x;
    case 1: return abs(x);
    case 2: return x > 0.0 ? x : (isnan(x) ? x : 0.0);
    case 3: return exp(x);
    case 4: return log(x);
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
    case 18: return asin(x);
    case 19: return acos(x);
    case 20: return atan(x);
    case 21: return sinh(x);
    case 22: return cosh(x);
    case 23: return asinh(x);
    case 24: return acosh(x);
    case 25: return atanh(x);
  }
  return 0.0;
}

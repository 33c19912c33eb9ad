// The vector kernels of simd_kernels.hpp, compiled once per instruction set by Highway's
// foreach_target: AVX-512 (AVX3), AVX2 and SSE4. Highway's other x86 targets are left out to
// keep the build short (`scalar` runs the host kernels' own loops).
//
// Each kernel computes what the reference computes: f16 and bf16 elements are widened to f32
// in registers and rounded back to nearest even (bitwise as tensor/element_codec does, but for
// the payload of a NaN); exp, log, tanh, erf and gelu are polynomial approximations (exp and
// log within a few units in the last place, the others within 2e-6; the tests state each).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd/simd_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/host_element_functions.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/element_codec.hpp"

// Only the three x86 targets the tables use get a body: the baselines Highway always compiles
// (EMU128, SCALAR) stay empty.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
HWY_BEFORE_NAMESPACE();
namespace hal::ops::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
using DU = hn::RebindToUnsigned<D>;
using DI = hn::RebindToSigned<D>;
using D16 = hn::Rebind<uint16_t, D>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- elements in and out: f32 as they are, f16 and bf16 widened and rounded in registers ----

#if HWY_TARGET <= HWY_AVX2
constexpr bool kF16c = true;  // vcvtph2ps and vcvtps2ph
#else
constexpr bool kF16c = false;
#endif
using DF16 = hn::Rebind<hwy::float16_t, D>;

template <Storage kType>
HWY_INLINE V load(D d, const void* p, size_t i) {
  if constexpr (kType == Storage::f32) {
    return hn::LoadU(d, static_cast<const float*>(p) + i);
  } else if constexpr (kType == Storage::f16 && kF16c) {
    return hn::PromoteTo(d, hn::LoadU(DF16(), static_cast<const hwy::float16_t*>(p) + i));
  } else {
    const auto bits = hn::PromoteTo(DU(), hn::LoadU(D16(), static_cast<const uint16_t*>(p) + i));
    if constexpr (kType == Storage::bf16) return hn::BitCast(d, hn::ShiftLeft<16>(bits));
    // f16: sign, then exponent and mantissa moved into place and rebiased (15 -> 127); an
    // exponent of 31 (infinity, NaN) becomes 255, and subnormals are their mantissa * 2^-24.
    const DI di;
    const auto sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(DU(), 0x8000u)));
    const auto magnitude = hn::And(bits, hn::Set(DU(), 0x7fffu));
    const auto exponent = hn::ShiftRight<10>(magnitude);
    const V normal =
        hn::BitCast(d, hn::Add(hn::ShiftLeft<13>(magnitude), hn::Set(DU(), 112u << 23)));
    const V special =
        hn::BitCast(d, hn::Or(hn::ShiftLeft<13>(magnitude), hn::Set(DU(), 0xffu << 23)));
    const V tiny = hn::Mul(hn::ConvertTo(d, hn::BitCast(di, magnitude)), hn::Set(d, 0x1p-24f));
    const auto e = hn::BitCast(di, exponent);
    V value = hn::IfThenElse(hn::RebindMask(d, hn::Eq(e, hn::Zero(di))), tiny, normal);
    value = hn::IfThenElse(hn::RebindMask(d, hn::Eq(e, hn::Set(di, 31))), special, value);
    return hn::Or(value, hn::BitCast(d, sign));
  }
}

// f32 bits to bf16, rounded to nearest even; a NaN stays a quiet NaN.
HWY_INLINE hn::Vec<DU> bf16_bits(D d, V v) {
  const DU du;
  const auto bits = hn::BitCast(du, v);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fffu), odd)));
  const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
  (void)d;
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
}

// f32 bits to f16, rounded to nearest even, as tensor::f32_to_f16 does.
HWY_INLINE hn::Vec<DU> f16_bits(D d, V v) {
  const DU du;
  const DI di;
  const auto bits = hn::BitCast(du, v);
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
  const auto magnitude = hn::And(bits, hn::Set(du, 0x7fffffffu));
  const auto m = hn::BitCast(di, magnitude);  // non-negative: signed compares are exact
  // Normal halves: rebias and round the 13 dropped bits to nearest even.
  const auto odd = hn::And(hn::ShiftRight<13>(magnitude), hn::Set(du, 1u));
  auto result = hn::ShiftRight<13>(hn::Add(magnitude, hn::Add(hn::Set(du, 0xc8000fffu), odd)));
  // Subnormal halves: a float addition of 0.5 rounds the mantissa into place.
  const V shifted = hn::Add(hn::BitCast(d, magnitude), hn::Set(d, 0.5f));
  const auto subnormal = hn::Sub(hn::BitCast(du, shifted), hn::Set(du, 0x3f000000u));
  result =
      hn::IfThenElse(hn::RebindMask(du, hn::Lt(m, hn::Set(di, 0x38800000))), subnormal, result);
  result = hn::IfThenElse(hn::RebindMask(du, hn::Gt(m, hn::Set(di, 0x477fefff))),
                          hn::Set(du, 0x7c00u), result);
  result = hn::IfThenElse(hn::RebindMask(du, hn::Gt(m, hn::Set(di, 0x7f800000))),
                          hn::Set(du, 0x7e00u), result);
  return hn::Or(result, sign);
}

template <Storage kType>
HWY_INLINE void store(D d, V v, void* p, size_t i) {
  if constexpr (kType == Storage::f32) {
    hn::StoreU(v, d, static_cast<float*>(p) + i);
  } else if constexpr (kType == Storage::f16 && kF16c) {
    // The hardware rounds to nearest even; a NaN, made the plain quiet NaN first, becomes
    // the reference's 0x7e00 (with its sign).
    const V nan = hn::Or(hn::And(v, hn::BitCast(d, hn::Set(DU(), 0x80000000u))),
                         hn::BitCast(d, hn::Set(DU(), 0x7fc00000u)));
    const V plain = hn::IfThenElse(hn::IsNaN(v), nan, v);
    hn::StoreU(hn::DemoteTo(DF16(), plain), DF16(), static_cast<hwy::float16_t*>(p) + i);
  } else {
    const auto bits = kType == Storage::bf16 ? bf16_bits(d, v) : f16_bits(d, v);
    hn::StoreU(hn::DemoteTo(D16(), hn::BitCast(DI(), bits)), D16(), static_cast<uint16_t*>(p) + i);
  }
}

constexpr size_t element_size(Storage type) { return type == Storage::f32 ? 4 : 2; }

// The last partial vector of an array goes through zeroed copies of one vector's size, so that
// no load or store passes the array's end.
struct Tail {
  alignas(64) unsigned char bytes[3][HWY_MAX_BYTES] = {};
};

// One element widened to f32 (a broadcast operand).
inline float widen_one(Storage type, const void* p) {
  if (type == Storage::f32) {
    float value;
    std::memcpy(&value, p, sizeof value);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return type == Storage::bf16 ? tensor::bf16_to_f32(bits) : tensor::f16_to_f32(bits);
}

// ---- element functions ----

HWY_INLINE V exp_of(D d, V x) {
  V y = hn::Exp(d, x);  // 0 below -104, undefined above +104
  y = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283935546875f)), hn::Set(d, kInf), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

HWY_INLINE V log_of(D d, V x) {
  // Subnormals scaled into the normal range first; zero, negatives, infinity and NaN by rule.
  const auto small = hn::Lt(x, hn::Set(d, std::numeric_limits<float>::min()));
  const V scaled = hn::IfThenElse(small, hn::Mul(x, hn::Set(d, 0x1p23f)), x);
  V y = hn::Log(d, scaled);
  y = hn::IfThenElse(small, hn::Sub(y, hn::Set(d, 23 * 0.693147180559945309f)), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Set(d, -kInf), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Set(d, kInf)), x, y);
  y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, kNaN), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// e^q for q in [-87, 0] (results stay normal): q = n ln2 + r with |r| <= ln2 / 2, e^r by a
// degree-5 fit, 2^n added into the exponent field. A third of Highway's Exp, which also covers
// the whole f32 range, and within 2 units in the last place here.
HWY_INLINE V exp_bounded(D d, V q) {
  const V shifter = hn::Set(d, 0x1.8p23f);  // adding it rounds to an integer in the low bits
  const V k = hn::MulAdd(q, hn::Set(d, 1.4426950408889634f), shifter);
  const V n = hn::Sub(k, shifter);
  V r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), q);  // ln2 in two parts: r stays exact
  r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
  V p = hn::Set(d, 0.00837513525f);
  for (float c : {0.0419175699f, 0.166664153f, 0.499988675f, 1.0f, 1.0f})
    p = hn::MulAdd(p, r, hn::Set(d, c));
  // k's low mantissa bits hold n (two's complement): shifted to the exponent field, they scale p.
  const auto scale = hn::ShiftLeft<23>(hn::BitCast(DI(), k));
  return hn::BitCast(d, hn::Add(hn::BitCast(DI(), p), scale));
}

// erfc(a / sqrt 2) = 2 Phi(-a) for a >= 0, within 3e-7 relative where it matters to gelu and
// erf (a <= 6; 0 beyond, where it is below 2e-9): e^(R(a) - a^2 / 2) with R a degree-10 fit of
// log erfc(a / sqrt 2) + a^2 / 2 on [0, 6] (no reciprocal, no full-range exp). NaN gives 0.
HWY_INLINE V erfc_scaled(D d, V a) {
  constexpr float kEnd = 6.0f;
  const V x = hn::Min(a, hn::Set(d, kEnd));
  V r = hn::Set(d, -8.16412538e-09f);
  for (float c :
       {2.76289256e-07f, -3.97517897e-06f, 3.03934085e-05f, -0.000109673834f, -0.00019160696f,
        0.00507722888f, -0.0365526117f, 0.181771368f, -0.797896385f, 2.85845033e-07f})
    r = hn::MulAdd(r, x, hn::Set(d, c));
  const V e = exp_bounded(d, hn::MulAdd(hn::Mul(x, hn::Set(d, -0.5f)), x, r));
  return hn::IfThenElseZero(hn::Le(a, hn::Set(d, kEnd)), e);
}

HWY_INLINE V erf_of(D d, V x) {
  const V z = hn::Abs(x);
  // Near 0 the series (erf = 1 - erfc would lose its relative accuracy there).
  const V z2 = hn::Mul(z, z);
  V series = hn::Set(d, -1.0f / 1320);
  for (float c : {1.0f / 216, -1.0f / 42, 1.0f / 10, -1.0f / 3, 1.0f})
    series = hn::MulAdd(series, z2, hn::Set(d, c));
  series = hn::Mul(series, hn::Mul(z, hn::Set(d, 1.1283791670955126f)));
  const V far =
      hn::Sub(hn::Set(d, 1.0f), erfc_scaled(d, hn::Mul(z, hn::Set(d, 1.4142135623730951f))));
  const V y = hn::IfThenElse(hn::Lt(z, hn::Set(d, 0.5f)), series, far);
  return hn::IfThenElse(hn::IsNaN(x), x, hn::CopySign(y, x));
}

// x * Phi(x) = x/2 * erfc(-x / sqrt 2): erfc of |x| / sqrt 2 keeps the relative accuracy on
// both sides of 0. A NaN passes through the products; x = -inf gives NaN (-inf * 0), as the
// reference does.
HWY_INLINE V gelu_of(D d, V x) {
  const V e = erfc_scaled(d, hn::Abs(x));
  const V phi2 = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), e, hn::Sub(hn::Set(d, 2.0f), e));
  return hn::Mul(hn::Mul(x, hn::Set(d, 0.5f)), phi2);
}

HWY_INLINE V tanh_of(D d, V x) { return hn::IfThenElse(hn::IsNaN(x), x, hn::Tanh(d, x)); }

HWY_INLINE V sigmoid_of(D d, V x) {
  return hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), exp_of(d, hn::Neg(x))));
}

// maximum and minimum give NaN when either operand is NaN, as the reference does (x + y).
HWY_INLINE V nan_of_either(V x, V y, V result) {
  return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::IsNaN(y)), hn::Add(x, y), result);
}

template <Binary kOp>
HWY_INLINE V binary_of(V x, V y) {
  if constexpr (kOp == Binary::add) return hn::Add(x, y);
  if constexpr (kOp == Binary::sub) return hn::Sub(x, y);
  if constexpr (kOp == Binary::mul) return hn::Mul(x, y);
  if constexpr (kOp == Binary::div) return hn::Div(x, y);
  if constexpr (kOp == Binary::maximum) return nan_of_either(x, y, hn::Max(x, y));
  if constexpr (kOp == Binary::minimum) return nan_of_either(x, y, hn::Min(x, y));
}

// ---- trigonometric and hyperbolic functions: Highway's (hwy/contrib/math) ----

// Whether x lies where Highway's function of kOp is accurate (its documented valid range, a
// few units in the last place): elsewhere, and for NaN and infinities, the reference computes.
template <Unary kOp>
HWY_INLINE auto in_contrib_range(D d, V x) {
  const V size = hn::Abs(x);
  const auto within = [&](float limit) { return hn::Le(size, hn::Set(d, limit)); };
  if constexpr (kOp == Unary::sin || kOp == Unary::cos) return within(39000.0f);
  if constexpr (kOp == Unary::asin || kOp == Unary::acos) return within(1.0f);
  if constexpr (kOp == Unary::atanh) return hn::Lt(size, hn::Set(d, 1.0f));
  if constexpr (kOp == Unary::sinh || kOp == Unary::cosh) return within(88.7228f);
  if constexpr (kOp == Unary::acosh)
    return hn::And(hn::Ge(x, hn::Set(d, 1.0f)), within(std::numeric_limits<float>::max()));
  if constexpr (kOp == Unary::atan || kOp == Unary::asinh)
    return within(std::numeric_limits<float>::max());
}

template <Unary kOp>
constexpr bool kFromContrib =
    kOp == Unary::sin || kOp == Unary::cos || kOp == Unary::asin || kOp == Unary::acos ||
    kOp == Unary::atan || kOp == Unary::sinh || kOp == Unary::cosh || kOp == Unary::asinh ||
    kOp == Unary::acosh || kOp == Unary::atanh;

template <Unary kOp>
HWY_INLINE V contrib_of(D d, V x) {
  if (HWY_UNLIKELY(!hn::AllTrue(d, in_contrib_range<kOp>(d, x)))) {
    HWY_ALIGN float lanes[hn::MaxLanes(d)];  // the reference's, a lane at a time
    hn::Store(x, d, lanes);
    for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = host::UnaryFn<kOp>{}(lanes[i]);
    return hn::Load(d, lanes);
  }
  // Highway's Sin gives +0 for -0; the reference keeps the zero's sign.
  if constexpr (kOp == Unary::sin) return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, hn::Sin(d, x));
  if constexpr (kOp == Unary::cos) return hn::Cos(d, x);
  if constexpr (kOp == Unary::asin) return hn::Asin(d, x);
  if constexpr (kOp == Unary::acos) return hn::Acos(d, x);
  if constexpr (kOp == Unary::atan) return hn::Atan(d, x);
  if constexpr (kOp == Unary::sinh) return hn::Sinh(d, x);
  if constexpr (kOp == Unary::cosh) {  // Highway 1.0 has no Cosh: (e^|x| + e^-|x|) / 2
    const V e = hn::Exp(d, hn::Abs(x));
    return hn::Mul(hn::Set(d, 0.5f), hn::Add(e, hn::Div(hn::Set(d, 1.0f), e)));
  }
  if constexpr (kOp == Unary::asinh) return hn::Asinh(d, x);
  if constexpr (kOp == Unary::acosh) return hn::Acosh(d, x);
  if constexpr (kOp == Unary::atanh) return hn::Atanh(d, x);
}

template <Unary kOp>
HWY_INLINE V unary_of(D d, V x) {
  if constexpr (kFromContrib<kOp>) return contrib_of<kOp>(d, x);
  if constexpr (kOp == Unary::neg) return hn::Neg(x);
  if constexpr (kOp == Unary::abs) return hn::Abs(x);  // |-0.0| is +0.0, as NumPy's
  if constexpr (kOp == Unary::relu) return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Zero(d), x);
  if constexpr (kOp == Unary::exp) return exp_of(d, x);
  if constexpr (kOp == Unary::log) return log_of(d, x);
  if constexpr (kOp == Unary::sqrt) return hn::Sqrt(x);
  if constexpr (kOp == Unary::rsqrt) return hn::Div(hn::Set(d, 1.0f), hn::Sqrt(x));
  if constexpr (kOp == Unary::tanh) return tanh_of(d, x);
  if constexpr (kOp == Unary::sigmoid) return sigmoid_of(d, x);
  if constexpr (kOp == Unary::gelu) return gelu_of(d, x);
  if constexpr (kOp == Unary::silu) return hn::Mul(x, sigmoid_of(d, x));
  if constexpr (kOp == Unary::erf) return erf_of(d, x);
  if constexpr (kOp == Unary::floor) return hn::Floor(x);
  if constexpr (kOp == Unary::ceil) return hn::Ceil(x);
  if constexpr (kOp == Unary::round) return hn::Round(x);
}

// ---- elementwise loops ----

template <Binary kOp, Storage kType>
HWY_INLINE void binary_vector(D d, const void* a, V a_all, const void* b, V b_all, void* out,
                              size_t i) {
  const V x = a ? load<kType>(d, a, i) : a_all;
  const V y = b ? load<kType>(d, b, i) : b_all;
  store<kType>(d, binary_of<kOp>(x, y), out, i);
}

// a_step or b_step 0: that operand is one element, broadcast.
template <Binary kOp, Storage kType>
void binary_loop(const void* a, int a_step, const void* b, int b_step, void* out, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  const V a_all = hn::Set(d, a_step ? 0.0f : widen_one(kType, a));
  const V b_all = hn::Set(d, b_step ? 0.0f : widen_one(kType, b));
  const void* a_run = a_step ? a : nullptr;
  const void* b_run = b_step ? b : nullptr;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    binary_vector<kOp, kType>(d, a_run, a_all, b_run, b_all, out, i);
  if (i == n) return;
  constexpr size_t size = element_size(kType);
  const size_t rest = (n - i) * size;
  Tail tail;
  if (a_run) std::memcpy(tail.bytes[0], static_cast<const char*>(a) + i * size, rest);
  if (b_run) std::memcpy(tail.bytes[1], static_cast<const char*>(b) + i * size, rest);
  binary_vector<kOp, kType>(d, a_run ? tail.bytes[0] : nullptr, a_all,
                            b_run ? tail.bytes[1] : nullptr, b_all, tail.bytes[2], 0);
  std::memcpy(static_cast<char*>(out) + i * size, tail.bytes[2], rest);
}

template <Unary kOp, Storage kType>
void unary_loop(const void* x, void* out, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    store<kType>(d, unary_of<kOp>(d, load<kType>(d, x, i)), out, i);
  if (i == n) return;
  constexpr size_t size = element_size(kType);
  const size_t rest = (n - i) * size;
  Tail tail;
  std::memcpy(tail.bytes[0], static_cast<const char*>(x) + i * size, rest);
  store<kType>(d, unary_of<kOp>(d, load<kType>(d, tail.bytes[0], 0)), tail.bytes[1], 0);
  std::memcpy(static_cast<char*>(out) + i * size, tail.bytes[1], rest);
}

template <Storage kFrom, Storage kTo>
void convert_loop(const void* in, void* out, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) store<kTo>(d, load<kFrom>(d, in, i), out, i);
  if (i == n) return;
  Tail tail;
  std::memcpy(tail.bytes[0], static_cast<const char*>(in) + i * element_size(kFrom),
              (n - i) * element_size(kFrom));
  store<kTo>(d, load<kFrom>(d, tail.bytes[0], 0), tail.bytes[1], 0);
  std::memcpy(static_cast<char*>(out) + i * element_size(kTo), tail.bytes[1],
              (n - i) * element_size(kTo));
}

template <Storage kType>
bool binary_of_type(Binary op, const void* a, int a_step, const void* b, int b_step, void* out,
                    size_t n) {
  switch (op) {
    case Binary::add:
      return binary_loop<Binary::add, kType>(a, a_step, b, b_step, out, n), true;
    case Binary::sub:
      return binary_loop<Binary::sub, kType>(a, a_step, b, b_step, out, n), true;
    case Binary::mul:
      return binary_loop<Binary::mul, kType>(a, a_step, b, b_step, out, n), true;
    case Binary::div:
      return binary_loop<Binary::div, kType>(a, a_step, b, b_step, out, n), true;
    case Binary::maximum:
      return binary_loop<Binary::maximum, kType>(a, a_step, b, b_step, out, n), true;
    case Binary::minimum:
      return binary_loop<Binary::minimum, kType>(a, a_step, b, b_step, out, n), true;
    default:
      return false;
  }
}

bool binary(Binary op, Storage type, const void* a, int a_step, const void* b, int b_step,
            void* out, size_t n) {
  switch (type) {
    case Storage::f32:
      return binary_of_type<Storage::f32>(op, a, a_step, b, b_step, out, n);
    case Storage::f16:
      return binary_of_type<Storage::f16>(op, a, a_step, b, b_step, out, n);
    case Storage::bf16:
      return binary_of_type<Storage::bf16>(op, a, a_step, b, b_step, out, n);
  }
  return false;
}

// Every element function but tan (not in Highway 1.0; sin / cos loses accuracy at its poles),
// which the host kernels' plain loops compute.
template <Storage kType>
bool unary_of_type(Unary op, const void* x, void* out, size_t n) {
  bool vectorised = false;
  host::with_op(op, [&]<Unary kOp>() {
    if constexpr (kOp != Unary::tan) {
      unary_loop<kOp, kType>(x, out, n);
      vectorised = true;
    }
  });
  return vectorised;
}

bool unary(Unary op, Storage type, const void* x, void* out, size_t n) {
  switch (type) {
    case Storage::f32:
      return unary_of_type<Storage::f32>(op, x, out, n);
    case Storage::f16:
      return unary_of_type<Storage::f16>(op, x, out, n);
    case Storage::bf16:
      return unary_of_type<Storage::bf16>(op, x, out, n);
  }
  return false;
}

template <Storage kFrom>
void convert_from(Storage to, const void* in, void* out, size_t n) {
  switch (to) {
    case Storage::f32:
      return convert_loop<kFrom, Storage::f32>(in, out, n);
    case Storage::f16:
      return convert_loop<kFrom, Storage::f16>(in, out, n);
    case Storage::bf16:
      return convert_loop<kFrom, Storage::bf16>(in, out, n);
  }
}

void convert(Storage from, Storage to, const void* in, void* out, size_t n) {
  switch (from) {
    case Storage::f32:
      return convert_from<Storage::f32>(to, in, out, n);
    case Storage::f16:
      return convert_from<Storage::f16>(to, in, out, n);
    case Storage::bf16:
      return convert_from<Storage::bf16>(to, in, out, n);
  }
}

// ---- reductions ----

using DH = hn::Half<D>;
using DD = hn::Rebind<double, DH>;  // one f32 vector's lanes as two f64 vectors

HWY_INLINE hn::Vec<DD> lower_f64(V v) { return hn::PromoteTo(DD(), hn::LowerHalf(DH(), v)); }
HWY_INLINE hn::Vec<DD> upper_f64(V v) { return hn::PromoteTo(DD(), hn::UpperHalf(DH(), v)); }

double sum(const float* x, size_t n) {
  const D d;
  const DD dd;
  const size_t lanes = hn::Lanes(d);
  auto s0 = hn::Zero(dd), s1 = hn::Zero(dd), s2 = hn::Zero(dd), s3 = hn::Zero(dd);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const V v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + lanes);
    s0 = hn::Add(s0, lower_f64(v0));
    s1 = hn::Add(s1, upper_f64(v0));
    s2 = hn::Add(s2, lower_f64(v1));
    s3 = hn::Add(s3, upper_f64(v1));
  }
  double total = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) total += x[i];
  return total;
}

template <bool kLargest>
HWY_INLINE V extreme_step(V running, V x) {
  if constexpr (kLargest)
    return hn::Max(running, x);
  else
    return hn::Min(running, x);
}

// Four running extremes for the comparisons' latency, and a record of any NaN beside them
// (Max and Min of a NaN are whichever operand the instruction set picks).
template <bool kLargest>
bool extreme_of(const float* x, size_t n, float* out) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  if (n < 4 * lanes) {
    float value = x[0];
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(x[i])) return false;
      value = kLargest ? std::max(value, x[i]) : std::min(value, x[i]);
    }
    *out = value;
    return true;
  }
  V m0 = hn::LoadU(d, x), m1 = hn::LoadU(d, x + lanes), m2 = hn::LoadU(d, x + 2 * lanes),
    m3 = hn::LoadU(d, x + 3 * lanes);
  auto nan = hn::Or(hn::Or(hn::IsNaN(m0), hn::IsNaN(m1)), hn::Or(hn::IsNaN(m2), hn::IsNaN(m3)));
  const auto note_nan = [&](V v0, V v1, V v2, V v3) {
    nan = hn::Or(
        nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
  };
  size_t i = 4 * lanes;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const V v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + lanes);
    const V v2 = hn::LoadU(d, x + i + 2 * lanes), v3 = hn::LoadU(d, x + i + 3 * lanes);
    note_nan(v0, v1, v2, v3);
    m0 = extreme_step<kLargest>(m0, v0);
    m1 = extreme_step<kLargest>(m1, v1);
    m2 = extreme_step<kLargest>(m2, v2);
    m3 = extreme_step<kLargest>(m3, v3);
  }
  // The tail as one more overlapping block: the last 4 vectors' worth, read again in part.
  if (i < n) {
    const float* tail = x + n - 4 * lanes;
    const V v0 = hn::LoadU(d, tail), v1 = hn::LoadU(d, tail + lanes);
    const V v2 = hn::LoadU(d, tail + 2 * lanes), v3 = hn::LoadU(d, tail + 3 * lanes);
    note_nan(v0, v1, v2, v3);
    m0 = extreme_step<kLargest>(m0, v0);
    m1 = extreme_step<kLargest>(m1, v1);
    m2 = extreme_step<kLargest>(m2, v2);
    m3 = extreme_step<kLargest>(m3, v3);
  }
  if (!hn::AllFalse(d, nan)) return false;
  const V m =
      extreme_step<kLargest>(extreme_step<kLargest>(m0, m1), extreme_step<kLargest>(m2, m3));
  *out = hn::GetLane(kLargest ? hn::MaxOfLanes(d, m) : hn::MinOfLanes(d, m));
  return true;
}

bool extreme(const float* x, size_t n, bool largest, float* out) {
  return largest ? extreme_of<true>(x, n, out) : extreme_of<false>(x, n, out);
}

void sum_columns(const float* x, size_t rows, size_t row_stride, size_t cols, double* acc) {
  const D d;
  const DD dd;
  const size_t lanes = hn::Lanes(d), half = lanes / 2;
  size_t r = 0;
  // Eight rows at a time: the f64 sums are read and written once per eight rows read (with
  // four, a 4096 x 4096 column sum took a median 1.10 times a plain 2-thread read on a Zen 5,
  // with eight 0.90: docs/PERFORMANCE.md, "Session 21").
  // Two chains of additions, the even rows' and the odd rows', for the adders' latency.
  for (; r + 8 <= rows; r += 8) {
    const float* x0 = x + r * row_stride;
    size_t j = 0;
    for (; j + lanes <= cols; j += lanes) {
      const V first = hn::LoadU(d, x0 + j), second = hn::LoadU(d, x0 + row_stride + j);
      auto even_low = lower_f64(first), even_high = upper_f64(first);
      auto odd_low = lower_f64(second), odd_high = upper_f64(second);
      for (size_t k = 2; k < 8; k += 2) {
        const V even = hn::LoadU(d, x0 + k * row_stride + j);
        const V odd = hn::LoadU(d, x0 + (k + 1) * row_stride + j);
        even_low = hn::Add(even_low, lower_f64(even));
        even_high = hn::Add(even_high, upper_f64(even));
        odd_low = hn::Add(odd_low, lower_f64(odd));
        odd_high = hn::Add(odd_high, upper_f64(odd));
      }
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j), hn::Add(even_low, odd_low)), dd, acc + j);
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j + half), hn::Add(even_high, odd_high)), dd,
                 acc + j + half);
    }
    for (; j < cols; ++j) {
      double total = 0;
      for (size_t k = 0; k < 8; ++k) total += x0[k * row_stride + j];
      acc[j] += total;
    }
  }
  // Then four rows at a time, then one.
  for (; r + 4 <= rows; r += 4) {
    const float* x0 = x + r * row_stride;
    const float* x1 = x0 + row_stride;
    const float* x2 = x1 + row_stride;
    const float* x3 = x2 + row_stride;
    size_t j = 0;
    for (; j + lanes <= cols; j += lanes) {
      const V v0 = hn::LoadU(d, x0 + j), v1 = hn::LoadU(d, x1 + j);
      const V v2 = hn::LoadU(d, x2 + j), v3 = hn::LoadU(d, x3 + j);
      const auto low =
          hn::Add(hn::Add(lower_f64(v0), lower_f64(v1)), hn::Add(lower_f64(v2), lower_f64(v3)));
      const auto high =
          hn::Add(hn::Add(upper_f64(v0), upper_f64(v1)), hn::Add(upper_f64(v2), upper_f64(v3)));
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j), low), dd, acc + j);
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j + half), high), dd, acc + j + half);
    }
    for (; j < cols; ++j)
      acc[j] += (static_cast<double>(x0[j]) + x1[j]) + (static_cast<double>(x2[j]) + x3[j]);
  }
  for (; r < rows; ++r) {
    const float* row = x + r * row_stride;
    size_t j = 0;
    for (; j + lanes <= cols; j += lanes) {
      const V v = hn::LoadU(d, row + j);
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j), lower_f64(v)), dd, acc + j);
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + j + half), upper_f64(v)), dd, acc + j + half);
    }
    for (; j < cols; ++j) acc[j] += row[j];
  }
}

// ---- rows: softmax and the norms ----

void softmax_row(const float* x, float* y, size_t n, bool logarithm) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  V top_lanes = hn::Set(d, -kInf);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) top_lanes = hn::Max(top_lanes, hn::LoadU(d, x + i));
  float top = hn::GetLane(hn::MaxOfLanes(d, top_lanes));
  for (size_t k = i; k < n; ++k) top = std::max(top, x[k]);
  if (std::isinf(top) && top < 0) top = 0;  // a row of -inf: exp gives 0s, as the parts do
  const V shift = hn::Set(d, top);
  // The exps summed in f64 lanes, as the reference sums them: in f32 lanes a row of 4 Mi
  // classes (a cross_entropy over a large vocabulary) lost 2e-4 of its log-sum-exp.
  auto s0 = hn::Zero(DD()), s1 = hn::Zero(DD());
  for (i = 0; i + lanes <= n; i += lanes) {
    const V e = exp_of(d, hn::Sub(hn::LoadU(d, x + i), shift));
    if (!logarithm) hn::StoreU(e, d, y + i);
    s0 = hn::Add(s0, lower_f64(e));
    s1 = hn::Add(s1, upper_f64(e));
  }
  if (i < n) {  // the rest padded with -inf, whose exp adds 0
    Tail tail;
    float* padded = reinterpret_cast<float*>(tail.bytes[0]);
    std::fill_n(padded, lanes, -kInf);
    std::memcpy(padded, x + i, (n - i) * sizeof(float));
    const V e = exp_of(d, hn::Sub(hn::LoadU(d, padded), shift));
    hn::StoreU(e, d, padded);
    if (!logarithm) std::memcpy(y + i, padded, (n - i) * sizeof(float));
    s0 = hn::Add(s0, lower_f64(e));
    s1 = hn::Add(s1, upper_f64(e));
  }
  const double total = hn::GetLane(hn::SumOfLanes(DD(), hn::Add(s0, s1)));
  if (logarithm) {  // (x - top) - log(total): their sum would round the log away at large top
    const float log_total = static_cast<float>(std::log(total));
    const V log_all = hn::Set(d, log_total);
    for (i = 0; i + lanes <= n; i += lanes)
      hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), shift), log_all), d, y + i);
    for (; i < n; ++i) y[i] = (x[i] - top) - log_total;
    return;
  }
  const V scale = hn::Set(d, static_cast<float>(1.0 / total));
  for (i = 0; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), scale), d, y + i);
  for (; i < n; ++i) y[i] *= hn::GetLane(scale);
}

// A norm's row statistics: the mean (0 where not `centre`) and 1 / sqrt(var + eps), the
// squared deviations summed in f64, as the reference: f32 ones overflow beyond 1.8e19.
struct RowStatistics {
  float mean, rstd;
};
RowStatistics row_statistics(const float* x, size_t n, double eps, bool centre) {
  const D d;
  const DD dd;
  const size_t lanes = hn::Lanes(d);
  const double mean = centre ? sum(x, n) / static_cast<double>(n) : 0;
  const V m = hn::Set(d, static_cast<float>(mean));
  auto q0 = hn::Zero(dd), q1 = hn::Zero(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const V dev = hn::Sub(hn::LoadU(d, x + i), m);
    const auto low = lower_f64(dev), high = upper_f64(dev);
    q0 = hn::MulAdd(low, low, q0);
    q1 = hn::MulAdd(high, high, q1);
  }
  double squares = hn::GetLane(hn::SumOfLanes(dd, hn::Add(q0, q1)));
  for (; i < n; ++i) {
    const double dev = x[i] - mean;
    squares += dev * dev;
  }
  return {static_cast<float>(mean),
          static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps))};
}

void norm_row(const float* x, float* y, size_t n, const float* weight, const float* bias,
              double eps, bool centre) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  const RowStatistics stats = row_statistics(x, n, eps, centre);
  const float scale_value = stats.rstd, m_value = stats.mean;
  const V m = hn::Set(d, m_value), scale = hn::Set(d, scale_value);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    V v = hn::Mul(hn::Sub(hn::LoadU(d, x + i), m), scale);
    if (weight) v = hn::Mul(v, hn::LoadU(d, weight + i));
    if (bias) v = hn::Add(v, hn::LoadU(d, bias + i));
    hn::StoreU(v, d, y + i);
  }
  for (; i < n; ++i) {
    float v = (x[i] - m_value) * scale_value;
    if (weight) v *= weight[i];
    if (bias) v += bias[i];
    y[i] = v;
  }
}

// x's gradient: the statistics as norm_row takes them, then the sums of g = dy * weight and of
// g * xhat in f64 lanes, then dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), adding
// dy * xhat and dy into the parameters' running sums where they are given.
void norm_row_backward(const float* x, const float* dy, float* dx, size_t n, const float* weight,
                       double eps, bool centre, float* weight_sum, float* bias_sum) {
  const D d;
  const DD dd;
  const size_t lanes = hn::Lanes(d);
  const RowStatistics stats = row_statistics(x, n, eps, centre);
  const float rstd_value = stats.rstd, m_value = stats.mean;
  const V m = hn::Set(d, m_value), rstd = hn::Set(d, rstd_value);
  size_t i = 0;
  const auto g_at = [&](size_t at) {
    const V g = hn::LoadU(d, dy + at);
    return weight ? hn::Mul(g, hn::LoadU(d, weight + at)) : g;
  };
  auto g0 = hn::Zero(dd), g1 = hn::Zero(dd), p0 = hn::Zero(dd), p1 = hn::Zero(dd);
  for (i = 0; i + lanes <= n; i += lanes) {
    const V g = g_at(i);
    const V xhat = hn::Mul(hn::Sub(hn::LoadU(d, x + i), m), rstd);
    const V product = hn::Mul(g, xhat);
    g0 = hn::Add(g0, lower_f64(g));
    g1 = hn::Add(g1, upper_f64(g));
    p0 = hn::Add(p0, lower_f64(product));
    p1 = hn::Add(p1, upper_f64(product));
  }
  double sum_g = hn::GetLane(hn::SumOfLanes(dd, hn::Add(g0, g1)));
  double sum_product = hn::GetLane(hn::SumOfLanes(dd, hn::Add(p0, p1)));
  const size_t tail = i;
  for (; i < n; ++i) {
    const float g = weight ? dy[i] * weight[i] : dy[i];
    sum_g += g;
    sum_product += g * ((x[i] - m_value) * rstd_value);
  }
  const float mean_g = centre ? static_cast<float>(sum_g / static_cast<double>(n)) : 0.0f;
  const float mean_product = static_cast<float>(sum_product / static_cast<double>(n));
  const V shift = hn::Set(d, mean_g), slope = hn::Set(d, mean_product);
  // The last pass, with the parameters' sums added in while xhat is at hand: one loop per
  // combination, so that none tests a pointer per vector.
  const auto last_pass = [&](auto weight_sums, auto bias_sums) {
    constexpr bool kWeightSums = decltype(weight_sums)::value;
    constexpr bool kBiasSums = decltype(bias_sums)::value;
    for (size_t at = 0; at < tail; at += lanes) {
      const V xhat = hn::Mul(hn::Sub(hn::LoadU(d, x + at), m), rstd);
      const V inner = hn::NegMulAdd(xhat, slope, hn::Sub(g_at(at), shift));
      hn::StoreU(hn::Mul(rstd, inner), d, dx + at);
      if constexpr (kWeightSums)
        hn::StoreU(hn::MulAdd(hn::LoadU(d, dy + at), xhat, hn::LoadU(d, weight_sum + at)), d,
                   weight_sum + at);
      if constexpr (kBiasSums)
        hn::StoreU(hn::Add(hn::LoadU(d, dy + at), hn::LoadU(d, bias_sum + at)), d, bias_sum + at);
    }
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (weight_sum && bias_sum)
    last_pass(Yes{}, Yes{});
  else if (weight_sum)
    last_pass(Yes{}, No{});
  else if (bias_sum)
    last_pass(No{}, Yes{});
  else
    last_pass(No{}, No{});
  for (i = tail; i < n; ++i) {
    const float g = weight ? dy[i] * weight[i] : dy[i];
    const float xhat = (x[i] - m_value) * rstd_value;
    dx[i] = rstd_value * (g - mean_g - xhat * mean_product);
    if (weight_sum) weight_sum[i] += dy[i] * xhat;
    if (bias_sum) bias_sum[i] += dy[i];
  }
}

const Kernels* table() {
  static const Kernels kernels {
#if HWY_TARGET == HWY_AVX3
    Isa::avx512,
#elif HWY_TARGET == HWY_AVX2
    Isa::avx2,
#else
    Isa::sse4,
#endif
        &binary, &unary, &convert, &sum, &extreme, &sum_columns, &softmax_row, &norm_row,
        &norm_row_backward
  };
  return &kernels;
}

}  // namespace hal::ops::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
#endif  // the three x86 targets

#if HWY_ONCE
namespace hal::ops::simd {

const Kernels* kernels(Isa isa) {
  switch (isa) {
#if HWY_TARGETS & HWY_AVX3
    case Isa::avx512:
      return N_AVX3::table();
#endif
#if HWY_TARGETS & HWY_AVX2
    case Isa::avx2:
      return N_AVX2::table();
#endif
#if HWY_TARGETS & HWY_SSE4
    case Isa::sse4:
      return N_SSE4::table();
#endif
    default:
      return nullptr;
  }
}

}  // namespace hal::ops::simd
#endif  // HWY_ONCE

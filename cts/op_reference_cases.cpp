// op.* against plain loops on the host in double precision (within a tolerance per dtype), in
// the spirit of ggml's test-backend-ops: elementwise ops over broadcast shapes and views,
// comparisons, where, casts between every pair of dtypes, f16 and bf16 computed in f32, and
// the op table's promises for small integers and special values. Unlike op.table.*, which
// compares a device with cpu:0, these check cpu:0 itself too. Each runs the dtypes that `hal
// ops` lists for the device (CPU fallback off).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "values.hpp"

namespace hal::cts {
namespace {

// The reference: a plain loop over the broadcast shape, indexing each input by its own shape.
std::vector<double> broadcast_reference(const std::vector<double>& a, const Shape& a_shape,
                                        const std::vector<double>& b, const Shape& b_shape,
                                        const std::function<double(double, double)>& fn) {
  const Shape shape = broadcast_shapes(a_shape, b_shape);
  std::vector<double> out;
  std::vector<int64_t> index(shape.size(), 0);
  auto at = [&](const Shape& own) {
    int64_t linear = 0;
    const size_t lead = shape.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d)
      linear = linear * own[d] + (own[d] == 1 ? 0 : index[lead + d]);
    return static_cast<size_t>(linear);
  };
  for (int64_t n = numel(shape); n > 0; --n) {
    out.push_back(fn(a[at(a_shape)], b[at(b_shape)]));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&, Stream&);
  std::function<double(double, double)> reference;
};

const BinaryCase kBinary[] = {
    {"add", add, [](double x, double y) { return x + y; }},
    {"sub", sub, [](double x, double y) { return x - y; }},
    {"mul", mul, [](double x, double y) { return x * y; }},
    {"div", div, [](double x, double y) { return x / y; }},
    {"maximum", maximum, [](double x, double y) { return std::max(x, y); }},
    {"minimum", minimum, [](double x, double y) { return std::min(x, y); }},
};

// op.binary.<op>.broadcast: shapes that broadcast like NumPy's, size-1, 0-d and empty ones.
void binary_broadcast(const Device& d, const BinaryCase& c) {
  const std::pair<Shape, Shape> shapes[] = {
      {{7}, {7}},    {{3, 5}, {3, 5}}, {{3, 5}, {5}},    {{4, 1, 3}, {2, 3}},
      {{1}, {2, 3}}, {{}, {4}},        {{2, 0}, {2, 1}}, {{65, 33}, {65, 1}},
  };
  Stream stream = d.create_stream();
  for_listed(d, {c.name}, compute_dtypes(), [&](DType dtype) {
    for (const auto& [a_shape, b_shape] : shapes) {
      const std::string what =
          describe(c.name, dtype) + " " + to_string(a_shape) + " " + to_string(b_shape);
      const bool integer_div = c.name == std::string("div") && integral(dtype);
      const auto a = inputs(static_cast<size_t>(numel(a_shape)), dtype, 1);
      const auto b = inputs(static_cast<size_t>(numel(b_shape)), dtype, 2, 0.5, 3.0, true);
      const Tensor out =
          c.op(make(a, a_shape, dtype, stream), make(b, b_shape, dtype, stream), stream);
      check(out.shape() == broadcast_shapes(a_shape, b_shape), what + ": shape");
      check(out.dtype() == dtype, what + ": dtype " + std::string(to_string(out.dtype())));
      auto want = broadcast_reference(a, a_shape, b, b_shape, c.reference);
      if (integer_div)
        for (double& v : want) v = std::trunc(v);
      if (dtype == DType::f32)
        for (double& v : want) v = static_cast<float>(v);
      check_close(numbers(out, stream), want, dtype, what);
    }
  });
}

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, Stream&);
  double (*reference)(double);
  bool integers;     // keeps integer dtypes (else integers give f32)
  double low, high;  // the inputs' range
};

const UnaryCase kUnary[] = {
    {"neg", neg, [](double x) { return -x; }, true, -3, 3},
    {"abs", abs, [](double x) { return std::fabs(x); }, true, -3, 3},
    {"relu", relu, [](double x) { return x < 0 ? 0.0 : x; }, true, -3, 3},
    {"exp", exp, [](double x) { return std::exp(x); }, false, -5, 5},
    {"log", log, [](double x) { return std::log(x); }, false, 0.01, 10},
    {"sqrt", sqrt, [](double x) { return std::sqrt(x); }, false, 0, 10},
    {"rsqrt", rsqrt, [](double x) { return 1 / std::sqrt(x); }, false, 0.01, 10},
    {"tanh", tanh, [](double x) { return std::tanh(x); }, false, -5, 5},
    {"sigmoid", sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, false, -8, 8},
    {"gelu", gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, false, -5,
     5},
    {"silu", silu, [](double x) { return x / (1 + std::exp(-x)); }, false, -8, 8},
    {"erf", erf, [](double x) { return std::erf(x); }, false, -3, 3},
    {"floor", floor, [](double x) { return std::floor(x); }, false, -5, 5},
    {"ceil", ceil, [](double x) { return std::ceil(x); }, false, -5, 5},
    {"round", round, [](double x) { return std::nearbyint(x); }, false, -5, 5},
    {"sin", sin, [](double x) { return std::sin(x); }, false, -5, 5},
    {"cos", cos, [](double x) { return std::cos(x); }, false, -5, 5},
    {"tan", tan, [](double x) { return std::tan(x); }, false, -1.4, 1.4},
    {"asin", asin, [](double x) { return std::asin(x); }, false, -0.99, 0.99},
    {"acos", acos, [](double x) { return std::acos(x); }, false, -0.99, 0.99},
    {"atan", atan, [](double x) { return std::atan(x); }, false, -5, 5},
    {"sinh", sinh, [](double x) { return std::sinh(x); }, false, -5, 5},
    {"cosh", cosh, [](double x) { return std::cosh(x); }, false, -5, 5},
    {"asinh", asinh, [](double x) { return std::asinh(x); }, false, -5, 5},
    {"acosh", acosh, [](double x) { return std::acosh(x); }, false, 1, 10},
    {"atanh", atanh, [](double x) { return std::atanh(x); }, false, -0.99, 0.99},
};

// op.unary.<op>: the host's functions on 1001 inputs in each dtype.
void unary_values(const Device& d, const UnaryCase& c) {
  Stream stream = d.create_stream();
  for_listed(d, {c.name}, compute_dtypes(), [&](DType dtype) {
    const std::string what = describe(c.name, dtype);
    const auto x = inputs(1001, dtype, 4, c.low, c.high);
    const Tensor in = make(x, {7, 11, 13}, dtype, stream);
    if (integral(dtype) && !c.integers) {
      // Functions of integers compute in f32 and give f32, as PyTorch's exp(int) does.
      const Tensor out = c.op(in, stream);
      check(out.dtype() == DType::f32, what + " gives " + std::string(to_string(out.dtype())));
      std::vector<double> want;
      for (double v : numbers(in, stream)) want.push_back(static_cast<float>(c.reference(v)));
      check_close(numbers(out, stream), want, DType::f32, what);
      return;
    }
    std::vector<double> want;
    for (double v : x)
      want.push_back(dtype == DType::f32 ? static_cast<float>(c.reference(v)) : c.reference(v));
    check_close(numbers(c.op(in, stream), stream), want, dtype, what);
  });
}

// op.unary.<op>.special_values: infinities, NaN, signed zeros and subnormals in f32 against the
// C library in double, rounded to f32. A device may flush subnormal results to zero (OpenCL
// allows it for float).
void unary_special_values(const Device& d, const UnaryCase& c) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double sub = std::ldexp(1.0, -140);  // a float subnormal
  const std::vector<double> x{kInf, -kInf, std::nan(""), -0.0, 0.0, sub, -sub, 1, -1};
  Stream stream = d.create_stream();
  for_listed(d, {c.name}, {DType::f32}, [&](DType) {
    const std::vector<double> got = numbers(c.op(make(x, {9}, DType::f32, stream), stream), stream);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = static_cast<float>(c.reference(static_cast<float>(x[i])));
      const std::string what = std::string(c.name) + "(" + std::to_string(x[i]) + ") gives " +
                               std::to_string(got[i]) + ", expected " + std::to_string(want);
      if (std::isnan(want)) {
        check(std::isnan(got[i]), what);
      } else if (std::isinf(want) || want == 0) {
        check(got[i] == want, what);
        // (Not of a subnormal input, which the device may flush: -sub may give -0 or 0. Of a
        // zero input only for abs: |-0| is +0, as NumPy's; -x gave -0 on two backends.)
        if (want == 0 && (std::fabs(x[i]) > sub || (x[i] == 0 && std::string(c.name) == "abs")))
          check(std::signbit(got[i]) == std::signbit(want), what + ": the zero's sign");
      } else if (std::fabs(want) < std::numeric_limits<float>::min()) {
        check(got[i] == want || got[i] == 0, what);
      } else {
        check(std::fabs(got[i] - want) <= 4e-7 * std::fabs(want), what);
      }
    }
  });
}

// op.elementwise.views_as_operands: transposed, sliced and offset views as operands.
void views_as_operands(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"add", "mul", "neg"}, {DType::f32}, [&](DType) {
    const auto values = inputs(60, DType::f32, 3);
    const Tensor base = make(values, {3, 4, 5}, DType::f32, stream);
    const Tensor transposed = base.transpose(0, 2);         // [5, 4, 3], strided
    const Tensor sliced = base.slice(1, 1, 4, 2);           // [3, 2, 5]
    const Tensor row = base.slice(0, 1, 2).slice(1, 0, 1);  // [1, 1, 5], offset 20
    const Tensor sum = add(transposed, transposed.contiguous(stream), stream);
    std::vector<double> doubled = numbers(transposed, stream);
    for (double& v : doubled) v = static_cast<float>(2 * v);
    check_close(numbers(sum, stream), doubled, DType::f32, "transposed + contiguous copy");

    const Tensor product = mul(sliced, row, stream);  // [3, 2, 5] * [1, 1, 5]
    const std::vector<double> s = numbers(sliced, stream), r = numbers(row, stream);
    std::vector<double> want(s.size());
    for (size_t i = 0; i < s.size(); ++i) want[i] = static_cast<float>(s[i] * r[i % 5]);
    check_close(numbers(product, stream), want, DType::f32, "slice * broadcast row");

    const Tensor negated = neg(transposed, stream);
    std::vector<double> minus = numbers(transposed, stream);
    for (double& v : minus) v = -v;
    check_close(numbers(negated, stream), minus, DType::f32, "neg of a transposed view");

    // A column broadcast along rows ([3, 1] with [3, 4]), and one element in shapes of size 1
    // that are not the same shape (the layout has no dimension left to merge).
    const Tensor column = base.slice(1, 0, 1).slice(2, 0, 1).reshape({3, 1});
    const Tensor grid = base.slice(2, 0, 4).slice(1, 0, 1).reshape({3, 4});
    const std::vector<double> c = numbers(column, stream), g = numbers(grid, stream);
    std::vector<double> shifted(g.size());
    for (size_t i = 0; i < g.size(); ++i) shifted[i] = static_cast<float>(c[i / 4] + g[i]);
    check_close(numbers(add(column, grid, stream), stream), shifted, DType::f32, "column + rows");
    const Tensor one = base.slice(0, 2, 3).slice(1, 3, 4).slice(2, 4, 5);  // [1, 1, 1]
    const double v = numbers(one, stream)[0];
    check_close(numbers(mul(one, one.reshape({1}), stream), stream), {static_cast<float>(v * v)},
                DType::f32, "[1, 1, 1] * [1]");
  });
}

struct Comparison {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&, Stream&);
  std::function<bool(double, double)> reference;
};

const Comparison kComparisons[] = {
    {"eq", eq, [](double x, double y) { return x == y; }},
    {"ne", ne, [](double x, double y) { return x != y; }},
    {"lt", lt, [](double x, double y) { return x < y; }},
    {"le", le, [](double x, double y) { return x <= y; }},
    {"gt", gt, [](double x, double y) { return x > y; }},
    {"ge", ge, [](double x, double y) { return x >= y; }},
};

// op.compare.<op>: broadcast, bool results, NaN unequal to everything.
void comparison(const Device& d, const Comparison& c) {
  Stream stream = d.create_stream();
  std::vector<DType> dtypes = compute_dtypes();
  dtypes.insert(dtypes.end(), {DType::f16, DType::bf16});
  for_listed(d, {c.name}, dtypes, [&](DType dtype) {
    // Halves of small integers, so that equal elements are common; one NaN.
    std::vector<double> a = inputs(15, dtype, 5), b = inputs(5, dtype, 6);
    if (!integral(dtype)) {
      for (double& v : a) v = std::round(v * 2) / 2;
      for (double& v : b) v = std::round(v * 2) / 2;
      a[4] = std::numeric_limits<double>::quiet_NaN();
    }
    const std::string what = describe(c.name, dtype);
    const Tensor out = c.op(make(a, {3, 5}, dtype, stream), make(b, {5}, dtype, stream), stream);
    check(out.dtype() == DType::boolean, what + " gives " + std::string(to_string(out.dtype())));
    check(out.shape() == Shape{3, 5}, what + ": shape " + to_string(out.shape()));
    const auto got = out.to_vector<uint8_t>(stream);
    for (size_t i = 0; i < got.size(); ++i)
      check(got[i] == (c.reference(a[i], b[i % 5]) ? 1 : 0),
            what + " element " + std::to_string(i));
  });
}

// op.pow.broadcast: the floating dtypes (integers are refused, which tests/ops checks).
void pow_values(const Device& d) {
  Stream stream = d.create_stream();
  for_listed(d, {"pow"}, {DType::f32, DType::f16, DType::bf16, DType::f64}, [&](DType dtype) {
    const auto base = inputs(12, dtype, 7, 0.25, 3.0), exponent = inputs(4, dtype, 8, -2.0, 2.0);
    const Tensor out =
        pow(make(base, {3, 4}, dtype, stream), make(exponent, {4}, dtype, stream), stream);
    std::vector<double> want;
    for (size_t i = 0; i < base.size(); ++i)
      want.push_back(rounded(std::pow(base[i], exponent[i % 4]), dtype));
    check_close(numbers(out, stream), want, dtype, describe("pow", dtype));
  });
}

// op.half_precision.<dtype>: f16 and bf16 computed in f32 and rounded back once.
void half_precision(const Device& d, DType dtype) {
  Stream stream = d.create_stream();
  for_listed(d, {"add", "div", "exp", "gelu", "neg"}, {dtype}, [&](DType) {
    const auto a = inputs(24, dtype, 9), b = inputs(24, dtype, 10, 0.5, 2.0);
    const Tensor x = make(a, {4, 6}, dtype, stream), y = make(b, {4, 6}, dtype, stream);
    const std::pair<const char*, Tensor> results[] = {
        {"add", add(x, y, stream)}, {"div", div(x, y, stream)}, {"exp", exp(x, stream)},
        {"gelu", gelu(x, stream)},  {"neg", neg(x, stream)},
    };
    const std::function<double(double, double)> references[] = {
        [](double p, double q) { return p + q; },
        [](double p, double q) { return p / q; },
        [](double p, double) { return std::exp(p); },
        [](double p, double) { return 0.5 * p * (1 + std::erf(p / std::sqrt(2.0))); },
        [](double p, double) { return -p; },
    };
    for (size_t r = 0; r < std::size(results); ++r) {
      const std::string what = describe(results[r].first, dtype);
      check(results[r].second.dtype() == dtype, what + ": the dtype changed");
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i)
        want.push_back(rounded(references[r](a[i], b[i]), dtype));
      check_close(numbers(results[r].second, stream), want, dtype, what);
    }
  });
}

// op.where.broadcast_and_views: any dtype, a transposed operand, broadcasting.
void where_values(const Device& d) {
  Stream stream = d.create_stream();
  const std::vector<double> cond{1, 0, 1};
  const std::vector<DType> dtypes{DType::f32, DType::f16,     DType::i64,
                                  DType::u8,  DType::boolean, DType::i8};
  for_listed(d, {"where"}, dtypes, [&](DType dtype) {
    const std::vector<double> a = dtype == DType::boolean ? std::vector<double>(12, 1.0)
                                                          : inputs(12, dtype, 11, 0, 9),
                              b = dtype == DType::boolean ? std::vector<double>(4, 0.0)
                                                          : inputs(4, dtype, 12, 0, 9);
    std::vector<double> a_abs = a, b_abs = b;  // u8 holds no negative numbers
    for (double& e : a_abs) e = std::fabs(e);
    for (double& e : b_abs) e = std::fabs(e);
    // cond [3, 1], a [4, 3] seen transposed as [3, 4], b [4].
    const Tensor a_t = make(a_abs, {4, 3}, dtype, stream).transpose(0, 1);
    const Tensor out = where(make(cond, {3, 1}, DType::boolean, stream), a_t,
                             make(b_abs, {4}, dtype, stream), stream);
    check(out.shape() == Shape{3, 4}, "shape " + to_string(out.shape()));
    const auto got = numbers(out, stream);
    for (size_t r = 0; r < 3; ++r)
      for (size_t c = 0; c < 4; ++c)
        check(got[r * 4 + c] == (cond[r] != 0 ? a_abs[c * 3 + r] : b_abs[c]),
              describe("where", dtype) + " [" + std::to_string(r) + ", " + std::to_string(c) + "]");
  });
}

// What a cast must give, from the rules in ops.hpp, computed independently of the library.
double cast_reference(double v, DType from, DType to) {
  const bool from_float = !integral(from) && from != DType::boolean;
  switch (to) {
    case DType::boolean:
      return v != 0 ? 1 : 0;
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::f64:
      return rounded(v, to);
    default:
      break;
  }
  const int bits = static_cast<int>(8 * size_of(to));
  const bool is_signed =
      to == DType::i8 || to == DType::i16 || to == DType::i32 || to == DType::i64;
  const double low = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double beyond = is_signed ? std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits);
  if (from_float) {
    if (std::isnan(v)) return 0;
    if (v <= low) return low;
    if (v >= beyond) return beyond - 1;
    return std::trunc(v);
  }
  // Integers wrap modulo 2^bits.
  const double span = std::ldexp(1.0, bits);
  double wrapped = std::fmod(v, span);
  // One or the other: 2^64 - 1, wrapped from -1, reads as 2^64 in a double, past `beyond`.
  if (wrapped < low)
    wrapped += span;
  else if (wrapped >= beyond)
    wrapped -= span;
  return wrapped;
}

// Each dtype's edges: wrapping, saturation, infinities, NaN, halves.
std::vector<double> cast_inputs(DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (dtype) {
    case DType::boolean:
      return {0, 1, 1, 0};
    case DType::u8:
      return {0, 1, 127, 128, 200, 255};
    case DType::i8:
      return {0, 1, -1, 127, -128, -100};
    case DType::u16:
      return {0, 1, 255, 256, 32767, 32768, 65535};
    case DType::i16:
      return {0, 1, -1, 127, 128, -129, 255, 256, -300, 32767, -32768};
    case DType::u32:
      return {0, 1, 255, 256, 65535, 65536, 2147483647, 2147483648.0, 4294967295.0};
    case DType::u64:  // each exact in a double: 2^63 and 2^64 - 2^11 are past i64's range
      return {0, 1, 255, 256, 70000, 4294967296.0, 0x1p63, 0x1p64 - 0x1p11};
    case DType::i32:
    case DType::i64:
      return {0, 1, -1, 127, 128, -129, 255, 256, -300, 70000, -70000, 2147483647, -2147483648.0};
    default: {
      std::vector<double> v{
          0,     1.5,   -1.5,   -2.75, 100.25, 255.5,
          256.0, 300.5, -300.5, 65504, -70000, 3e9,
          -3e9,  1e20,  -1e20,  inf,   -inf,   std::numeric_limits<double>::quiet_NaN()};
      for (double& e : v) e = rounded(e, dtype);
      return v;
    }
  }
}

// op.cast.rules.<from>_to_<to>: the rules of ops.hpp on each dtype's edge values.
void cast_pair(const Device& d, DType from, DType to) {
  CpuFallback no_fallback(false);
  if (!supports_op(d, "cast", from) || !supports_op(d, "cast", to))
    throw NotSupported("hal ops lists no cast of " + std::string(to_string(from)) + " or of " +
                       std::string(to_string(to)));
  Stream stream = d.create_stream();
  const std::string what = std::string(to_string(from)) + " to " + std::string(to_string(to));
  const auto values = cast_inputs(from);
  const Tensor out =
      cast(make(values, {static_cast<int64_t>(values.size())}, from, stream), to, stream);
  check(out.dtype() == to, what + " gives " + std::string(to_string(out.dtype())));
  const auto got = numbers(out, stream);
  for (size_t i = 0; i < values.size(); ++i) {
    const double want = cast_reference(values[i], from, to);
    const std::string at = what + " of " + std::to_string(values[i]) + " is " +
                           std::to_string(got[i]) + ", expected " + std::to_string(want);
    check(std::isnan(want) ? std::isnan(got[i]) : got[i] == want, at);
  }
}

}  // namespace

// Cases that do more than compare with cpu:0 (op_cases.cpp), which checks the op table.
void add_op_reference_cases(Cases& cases) {
  for (const BinaryCase& c : kBinary)
    cases.push_back({"op.binary." + std::string(c.name) + ".broadcast",
                     [&c](const Device& d) { binary_broadcast(d, c); }});
  for (const UnaryCase& c : kUnary) {
    cases.push_back(
        {"op.unary." + std::string(c.name), [&c](const Device& d) { unary_values(d, c); }});
    cases.push_back({"op.unary." + std::string(c.name) + ".special_values",
                     [&c](const Device& d) { unary_special_values(d, c); }});
  }
  cases.push_back({"op.elementwise.views_as_operands", views_as_operands});
  for (const Comparison& c : kComparisons)
    cases.push_back(
        {"op.compare." + std::string(c.name), [&c](const Device& d) { comparison(d, c); }});
  cases.push_back({"op.pow.broadcast", pow_values});
  for (DType dtype : {DType::f16, DType::bf16})
    cases.push_back({"op.half_precision." + std::string(to_string(dtype)),
                     [dtype](const Device& d) { half_precision(d, dtype); }});
  cases.push_back({"op.where.broadcast_and_views", where_values});
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes)
      cases.push_back(
          {"op.cast.rules." + std::string(to_string(from)) + "_to_" + std::string(to_string(to)),
           [from, to](const Device& d) { cast_pair(d, from, to); }});
  cases.push_back({"op.cast.of_a_view_and_to_the_same_dtype", [](const Device& d) {
                     CpuFallback no_fallback(false);
                     if (!supports_op(d, "cast", DType::f32))
                       throw NotSupported("hal ops lists no cast of f32");
                     Stream stream = d.create_stream();
                     const Tensor x = make(inputs(6, DType::f32, 13), {2, 3}, DType::f32, stream);
                     const Tensor same = cast(x, DType::f32, stream);
                     check(same.storage().impl() == x.storage().impl(),
                           "a cast to the same dtype copied");
                     const Tensor t = cast(x.transpose(0, 1), DType::i32, stream);
                     check(t.shape() == Shape{3, 2}, "shape " + to_string(t.shape()));
                     const auto v = numbers(x, stream), got = numbers(t, stream);
                     for (size_t r = 0; r < 3; ++r)
                       for (size_t c = 0; c < 2; ++c)
                         check(got[r * 2 + c] == std::trunc(v[c * 3 + r]),
                               "[" + std::to_string(r) + ", " + std::to_string(c) + "]");
                   }});
  // Each lies just above a half-way point of the target whose float rounding is the half-way
  // point itself: rounding twice gives the even neighbour below, once the one above.
  cases.push_back(
      {"op.cast.to_half_precision_rounds_once", [](const Device& d) {
         struct Row {
           DType from, to;
           double value, want;
         };
         const Row rows[] = {{DType::f64, DType::f16, 1 + std::ldexp(1, -11) + std::ldexp(1, -40),
                              1 + std::ldexp(1, -10)},
                             {DType::f64, DType::bf16, 1 + std::ldexp(1, -8) + std::ldexp(1, -40),
                              1 + std::ldexp(1, -7)},
                             {DType::i64, DType::bf16, std::ldexp(1, 31) + std::ldexp(1, 23) + 1,
                              std::ldexp(1, 31) + std::ldexp(1, 24)},
                             {DType::i32, DType::bf16, std::ldexp(1, 30) + std::ldexp(1, 22) + 1,
                              std::ldexp(1, 30) + std::ldexp(1, 23)}};
         CpuFallback no_fallback(false);
         Stream stream = d.create_stream();
         bool ran = false;
         for (const Row& row : rows) {
           if (!supports_op(d, "cast", row.from) || !supports_op(d, "cast", row.to)) continue;
           ran = true;
           // make() holds each value as a double: exact for these integers.
           const Tensor source = make({row.value, -row.value}, {2}, row.from, stream);
           const auto got = numbers(cast(source, row.to, stream), stream);
           check(got == std::vector<double>{row.want, -row.want},
                 std::string(to_string(row.from)) + " to " + std::string(to_string(row.to)) +
                     " gives " + std::to_string(got[0]));
         }
         if (!ran) throw NotSupported("hal ops lists none of these casts");
       }});
  cases.push_back(
      {"op.integers.u8_wraps", [](const Device& d) {
         Stream stream = d.create_stream();
         for_listed(d, {"add", "mul", "div"}, {DType::u8}, [&](DType) {
           const Tensor a = make({200, 7, 255}, {3}, DType::u8, stream);
           const Tensor b = make({100, 3, 1}, {3}, DType::u8, stream);
           check(numbers(add(a, b, stream), stream) == std::vector<double>{44, 10, 0}, "u8 add");
           check(numbers(mul(a, b, stream), stream) == std::vector<double>{32, 21, 255}, "u8 mul");
           check(numbers(div(a, b, stream), stream) == std::vector<double>{2, 2, 255},
                 "u8 div: 255 is no signed -1");
         });
       }});
  cases.push_back(
      {"op.integers.i8_wraps", [](const Device& d) {
         Stream stream = d.create_stream();
         for_listed(d, {"neg", "sub"}, {DType::i8}, [&](DType) {
           const Tensor c = make({-128, 100}, {2}, DType::i8, stream);
           check(numbers(neg(c, stream), stream) == std::vector<double>{-128, -100}, "i8 neg");
           check(numbers(sub(c, make({1, -100}, {2}, DType::i8, stream), stream), stream) ==
                     std::vector<double>{127, -56},
                 "i8 sub");
         });
       }});
}

}  // namespace hal::cts

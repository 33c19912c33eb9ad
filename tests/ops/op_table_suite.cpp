// The op table and what it promises on every device: type promotion, integer arithmetic that is
// exact, conversions that round once, special values through every unary op, errors that name
// the op, dtypes, shapes and device, and `supported_ops` agreeing with what the ops do.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "op_values.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class OpTableSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
  bool runs(std::string_view op, DType dtype) const { return supports_op(device(), op, dtype); }
};

TEST(TypePromotion, FollowsPyTorchWithinHalsDtypes) {
  using enum DType;
  struct Row {
    DType a, b, want;
  };
  const Row rows[] = {{f32, f32, f32},
                      {f32, i32, f32},
                      {i64, f16, f16},
                      {f16, bf16, f32},
                      {bf16, f64, f64},
                      {i8, u8, i32},
                      {u8, i32, i32},
                      {i32, i64, i64},
                      {boolean, u8, u8},
                      {boolean, f16, f16},
                      {boolean, boolean, boolean},
                      {i8, i8, i8},
                      {f16, f32, f32},
                      {u8, u8, u8}};
  for (const Row& row : rows) {
    EXPECT_EQ(promote_types(row.a, row.b), row.want)
        << to_string(row.a) << " with " << to_string(row.b);
    EXPECT_EQ(promote_types(row.b, row.a), row.want) << "symmetric: " << to_string(row.b);
  }
}

TEST_P(OpTableSuite, ListsEveryOpOfTheHeaderAndDoesWhatItLists) {
  const std::vector<std::string> header_ops{
      "add",         "sub",        "mul",      "div",   "maximum", "minimum", "pow",    "eq",
      "ne",          "lt",         "le",       "gt",    "ge",      "where",   "cast",   "neg",
      "abs",         "relu",       "exp",      "log",   "sqrt",    "rsqrt",   "tanh",   "sigmoid",
      "gelu",        "silu",       "sum",      "mean",  "max",     "min",     "argmax", "softmax",
      "log_softmax", "layer_norm", "rms_norm", "matmul"};
  const std::vector<OpSupport> table = supported_ops(device());
  ASSERT_EQ(table.size(), header_ops.size());
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].name, header_ops[i]);
    ASSERT_EQ(table[i].kernels.size(), table[i].dtypes.size()) << table[i].name;
  }
  expect_error([&] { supports_op(device(), "conv9d", DType::f32); }, ErrorCode::NotFound,
               {"conv9d"});
  // One op run both ways: listed, it runs; not listed, it says Unsupported.
  const Tensor x = make({1, 2, 3}, {3}, DType::f32, stream);
  if (runs("exp", DType::f32))
    EXPECT_EQ(exp(x, stream).shape(), (Shape{3}));
  else
    expect_error([&] { exp(x, stream); }, ErrorCode::Unsupported, {"exp of f32[3]", id()});
}

TEST_P(OpTableSuite, MixedDtypesArePromoted) {
  if (!runs("mul", DType::f32) || !runs("cast", DType::i32))
    GTEST_SKIP() << id() << " has no f32 mul or no cast (hal ops)";
  const Tensor a = make({1.5, -2}, {2}, DType::f32, stream);
  const Tensor b = make({3, 4}, {2}, DType::i32, stream);
  const Tensor product = mul(a, b, stream);
  EXPECT_EQ(product.dtype(), DType::f32);
  EXPECT_EQ(numbers(product, stream), (std::vector<double>{4.5, -8}));
  EXPECT_EQ(lt(b, a, stream).dtype(), DType::boolean);
}

TEST_P(OpTableSuite, SmallIntegersComputeAndWrap) {
  if (!runs("add", DType::u8)) GTEST_SKIP() << id() << " has no u8 add (hal ops)";
  const Tensor a = make({200, 7, 255}, {3}, DType::u8, stream);
  const Tensor b = make({100, 3, 1}, {3}, DType::u8, stream);
  EXPECT_EQ(numbers(add(a, b, stream), stream), (std::vector<double>{44, 10, 0}));
  EXPECT_EQ(numbers(mul(a, b, stream), stream), (std::vector<double>{32, 21, 255}));
  EXPECT_EQ(numbers(div(a, b, stream), stream), (std::vector<double>{2, 2, 255}))
      << "u8 / 255 is no signed -1";
  const Tensor c = make({-128, 100}, {2}, DType::i8, stream);
  EXPECT_EQ(numbers(neg(c, stream), stream), (std::vector<double>{-128, -100}));
  EXPECT_EQ(numbers(sub(c, make({1, -100}, {2}, DType::i8, stream), stream), stream),
            (std::vector<double>{127, -56}));
}

TEST_P(OpTableSuite, IntegerSumsAreExactInI64) {
  if (!runs("sum", DType::i64)) GTEST_SKIP() << id() << " has no i64 sum (hal ops)";
  const int64_t big[] = {int64_t{1} << 53, 1, 1};
  const Tensor wide = from_host(big, {3}, DType::i64, stream);
  EXPECT_EQ(sum(wide, {}, false, stream).to_vector<int64_t>(stream),
            (std::vector<int64_t>{(int64_t{1} << 53) + 2}))
      << "a sum through double loses the 1s";
  const int64_t wrap[] = {std::numeric_limits<int64_t>::max(), 2};
  EXPECT_EQ(
      sum(from_host(wrap, {2}, DType::i64, stream), {}, false, stream).to_vector<int64_t>(stream),
      (std::vector<int64_t>{std::numeric_limits<int64_t>::min() + 1}))
      << "i64 sums wrap in two's complement";
  if (!runs("sum", DType::i32)) return;
  const int32_t narrow[] = {std::numeric_limits<int32_t>::max(), 1};
  const Tensor total = sum(from_host(narrow, {2}, DType::i32, stream), {}, false, stream);
  EXPECT_EQ(total.dtype(), DType::i64) << "sum of i32 counts in i64, as in PyTorch";
  EXPECT_EQ(total.to_vector<int64_t>(stream), (std::vector<int64_t>{int64_t{1} << 31}));
  const Tensor flags = make({1, 0, 1, 1}, {4}, DType::boolean, stream);
  EXPECT_EQ(sum(flags, {}, false, stream).to_vector<int64_t>(stream), (std::vector<int64_t>{3}));
  const Tensor average = mean(make({1, 2, 4, 4}, {4}, DType::i32, stream), {}, false, stream);
  EXPECT_EQ(average.dtype(), DType::f32);
  EXPECT_EQ(average.to_vector<float>(stream), (std::vector<float>{2.75f}));
}

TEST_P(OpTableSuite, CastsToHalfPrecisionRoundOnce) {
  // Each lies just above a half-way point of the target whose float rounding is the half-way
  // point itself: rounding twice gives the even neighbour below, once the one above.
  struct Row {
    DType from, to;
    double value, want;
  };
  const Row rows[] = {
      {DType::f64, DType::f16, 1 + std::ldexp(1, -11) + std::ldexp(1, -40), 1 + std::ldexp(1, -10)},
      {DType::f64, DType::bf16, 1 + std::ldexp(1, -8) + std::ldexp(1, -40), 1 + std::ldexp(1, -7)},
      {DType::i64, DType::bf16, std::ldexp(1, 31) + std::ldexp(1, 23) + 1,
       std::ldexp(1, 31) + std::ldexp(1, 24)},
      {DType::i32, DType::bf16, std::ldexp(1, 30) + std::ldexp(1, 22) + 1,
       std::ldexp(1, 30) + std::ldexp(1, 23)}};
  for (const Row& row : rows) {
    if (!runs("cast", row.from) || !runs("cast", row.to)) continue;
    Tensor source;
    if (row.from == DType::f64) {
      source = make({row.value, -row.value}, {2}, DType::f64, stream);
    } else if (row.from == DType::i64) {
      const int64_t values[] = {static_cast<int64_t>(row.value), -static_cast<int64_t>(row.value)};
      source = from_host(values, {2}, DType::i64, stream);
    } else {
      const int32_t values[] = {static_cast<int32_t>(row.value), -static_cast<int32_t>(row.value)};
      source = from_host(values, {2}, DType::i32, stream);
    }
    EXPECT_EQ(numbers(cast(source, row.to, stream), stream),
              (std::vector<double>{row.want, -row.want}))
        << to_string(row.from) << " to " << to_string(row.to) << " on " << id();
  }
}

// Special values through every unary op against the C library in double, rounded to f32. A
// device may flush subnormal results to zero (OpenCL allows it for float).
TEST_P(OpTableSuite, UnaryOpsOnInfinitiesNansZerosAndSubnormals) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double sub = std::ldexp(1.0, -140);  // a float subnormal
  const std::vector<double> x{kInf, -kInf, std::nan(""), -0.0, 0.0, sub, -sub, 1, -1};
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&, Stream&);
    double (*reference)(double);
  };
  const Case cases[] = {
      {"neg", neg, [](double v) { return -v; }},
      {"abs", abs, [](double v) { return std::fabs(v); }},
      {"relu", relu, [](double v) { return v < 0 ? 0.0 : v; }},
      {"exp", exp, [](double v) { return std::exp(v); }},
      {"log", log, [](double v) { return std::log(v); }},
      {"sqrt", sqrt, [](double v) { return std::sqrt(v); }},
      {"rsqrt", rsqrt, [](double v) { return 1 / std::sqrt(v); }},
      {"tanh", tanh, [](double v) { return std::tanh(v); }},
      {"sigmoid", sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"gelu", gelu, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"silu", silu, [](double v) { return v / (1 + std::exp(-v)); }}};
  for (const Case& c : cases) {
    if (!runs(c.name, DType::f32)) continue;
    const std::vector<double> got = numbers(c.op(make(x, {9}, DType::f32, stream), stream), stream);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = static_cast<float>(c.reference(static_cast<float>(x[i])));
      const std::string what = std::string(c.name) + "(" + std::to_string(x[i]) + ") on " + id();
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << what << " gives " << got[i];
      } else if (std::isinf(want) || want == 0) {
        EXPECT_EQ(got[i], want) << what;
        if (want == 0 && std::fabs(x[i]) > sub) {
          EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << what << ": the zero's sign";
        }
      } else if (std::fabs(want) < std::numeric_limits<float>::min()) {
        EXPECT_TRUE(got[i] == want || got[i] == 0) << what << " gives " << got[i];
      } else {
        EXPECT_NEAR(got[i], want, 4e-7 * std::fabs(want)) << what;
      }
    }
  }
}

TEST_P(OpTableSuite, ErrorsNameTheOpTheDtypesTheShapesAndTheDevice) {
  for (DType dtype : {DType::f16, DType::i8, DType::boolean}) {
    const Tensor a = zeros({2, 3}, DType::f32, stream);
    if (!runs("cast", DType::f32)) break;
    const Tensor x = cast(a, dtype, stream);
    for (const char* op : {"add", "pow", "lt"}) {
      if (runs(op, dtype)) continue;
      const std::string want = std::string(op) + " of " + std::string(to_string(dtype)) + "[2, 3]";
      expect_error(
          [&] {
            if (std::string(op) == "add") add(x, x, stream);
            if (std::string(op) == "pow") pow(x, x, stream);
            if (std::string(op) == "lt") lt(x, x, stream);
          },
          ErrorCode::Unsupported, {want, id(), "no kernel for " + std::string(to_string(dtype))});
    }
  }
  if (runs("where", DType::f32) || !runs("add", DType::f32)) return;
  // A device without `where` (sim) names it, with the dtypes and shapes.
  const Tensor cond = zeros({2}, DType::boolean, stream), y = zeros({2}, DType::f32, stream);
  expect_error([&] { where(cond, y, y, stream); }, ErrorCode::Unsupported,
               {"where of bool[2]", "f32[2]", id()});
}

HAL_DEVICE_SUITE(OpTableSuite);

}  // namespace
}  // namespace hal::test

// sum, mean, max, min and argmax over any axes on every device with kernels, against plain
// loops on the host: shapes with size-1 and empty dimensions, negative axes, keepdim, views
// that are not contiguous, NaN, ties, and reductions large enough to be split across threads.
#include <cmath>
#include <limits>

#include "op_values.hpp"

namespace hal::test {
namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);

struct ReduceCase {
  const char* name;
  ReduceFn op;
};

const ReduceCase kReductions[] = {
    {"sum", sum}, {"mean", mean}, {"max", max}, {"min", min}, {"argmax", argmax}};

// The reference: every element of x (row-major values over `shape`) goes to the output its kept
// coordinates name, at the position its reduced coordinates name; then each output folds its
// list.
std::vector<double> reduce_reference(const std::string& op, const std::vector<double>& x,
                                     const Shape& shape, std::vector<int64_t> axes) {
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + int64_t(shape.size()) : a)] = true;
  int64_t outputs = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d]) outputs *= shape[d];
  std::vector<std::vector<double>> lists(static_cast<size_t>(outputs));
  std::vector<int64_t> index(shape.size(), 0);
  for (double v : x) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) o = o * shape[d] + index[d];
    lists[static_cast<size_t>(o)].push_back(v);  // in row-major order of the reduced dims
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  std::vector<double> out;
  for (const auto& list : lists) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (op == "sum" || op == "mean") {
      double total = 0;
      for (double v : list) total += v;
      out.push_back(op == "sum" ? total : total / static_cast<double>(list.size()));
    } else if (op == "argmax") {
      size_t best = 0;
      for (size_t i = 1; i < list.size(); ++i)
        if (!std::isnan(list[best]) && (std::isnan(list[i]) || list[i] > list[best])) best = i;
      out.push_back(static_cast<double>(best));
    } else {
      double best = op == "max" ? -INFINITY : INFINITY;
      for (double v : list) {
        if (std::isnan(v)) best = nan;
        if (std::isnan(best)) break;
        best = op == "max" ? std::max(best, v) : std::min(best, v);
      }
      out.push_back(best);
    }
  }
  return out;
}

class ReduceSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: ReduceWithoutKernels checks that it says so";
  }
  Stream stream = device().create_stream();

  // Checks op(x) against the reference, x given by its values and shape.
  void check(const ReduceCase& c, const Tensor& x, const std::vector<double>& values,
             const std::vector<int64_t>& axes, bool keepdim, const std::string& what) {
    const Tensor out = c.op(x, axes, keepdim, stream);
    const std::string op = c.name;
    const bool counts = op == "sum" && (x.dtype() == DType::i32 || x.dtype() == DType::i64);
    EXPECT_EQ(out.dtype(), op == "argmax" || counts ? DType::i64 : x.dtype()) << what;
    Shape want_shape;
    std::vector<bool> reduced(x.shape().size(), axes.empty());
    for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + x.dim() : a)] = true;
    for (size_t d = 0; d < reduced.size(); ++d)
      if (!reduced[d] || keepdim) want_shape.push_back(reduced[d] ? 1 : x.shape()[d]);
    EXPECT_EQ(out.shape(), want_shape) << what;
    auto want = reduce_reference(op, values, x.shape(), axes);
    if (op == "argmax") {
      EXPECT_EQ(numbers(out, stream), want) << what;
      return;
    }
    // Sums round once per addition: the tolerance grows with the sum of magnitudes.
    const auto magnitudes = reduce_reference(
        "sum",
        [&] {
          std::vector<double> a = values;
          for (double& v : a) v = std::fabs(v);
          return a;
        }(),
        x.shape(), axes);
    const auto got = numbers(out, stream);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      const double exact = want[i];
      if (std::isnan(exact)) {
        EXPECT_TRUE(std::isnan(got[i])) << what << " output " << i;
        continue;
      }
      const double spread = op == "sum" ? magnitudes[i] : op == "mean" ? std::fabs(exact) : 0;
      const double allowed = std::max(tolerance(x.dtype(), exact), tolerance(x.dtype(), spread));
      EXPECT_NEAR(got[i], rounded(exact, x.dtype()), allowed) << what << " output " << i;
    }
  }
};

TEST_P(ReduceSuite, EveryReductionOverAnyAxes) {
  const std::pair<Shape, std::vector<int64_t>> cases[] = {
      {{7}, {}},        {{3, 5}, {1}},          {{3, 5}, {0}},
      {{3, 5}, {-1}},   {{2, 3, 4}, {0, 2}},    {{2, 3, 4}, {}},
      {{4, 1, 3}, {1}}, {{2, 3, 4}, {2, 1}},    {{1}, {0}},
      {{}, {}},         {{3, 0}, {0}},          {{33, 257}, {1}},
      {{257, 33}, {0}}, {{5, 6, 7}, {0, 1, 2}},
  };
  std::vector<DType> dtypes = compute_dtypes(device());
  dtypes.insert(dtypes.end(), {DType::f16, DType::bf16});
  for (const ReduceCase& c : kReductions)
    for (DType dtype : dtypes) {
      if (std::string(c.name) == "mean" && integral(dtype)) continue;
      for (const auto& [shape, axes] : cases)
        for (bool keepdim : {false, true}) {
          const std::string what = std::string(c.name) + " " + std::string(to_string(dtype)) +
                                   " of " + to_string(shape) + " over " +
                                   ::testing::PrintToString(axes) + (keepdim ? " keepdim" : "");
          const auto values = inputs(static_cast<size_t>(numel(shape)), dtype, 21);
          check(c, make(values, shape, dtype, stream), values, axes, keepdim, what);
        }
    }
}

TEST_P(ReduceSuite, ViewsThatAreNotContiguous) {
  const auto values = inputs(120, DType::f32, 22);
  const Tensor base = make(values, {4, 5, 6}, DType::f32, stream);
  const Tensor views[] = {base.transpose(0, 2), base.slice(1, 1, 5, 2), base.permute({1, 2, 0}),
                          base.slice(0, 1, 2).expand({3, 5, 6})};
  for (const Tensor& view : views)
    for (const ReduceCase& c : kReductions)
      for (const std::vector<int64_t>& axes : {std::vector<int64_t>{0}, {1, 2}, {}, {-1}})
        check(c, view, numbers(view, stream), axes, false,
              std::string(c.name) + " of " + view.describe() + " over " +
                  ::testing::PrintToString(axes));
}

TEST_P(ReduceSuite, LargeReductionsAreSplitAndExact) {
  // Few outputs with many elements each: the CPU splits each output across its threads.
  const auto values = inputs(1 << 18, DType::f32, 23);
  const Tensor x = make(values, {2, 1 << 17}, DType::f32, stream);
  for (const ReduceCase& c : kReductions) {
    check(c, x, values, {1}, false, std::string(c.name) + " of 2 x 2^17");
    check(c, x, values, {}, false, std::string(c.name) + " of all 2^18");
  }
}

TEST_P(ReduceSuite, NanWinsAndTiesGoToTheFirst) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values{1, 5, 5, 2, nan, 7, nan, 3};
  const Tensor x = make(values, {2, 4}, DType::f32, stream);
  EXPECT_EQ(argmax(x, {1}, false, stream).to_vector<int64_t>(stream), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmax(x, {}, false, stream).to_vector<int64_t>(stream), (std::vector<int64_t>{4}));
  const auto maxima = max(x, {1}, false, stream).to_vector<float>(stream);
  EXPECT_EQ(maxima[0], 5.0f);
  EXPECT_TRUE(std::isnan(maxima[1]));
  EXPECT_TRUE(std::isnan(min(x, {}, false, stream).to_vector<float>(stream)[0]));
  EXPECT_TRUE(std::isnan(sum(x, {1}, false, stream).to_vector<float>(stream)[1]));
}

TEST_P(ReduceSuite, EmptyReductions) {
  const Tensor x = zeros({3, 0}, DType::f32, stream);
  EXPECT_EQ(sum(x, {1}, false, stream).to_vector<float>(stream), (std::vector<float>{0, 0, 0}));
  for (float m : mean(x, {1}, false, stream).to_vector<float>(stream)) EXPECT_TRUE(std::isnan(m));
  EXPECT_EQ(sum(x, {0}, false, stream).shape(), (Shape{0}));
  EXPECT_EQ(max(x, {0}, false, stream).shape(), (Shape{0})) << "no outputs: nothing to refuse";
  for (ReduceFn op : {ReduceFn{max}, ReduceFn{min}, ReduceFn{argmax}})
    expect_error([&] { op(x, {1}, false, stream); }, ErrorCode::InvalidArgument,
                 {"f32[3, 0]", "no elements"});
}

TEST_P(ReduceSuite, BadAxesAndDtypesAreRefused) {
  const Tensor x = zeros({2, 3}, DType::f32, stream);
  expect_error([&] { sum(x, {2}, false, stream); }, ErrorCode::InvalidArgument,
               {"sum", "f32[2, 3]", "axis 2", "out of range"});
  expect_error([&] { max(x, {-3}, false, stream); }, ErrorCode::InvalidArgument,
               {"max", "axis -3", "out of range"});
  expect_error(
      [&] {
        argmax(x, {0, -2}, false, stream);
      },
      ErrorCode::InvalidArgument, {"argmax", "axis -2", "twice"});
  expect_error([&] { argmax(zeros({2}, DType::boolean, stream), {}, false, stream); },
               ErrorCode::Unsupported, {"argmax of bool[2]", id(), "argmax takes"});
}

class ReduceWithoutKernels : public DeviceTest {
 protected:
  void SetUp() override {
    if (runs_kernels(device()) || has_builtin_ops(device()))
      GTEST_SKIP() << id() << " runs ops: see ReduceSuite and the plugin tests";
  }
};

TEST_P(ReduceWithoutKernels, ReductionsSayTheyAreUnsupported) {
  Stream stream = device().create_stream();
  const Tensor x = zeros({2, 3}, DType::f32, stream);
  expect_error([&] { sum(x, {}, false, stream); }, ErrorCode::Unsupported, {"sum", id()});
  expect_error([&] { softmax(x, -1, stream); }, ErrorCode::Unsupported, {"max", id()});
}

HAL_DEVICE_SUITE(ReduceSuite);
HAL_DEVICE_SUITE(ReduceWithoutKernels);

}  // namespace
}  // namespace hal::test

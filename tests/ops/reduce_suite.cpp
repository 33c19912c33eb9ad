// What sum, mean, max, min and argmax refuse on every device, and how the message names it.
// Their values against plain loops on the host (any axes, keepdim, views, NaN, ties, long
// reductions) are conformance cases (cts/op_reduce_cases.cpp: op.reduce.*, op.sum.*).
#include "op_values.hpp"

namespace hal::test {
namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);

class ReduceSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: ReduceWithoutKernels checks that it says so";
  }
  Stream stream = device().create_stream();
};

// What an empty sum and mean give is op.reduce.empty; max, min and argmax have no identity.
TEST_P(ReduceSuite, EmptyReductionsWithoutAnIdentityAreRefused) {
  const Tensor x = zeros({3, 0}, DType::f32, stream);
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

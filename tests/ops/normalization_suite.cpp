// What softmax, log-softmax, layer norm and RMS norm refuse on every device with kernels. Their
// values against double precision loops on the host are conformance cases
// (cts/op_reduce_cases.cpp: op.softmax.*, op.log_softmax.*, op.layer_norm_and_rms_norm).
#include <cmath>

#include "op_values.hpp"

namespace hal::test {
namespace {

class NormalizationSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: ReduceWithoutKernels covers it";
  }
  Stream stream = device().create_stream();
};

TEST_P(NormalizationSuite, BadArgumentsAreRefusedByName) {
  const Tensor x = zeros({2, 3}, DType::f32, stream);
  expect_error([&] { softmax(x, 2, stream); }, ErrorCode::InvalidArgument,
               {"softmax", "axis 2", "out of range"});
  expect_error([&] { log_softmax(zeros({2}, DType::i32, stream), 0, stream); },
               ErrorCode::Unsupported, {"log_softmax of i32[2] on " + id(), "no kernel for i32"});
  expect_error([&] { layer_norm(x, {2}, Tensor(), Tensor(), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"layer_norm", "f32[2, 3]", "[2]", "trailing"});
  expect_error([&] { rms_norm(x, {}, Tensor(), 1e-5, stream); }, ErrorCode::InvalidArgument,
               {"rms_norm", "trailing"});
  expect_error([&] { layer_norm(x, {3}, zeros({4}, DType::f32, stream), Tensor(), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"layer_norm", "weight", "f32[4]", "[3]"});
  expect_error([&] { rms_norm(x, {3}, zeros({3}, DType::f64, stream), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"rms_norm", "dtypes differ"});
  EXPECT_EQ(softmax(zeros({0, 3}, DType::f32, stream), 0, stream).shape(), (Shape{0, 3}));
}

TEST_P(NormalizationSuite, EpsMustBeFiniteAndNotNegative) {
  const Tensor x = ones({2, 3}, DType::f32, stream);
  for (double eps : {-1.0, std::nan(""), HUGE_VAL}) {
    expect_error([&] { rms_norm(x, {3}, Tensor(), eps, stream); }, ErrorCode::InvalidArgument,
                 {"rms_norm of f32[2, 3]", "eps", "is not finite and >= 0"});
    expect_error([&] { layer_norm(x, {3}, Tensor(), Tensor(), eps, stream); },
                 ErrorCode::InvalidArgument, {"layer_norm of f32[2, 3]", "eps"});
  }
  // f16 is normalised in f32: the check comes first all the same.
  expect_error(
      [&] {
        rms_norm(ones({2, 3}, DType::f16, stream), {3}, Tensor(), -1e-5, stream);
      },
      ErrorCode::InvalidArgument, {"rms_norm of f16[2, 3]", "eps -0.000010"});
}

TEST_P(NormalizationSuite, BackwardOperandsAreCheckedByName) {
  const Tensor x = ones({2, 3}, DType::f32, stream);
  expect_error(
      [&] {
        layer_norm_backward(x, zeros({3, 2}, DType::f32, stream), {3}, Tensor(), 1e-5, stream);
      },
      ErrorCode::InvalidArgument,
      {"layer_norm_backward of f32[2, 3]", "gradient f32[3, 2]", "x's shape"});
  expect_error(
      [&] {
        rms_norm_backward(x, zeros({2, 3}, DType::f64, stream), {3}, Tensor(), 1e-5, stream);
      },
      ErrorCode::InvalidArgument, {"rms_norm_backward", "dtypes differ"});
  expect_error([&] { layer_norm_backward(x, Tensor(), {3}, Tensor(), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"layer_norm_backward"});
  expect_error([&] { rms_norm_backward(x, x, {2}, Tensor(), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"rms_norm_backward", "[2]", "trailing"});
  expect_error([&] { layer_norm_backward(x, x, {3}, ones({2}, DType::f32, stream), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"layer_norm_backward", "weight", "f32[2]", "[3]"});
  expect_error([&] { layer_norm_backward(x, x, {3}, Tensor(), -1, stream); },
               ErrorCode::InvalidArgument, {"layer_norm_backward of f32[2, 3]", "eps"});
  expect_error(
      [&] {
        rms_norm_backward(ones({2}, DType::i32, stream), ones({2}, DType::i32, stream), {2},
                          Tensor(), 1e-5, stream);
      },
      ErrorCode::Unsupported, {"rms_norm_backward of i32[2]", "no kernel for i32"});
  EXPECT_EQ(layer_norm_backward(zeros({0, 3}, DType::f32, stream),
                                zeros({0, 3}, DType::f32, stream), {3}, Tensor(), 1e-5, stream)
                .shape(),
            (Shape{0, 3}));
}

HAL_DEVICE_SUITE(NormalizationSuite);

}  // namespace
}  // namespace hal::test

// What pow and where refuse, on every device with kernels. Their values, the comparisons',
// casts between every pair of dtypes and f16/bf16 computed in f32 are conformance cases
// (cts/op_reference_cases.cpp: op.pow.*, op.where.*, op.compare.*, op.cast.*,
// op.half_precision.*).
#include "op_values.hpp"

namespace hal::test {
namespace {

class CompareCastSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: ElementwiseWithoutKernels covers it";
  }
  Stream stream = device().create_stream();
};

TEST_P(CompareCastSuite, PowOfIntegersIsRefusedByName) {
  const Tensor ints = zeros({2}, DType::i32, stream);
  expect_error([&] { pow(ints, ints, stream); }, ErrorCode::Unsupported,
               {"pow of i32[2]", id(), "no kernel for i32", "pow takes f32, f16, bf16 and f64"});
}

TEST_P(CompareCastSuite, WhereRefusesAConditionThatIsNotBool) {
  const Tensor f = zeros({3}, DType::f32, stream);
  expect_error([&] { where(f, f, f, stream); }, ErrorCode::InvalidArgument,
               {"where", "f32[3]", "must be bool"});
}

HAL_DEVICE_SUITE(CompareCastSuite);

}  // namespace
}  // namespace hal::test

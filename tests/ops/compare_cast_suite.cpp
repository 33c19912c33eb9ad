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

// A bool tensor over memory hal did not fill (Tensor(Buffer), wrap_native_memory, DLPack) may
// hold bytes other than 0 and 1: every device reads them as the CPU does, any byte but 0 as
// true. OpenCL's and Vulkan's casts read the byte as a number (2 became 2 as i32, 255 as 255).
TEST_P(CompareCastSuite, BoolBytesOtherThanZeroAndOneReadAsTrue) {
  const unsigned char bytes[4] = {0, 2, 1, 255};
  Buffer raw = device().allocate(sizeof bytes);
  stream.copy_from_host(raw, bytes, sizeof bytes);  // as stored: no host normalisation
  const Tensor flags(raw, DType::boolean, {4});
  EXPECT_EQ(cast(flags, DType::i32, stream).to_vector<int32_t>(stream),
            (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(cast(flags, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{0, 1, 1, 1}));
  EXPECT_EQ(cast(flags, DType::u8, stream).to_vector<uint8_t>(stream),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(cast(flags, DType::i8, stream).to_vector<int8_t>(stream),
            (std::vector<int8_t>{0, 1, 1, 1}));
  // Strided: [[0, 2], [1, 255]] transposed reads 0, 1, 2, 255.
  EXPECT_EQ(
      cast(flags.reshape({2, 2}).transpose(0, 1), DType::i32, stream).to_vector<int32_t>(stream),
      (std::vector<int32_t>{0, 1, 1, 1}));
  const Tensor a = full({4}, 7.0, DType::f32, stream), b = full({4}, -1.0, DType::f32, stream);
  EXPECT_EQ(where(flags, a, b, stream).to_vector<float>(stream), (std::vector<float>{-1, 7, 7, 7}));
}

HAL_DEVICE_SUITE(CompareCastSuite);

}  // namespace
}  // namespace hal::test

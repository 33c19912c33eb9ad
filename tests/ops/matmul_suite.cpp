// What matmul refuses on every device, and how the message names it. Its values against a
// plain triple loop are conformance cases (cts/op_reduce_cases.cpp: op.matmul.*).
#include "op_values.hpp"

namespace hal::test {
namespace {

class MatmulSuite : public DeviceTest {
 protected:
  void SetUp() override {
    // Devices without a BLAS say so (BadArguments checks it); the others must multiply.
    Stream probe = device().create_stream();
    try {
      matmul(zeros({1, 1}, DType::f32, probe), zeros({1, 1}, DType::f32, probe), probe);
      probe.synchronize();
    } catch (const Error& error) {
      if (error.code() != ErrorCode::Unsupported) throw;
      reason_ = error.what();
    }
  }
  bool has_blas() const { return reason_.empty(); }
  std::string reason_;
  Stream stream = device().create_stream();
};

TEST_P(MatmulSuite, BadArgumentsAreRefusedByName) {
  const Tensor a = zeros({2, 3}, DType::f32, stream);
  if (!has_blas()) {
    expect_error(
        [&] {
          matmul(a, zeros({3, 2}, DType::f32, stream), stream);
        },
        ErrorCode::Unsupported, {"matmul of f32[2, 3]", id(), "no kernel for f32"});
    return;
  }
  expect_error(
      [&] {
        matmul(a, zeros({4, 2}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument, {"matmul", "[2, 3]", "[4, 2]", "inner dimensions"});
  expect_error(
      [&] { matmul(zeros({2}, DType::i32, stream), zeros({2}, DType::i32, stream), stream); },
      ErrorCode::Unsupported, {"matmul of i32[2] on " + id(), "no kernel for i32", "matmul takes"});
  expect_error(
      [&] {
        matmul(zeros({2, 3, 4}, DType::f32, stream), zeros({3, 4, 5}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument,
      {"matmul of f32[2, 3, 4]", "and f32[3, 4, 5]", "the batch dimensions", "do not broadcast"});
}

HAL_DEVICE_SUITE(MatmulSuite);

}  // namespace
}  // namespace hal::test

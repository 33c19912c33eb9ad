// Tensors on every visible device: what creation, host data and copies refuse, and how the
// message names it. What they compute (full and arange in every dtype, read-back of strided
// views, contiguous(), copies to every other device) is conformance (cts/tensor_cases.cpp).
#include <numeric>

#include "device_suite.hpp"

namespace hal::test {
namespace {

class TensorSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
};

TEST_P(TensorSuite, CreationRefusesValuesItCannotWrite) {
  expect_error(
      [&] {
        full({3, 5}, 300, DType::u8, stream);
      },
      ErrorCode::InvalidArgument, {"full", "300", "u8"});
  expect_error([&] { arange(0.0, 1.0, 0.0, DType::f32, stream); }, ErrorCode::InvalidArgument,
               {"arange", "step"});
}

TEST_P(TensorSuite, HostDataOfTheWrongSizeOrDtypeIsRefused) {
  std::vector<float> five(5);
  std::iota(five.begin(), five.end(), 0.0f);
  expect_error(
      [&] {
        from_vector(five, {2, 3}, stream);
      },
      ErrorCode::InvalidArgument, {"5 elements cannot fill shape [2, 3]"});
  const Tensor t = from_vector(five, {5}, stream);
  expect_error([&] { t.to_vector<int32_t>(stream); }, ErrorCode::InvalidArgument,
               {"to_vector", "f32", "i32"});
}

// A view that is not contiguous is packed on its own device: a stream of another is refused.
TEST_P(TensorSuite, ViewsArePackedOnlyByAStreamOfTheirDevice) {
  const Tensor small = from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}, stream);
  const Tensor transposed = small.transpose(0, 1);
  for (const Device& other : suite_devices()) {
    if (other == device()) continue;
    Stream there = other.create_stream();
    expect_error([&] { transposed.to(device(), there); }, ErrorCode::InvalidArgument,
                 {"not contiguous", "use a stream of " + id()});
    expect_error([&] { transposed.contiguous(there); }, ErrorCode::InvalidArgument,
                 {"contiguous()", other.id(), id()});
  }
  stream.synchronize();
}

HAL_DEVICE_SUITE(TensorSuite);

}  // namespace
}  // namespace hal::test

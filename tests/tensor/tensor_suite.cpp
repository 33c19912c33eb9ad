// Tensors on every visible device: what creation, host data and copies refuse, and how the
// message names it. What they compute (full and arange in every dtype, read-back of strided
// views, contiguous(), copies to every other device) is conformance (cts/tensor_cases.cpp).
#include <numeric>

#include "device_suite.hpp"
#include "ops/op_values.hpp"

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

// A bool byte other than 0 is true, stored as 1: OpenCL's and Vulkan's casts read the byte as a
// number (2 stayed 2 as i32) where the CPU's gave 1, so from_host, what read_npy, safetensors
// and Python's arrays come through, makes every device agree.
TEST_P(TensorSuite, HostBoolBytesOtherThanOneAreStoredAsTrue) {
  const unsigned char bytes[6] = {0, 1, 2, 255, 128, 16};
  const Tensor flags = from_host(bytes, {6}, DType::boolean, stream);
  std::vector<unsigned char> stored(6);
  stream.copy_to_host(stored.data(), flags.storage(), stored.size());
  stream.synchronize();
  EXPECT_EQ(stored, (std::vector<unsigned char>{0, 1, 1, 1, 1, 1}));
  if (!runs_kernels(device())) return;  // no cast to read them with
  EXPECT_EQ(cast(flags, DType::i32, stream).to_vector<int32_t>(stream),
            (std::vector<int32_t>{0, 1, 1, 1, 1, 1}));
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

// A strided view read back to the host, as its elements in row-major order, whatever the path:
// sparse in its span (gathered on the device first, where the device can), of more merged
// dimensions than the kernels walk (that path came back into itself until the stack ran out),
// and read by a stream of another device (the device gather refused that stream).
TEST_P(TensorSuite, StridedViewsReadBackOnEveryPath) {
  std::vector<int32_t> values(128 * 64);
  std::iota(values.begin(), values.end(), 0);
  const Tensor matrix = from_vector(values, {128, 64}, stream);
  const Tensor column = matrix.slice(1, 5, 6);  // [128, 1], 64 apart: sparse in its span
  std::vector<int32_t> want;
  for (int32_t r = 0; r < 128; ++r) want.push_back(r * 64 + 5);
  EXPECT_EQ(column.to_vector<int32_t>(stream), want);
  // [4] * 7 stepped by 2 in every dimension: 7 dimensions no merge joins.
  const Shape seven(7, 4);
  std::vector<int32_t> cube(16384);
  std::iota(cube.begin(), cube.end(), 0);
  Tensor stepped = from_vector(cube, seven, stream);
  for (int64_t d = 0; d < 7; ++d) stepped = stepped.slice(d, 0, 4, 2);
  std::vector<int32_t> want_stepped;
  for (int32_t i = 0; i < 128; ++i) {
    int32_t at = 0;
    for (int d = 0; d < 7; ++d) at = at * 4 + ((i >> (6 - d)) & 1) * 2;
    want_stepped.push_back(at);
  }
  EXPECT_EQ(stepped.to_vector<int32_t>(stream), want_stepped);
  for (const Device& other : suite_devices()) {
    if (other == device()) continue;
    Stream there = other.create_stream();
    stream.synchronize();
    EXPECT_EQ(column.to_vector<int32_t>(there), want) << "read on a stream of " << other.id();
  }
}

HAL_DEVICE_SUITE(TensorSuite);

}  // namespace
}  // namespace hal::test

// Tensors on every visible device: creation, read-back of every layout, and copies between
// devices, checked against values computed on the host.
#include <numeric>

#include "device_suite.hpp"
#include "ops/op_values.hpp"
#include "tensor/element_codec.hpp"

namespace hal::test {
namespace {

class TensorSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
};

// 0, 1, 2, ... as float.
std::vector<float> iota_f32(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST_P(TensorSuite, FullWritesEveryDtype) {
  const Shape shape{3, 5};
  EXPECT_EQ(full(shape, 2.5, DType::f32, stream).to_vector<float>(stream),
            std::vector<float>(15, 2.5f));
  EXPECT_EQ(full(shape, -7, DType::i64, stream).to_vector<int64_t>(stream),
            std::vector<int64_t>(15, -7));
  EXPECT_EQ(ones(shape, DType::i32, stream).to_vector<int32_t>(stream),
            std::vector<int32_t>(15, 1));
  EXPECT_EQ(zeros(shape, DType::u8, stream).to_vector<uint8_t>(stream),
            std::vector<uint8_t>(15, 0));
  EXPECT_EQ(full(shape, -3, DType::i8, stream).to_vector<int8_t>(stream),
            std::vector<int8_t>(15, -3));
  EXPECT_EQ(full(shape, 1, DType::boolean, stream).to_vector<uint8_t>(stream),
            std::vector<uint8_t>(15, 1));
  EXPECT_EQ(full(shape, 0.1, DType::f16, stream).to_vector<uint16_t>(stream),
            std::vector<uint16_t>(15, 0x2e66));
  EXPECT_EQ(full(shape, 1.0, DType::bf16, stream).to_vector<uint16_t>(stream),
            std::vector<uint16_t>(15, 0x3f80));
  if (device().info().has_feature(feature::kFp64) || device().info().backend() == "cpu") {
    EXPECT_EQ(full(shape, 0.1, DType::f64, stream).to_vector<double>(stream),
              std::vector<double>(15, 0.1));
  }
  hal::test::expect_error([&] { full(shape, 300, DType::u8, stream); }, ErrorCode::InvalidArgument,
                          {"full", "300", "u8"});
}

TEST_P(TensorSuite, ArangeCountsLikeNumpy) {
  EXPECT_EQ(arange(5, DType::i64, stream).to_vector<int64_t>(stream),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1.0, 2.0, 0.25, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f}));
  EXPECT_EQ(arange(3.0, -3.0, -2.0, DType::i32, stream).to_vector<int32_t>(stream),
            (std::vector<int32_t>{3, 1, -1}));
  EXPECT_EQ(arange(0.0, 0.0, 1.0, DType::f32, stream).numel(), 0);
  hal::test::expect_error([&] { arange(0.0, 1.0, 0.0, DType::f32, stream); },
                          ErrorCode::InvalidArgument, {"arange", "step"});
}

TEST_P(TensorSuite, HostDataRoundTripsAndTheCallersCopyMayGoAtOnce) {
  Tensor t;
  {
    const std::vector<float> values = iota_f32(24);
    t = from_vector(values, {2, 3, 4}, stream);
  }  // `values` is gone before the copy has surely run
  EXPECT_EQ(t.to_vector<float>(stream), iota_f32(24));
  hal::test::expect_error(
      [&] {
        from_vector(iota_f32(5), {2, 3}, stream);
      },
      ErrorCode::InvalidArgument, {"5 elements cannot fill shape [2, 3]"});
  hal::test::expect_error([&] { t.to_vector<int32_t>(stream); }, ErrorCode::InvalidArgument,
                          {"to_vector", "f32", "i32"});
}

TEST_P(TensorSuite, StridedViewsReadBackInRowMajorOrder) {
  const Tensor t = from_vector(iota_f32(24), {2, 3, 4}, stream);
  // transpose(0, 2): out[i][j][k] = in[k][j][i]
  std::vector<float> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) want.push_back(static_cast<float>(k * 12 + j * 4 + i));
  EXPECT_EQ(t.transpose(0, 2).to_vector<float>(stream), want);
  // Every other column of the last row block.
  EXPECT_EQ(t.slice(0, 1, 2).slice(2, 1, 4, 2).to_vector<float>(stream),
            (std::vector<float>{13, 15, 17, 19, 21, 23}));
  // A broadcast row.
  const Tensor row = from_vector(std::vector<int32_t>{7, 8, 9}, {1, 3}, stream);
  EXPECT_EQ(row.expand({2, 3}).to_vector<int32_t>(stream),
            (std::vector<int32_t>{7, 8, 9, 7, 8, 9}));
  EXPECT_TRUE(t.slice(1, 2, 2).to_vector<float>(stream).empty());
}

TEST_P(TensorSuite, CopiesToEveryOtherDevice) {
  const Tensor source = from_vector(iota_f32(1000), {10, 100}, stream).slice(0, 2, 7);
  for (const Device& other : suite_devices()) {
    Stream there = other.create_stream();
    const Tensor copy = source.to(other, stream);
    EXPECT_EQ(copy.device(), other);
    EXPECT_EQ(copy.shape(), (Shape{5, 100}));
    std::vector<float> want(500);
    std::iota(want.begin(), want.end(), 200.0f);
    stream.synchronize();  // the copy was enqueued on this device's stream
    EXPECT_EQ(copy.to_vector<float>(there), want) << id() << " -> " << other.id();
  }
  // A transposed view is packed on its own device, then copied.
  const Tensor small = from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}, stream);
  for (const Device& other : suite_devices()) {
    const Tensor copy = small.transpose(0, 1).to(other, stream);
    stream.synchronize();
    Stream there = other.create_stream();
    EXPECT_EQ(copy.to_vector<int32_t>(there), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}))
        << id() << " -> " << other.id();
    if (other == device()) continue;
    hal::test::expect_error([&] { small.transpose(0, 1).to(device(), there); },
                            ErrorCode::InvalidArgument,
                            {"not contiguous", "use a stream of " + id()});
  }
}

// Row-major element order of a view, computed on the host from shape, strides and offset.
std::vector<int64_t> reference_gather(const Tensor& view) {
  std::vector<int64_t> out;
  std::vector<int64_t> index(view.shape().size(), 0);
  for (int64_t n = view.numel(); n > 0; --n) {
    int64_t at = view.offset();
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * view.strides()[d];
    out.push_back(at);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < view.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST_P(TensorSuite, ContiguousGathersEveryElementSize) {
  for (DType dtype : {DType::u8, DType::f16, DType::i32, DType::i64}) {
    // Element i holds i, so every gathered value names its source.
    const Tensor base = arange(0.0, 128.0, 1.0, dtype, stream);
    const Tensor four_d = base.slice(0, 0, 120).reshape({2, 3, 4, 5});
    const Tensor seven_d = base.reshape({2, 2, 2, 2, 2, 2, 2}).permute({6, 5, 4, 3, 2, 1, 0});
    for (const Tensor& view :
         {four_d.transpose(0, 3), four_d.slice(1, 0, 3, 2).slice(3, 1, 5, 3),
          four_d.slice(2, 1, 2).expand({2, 3, 6, 5}), four_d.permute({2, 0, 3, 1}), seven_d}) {
      const std::string what = view.describe() + " with strides " + to_string(view.strides());
      ASSERT_FALSE(view.is_contiguous()) << what;
      const Tensor packed = view.contiguous(stream);
      EXPECT_TRUE(packed.is_contiguous()) << what;
      EXPECT_EQ(packed.shape(), view.shape()) << what;
      EXPECT_NE(packed.storage().impl(), view.storage().impl()) << what;
      const std::vector<int64_t> sources = reference_gather(view);
      EXPECT_EQ(numbers(packed, stream), std::vector<double>(sources.begin(), sources.end()))
          << what;
    }
  }
}

TEST_P(TensorSuite, ContiguousOfAContiguousTensorIsItself) {
  const Tensor t = zeros({4, 4}, DType::f32, stream);
  EXPECT_EQ(t.contiguous(stream).storage().impl(), t.storage().impl());
  const Tensor transposed = t.transpose(0, 1);
  for (const Device& other : suite_devices()) {
    if (other == device()) continue;
    Stream elsewhere = other.create_stream();
    hal::test::expect_error([&] { transposed.contiguous(elsewhere); }, ErrorCode::InvalidArgument,
                            {"contiguous()", other.id(), id()});
  }
}

HAL_DEVICE_SUITE(TensorSuite);

}  // namespace
}  // namespace hal::test

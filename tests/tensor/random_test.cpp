// Philox against the published vectors, and random tensors on every device against the host's
// Philox: the same draws for the same seed everywhere.
#include <cmath>

#include "device_suite.hpp"
#include "tensor/philox.hpp"

namespace hal::test {
namespace {

using tensor::Philox4;

// Known-answer vectors of Random123 (kat_vectors, philox4x32_10).
TEST(Philox, MatchesThePublishedVectors) {
  EXPECT_EQ(tensor::philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Philox4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(tensor::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                  {0xffffffff, 0xffffffff}),
            (Philox4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(tensor::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                                  {0xa4093822, 0x299f31d0}),
            (Philox4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// The host's numbers for element i, as random.cpp and the kernel make them.
float host_uniform_f32(uint64_t seed, uint64_t i) {
  return tensor::unit_f32(tensor::philox_block(seed, i / 4)[i % 4]);
}
double host_uniform_f64(uint64_t seed, uint64_t i) {
  const Philox4 d = tensor::philox_block(seed, i / 2);
  return tensor::unit_f64(d[2 * (i % 2)], d[2 * (i % 2) + 1]);
}
double host_normal_f32(uint64_t seed, uint64_t i) {
  const Philox4 d = tensor::philox_block(seed, i / 4);
  const uint64_t pair = (i % 4) / 2;
  const double u1 = 1.0 - tensor::unit_f32(d[2 * pair]), u2 = tensor::unit_f32(d[2 * pair + 1]);
  const double radius = std::sqrt(-2.0 * std::log(u1)), theta = 6.283185307179586 * u2;
  return i % 2 == 0 ? radius * std::cos(theta) : radius * std::sin(theta);
}

class RandomSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
};

TEST_P(RandomSuite, UniformDrawsAreTheHostsBitForBit) {
  constexpr uint64_t kSeed = 0x1234567890abcdefull;
  const std::vector<float> got =
      uniform({7, 143}, DType::f32, kSeed, stream).to_vector<float>(stream);
  ASSERT_EQ(got.size(), 1001u);  // not a whole number of blocks
  for (uint64_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], host_uniform_f32(kSeed, i)) << "element " << i << " on " << id();
  EXPECT_EQ(uniform({1001}, DType::f32, kSeed, stream).to_vector<float>(stream), got);
  EXPECT_NE(uniform({1001}, DType::f32, kSeed + 1, stream).to_vector<float>(stream), got);

  const std::vector<float> scaled =
      uniform({1001}, DType::f32, kSeed, stream, -2.0, 3.0).to_vector<float>(stream);
  for (uint64_t i = 0; i < scaled.size(); ++i) {
    ASSERT_GE(scaled[i], -2.0f);
    ASSERT_LT(scaled[i], 3.0f);
    ASSERT_NEAR(scaled[i], -2.0f + 5.0f * host_uniform_f32(kSeed, i), 1e-6f) << i;
  }
}

TEST_P(RandomSuite, DoubleUniformUses53Bits) {
  // Devices without f64 arithmetic get the host's numbers, so this runs everywhere.
  const std::vector<double> got = uniform({999}, DType::f64, 42, stream).to_vector<double>(stream);
  for (uint64_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], host_uniform_f64(42, i)) << "element " << i << " on " << id();
}

TEST_P(RandomSuite, NormalDrawsFollowTheHostsAndTheDistribution) {
  const std::vector<float> got = normal({100'003}, DType::f32, 7, stream).to_vector<float>(stream);
  double sum = 0, squares = 0;
  for (uint64_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], host_normal_f32(7, i), 1e-4) << "element " << i << " on " << id();
    sum += got[i];
    squares += double{got[i]} * got[i];
  }
  const double mean = sum / static_cast<double>(got.size());
  const double variance = squares / static_cast<double>(got.size()) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);  // 6 standard errors of the mean
  EXPECT_NEAR(variance, 1.0, 0.03);
  const std::vector<float> shifted =
      normal({4}, DType::f32, 7, stream, 10.0, 0.5).to_vector<float>(stream);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_NEAR(shifted[i], 10.0 + 0.5 * got[i], 1e-4);
}

// low + u * (high - low) rounds up to high itself where high's ulp is coarse: in f32 about 3% of
// draws in [1e6, 1e6 + 1) (ulp 0.0625) were 1e6 + 1. The range is shortened so none is.
TEST_P(RandomSuite, UniformDrawsStayBelowHigh) {
  const std::vector<float> f32 =
      uniform({4096}, DType::f32, 11, stream, 1e6, 1e6 + 1).to_vector<float>(stream);
  const float below = std::nextafter(1e6f + 1, 0.0f);
  float largest = 0;
  for (float x : f32) {
    ASSERT_GE(x, 1e6f);
    ASSERT_LT(x, 1e6f + 1) << "on " << id();
    largest = std::max(largest, x);
  }
  EXPECT_EQ(largest, below) << "the range is shortened no more than it must be";
  const std::vector<float> unit =
      uniform({4096}, DType::f32, 11, stream, 1.0, 2.0).to_vector<float>(stream);
  for (float x : unit) ASSERT_LT(x, 2.0f) << "on " << id();
  // f64 in [1e15, 1e15 + 1) (ulp 0.125): 6% were 1e15 + 1.
  const std::vector<double> f64 =
      uniform({4096}, DType::f64, 11, stream, 1e15, 1e15 + 1).to_vector<double>(stream);
  for (double x : f64) {
    ASSERT_GE(x, 1e15);
    ASSERT_LT(x, 1e15 + 1) << "on " << id();
  }
  // No f32 lies in [1e8 + 5, 1e8 + 6): refused, not filled with 1e8 + 8.
  expect_error([&] { uniform({2}, DType::f32, 1, stream, 1e8 + 5, 1e8 + 6); },
               ErrorCode::InvalidArgument,
               {"uniform of [2]: no f32 value lies in [100000005, 100000006)"});
}

TEST_P(RandomSuite, BadRequestsAreRefused) {
  expect_error([&] { uniform({3}, DType::i32, 1, stream); }, ErrorCode::Unsupported,
               {"uniform", id(), "i32"});
  expect_error([&] { uniform({3}, DType::f32, 1, stream, 1.0, 1.0); }, ErrorCode::InvalidArgument,
               {"uniform", "low", "high"});
  expect_error([&] { normal({3}, DType::f32, 1, stream, 0.0, -1.0); }, ErrorCode::InvalidArgument,
               {"normal", "negative"});
  EXPECT_EQ(normal({0, 5}, DType::f32, 1, stream).numel(), 0);
}

HAL_DEVICE_SUITE(RandomSuite);

}  // namespace
}  // namespace hal::test

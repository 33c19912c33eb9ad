// The host reductions the MPI engine's user ops, its small collectives and the local engine's
// fallback share: integers wrap, f16 and bf16 round once per step, bool is logic, NaN wins.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "dist/host_reduce.hpp"
#include "tensor/element_codec.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::ReduceOp;
using dist::detail::divide_by_ranks;
using dist::detail::reduce_into;

TEST(HostReduce, IntegersWrapAsMpiAndNcclDo) {
  int8_t a[3] = {100, -100, 7}, b[3] = {100, -100, -3};
  reduce_into(DType::i8, ReduceOp::sum, a, b, 3);
  EXPECT_EQ(a[0], -56);
  EXPECT_EQ(a[1], 56);
  EXPECT_EQ(a[2], 4);
  int64_t big[1] = {std::numeric_limits<int64_t>::max()}, one[1] = {1};
  reduce_into(DType::i64, ReduceOp::sum, big, one, 1);
  EXPECT_EQ(big[0], std::numeric_limits<int64_t>::min());
  uint8_t u[2] = {200, 3}, v[2] = {2, 5};
  reduce_into(DType::u8, ReduceOp::prod, u, v, 2);
  EXPECT_EQ(u[0], 144);  // 400 mod 256
  EXPECT_EQ(u[1], 15);
  // 16-bit products are computed in unsigned int: 65535 * 65535 would overflow int.
  uint16_t w[2] = {65535, 300}, x[2] = {65535, 300};
  reduce_into(DType::u16, ReduceOp::prod, w, x, 2);
  EXPECT_EQ(w[0], 1);      // (2^16 - 1)^2 mod 2^16
  EXPECT_EQ(w[1], 24464);  // 90000 mod 65536
  uint64_t top[1] = {std::numeric_limits<uint64_t>::max()}, two[1] = {2};
  reduce_into(DType::u64, ReduceOp::sum, top, two, 1);
  EXPECT_EQ(top[0], 1u);
  int16_t low[1] = {-32768}, high[1] = {32767};
  reduce_into(DType::i16, ReduceOp::max, low, high, 1);
  EXPECT_EQ(low[0], 32767);
}

TEST(HostReduce, BoolIsLogic) {
  uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1};
  uint8_t any[4], all[4];
  std::copy(a, a + 4, any);
  std::copy(a, a + 4, all);
  reduce_into(DType::boolean, ReduceOp::sum, any, b, 4);
  reduce_into(DType::boolean, ReduceOp::prod, all, b, 4);
  EXPECT_EQ((std::vector<int>(any, any + 4)), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ((std::vector<int>(all, all + 4)), (std::vector<int>{0, 0, 0, 1}));
}

TEST(HostReduce, HalfTypesComputeInF32AndRoundOnce) {
  // 2048 + 1 is not an f16 (its spacing there is 2): the sum rounds to even, 2048.
  uint16_t a[2] = {tensor::f32_to_f16(2048.0f), tensor::f32_to_f16(1.5f)};
  uint16_t b[2] = {tensor::f32_to_f16(1.0f), tensor::f32_to_f16(2.25f)};
  reduce_into(DType::f16, ReduceOp::sum, a, b, 2);
  EXPECT_EQ(tensor::f16_to_f32(a[0]), 2048.0f);
  EXPECT_EQ(tensor::f16_to_f32(a[1]), 3.75f);
  uint16_t c[1] = {tensor::f32_to_bf16(3.0f)}, d[1] = {tensor::f32_to_bf16(-2.0f)};
  reduce_into(DType::bf16, ReduceOp::min, c, d, 1);
  EXPECT_EQ(tensor::bf16_to_f32(c[0]), -2.0f);
  divide_by_ranks(DType::bf16, c, 1, 4);
  EXPECT_EQ(tensor::bf16_to_f32(c[0]), -0.5f);
}

TEST(HostReduce, NanWinsMaxAndMin) {
  float a[2] = {1.0f, std::nanf("")}, b[2] = {std::nanf(""), 2.0f};
  reduce_into(DType::f32, ReduceOp::max, a, b, 2);
  EXPECT_TRUE(std::isnan(a[0]));
  EXPECT_TRUE(std::isnan(a[1]));
}

TEST(HostReduce, AvgOfIntegersIsRefused) {
  int32_t x[1] = {4};
  expect_error([&] { divide_by_ranks(DType::i32, x, 1, 2); }, ErrorCode::InvalidArgument,
               {"avg of i32", "floating"});
  EXPECT_FALSE(dist::detail::reduces(ReduceOp::avg, DType::boolean));
  EXPECT_TRUE(dist::detail::reduces(ReduceOp::avg, DType::f16));
  EXPECT_TRUE(dist::detail::reduces(ReduceOp::max, DType::i8));
}

}  // namespace
}  // namespace hal::test

// fused_elementwise on every device that has the kernel: the same values as its steps run as
// separate ops, over broadcast and strided inputs and in every floating dtype; a malformed
// program refused naming the step; devices without the kernel refuse by name.
#include <cmath>

#include "op_values.hpp"

namespace hal::test {
namespace {

class FusedElementwiseSuite : public DeviceTest {
 protected:
  bool fuses(DType dtype) { return supports_op(device(), "fused_elementwise", dtype); }
  Stream stream = device().create_stream();
};

std::vector<double> ramp(size_t n, double low, double step) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = low + step * static_cast<double>(i % 13);
  return out;
}

// gelu written as ONNX exports it (x/sqrt(2) -> erf -> +1 -> *x -> *0.5), a bias added, relu.
Tensor gelu_bias_relu_unfused(const std::vector<Tensor>& in, Stream& s) {
  const Tensor two = full({}, std::sqrt(2.0), in[0].dtype(), s);
  const Tensor one = full({}, 1, in[0].dtype(), s), half = full({}, 0.5, in[0].dtype(), s);
  const Tensor gelu = mul(mul(add(erf(div(in[0], two, s), s), one, s), in[0], s), half, s);
  return relu(add(gelu, in[2], s), s);
}

TEST_P(FusedElementwiseSuite, MatchesItsStepsRunAsSeparateOps) {
  if (!fuses(DType::f32)) GTEST_SKIP() << id() << " has no fused_elementwise kernel";
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    if (!fuses(dtype)) continue;
    const Tensor x = make(ramp(6 * 33, -3, 0.5), {6, 33}, dtype, stream);
    const Tensor bias = make(ramp(33, -1, 0.2), {33}, dtype, stream);
    // Inputs 0 to 4: x, sqrt(2), 1, 0.5 (of three ranks) and the bias; steps from 5 on.
    const Tensor root2 = full({}, std::sqrt(2.0), dtype, stream);
    const Tensor one = full({1}, 1, dtype, stream), half = full({1, 1}, 0.5, dtype, stream);
    const ElementwiseProgram gelu{{{"div", {0, 1}},
                                   {"erf", {5}},
                                   {"add", {6, 2}},
                                   {"mul", {7, 0}},
                                   {"mul", {8, 3}},
                                   {"add", {9, 4}},
                                   {"relu", {10}}}};
    const Tensor got = fused_elementwise(gelu, {x, root2, one, half, bias}, stream);
    const Tensor want = gelu_bias_relu_unfused({x, Tensor(), bias}, stream);
    ASSERT_EQ(got.shape(), (Shape{6, 33})) << to_string(dtype);
    ASSERT_EQ(got.dtype(), dtype);
    const auto g = numbers(got, stream), w = numbers(want, stream);
    // f16 and bf16: the fused chain rounds once, the separate ops after every step.
    const double tol = dtype == DType::f64 ? 1e-12 : dtype == DType::f32 ? 1e-6 : 2e-2;
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_NEAR(g[i], w[i], tol * std::max(1.0, std::fabs(w[i])))
          << to_string(dtype) << " element " << i;
  }
}

TEST_P(FusedElementwiseSuite, BroadcastsAndReadsStridedViewsAsTheOpsDo) {
  if (!fuses(DType::f32)) GTEST_SKIP() << id() << " has no fused_elementwise kernel";
  // a [3, 1, 5] (a transposed view), b [4, 1], c [5]: the result [3, 4, 5].
  const Tensor a_base = make(ramp(5 * 3, -2, 0.3), {5, 3}, DType::f32, stream);
  const Tensor a = a_base.transpose(0, 1).unsqueeze(1);
  const Tensor b = make(ramp(4, 0.5, 0.25), {4, 1}, DType::f32, stream);
  const Tensor c = make(ramp(5, -1, 0.5), {5}, DType::f32, stream);
  // max(a * b, c) - exp(-c) * a
  const ElementwiseProgram program{{{"mul", {0, 1}},
                                    {"maximum", {3, 2}},
                                    {"neg", {2}},
                                    {"exp", {5}},
                                    {"mul", {6, 0}},
                                    {"sub", {4, 7}}}};
  const Tensor got = fused_elementwise(program, {a, b, c}, stream);
  const Tensor want = sub(maximum(mul(a, b, stream), c, stream),
                          mul(exp(neg(c, stream), stream), a, stream), stream);
  ASSERT_EQ(got.shape(), (Shape{3, 4, 5}));
  const auto g = numbers(got, stream), w = numbers(want, stream);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6) << i;
  // An integer input is promoted with the others, as the ops promote it.
  const Tensor n = make({1, 2, 3, 4, 5}, {5}, DType::i32, stream);
  const Tensor sum = fused_elementwise({{{"add", {0, 1}}, {"relu", {2}}}}, {c, n}, stream);
  EXPECT_EQ(sum.dtype(), DType::f32);
  EXPECT_EQ(numbers(sum, stream), numbers(relu(add(c, n, stream), stream), stream));
  // Integers alone are computed in f32 too, as exp of i32 is (they were refused).
  const Tensor exps = fused_elementwise({{{"exp", {0}}}}, {n}, stream);
  EXPECT_EQ(exps.dtype(), DType::f32);
  const auto e = numbers(exps, stream), want_exps = numbers(exp(n, stream), stream);
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(e[i], want_exps[i], 1e-5 * want_exps[i]) << i;
}

TEST_P(FusedElementwiseSuite, AMalformedProgramIsRefusedNamingTheStep) {
  if (!fuses(DType::f32)) GTEST_SKIP() << id() << " has no fused_elementwise kernel";
  const Tensor x = ones({2, 3}, DType::f32, stream), y = ones({3}, DType::f32, stream);
  expect_error([&] { fused_elementwise({}, {x}, stream); }, ErrorCode::InvalidArgument,
               {"fused_elementwise", "no steps"});
  expect_error(
      [&] {
        fused_elementwise({{{"lt", {0, 1}}}}, {x, y}, stream);
      },
      ErrorCode::InvalidArgument, {"step 0", "'lt'", "no arithmetic op"});
  expect_error(
      [&] {
        fused_elementwise({{{"softmax", {0}}}}, {x}, stream);
      },
      ErrorCode::InvalidArgument, {"step 0", "'softmax'"});
  expect_error(
      [&] {
        fused_elementwise({{{"add", {0}}}}, {x}, stream);
      },
      ErrorCode::InvalidArgument, {"step 0 (add) has 1 operands, not 2"});
  expect_error(
      [&] {
        fused_elementwise({{{"relu", {0}}, {"add", {1, 3}}}}, {x}, stream);
      },
      ErrorCode::InvalidArgument, {"step 1 (add) reads register 3"});
  expect_error(
      [&] {
        fused_elementwise({{{"relu", {0}}}}, {x, y}, stream);
      },
      ErrorCode::InvalidArgument, {"input 1 is never read"});
  expect_error(
      [&] {
        fused_elementwise({{{"relu", {0}}, {"exp", {0}}}}, {x}, stream);
      },
      ErrorCode::InvalidArgument, {"the result of step 0 is never read"});
  expect_error(
      [&] {
        fused_elementwise({{{"add", {0, 1}}}}, {x, ones({4}, DType::f32, stream)}, stream);
      },
      ErrorCode::InvalidArgument, {"input 1, f32[4]", "does not broadcast"});
  const std::vector<Tensor> nine(9, x);
  expect_error(
      [&] {
        fused_elementwise({{{"relu", {0}}}}, nine, stream);
      },
      ErrorCode::InvalidArgument, {"9 inputs", "1 to 8"});
  expect_error(
      [&] {
        fused_elementwise({{{"add", {0, 1}}}}, {x, Tensor()}, stream);
      },
      ErrorCode::InvalidArgument, {"fused_elementwise"});
}

TEST_P(FusedElementwiseSuite, DevicesWithoutTheKernelRefuseByName) {
  if (fuses(DType::f32)) GTEST_SKIP() << id() << " has the kernel";
  if (!runs_kernels(device()) && !has_builtin_ops(device())) GTEST_SKIP() << id() << " runs no ops";
  CpuFallback no_fallback(false);
  const Tensor x = ones({2, 3}, DType::f32, stream);
  expect_error(
      [&] {
        fused_elementwise({{{"relu", {0}}, {"exp", {1}}}}, {x}, stream);
      },
      ErrorCode::Unsupported, {"fused_elementwise of f32[2, 3] on " + id()});
}

HAL_DEVICE_SUITE(FusedElementwiseSuite);

}  // namespace
}  // namespace hal::test

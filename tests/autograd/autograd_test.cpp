// Autograd's semantics on cpu:0: what records and what does not, accumulation into leaves, the
// errors (each checked by code and message), hooks, streams across devices, and many threads
// backpropagating into shared leaves at once.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "support/far_backend.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class Autograd : public ::testing::Test {
 protected:
  Device cpu = device("cpu:0");
  Stream s = cpu.create_stream();

  Tensor leaf(const std::vector<float>& values, const Shape& shape) {
    Tensor t = from_vector(values, shape, s);
    t.requires_grad_();
    return t;
  }
  std::vector<float> grad_of(const Tensor& t) { return t.grad().to_vector<float>(s); }
};

TEST_F(Autograd, RecordsOnlyWhatNeedsIt) {
  const Tensor plain = ones({2, 2}, DType::f32, s);
  EXPECT_FALSE(add(plain, plain, s).requires_grad());
  Tensor w = leaf({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(w.grad_fn(), "");
  const Tensor y = matmul(plain, w, s);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn(), "matmul");
  EXPECT_EQ(w.reshape({4}).grad_fn(), "reshape");
  EXPECT_EQ(w.transpose(0, 1).grad_fn(), "permute");
  EXPECT_EQ(w.slice(0, 0, 1).grad_fn(), "slice");
  {
    const NoGrad off;
    EXPECT_FALSE(grad_enabled());
    EXPECT_FALSE(matmul(plain, w, s).requires_grad());
    EXPECT_FALSE(w.reshape({4}).requires_grad());
    {
      const EnableGrad on;
      EXPECT_TRUE(mul(w, w, s).requires_grad());
    }
    EXPECT_FALSE(grad_enabled());
  }
  EXPECT_TRUE(grad_enabled());
  // No gradient flows through integers or bools.
  EXPECT_FALSE(argmax(w, {1}, false, s).requires_grad());
  EXPECT_FALSE(gt(w, plain, s).requires_grad());
  EXPECT_FALSE(cast(w, DType::i32, s).requires_grad());
  EXPECT_FALSE(w.detach().requires_grad());
}

TEST_F(Autograd, LeavesAccumulateUntilCleared) {
  Tensor w = leaf({1, -2, 3}, {3});
  // y = sum(w * w) + sum(w): w is used three times in one backward.
  const auto loss = [&] { return add(sum(mul(w, w, s), {}, false, s), sum(w, {}, false, s), s); };
  loss().backward(s);
  EXPECT_EQ(grad_of(w), (std::vector<float>{3, -3, 7}));
  loss().backward(s);
  EXPECT_EQ(grad_of(w), (std::vector<float>{6, -6, 14}));
  w.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  loss().backward(s);
  EXPECT_EQ(grad_of(w), (std::vector<float>{3, -3, 7}));
}

TEST_F(Autograd, ExplicitGradientAndRetainedGraph) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  const Tensor y = mul(x, x, s);
  y.backward(s, from_vector<float>({1, 0, 0, 1}, {2, 2}, s), /*retain_graph=*/true);
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 0, 0, 8}));
  y.backward(s, from_vector<float>({0, 1, 1, 0}, {2, 2}, s));
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(Autograd, GradientsComeInEachInputsDtype) {
  Tensor a = leaf({1, 2}, {2});
  Tensor b = from_vector<double>({3, 4}, {2}, s);
  b.requires_grad_();
  // f32 + f64 is f64; each input's gradient comes back in its own dtype.
  sum(mul(add(a, b, s), cast(a, DType::f64, s), s), {}, false, s).backward(s);
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_EQ(b.grad().dtype(), DType::f64);
  EXPECT_EQ(grad_of(a), (std::vector<float>{5, 8}));  // d/da (a + b) a = 2a + b
  EXPECT_EQ(b.grad().to_vector<double>(s), (std::vector<double>{1, 2}));
}

TEST_F(Autograd, BackwardTwiceThroughAReleasedGraphNamesTheOp) {
  Tensor x = leaf({1, 2}, {2});
  const Tensor loss = sum(exp(x, s), {}, false, s);
  loss.backward(s);
  expect_error([&] { loss.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'sum' a second time", "released", "retain_graph"});
}

// pow's gradient at base 0, as PyTorch gives it (torch.pow(a, b).sum().backward(), f64): d/da of
// a^0 is 0 (not 0 * 0^-1 = NaN) and d/db of 0^b for b >= 0 is 0 (not 0 * log 0 = NaN); elsewhere
// the formulas as before. Before, hal gave [0, nan, 12] and [nan, -inf, 5.545].
TEST_F(Autograd, PowsGradientAtZeroIsPyTorchs) {
  Tensor a = from_vector<double>({0, 0, 2, 0}, {4}, s),
         b = from_vector<double>({2, 0, 3, -1}, {4}, s);
  a.requires_grad_();
  b.requires_grad_();
  sum(pow(a, b, s), {}, false, s).backward(s);
  const std::vector<double> da = a.grad().to_vector<double>(s), db = b.grad().to_vector<double>(s);
  EXPECT_EQ(da[0], 0);
  EXPECT_EQ(da[1], 0);
  EXPECT_DOUBLE_EQ(da[2], 12);
  EXPECT_TRUE(std::isinf(da[3]) && da[3] < 0) << da[3];  // -1 * 0^-2: torch gives -inf too
  EXPECT_EQ(db[0], 0);
  EXPECT_EQ(db[1], 0);
  EXPECT_NEAR(db[2], 8 * std::log(2.0), 1e-12);
  EXPECT_TRUE(std::isinf(db[3]) && db[3] < 0) << db[3];  // 0^-1 log 0 = inf * -inf, as torch
}

// Values from torch.maximum / torch.minimum's backward: a tie splits the gradient in halves.
TEST_F(Autograd, MaximumAndMinimumSplitATiesGradientAsPyTorch) {
  const std::vector<float> g = {-0.65f, -0.4f, -0.15f, 0.1f};
  for (bool largest : {true, false}) {
    Tensor a = leaf({1, 2, 3, 4}, {4}), b = leaf({1, 3, 3, 0}, {4});
    const Tensor y = largest ? maximum(a, b, s) : minimum(a, b, s);
    y.backward(s, from_vector(g, {4}, s));
    if (largest) {
      EXPECT_EQ(grad_of(a), (std::vector<float>{-0.325f, 0, -0.075f, 0.1f}));
      EXPECT_EQ(grad_of(b), (std::vector<float>{-0.325f, -0.4f, -0.075f, 0}));
    } else {
      EXPECT_EQ(grad_of(a), (std::vector<float>{-0.325f, -0.4f, -0.075f, 0}));
      EXPECT_EQ(grad_of(b), (std::vector<float>{-0.325f, 0, -0.075f, 0.1f}));
    }
  }
}

TEST_F(Autograd, ANonDifferentiableOpIsNamed) {
  Tensor x = leaf({1.5f, 2.5f}, {2});
  const Tensor y = sum(floor(x, s), {}, false, s);
  expect_error([&] { y.backward(s); }, ErrorCode::Unsupported,
               {"backward through 'floor'", "not differentiable"});
  const ElementwiseProgram program{{{"add", {0, 1}}, {"tanh", {2}}}};
  const Tensor fused = sum(fused_elementwise(program, {x, x}, s), {}, false, s);
  expect_error([&] { fused.backward(s); }, ErrorCode::Unsupported,
               {"backward through 'fused_elementwise'"});
}

TEST_F(Autograd, BadRootsAndGradientsAreRefused) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor y = mul(x, x, s);
  expect_error([&] { y.backward(s); }, ErrorCode::InvalidArgument,
               {"backward of f32[2, 3]", "without a gradient", "single-element"});
  expect_error(
      [&] {
        y.backward(s, ones({3, 2}, DType::f32, s));
      },
      ErrorCode::InvalidArgument, {"given the gradient f32[3, 2]", "shape [2, 3]"});
  expect_error(
      [&] {
        y.backward(s, ones({2, 3}, DType::f64, s));
      },
      ErrorCode::InvalidArgument, {"f64[2, 3]", "dtype f32"});
  expect_error([&] { ones({2}, DType::f32, s).backward(s); }, ErrorCode::InvalidArgument,
               {"does not require grad"});
  Tensor ints = zeros({2}, DType::i32, s);
  expect_error([&] { ints.requires_grad_(); }, ErrorCode::InvalidArgument,
               {"requires_grad_ of i32[2]", "only floating"});
  Tensor result = y;
  expect_error([&] { result.requires_grad_(false); }, ErrorCode::InvalidArgument,
               {"result of 'mul'", "detach()"});
  expect_error([&] { x.set_grad(ones({3}, DType::f32, s)); }, ErrorCode::InvalidArgument,
               {"set_grad of f32[2, 3]", "shape"});
}

TEST_F(Autograd, HooksSeeEachLeafsFinishedGradientOnce) {
  Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2});
  std::vector<std::pair<std::string, std::vector<float>>> seen;
  a.on_grad_ready(
      [&](const Tensor& g, Stream& st) { seen.emplace_back("a", g.to_vector<float>(st)); });
  b.on_grad_ready(
      [&](const Tensor& g, Stream& st) { seen.emplace_back("b", g.to_vector<float>(st)); });
  // a reaches the loss by two paths: its hook runs once, with both summed.
  const Tensor loss = sum(add(mul(a, b, s), a, s), {}, false, s);
  loss.backward(s);
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [name, values] : seen)
    EXPECT_EQ(values, name == "a" ? (std::vector<float>{4, 5}) : (std::vector<float>{1, 2}));
  expect_error([&] { loss.detach().on_grad_ready([](const Tensor&, Stream&) {}); },
               ErrorCode::InvalidArgument, {"on_grad_ready", "only a leaf"});
}

TEST_F(Autograd, GradientsCrossDevicesBackThroughTo) {
  register_far_backend();
  const Device far = device("far:0");
  Stream on_far = far.create_stream();
  Tensor x = leaf({1, 2, 3}, {3});
  const Tensor there = x.to(far, s);
  EXPECT_EQ(there.grad_fn(), "to");
  s.synchronize();
  const CpuFallback allowed;  // far runs no ops of its own
  const Tensor loss = sum(mul(there, there, on_far), {}, false, on_far);
  loss.backward(on_far);
  on_far.synchronize();
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 4, 6}));
}

TEST_F(Autograd, ManyThreadsAccumulateIntoSharedLeaves) {
  Tensor w = leaf({1, 2, 3, 4}, {2, 2});
  constexpr int kThreads = 8, kRounds = 5;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        Stream mine = cpu.create_stream();
        for (int r = 0; r < kRounds; ++r) {
          const Tensor x = full({3, 2}, static_cast<double>(t + 1), DType::f32, mine);
          sum(matmul(x, w, mine), {}, false, mine).backward(mine);
        }
        mine.synchronize();
      } catch (...) {
        ++failures;
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  // d/dw of sum(x @ w) is 3 (t + 1) for every element; summed over threads and rounds.
  const float want = 3.0f * kRounds * (kThreads * (kThreads + 1) / 2);
  EXPECT_EQ(grad_of(w), std::vector<float>(4, want));
}

}  // namespace
}  // namespace hal::test

// Autograd's semantics on cpu:0: what records and what does not, accumulation into leaves, the
// errors (each checked by code and message), hooks, streams across devices, and many threads
// backpropagating into shared leaves at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
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
  // Set until set again, on this thread only; a scope inside puts back what it found.
  set_grad_enabled(false);
  EXPECT_FALSE(matmul(plain, w, s).requires_grad());
  std::thread([&] { EXPECT_TRUE(grad_enabled()); }).join();
  {
    const EnableGrad on;
    EXPECT_TRUE(matmul(plain, w, s).requires_grad());
  }
  EXPECT_FALSE(grad_enabled());
  set_grad_enabled(true);
  EXPECT_TRUE(matmul(plain, w, s).requires_grad());
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

// Writes `values` into t's storage in place, as code beside hal's API does (Stream::copy), and
// counts the write.
void overwrite(const Tensor& t, const std::vector<float>& values, Stream& s) {
  const Tensor from = from_vector(values, {static_cast<int64_t>(values.size())}, s);
  s.copy(t.storage(), from.storage(), from.nbytes(),
         static_cast<size_t>(t.offset()) * sizeof(float));
  t.bump_version();
}

std::string versions(uint32_t saved) {
  return "(version " + std::to_string(saved) + " when saved, " + std::to_string(saved + 1) +
         " now)";
}

// As PyTorch's "modified by an inplace operation": a weight that matmul saved, written after
// forward, is refused by name before any rule runs, so no leaf's grad() has been touched; a
// forward after the write gives the gradient at the new values.
TEST_F(Autograd, ASavedTensorWrittenAfterForwardIsRefusedAndNothingAccumulates) {
  Tensor h = leaf({1, 2, 3, 4}, {2, 2}), w = leaf({1, 0, 0, 1}, {2, 2}), a = leaf({1, 2}, {2});
  // matmul reads w for h's gradient (and h for w's).
  const auto loss = [&] {
    return add(sum(matmul(h, w, s), {}, false, s), sum(mul(a, a, s), {}, false, s), s);
  };
  const Tensor first = loss();
  const uint32_t saved = w.version();
  overwrite(w.detach(), {2, 2, 2, 2}, s);
  EXPECT_EQ(w.version(), saved + 1);
  expect_error([&] { first.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'matmul'", "saved input 1 (b) of shape [2, 2]",
                "modified by an in-place write after forward", versions(saved), "optimizer step"});
  EXPECT_FALSE(h.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(a.grad().defined());  // its branch needs no saved tensor that changed
  loss().backward(s);
  EXPECT_EQ(grad_of(h), (std::vector<float>{4, 4, 4, 4}));  // ones @ w^T, at w's new values
  EXPECT_EQ(grad_of(w), (std::vector<float>{4, 4, 6, 6}));  // h^T @ ones
  EXPECT_EQ(grad_of(a), (std::vector<float>{2, 4}));
}

// One count per storage: views and detach() share it, ops leave it. A rule is refused only for
// the tensors it reads: mul(w, c) reads c for w's gradient, not w; exp reads its output.
TEST_F(Autograd, OnlyTheTensorsARuleReadsAreCheckedThroughEveryView) {
  Tensor w = leaf({1, 2, 3, 4}, {2, 2});
  const uint32_t start = w.version();
  const Tensor sums = add(w, w, s);  // reads w: no count
  EXPECT_EQ(w.version(), start);
  w.transpose(0, 1).bump_version();
  EXPECT_EQ(w.version(), start + 1);
  EXPECT_EQ(w.detach().reshape({4}).version(), start + 1);

  const Tensor c = from_vector<float>({5, 6, 7, 8}, {2, 2}, s);
  const Tensor by_c = sum(mul(w, c, s), {}, false, s);
  overwrite(w.detach(), {0, 0, 0, 0}, s);  // not read by mul's rule for w's gradient
  by_c.backward(s);
  EXPECT_EQ(grad_of(w), (std::vector<float>{5, 6, 7, 8}));

  w.zero_grad();
  const uint32_t c_saved = c.version();
  const Tensor again = sum(mul(w, c, s), {}, false, s);
  overwrite(c.slice(0, 1, 2), {1, 1}, s);  // a view of c's storage
  expect_error([&] { again.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'mul'", "saved input 1 (b)", versions(c_saved)});

  const Tensor y = exp(w, s);
  const Tensor through_exp = sum(y, {}, false, s);
  const uint32_t y_saved = y.version();
  overwrite(y.detach(), {1, 1, 1, 1}, s);
  expect_error([&] { through_exp.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'exp'", "saved output (y)", versions(y_saved)});
  EXPECT_FALSE(w.grad().defined());
}

// A hook of the running backward (an optimizer step in backward) that writes a tensor a later
// node still needs: that node refuses when it comes to run. The engine runs the node made ready
// last first, so mul (a's branch) and a's hook run before matmul.
TEST_F(Autograd, AHookThatWritesASavedTensorStopsTheNodeThatNeedsIt) {
  Tensor h = leaf({1, 2, 3, 4}, {2, 2}), w = leaf({1, 0, 0, 1}, {2, 2}), a = leaf({1, 2}, {2});
  a.on_grad_ready([&](const Tensor&, Stream& st) { overwrite(w.detach(), {0, 0, 0, 0}, st); });
  const uint32_t saved = w.version();
  const Tensor loss = add(sum(matmul(h, w, s), {}, false, s), sum(mul(a, a, s), {}, false, s), s);
  expect_error([&] { loss.backward(s); }, ErrorCode::InvalidState,
               {"backward through 'matmul'", "saved input 1 (b)", versions(saved)});
  EXPECT_FALSE(h.grad().defined());
  EXPECT_EQ(grad_of(a), (std::vector<float>{2, 4}));  // complete before the write: it stays
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

// A leaf of kElsewhere ones on `d` and the loss sum(3 x) on cpu:0 (enqueued on s), for backward
// across devices; nothing pending on d when it returns.
constexpr int64_t kElsewhere = 1 << 20;
struct LeafElsewhere {
  Tensor x, loss;
};
LeafElsewhere leaf_elsewhere(const Device& d, Stream& s) {
  Stream there = d.create_stream();
  Tensor x = full({kElsewhere}, 1.0, DType::f32, there);
  x.requires_grad_();
  const Tensor here = x.to(s.device(), there);
  there.synchronize();
  return {x, sum(mul(here, full({}, 3.0, DType::f32, s), s), {}, false, s)};
}

// How many of x's gradient elements are 3, read on a new stream of x's device: one backward
// knows nothing of.
int64_t threes_in_grad(const Tensor& x) {
  Stream reader = x.device().create_stream();
  const std::vector<float> grad = x.grad().to_vector<float>(reader);
  return std::count(grad.begin(), grad.end(), 3.0f);
}

// A leaf on another device than the loss gets its gradient on a stream of backward's own: the
// gradient is complete once backward returns, for any stream of that device to read. Before, it
// was read unordered (zeros, or x's own values, on opencl:0 nearly every time).
TEST_F(Autograd, ALeafOnAnotherDeviceHasItsGradientWhenBackwardReturns) {
  int devices_tried = 0;
  for (const Device& d : devices()) {
    if (d == cpu || !supports_op(d, "add", DType::f32)) continue;
    ++devices_tried;
    const auto [x, loss] = leaf_elsewhere(d, s);
    loss.backward(s);
    EXPECT_EQ(threes_in_grad(x), kElsewhere) << d.id();
    s.synchronize();
  }
  if (devices_tried == 0) GTEST_SKIP() << "no device besides cpu:0 runs ops here";
}

// requires_grad_(false) freezes a leaf, as PyTorch's: ops and views stop recording for it, its
// gradient stays, and its copies (an optimizer's) see it frozen and thawed. Before, it dropped
// the leaf's state: thawed, it was a new leaf that an optimizer holding a copy never saw.
TEST_F(Autograd, AFrozenLeafThawsIntoTheSameLeaf) {
  Tensor w = leaf({1, 2}, {2});
  Tensor held = w;  // as an optimizer holds its parameters
  sum(mul(w, w, s), {}, false, s).backward(s);
  w.requires_grad_(false);
  EXPECT_FALSE(w.requires_grad());
  EXPECT_FALSE(held.requires_grad());
  EXPECT_FALSE(mul(w, w, s).requires_grad());
  EXPECT_FALSE(w.reshape({2, 1}).requires_grad());
  EXPECT_EQ(grad_of(w), (std::vector<float>{2, 4}));  // kept
  w.requires_grad_();
  EXPECT_TRUE(held.requires_grad());
  sum(w, {}, false, s).backward(s);
  EXPECT_EQ(grad_of(held), (std::vector<float>{3, 5}));
  held.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  // Frozen after forward: backward gives it nothing, nor runs its hooks (no all-reduce).
  Tensor b = leaf({0.5f, 0.5f}, {2});
  int hooks = 0;
  w.on_grad_ready([&](const Tensor&, Stream&) { ++hooks; });
  const Tensor loss = sum(mul(w, b, s), {}, false, s);
  w.requires_grad_(false);
  loss.backward(s);
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(hooks, 0);
  EXPECT_EQ(grad_of(b), (std::vector<float>{1, 2}));
}

// Across devices, backward waits for the other devices' part: from a host callback of its own
// stream that would wait for itself (the other streams wait for what the stream does after the
// callback), and is refused as Stream::synchronize is there; it hung. A backward that fails
// part way still finishes what it enqueued there, before the failure is thrown: a leaf there
// whose gradient was set is read complete.
TEST_F(Autograd, BackwardAcrossDevicesFromItsOwnCallbackIsRefusedAndAFailureFinishesItsWork) {
  int devices_tried = 0;
  for (const Device& d : devices()) {
    if (d == cpu || !supports_op(d, "add", DType::f32)) continue;
    ++devices_tried;
    const LeafElsewhere made = leaf_elsewhere(d, s);
    const Tensor &x = made.x, &loss = made.loss;
    std::optional<Error> refused;
    s.host_callback([&] {
      try {
        loss.backward(s);
      } catch (const Error& e) {
        refused = e;
      }
    });
    s.synchronize();
    ASSERT_TRUE(refused.has_value()) << d.id();
    EXPECT_EQ(refused->code(), ErrorCode::InvalidState);
    EXPECT_NE(refused->message().find("from one of its stream's own host callbacks"),
              std::string::npos)
        << refused->message();
    EXPECT_FALSE(x.grad().defined());

    Tensor a = leaf({0.5f}, {1});
    const Tensor failing = add(sum(floor(a, s), {}, false, s), loss, s);
    expect_error([&] { failing.backward(s); }, ErrorCode::Unsupported, {"floor"});
    ASSERT_TRUE(x.grad().defined()) << d.id() << ": x's part ran before floor's refusal";
    EXPECT_EQ(threes_in_grad(x), kElsewhere) << d.id();
  }
  if (devices_tried == 0) GTEST_SKIP() << "no device besides cpu:0 runs ops here";
}

// A rule's first use of a constant (here mean's 1 / 12347, new to the process) fills it on the
// stream instead of waiting for the stream: from the stream's own host callback that wait was
// refused, so this backward failed with InvalidState.
TEST_F(Autograd, BackwardFromItsOwnStreamsCallbackMakesNewConstants) {
  constexpr int64_t kCount = 12347;
  Tensor x = ones({kCount}, DType::f32, s);
  x.requires_grad_();
  std::optional<Error> failed;
  s.host_callback([&] {
    try {
      mean(x, {}, false, s).backward(s);
    } catch (const Error& e) {
      failed = e;
    }
  });
  s.synchronize();
  ASSERT_FALSE(failed.has_value()) << failed->message();
  const std::vector<float> grad = grad_of(x);
  ASSERT_EQ(grad.size(), static_cast<size_t>(kCount));
  for (const float g : grad) ASSERT_FLOAT_EQ(g, 1.0f / kCount);
}

// A constant made on one stream and found by another is read after its fill: the second stream
// waits for the fill's event (here held back behind a callback of the first stream).
TEST_F(Autograd, AConstantFoundFromAnotherStreamWaitsForItsFill) {
  constexpr int64_t kCount = 12349;
  Stream other = cpu.create_stream();
  std::atomic<bool> release{false};
  s.host_callback([&] {
    while (!release.load()) std::this_thread::yield();
  });
  Tensor first = ones({kCount}, DType::f32, s);
  first.requires_grad_();
  mean(first, {}, false, s).backward(s);  // fills 1 / kCount on s, behind the callback
  Tensor second = ones({kCount}, DType::f32, other);
  second.requires_grad_();
  mean(second, {}, false, other).backward(other);
  const Tensor grad = second.grad();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release.store(true);
  });
  const std::vector<float> values = grad.to_vector<float>(other);
  releaser.join();
  s.synchronize();
  for (const float g : values) ASSERT_FLOAT_EQ(g, 1.0f / kCount);
  for (const float g : grad_of(first)) ASSERT_FLOAT_EQ(g, 1.0f / kCount);
}

// Each window's gradient goes to one element, as PyTorch's max_pool sends it: the first of tied
// maxima, the last NaN (values from torch.nn.functional.max_pool2d). A chain of `maximum` split
// a tie four ways in shares 1/8, 1/8, 1/4, 1/2.
TEST_F(Autograd, MaxPoolSendsAWindowsGradientToOneElementAsPyTorch) {
  const auto pool = [](std::vector<int64_t> kernel, std::vector<int64_t> strides) {
    PoolOptions o;
    o.kernel = std::move(kernel);
    o.strides = std::move(strides);
    return o;
  };
  Tensor tied = leaf(std::vector<float>(4, 0.0f), {1, 1, 2, 2});
  sum(max_pool(tied, pool({2, 2}, {}), s), {}, false, s).backward(s);
  EXPECT_EQ(grad_of(tied), (std::vector<float>{1, 0, 0, 0}));

  Tensor overlapping = leaf(std::vector<float>(9, 1.0f), {1, 1, 3, 3});
  sum(max_pool(overlapping, pool({2, 2}, {1, 1}), s), {}, false, s).backward(s);
  EXPECT_EQ(grad_of(overlapping), (std::vector<float>{1, 1, 0, 1, 1, 0, 0, 0, 0}));

  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor with_nans = leaf({1, nan, 5, nan, 2, 7, nan, 1, nan}, {1, 1, 1, 9});
  sum(max_pool(with_nans, pool({1, 3}, {1, 3}), s), {}, false, s).backward(s);
  EXPECT_EQ(grad_of(with_nans), (std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 1}));
}

// The backward ops called directly on tensors that require grad give a result whose backward
// is refused by name, not one without history (a gradient silently zero).
TEST_F(Autograd, BackwardOpsOfTensorsThatRequireGradRefuseTheirOwnBackward) {
  Tensor logits = leaf({0.5f, -1, 2, 0, 1, 3}, {2, 3});
  const Tensor targets = from_vector<int64_t>({2, 0}, {2}, s);
  const Tensor dlogits =
      cross_entropy_backward(logits, targets, ones({}, DType::f32, s), -100, 0, s);
  EXPECT_TRUE(dlogits.requires_grad());
  expect_error([&] { sum(dlogits, {}, false, s).backward(s); }, ErrorCode::Unsupported,
               {"cross_entropy_backward", "gradient of a gradient"});

  Tensor rows = leaf({1, 2, 3, 4}, {2, 2});
  const Tensor indices = from_vector<int64_t>({1, 1}, {2}, s);
  const Tensor dweight = embedding_backward(rows, indices, 3, s);
  EXPECT_TRUE(dweight.requires_grad());
  expect_error([&] { sum(dweight, {}, false, s).backward(s); }, ErrorCode::Unsupported,
               {"embedding_backward"});
  EXPECT_EQ(dweight.to_vector<float>(s), (std::vector<float>{0, 0, 4, 6, 0, 0}));
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

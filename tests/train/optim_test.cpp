// SGD (momentum, dampening, Nesterov, weight decay), AdamW and gradient clipping against
// PyTorch's update rules written out as plain loops in double (torch.optim.SGD, torch.optim.AdamW
// and torch.nn.utils.clip_grad_norm_ as their documentation states them), on fixed parameters and
// gradients, in f64 so that the comparison is tight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "hal/optim.hpp"
#include "support/far_backend.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using nn::NamedTensor;

constexpr int kSteps = 4;
const std::vector<double> kStart{0.5, -1.25, 2.0, 0.125, -0.75, 1.5};

// The gradient of step t (0-based), element i: fixed, varied, signs mixed.
double gradient(int t, size_t i) { return std::sin(1.7 * (t + 1) + 0.9 * static_cast<double>(i)); }

class Optim : public ::testing::Test {
 protected:
  Device cpu = device("cpu:0");
  Stream s = cpu.create_stream();

  Tensor parameter() {
    Tensor p = from_vector(kStart, {2, 3}, s);
    p.requires_grad_();
    return p;
  }
  // Runs `steps` steps of `optimizer` over p with the fixed gradients.
  std::vector<double> run(optim::Optimizer& optimizer, Tensor& p, int steps = kSteps) {
    for (int t = 0; t < steps; ++t) {
      std::vector<double> g(kStart.size());
      for (size_t i = 0; i < g.size(); ++i) g[i] = gradient(t, i);
      p.set_grad(from_vector(g, {2, 3}, s));
      optimizer.step(s);
    }
    return p.detach().to_vector<double>(s);
  }
};

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

// torch.optim.SGD: g += wd p; buf = g (first step) or momentum buf + (1 - dampening) g;
// g = g + momentum buf (nesterov) or buf; p -= lr g.
std::vector<double> sgd_reference(const optim::SGDOptions& o) {
  std::vector<double> p = kStart, buf(p.size());
  for (int t = 0; t < kSteps; ++t)
    for (size_t i = 0; i < p.size(); ++i) {
      double g = gradient(t, i) + o.weight_decay * p[i];
      if (o.momentum != 0) {
        buf[i] = t == 0 ? g : o.momentum * buf[i] + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
      }
      p[i] -= o.lr * g;
    }
  return p;
}

// torch.optim.AdamW: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
std::vector<double> adamw_reference(const optim::AdamWOptions& o) {
  std::vector<double> p = kStart, m(p.size()), v(p.size());
  for (int t = 1; t <= kSteps; ++t)
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = gradient(t - 1, i);
      p[i] *= 1 - o.lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps;
      p[i] -= o.lr / (1 - std::pow(o.beta1, t)) * m[i] / denom;
    }
  return p;
}

TEST_F(Optim, SgdFollowsPyTorchsRule) {
  const optim::SGDOptions cases[] = {
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.8, .dampening = 0.3, .weight_decay = 0.01},
      {.lr = 0.02, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true}};
  for (const optim::SGDOptions& o : cases) {
    Tensor p = parameter();
    optim::SGD sgd({{"p", p}}, o);
    expect_near_all(run(sgd, p), sgd_reference(o));
    EXPECT_EQ(sgd.steps(), kSteps);
  }
}

TEST_F(Optim, AdamWFollowsPyTorchsRule) {
  const optim::AdamWOptions cases[] = {
      {}, {.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.1}};
  for (const optim::AdamWOptions& o : cases) {
    Tensor p = parameter();
    optim::AdamW adamw({{"p", p}}, o);
    expect_near_all(run(adamw, p), adamw_reference(o));
  }
}

// Off the CPU the updates run as elementwise programs (fused where the device has
// fused_elementwise, separate ops elsewhere): the same numbers as the CPU's in-place kernels.
TEST_F(Optim, EveryDeviceTakesTheCpusSteps) {
  register_far_backend();     // a device with no ops of its own
  const CpuFallback allowed;  // sim runs the programs' ops, far:0 none
  for (const Device& d : devices()) {
    if (d == cpu) continue;
    Stream on = d.create_stream();
    const auto run_on = [&](const Device& where, Stream& st, bool adam) {
      Tensor p = from_vector(std::vector<float>(kStart.begin(), kStart.end()), {2, 3}, st);
      if (!(where == cpu)) p = p.to(where, st);
      p.requires_grad_();
      std::unique_ptr<optim::Optimizer> o;
      if (adam)
        o = std::make_unique<optim::AdamW>(std::vector<NamedTensor>{{"p", p}},
                                           optim::AdamWOptions{.lr = 0.01});
      else
        o = std::make_unique<optim::SGD>(
            std::vector<NamedTensor>{{"p", p}},
            optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
      for (int t = 0; t < kSteps; ++t) {
        std::vector<float> g(kStart.size());
        for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(gradient(t, i));
        Tensor grad = from_vector(g, {2, 3}, st);
        p.set_grad(where == cpu ? grad : grad.to(where, st));
        o->step(st);
      }
      const Tensor back = p.detach().to(cpu, st);
      st.synchronize();
      return back.to_vector<float>(s);
    };
    for (bool adam : {false, true}) {
      const std::vector<float> want = run_on(cpu, s, adam), got = run_on(d, on, adam);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6) << d.id() << (adam ? " AdamW" : " SGD") << " " << i;
    }
  }
}

// f16 and bf16 parameters are updated in f32 and rounded once (PyTorch's opmath). Computed in
// f16, AdamW's eps (1e-8) and a small gradient's square (1e-8 for 1e-4) round to 0: a zero
// gradient gave 0 / 0 = NaN and a gradient of 1e-4 gave -inf. The reference runs in double and
// rounds the stored value and buffers to the dtype after each step, as hal stores them.
TEST_F(Optim, HalfPrecisionParametersAreUpdatedInF32) {
  const std::vector<double> start{1.0, 2.0, 3.0, -0.5}, grad{0.0, 0.5, 1e-4, -2e-4};
  const auto round_to = [](DType dtype, double x) {
    if (dtype == DType::f16) return static_cast<double>(static_cast<_Float16>(x));
    const float f = static_cast<float>(x);  // bf16: f32's top half, rounded to nearest even
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
    float rounded = 0;
    std::memcpy(&rounded, &bits, 4);
    return static_cast<double>(rounded);
  };
  for (const Device& d : devices()) {
    Stream on = d.create_stream();
    for (DType dtype : {DType::f16, DType::bf16}) {
      if (!d.info().supports(dtype) || !supports_op(d, "sqrt", dtype)) continue;
      Tensor p = cast(from_vector(start, {4}, on), dtype, on);
      p.requires_grad_();
      const optim::AdamWOptions o;
      optim::AdamW adamw({{"p", p}}, o);
      std::vector<double> want = start, m(4), v(4);
      for (int t = 1; t <= 3; ++t) {
        p.set_grad(cast(from_vector(grad, {4}, on), dtype, on));
        adamw.step(on);
        // The step reads the new moments before they are rounded for keeping.
        for (size_t i = 0; i < 4; ++i) {
          want[i] *= 1 - o.lr * o.weight_decay;
          const double m_new = o.beta1 * m[i] + (1 - o.beta1) * grad[i];
          const double v_new = o.beta2 * v[i] + (1 - o.beta2) * grad[i] * grad[i];
          const double denom = std::sqrt(v_new) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps;
          want[i] = round_to(dtype, want[i] - o.lr / (1 - std::pow(o.beta1, t)) * m_new / denom);
          m[i] = round_to(dtype, m_new);
          v[i] = round_to(dtype, v_new);
        }
      }
      const std::vector<double> got =
          cast(p.detach(), DType::f64, on).to(cpu, on).to_vector<double>(on);
      const double ulp = dtype == DType::f16 ? 0x1p-10 : 0x1p-7;
      for (size_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << d.id() << " " << to_string(dtype) << " " << i;
        EXPECT_NEAR(got[i], want[i], 1.01 * ulp * std::fabs(want[i]))
            << d.id() << " " << to_string(dtype) << " element " << i;
      }
    }
  }
}

// A parameter without a gradient in step 1 takes its first step in step 2: AdamW's bias
// correction and SGD's momentum start count its own steps, as PyTorch's per-parameter
// state['step'] (torch 2.x: AdamW lr 0.1 wd 0 gives p2 [0.9, 2.1]; SGD lr 0.1 momentum 0.9
// dampening 0.5 gives [0.95, 2.025]). Before, hal counted the optimizer's steps. On cpu:0 (the
// in-place kernels) and on every other device (the programs), and through a checkpoint.
TEST_F(Optim, AParameterCountsOnlyTheStepsItTookPartIn) {
  register_far_backend();
  const CpuFallback allowed;
  for (const Device& d : devices()) {
    Stream on = d.create_stream();
    for (bool adam : {true, false}) {
      const auto make = [&](Tensor& p1, Tensor& p2) -> std::unique_ptr<optim::Optimizer> {
        std::vector<NamedTensor> named{{"p1", p1}, {"p2", p2}};
        if (adam)
          return std::make_unique<optim::AdamW>(named,
                                                optim::AdamWOptions{.lr = 0.1, .weight_decay = 0});
        return std::make_unique<optim::SGD>(
            named, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
      };
      const auto on_device = [&](const std::vector<float>& values) {
        const Tensor host = from_vector(values, {2}, s);
        s.synchronize();  // `on` copies it
        return host.to(d, on);
      };
      const auto leaf = [&] {
        Tensor t = on_device({1, 2});
        t.requires_grad_();
        return t;
      };
      const auto grad = [&] { return on_device({0.5, -0.25}); };
      Tensor p1 = leaf(), p2 = leaf();
      std::unique_ptr<optim::Optimizer> o = make(p1, p2);
      p1.set_grad(grad());
      o->step(on);
      EXPECT_EQ(o->state_values().at("step:p2"), "0") << d.id();
      // A second optimizer resumed from the first's checkpoint takes the same second step.
      const auto copy_of = [&](const Tensor& p) {
        Tensor t = add(p.detach(), zeros({2}, DType::f32, on), on);
        t.requires_grad_();
        return t;
      };
      Tensor q1 = copy_of(p1), q2 = copy_of(p2);
      std::unique_ptr<optim::Optimizer> resumed = make(q1, q2);
      resumed->load_state(o->state_tensors(), o->state_values(), on);
      for (auto* opt : {o.get(), resumed.get()}) {
        const std::vector<NamedTensor>& ps = opt->parameters();
        Tensor a = ps[0].tensor, b = ps[1].tensor;
        a.set_grad(grad());
        b.set_grad(grad());
        opt->step(on);
      }
      const std::vector<float> want =
          adam ? std::vector<float>{0.9f, 2.1f} : std::vector<float>{0.95f, 2.025f};
      for (const Tensor* t : {&p2, &q2}) {
        const Tensor back = t->detach().to(cpu, on);
        on.synchronize();
        const std::vector<float> got = back.to_vector<float>(s);
        for (size_t i = 0; i < 2; ++i)
          EXPECT_NEAR(got[i], want[i], 2e-6) << d.id() << (adam ? " AdamW " : " SGD ") << i;
      }
      EXPECT_EQ(o->state_values().at("step:p2"), "1");
      EXPECT_EQ(o->state_values().count("step:p1"), 0u) << "p1 took part in every step";
    }
  }
}

TEST_F(Optim, StateLivesOnTheDeviceAndRoundTrips) {
  Tensor p = parameter();
  optim::AdamW adamw({{"w", p}}, {});
  run(adamw, p, 2);
  const std::vector<NamedTensor> state = adamw.state_tensors();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].name, "w.exp_avg");
  EXPECT_EQ(state[1].name, "w.exp_avg_sq");
  EXPECT_EQ(state[0].tensor.device(), cpu);
  EXPECT_EQ(adamw.state_values().at("step"), "2");
  // A second optimizer given the first's state continues where it left off.
  Tensor q = from_vector(p.detach().to_vector<double>(s), {2, 3}, s);
  q.requires_grad_();
  optim::AdamW resumed({{"w", q}}, {});
  resumed.load_state(state, adamw.state_values(), s);
  std::vector<double> g(6, 0.3);
  p.set_grad(from_vector(g, {2, 3}, s));
  q.set_grad(from_vector(g, {2, 3}, s));
  adamw.step(s);
  resumed.step(s);
  EXPECT_EQ(p.detach().to_vector<double>(s), q.detach().to_vector<double>(s));
  // Refused whole: nothing changes.
  expect_error([&] { resumed.load_state({state[0]}, adamw.state_values(), s); },
               ErrorCode::InvalidArgument, {"optimizer state", "1 tensors, expected 2"});
  expect_error(
      [&] {
        resumed.load_state(state, {{"step", "x"}, {"lr", "1"}}, s);
      },
      ErrorCode::InvalidArgument, {"'step' is 'x'"});
  // Numbers that parse but cannot be: a learning rate set_learning_rate would refuse, a step
  // past what int64 (or a double, whole) holds.
  for (const char* lr : {"nan", "-5", "inf"})
    expect_error(
        [&] {
          resumed.load_state(state, {{"step", "2"}, {"lr", lr}}, s);
        },
        ErrorCode::InvalidArgument, {"lr must be finite and >= 0", lr});
  for (const char* step : {"1e300", "inf", "-1", "2.5"})
    expect_error(
        [&] {
          resumed.load_state(state, {{"step", step}, {"lr", "0.1"}}, s);
        },
        ErrorCode::InvalidArgument, {"step must be a whole number", step});
  EXPECT_EQ(resumed.steps(), 3);
  EXPECT_EQ(resumed.learning_rate(), adamw.learning_rate());
}

// PyTorch's "modified by an inplace operation": a step between a forward and its backward
// rewrites w2, which matmul(h, w2) saved for h's gradient. backward refuses it by name and adds
// nothing to the gradients; the loop in its order (zero_grad, forward, backward, step) goes on,
// at the gradient of each step's values. On cpu:0 (the in-place kernels, which write the momentum
// buffer too) and far:0 (new values copied over the parameters).
TEST_F(Optim, AStepBetweenForwardAndBackwardIsRefused) {
  register_far_backend();
  const CpuFallback allowed;  // far:0 runs no ops of its own
  for (const Device& where : {cpu, device("far:0")}) {
    Stream st = where.create_stream();
    const auto on = [&](const std::vector<float>& values, const Shape& shape) {
      const Tensor t = from_vector(values, shape, s).to(where, s);
      s.synchronize();
      return t;
    };
    const Tensor x = on({1, 2, 3, 4}, {2, 2});
    Tensor w1 = on({0.5f, -1, 0.25f, 2}, {2, 2}), w2 = on({1.5f, -0.5f}, {2, 1});
    w1.requires_grad_();
    w2.requires_grad_();
    optim::SGD sgd({{"w1", w1}, {"w2", w2}}, {.lr = 0.1, .momentum = 0.9});
    const auto loss = [&] { return sum(matmul(matmul(x, w1, st), w2, st), {}, false, st); };
    const auto host = [&](const Tensor& t) {
      const Tensor back = t.to(cpu, st);
      st.synchronize();
      return back.to_vector<float>(s);
    };
    const auto expect_close = [&](const std::vector<float>& got, const std::vector<float>& want) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i])))
            << where.id() << " element " << i;
    };
    // At the current values: d/dw1 [i][j] = (column i of x summed) w2[j]; d/dw2 [j] = column j
    // of x @ w1 summed.
    const auto expect_gradients = [&] {
      const std::vector<float> a = host(w1.detach()), b = host(w2.detach());
      const float c0 = 1 + 3, c1 = 2 + 4;
      expect_close(host(w1.grad()), {c0 * b[0], c0 * b[1], c1 * b[0], c1 * b[1]});
      expect_close(host(w2.grad()), {c0 * a[0] + c1 * a[2], c0 * a[1] + c1 * a[3]});
    };
    for (int t = 0; t < 2; ++t) {
      sgd.zero_grad();
      loss().backward(st);
      expect_gradients();
      sgd.step(st);
    }
    const std::vector<float> old_grad = host(w2.grad());
    const uint32_t saved = w2.version(), buffer = sgd.state_tensors()[1].tensor.version();
    const Tensor stale = loss();
    sgd.step(st);  // before stale's backward: the mistake
    EXPECT_EQ(w2.version(), saved + 1) << where.id();
    if (where == cpu) {  // the kernel writes w2's momentum buffer in place too
      EXPECT_EQ(sgd.state_tensors()[1].tensor.version(), buffer + 1);
    }
    expect_error([&] { stale.backward(st); }, ErrorCode::InvalidState,
                 {"backward through 'matmul'", "saved input 1 (b) of shape [2, 1]",
                  "in-place write after forward",
                  "(version " + std::to_string(saved) + " when saved, " +
                      std::to_string(saved + 1) + " now)",
                  "optimizer step"});
    EXPECT_EQ(host(w2.grad()), old_grad) << where.id();  // nothing added
    for (int t = 0; t < 2; ++t) {
      sgd.zero_grad();
      loss().backward(st);
      expect_gradients();
      sgd.step(st);
    }
  }
}

TEST_F(Optim, ClipGradNormScalesByTheTotalNorm) {
  Tensor a = parameter(), b = from_vector<double>({3, 4}, {2}, s);
  b.requires_grad_();
  a.set_grad(from_vector<double>({1, 2, 2, 0, 0, 0}, {2, 3}, s));  // |a| = 3
  b.set_grad(from_vector<double>({0, 4}, {2}, s));                 // |b| = 4: total 5
  const Tensor norm = optim::clip_grad_norm({{"a", a}, {"b", b}}, 2.5, s);
  EXPECT_EQ(norm.to_vector<double>(s)[0], 5.0);
  const double scale = 2.5 / (5.0 + 1e-6);  // PyTorch's coefficient
  const std::vector<double> got = a.grad().to_vector<double>(s);
  EXPECT_NEAR(got[1], 2 * scale, 1e-6);
  EXPECT_NEAR(b.grad().to_vector<double>(s)[1], 4 * scale, 1e-6);
  // Under the limit: unchanged.
  optim::clip_grad_norm({{"a", a}, {"b", b}}, 100, s);
  EXPECT_NEAR(a.grad().to_vector<double>(s)[1], 2 * scale, 1e-6);
  expect_error(
      [&] {
        optim::clip_grad_norm({{"a", a}}, 0, s);
      },
      ErrorCode::InvalidArgument, {"clip_grad_norm", "max_norm"});
}

// f64 gradients clip as torch's do: the norm and the scale were f32, the gradients off by ~1e-9.
TEST_F(Optim, ClipGradNormOfDoubleGradientsWorksInF64) {
  Tensor a = parameter(), b = from_vector<double>({-5, 0.5}, {2}, s);
  b.requires_grad_();
  const std::vector<double> ga{0.3, -1.2, 2.0, 0.1, 0.7, -0.4}, gb{4.0, -0.7};
  a.set_grad(from_vector(ga, {2, 3}, s));
  b.set_grad(from_vector(gb, {2}, s));
  double squares = 0;
  for (const auto* list : {&ga, &gb})
    for (double g : *list) squares += g * g;
  const double want = std::sqrt(squares), scale = 0.5 / (want + 1e-6);
  const Tensor norm = optim::clip_grad_norm({{"a", a}, {"b", b}}, 0.5, s);
  EXPECT_EQ(norm.dtype(), DType::f64);
  EXPECT_NEAR(cast(norm, DType::f64, s).to_vector<double>(s)[0], want, 1e-14 * want);
  const std::vector<double> got = a.grad().to_vector<double>(s);
  for (size_t i = 0; i < ga.size(); ++i) EXPECT_NEAR(got[i], ga[i] * scale, 1e-15) << i;
  EXPECT_NEAR(b.grad().to_vector<double>(s)[0], gb[0] * scale, 1e-15);
}

TEST_F(Optim, ClipGradNormOfHalfGradientsSumsTheirSquaresInF32) {
  // 1024 gradients of 16 in f16: each square (256) fits, their sum (262144) does not; the norm
  // (512) does. PyTorch's vector_norm accumulates in f32 and gives 512.
  Tensor h = zeros({1024}, DType::f16, s);
  h.requires_grad_();
  h.set_grad(full({1024}, 16.0, DType::f16, s));
  const Tensor norm = optim::clip_grad_norm({{"h", h}}, 256, s);
  EXPECT_FLOAT_EQ(norm.to_vector<float>(s)[0], 512.0f);
  for (const float g : cast(h.grad(), DType::f32, s).to_vector<float>(s))
    ASSERT_NEAR(g, 8.0f, 0.01f);
}

// Gradients on several devices (pipeline stages) clip by their joint norm: each device squares
// its own, on a stream of its own. Before, the squares of a gradient on another device were
// enqueued on the cpu stream (InvalidArgument naming mul).
TEST_F(Optim, ClipGradNormTakesGradientsOnSeveralDevices) {
  int devices_tried = 0;
  for (const Device& d : devices()) {
    if (d == cpu || !supports_op(d, "mul", DType::f32) || !supports_op(d, "sum", DType::f32))
      continue;
    ++devices_tried;
    Stream there = d.create_stream();
    Tensor a = zeros({2}, DType::f32, s), b = zeros({2}, DType::f32, there);
    a.requires_grad_();
    b.requires_grad_();
    a.set_grad(from_vector<float>({3, 0}, {2}, s));
    b.set_grad(from_vector<float>({0, 4}, {2}, there));
    there.synchronize();
    const Tensor norm = optim::clip_grad_norm({{"a", a}, {"b", b}}, 1.0, s);
    EXPECT_NEAR(norm.to_vector<float>(s)[0], 5.0f, 1e-6) << d.id();
    const float scale = 1.0f / (5.0f + 1e-6f);
    const std::vector<float> ga = a.grad().to_vector<float>(s);
    Stream reader = d.create_stream();  // one the clipping knows nothing of
    const std::vector<float> gb = b.grad().to_vector<float>(reader);
    EXPECT_NEAR(ga[0], 3 * scale, 1e-6) << d.id();
    EXPECT_NEAR(gb[1], 4 * scale, 1e-6) << d.id();
    EXPECT_EQ(b.grad().device(), d);
  }
  if (devices_tried == 0) GTEST_SKIP() << "no device besides cpu:0 runs mul and sum here";
}

// The scale is cast where each gradient is, and every clipped gradient is made before any is
// set. Before, a bf16 gradient on cpu:0 clipped from a stream of a device without bf16 casts
// (vulkan:0) threw after the f32 gradient before it had been clipped.
TEST_F(Optim, ClipGradNormCastsTheScaleWhereEachGradientIs) {
  int devices_tried = 0;
  for (const Device& d : devices()) {
    if (d == cpu || !supports_op(d, "sqrt", DType::f32)) continue;
    ++devices_tried;
    Tensor a = zeros({2}, DType::f32, s), b = zeros({1}, DType::bf16, s);
    a.requires_grad_();
    b.requires_grad_();
    a.set_grad(from_vector<float>({30, 40}, {2}, s));
    b.set_grad(cast(from_vector<float>({0}, {1}, s), DType::bf16, s));
    s.synchronize();
    Stream there = d.create_stream();
    const Tensor norm = optim::clip_grad_norm({{"a", a}, {"b", b}}, 1.0, there);
    EXPECT_NEAR(norm.to_vector<float>(there)[0], 50.0f, 1e-4) << d.id();
    const std::vector<float> ga = a.grad().to_vector<float>(s);
    EXPECT_NEAR(ga[0], 0.6f, 1e-6) << d.id();
    EXPECT_NEAR(ga[1], 0.8f, 1e-6) << d.id();
    EXPECT_EQ(b.grad().dtype(), DType::bf16);
  }
  if (devices_tried == 0) GTEST_SKIP() << "no device besides cpu:0 runs sqrt here";
}

// A frozen parameter (requires_grad_(false)) is still one: a module's parameters() lists it and
// an optimizer takes it (it was refused), skips it while it has no gradient, and trains it again
// once thawed, as torch.optim does.
TEST_F(Optim, AFrozenParameterIsTakenAndTrainsOnceThawed) {
  Tensor p = parameter();
  Tensor frozen = parameter();
  frozen.requires_grad_(false);
  optim::SGD sgd({{"p", p}, {"frozen", frozen}}, {.lr = 0.5});
  const auto grad_of_ones = [&] { return full({2, 3}, 1.0, DType::f64, s); };
  p.set_grad(grad_of_ones());
  sgd.step(s);
  EXPECT_EQ(frozen.detach().to_vector<double>(s), kStart);  // no gradient: skipped
  frozen.requires_grad_();
  frozen.set_grad(grad_of_ones());
  sgd.step(s);
  const std::vector<double> after = frozen.detach().to_vector<double>(s);
  for (size_t i = 0; i < after.size(); ++i) EXPECT_DOUBLE_EQ(after[i], kStart[i] - 0.5);
  expect_error(
      [&] {
        optim::SGD({{"view", p.detach()}}, {});
      },
      ErrorCode::InvalidArgument,
      {"'view'", "must be a contiguous leaf that requires grad (or a frozen one)"});
}

TEST_F(Optim, BadOptionsAndParametersAreRefused) {
  Tensor p = parameter();
  expect_error(
      [&] {
        optim::SGD({{"p", p}}, {.lr = -1});
      },
      ErrorCode::InvalidArgument, {"SGD", "lr"});
  expect_error(
      [&] {
        optim::SGD({{"p", p}}, {.lr = 0.1, .nesterov = true});
      },
      ErrorCode::InvalidArgument, {"nesterov"});
  expect_error(
      [&] {
        optim::AdamW({{"p", p}}, {.beta1 = 1});
      },
      ErrorCode::InvalidArgument, {"betas"});
  expect_error(
      [&] {
        optim::AdamW({{"plain", ones({2}, DType::f32, s)}}, {});
      },
      ErrorCode::InvalidArgument, {"'plain'", "leaf that requires grad"});
}

}  // namespace
}  // namespace hal::test

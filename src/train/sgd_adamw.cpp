// SGD with momentum and AdamW, PyTorch's update rules written with hal's ops on the parameters'
// device, and clipping by the gradients' norm.
#include <cmath>
#include <deque>
#include <utility>

#include "hal/autograd.hpp"
#include "hal/error.hpp"
#include "hal/optim.hpp"
#include "ops/elementwise_program.hpp"
#include "train/host_updates.hpp"

namespace hal::optim {
namespace {

void check_options(const char* optimizer,
                   std::initializer_list<std::pair<const char*, double>> values) {
  for (const auto& [name, value] : values)
    if (!(value >= 0 && std::isfinite(value)))
      throw Error(ErrorCode::InvalidArgument, std::string(optimizer) + ": " + name + " " +
                                                  std::to_string(value) +
                                                  " is not finite and >= 0");
}

}  // namespace

SGD::SGD(std::vector<NamedTensor> parameters, const SGDOptions& options)
    : Optimizer(std::move(parameters)), options_(options) {
  check_options("SGD", {{"lr", options.lr},
                        {"momentum", options.momentum},
                        {"dampening", options.dampening},
                        {"weight_decay", options.weight_decay}});
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    throw Error(ErrorCode::InvalidArgument, "SGD: nesterov needs a momentum > 0 and no dampening");
  lr_ = options.lr;
}

std::vector<std::string> SGD::buffer_names() const {
  if (options_.momentum == 0) return {};
  return {"momentum_buffer"};
}

std::vector<double> SGD::constants(int64_t) const {
  return {lr_, options_.weight_decay, options_.momentum, 1 - options_.dampening};
}

// The update's programs; registers are the inputs in order, then each step's result.
const ElementwiseProgram kDecayed{{{"mul", {1, 2}}, {"add", {0, 3}}}};  // g + p wd
const ElementwiseProgram kMomentum{
    {{"mul", {0, 2}}, {"mul", {1, 3}}, {"add", {4, 5}}}};  // buf momentum + g (1 - dampening)
const ElementwiseProgram kNesterov{
    {{"mul", {2, 4}}, {"add", {1, 5}}, {"mul", {6, 3}}, {"sub", {0, 7}}}};  // p - lr (g + m buf)
const ElementwiseProgram kDescent{{{"mul", {1, 2}}, {"sub", {0, 3}}}};      // p - lr g

// torch.optim.SGD: g += wd p; the buffer starts as g and then follows momentum buf +
// (1 - dampening) g; the step is g + momentum buf (Nesterov) or buf; p -= lr g.
Optimizer::Update SGD::update(const Tensor& p, const Tensor& grad,
                              const std::vector<Tensor>& buffers, const std::vector<Tensor>& c,
                              int64_t step, Stream& s) const {
  const Tensor &lr = c[0], &decay = c[1], &momentum = c[2], &undamped = c[3];
  Tensor g = grad;
  if (options_.weight_decay != 0) g = ops::evaluate(kDecayed, {grad, p, decay}, s);
  Update out;
  if (options_.momentum != 0) {
    const Tensor buf = step == 1 ? g.contiguous(s)
                                 : ops::evaluate(kMomentum, {buffers[0], g, momentum, undamped}, s);
    out.buffers.push_back(buf);
    if (options_.nesterov) {
      out.value = ops::evaluate(kNesterov, {p, g, buf, lr, momentum}, s);
      return out;
    }
    g = buf;
  }
  out.value = ops::evaluate(kDescent, {p, g, lr}, s);
  return out;
}

void SGD::update_in_place(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                          const std::vector<double>& c, int64_t step, Stream& s) const {
  train::sgd_in_place(p, g, options_.momentum != 0 ? buffers[0] : Tensor(),
                      {c[0], c[1], c[2], c[3], step == 1, options_.nesterov}, s);
}

AdamW::AdamW(std::vector<NamedTensor> parameters, const AdamWOptions& options)
    : Optimizer(std::move(parameters)), options_(options) {
  check_options("AdamW",
                {{"lr", options.lr}, {"eps", options.eps}, {"weight_decay", options.weight_decay}});
  if (!(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1))
    throw Error(ErrorCode::InvalidArgument, "AdamW: betas must lie in [0, 1)");
  lr_ = options.lr;
}

std::vector<std::string> AdamW::buffer_names() const { return {"exp_avg", "exp_avg_sq"}; }

std::vector<double> AdamW::constants(int64_t step) const {
  const double b1 = options_.beta1, b2 = options_.beta2, t = static_cast<double>(step);
  return {1 - lr_ * options_.weight_decay,
          b1,
          1 - b1,
          b2,
          1 - b2,
          std::sqrt(1 - std::pow(b2, t)),
          options_.eps,
          lr_ / (1 - std::pow(b1, t))};
}

const ElementwiseProgram kFirstMoment{
    {{"mul", {0, 2}}, {"mul", {1, 3}}, {"add", {4, 5}}}};  // m b1 + g (1 - b1)
const ElementwiseProgram kSecondMoment{
    {{"mul", {0, 2}}, {"mul", {1, 1}}, {"mul", {5, 3}}, {"add", {4, 6}}}};  // v b2 + g g (1 - b2)
// Registers 0 p, 1 m, 2 v, 3 decay, 4 sqrt(1 - b2^t), 5 eps, 6 step size:
// p decay - step size * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
const ElementwiseProgram kAdamStep{{{"mul", {0, 3}},
                                    {"sqrt", {2}},
                                    {"div", {8, 4}},
                                    {"add", {9, 5}},
                                    {"div", {1, 10}},
                                    {"mul", {11, 6}},
                                    {"sub", {7, 12}}}};

// torch.optim.AdamW: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). Three passes: m, v, then p.
Optimizer::Update AdamW::update(const Tensor& p, const Tensor& g,
                                const std::vector<Tensor>& buffers, const std::vector<Tensor>& c,
                                int64_t, Stream& s) const {
  const Tensor m = ops::evaluate(kFirstMoment, {buffers[0], g, c[1], c[2]}, s);
  const Tensor v = ops::evaluate(kSecondMoment, {buffers[1], g, c[3], c[4]}, s);
  return {ops::evaluate(kAdamStep, {p, m, v, c[0], c[5], c[6], c[7]}, s), {m, v}};
}

void AdamW::update_in_place(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                            const std::vector<double>& c, int64_t, Stream& s) const {
  train::adamw_in_place(p, g, buffers[0], buffers[1],
                        {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]}, s);
}

Tensor clip_grad_norm(const std::vector<NamedTensor>& parameters, double max_norm, Stream& s) {
  if (!(max_norm > 0 && std::isfinite(max_norm)))
    throw Error(ErrorCode::InvalidArgument,
                "clip_grad_norm: max_norm " + std::to_string(max_norm) + " is not positive");
  const NoGrad untracked;
  // The norm and the scale are f64 when a gradient is f64 (an f32 scale clips f64 gradients
  // off torch's), else f32: f16/bf16 squares sum in f32, as a norm over 256 (squares over
  // 65504) overflows f16.
  DType dtype = DType::f32;
  for (const NamedTensor& p : parameters)
    if (const Tensor g = p.tensor.grad(); g.defined() && g.dtype() == DType::f64)
      dtype = DType::f64;
  // Gradients on other devices than the stream's are squared and summed where they are, on a
  // stream of that device ordered after `s`, and only their sums travel; the coefficient goes
  // back the same way. That work is finished before this returns, as backward's on other
  // devices is: the clipped gradients are read later on streams this knows nothing of.
  std::deque<std::pair<Device, Stream>> others;  // a deque: references stay valid as it grows
  const auto stream_for = [&](const Device& d) -> Stream& {
    if (d == s.device()) return s;
    for (auto& [device, stream] : others)
      if (device == d) return stream;
    Stream& made = others.emplace_back(d, d.create_stream()).second;
    made.wait(s.record());
    return made;
  };
  Tensor total;
  for (const NamedTensor& p : parameters) {
    const Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    Stream& on = stream_for(g.device());
    const Tensor wide = g.dtype() == dtype ? g : cast(g, dtype, on);
    Tensor squares = sum(mul(wide, wide, on), {}, false, on);
    if (&on != &s) {
      squares = squares.to(s.device(), on);
      s.wait(on.record());
    }
    total = total.defined() ? add(total, squares, s) : squares;
  }
  if (!total.defined()) return zeros({}, DType::f32, s);
  const Tensor norm = sqrt(total, s);
  const Tensor coefficient =
      minimum(div(full({}, max_norm, dtype, s), add(norm, full({}, 1e-6, dtype, s), s), s),
              full({}, 1.0, dtype, s), s);
  // Every clipped gradient is made before any is set: a device that fails (a cast it lacks)
  // leaves them all as they were. The coefficient is cast where the gradient is.
  std::vector<std::pair<Tensor, Tensor>> clipped;
  for (const NamedTensor& p : parameters) {
    const Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    Stream& on = stream_for(g.device());
    Tensor scale = coefficient;
    if (&on != &s) {
      scale = scale.to(g.device(), s);
      on.wait(s.record());
    }
    if (scale.dtype() != g.dtype()) scale = cast(scale, g.dtype(), on);
    clipped.emplace_back(p.tensor, mul(g, scale, on));
  }
  for (auto& [param, g] : clipped) param.set_grad(g);
  for (auto& [device, stream] : others) stream.synchronize();
  return norm;
}

}  // namespace hal::optim

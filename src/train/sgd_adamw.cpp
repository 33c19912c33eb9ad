// SGD with momentum and AdamW, PyTorch's update rules written with hal's ops on the parameters'
// device, and clipping by the gradients' norm.
#include <cmath>

#include "hal/autograd.hpp"
#include "hal/error.hpp"
#include "hal/optim.hpp"

namespace hal::optim {
namespace {

Tensor scalar(double value, const Tensor& like, Stream& s) {
  return full({}, value, like.dtype(), s);
}

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

// torch.optim.SGD: g += wd p; the buffer starts as g and then follows momentum buf +
// (1 - dampening) g; the step is g + momentum buf (Nesterov) or buf; p -= lr g.
Optimizer::Update SGD::update(const Tensor& p, const Tensor& grad,
                              const std::vector<Tensor>& buffers, int64_t step, Stream& s) const {
  Tensor g = grad;
  if (options_.weight_decay != 0) g = add(g, mul(p, scalar(options_.weight_decay, p, s), s), s);
  Update out;
  if (options_.momentum != 0) {
    const Tensor buf =
        step == 1
            ? g.contiguous(s)
            : add(mul(buffers[0], scalar(options_.momentum, p, s), s),
                  options_.dampening == 0 ? g : mul(g, scalar(1 - options_.dampening, p, s), s), s);
    out.buffers.push_back(buf);
    g = options_.nesterov ? add(g, mul(buf, scalar(options_.momentum, p, s), s), s) : buf;
  }
  out.value = sub(p, mul(g, scalar(lr_, p, s), s), s);
  return out;
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

// torch.optim.AdamW: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
Optimizer::Update AdamW::update(const Tensor& param, const Tensor& g,
                                const std::vector<Tensor>& buffers, int64_t step, Stream& s) const {
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double step_size = lr_ / (1 - std::pow(b1, static_cast<double>(step)));
  const double correction2_sqrt = std::sqrt(1 - std::pow(b2, static_cast<double>(step)));
  Tensor p = param;
  if (options_.weight_decay != 0) p = mul(p, scalar(1 - lr_ * options_.weight_decay, p, s), s);
  const Tensor m = add(mul(buffers[0], scalar(b1, p, s), s), mul(g, scalar(1 - b1, p, s), s), s);
  const Tensor v =
      add(mul(buffers[1], scalar(b2, p, s), s), mul(mul(g, g, s), scalar(1 - b2, p, s), s), s);
  const Tensor denom =
      add(div(sqrt(v, s), scalar(correction2_sqrt, p, s), s), scalar(options_.eps, p, s), s);
  return {sub(p, mul(div(m, denom, s), scalar(step_size, p, s), s), s), {m, v}};
}

Tensor clip_grad_norm(const std::vector<NamedTensor>& parameters, double max_norm, Stream& s) {
  if (!(max_norm > 0 && std::isfinite(max_norm)))
    throw Error(ErrorCode::InvalidArgument,
                "clip_grad_norm: max_norm " + std::to_string(max_norm) + " is not positive");
  const NoGrad untracked;
  Tensor total;
  for (const NamedTensor& p : parameters) {
    const Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    const Tensor squares = sum(mul(g, g, s), {}, false, s);
    total = total.defined() ? add(total, cast(squares, DType::f32, s), s)
                            : cast(squares, DType::f32, s);
  }
  if (!total.defined()) return zeros({}, DType::f32, s);
  const Tensor norm = sqrt(total, s);
  const Tensor coefficient = minimum(
      div(full({}, max_norm, DType::f32, s), add(norm, full({}, 1e-6, DType::f32, s), s), s),
      full({}, 1.0, DType::f32, s), s);
  for (const NamedTensor& p : parameters) {
    Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    Tensor param = p.tensor;
    param.set_grad(mul(g, cast(coefficient, g.dtype(), s), s));
  }
  return norm;
}

}  // namespace hal::optim

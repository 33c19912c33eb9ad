// Optimizer: parameters, per-parameter buffers and steps, in-place writes, and the state that
// checkpoints keep.
#include <cmath>
#include <map>
#include <utility>

#include "autograd/graph.hpp"
#include "hal/autograd.hpp"
#include "hal/error.hpp"
#include "hal/optim.hpp"

namespace hal::optim {

Optimizer::Optimizer(std::vector<NamedTensor> parameters) : parameters_(std::move(parameters)) {
  std::map<std::pair<const BufferImpl*, int64_t>, const std::string*> places;
  for (const NamedTensor& p : parameters_) {
    // A frozen leaf (requires_grad_(false)) is one still: a module's parameters() lists it, and
    // it trains again once thawed, as in PyTorch.
    const bool leaf = p.tensor.defined() && autograd::Access::meta(p.tensor) && p.tensor.is_leaf();
    if (!leaf || !p.tensor.is_contiguous())
      throw Error(ErrorCode::InvalidArgument,
                  "optimizer: parameter '" + p.name + "' (" + p.tensor.describe() +
                      ") must be a contiguous leaf that requires grad (or a frozen one)");
    // One tensor twice would be stepped twice per step (torch refuses it too).
    const auto [at, added] =
        places.try_emplace({p.tensor.storage().impl().get(), p.tensor.offset()}, &p.name);
    if (!added)
      throw Error(ErrorCode::InvalidArgument, "optimizer: parameters '" + *at->second + "' and '" +
                                                  p.name + "' are the same tensor");
  }
  taken_.assign(parameters_.size(), 0);
}

void Optimizer::zero_grad() {
  for (NamedTensor& p : parameters_) p.tensor.zero_grad();
}

void Optimizer::set_learning_rate(double lr) {
  if (!(lr >= 0 && std::isfinite(lr)))
    throw Error(ErrorCode::InvalidArgument,
                "optimizer: learning rate " + std::to_string(lr) + " is not finite and >= 0");
  lr_ = lr;
}

void Optimizer::step(Stream& stream) {
  const NoGrad untracked;
  for (const NamedTensor& p : parameters_)
    if (!(p.tensor.device() == stream.device()))
      throw Error(ErrorCode::InvalidArgument, "optimizer step on a stream of " +
                                                  stream.device().id() + ": parameter '" + p.name +
                                                  "' is on " + p.tensor.device().id());
  // Everything new first; nothing is replaced until every allocation has succeeded.
  std::vector<std::vector<Tensor>> buffers = buffers_;
  if (buffers.empty()) {
    const size_t count = buffer_names().size();
    for (const NamedTensor& p : parameters_) {
      std::vector<Tensor> zero;
      for (size_t b = 0; b < count; ++b)
        zero.push_back(zeros(p.tensor.shape(), p.tensor.dtype(), stream));
      buffers.push_back(std::move(zero));
    }
  }
  // Each parameter's scalars for its own step number (most share one).
  std::map<int64_t, std::vector<double>> scalars_of;
  const auto scalars = [&](size_t i) -> const std::vector<double>& {
    const int64_t step = taken_[i] + 1;
    auto [at, added] = scalars_of.try_emplace(step);
    if (added) at->second = constants(step);
    return at->second;
  };
  // In place where every parameter with a gradient can be: what that needs is allocated first
  // (contiguous gradients), and the kernels that follow allocate nothing.
  bool in_place = stream.device().info().has_feature(feature::kHostKernels);
  for (const NamedTensor& p : parameters_)
    in_place = in_place && (p.tensor.dtype() == DType::f32 || p.tensor.dtype() == DType::f64);
  if (in_place) {
    std::vector<std::pair<size_t, Tensor>> grads;
    for (size_t i = 0; i < parameters_.size(); ++i)
      if (const Tensor g = parameters_[i].tensor.grad(); g.defined())
        grads.emplace_back(i, g.contiguous(stream));
    for (const auto& [i, g] : grads) scalars(i);  // nothing to allocate after this
    buffers_ = std::move(buffers);
    for (const auto& [i, g] : grads) {
      update_in_place(parameters_[i].tensor.detach(), g, buffers_[i], scalars(i), taken_[i] + 1,
                      stream);
      // Written in place: a graph recorded before this step refuses backward (hal/autograd.hpp).
      parameters_[i].tensor.bump_version();
      for (const Tensor& buffer : buffers_[i]) buffer.bump_version();
    }
    for (const auto& [i, g] : grads) ++taken_[i];
    ++steps_;
    return;
  }
  // Elsewhere: the step's scalars, one upload per parameter dtype and step, seen as 0-d views.
  std::map<std::pair<DType, int64_t>, std::vector<Tensor>> by_dtype;
  const auto constants_in = [&](DType dtype, size_t i) -> const std::vector<Tensor>& {
    auto [at, added] = by_dtype.try_emplace({dtype, taken_[i] + 1});
    if (added) {
      const std::vector<double>& values = scalars(i);
      const auto n = static_cast<int64_t>(values.size());
      const Tensor packed =
          dtype == DType::f64
              ? from_vector(values, {n}, stream)
              : cast(from_vector(std::vector<float>(values.begin(), values.end()), {n}, stream),
                     dtype, stream);
      for (int64_t k = 0; k < packed.numel(); ++k)
        at->second.push_back(packed.slice(0, k, k + 1).reshape({}));
    }
    return at->second;
  };
  std::vector<std::pair<size_t, Tensor>> values;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor g = parameters_[i].tensor.grad();
    if (!g.defined()) continue;
    const Tensor p = parameters_[i].tensor.detach();
    // f16 and bf16 are stored, not computed in: the update runs in f32 (PyTorch's opmath), and
    // only its results are rounded. In f16 AdamW's eps (1e-8) is 0 and a small gradient's square
    // is 0, so a zero gradient would make 0 / 0 and a small one m / 0.
    const bool narrow = p.dtype() == DType::f16 || p.dtype() == DType::bf16;
    const DType compute = narrow ? DType::f32 : p.dtype();
    const auto as = [&](DType dtype, const Tensor& t) {
      return t.dtype() == dtype ? t : cast(t, dtype, stream);
    };
    std::vector<Tensor> state;
    for (const Tensor& buffer : buffers[i]) state.push_back(as(compute, buffer));
    Update u = update(as(compute, p), as(compute, g), state, constants_in(compute, i),
                      taken_[i] + 1, stream);
    values.emplace_back(i, as(p.dtype(), u.value));
    for (Tensor& buffer : u.buffers) buffer = as(p.dtype(), buffer);
    buffers[i] = std::move(u.buffers);
  }
  for (const auto& [i, value] : values) {
    const Tensor& p = parameters_[i].tensor;
    stream.copy(p.storage(), value.storage(), p.nbytes(),
                static_cast<size_t>(p.offset()) * p.element_size(),
                static_cast<size_t>(value.offset()) * value.element_size());
    p.bump_version();  // the buffers are replaced, not written
  }
  buffers_ = std::move(buffers);
  for (const auto& [i, value] : values) ++taken_[i];
  ++steps_;
}

std::vector<NamedTensor> Optimizer::state_tensors() const {
  std::vector<NamedTensor> out;
  const std::vector<std::string> names = buffer_names();
  for (size_t i = 0; i < buffers_.size(); ++i)
    for (size_t b = 0; b < names.size(); ++b)
      out.push_back({parameters_[i].name + "." + names[b], buffers_[i][b]});
  return out;
}

std::map<std::string, std::string> Optimizer::state_values() const {
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.17g", lr_);
  std::map<std::string, std::string> out{{"step", std::to_string(steps_)}, {"lr", lr}};
  for (size_t i = 0; i < parameters_.size(); ++i)
    if (taken_[i] != steps_) out["step:" + parameters_[i].name] = std::to_string(taken_[i]);
  return out;
}

void Optimizer::load_state(const std::vector<NamedTensor>& tensors,
                           const std::map<std::string, std::string>& values, Stream& stream) {
  // Everything is checked before anything changes.
  const auto number = [&](const char* key) {
    const auto found = values.find(key);
    if (found == values.end())
      throw Error(ErrorCode::InvalidArgument,
                  std::string("optimizer state: '") + key + "' is missing");
    try {
      size_t used = 0;
      const double value = std::stod(found->second, &used);
      if (used == found->second.size()) return value;
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::InvalidArgument, std::string("optimizer state: '") + key + "' is '" +
                                                found->second + "', not a number");
  };
  // A whole number in [0, most], `what` naming it: up to 2^53, every whole number a double holds
  // (and int64 can: "inf" or 1e300 could not).
  const auto whole = [&](const std::string& key, const std::string& what, double most,
                         const std::string& most_text) {
    const double value = number(key.c_str());
    if (!(value >= 0 && value <= most && value == std::floor(value)))
      throw Error(ErrorCode::InvalidArgument, "optimizer state: " + what +
                                                  " must be a whole number in [0, " + most_text +
                                                  "], got '" + values.at(key) + "'");
    return static_cast<int64_t>(value);
  };
  const int64_t steps = whole("step", "step", 9007199254740992.0, "2^53");
  const double lr = number("lr");
  if (!(lr >= 0 && std::isfinite(lr)))
    throw Error(ErrorCode::InvalidArgument,
                "optimizer state: lr must be finite and >= 0, got '" + values.at("lr") + "'");
  // A parameter's own count where it took part in fewer steps (older files have none).
  std::vector<int64_t> taken(parameters_.size(), steps);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const std::string key = "step:" + parameters_[i].name;
    if (values.count(key))
      taken[i] = whole(key, "'" + key + "'", static_cast<double>(steps), "step");
  }
  const std::vector<std::string> names = buffer_names();
  const size_t expected = steps > 0 ? parameters_.size() * names.size() : 0;
  if (tensors.size() != expected && !(steps > 0 && tensors.empty() && names.empty()))
    throw Error(ErrorCode::InvalidArgument, "optimizer state: " + std::to_string(tensors.size()) +
                                                " tensors, expected " + std::to_string(expected));
  std::vector<std::vector<Tensor>> loaded(expected > 0 ? parameters_.size() : 0);
  for (size_t i = 0; i < loaded.size(); ++i)
    for (size_t b = 0; b < names.size(); ++b) {
      const std::string name = parameters_[i].name + "." + names[b];
      const NamedTensor* match = nullptr;
      for (const NamedTensor& t : tensors)
        if (t.name == name) match = &t;
      const Tensor& p = parameters_[i].tensor;
      if (!match)
        throw Error(ErrorCode::InvalidArgument, "optimizer state: '" + name + "' is missing");
      if (match->tensor.shape() != p.shape() || match->tensor.dtype() != p.dtype())
        throw Error(ErrorCode::InvalidArgument, "optimizer state: '" + name + "' is " +
                                                    match->tensor.describe() + ", the parameter " +
                                                    p.describe());
      // A copy of its own: later steps may write it in place.
      loaded[i].push_back(match->tensor.to(p.device(), stream));
    }
  buffers_ = std::move(loaded);
  taken_ = std::move(taken);
  steps_ = steps;
  lr_ = lr;
}

}  // namespace hal::optim

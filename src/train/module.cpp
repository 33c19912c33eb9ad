// Module: named parameters and children, moving them, modes, and host-side state.
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "autograd/graph.hpp"
#include "hal/error.hpp"
#include "hal/nn.hpp"

namespace hal::nn {

Tensor& Module::register_parameter(const std::string& name, Tensor value) {
  for (const auto& [existing, tensor] : parameters_)
    if (existing == name)
      throw Error(ErrorCode::InvalidArgument, "register_parameter: '" + name + "' is taken");
  value.requires_grad_();
  parameters_.emplace_back(name, std::make_unique<Tensor>(std::move(value)));
  return *parameters_.back().second;
}

void Module::collect(const std::string& prefix, std::vector<NamedTensor>& out) const {
  for (const auto& [name, tensor] : parameters_) out.push_back({prefix + name, *tensor});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<NamedTensor> Module::parameters() const {
  std::vector<NamedTensor> all;
  collect("", all);
  // One tensor reached under two names (a module registered twice, a weight tied into two
  // modules) is listed once, under the first, as torch's named_parameters() does; else an
  // optimizer steps it twice. Identity is its memory, as the optimizer checks it.
  std::vector<NamedTensor> out;
  std::set<std::pair<const BufferImpl*, int64_t>> seen;
  for (NamedTensor& p : all)
    if (seen.insert({p.tensor.storage().impl().get(), p.tensor.offset()}).second)
      out.push_back(std::move(p));
  return out;
}

Tensor* Module::find_parameter(const std::string& name) {
  for (auto& [own, tensor] : parameters_)
    if (own == name) return tensor.get();
  const size_t dot = name.find('.');
  if (dot != std::string::npos)
    for (auto& [child_name, child] : children_)
      if (child_name == name.substr(0, dot)) return child->find_parameter(name.substr(dot + 1));
  return nullptr;
}

Tensor& Module::parameter(const std::string& name) {
  if (Tensor* found = find_parameter(name)) return *found;
  throw Error(ErrorCode::NotFound, "the module has no parameter '" + name + "'");
}

void Module::slots(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) {
  for (auto& [name, tensor] : parameters_) out.emplace_back(prefix + name, tensor.get());
  for (auto& [name, child] : children_) child->slots(prefix + name + ".", out);
}

void Module::to(const Device& device, Stream& stream) {
  // A tensor tied into several slots is moved once and each slot gets the same new leaf, else
  // the copies would train apart. Identity is its memory, as in parameters(). A slot holding
  // another view of that memory (a transposed tied weight) cannot follow it: refused before
  // anything moves, rather than untied.
  std::vector<std::pair<std::string, Tensor*>> all;
  slots("", all);
  using Layout = std::tuple<int64_t, Shape, Shape>;
  std::map<const BufferImpl*, std::pair<const std::string*, Layout>> first;
  for (const auto& [name, tensor] : all) {
    const Layout layout{tensor->offset(), tensor->shape(), tensor->strides()};
    const auto [it, fresh] =
        first.try_emplace(tensor->storage().impl().get(), std::pair{&name, layout});
    if (!fresh && it->second.second != layout)
      throw Error(ErrorCode::InvalidArgument,
                  "Module::to: '" + name + "' (" + tensor->describe() + ") is another view of '" +
                      *it->second.first +
                      "''s memory; a view does not move with it: tie them again after to()");
  }
  std::map<const BufferImpl*, Tensor> moved;
  for (const auto& [name, tensor] : all) {
    if (tensor->device() == device) continue;
    auto [it, fresh] = moved.try_emplace(tensor->storage().impl().get());
    if (fresh) {
      it->second = tensor->detach().to(device, stream);
      // A frozen parameter stays a frozen leaf, which optimizers take (detach() dropped that).
      if (autograd::Access::meta(*tensor)) {
        it->second.requires_grad_();
        if (!tensor->requires_grad()) it->second.requires_grad_(false);
      }
    }
    *tensor = it->second;
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  // A frozen parameter (requires_grad_(false)) keeps a gradient from before, dropped too (as
  // PyTorch's zero_grad); one that never required grad has none.
  for (auto& [name, tensor] : parameters_)
    if (tensor->requires_grad() || tensor->grad().defined()) tensor->zero_grad();
  for (auto& [name, child] : children_) child->zero_grad();
}

std::map<std::string, std::string> Module::extra_state() const {
  std::map<std::string, std::string> out = own_extra_state();
  for (const auto& [name, child] : children_)
    for (const auto& [key, value] : child->extra_state()) out[name + "." + key] = value;
  return out;
}

void Module::load_extra_state(const std::map<std::string, std::string>& state) {
  std::map<std::string, std::string> own;
  for (const auto& [key, value] : state)
    if (key.find('.') == std::string::npos) own[key] = value;
  load_own_extra_state(own);
  for (auto& [name, child] : children_) {
    std::map<std::string, std::string> theirs;
    const std::string prefix = name + ".";
    for (const auto& [key, value] : state)
      if (key.rfind(prefix, 0) == 0) theirs[key.substr(prefix.size())] = value;
    child->load_extra_state(theirs);
  }
}

}  // namespace hal::nn

// Training checkpoints over safetensors: parameters, optimizer state and host-side state, loaded
// all or nothing.
#include <set>

#include "hal/autograd.hpp"
#include "hal/checkpoint.hpp"
#include "hal/error.hpp"

namespace hal {
namespace {

constexpr const char* kFormat = "hal.checkpoint/1";
const std::string kOptimizer = "optimizer.", kModule = "module.";

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

[[noreturn]] void mismatch(const std::filesystem::path& path, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "checkpoint " + path.string() + ": " + why);
}

// Checks that `found` holds exactly the module's parameters, each of its shape and dtype, and
// returns them in the module's order.
std::vector<Tensor> matched_parameters(const std::filesystem::path& path, const nn::Module& module,
                                       const std::vector<nn::NamedTensor>& found) {
  const std::vector<nn::NamedTensor> own = module.parameters();
  std::vector<Tensor> out;
  std::set<std::string> wanted;
  for (const nn::NamedTensor& p : own) {
    wanted.insert(p.name);
    const nn::NamedTensor* match = nullptr;
    for (const nn::NamedTensor& t : found)
      if (t.name == p.name) match = &t;
    if (!match) mismatch(path, "the parameter '" + p.name + "' is missing");
    if (match->tensor.shape() != p.tensor.shape() || match->tensor.dtype() != p.tensor.dtype())
      mismatch(path, "'" + p.name + "' is " + std::string(to_string(match->tensor.dtype())) +
                         to_string(match->tensor.shape()) + ", the module's " +
                         std::string(to_string(p.tensor.dtype())) + to_string(p.tensor.shape()));
    out.push_back(match->tensor);
  }
  for (const nn::NamedTensor& t : found)
    if (!wanted.contains(t.name))
      mismatch(path, "'" + t.name + "' is not a parameter of the module");
  return out;
}

void assign(nn::Module& module, const std::vector<Tensor>& values, Stream& stream) {
  const NoGrad untracked;
  std::vector<nn::NamedTensor> own = module.parameters();
  for (size_t i = 0; i < own.size(); ++i) {
    const Tensor& p = own[i].tensor;
    const Tensor value =
        values[i].device() == p.device() ? values[i] : values[i].to(p.device(), stream);
    if (p.nbytes() > 0) {
      stream.copy(p.storage(), value.storage(), p.nbytes(),
                  static_cast<size_t>(p.offset()) * p.element_size(),
                  static_cast<size_t>(value.offset()) * value.element_size());
      p.bump_version();  // in place: a graph recorded before the load refuses backward
    }
  }
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const nn::Module& module,
                     const optim::Optimizer& optimizer,
                     const std::map<std::string, std::string>& metadata, Stream& stream) {
  std::vector<nn::NamedTensor> tensors = module.parameters();
  std::set<std::string> parameter_names;
  for (const nn::NamedTensor& t : tensors) parameter_names.insert(t.name);
  for (nn::NamedTensor t : optimizer.state_tensors()) {
    t.name = kOptimizer + t.name;
    // Parameters and state share the file's names; a parameter of a child named "optimizer"
    // is told from state by the module's names at load, unless the two names are one.
    if (parameter_names.contains(t.name))
      throw Error(ErrorCode::InvalidArgument,
                  "save_checkpoint: the module's parameter '" + t.name +
                      "' has the name the optimizer's state takes in the file; rename the module");
    tensors.push_back(std::move(t));
  }
  std::map<std::string, std::string> all;
  for (const auto& [key, value] : metadata) {
    if (key == "format" || starts_with(key, kModule) || starts_with(key, kOptimizer))
      throw Error(ErrorCode::InvalidArgument, "save_checkpoint: the metadata key '" + key +
                                                  "' is hal's own (format, module.*, optimizer.*)");
    all[key] = value;
  }
  all["format"] = kFormat;
  for (const auto& [key, value] : module.extra_state()) all[kModule + key] = value;
  for (const auto& [key, value] : optimizer.state_values()) all[kOptimizer + key] = value;
  save_safetensors(path, tensors, all, stream);
}

std::map<std::string, std::string> load_checkpoint(const std::filesystem::path& path,
                                                   nn::Module& module, optim::Optimizer& optimizer,
                                                   Stream& stream) {
  const Safetensors file = load_safetensors(path, stream);
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != kFormat)
    mismatch(path, std::string("it is not a hal checkpoint (its metadata lacks format = ") +
                       kFormat + ")");
  std::set<std::string> parameter_names;
  for (const nn::NamedTensor& t : module.parameters()) parameter_names.insert(t.name);
  std::vector<nn::NamedTensor> parameters, state;
  for (const nn::NamedTensor& t : file.tensors) {
    // "optimizer.weight" of a child module named "optimizer" is a parameter.
    if (starts_with(t.name, kOptimizer) && !parameter_names.contains(t.name))
      state.push_back({t.name.substr(kOptimizer.size()), t.tensor});
    else
      parameters.push_back(t);
  }
  std::map<std::string, std::string> extra, values, caller;
  for (const auto& [key, value] : file.metadata) {
    if (starts_with(key, kModule))
      extra[key.substr(kModule.size())] = value;
    else if (starts_with(key, kOptimizer))
      values[key.substr(kOptimizer.size())] = value;
    else if (key != "format")
      caller[key] = value;
  }
  // Checked first; then the module's host state and the optimizer (each checks before it
  // changes anything, and the first is put back if the second refuses); the parameters last.
  const std::vector<Tensor> matched = matched_parameters(path, module, parameters);
  const std::map<std::string, std::string> previous = module.extra_state();
  try {
    module.load_extra_state(extra);
    optimizer.load_state(state, values, stream);
  } catch (const Error& error) {
    module.load_extra_state(previous);
    mismatch(path, error.message());
  }
  assign(module, matched, stream);
  return caller;
}

void load_parameters(const std::filesystem::path& path, nn::Module& module, Stream& stream) {
  const Safetensors file = load_safetensors(path, stream);
  assign(module, matched_parameters(path, module, file.tensors), stream);
}

}  // namespace hal

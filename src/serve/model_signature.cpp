#include "serve/model_signature.hpp"

#include "hal/error.hpp"

namespace hal::serve {
namespace {

bool servable(const ModelValue& value) {
  return !value.sequence && !value.strings && !value.optional && value.ranked;
}

TensorSpec spec_of(const std::string& model_name, const ModelValue& value) {
  if (!servable(value))
    throw Error(ErrorCode::InvalidArgument,
                "model '" + model_name + "': '" + value.name +
                    "' is not a ranked tensor of numbers, which is all hal serve serves");
  TensorSpec spec{value.name, value.dtype, {}};
  for (const ModelDim& dim : value.shape) spec.shape.push_back(dim.size);
  return spec;
}

// The symbol of the first dimension, or "" where it is fixed or the value has rank 0.
std::string first_symbol(const ModelValue& value) {
  if (value.shape.empty() || value.shape.front().size >= 0) return "";
  return value.shape.front().symbol.empty() ? "?" : value.shape.front().symbol;
}

}  // namespace

ModelSignature signature_of(const std::string& name, const Model& model, int64_t max_batch,
                            int64_t priority_levels) {
  ModelSignature signature{name, {}, {}, false, 1, priority_levels};
  for (const ModelValue& value : model.inputs()) signature.inputs.push_back(spec_of(name, value));
  for (const ModelValue& value : model.outputs()) signature.outputs.push_back(spec_of(name, value));
  // Batchable: one named symbol leads every input and output (an unnamed "?" could differ).
  const std::string symbol = model.inputs().empty() ? "" : first_symbol(model.inputs().front());
  bool batchable = !symbol.empty() && symbol != "?";
  for (const auto* values : {&model.inputs(), &model.outputs()})
    for (const ModelValue& value : *values) batchable = batchable && first_symbol(value) == symbol;
  signature.batchable = batchable;
  signature.max_batch = batchable ? max_batch : 1;
  // Optional inputs take no part in whether the model batches: left out, a default stands in.
  for (const ModelValue& value : model.optional_inputs()) {
    if (!servable(value)) continue;
    TensorSpec spec = spec_of(name, value);
    spec.optional = true;
    spec.batch_dim = batchable && first_symbol(value) == symbol;
    signature.inputs.push_back(std::move(spec));
  }
  return signature;
}

}  // namespace hal::serve

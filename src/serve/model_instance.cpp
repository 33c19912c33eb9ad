#include "serve/model_instance.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hal/error.hpp"
#include "hal/execution_plan.hpp"
#include "hal/registry.hpp"

namespace hal::serve {
namespace {

constexpr double kSmoothing = 0.3;             // weight of the newest measurement
constexpr double kUnknownBatchSeconds = 1e-3;  // before anything is known

double planned_seconds(const Model& model, const std::string& device_id, int64_t rows) {
  PlanOptions options;
  options.device = device_id;
  options.symbol_size = rows;
  try {
    const double us = plan_model(model, options).predicted_us;
    return std::isfinite(us) && us > 0 ? us * 1e-6 : 0;
  } catch (const Error&) {
    return 0;  // a model the planner cannot price: measured times alone
  }
}

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

ModelInstance::ModelInstance(const std::string& device_id, const std::filesystem::path& path,
                             int64_t max_batch)
    : device_(hal::device(device_id)),
      model_(load_onnx(path)),
      stream_(device_.create_stream()),
      max_batch_(max_batch) {
  modelled_one_ = planned_seconds(model_, device_id, 1);
  modelled_max_ = max_batch > 1 ? planned_seconds(model_, device_id, max_batch) : modelled_one_;
}

double ModelInstance::modelled_seconds(int64_t rows) const {
  if (modelled_one_ <= 0) return 0;
  if (max_batch_ <= 1) return modelled_one_;
  const double t = static_cast<double>(rows - 1) / static_cast<double>(max_batch_ - 1);
  return modelled_one_ + t * (modelled_max_ - modelled_one_);
}

double ModelInstance::predicted_seconds(int64_t rows) const {
  if (const auto it = measured_.find(rows); it != measured_.end()) return it->second;
  const double modelled = modelled_seconds(rows);
  if (modelled > 0) return modelled * scale_;
  // No cost model: the nearest measured size, scaled by rows.
  if (!measured_.empty()) {
    auto it = measured_.lower_bound(rows);
    if (it == measured_.end()) --it;
    return it->second * static_cast<double>(rows) / static_cast<double>(it->first);
  }
  return kUnknownBatchSeconds;
}

void ModelInstance::record(int64_t rows, double seconds) {
  auto [it, inserted] = measured_.try_emplace(rows, seconds);
  if (!inserted) it->second += kSmoothing * (seconds - it->second);
  const double modelled = modelled_seconds(rows);
  if (modelled > 0) {
    const double ratio = seconds / modelled;
    scale_ = scaled_ ? scale_ + kSmoothing * (ratio - scale_) : ratio;
    scaled_ = true;
  }
}

std::vector<HostTensors> ModelInstance::run(const ModelSignature& signature,
                                            const std::vector<const HostTensors*>& parts,
                                            const std::vector<int64_t>& rows) {
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  std::map<std::string, Tensor> inputs;
  for (const TensorSpec& spec : signature.inputs) {
    if (spec.optional) {
      const bool given = std::any_of(parts.begin(), parts.end(), [&](const HostTensors* part) {
        return part->contains(spec.name);
      });
      if (!given) continue;  // the model's default
      // One request's value would hold for the others: the scheduler runs such a request alone.
      if (parts.size() > 1)
        throw Error(ErrorCode::Internal, "model '" + signature.name + "': optional input '" +
                                             spec.name + "' given in a batch of " +
                                             std::to_string(parts.size()) + " requests");
    }
    const HostTensor& first = parts.front()->at(spec.name);
    Shape shape = first.shape;
    if (parts.size() == 1) {
      inputs[spec.name] = from_host(first.bytes.data(), shape, first.dtype, stream_);
      continue;
    }
    shape[0] = total;
    std::string stacked;
    for (const HostTensors* part : parts) stacked += part->at(spec.name).bytes;
    inputs[spec.name] = from_host(stacked.data(), shape, first.dtype, stream_);
  }
  const std::map<std::string, Tensor> outputs = model_.run(inputs, stream_);
  HostTensors whole;
  for (const TensorSpec& spec : signature.outputs) {
    const Tensor& tensor = outputs.at(spec.name);
    HostTensor& host = whole[spec.name];
    host.dtype = tensor.dtype();
    host.shape = tensor.shape();
    host.bytes.resize(tensor.nbytes());
    tensor.copy_to_host(host.bytes.data(), stream_);
  }
  stream_.synchronize();

  std::vector<HostTensors> split(parts.size());
  for (auto& [name, host] : whole) {
    if (parts.size() == 1) {
      split[0][name] = std::move(host);
      continue;
    }
    if (host.shape.empty() || host.shape[0] != total)
      throw UnsplittableBatch("model '" + signature.name + "': output '" + name +
                              "' of a batch of " + std::to_string(total) + " rows has shape " +
                              shape_text(host.shape) +
                              ", which does not split into the requests' rows");
    const size_t row_bytes = host.bytes.size() / static_cast<size_t>(total);
    size_t offset = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      HostTensor piece{host.dtype, host.shape, {}};
      piece.shape[0] = rows[i];
      const size_t bytes = row_bytes * static_cast<size_t>(rows[i]);
      piece.bytes.assign(host.bytes, offset, bytes);
      offset += bytes;
      split[i][name] = std::move(piece);
    }
  }
  return split;
}

}  // namespace hal::serve

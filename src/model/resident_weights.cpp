#include "model/resident_weights.hpp"

#include "hal/device.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {

Tensor ResidentWeights::on(const std::string& name, const HostTensor& tensor, Stream& stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto& resident = by_device_[stream.device().id()];
  if (const auto found = resident.find(name); found != resident.end()) return found->second;
  const Tensor uploaded = upload(tensor, stream);
  stream.synchronize();
  return resident.emplace(name, uploaded).first->second;
}

}  // namespace hal::model

// A model's initializers on each device that has read them, kept for the model's lifetime: a
// run uploads a weight once per device, not once per run (the copies of a Model share them).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "hal/stream.hpp"
#include "hal/tensor.hpp"
#include "model/model_graph.hpp"

namespace hal::model {

class ResidentWeights {
 public:
  // `tensor` (the initializer `name`) on `stream`'s device: uploaded on the first call for that
  // device, which waits for the copy so that other streams may read it at once.
  Tensor on(const std::string& name, const HostTensor& tensor, Stream& stream);

 private:
  std::mutex mutex_;
  std::map<std::string, std::map<std::string, Tensor>> by_device_;  // device id -> name -> tensor
};

}  // namespace hal::model

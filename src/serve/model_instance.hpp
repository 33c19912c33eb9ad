// One copy of a served model on one device (Triton's model instance): its own weights, stream
// and predicted times; runs a batch of requests stacked along the first dimension.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "hal/device.hpp"
#include "hal/model.hpp"
#include "hal/stream.hpp"
#include "serve/host_tensor.hpp"
#include "serve/model_signature.hpp"

namespace hal::serve {

// What run throws where a batch's output does not have the batch's rows in its first dimension
// (a model that declares a batch dimension but computes across it, a ReduceSum over axis 0):
// the outputs cannot be split back into the requests', and nothing is wrong with the device.
struct UnsplittableBatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ModelInstance {
 public:
  // Loads the model file again (each device holds its own copy) and predicts its batches'
  // times from the execution plan's cost model for 1 and `max_batch` rows.
  ModelInstance(const std::string& device_id, const std::filesystem::path& path, int64_t max_batch);

  const Device& device() const { return device_; }
  const Model& model() const { return model_; }

  // Runs the requests' inputs stacked (each input of `parts` holds its request's rows) and
  // returns each request's outputs, split as the inputs were. An optional input a part leaves
  // out takes the model's default; one given is run for a batch of one request only (Internal
  // otherwise). hal::Error from the model or the device; UnsplittableBatch where the outputs of
  // several requests cannot be split.
  std::vector<HostTensors> run(const ModelSignature& signature,
                               const std::vector<const HostTensors*>& parts,
                               const std::vector<int64_t>& rows);

  // The predicted time of a batch of `rows`: the latest measured time of that size where
  // there is one, else the cost model's scaled by how measured times compared with it.
  double predicted_seconds(int64_t rows) const;
  // Records a batch's measured time (not thread-safe: callers hold their lock).
  void record(int64_t rows, double seconds);

 private:
  double modelled_seconds(int64_t rows) const;

  Device device_;
  Model model_;
  Stream stream_;
  int64_t max_batch_;
  double modelled_one_ = 0, modelled_max_ = 0;  // cost model, seconds; 0 where unknown
  double scale_ = 1;                            // measured / modelled, smoothed
  bool scaled_ = false;
  std::map<int64_t, double> measured_;  // rows -> smoothed seconds
};

}  // namespace hal::serve

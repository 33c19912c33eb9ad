// What a served model takes and returns, as the protocol describes it: each tensor's name,
// datatype and shape (-1 for a dimension of any size), and whether requests can be stacked
// along the first dimension (every input and output starts with the same symbolic dimension).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hal/dtype.hpp"
#include "hal/model.hpp"

namespace hal::serve {

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // -1: any size
};

struct ModelSignature {
  std::string name;
  std::vector<TensorSpec> inputs, outputs;
  bool batchable = false;
  int64_t max_batch = 1;  // rows a request may bring: the batcher's max_batch where batchable
  int64_t priority_levels = 1;
};

// InvalidArgument naming the model for inputs or outputs that are not tensors (sequences,
// strings, unranked): the protocol serves tensors of numbers.
ModelSignature signature_of(const std::string& name, const Model& model, int64_t max_batch,
                            int64_t priority_levels);

}  // namespace hal::serve

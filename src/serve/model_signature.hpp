// What a served model takes and returns, as the protocol describes it: each tensor's name,
// datatype and shape (-1 for a dimension of any size), and whether requests can be stacked
// along the first dimension (every required input and output starts with the same symbolic
// dimension). The inputs include the optional ones (Model::optional_inputs): a request may
// leave them out, the model's initializer standing in.
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
  bool optional = false;       // an input a request may leave out (its initializer the default)
  // Where the signature is batchable, whether shape[0] is the batch dimension: true of every
  // required input and output; an optional input's may be fixed (a weight, say).
  bool batch_dim = true;
};

struct ModelSignature {
  std::string name;
  std::vector<TensorSpec> inputs, outputs;  // inputs: the required ones, then the optional
  bool batchable = false;
  int64_t max_batch = 1;  // rows a request may bring: the batcher's max_batch where batchable
  int64_t priority_levels = 1;
};

// InvalidArgument naming the model for required inputs or outputs that are not tensors
// (sequences, strings, unranked): the protocol serves tensors of numbers. An optional input that
// is not one is left out of the signature: requests cannot give it, and its default holds.
ModelSignature signature_of(const std::string& name, const Model& model, int64_t max_batch,
                            int64_t priority_levels);

}  // namespace hal::serve

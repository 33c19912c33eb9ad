// libFuzzer target: ONNX model bytes. Any bytes either load (and then run on cpu:0 with zero
// inputs of the declared shapes, when those are small and fixed) or are refused with
// InvalidArgument, Unsupported, OutOfRange or OutOfMemory; a crash, a hang, an Internal error or
// any other exception is a finding.
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "hal/error.hpp"
#include "hal/model.hpp"
#include "hal/registry.hpp"

namespace {

bool expected(const hal::Error& error) {
  return error.code() == hal::ErrorCode::InvalidArgument ||
         error.code() == hal::ErrorCode::Unsupported ||
         error.code() == hal::ErrorCode::OutOfRange ||
         error.code() == hal::ErrorCode::OutOfMemory;  // a model may ask for more than there is
}

// ONNX lets a Loop run without end (no trip count, a condition that stays true) or for 2^63
// rounds, which a fuzzer finds at once: such models (a Loop anywhere, in a subgraph too) are
// loaded, not run.
bool may_run_forever(const hal::Model& model) {
  for (const std::string& op : model.op_types())
    if (op == "Loop") return true;
  return false;
}

// Zero inputs (empty strings for string inputs) of the declared shapes, where every dimension
// is fixed and the whole is small.
bool zero_inputs(const hal::Model& model, hal::Stream& stream,
                 std::map<std::string, hal::RunValue>& inputs) {
  for (const hal::ModelValue& value : model.inputs()) {
    hal::Shape shape;
    int64_t count = 1;
    for (const hal::ModelDim& dim : value.shape) {
      if (dim.size < 0 || dim.size > 64) return false;
      shape.push_back(dim.size);
      count *= dim.size;
    }
    if (!value.ranked || count > 4096 || value.sequence) return false;
    if (value.strings)
      inputs[value.name] =
          hal::StringTensor{shape, std::vector<std::string>(static_cast<size_t>(count))};
    else
      inputs[value.name] = hal::zeros(shape, value.dtype, stream);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const hal::Model model = hal::load_onnx_bytes(bytes, "fuzzed.onnx");
    hal::Stream stream = hal::device("cpu:0").create_stream();
    std::map<std::string, hal::RunValue> inputs;
    if (model.node_count() <= 64 && !may_run_forever(model) && zero_inputs(model, stream, inputs)) {
      (void)model.run_values(inputs, stream);
      stream.synchronize();
    }
  } catch (const hal::Error& error) {
    if (!expected(error)) std::abort();
  }
  return 0;
}

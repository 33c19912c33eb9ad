// ONNX's TensorProto to a host tensor and back: typed fields, raw_data, and external data files
// (read only from inside the model's directory).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "model/model_graph.hpp"
#include "model/onnx_dtype.hpp"

namespace hal::model {

// `where` names the tensor in errors ("initializer 'w' of model.onnx"). Unsupported for an
// element type hal has not; InvalidArgument for data that does not match the dims, a negative
// dim, or an external file that is missing, too short or, links resolved, outside `directory`
// and outside the folder `model_file` (the model's own file, where it has one) resolves to.
HostTensor tensor_from_onnx(const onnx::TensorProto& proto, const std::filesystem::path& directory,
                            std::string_view where, const std::filesystem::path& model_file = {});
// The tensor as an ONNX TensorProto named `name`, its elements in raw_data.
onnx::TensorProto tensor_to_onnx(const HostTensor& tensor, const std::string& name);
// A TensorProto of STRING elements (string_data): InvalidArgument where the strings are not as
// many as the dims say or the proto puts them elsewhere, Unsupported for external data.
StringTensor strings_from_onnx(const onnx::TensorProto& proto, std::string_view where);

}  // namespace hal::model

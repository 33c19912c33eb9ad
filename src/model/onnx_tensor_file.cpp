// read_onnx_tensor, read_onnx_value: a TensorProto, SequenceProto or OptionalProto file (ONNX's
// backend test data) as a tensor, a sequence or an optional on a device.
#include <fstream>
#include <sstream>

#include <onnx/onnx-data_pb.h>  // SequenceProto

#include "hal/error.hpp"
#include "hal/model.hpp"
#include "model/onnx_ops.hpp"
#include "model/onnx_tensor.hpp"

namespace hal {

namespace {

template <class Proto>
Proto parse_file(const std::filesystem::path& path, const char* what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorCode::InvalidArgument, "cannot open tensor file " + path.string());
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string bytes = std::move(contents).str();
  Proto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::InvalidArgument,
                path.string() + ": not an ONNX " + what + " (the protobuf does not parse)");
  return proto;
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
}

}  // namespace

Tensor read_onnx_tensor(const std::filesystem::path& path, Stream& stream, std::string* name) {
  const auto proto = parse_file<onnx::TensorProto>(path, "TensorProto");
  if (name) *name = proto.name();
  return model::upload(model::tensor_from_onnx(proto, directory_of(path), path.string()), stream);
}

namespace {

// An empty sequence takes the declared dtype; one with tensors, theirs (run_values compares it
// with the model's).
TensorSequence sequence_from_onnx(const onnx::SequenceProto& proto,
                                  const std::filesystem::path& path, DType declared,
                                  Stream& stream) {
  TensorSequence sequence{declared, {}};
  if (proto.tensor_values_size() == 0) return sequence;
  if (proto.elem_type() != onnx::SequenceProto::TENSOR)
    throw Error(ErrorCode::Unsupported, path.string() + ": a sequence of element kind " +
                                            std::to_string(proto.elem_type()) +
                                            " (hal reads sequences of tensors)");
  for (int i = 0; i < proto.tensor_values_size(); ++i) {
    const std::string where = path.string() + ", tensor " + std::to_string(i);
    const model::HostTensor host =
        model::tensor_from_onnx(proto.tensor_values(i), directory_of(path), where);
    if (i > 0 && host.dtype != sequence.dtype)
      throw Error(ErrorCode::InvalidArgument, where + " is " + std::string(to_string(host.dtype)) +
                                                  ", tensor 0 " +
                                                  std::string(to_string(sequence.dtype)));
    sequence.dtype = host.dtype;
    sequence.tensors.push_back(model::upload(host, stream));
  }
  return sequence;
}

// A TensorProto as the tensor it holds: a string tensor where its elements are STRING.
RunValue value_from_onnx(const onnx::TensorProto& proto, const std::filesystem::path& path,
                         Stream& stream) {
  if (proto.data_type() == onnx::TensorProto::STRING)
    return model::strings_from_onnx(proto, path.string());
  return model::upload(model::tensor_from_onnx(proto, directory_of(path), path.string()), stream);
}

}  // namespace

RunValue read_onnx_value(const std::filesystem::path& path, const ModelValue& declared,
                         Stream& stream, std::string* name) {
  if (declared.optional) {
    const auto proto = parse_file<onnx::OptionalProto>(path, "OptionalProto");
    if (name) *name = proto.name();
    if (proto.has_tensor_value()) return value_from_onnx(proto.tensor_value(), path, stream);
    if (proto.has_sequence_value())
      return sequence_from_onnx(proto.sequence_value(), path, declared.dtype, stream);
    if (proto.elem_type() == onnx::OptionalProto::UNDEFINED ||
        proto.elem_type() == onnx::OptionalProto::TENSOR ||
        proto.elem_type() == onnx::OptionalProto::SEQUENCE)
      return Tensor();  // none
    throw Error(ErrorCode::Unsupported, path.string() + ": an optional of element kind " +
                                            std::to_string(proto.elem_type()));
  }
  if (!declared.sequence) {
    auto proto = parse_file<onnx::TensorProto>(path, "TensorProto");
    if (name) *name = proto.name();
    // UINT16 where a bfloat16 value goes holds its bits: ONNX's test generator stores bfloat16
    // so, NumPy having no such type (both keep 16-bit elements in int32_data or raw_data).
    if (declared.dtype == DType::bf16 && proto.data_type() == onnx::TensorProto::UINT16)
      proto.set_data_type(onnx::TensorProto::BFLOAT16);
    return value_from_onnx(proto, path, stream);
  }
  const auto proto = parse_file<onnx::SequenceProto>(path, "SequenceProto");
  if (name) *name = proto.name();
  return sequence_from_onnx(proto, path, declared.dtype, stream);
}

}  // namespace hal

// read_onnx_tensor, read_onnx_sequence: a TensorProto or SequenceProto file (ONNX's backend test
// data) as a tensor or a sequence on a device.
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

TensorSequence read_onnx_sequence(const std::filesystem::path& path, Stream& stream,
                                  std::string* name) {
  const auto proto = parse_file<onnx::SequenceProto>(path, "SequenceProto");
  if (name) *name = proto.name();
  if (proto.elem_type() != onnx::SequenceProto::TENSOR)
    throw Error(ErrorCode::Unsupported,
                path.string() + ": a sequence of " +
                    (proto.elem_type() == onnx::SequenceProto::UNDEFINED
                         ? std::string("undefined elements")
                         : "element kind " + std::to_string(proto.elem_type())) +
                    " (hal reads sequences of tensors)");
  TensorSequence sequence;
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

}  // namespace hal

// read_onnx_tensor: a TensorProto file (ONNX's backend test data) as a tensor on a device.
#include <fstream>
#include <sstream>

#include "hal/error.hpp"
#include "hal/model.hpp"
#include "model/onnx_ops.hpp"
#include "model/onnx_tensor.hpp"

namespace hal {

Tensor read_onnx_tensor(const std::filesystem::path& path, Stream& stream, std::string* name) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorCode::InvalidArgument, "cannot open tensor file " + path.string());
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string bytes = std::move(contents).str();
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::InvalidArgument,
                path.string() + ": not an ONNX TensorProto (the protobuf does not parse)");
  if (name) *name = proto.name();
  const auto directory =
      path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  return model::upload(model::tensor_from_onnx(proto, directory, path.string()), stream);
}

}  // namespace hal

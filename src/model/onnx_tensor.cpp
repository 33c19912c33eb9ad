#include "model/onnx_tensor.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/checked_math.hpp"
#include "hal/error.hpp"

namespace hal::model {
namespace {

using onnx::TensorProto;

[[noreturn]] void invalid(std::string_view where, const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, std::string(where) + ": " + what);
}

// The external file's bytes [offset, offset + length), from a path that must stay inside
// `directory` (or the folder `model_file` resolves to): a model must not make hal read
// /etc/passwd.
std::vector<std::byte> read_external(const TensorProto& proto,
                                     const std::filesystem::path& directory, size_t expected,
                                     std::string_view where,
                                     const std::filesystem::path& model_file) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoull(entry.value());
      else if (entry.key() == "length")
        length = std::stoull(entry.value());
    } catch (const std::exception&) {
      invalid(where, "external data " + entry.key() + " '" + entry.value() + "' is not a number");
    }
  }
  if (location.empty()) invalid(where, "external data without a location");
  if (directory.empty())
    invalid(where, "external data in '" + location + "', but the model was not loaded from a file");
  const std::filesystem::path relative(location);
  if (relative.is_absolute())
    invalid(where, "external data location '" + location +
                       "' is absolute; it must be relative to the model");
  for (const auto& part : relative)
    if (part == "..")
      invalid(where, "external data location '" + location + "' leaves the model's directory");
  if (length && *length != expected)
    invalid(where, "external data length " + std::to_string(*length) + " is not the " +
                       std::to_string(expected) + " bytes its dims need");
  const std::filesystem::path path = directory / relative;
  // A link in the model's folder may point anywhere: resolved, the file must lie in that folder
  // too (a model must not make hal read /etc/passwd), or in the folder the model file itself
  // resolves to (a Hugging Face snapshot links both the model and its data into one blobs/).
  std::error_code error;
  const auto target = std::filesystem::weakly_canonical(path, error);
  if (error) invalid(where, "cannot resolve external data file " + path.string());
  const auto within = [&](const std::filesystem::path& folder) {
    std::error_code folder_error;
    const auto root = std::filesystem::weakly_canonical(folder, folder_error);
    if (folder_error || root.empty()) return false;
    return std::mismatch(root.begin(), root.end(), target.begin(), target.end()).first ==
           root.end();
  };
  std::filesystem::path model_folder;  // where the model file resolves to, if loaded from one
  if (!model_file.empty()) {
    std::error_code model_error;
    const auto resolved = std::filesystem::weakly_canonical(model_file, model_error);
    if (!model_error) model_folder = resolved.parent_path();
  }
  if (!within(directory) && (model_folder.empty() || !within(model_folder)))
    invalid(where, "external data location '" + location + "' resolves to " + target.string() +
                       ", outside the model's directory");
  std::ifstream file(path, std::ios::binary);
  if (!file) invalid(where, "cannot open external data file " + path.string());
  // The file's size first: the dims may ask for far more than it holds.
  const auto size = std::filesystem::file_size(path, error);
  if (error) invalid(where, "cannot read the size of external data file " + path.string());
  if (offset > size || expected > size - offset)
    invalid(where, "external data file " + path.string() + " holds " + std::to_string(size) +
                       " bytes, fewer than the " + std::to_string(offset) + " + " +
                       std::to_string(expected) + " its offset and dims need");
  std::vector<std::byte> bytes(expected);
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(expected));
  if (!file || static_cast<size_t>(file.gcount()) != expected)
    invalid(where, "external data file " + path.string() + " holds fewer than " +
                       std::to_string(offset + expected) + " bytes");
  return bytes;
}

template <class Stored, class Field>
std::vector<std::byte> narrow_each(const Field& values, size_t count, std::string_view where,
                                   const char* field) {
  if (static_cast<size_t>(values.size()) != count)
    invalid(where, std::string(field) + " holds " + std::to_string(values.size()) + " values for " +
                       std::to_string(count) + " elements");
  std::vector<std::byte> bytes(count * sizeof(Stored));
  for (size_t i = 0; i < count; ++i) {
    const auto value = static_cast<Stored>(values[static_cast<int>(i)]);
    std::memcpy(bytes.data() + i * sizeof(Stored), &value, sizeof(Stored));
  }
  return bytes;
}

std::vector<std::byte> typed_fields(const TensorProto& proto, DType dtype, size_t count,
                                    std::string_view where) {
  switch (dtype) {
    case DType::f32:
      return narrow_each<float>(proto.float_data(), count, where, "float_data");
    case DType::f64:
      return narrow_each<double>(proto.double_data(), count, where, "double_data");
    case DType::i64:
      return narrow_each<int64_t>(proto.int64_data(), count, where, "int64_data");
    case DType::i32:
      return narrow_each<int32_t>(proto.int32_data(), count, where, "int32_data");
    case DType::i8:
      return narrow_each<int8_t>(proto.int32_data(), count, where, "int32_data");
    case DType::u8:
    case DType::boolean:
      return narrow_each<uint8_t>(proto.int32_data(), count, where, "int32_data");
    case DType::i16:
      return narrow_each<int16_t>(proto.int32_data(), count, where, "int32_data");
    case DType::u16:
    case DType::f16:
    case DType::bf16:  // their bits, in the low half of each int32
      return narrow_each<uint16_t>(proto.int32_data(), count, where, "int32_data");
    case DType::u32:
      return narrow_each<uint32_t>(proto.uint64_data(), count, where, "uint64_data");
    case DType::u64:
      return narrow_each<uint64_t>(proto.uint64_data(), count, where, "uint64_data");
  }
  invalid(where, "has no data field for its type");
}

}  // namespace

int32_t onnx_elem_type(DType dtype) {
  for (int32_t elem = 1; elem <= onnx::TensorProto::DataType_MAX; ++elem)
    if (dtype_from_onnx(elem) == dtype) return elem;
  throw Error(ErrorCode::Internal, "no ONNX element type for " + std::string(to_string(dtype)));
}

onnx::TensorProto tensor_to_onnx(const HostTensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnx_elem_type(tensor.dtype));
  for (int64_t d : tensor.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes.data(), tensor.bytes.size());
  return proto;
}

std::optional<DType> dtype_from_onnx(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
      return DType::f32;
    case TensorProto::FLOAT16:
      return DType::f16;
    case TensorProto::BFLOAT16:
      return DType::bf16;
    case TensorProto::DOUBLE:
      return DType::f64;
    case TensorProto::INT8:
      return DType::i8;
    case TensorProto::UINT8:
      return DType::u8;
    case TensorProto::INT32:
      return DType::i32;
    case TensorProto::INT64:
      return DType::i64;
    case TensorProto::INT16:
      return DType::i16;
    case TensorProto::UINT16:
      return DType::u16;
    case TensorProto::UINT32:
      return DType::u32;
    case TensorProto::UINT64:
      return DType::u64;
    case TensorProto::BOOL:
      return DType::boolean;
    default:
      return std::nullopt;
  }
}

std::string onnx_type_name(int32_t elem_type) {
  if (!TensorProto::DataType_IsValid(elem_type)) return "type " + std::to_string(elem_type);
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type));
}

HostTensor tensor_from_onnx(const TensorProto& proto, const std::filesystem::path& directory,
                            std::string_view where, const std::filesystem::path& model_file) {
  const auto dtype = dtype_from_onnx(proto.data_type());
  if (!dtype)
    throw Error(
        ErrorCode::Unsupported,
        std::string(where) + ": element type " + onnx_type_name(proto.data_type()) +
            (proto.data_type() == TensorProto::STRING
                 ? " where a numeric tensor goes"
                 : " (hal has f32, f16, bf16, f64, i8, u8, i16, u16, i32, u32, i64, u64, bool and "
                   "strings)"));
  if (proto.has_segment())
    throw Error(ErrorCode::Unsupported, std::string(where) + ": segmented tensors");
  HostTensor tensor;
  tensor.dtype = *dtype;
  for (int64_t dim : proto.dims()) {
    if (dim < 0) invalid(where, "dimension " + std::to_string(dim) + " is negative");
    tensor.shape.push_back(dim);
  }
  const auto count = static_cast<size_t>(numel(tensor.shape));
  const auto bytes = detail::checked_mul(count, size_of(*dtype));
  if (!bytes)
    invalid(where, "dims " + to_string(tensor.shape) + " hold more bytes than memory can");
  if (proto.data_location() == TensorProto::EXTERNAL) {
    tensor.bytes = read_external(proto, directory, *bytes, where, model_file);
  } else if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();  // little-endian, as this host is
    if (raw.size() != *bytes)
      invalid(where, "raw_data holds " + std::to_string(raw.size()) + " bytes; dims " +
                         to_string(tensor.shape) + " of " + std::string(to_string(*dtype)) +
                         " need " + std::to_string(*bytes));
    tensor.bytes.resize(raw.size());
    if (!raw.empty()) std::memcpy(tensor.bytes.data(), raw.data(), raw.size());  // no null source
  } else {
    tensor.bytes = typed_fields(proto, *dtype, count, where);
  }
  return tensor;
}

StringTensor strings_from_onnx(const TensorProto& proto, std::string_view where) {
  if (proto.data_type() != TensorProto::STRING)
    invalid(where, "element type " + onnx_type_name(proto.data_type()) + " where STRING goes");
  if (proto.data_location() == TensorProto::EXTERNAL || proto.has_segment())
    throw Error(ErrorCode::Unsupported,
                std::string(where) + ": string tensors in external data or segments");
  StringTensor tensor;
  for (int64_t dim : proto.dims()) {
    if (dim < 0) invalid(where, "dimension " + std::to_string(dim) + " is negative");
    tensor.shape.push_back(dim);
  }
  if (proto.has_raw_data())
    invalid(where, "string elements in raw_data (ONNX keeps them in string_data)");
  if (static_cast<int64_t>(proto.string_data_size()) != tensor.numel())
    invalid(where, "string_data holds " + std::to_string(proto.string_data_size()) +
                       " strings; dims " + to_string(tensor.shape) + " need " +
                       std::to_string(tensor.numel()));
  tensor.data.assign(proto.string_data().begin(), proto.string_data().end());
  return tensor;
}

}  // namespace hal::model

// ONNX element types (TensorProto::DataType numbers) and hal's dtypes, without protobuf's
// headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hal/dtype.hpp"

namespace hal::model {

// TensorProto::STRING: not a hal dtype; such values are StringTensors on the host.
inline constexpr int32_t kOnnxString = 8;

// The hal dtype of an ONNX element type; nullopt for those hal has not (strings, complex ...).
std::optional<DType> dtype_from_onnx(int32_t elem_type);
// The ONNX element type of a hal dtype.
int32_t onnx_elem_type(DType dtype);
// "FLOAT", "STRING", ...; "type 42" for a number ONNX does not define.
std::string onnx_type_name(int32_t elem_type);

}  // namespace hal::model

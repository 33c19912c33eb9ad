#include "serve/infer_codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "hal/dtype.hpp"
#include "serve/kserve_datatype.hpp"
#include "serve/request_error.hpp"

namespace hal::serve {
namespace {

using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& message) { throw RequestError(400, message); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + (shape[i] < 0 ? std::string("-1") : std::to_string(shape[i]));
  return text + "]";
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

template <class T>
void append_value(std::string& bytes, T value) {
  bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
void append_integer(std::string& bytes, const json& value, const std::string& where) {
  if (!value.is_number_integer()) refuse(where + " is not an integer");
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      refuse(where + " is out of range");
    return append_value(bytes, static_cast<T>(v));
  }
  const auto v = value.get<int64_t>();
  if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
    refuse(where + " is out of range");
  append_value(bytes, static_cast<T>(v));
}

void append_element(std::string& bytes, DType dtype, const json& value, const std::string& where) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
      if (!value.is_number()) refuse(where + " is not a number");
      if (dtype == DType::f32) return append_value(bytes, value.get<float>());
      return append_value(bytes, value.get<double>());
    case DType::i8:
      return append_integer<int8_t>(bytes, value, where);
    case DType::u8:
      return append_integer<uint8_t>(bytes, value, where);
    case DType::i32:
      return append_integer<int32_t>(bytes, value, where);
    case DType::i64:
      return append_integer<int64_t>(bytes, value, where);
    case DType::boolean:
      if (!value.is_boolean()) refuse(where + " is not true or false");
      return append_value(bytes, static_cast<uint8_t>(value.get<bool>() ? 1 : 0));
    default:
      refuse(where + ": " + kserve_datatype(dtype) +
             " tensors come as binary data (parameters.binary_data_size)");
  }
}

// Flattens nested arrays (KServe allows row-major flat or nested data) into `out`. Arrays
// nested deeper than the shape has dimensions are refused before they are walked: the walk
// recurses once a level, and a body of a million '[' would otherwise take the thread's stack.
void flatten(const json& data, std::vector<const json*>& out, size_t limit, size_t depth_left,
             const std::string& where) {
  if (!data.is_array()) {
    out.push_back(&data);
    return;
  }
  if (depth_left == 0) refuse(where + ": 'data' is nested deeper than its shape");
  for (const json& element : data) {
    if (out.size() > limit) return;  // more than the shape holds: counted as a mismatch
    flatten(element, out, limit, depth_left - 1, where);
  }
}

template <class T>
json decode_elements(const std::string& bytes) {
  json data = json::array();
  const size_t n = bytes.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>)
      data.push_back(static_cast<int>(value));
    else
      data.push_back(value);
  }
  return data;
}

json decode_data(const HostTensor& tensor) {
  switch (tensor.dtype) {
    case DType::f32:
      return decode_elements<float>(tensor.bytes);
    case DType::f64:
      return decode_elements<double>(tensor.bytes);
    case DType::i8:
      return decode_elements<int8_t>(tensor.bytes);
    case DType::u8:
      return decode_elements<uint8_t>(tensor.bytes);
    case DType::i32:
      return decode_elements<int32_t>(tensor.bytes);
    case DType::i64:
      return decode_elements<int64_t>(tensor.bytes);
    case DType::boolean: {
      json data = json::array();
      for (char c : tensor.bytes) data.push_back(c != 0);
      return data;
    }
    default:
      return nullptr;  // f16, bf16: sent as binary (encode_infer_response)
  }
}

int64_t integer_field(const json& value, const std::string& where, int64_t low, int64_t high) {
  if (!value.is_number_integer()) refuse(where + " is not an integer");
  const std::string range =
      "out of range (" + std::to_string(low) + " to " + std::to_string(high) + ")";
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(high)) refuse(where + " is " + std::to_string(v) + ", " + range);
    return static_cast<int64_t>(v);
  }
  const auto v = value.get<int64_t>();
  if (v < low || v > high) refuse(where + " is " + std::to_string(v) + ", " + range);
  return v;
}

size_t parse_header_length(const std::string& text, size_t body_size) {
  if (text.empty() || text.size() > 19 || !std::all_of(text.begin(), text.end(), ::isdigit))
    refuse("Inference-Header-Content-Length '" + text + "' is not a whole number");
  const uint64_t length = std::stoull(text);
  if (length > body_size)
    refuse("Inference-Header-Content-Length " + text + " is larger than the body (" +
           std::to_string(body_size) + " bytes)");
  return static_cast<size_t>(length);
}

// The shape as the request gives it, checked against the model's declared shape.
std::vector<int64_t> checked_shape(const json& input, const TensorSpec& spec,
                                   const ModelSignature& signature, const std::string& where) {
  const json* shape = member(input, "shape");
  if (!shape) refuse(where + ": 'shape' is missing");
  if (!shape->is_array()) refuse(where + ": 'shape' is not an array");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < shape->size(); ++i)
    dims.push_back(integer_field((*shape)[i], where + ": shape[" + std::to_string(i) + "]", 0,
                                 std::numeric_limits<int32_t>::max()));
  if (dims.size() != spec.shape.size())
    refuse(where + ": shape " + shape_text(dims) + " has rank " + std::to_string(dims.size()) +
           "; the model's is " + shape_text(spec.shape));
  for (size_t i = 0; i < dims.size(); ++i)
    if (spec.shape[i] >= 0 && dims[i] != spec.shape[i])
      refuse(where + ": shape " + shape_text(dims) + " does not match the model's " +
             shape_text(spec.shape) + " at dimension " + std::to_string(i));
  if (signature.batchable) {
    if (dims[0] < 1) refuse(where + ": the batch dimension (shape[0]) is 0");
    if (dims[0] > signature.max_batch)
      refuse(where + ": a batch of " + std::to_string(dims[0]) +
             " exceeds the model's max batch of " + std::to_string(signature.max_batch));
  }
  // Guard the element count before anything is allocated for it.
  double elements = 1;
  for (int64_t d : dims) elements *= static_cast<double>(d);
  if (elements > 1e9) refuse(where + ": shape " + shape_text(dims) + " holds too many elements");
  return dims;
}

void read_parameters(const json& request, const ModelSignature& signature, InferRequest& out,
                     bool& binary_default) {
  out.priority = signature.priority_levels;
  const json* parameters = member(request, "parameters");
  if (!parameters) return;
  if (!parameters->is_object()) refuse("'parameters' is not an object");
  if (const json* timeout = member(*parameters, "timeout_us"))
    out.timeout_us = integer_field(*timeout, "parameters.timeout_us", 1,
                                   std::numeric_limits<int64_t>::max() / 1000);
  if (const json* priority = member(*parameters, "priority"))
    out.priority = integer_field(*priority, "parameters.priority", 1, signature.priority_levels);
  if (const json* binary = member(*parameters, "binary_data_output")) {
    if (!binary->is_boolean()) refuse("parameters.binary_data_output is not true or false");
    binary_default = binary->get<bool>();
  }
}

void read_outputs(const json& request, const ModelSignature& signature, bool binary_default,
                  InferRequest& out) {
  const json* outputs = member(request, "outputs");
  if (!outputs) {
    for (const TensorSpec& spec : signature.outputs) {
      out.outputs.push_back(spec.name);
      out.binary_outputs.push_back(binary_default);
    }
    return;
  }
  if (!outputs->is_array()) refuse("'outputs' is not an array");
  for (size_t i = 0; i < outputs->size(); ++i) {
    const json& output = (*outputs)[i];
    const std::string where = "outputs[" + std::to_string(i) + "]";
    if (!output.is_object()) refuse(where + " is not an object");
    const json* name = member(output, "name");
    if (!name) refuse(where + ": 'name' is missing");
    if (!name->is_string()) refuse(where + ": 'name' is not a string");
    const auto& text = name->get_ref<const std::string&>();
    if (std::none_of(signature.outputs.begin(), signature.outputs.end(),
                     [&](const TensorSpec& s) { return s.name == text; }))
      refuse(where + ": model '" + signature.name + "' has no output '" + text + "'");
    if (std::find(out.outputs.begin(), out.outputs.end(), text) != out.outputs.end())
      refuse(where + ": output '" + text + "' is asked for twice");
    bool binary = binary_default;
    if (const json* parameters = member(output, "parameters")) {
      if (!parameters->is_object()) refuse(where + ": 'parameters' is not an object");
      if (const json* flag = member(*parameters, "binary_data")) {
        if (!flag->is_boolean()) refuse(where + ": parameters.binary_data is not true or false");
        binary = flag->get<bool>();
      }
    }
    out.outputs.push_back(text);
    out.binary_outputs.push_back(binary);
  }
}

}  // namespace

InferRequest parse_infer_request(std::string_view body,
                                 const std::optional<std::string>& header_length,
                                 const ModelSignature& signature) {
  size_t json_size = body.size();
  if (header_length) json_size = parse_header_length(*header_length, body.size());
  if (json_size == 0) refuse("the request body is empty; expected a JSON object");
  const json request = json::parse(body.substr(0, json_size), nullptr, false);
  if (request.is_discarded()) refuse("the request body is not valid JSON");
  if (!request.is_object()) refuse("the request body is not a JSON object");

  InferRequest out;
  if (const json* id = member(request, "id")) {
    if (!id->is_string()) refuse("'id' is not a string");
    out.id = id->get<std::string>();
  }
  bool binary_default = false;
  read_parameters(request, signature, out, binary_default);

  const json* inputs = member(request, "inputs");
  if (!inputs) refuse("'inputs' is missing");
  if (!inputs->is_array()) refuse("'inputs' is not an array");
  size_t binary_offset = json_size;
  int64_t rows = -1;
  for (size_t i = 0; i < inputs->size(); ++i) {
    const json& input = (*inputs)[i];
    std::string where = "inputs[" + std::to_string(i) + "]";
    if (!input.is_object()) refuse(where + " is not an object");
    const json* name = member(input, "name");
    if (!name) refuse(where + ": 'name' is missing");
    if (!name->is_string()) refuse(where + ": 'name' is not a string");
    const auto& text = name->get_ref<const std::string&>();
    const auto spec = std::find_if(signature.inputs.begin(), signature.inputs.end(),
                                   [&](const TensorSpec& s) { return s.name == text; });
    if (spec == signature.inputs.end())
      refuse(where + ": model '" + signature.name + "' has no input '" + text + "'");
    if (out.inputs.contains(text)) refuse(where + ": input '" + text + "' is given twice");
    where += " ('" + text + "')";

    const json* datatype = member(input, "datatype");
    if (!datatype) refuse(where + ": 'datatype' is missing");
    if (!datatype->is_string()) refuse(where + ": 'datatype' is not a string");
    const auto dtype = parse_kserve_datatype(datatype->get<std::string>());
    if (!dtype)
      refuse(where + ": datatype '" + datatype->get<std::string>() + "' is not one hal serves");
    if (*dtype != spec->dtype)
      refuse(where + ": datatype " + datatype->get<std::string>() + " does not match the model's " +
             kserve_datatype(spec->dtype));
    HostTensor tensor{*dtype, checked_shape(input, *spec, signature, where), {}};
    const int64_t count = element_count(tensor.shape);
    const size_t bytes = static_cast<size_t>(count) * size_of(*dtype);

    const json* parameters = member(input, "parameters");
    if (parameters && !parameters->is_object()) refuse(where + ": 'parameters' is not an object");
    const json* binary_size = parameters ? member(*parameters, "binary_data_size") : nullptr;
    const json* data = member(input, "data");
    if (binary_size) {
      if (data) refuse(where + ": has both 'data' and parameters.binary_data_size");
      if (!header_length)
        refuse(where +
               ": parameters.binary_data_size needs the Inference-Header-Content-Length header");
      const int64_t size = integer_field(*binary_size, where + ": parameters.binary_data_size", 0,
                                         std::numeric_limits<int64_t>::max());
      if (static_cast<size_t>(size) != bytes)
        refuse(where + ": parameters.binary_data_size is " + std::to_string(size) +
               " bytes; shape " + shape_text(tensor.shape) + " of " + kserve_datatype(*dtype) +
               " needs " + std::to_string(bytes));
      if (body.size() - binary_offset < bytes)
        refuse(where + ": the body ends before its " + std::to_string(bytes) +
               " bytes of binary data");
      tensor.bytes.assign(body.substr(binary_offset, bytes));
      binary_offset += bytes;
    } else {
      if (!data) refuse(where + ": 'data' is missing");
      if (!data->is_array()) refuse(where + ": 'data' is not an array");
      std::vector<const json*> elements;
      flatten(*data, elements, static_cast<size_t>(count), std::max<size_t>(tensor.shape.size(), 1),
              where);
      if (elements.size() != static_cast<size_t>(count))
        refuse(where + ": 'data' has " +
               (elements.size() > static_cast<size_t>(count) ? "more than " + std::to_string(count)
                                                             : std::to_string(elements.size())) +
               " elements; shape " + shape_text(tensor.shape) + " holds " + std::to_string(count));
      tensor.bytes.reserve(bytes);
      for (size_t e = 0; e < elements.size(); ++e)
        append_element(tensor.bytes, *dtype, *elements[e],
                       where + ": data[" + std::to_string(e) + "]");
    }
    if (signature.batchable) {
      if (rows >= 0 && tensor.shape[0] != rows)
        refuse(where + ": a batch of " + std::to_string(tensor.shape[0]) +
               " where the other inputs have " + std::to_string(rows));
      rows = tensor.shape[0];
    }
    out.inputs.emplace(text, std::move(tensor));
  }
  if (header_length && binary_offset != body.size())
    refuse("the body has " + std::to_string(body.size() - binary_offset) +
           " bytes after the binary data its inputs declare");
  for (const TensorSpec& spec : signature.inputs)
    if (!out.inputs.contains(spec.name))
      refuse("'inputs': input '" + spec.name + "' of model '" + signature.name + "' is missing");
  // Requests batch together when every input has the same row shape; the key lists them in
  // the model's order, whatever order the request gave them in.
  if (signature.batchable)
    for (const TensorSpec& spec : signature.inputs) {
      const HostTensor& tensor = out.inputs.at(spec.name);
      out.shape_key += spec.name + ":" + kserve_datatype(tensor.dtype) +
                       shape_text({tensor.shape.begin() + 1, tensor.shape.end()});
    }
  out.rows = signature.batchable ? rows : 1;
  read_outputs(request, signature, binary_default, out);
  return out;
}

InferResponse encode_infer_response(const ModelSignature& signature, const InferRequest& request,
                                    const HostTensors& outputs) {
  json document{{"model_name", signature.name}, {"model_version", "1"}};
  if (!request.id.empty()) document["id"] = request.id;
  json list = json::array();
  std::string binary;
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const HostTensor& tensor = outputs.at(request.outputs[i]);
    json entry{{"name", request.outputs[i]},
               {"datatype", kserve_datatype(tensor.dtype)},
               {"shape", tensor.shape}};
    json data = request.binary_outputs[i] ? json() : decode_data(tensor);
    if (data.is_null()) {  // binary as asked, or a dtype JSON has no numbers for
      entry["parameters"] = {{"binary_data_size", tensor.bytes.size()}};
      binary += tensor.bytes;
    } else {
      entry["data"] = std::move(data);
    }
    list.push_back(std::move(entry));
  }
  document["outputs"] = std::move(list);
  InferResponse response{response_text(document), std::nullopt};
  if (!binary.empty() || std::find(request.binary_outputs.begin(), request.binary_outputs.end(),
                                   true) != request.binary_outputs.end()) {
    response.header_length = response.body.size();
    response.body += binary;
  }
  return response;
}

json model_metadata(const ModelSignature& signature) {
  auto describe = [](const std::vector<TensorSpec>& specs) {
    json list = json::array();
    for (const TensorSpec& spec : specs)
      list.push_back(
          {{"name", spec.name}, {"datatype", kserve_datatype(spec.dtype)}, {"shape", spec.shape}});
    return list;
  };
  return {{"name", signature.name},
          {"versions", {"1"}},
          {"platform", "onnx"},
          {"inputs", describe(signature.inputs)},
          {"outputs", describe(signature.outputs)},
          {"parameters", {{"max_batch_size", signature.batchable ? signature.max_batch : 0}}}};
}

std::string response_text(const json& body) {
  return body.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

std::string error_body(const std::string& message) { return response_text({{"error", message}}); }

}  // namespace hal::serve

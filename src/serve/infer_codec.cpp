#include "serve/infer_codec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "hal/dtype.hpp"
#include "serve/kserve_datatype.hpp"
#include "serve/request_error.hpp"
#include "tensor/element_codec.hpp"

namespace hal::serve {
namespace {

using json = nlohmann::json;

// A shape's elements past this are refused: a guard before anything is allocated for them.
constexpr double kMaxElements = 1e9;
// A product of dimensions that stops growing past kMaxElements: never infinite, so that a later
// 0 still makes it 0 (inf x 0 is NaN, which passed every comparison with the limit).
double times_saturated(double elements, double dim) {
  return std::min(elements * dim, 2 * kMaxElements);
}
// The product of `dims` with each 0 taken as 1, saturated: a bound on the element count, and on
// the strides of a tensor of no elements (element_count multiplies through them on the way to 0).
double span_of(const std::vector<int64_t>& dims) {
  double span = 1;
  for (int64_t d : dims) span = times_saturated(span, static_cast<double>(std::max<int64_t>(d, 1)));
  return span;
}
// Dimensions a request's 'shape' may list; past this it is refused as it is read.
constexpr size_t kMaxDimensions = 64;
// The magnitude from which a double rounds to an infinite FP32: 2^128 - 2^103, halfway between
// the largest float and 2^128.
constexpr double kFloatOverflow = 0x1.ffffffp+127;

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

// The shortest text that reads back as `value`; a whole number keeps its ".0", as nlohmann
// writes it, so that it reads back as a float. NaN and the infinities as Triton writes them.
void append_double(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "Infinity" : "-Infinity";
  } else {
    char text[32];
    const char* end = std::to_chars(text, text + sizeof text, value).ptr;
    const std::string_view written(text, static_cast<size_t>(end - text));
    out += written;
    if (written.find_first_of(".e") == std::string_view::npos) out += ".0";
  }
}

std::string number_text(double value) {
  std::string text;
  append_double(text, value);
  return text;
}

double largest_finite(DType dtype) {
  if (dtype == DType::f16) return tensor::f16_to_f32(0x7bff);
  if (dtype == DType::bf16) return tensor::bf16_to_f32(0x7f7f);
  return std::numeric_limits<float>::max();
}

// A JSON number as an element of a floating dtype. One the dtype would hold as infinity (1e39
// in FP32) is refused: the client sent a finite number, and the model would see another.
void append_floating(std::string& bytes, DType dtype, double value, const std::string& where) {
  if (dtype == DType::f64) return append_value(bytes, value);
  if (dtype == DType::f32 && std::fabs(value) < kFloatOverflow)
    return append_value(bytes, static_cast<float>(value));
  if (dtype == DType::f16 || dtype == DType::bf16) {
    const bool half = dtype == DType::f16;
    const uint16_t bits = half ? tensor::f64_to_f16(value) : tensor::f64_to_bf16(value);
    if (!std::isinf(half ? tensor::f16_to_f32(bits) : tensor::bf16_to_f32(bits)))
      return append_value(bytes, bits);
  }
  refuse(where + " is " + number_text(value) + ", which " + kserve_datatype(dtype) +
         " cannot hold (its largest is " + number_text(largest_finite(dtype)) + ")");
}

void append_element(std::string& bytes, DType dtype, const json& value, const std::string& where) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16:
      if (!value.is_number()) refuse(where + " is not a number");
      return append_floating(bytes, dtype, value.get<double>(), where);
    case DType::i8:
      return append_integer<int8_t>(bytes, value, where);
    case DType::u8:
      return append_integer<uint8_t>(bytes, value, where);
    case DType::i32:
      return append_integer<int32_t>(bytes, value, where);
    case DType::i64:
      return append_integer<int64_t>(bytes, value, where);
    case DType::i16:
      return append_integer<int16_t>(bytes, value, where);
    case DType::u16:
      return append_integer<uint16_t>(bytes, value, where);
    case DType::u32:
      return append_integer<uint32_t>(bytes, value, where);
    case DType::u64:
      return append_integer<uint64_t>(bytes, value, where);
    case DType::boolean:
      if (!value.is_boolean()) refuse(where + " is not true or false");
      return append_value(bytes, static_cast<uint8_t>(value.get<bool>() ? 1 : 0));
  }
}

// BOOL elements travel as one byte each, 0 or 1; another value would be true to some ops and
// false to others (a bitwise Not of 2 is 253), so it is refused, as a strict server does.
void check_bool_bytes(std::string_view bytes, const std::string& where) {
  for (size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != 0 && bytes[i] != 1)
      refuse(where + ": byte " + std::to_string(i) + " of its binary data is " +
             std::to_string(static_cast<unsigned char>(bytes[i])) + "; a BOOL element is 0 or 1");
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

// Reading the request as it is parsed (nlohmann's SAX interface) rather than from a document of
// all of it: a document costs 16 bytes and more a value, so that a 40 MB body of numbers for an
// input of 4 took about 0.9 GB before its count was checked. The reader keeps only the fields
// the checks below read, and of lists only what the model can use (see DataLimit), so that what
// a body costs is bounded by what the model takes (a kept number still costs a json value, ~16
// bytes, and its pointer); the checks then read what is kept, and say what they said of
// the whole document. It stops at once at an input's 'data' past what its shape holds, where the
// shape came first (as Triton's clients write it).

// Where a value sits in the request, as far as reading it goes.
enum class Role {
  root,
  request_parameters,
  inputs,
  input,
  input_parameters,
  shape,
  data,
  outputs,
  output,
  output_parameters,
  field,    // a value the checks read as it is (a name, a number)
  skipped,  // a field hal does not read: not kept
};

struct Child {
  Role parent;
  std::string_view key;
  Role role;
};

// The fields the checks read, by the object they sit in; any other key's value is skipped.
constexpr Child kChildren[] = {
    {Role::root, "id", Role::field},
    {Role::root, "parameters", Role::request_parameters},
    {Role::root, "inputs", Role::inputs},
    {Role::root, "outputs", Role::outputs},
    {Role::request_parameters, "timeout_us", Role::field},
    {Role::request_parameters, "timeout", Role::field},
    {Role::request_parameters, "priority", Role::field},
    {Role::request_parameters, "binary_data_output", Role::field},
    {Role::request_parameters, "sequence_id", Role::field},
    {Role::request_parameters, "sequence_start", Role::field},
    {Role::request_parameters, "sequence_end", Role::field},
    {Role::input, "name", Role::field},
    {Role::input, "datatype", Role::field},
    {Role::input, "shape", Role::shape},
    {Role::input, "parameters", Role::input_parameters},
    {Role::input, "data", Role::data},
    {Role::input_parameters, "binary_data_size", Role::field},
    {Role::input_parameters, "shared_memory_region", Role::field},
    {Role::output, "name", Role::field},
    {Role::output, "parameters", Role::output_parameters},
    {Role::output_parameters, "binary_data", Role::field},
    {Role::output_parameters, "classification", Role::field},
    {Role::output_parameters, "shared_memory_region", Role::field},
};

// The container a role's checks expect; another container there is kept empty (its type is all
// the checks read of it) and what it holds is skipped.
json::value_t container_of(Role role) {
  switch (role) {
    case Role::inputs:
    case Role::outputs:
    case Role::shape:
    case Role::data:
      return json::value_t::array;
    case Role::root:
    case Role::request_parameters:
    case Role::input:
    case Role::input_parameters:
    case Role::output:
    case Role::output_parameters:
      return json::value_t::object;
    case Role::field:
    case Role::skipped:
      break;
  }
  return json::value_t::discarded;
}

const TensorSpec* spec_named(const json& input, const ModelSignature& signature) {
  const json* name = member(input, "name");
  if (!name || !name->is_string()) return nullptr;
  const auto spec =
      std::find_if(signature.inputs.begin(), signature.inputs.end(),
                   [&](const auto& s) { return s.name == name->get_ref<const std::string&>(); });
  return spec == signature.inputs.end() ? nullptr : &*spec;
}

// "inputs[2]", with the input's name where it came first and the model has it.
std::string input_where(const json& input, size_t index, const ModelSignature& signature) {
  const TensorSpec* spec = spec_named(input, signature);
  return "inputs[" + std::to_string(index) + "]" + (spec ? " ('" + spec->name + "')" : "");
}

// The input's 'shape' where it came before 'data' and lists sizes; nullopt otherwise.
std::optional<std::vector<int64_t>> given_shape(const json& input) {
  const json* shape = member(input, "shape");
  if (!shape || !shape->is_array()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 ||
        d.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    dims.push_back(d.get<int64_t>());
  }
  return dims;
}

// Whether `dims` pass checked_shape for `spec`.
bool fits(const std::vector<int64_t>& dims, const TensorSpec& spec,
          const ModelSignature& signature) {
  if (dims.size() != spec.shape.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (spec.shape[i] >= 0 && dims[i] != spec.shape[i]) return false;
  if (signature.batchable && spec.batch_dim && (dims[0] < 1 || dims[0] > signature.max_batch))
    return false;
  return span_of(dims) <= kMaxElements;
}

// What an input's 'data' may hold, as far as the fields before it tell. Where its 'shape' came
// first and fits the model, more elements than it holds are refused at once (the checks would
// refuse them after the whole body). Otherwise the model's input of its name (or the largest)
// bounds what is kept: elements past it are dropped but one, so that the checks, which read
// the shape, find the count too large, and as for every bound, nothing valid is dropped.
struct DataLimit {
  std::string refusal;  // past `elements` where the shape is known; "" drops instead
  size_t elements = 0;
  size_t arrays = 0;  // kept inside 'data': the shape's rows, and as many again as elements
  size_t depth = 1;   // arrays nested in 'data', itself included; deeper ones are kept empty
};

// The limit of a tensor of `dims` (a free one given as kMaxElements).
DataLimit extent(const std::vector<double>& dims) {
  double elements = 1, arrays = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) arrays += elements;  // the rows of the dimensions before this one
    elements = times_saturated(elements, dims[i]);
  }
  DataLimit limit;
  limit.elements = static_cast<size_t>(std::min(elements, kMaxElements));
  limit.arrays = static_cast<size_t>(std::min(arrays + elements + 1, kMaxElements));
  limit.depth = std::max<size_t>(dims.size(), 1);
  return limit;
}

// The most `spec` holds: a free first dimension at the max batch where the model batches; any
// other free one at the protocol's limit.
DataLimit most_of(const TensorSpec& spec, const ModelSignature& signature) {
  std::vector<double> dims;
  for (size_t i = 0; i < spec.shape.size(); ++i)
    dims.push_back(spec.shape[i] >= 0 ? static_cast<double>(spec.shape[i])
                   : i == 0 && signature.batchable && spec.batch_dim
                       ? static_cast<double>(signature.max_batch)
                       : kMaxElements);
  return extent(dims);
}

DataLimit data_limit(const json& input, size_t index, const ModelSignature& signature) {
  const TensorSpec* spec = spec_named(input, signature);
  const auto dims = given_shape(input);
  if (spec && dims && fits(*dims, *spec, signature)) {
    DataLimit limit = extent(std::vector<double>(dims->begin(), dims->end()));
    limit.refusal = input_where(input, index, signature) + ": 'data' has more than " +
                    std::to_string(limit.elements) + " elements; shape " + shape_text(*dims) +
                    " holds " + std::to_string(limit.elements);
    return limit;
  }
  if (spec) return most_of(*spec, signature);
  DataLimit limit;
  for (const TensorSpec& s : signature.inputs) {
    const DataLimit most = most_of(s, signature);
    limit.elements = std::max(limit.elements, most.elements);
    limit.arrays = std::max(limit.arrays, most.arrays);
    limit.depth = std::max(limit.depth, most.depth);
  }
  return limit;
}

class RequestReader {
 public:
  explicit RequestReader(const ModelSignature& signature) : signature_(signature) {}

  json take_document() { return std::move(document_); }
  // Set where the reader stopped the parse to refuse the request.
  const std::optional<std::string>& refusal() const { return refusal_; }

  // nlohmann's SAX interface (json::sax_parse); false stops the parse.
  bool null() { return skips() || add(nullptr); }
  bool boolean(bool value) { return skips() || add(value); }
  bool number_integer(json::number_integer_t value) { return skips() || add(value); }
  bool number_unsigned(json::number_unsigned_t value) { return skips() || add(value); }
  bool number_float(json::number_float_t value, const json::string_t& /*text*/) {
    return skips() || add(value);
  }
  bool string(json::string_t& value) { return skips() || add(std::move(value)); }
  bool binary(json::binary_t& /*value*/) { return true; }  // binary formats only, not JSON text
  bool key(json::string_t& name) {
    if (skipping_ == 0) key_ = std::move(name);
    return true;
  }
  bool start_object(std::size_t /*size*/) { return open(json::value_t::object); }
  bool start_array(std::size_t /*size*/) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& token,
                   const json::exception& error) {
    if (error.id == 406)  // nlohmann's "number overflow": JSON, but no double holds it
      refusal_ = "the request body holds the number " + token + ", beyond FP64's range";
    return false;
  }

 private:
  struct Frame {
    json* value;  // the open container, where it is kept
    Role role;
    size_t index = 0;  // an input's place in 'inputs'
    size_t depth = 0;  // in 'data': 1 for 'data' itself, 2 for an array in it, ...
  };

  // The role of the value that comes next: by its array, or by its key in its object.
  Role next_role() const {
    if (frames_.empty()) return Role::root;
    const Role parent = frames_.back().role;
    if (parent == Role::inputs) return Role::input;
    if (parent == Role::outputs) return Role::output;
    if (parent == Role::shape) return Role::field;
    if (parent == Role::data) return Role::data;
    for (const Child& child : kChildren)
      if (child.parent == parent && child.key == key_) return child.role;
    return Role::skipped;
  }

  const Frame& input_frame() const {
    return *std::find_if(frames_.rbegin(), frames_.rend(),
                         [](const Frame& f) { return f.role == Role::input; });
  }

  // Whether the value that comes next, of `type`, is kept; false with refusal_ set where the
  // request is refused. Entries of 'inputs' and 'outputs' past one more than the model has are
  // dropped: the checks find a bad one by then and name it. 'shape' past kMaxDimensions is
  // refused; 'data' is kept as data_room says.
  bool room_for(json::value_t type) {
    if (frames_.empty()) return true;
    const Frame& parent = frames_.back();
    switch (parent.role) {
      case Role::inputs:
        return parent.value->size() <= signature_.inputs.size();
      case Role::outputs:
        return parent.value->size() <= signature_.outputs.size();
      case Role::shape:
        if (parent.value->size() < kMaxDimensions) return true;
        refusal_ = input_where(*input_frame().value, input_frame().index, signature_) +
                   ": 'shape' has more than " + std::to_string(kMaxDimensions) + " dimensions";
        return false;
      case Role::data:
        return data_room(type);
      default:
        return true;
    }
  }

  // Whether the next value inside 'data' is kept, by data_limit_; false with refusal_ set where
  // the request is refused.
  bool data_room(json::value_t type) {
    if (type == json::value_t::array) {
      // No valid 'data' nests more arrays than the rows of the largest tensor it may be (the
      // limit leaves as many again): refused, rather than dropped, which would hide what the
      // dropped arrays hold from the checks.
      if (++data_arrays_ <= data_limit_.arrays) return true;
      refusal_ = input_where(*input_frame().value, input_frame().index, signature_) +
                 ": 'data' nests more arrays than its shape has rows";
      return false;
    }
    if (++data_elements_ <= data_limit_.elements) return true;
    if (data_limit_.refusal.empty()) return data_elements_ == data_limit_.elements + 1;
    refusal_ = data_limit_.refusal;
    return false;
  }

  // An array in 'data' nested deeper than data_limit_ allows: kept empty, so that the checks
  // find it there and say so.
  bool too_deep(Role role) const {
    return role == Role::data && !frames_.empty() && frames_.back().role == Role::data &&
           frames_.back().depth >= data_limit_.depth;
  }

  // Puts `value` where the parse is: the document, the end of the array on top, or the key just
  // read in the object on top. Where it now is stays put while it is open.
  json* place(json value) {
    if (frames_.empty()) return &(document_ = std::move(value));
    json& parent = *frames_.back().value;
    if (!parent.is_array()) return &(parent[key_] = std::move(value));
    parent.push_back(std::move(value));
    return &parent.back();
  }

  // Whether the value that comes next is not kept: it is in a container not kept, or a field hal
  // does not read. Checked before a value is made of it (a string would be copied).
  bool skips() const { return skipping_ > 0 || next_role() == Role::skipped; }

  bool add(json value) {
    if (!room_for(value.type())) return !refusal_;
    place(std::move(value));
    return true;
  }

  bool open(json::value_t type) {
    if (skipping_ > 0) {
      ++skipping_;  // its end comes as end_object or end_array
      return true;
    }
    const Role role = next_role();
    if (role == Role::skipped || !room_for(type)) {
      ++skipping_;
      return !refusal_;
    }
    json* placed = place(json(type));
    if (container_of(role) != type || too_deep(role)) {
      ++skipping_;
      return true;
    }
    Frame frame{placed, role};
    if (role == Role::input) frame.index = frames_.back().value->size() - 1;
    if (role == Role::data) enter_data(frame);
    frames_.push_back(frame);
    return true;
  }

  void enter_data(Frame& frame) {
    const Frame& parent = frames_.back();
    if (parent.role == Role::data) {
      frame.depth = parent.depth + 1;
      return;
    }
    frame.depth = 1;
    data_elements_ = 0;
    data_arrays_ = 0;
    data_limit_ = data_limit(*parent.value, parent.index, signature_);
  }

  bool close() {
    if (skipping_ > 0)
      --skipping_;
    else
      frames_.pop_back();
    return true;
  }

  const ModelSignature& signature_;
  json document_;
  std::vector<Frame> frames_;
  std::string key_;       // the key just read
  size_t skipping_ = 0;   // containers open inside one not kept
  DataLimit data_limit_;  // of the 'data' being read
  size_t data_elements_ = 0, data_arrays_ = 0;
  std::optional<std::string> refusal_;
};

json read_request(std::string_view text, const ModelSignature& signature) {
  RequestReader reader(signature);
  if (!json::sax_parse(text, &reader))
    refuse(reader.refusal().value_or("the request body is not valid JSON"));
  return reader.take_document();
}

template <class T>
T element(const std::string& bytes, size_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

template <class Integer>
void append_integer_text(std::string& out, Integer value) {
  char text[24];
  out.append(text, std::to_chars(text, text + sizeof text, value).ptr);
}

void append_element_text(std::string& out, const HostTensor& host, size_t i) {
  const std::string& b = host.bytes;
  switch (host.dtype) {
    case DType::f32:
      return append_double(out, element<float>(b, i));
    case DType::f64:
      return append_double(out, element<double>(b, i));
    case DType::f16:
      return append_double(out, tensor::f16_to_f32(element<uint16_t>(b, i)));
    case DType::bf16:
      return append_double(out, tensor::bf16_to_f32(element<uint16_t>(b, i)));
    case DType::i8:
      return append_integer_text(out, element<int8_t>(b, i));
    case DType::u8:
      return append_integer_text(out, element<uint8_t>(b, i));
    case DType::i32:
      return append_integer_text(out, element<int32_t>(b, i));
    case DType::i64:
      return append_integer_text(out, element<int64_t>(b, i));
    case DType::i16:
      return append_integer_text(out, element<int16_t>(b, i));
    case DType::u16:
      return append_integer_text(out, element<uint16_t>(b, i));
    case DType::u32:
      return append_integer_text(out, element<uint32_t>(b, i));
    case DType::u64:
      return append_integer_text(out, element<uint64_t>(b, i));
    case DType::boolean:
      out += b[i] != 0 ? "true" : "false";
      return;
  }
}

// An output's elements as a flat, row-major JSON array (which KServe allows).
void append_data(std::string& out, const HostTensor& host) {
  const size_t count = host.bytes.size() / size_of(host.dtype);
  out += '[';
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    append_element_text(out, host, i);
  }
  out += ']';
}

std::string quoted(const std::string& text) { return response_text(json(text)); }

int64_t integer_field(const json& value, const std::string& where, int64_t low, int64_t high) {
  if (!value.is_number_integer()) refuse(where + " is not an integer");
  const std::string range =
      "out of range (" + std::to_string(low) + " to " + std::to_string(high) + ")";
  if (value.is_number_unsigned()) {
    // JSON's non-negative integers arrive here: below a positive `low` is out of range too.
    const auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(high) || (low > 0 && v < static_cast<uint64_t>(low)))
      refuse(where + " is " + std::to_string(v) + ", " + range);
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
  if (signature.batchable && spec.batch_dim) {
    if (dims[0] < 1) refuse(where + ": the batch dimension (shape[0]) is 0");
    if (dims[0] > signature.max_batch)
      refuse(where + ": a batch of " + std::to_string(dims[0]) +
             " exceeds the model's max batch of " + std::to_string(signature.max_batch));
  }
  // Guard the element count before anything is allocated for it (the span bounds it).
  if (span_of(dims) > kMaxElements)
    refuse(where + ": shape " + shape_text(dims) +
           (std::find(dims.begin(), dims.end(), 0) == dims.end()
                ? " holds too many elements"
                : " is too large: its dimensions other than 0 multiply past 1e9"));
  return dims;
}

void read_parameters(const json& request, const ModelSignature& signature, InferRequest& out,
                     bool& binary_default) {
  out.priority = signature.priority_levels;
  const json* parameters = member(request, "parameters");
  if (!parameters) return;
  if (!parameters->is_object()) refuse("'parameters' is not an object");
  // Triton's schedule-policy extension names the same limit `timeout` (microseconds), so a
  // Triton client's timeout holds here too, 0 meaning no limit as there. Given both, they must
  // agree: no protocol orders the two, and picking one would quietly drop the limit meant.
  constexpr int64_t kMaxTimeoutUs = std::numeric_limits<int64_t>::max() / 1000;
  const json* hal_timeout = member(*parameters, "timeout_us");
  const json* triton_timeout = member(*parameters, "timeout");
  if (hal_timeout)
    out.timeout_us = integer_field(*hal_timeout, "parameters.timeout_us", 1, kMaxTimeoutUs);
  if (triton_timeout) {
    const int64_t timeout = integer_field(*triton_timeout, "parameters.timeout", 0, kMaxTimeoutUs);
    if (hal_timeout && timeout != out.timeout_us)
      refuse("parameters.timeout (" + std::to_string(timeout) + ") and parameters.timeout_us (" +
             std::to_string(out.timeout_us) + ") differ; give one of them");
    if (!hal_timeout) {
      out.timeout_us = timeout;
      out.timeout_name = "timeout";
    }
  }
  // 0 is the default level, as Triton reads it (its clients may send it unasked).
  if (const json* priority = member(*parameters, "priority")) {
    const int64_t level =
        integer_field(*priority, "parameters.priority", 0, signature.priority_levels);
    if (level > 0) out.priority = level;
  }
  if (const json* binary = member(*parameters, "binary_data_output")) {
    if (!binary->is_boolean()) refuse("parameters.binary_data_output is not true or false");
    binary_default = binary->get<bool>();
  }
  // Triton's sequence extension: a request of a stateful model's sequence. Its clients send the
  // fields only for a sequence (an id other than 0 or ""), which hal would answer as a lone one.
  const json* sequence_id = member(*parameters, "sequence_id");
  const bool no_sequence = !sequence_id || *sequence_id == json(0) || *sequence_id == json("");
  for (const char* flag : {"sequence_start", "sequence_end"})
    if (const json* set = member(*parameters, flag); set && *set != json(false))
      refuse(std::string("parameters.") + flag + ": hal serves no sequence (stateful) models");
  if (!no_sequence) refuse("parameters.sequence_id: hal serves no sequence (stateful) models");
}

// Triton's shared-memory extension, which hal does not implement: data there would be neither
// read nor written.
void refuse_shared_memory(const json* parameters, const std::string& where) {
  if (parameters && member(*parameters, "shared_memory_region"))
    refuse(where +
           ": parameters.shared_memory_region: hal has no shared-memory extension; "
           "send the data in the request (JSON or binary_data_size)");
}

void read_outputs(const json& request, const ModelSignature& signature, bool binary_default,
                  InferRequest& out) {
  const json* outputs = member(request, "outputs");
  // None listed (absent or []) is every output, as Triton reads it.
  if (!outputs || (outputs->is_array() && outputs->empty())) {
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
      // Triton's classification extension (the top classes as strings): its clients send a
      // count other than 0 only when they want it.
      if (const json* classes = member(*parameters, "classification");
          classes && *classes != json(0))
        refuse(where +
               ": parameters.classification: hal has no classification extension; ask "
               "for the output itself");
      refuse_shared_memory(parameters, where);
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
  if (json_size == 0)
    refuse(header_length && !body.empty()
               ? "the Inference-Header-Content-Length header is 0; it gives the size of the JSON "
                 "object at the start of the body"
               : "the request body is empty; expected a JSON object");
  const json request = read_request(body.substr(0, json_size), signature);
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
    refuse_shared_memory(parameters, where);
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
      if (*dtype == DType::boolean) check_bool_bytes(tensor.bytes, where);
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
    if (signature.batchable && spec->batch_dim) {
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
  for (const TensorSpec& spec : signature.inputs) {
    if (spec.optional)
      out.alone = out.alone || out.inputs.contains(spec.name);
    else if (!out.inputs.contains(spec.name))
      refuse("'inputs': input '" + spec.name + "' of model '" + signature.name + "' is missing");
  }
  // Requests batch together when every required input has the same row shape; the key lists
  // them in the model's order, whatever order the request gave them in.
  if (signature.batchable)
    for (const TensorSpec& spec : signature.inputs) {
      if (spec.optional) continue;
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
  // Written here rather than dumped by nlohmann, which writes NaN and infinities as null.
  std::string text = "{\"model_name\":" + quoted(signature.name) + ",\"model_version\":\"1\"";
  if (request.id) text += ",\"id\":" + quoted(*request.id);
  text += ",\"outputs\":[";
  std::string binary;
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const HostTensor& tensor = outputs.at(request.outputs[i]);
    text += i > 0 ? ",{" : "{";
    text += "\"name\":" + quoted(request.outputs[i]) + ",\"datatype\":\"" +
            kserve_datatype(tensor.dtype) + "\",\"shape\":" + json(tensor.shape).dump();
    if (request.binary_outputs[i]) {
      text += ",\"parameters\":{\"binary_data_size\":" + std::to_string(tensor.bytes.size()) + "}";
      binary += tensor.bytes;
    } else {
      text += ",\"data\":";
      append_data(text, tensor);
    }
    text += '}';
  }
  text += "]}";
  InferResponse response{std::move(text), std::nullopt};
  if (std::find(request.binary_outputs.begin(), request.binary_outputs.end(), true) !=
      request.binary_outputs.end()) {
    response.header_length = response.body.size();
    response.body += binary;
  }
  return response;
}

json model_metadata(const ModelSignature& signature) {
  auto describe = [](const std::vector<TensorSpec>& specs) {
    json list = json::array();
    for (const TensorSpec& spec : specs) {
      json entry{
          {"name", spec.name}, {"datatype", kserve_datatype(spec.dtype)}, {"shape", spec.shape}};
      // Not in KServe's metadata: Triton's model configuration marks such an input so.
      if (spec.optional) entry["optional"] = true;
      list.push_back(std::move(entry));
    }
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

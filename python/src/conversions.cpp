// Python values as hal's: dtypes (hal.DType, names, NumPy dtypes), devices (hal.Device, ids),
// shapes (sequences of ints); and hal.DType itself with PyTorch-style aliases.
#include <cstring>

#include "bindings.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "hal/select.hpp"

namespace hal::python {
namespace {

struct DTypeName {
  const char* numpy;  // NumPy's and PyTorch's name
  DType dtype;
};
constexpr DTypeName kNames[] = {
    {"float32", DType::f32},  {"float16", DType::f16}, {"bfloat16", DType::bf16},
    {"float64", DType::f64},  {"int8", DType::i8},     {"uint8", DType::u8},
    {"int16", DType::i16},    {"uint16", DType::u16},  {"int32", DType::i32},
    {"uint32", DType::u32},   {"int64", DType::i64},   {"uint64", DType::u64},
    {"bool", DType::boolean},
};

std::string python_repr(py::handle value) { return py::repr(value).cast<std::string>(); }

// numpy.generic, the class of NumPy's scalars. Imported once and never released: a static
// py::object would be released after the interpreter has gone.
py::handle numpy_scalar_type() {
  static py::handle type = py::object(py::module_::import("numpy").attr("generic")).release();
  return type;
}

// A Python int: exact where int64 holds it, else only as a double (OverflowError past that).
Scalar integer_scalar(PyObject* integer) {
  int overflow = 0;
  const long long exact = PyLong_AsLongLongAndOverflow(integer, &overflow);
  if (exact == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow == 0)
    return {Scalar::Kind::integer, static_cast<double>(exact), static_cast<int64_t>(exact), {}};
  const double real = PyLong_AsDouble(integer);
  if (real == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  std::optional<uint64_t> past_int64;
  if (overflow > 0) {
    const unsigned long long wide = PyLong_AsUnsignedLongLong(integer);
    if (PyErr_Occurred())
      PyErr_Clear();  // past 2**64: only the double
    else
      past_int64 = static_cast<uint64_t>(wide);
  }
  return {Scalar::Kind::integer, real, std::nullopt, past_int64};
}

}  // namespace

std::optional<Scalar> to_scalar(py::handle value) {
  PyObject* object = value.ptr();
  if (PyBool_Check(object)) {
    const bool truth = object == Py_True;
    return Scalar{Scalar::Kind::boolean, truth ? 1.0 : 0.0, truth ? 1 : 0, {}};
  }
  if (PyLong_Check(object)) return integer_scalar(object);
  if (PyFloat_Check(object))  // np.float64 too: it is a float
    return Scalar{Scalar::Kind::floating, PyFloat_AsDouble(object), std::nullopt, {}};
  if (!py::isinstance(value, numpy_scalar_type())) return std::nullopt;
  const std::string kind = py::str(value.attr("dtype").attr("kind"));
  if (kind == "b") {
    const int truth = PyObject_IsTrue(object);
    if (truth < 0) throw py::error_already_set();
    return Scalar{Scalar::Kind::boolean, truth ? 1.0 : 0.0, truth ? 1 : 0, {}};
  }
  if (kind == "i" || kind == "u") {
    const auto integer = py::reinterpret_steal<py::object>(PyNumber_Long(object));
    if (!integer) throw py::error_already_set();
    return integer_scalar(integer.ptr());
  }
  if (kind == "f") {
    const double real = PyFloat_AsDouble(object);
    if (real == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return Scalar{Scalar::Kind::floating, real, std::nullopt, {}};
  }
  return std::nullopt;  // complex, datetime, str ...
}

Tensor fill_scalar(const Shape& shape, const Scalar& value, DType dtype, Stream& stream) {
  // hal::full's integer overloads fill integers exactly; its checks and messages included.
  if (value.integer) return hal::full(shape, *value.integer, dtype, stream);
  if (value.past_int64) return hal::full(shape, *value.past_int64, dtype, stream);
  return hal::full(shape, value.real, dtype, stream);
}

const char* numpy_name(DType dtype) {
  if (dtype == DType::bf16) return "";
  for (const DTypeName& name : kNames)
    if (name.dtype == dtype) return name.numpy;
  return "";
}

DType dtype_of_numpy(py::handle numpy_dtype) {
  const std::string kind = py::str(numpy_dtype.attr("kind"));
  const auto size = numpy_dtype.attr("itemsize").cast<size_t>();
  const bool native = numpy_dtype.attr("isnative").cast<bool>();
  std::optional<DType> found;
  if (native) {
    if (kind == "f")
      found = size == 2 ? DType::f16 : size == 4 ? DType::f32 : size == 8 ? DType::f64 : found;
    else if (kind == "i")
      found = size == 1   ? DType::i8
              : size == 2 ? DType::i16
              : size == 4 ? DType::i32
              : size == 8 ? DType::i64
                          : found;
    else if (kind == "u")
      found = size == 1   ? DType::u8
              : size == 2 ? DType::u16
              : size == 4 ? DType::u32
              : size == 8 ? DType::u64
                          : found;
    else if (kind == "b")
      found = DType::boolean;
  }
  if (!found)
    throw Error(ErrorCode::Unsupported,
                "NumPy dtype " + python_repr(numpy_dtype) +
                    " has no hal dtype (hal has float32, float16, bfloat16, float64, int8, uint8, "
                    "int16, uint16, int32, uint32, int64, uint64 and bool, in the machine's "
                    "byte order)");
  return *found;
}

DType to_dtype(py::handle value) {
  if (py::isinstance<DType>(value)) return value.cast<DType>();
  // numpy.dtype(None) is float64: a None here would pick f64 where the caller gave nothing.
  if (value.is_none())
    throw Error(ErrorCode::InvalidArgument,
                "None is not a dtype: give a hal.DType, a name such as 'f32', or a NumPy dtype");
  if (py::isinstance<py::str>(value)) {
    const std::string text = value.cast<std::string>();
    if (std::optional<DType> parsed = parse_dtype(text)) return *parsed;
    for (const DTypeName& name : kNames)
      if (text == name.numpy) return name.dtype;
    throw Error(ErrorCode::InvalidArgument,
                "'" + text +
                    "' is not a dtype: give one of f32, f16, bf16, f64, i8, u8, i16, u16, i32, "
                    "u32, i64, u64, bool (or float32, float16, bfloat16, float64, int8, uint8, "
                    "int16, uint16, int32, uint32, int64, uint64)");
  }
  py::object numpy_dtype;
  try {
    numpy_dtype = py::module_::import("numpy").attr("dtype")(value);
  } catch (const py::error_already_set&) {
    throw Error(ErrorCode::InvalidArgument,
                python_repr(value) +
                    " is not a dtype: give a hal.DType, a name such as 'f32', "
                    "or a NumPy dtype");
  }
  return dtype_of_numpy(numpy_dtype);
}

Device to_device(py::handle value) {
  // The first lookup discovers every backend's devices (and the default ranks them): other
  // Python threads run meanwhile.
  if (value.is_none()) {
    py::gil_scoped_release unlocked;
    return default_device();
  }
  if (py::isinstance<Device>(value)) return value.cast<Device>();
  if (py::isinstance<py::str>(value)) {
    const std::string id = value.cast<std::string>();
    py::gil_scoped_release unlocked;
    return device(id);
  }
  throw Error(ErrorCode::InvalidArgument,
              python_repr(value) + " is not a device: give a hal.Device or an id such as 'cpu:0'");
}

bool is_integer(py::handle value) {
  return py::isinstance<py::int_>(value) || py::hasattr(value, "__index__");
}

std::optional<int64_t> to_int64(py::handle value) {
  const auto integer = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!integer) throw py::error_already_set();
  int overflow = 0;
  const long long exact = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
  if (exact == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0) return std::nullopt;
  return static_cast<int64_t>(exact);
}

namespace {

// The size of dimension `dim` of `shape`; InvalidArgument naming both where it is no int or
// one past int64 (pybind11's cast would say only "Unable to cast Python instance").
int64_t shape_size(py::handle shape, py::handle size, size_t dim) {
  if (!is_integer(size))
    throw Error(ErrorCode::InvalidArgument,
                python_repr(shape) + " is not a shape: " + python_repr(size) + " is not an int");
  if (std::optional<int64_t> exact = to_int64(size)) return *exact;
  throw Error(ErrorCode::InvalidArgument,
              python_repr(shape) + " is not a shape: the size of dimension " + std::to_string(dim) +
                  ", " + python_repr(size) + ", does not fit in int64");
}

}  // namespace

namespace {

// One size on its own: an int, or an integer that is not a sequence (np.int64(3); an array has
// __index__ too, but is a sequence of sizes) or a sequence type without a length (a 0-d array,
// np.array(3)), as NumPy and PyTorch take a lone size.
bool is_lone_size(py::handle value) {
  if (py::isinstance<py::int_>(value)) return true;
  if (!is_integer(value)) return false;
  if (!py::isinstance<py::sequence>(value)) return true;
  if (PyObject_Length(value.ptr()) >= 0) return false;
  if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
  PyErr_Clear();  // "len() of unsized object"
  return true;
}

}  // namespace

Shape to_shape(py::handle value) {
  if (is_lone_size(value)) return {shape_size(value, value, 0)};
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value))
    throw Error(ErrorCode::InvalidArgument,
                python_repr(value) + " is not a shape: give a sequence of ints");
  Shape shape;
  for (py::handle size : value) shape.push_back(shape_size(value, size, shape.size()));
  return shape;
}

Shape shape_from_args(const py::args& args) {
  if (args.size() == 1 && !is_lone_size(args[0])) return to_shape(args[0]);
  return to_shape(args);
}

py::tuple to_tuple(const Shape& shape) {
  py::tuple tuple(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) tuple[i] = py::int_(shape[i]);
  return tuple;
}

void bind_dtypes(py::module_& m) {
  py::enum_<DType> dtype(m, "DType", "Element types of hal's tensors.");
  dtype.value("f32", DType::f32)
      .value("f16", DType::f16)
      .value("bf16", DType::bf16)
      .value("f64", DType::f64)
      .value("i8", DType::i8)
      .value("u8", DType::u8)
      .value("i16", DType::i16)
      .value("u16", DType::u16)
      .value("i32", DType::i32)
      .value("u32", DType::u32)
      .value("i64", DType::i64)
      .value("u64", DType::u64)
      .value("bool", DType::boolean);
  dtype.def_property_readonly(
      "itemsize", [](DType d) { return size_of(d); }, "Bytes per element.");
  dtype.def_property_readonly("is_floating_point", [](DType d) {
    return d == DType::f32 || d == DType::f16 || d == DType::bf16 || d == DType::f64;
  });
  // "f32", as hal names it everywhere (replacing enum_'s own "DType.f32").
  dtype.attr("__str__") = py::cpp_function([](DType d) { return std::string(to_string(d)); },
                                           py::name("__str__"), py::is_method(dtype));
  // hal.f32 ... hal.bool, and PyTorch's names for them: hal.float32, ..., hal.bool.
  // The enum's own members, so that hal.float32 is hal.DType.f32.
  for (DType d : kAllDTypes) {
    const std::string name(to_string(d));
    m.attr(name.c_str()) = dtype.attr(name.c_str());
  }
  for (const DTypeName& name : kNames)
    m.attr(name.numpy) = dtype.attr(std::string(to_string(name.dtype)).c_str());
  m.def(
      "dtype", [](py::handle value) { return to_dtype(value); }, py::arg("value"),
      "The hal.DType of a name ('f32', 'float32'), a NumPy dtype or a hal.DType.");
}

}  // namespace hal::python

// hal.Tensor: properties, views, indexing, copies between devices, NumPy arrays both ways, and
// the creation functions (hal.tensor, zeros, ones, full, arange, uniform, normal, empty).
#include <pybind11/numpy.h>

#include <cstring>

#include "bindings.hpp"
#include "hal/error.hpp"
#include "hal/native_memory.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"

namespace hal::python {
namespace {

// Imported once and never released: a static py::object would be released after the
// interpreter has gone.
py::handle numpy() {
  static py::handle module = py::module_::import("numpy").release();
  return module;
}

std::string describe_shape(const Tensor& t) { return t.describe(); }

// Work on `from`'s stream that produced a value, made visible to `to` before later work there.
void order_after(Stream& from, Stream& to) {
  if (from.impl() == to.impl()) return;
  to.wait(from.record());
}

// A copy of `tensor` on `device`, ordered after this thread's current stream of the source and
// before that of the destination. A stream given may be of either device, as hal's to() takes.
Tensor copy_to_device(const Tensor& tensor, const Device& device, py::handle stream_arg) {
  Stream source = stream_arg.is_none()
                      ? current_stream(tensor.device())
                      : as_stream(stream_arg, "to(" + device.id() + ") of " + tensor.describe());
  if (!(source.device() == tensor.device()) && !(source.device() == device))
    refuse_stream("to(" + device.id() + ") of " + tensor.describe(), source,
                  tensor.device().id() + " or " + device.id());
  py::gil_scoped_release unlocked;
  Tensor copy = tensor.to(device, source);
  order_after(source, current_stream(device));
  return copy;
}

// The host address of element 0, for a tensor whose memory the host or its backend addresses.
uintptr_t data_pointer(const Tensor& t) {
  const size_t offset = static_cast<size_t>(t.offset()) * t.element_size();
  const std::string_view backend = t.device().info().backend();
  if (backend == "cpu" || backend == "cuda") {
    const NativeMemory native = native_memory(t.storage());
    return reinterpret_cast<uintptr_t>(native.handle) + native.offset + offset;
  }
  if (t.storage().host_accessible())
    return reinterpret_cast<uintptr_t>(t.storage().host_data()) + offset;
  throw Error(ErrorCode::Unsupported,
              "data_ptr of " + t.describe() + ": " + t.device().id() +
                  " names its memory by handle (a cl_mem), not by address; use __dlpack__");
}

// Whether elements of `t` share memory: an expanded dimension (stride 0) repeats one element.
bool repeats_elements(const Tensor& t) {
  for (size_t dim = 0; dim < t.shape().size(); ++dim)
    if (t.strides()[dim] == 0 && t.shape()[dim] > 1) return true;
  return false;
}

// bf16 elements as a new float32 array (NumPy has no bf16), widened on the host from their bits:
// exact (the bits shifted up 16), and a device need have no bf16 cast (Vulkan has none).
py::array bf16_as_float32(const Tensor& tensor, Stream& stream) {
  std::vector<uint16_t> bits(static_cast<size_t>(tensor.numel()));
  {
    py::gil_scoped_release unlocked;
    tensor.copy_to_host(bits.data(), stream);
    stream.synchronize();
  }
  py::array_t<float> wide(std::vector<py::ssize_t>(tensor.shape().begin(), tensor.shape().end()));
  float* out = wide.mutable_data();
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint32_t word = uint32_t{bits[i]} << 16;
    std::memcpy(out + i, &word, sizeof word);
  }
  return wide;
}

// A NumPy array of the elements. On memory the host addresses (the CPU) it is a view that
// keeps the tensor's storage alive, after this thread's current stream has finished; elsewhere
// a copy. bf16, which NumPy has not, comes back as float32 (a copy). A view that repeats
// elements is read-only, as numpy.broadcast_to's is: a write to one would change them all.
py::object to_numpy(const Tensor& tensor, py::handle stream_arg) {
  Stream stream = resolve_stream(stream_arg, tensor.device(),
                                 [&] { return "numpy() of " + tensor.describe(); });
  if (tensor.dtype() == DType::bf16) return bf16_as_float32(tensor, stream);
  py::dtype dtype(numpy_name(tensor.dtype()));
  const auto item = static_cast<int64_t>(tensor.element_size());
  if (tensor.storage().host_accessible()) {
    {
      py::gil_scoped_release unlocked;
      stream.synchronize();
    }
    std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
    std::vector<py::ssize_t> strides;
    for (int64_t stride : tensor.strides()) strides.push_back(stride * item);
    char* data = static_cast<char*>(tensor.storage().host_data()) + tensor.offset() * item;
    // The array's base owns a copy of the tensor: the storage lives as long as the array.
    py::capsule owner(new Tensor(tensor), [](void* held) { delete static_cast<Tensor*>(held); });
    py::array view(dtype, shape, strides, data, owner);
    if (repeats_elements(tensor)) view.attr("flags").attr("writeable") = false;
    return view;
  }
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  py::array array(dtype, shape);
  void* destination = array.mutable_data();
  {
    py::gil_scoped_release unlocked;
    tensor.copy_to_host(destination, stream);
    stream.synchronize();
  }
  return array;
}

// An int index into a dimension of `size`, counted from the front (-1 is the last element);
// std::nullopt where it is past either end, int64's included.
std::optional<int64_t> position_in(py::handle item, int64_t size) {
  const std::optional<int64_t> position = to_int64(item);
  if (!position || *position < -size || *position >= size) return std::nullopt;
  return *position < 0 ? *position + size : *position;
}

// True, False or a NumPy bool: NumPy and PyTorch read it as a new axis of size 1 or 0, not as
// the int 1 or 0 that Python's bool also is.
bool is_boolean(py::handle item) {
  if (PyBool_Check(item.ptr())) return true;
  // numpy.bool_ in NumPy 1 and 2 (where the type is named numpy.bool).
  const py::handle type = py::type::handle_of(item);
  return py::str(type.attr("__module__")).cast<std::string>() == "numpy" &&
         py::isinstance(item, numpy().attr("bool_"));
}

// t[index]: ints, slices with a positive step, None (a new axis), bools (a new axis of 1 or 0
// elements) and one Ellipsis, as NumPy reads them. Every result is a view.
Tensor index(const Tensor& tensor, py::handle key) {
  py::tuple items =
      py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  int64_t consumed = 0;  // dimensions of `tensor` the items name
  bool ellipsis = false;
  for (py::handle item : items) {
    if (item.is(py::ellipsis())) {
      if (ellipsis)
        throw Error(ErrorCode::InvalidArgument,
                    "index of " + tensor.describe() + ": more than one Ellipsis");
      ellipsis = true;
    } else if (!item.is_none() && !is_boolean(item)) {
      ++consumed;
    }
  }
  if (consumed > tensor.dim())
    throw Error(ErrorCode::OutOfRange, "index of " + tensor.describe() + ": " +
                                           std::to_string(consumed) + " indices for " +
                                           std::to_string(tensor.dim()) + " dimensions");
  Tensor result = tensor;
  int64_t dim = 0;     // the dimension of `result` the next item applies to
  int64_t source = 0;  // and of `tensor`, for messages
  for (py::handle item : items) {
    if (item.is(py::ellipsis())) {
      dim += tensor.dim() - consumed;
      source += tensor.dim() - consumed;
    } else if (item.is_none()) {
      result = result.unsqueeze(dim);
      ++dim;
    } else if (is_boolean(item)) {
      result = result.unsqueeze(dim);
      if (!py::cast<bool>(py::bool_(py::reinterpret_borrow<py::object>(item))))
        result = result.slice(dim, 0, 0);
      ++dim;
    } else if (py::isinstance<py::slice>(item)) {
      const int64_t size = result.size(dim);
      py::ssize_t start = 0, stop = 0, step = 0, length = 0;
      if (!py::reinterpret_borrow<py::slice>(item).compute(size, &start, &stop, &step, &length))
        throw py::error_already_set();
      if (step < 1)
        throw Error(ErrorCode::InvalidArgument, "index of " + tensor.describe() +
                                                    ": slices step forward (step " +
                                                    std::to_string(step) + ")");
      result = result.slice(dim, start, start + length * step, step);
      ++dim;
      ++source;
    } else if (is_integer(item)) {
      const int64_t size = result.size(dim);
      const std::optional<int64_t> first = position_in(item, size);
      if (!first)
        throw Error(ErrorCode::OutOfRange,
                    "index " +
                        std::string(py::str(py::int_(py::reinterpret_borrow<py::object>(item)))) +
                        " is out of range for dimension " + std::to_string(source) + " (size " +
                        std::to_string(size) + ") of " + tensor.describe());
      result = result.slice(dim, *first, *first + 1).squeeze(dim);
      ++source;
    } else {
      throw Error(ErrorCode::InvalidArgument,
                  "index of " + tensor.describe() + ": " + py::repr(item).cast<std::string>() +
                      " is not an int, a slice, a bool, None or Ellipsis");
    }
  }
  return result;
}

// The one element as a Python number, for item(), float() and int() (`call`, in the refusal).
py::object one_element(const Tensor& tensor, const char* call) {
  if (tensor.numel() != 1)
    throw Error(ErrorCode::InvalidArgument, std::string(call) + " of " + tensor.describe() +
                                                ": only a tensor of one element has one");
  return to_numpy(tensor, py::none()).attr("reshape")(py::tuple()).attr("item")();
}

py::object item(const Tensor& tensor) { return one_element(tensor, "item()"); }

// bool(t), which `if t:`, `and` and `in` use: as NumPy and PyTorch, the truth of the one
// element; a tensor of any other count has none (without __bool__, Python took len() for it).
py::bool_ truth(const Tensor& tensor) {
  if (tensor.numel() != 1)
    throw Error(ErrorCode::InvalidArgument,
                "bool() of " + tensor.describe() + ": the truth value of a tensor of " +
                    std::to_string(tensor.numel()) + " elements is ambiguous");
  return py::bool_(one_element(tensor, "bool()"));
}

Tensor to_target(const Tensor& tensor, py::handle target, py::handle stream_arg) {
  // A dtype (hal.DType, 'f32', a NumPy dtype) or a device (hal.Device, 'cpu:0').
  const bool names_device =
      py::isinstance<Device>(target) || (py::isinstance<py::str>(target) &&
                                         target.cast<std::string>().find(':') != std::string::npos);
  if (names_device) return copy_to_device(tensor, to_device(target), stream_arg);
  const DType dtype = to_dtype(target);
  Stream stream = resolve_stream(stream_arg, tensor.device(), [&] {
    return "to(" + std::string(to_string(dtype)) + ") of " + tensor.describe();
  });
  py::gil_scoped_release unlocked;
  return cast(tensor, dtype, stream);
}

// Arguments the creation functions share: where, and on which stream (`function` names the
// call in the refusal of a stream of another device).
struct Placement {
  Device device;
  Stream stream;
};
Placement place(py::handle device_arg, py::handle stream_arg, const char* function) {
  if (device_arg.is_none() && !stream_arg.is_none()) {
    Stream stream = as_stream(stream_arg, function);
    return {stream.device(), stream};
  }
  Device device = to_device(device_arg);
  Stream stream = resolve_stream(stream_arg, device,
                                 [&] { return std::string(function) + " on " + device.id(); });
  return {device, stream};
}

// arange's start, end or step as a double; InvalidArgument naming it when it is no number.
double number(py::handle value, const char* name) {
  if (!is_integer(value) && !PyFloat_Check(value.ptr()) && !py::hasattr(value, "__float__"))
    throw Error(ErrorCode::InvalidArgument, std::string("arange: ") + name + " " +
                                                py::repr(value).cast<std::string>() +
                                                " is not a number");
  return py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
}

// arange of ints into an integer dtype, where a double would not hold them (past 2^53): the
// values made exactly on the host. std::nullopt where hal::arange's doubles do.
std::optional<Tensor> exact_integer_arange(py::handle start, py::handle end, py::handle step,
                                           DType type, Placement& at) {
  // i64 alone: a narrower type holds no value past 2^53, and hal::arange refuses it by name.
  if (type != DType::i64 || !is_integer(start) || !is_integer(end) || !is_integer(step))
    return std::nullopt;
  const std::optional<int64_t> a = to_int64(start), b = to_int64(end), c = to_int64(step);
  constexpr int64_t kExact = int64_t{1} << 53;
  const auto beyond = [&](const std::optional<int64_t>& v) {
    return !v || *v > kExact || *v < -kExact;
  };
  if (!beyond(a) && !beyond(b) && !beyond(c)) return std::nullopt;
  if (!a || !b || !c)
    throw Error(ErrorCode::OutOfRange, "arange: start, end and step must fit in i64 (" +
                                           py::repr(start).cast<std::string>() + ", " +
                                           py::repr(end).cast<std::string>() + ", " +
                                           py::repr(step).cast<std::string>() + ")");
  if (*c == 0) throw Error(ErrorCode::InvalidArgument, "arange: step must not be 0");
  // In uint64, where the span and the steps cannot overflow: ceil(|end - start| / |step|)
  // values, each start + i * step (two's complement wraps back into range).
  const bool up = *c > 0;
  const uint64_t span = up ? (*b > *a ? uint64_t(*b) - uint64_t(*a) : 0)
                           : (*a > *b ? uint64_t(*a) - uint64_t(*b) : 0);
  const uint64_t stride = up ? uint64_t(*c) : 0 - uint64_t(*c);
  const uint64_t count = span / stride + (span % stride != 0 ? 1 : 0);
  std::vector<int64_t> values;
  try {
    values.resize(count);
  } catch (const std::exception&) {  // length_error or bad_alloc
    throw Error(ErrorCode::OutOfMemory,
                "arange: " + std::to_string(count) + " values of i64 do not fit the host's memory");
  }
  for (uint64_t i = 0; i < count; ++i)
    values[i] = static_cast<int64_t>(uint64_t(*a) + uint64_t(*c) * i);
  py::gil_scoped_release unlocked;  // from_host copies the values before it returns
  return from_host(values.data(), {static_cast<int64_t>(values.size())}, DType::i64, at.stream);
}

// A torch.Tensor of bfloat16 (checked by name: torch need not be importable).
bool is_torch_bf16(py::handle data) {
  const py::handle type = py::type::handle_of(data);
  // torch.Tensor and its subclasses (torch.nn.Parameter is of torch.nn.parameter).
  if (py::str(type.attr("__module__")).cast<std::string>().rfind("torch", 0) != 0 ||
      !py::hasattr(data, "dtype"))
    return false;
  return py::str(data.attr("dtype")).cast<std::string>() == "torch.bfloat16";
}

// full()'s value: a number (an integer exactly), or anything Python reads as a float.
Scalar fill_value(py::handle value) {
  if (std::optional<Scalar> number = to_scalar(value)) return *number;
  const double real = PyFloat_AsDouble(value.ptr());
  if (real == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw Error(ErrorCode::InvalidArgument,
                "full: " + py::repr(value).cast<std::string>() + " is not a number");
  }
  return {Scalar::Kind::floating, real, std::nullopt, {}};
}

// The hal dtype an array is handed over in, for hal's cast to make the target of it: its own
// (hal has every integer, bool and floating dtype of NumPy's but long double, which goes as f64,
// NumPy rounding).
DType staging_dtype(const py::object& array) {
  const py::object dtype = array.attr("dtype");
  const std::string kind = py::str(dtype.attr("kind"));
  const auto size = dtype.attr("itemsize").cast<size_t>();
  if (kind == "f") return size == 2 ? DType::f16 : size == 4 ? DType::f32 : DType::f64;
  return dtype_of_numpy(dtype.attr("isnative").cast<bool>() ? dtype
                                                            : dtype.attr("newbyteorder")("="));
}

// Host elements of `staged` on `stream`'s device as `target`, by hal's cast (floats into integers
// saturate, NaN giving 0; half types round once), which runs on the CPU: every device gets the
// same numbers, and one without the source dtype (f64) or the cast (bf16 on Vulkan) is not asked.
Tensor cast_from_host(const void* host, const Shape& shape, DType staged, DType target,
                      Stream& stream) {
  if (staged == target) return from_host(host, shape, target, stream);
  if (stream.device().info().backend() == "cpu")
    return cast(from_host(host, shape, staged, stream), target, stream);
  Stream& cpu = current_stream(hal::device("cpu:0"));
  Tensor converted = cast(from_host(host, shape, staged, cpu), target, cpu);
  Tensor moved = converted.to(stream.device(), cpu);
  order_after(cpu, stream);
  return moved;
}

}  // namespace

Tensor tensor_from(py::handle data, std::optional<DType> dtype, Stream& stream) {
  // A hal tensor keeps its dtype: NumPy reads bf16 as float32.
  if (const Tensor* held = tensor_of(data); held && !dtype) dtype = held->dtype();
  py::object array;
  if (is_torch_bf16(data)) {
    // PyTorch's bf16 has no NumPy form: read through f32 (exact), bf16 again by hal's cast.
    array = numpy().attr("asarray")(data.attr("detach")().attr("cpu")().attr("float")());
    if (!dtype) dtype = DType::bf16;
  } else {
    array = numpy().attr("asarray")(data);
  }
  // The values go to hal as they are (`staged`), and hal's cast, not NumPy's, makes `target`
  // of them: NumPy's astype wraps floats into integers (NaN, 1e20 and 3e9 all became
  // -2147483648 in i32) and reached bf16 by rounding twice.
  DType staged, target;
  if (dtype) {
    // What is no real number, or complex (whose imaginary part would be dropped), is refused as
    // without a dtype; other numbers NumPy has and hal has not are staged in a wider dtype.
    const std::string kind = py::str(array.attr("dtype").attr("kind")).cast<std::string>();
    if (kind.find_first_of("biuf") == std::string::npos) dtype_of_numpy(array.attr("dtype"));
    target = *dtype;
    staged = staging_dtype(array);
  } else {
    const py::object own = array.attr("dtype");
    // Another byte order is the same numbers: read as this machine's.
    staged =
        dtype_of_numpy(own.attr("isnative").cast<bool>() ? own : own.attr("newbyteorder")("="));
    // Python floats are f32, as in PyTorch; NumPy scalars (np.float64 is a float too) and
    // anything with a dtype of its own keep theirs.
    const bool python_floats =
        PyFloat_CheckExact(data.ptr()) || PyList_Check(data.ptr()) || PyTuple_Check(data.ptr());
    target = python_floats && staged == DType::f64 ? DType::f32 : staged;
  }
  // asarray, as ascontiguousarray makes a 0-d array 1-d.
  py::array contiguous =
      numpy().attr("asarray")(array, py::arg("dtype") = numpy_name(staged), py::arg("order") = "C");
  Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  const void* host = contiguous.data();
  py::gil_scoped_release unlocked;
  return cast_from_host(host, shape, staged, target, stream);
}

py::class_<Tensor> bind_tensor(py::module_& m) {
  using py::arg;
  py::class_<Tensor> tensor(m, "Tensor",
                            "A strided view of elements of one dtype in memory of one device.");
  remember_tensor_type();
  // Tensors come from functions that say where their memory is; pybind's own refusal would be
  // "No constructor defined!".
  tensor.def(py::init([](const py::args&, const py::kwargs&) -> Tensor {
    throw py::type_error(
        "hal.Tensor cannot be made directly: use hal.tensor(data, ...), hal.from_numpy(array, "
        "...), hal.zeros/ones/full/empty(shape, ...), hal.arange(...) or hal.from_dlpack(x)");
  }));
  tensor.def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("shape", [](const Tensor& t) { return to_tuple(t.shape()); })
      .def_property_readonly(
          "strides", [](const Tensor& t) { return to_tuple(t.strides()); },
          "In elements (NumPy's are in bytes); 0 along expanded dimensions.")
      .def_property_readonly("offset", &Tensor::offset, "In elements, into the storage.")
      .def_property_readonly("ndim", &Tensor::dim)
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def_property_readonly("itemsize", &Tensor::element_size)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def(
          "size",
          [](const Tensor& t, std::optional<int64_t> dim) -> py::object {
            if (dim) return py::int_(t.size(*dim));
            return to_tuple(t.shape());
          },
          arg("dim") = py::none())
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("data_ptr", &data_pointer,
           "The address of element 0: a host address on the CPU, a device pointer on CUDA.")
      .def("__len__",
           [](const Tensor& t) {
             if (t.dim() == 0)
               throw Error(ErrorCode::InvalidArgument, "len() of a 0-d tensor " + t.describe());
             return t.size(0);
           })
      .def("__bool__", &truth)
      .def("__float__", [](const Tensor& t) { return py::float_(one_element(t, "float()")); })
      .def("__int__",
           [](const Tensor& t) {
             // PyNumber_Long: py::int_ would hand a bool (an int already) back as it is.
             PyObject* integer = PyNumber_Long(one_element(t, "int()").ptr());
             if (!integer) throw py::error_already_set();
             return py::reinterpret_steal<py::int_>(integer);
           })
      .def("__repr__", [](const Tensor& t) { return "hal.Tensor(" + describe_shape(t) + ")"; })
      // Views: new tensors over the same storage.
      .def(
          "reshape",
          [](const Tensor& t, py::args shape) { return t.reshape(shape_from_args(shape)); },
          "A view of another shape (one -1 for the size the others leave).")
      .def("view", [](const Tensor& t, py::args shape) { return t.view(shape_from_args(shape)); })
      .def("transpose", &Tensor::transpose, arg("dim0"), arg("dim1"))
      .def("permute",
           [](const Tensor& t, py::args order) { return t.permute(shape_from_args(order)); })
      .def("slice", &Tensor::slice, arg("dim"), arg("start"), arg("end"), arg("step") = 1)
      .def("expand",
           [](const Tensor& t, py::args shape) { return t.expand(shape_from_args(shape)); })
      .def("squeeze", &Tensor::squeeze, arg("dim"))
      .def("unsqueeze", &Tensor::unsqueeze, arg("dim"))
      .def("__getitem__", &index)
      // Copies.
      .def(
          "contiguous",
          [](const Tensor& t, py::handle stream_arg) {
            Stream stream = resolve_stream(stream_arg, t.device(),
                                           [&] { return "contiguous() of " + t.describe(); });
            py::gil_scoped_release unlocked;
            return t.contiguous(stream);
          },
          arg("stream") = py::none(), "This tensor if contiguous, else a contiguous copy.")
      .def("to", &to_target, arg("target"), arg("stream") = py::none(),
           "A copy on another device (hal.Device or id), or cast to a dtype.")
      .def(
          "cpu",
          [](const Tensor& t) { return copy_to_device(t, hal::device("cpu:0"), py::none()); },
          "A copy on cpu:0.")
      .def("numpy", &to_numpy, arg("stream") = py::none(),
           "The elements as a NumPy array, once the stream (the current one when None) has "
           "finished: a view that shares the memory on the CPU (read-only where it repeats "
           "elements, as an expanded view does), a copy elsewhere.")
      .def(
          "__array__",
          [](const Tensor& t, py::handle dtype) {
            py::object array = to_numpy(t, py::none());
            return dtype.is_none() ? array : array.attr("astype")(dtype);
          },
          arg("dtype") = py::none())
      .def("tolist", [](const Tensor& t) { return to_numpy(t, py::none()).attr("tolist")(); })
      .def("item", &item, "The one element, as a Python number.");

  m.def(
      "tensor",
      [](py::handle data, py::handle dtype, py::handle device, py::handle stream) {
        Placement at = place(device, stream, "tensor");
        std::optional<DType> type;
        if (!dtype.is_none()) type = to_dtype(dtype);
        return tensor_from(data, type, at.stream);
      },
      arg("data"), arg("dtype") = py::none(), arg("device") = py::none(),
      arg("stream") = py::none(),
      "A copy of a NumPy array (or anything NumPy reads as one) on `device` (the default "
      "device when None).");
  m.def(
      "empty",
      [](py::handle shape, py::handle dtype, py::handle device) {
        return hal::empty(to_shape(shape), to_dtype(dtype), to_device(device));
      },
      arg("shape"), arg("dtype") = py::cast(DType::f32), arg("device") = py::none(),
      "Uninitialised elements.");
  m.def(
      "full",
      [](py::handle shape, py::handle value, py::handle dtype, py::handle device,
         py::handle stream) {
        Placement at = place(device, stream, "full");
        const Shape dims = to_shape(shape);
        const Scalar fill = fill_value(value);
        const DType type = to_dtype(dtype);
        py::gil_scoped_release unlocked;
        return fill_scalar(dims, fill, type, at.stream);
      },
      arg("shape"), arg("value"), arg("dtype") = py::cast(DType::f32), arg("device") = py::none(),
      arg("stream") = py::none());
  for (const auto& [name, value] : {std::pair{"zeros", 0.0}, std::pair{"ones", 1.0}}) {
    const double fill = value;
    const char* function = name;
    m.def(
        name,
        [fill, function](py::handle shape, py::handle dtype, py::handle device, py::handle stream) {
          Placement at = place(device, stream, function);
          const Shape dims = to_shape(shape);
          const DType type = to_dtype(dtype);
          py::gil_scoped_release unlocked;
          return hal::full(dims, fill, type, at.stream);
        },
        arg("shape"), arg("dtype") = py::cast(DType::f32), arg("device") = py::none(),
        arg("stream") = py::none());
  }
  m.def(
      "arange",
      [](py::handle start, py::handle end, py::handle step, py::handle dtype, py::handle device,
         py::handle stream) {
        Placement at = place(device, stream, "arange");
        const DType type = dtype.is_none() ? DType::i64 : to_dtype(dtype);
        const py::object zero = py::int_(0);
        const py::handle from = end.is_none() ? py::handle(zero) : start;
        const py::handle to = end.is_none() ? start : end;
        if (const std::optional<Tensor> exact = exact_integer_arange(from, to, step, type, at))
          return *exact;
        const double a = number(from, "start"), b = number(to, "end"), c = number(step, "step");
        py::gil_scoped_release unlocked;
        return hal::arange(a, b, c, type, at.stream);
      },
      arg("start"), arg("end") = py::none(), arg("step") = 1, arg("dtype") = py::none(),
      arg("device") = py::none(), arg("stream") = py::none(),
      "start, start + step, ... below end; arange(n) is 0 .. n-1. i64 unless dtype says.");
  m.def(
      "uniform",
      [](py::handle shape, uint64_t seed, double low, double high, py::handle dtype,
         py::handle device, py::handle stream) {
        Placement at = place(device, stream, "uniform");
        const Shape dims = to_shape(shape);
        const DType type = to_dtype(dtype);
        py::gil_scoped_release unlocked;
        return hal::uniform(dims, type, seed, at.stream, low, high);
      },
      arg("shape"), arg("seed") = 0, arg("low") = 0.0, arg("high") = 1.0,
      arg("dtype") = py::cast(DType::f32), arg("device") = py::none(), arg("stream") = py::none(),
      "Philox4x32-10 draws: the same numbers on every device for a seed.");
  m.def(
      "normal",
      [](py::handle shape, uint64_t seed, double mean, double stddev, py::handle dtype,
         py::handle device, py::handle stream) {
        Placement at = place(device, stream, "normal");
        const Shape dims = to_shape(shape);
        const DType type = to_dtype(dtype);
        py::gil_scoped_release unlocked;
        return hal::normal(dims, type, seed, at.stream, mean, stddev);
      },
      arg("shape"), arg("seed") = 0, arg("mean") = 0.0, arg("stddev") = 1.0,
      arg("dtype") = py::cast(DType::f32), arg("device") = py::none(), arg("stream") = py::none());
  return tensor;
}

}  // namespace hal::python

// What the parts of the Python module share: each bind_* adds one area of hal's API to the
// module, and the helpers turn Python values (dtype names, device ids, shapes) into hal's.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hal/device.hpp"
#include "hal/dtype.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"
#include "tensor_object.hpp"

namespace hal::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_dtypes(py::module_& m);
void bind_devices(py::module_& m);
void bind_streams(py::module_& m);
// Memory statistics, snapshots, limits and the cache, as methods of hal.Device.
void bind_memory(py::module_& m, py::class_<Device>& device);
// hal.Tensor and the creation functions; the ops and DLPack add their methods to the class.
py::class_<Tensor> bind_tensor(py::module_& m);
void bind_ops(py::module_& m, py::class_<Tensor>& tensor);
void bind_dlpack(py::module_& m, py::class_<Tensor>& tensor);
void bind_sched(py::module_& m);
void bind_model(py::module_& m);
// Autograd on hal.Tensor, the grad-mode scopes, cross_entropy, and the hal.optim submodule.
void bind_autograd(py::module_& m, py::class_<Tensor>& tensor);

// A dtype from a hal.DType, a name ("f32", "float32", "bool"), or a NumPy dtype or type.
// InvalidArgument naming the value when it is none of these or a dtype hal has not.
DType to_dtype(py::handle value);
// The hal dtype of a NumPy dtype; Unsupported naming it when hal has none.
DType dtype_of_numpy(py::handle numpy_dtype);
// NumPy's name for a dtype's elements ("float32", "bool", ...); bf16, which NumPy has not, has
// none (empty).
const char* numpy_name(DType dtype);

// A device from a hal.Device or an id ("opencl:0", a UUID prefix); None is the default device
// (the innermost hal.device_scope of this thread, else the best visible device).
Device to_device(py::handle value);

// Whether `value` is an int or has __index__ (a NumPy integer).
bool is_integer(py::handle value);
// Such a value as int64; std::nullopt where int64 cannot hold it, for the caller to refuse
// naming what it was (pybind11's cast would say only "Unable to cast Python instance").
std::optional<int64_t> to_int64(py::handle value);

// A shape from a sequence of ints, or from the ints of a call's *args (reshape(2, 3)).
// InvalidArgument naming the shape, and the dimension, for a size that is no int or past int64.
Shape to_shape(py::handle value);
Shape shape_from_args(const py::args& args);
py::tuple to_tuple(const Shape& shape);

// The stream work on `device` goes to when the caller names none: the innermost `with stream:`
// of this thread for that device, else the device's default stream (one per device, made on
// first use). Cheap: the last answer is kept per thread.
Stream& current_stream(const Device& device);
// InvalidArgument for work enqueued on a stream of the wrong device, worded as hal's ops word
// it: "<what> on a stream of opencl:0: use a stream of <use>".
[[noreturn]] void refuse_stream(const std::string& what, const Stream& stream,
                                const std::string& use);
// `stream` as a hal.Stream; TypeError naming `what` (the call) and the value for anything else
// (pybind11's cast would say only "Unable to cast Python instance ...").
Stream as_stream(py::handle stream, const std::string& what);
// `stream` if the caller gave one (not None), else current_stream(device). A stream of another
// device is refused (refuse_stream), what() naming the call ("numpy() of f32[2] on cpu:0"); it
// is called only then.
template <class Describe>
Stream resolve_stream(py::handle stream, const Device& device, Describe&& what) {
  if (stream.is_none()) return current_stream(device);
  if (!py::isinstance<Stream>(stream)) as_stream(stream, what());  // throws TypeError
  Stream given = stream.cast<Stream>();
  if (!(given.device() == device)) refuse_stream(what(), given, device.id());
  return given;
}
// `stream` if the caller gave one, of any device (the hal call it goes to checks that), else
// current_stream(like's device). TypeError naming what() (the call) for a value that is no
// hal.Stream; what() is called only then, so an op's hot path builds no text.
template <class Describe>
Stream& given_or_current_stream(py::handle stream, const Tensor& like, Describe&& what) {
  if (stream.is_none()) return current_stream(like.device());
  if (!py::isinstance<Stream>(stream)) as_stream(stream, what());  // throws TypeError
  return stream.cast<Stream&>();
}
// Synchronises every default stream made so far (hal.synchronize()).
void synchronize_default_streams();

// Held while one of hal's own threads (a stream's worker, a callback thread) runs Python code,
// such as a DLPack producer's deleter. A hal.Stream whose last reference goes meanwhile (the
// code dropped it, or the garbage collector ran there) is destroyed on another thread: its
// destructor waits for its work and joins its worker, which may be this very thread.
class PythonOnHalThread {
 public:
  PythonOnHalThread();
  ~PythonOnHalThread();
  PythonOnHalThread(const PythonOnHalThread&) = delete;
  PythonOnHalThread& operator=(const PythonOnHalThread&) = delete;
  static bool active();
};

// A Python number as a fill value: a bool, an int or a float, or a NumPy scalar of one of those
// kinds, which counts as the Python number of its kind (np.float32(2) as 2.0, np.int64(1) as 1).
struct Scalar {
  enum class Kind { boolean, integer, floating };
  Kind kind;
  double real;                         // the value (rounded, for an integer past 2**53)
  std::optional<int64_t> integer;      // the value exactly, for a bool or an int that int64 holds
  std::optional<uint64_t> past_int64;  // the value exactly, for an int in [2**63, 2**64)
};
// std::nullopt for anything else.
std::optional<Scalar> to_scalar(py::handle value);
// `shape` filled with `value` in `dtype`, enqueued on `stream`, by hal::full: an integer exactly
// (an i64 or u64 tensor gets it unrounded past 2**53). Needs no GIL.
Tensor fill_scalar(const Shape& shape, const Scalar& value, DType dtype, Stream& stream);

// A copy of anything NumPy reads as an array on `stream`'s device, enqueued there, in its shape
// (0-d included). Python floats, alone or in lists, become f32 and ints i64 (as in PyTorch);
// what carries a dtype of its own (a NumPy array or scalar, a hal or PyTorch tensor) keeps it,
// unless `dtype` says otherwise.
Tensor tensor_from(py::handle data, std::optional<DType> dtype, Stream& stream);

}  // namespace hal::python

// What the parts of the Python module share: each bind_* adds one area of hal's API to the
// module, and the helpers turn Python values (dtype names, device ids, shapes) into hal's.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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

// A shape from a sequence of ints, or from the ints of a call's *args (reshape(2, 3)).
Shape to_shape(py::handle value);
Shape shape_from_args(const py::args& args);
py::tuple to_tuple(const Shape& shape);

// The stream work on `device` goes to when the caller names none: the innermost `with stream:`
// of this thread for that device, else the device's default stream (one per device, made on
// first use). Cheap: the last answer is kept per thread.
Stream& current_stream(const Device& device);
// `stream` if the caller gave one (not None), else current_stream(device).
Stream resolve_stream(py::handle stream, const Device& device);
// Synchronises every default stream made so far (hal.synchronize()).
void synchronize_default_streams();

// A copy of anything NumPy reads as an array on `stream`'s device, enqueued there. Python
// floats become f32 and ints i64 (as in PyTorch); a NumPy array keeps its dtype unless `dtype`
// says otherwise.
Tensor tensor_from(py::handle data, std::optional<DType> dtype, Stream& stream);

}  // namespace hal::python

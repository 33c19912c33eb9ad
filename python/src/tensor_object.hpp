// hal.Tensor objects on the path of every op, without pybind11's per-call type lookups: the
// class's type is looked up once (remember_tensor_type) and then compared by pointer. Every
// other use goes through pybind11's ordinary casts.
#pragma once

#include <pybind11/pybind11.h>

#include "hal/tensor.hpp"

namespace hal::python {

namespace py = pybind11;

// Called once hal.Tensor is bound.
void remember_tensor_type();

// The tensor a hal.Tensor object holds (read in place; valid while the object lives), or null
// for any other object.
const Tensor* tensor_of(py::handle value);

// A new hal.Tensor object that takes `tensor` over.
py::object wrap(Tensor&& tensor);

}  // namespace hal::python

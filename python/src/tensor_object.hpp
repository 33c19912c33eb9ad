// hal.Tensor objects on the path of every op, without pybind11's per-call type lookups: the
// class's type is looked up once (remember_tensor_type) and then compared by pointer. Every
// other use goes through pybind11's ordinary casts, which refuse a hal.Tensor object that holds
// no tensor (the type_caster below).
#pragma once

#include <pybind11/pybind11.h>

#include "hal/tensor.hpp"

namespace hal::python {

namespace py = pybind11;

// Called once hal.Tensor is bound.
void remember_tensor_type();

// The tensor a hal.Tensor object holds (read in place; valid while the object lives), or null
// for any other object. InvalidState for a hal.Tensor object that holds none (see below).
const Tensor* tensor_of(py::handle value);

// InvalidState where `value` is a hal.Tensor object that holds no tensor: one that
// hal.Tensor.__new__ made without __init__. pybind11 would read such an object's value as a
// tensor in memory nobody initialised (a crash); anything else passes.
void require_initialised(py::handle value);

// A new hal.Tensor object that takes `tensor` over.
py::object wrap(Tensor&& tensor);

}  // namespace hal::python

namespace PYBIND11_NAMESPACE {
namespace detail {

// hal::Tensor as every bound function takes it (self included), checked by require_initialised
// first. Declared here, before any use, so that every file of the module casts the same way.
template <>
class type_caster<hal::Tensor> : public type_caster_base<hal::Tensor> {
 public:
  bool load(handle src, bool convert) {
    hal::python::require_initialised(src);
    return type_caster_base<hal::Tensor>::load(src, convert);
  }
};

}  // namespace detail
}  // namespace PYBIND11_NAMESPACE

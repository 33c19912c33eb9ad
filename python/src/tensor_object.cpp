#include "tensor_object.hpp"

#include <utility>

#include "hal/error.hpp"

namespace hal::python {
namespace {

const py::detail::type_info* tensor_info = nullptr;

void* move_construct(const void* source) {
  return new Tensor(std::move(*const_cast<Tensor*>(static_cast<const Tensor*>(source))));
}

void* copy_construct(const void* source) { return new Tensor(*static_cast<const Tensor*>(source)); }

// The tensor a hal.Tensor object (or one of a Python subclass) holds. An object made by
// __new__ alone owns a value slot that nothing filled; one that only refers to a tensor (a
// reference pybind11 returned) owns none, and holds it all the same.
const Tensor* held_tensor(py::handle value) {
  auto* instance = reinterpret_cast<py::detail::instance*>(value.ptr());
  const py::detail::value_and_holder held = instance->get_value_and_holder(tensor_info);
  if (instance->owned && !held.holder_constructed())
    throw Error(ErrorCode::InvalidState,
                "hal.Tensor was not initialised: this object was made by hal.Tensor.__new__ "
                "without __init__ and holds no tensor; make tensors with hal.tensor(data, ...), "
                "hal.zeros/ones/full/empty(shape, ...), hal.arange(...) or hal.from_dlpack(x)");
  return held.value_ptr<Tensor>();
}

}  // namespace

void remember_tensor_type() { tensor_info = py::detail::get_type_info(typeid(Tensor)); }

const Tensor* tensor_of(py::handle value) {
  // hal.Tensor itself (no Python subclass): one C++ value, first in the instance.
  if (Py_TYPE(value.ptr()) == tensor_info->type) return held_tensor(value);
  if (!py::isinstance<Tensor>(value)) return nullptr;
  return &value.cast<const Tensor&>();
}

void require_initialised(py::handle value) {
  // Before hal.Tensor is bound there are no hal.Tensor objects.
  if (!tensor_info || !value || !PyObject_TypeCheck(value.ptr(), tensor_info->type)) return;
  held_tensor(value);
}

py::object wrap(Tensor&& tensor) {
  return py::reinterpret_steal<py::object>(
      py::detail::type_caster_generic::cast(&tensor, py::return_value_policy::move, py::handle(),
                                            tensor_info, &copy_construct, &move_construct));
}

}  // namespace hal::python

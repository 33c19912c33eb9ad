#include "tensor_object.hpp"

#include <utility>

namespace hal::python {
namespace {

const py::detail::type_info* tensor_info = nullptr;

void* move_construct(const void* source) {
  return new Tensor(std::move(*const_cast<Tensor*>(static_cast<const Tensor*>(source))));
}

void* copy_construct(const void* source) { return new Tensor(*static_cast<const Tensor*>(source)); }

}  // namespace

void remember_tensor_type() { tensor_info = py::detail::get_type_info(typeid(Tensor)); }

const Tensor* tensor_of(py::handle value) {
  if (Py_TYPE(value.ptr()) == tensor_info->type) {
    // hal.Tensor itself (no Python subclass): one C++ value, first in the instance.
    auto* instance = reinterpret_cast<py::detail::instance*>(value.ptr());
    const py::detail::value_and_holder held = instance->get_value_and_holder(tensor_info);
    return held.holder_constructed() ? held.value_ptr<Tensor>() : nullptr;  // no __new__ shells
  }
  if (!py::isinstance<Tensor>(value)) return nullptr;
  return &value.cast<const Tensor&>();
}

py::object wrap(Tensor&& tensor) {
  return py::reinterpret_steal<py::object>(
      py::detail::type_caster_generic::cast(&tensor, py::return_value_policy::move, py::handle(),
                                            tensor_info, &copy_construct, &move_construct));
}

}  // namespace hal::python

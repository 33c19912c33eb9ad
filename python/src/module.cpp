// The extension module hal._hal, which hal/__init__.py re-exports: `import hal`.
#include "bindings.hpp"

PYBIND11_MODULE(_hal, m) {
  using namespace hal::python;
  m.doc() = "hal: one API to find, choose and drive the compute devices of a machine.";
  bind_errors(m);
  bind_dtypes(m);
  bind_devices(m);
  bind_streams(m);
  py::class_<hal::Tensor> tensor = bind_tensor(m);
  bind_ops(m, tensor);
  bind_dlpack(m, tensor);
  bind_sched(m);
  bind_model(m);
  bind_autograd(m, tensor);
}

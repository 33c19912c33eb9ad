// hal::Error as Python exceptions: hal.Error (a RuntimeError) and one subclass per ErrorCode,
// each also the built-in exception Python code already catches for that kind of failure
// (InvalidArgument is a ValueError, OutOfMemory a MemoryError, ...). str() of one is what() of
// the C++ error, word for word; its attributes give the parts.
#include <array>
#include <string_view>
#include <utility>

#include "bindings.hpp"
#include "hal/error.hpp"

namespace hal::python {
namespace {

struct ErrorClass {
  ErrorCode code;
  PyObject* builtin;  // a second base besides hal.Error, or nullptr
  const char* doc;
};

// Filled in by bind_errors, indexed by the code's number; read by the translator.
std::array<PyObject*, 16> error_classes{};
PyObject* base_class = nullptr;

PyObject* class_for(ErrorCode code) {
  const auto index = static_cast<size_t>(code);
  if (index < error_classes.size() && error_classes[index]) return error_classes[index];
  return base_class;
}

// A message as a Python str. hal's messages are UTF-8 but may quote bytes that are not (a file
// name, a name read from a model): those become \xff escapes, where strict decoding would
// replace the hal error with a UnicodeDecodeError.
py::object text(std::string_view message) {
  PyObject* decoded = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                           "backslashreplace");
  if (!decoded) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(decoded);
}

// Raises the Python exception for `error`, with code, message, device, op and native_code set.
void raise(const Error& error) {
  PyObject* cls = class_for(error.code());
  py::object instance =
      py::reinterpret_steal<py::object>(PyObject_CallOneArg(cls, text(error.what()).ptr()));
  if (!instance) return;  // the call raised; that error stands
  instance.attr("code") = py::str(std::string(to_string(error.code())));
  instance.attr("message") = text(error.message());
  instance.attr("device") = text(error.device());
  instance.attr("op") = text(error.op());
  instance.attr("native_code") = py::int_(error.native_code());
  PyErr_SetObject(cls, instance.ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  base_class = PyErr_NewExceptionWithDoc(
      "hal.Error",
      "Everything hal raises. str() is the C++ hal::Error's what(); `code` names the ErrorCode "
      "('InvalidArgument', ...), `message` is the text without the 'hal: <code>: ' prefix, "
      "`device` and `op` say where it arose ('' where hal knew none), `native_code` is the "
      "backend's own status (0 where none).",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::reinterpret_borrow<py::object>(base_class);

  const ErrorClass classes[] = {
      {ErrorCode::InvalidArgument, PyExc_ValueError, "A caller passed a bad value."},
      {ErrorCode::OutOfMemory, PyExc_MemoryError, "An allocation could not be satisfied."},
      {ErrorCode::Unsupported, PyExc_NotImplementedError,
       "The device or backend cannot do what was asked."},
      {ErrorCode::CompileFailed, nullptr, "A kernel did not compile; the message holds the log."},
      {ErrorCode::DeviceLost, nullptr, "The device stopped working; later calls on it fail too."},
      {ErrorCode::BackendUnavailable, nullptr, "The backend's driver or library is absent."},
      {ErrorCode::PluginAbiMismatch, nullptr, "A plugin speaks another major version."},
      {ErrorCode::NotFound, PyExc_LookupError, "No such device, backend, kernel or name."},
      {ErrorCode::InvalidState, nullptr, "The object is not in a state that allows the call."},
      {ErrorCode::OutOfRange, PyExc_IndexError, "An offset or size runs past the end."},
      {ErrorCode::Timeout, PyExc_TimeoutError, "A wait ran out of time."},
      {ErrorCode::Internal, nullptr, "A bug in hal: please report it."},
      {ErrorCode::AsyncFailure, nullptr, "Work enqueued earlier on a stream failed."},
  };
  for (const ErrorClass& entry : classes) {
    const std::string name(to_string(entry.code));
    const std::string qualified = "hal." + name;
    py::tuple bases = entry.builtin
                          ? py::make_tuple(py::handle(base_class), py::handle(entry.builtin))
                          : py::make_tuple(py::handle(base_class));
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), entry.doc, bases.ptr(), nullptr);
    if (!cls) throw py::error_already_set();
    error_classes[static_cast<size_t>(entry.code)] = cls;
    m.attr(name.c_str()) = py::reinterpret_borrow<py::object>(cls);
  }

  py::register_exception_translator([](std::exception_ptr failure) {
    try {
      if (failure) std::rethrow_exception(failure);
    } catch (const Error& error) {
      raise(error);
    }
  });
}

}  // namespace hal::python

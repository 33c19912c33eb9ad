// ONNX models: hal.load_onnx(path) and Model.run({name: tensor or array}) on any device.
#include <pybind11/stl/filesystem.h>

#include <map>

#include "bindings.hpp"
#include "hal/error.hpp"
#include "hal/model.hpp"

namespace hal::python {
namespace {

using py::arg;

// Names read from a model as Python strs. ONNX names are UTF-8, but nothing checks that a file's
// are: other bytes become surrogates (as os.fsdecode makes them), where strict decoding would
// raise UnicodeDecodeError, and go back as the same bytes (name_bytes), so that a name read
// from `inputs` is one run() accepts.
py::str name_text(const std::string& name) {
  PyObject* decoded =
      PyUnicode_DecodeUTF8(name.data(), static_cast<Py_ssize_t>(name.size()), "surrogateescape");
  if (!decoded) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

std::string name_bytes(py::handle name) {
  const auto encoded = py::reinterpret_steal<py::bytes>(
      PyUnicode_AsEncodedString(py::str(name).ptr(), "utf-8", "surrogateescape"));
  if (!encoded) throw py::error_already_set();
  return std::string(encoded);
}

py::list name_list(const std::vector<std::string>& names) {
  py::list list;
  for (const std::string& name : names) list.append(name_text(name));
  return list;
}

py::dict value_dict(const ModelValue& value) {
  py::dict dict;
  dict["name"] = name_text(value.name);
  dict["dtype"] = element_type(value);
  py::object shape = py::none();
  if (value.ranked) {
    py::list dims;
    for (const ModelDim& dim : value.shape) {
      if (dim.size >= 0)
        dims.append(dim.size);
      else if (!dim.symbol.empty())
        dims.append(name_text(dim.symbol));
      else
        dims.append(py::none());
    }
    shape = dims;
  }
  dict["shape"] = shape;  // ints, names of symbolic dimensions, None where unknown
  dict["sequence"] = value.sequence;
  dict["optional"] = value.optional;
  return dict;
}

py::list values(const std::vector<ModelValue>& list) {
  py::list out;
  for (const ModelValue& value : list) out.append(value_dict(value));
  return out;
}

const ModelValue* declared_input(const Model& model, const std::string& name) {
  for (const auto* list : {&model.inputs(), &model.optional_inputs()})
    for (const ModelValue& value : *list)
      if (value.name == name) return &value;
  return nullptr;
}

// Runs `model` with inputs given as hal tensors or as arrays (copied to the device in the
// declared dtype). The device: `device`, else the first hal tensor's, else the default. An
// empty ONNX optional output is None.
py::dict run(const Model& model, const py::dict& inputs, py::handle device_arg,
             py::handle stream_arg) {
  py::object device_handle = py::reinterpret_borrow<py::object>(device_arg);
  if (device_handle.is_none() && !stream_arg.is_none())
    device_handle = py::cast(as_stream(stream_arg, "Model.run").device());
  if (device_handle.is_none())
    for (auto [name, value] : inputs)
      if (py::isinstance<Tensor>(value)) {
        device_handle = py::cast(value.cast<const Tensor&>().device());
        break;
      }
  const Device device = to_device(device_handle);
  Stream stream = resolve_stream(stream_arg, device, [&] { return "Model.run on " + device.id(); });
  std::map<std::string, Tensor> tensors;
  for (auto [key, value] : inputs) {
    const std::string name = name_bytes(key);
    if (py::isinstance<Tensor>(value)) {
      tensors[name] = value.cast<Tensor>();
      continue;
    }
    const ModelValue* declared = declared_input(model, name);
    std::optional<DType> dtype;
    if (declared && !declared->strings && !declared->sequence) dtype = declared->dtype;
    tensors[name] = tensor_from(value, dtype, stream);
  }
  std::map<std::string, Tensor> outputs;
  {
    py::gil_scoped_release unlocked;
    outputs = model.run(tensors, stream);
  }
  py::dict result;
  for (auto& [name, tensor] : outputs) {
    if (tensor.defined())
      result[name_text(name)] = wrap(std::move(tensor));
    else
      result[name_text(name)] = py::none();  // an optional without a value
  }
  return result;
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model>(m, "Model", "An ONNX model, run node by node through hal's ops.")
      .def_property_readonly(
          "inputs", [](const Model& model) { return values(model.inputs()); },
          "The inputs to give, as dicts (name, dtype, shape, ...).")
      .def_property_readonly(
          "optional_inputs", [](const Model& model) { return values(model.optional_inputs()); },
          "The inputs a run may give or leave out: an initializer of the same name is their "
          "default (ONNX IR version 4 on).")
      .def_property_readonly("outputs", [](const Model& model) { return values(model.outputs()); })
      .def_property_readonly("opset", &Model::opset)
      .def_property_readonly("node_count", &Model::node_count)
      .def_property_readonly("op_types",
                             [](const Model& model) { return name_list(model.op_types()); })
      .def("run", &run, arg("inputs"), arg("device") = py::none(), arg("stream") = py::none(),
           "Runs the model: inputs by name (hal tensors, or arrays copied to the device in the "
           "declared dtype); returns every output by name, on the device.")
      .def("__repr__", [](const Model& model) {
        return "hal.Model(opset " + std::to_string(model.opset()) + ", " +
               std::to_string(model.node_count()) + " nodes)";
      });
  m.def(
      "load_onnx",
      [](const std::filesystem::path& path) {
        py::gil_scoped_release unlocked;
        return load_onnx(path);
      },
      arg("path"), "Loads an ONNX model file (external data from its folder).");
  m.def(
      "load_onnx_bytes",
      [](const py::bytes& data, const std::string& name) {
        std::string bytes = data;
        py::gil_scoped_release unlocked;
        return load_onnx_bytes(bytes, name);
      },
      arg("data"), arg("name") = "model", "Loads a model from its serialized bytes.");
}

}  // namespace hal::python

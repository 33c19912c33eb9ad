// hal.Device, hal.devices(), hal.device(), hal.backends(), hal.summary(), the default device
// and its scope, logging and the version.
#include <memory>

#include "bindings.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "hal/select.hpp"
#include "hal/summary.hpp"
#include "hal/version.hpp"

namespace hal::python {
namespace {

using release_gil = py::call_guard<py::gil_scoped_release>;

// What a device or backend says of itself, as a Python str. A plugin's strings are cut to fit
// their fields (plugin.h), perhaps inside a UTF-8 sequence, and a driver's messages may quote
// file names that are not UTF-8: those bytes become \xff escapes, as in hal's error messages,
// where strict decoding would raise UnicodeDecodeError instead of naming the device.
py::str text(const std::string& said) {
  PyObject* decoded =
      PyUnicode_DecodeUTF8(said.data(), static_cast<Py_ssize_t>(said.size()), "backslashreplace");
  if (!decoded) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

// Strings a plugin said, as text().
py::list text_list(const std::vector<std::string>& said) {
  py::list out;
  for (const std::string& one : said) out.append(text(one));
  return out;
}

// A count by name (summary's by_vendor, ...) with the names as text().
py::dict count_dict(const std::map<std::string, uint32_t>& counts) {
  py::dict dict;
  for (const auto& [name, count] : counts) dict[text(name)] = count;
  return dict;
}

// A figure the device could not tell is None, never 0.
py::object memory_figure(const MemoryFigure& figure) {
  if (figure.provenance == Provenance::unknown) return py::none();
  return py::int_(figure.bytes);
}

py::list dtype_list(const std::vector<DType>& dtypes) {
  py::list list;
  for (DType dtype : dtypes) list.append(py::cast(dtype));
  return list;
}

py::dict info_dict(const Device& device) {
  const DeviceInfo& info = device.info();
  py::dict dict;
  dict["id"] = text(info.id);
  dict["uuid"] = text(info.uuid);
  dict["name"] = text(info.name);
  dict["vendor"] = text(info.vendor);
  dict["kind"] = std::string(to_string(info.kind));
  dict["backend"] = text(std::string(info.backend()));
  dict["architecture"] = text(info.architecture);
  dict["driver_version"] = text(info.driver_version);
  dict["memory_total"] = memory_figure(info.memory_total);
  dict["memory_free"] = memory_figure(info.memory_free);
  dict["compute_units"] = info.compute_units;
  dict["clock_mhz"] = info.clock_mhz;
  dict["numa_nodes"] = info.numa_nodes;
  py::list dtypes;
  for (DType dtype : info.dtypes) dtypes.append(std::string(to_string(dtype)));
  dict["dtypes"] = dtypes;
  dict["features"] = text_list(info.features);
  py::dict limits;
  limits["max_allocation_bytes"] = info.limits.max_allocation_bytes;
  limits["max_work_group_size"] = info.limits.max_work_group_size;
  limits["max_work_group_dims"] =
      py::make_tuple(info.limits.max_work_group_dims[0], info.limits.max_work_group_dims[1],
                     info.limits.max_work_group_dims[2]);
  limits["max_shared_memory_bytes"] = info.limits.max_shared_memory_bytes;
  dict["limits"] = limits;
  py::list caches;
  for (const CacheInfo& cache : info.caches) {
    py::dict entry;
    entry["level"] = cache.level;
    entry["type"] = text(cache.type);
    entry["size_bytes"] = cache.size_bytes;
    entry["line_bytes"] = cache.line_bytes;
    entry["count"] = cache.count;
    caches.append(entry);
  }
  dict["caches"] = caches;
  py::dict peak;
  peak["f32_gflops"] = info.peak.f32_gflops;
  peak["bandwidth_gbps"] = info.peak.bandwidth_gbps;
  peak["launch_latency_us"] = info.peak.launch_latency_us;
  dict["peak"] = peak;
  return dict;
}

py::dict backend_dict(const BackendStatus& status) {
  py::dict dict;
  dict["name"] = text(status.name);
  dict["compiled_in"] = status.compiled_in;
  dict["available"] = status.available;
  dict["reason"] = text(status.reason);
  dict["device_count"] = status.device_count;
  return dict;
}

py::dict summary_dict() {
  const Summary summary = [] {
    py::gil_scoped_release unlocked;
    return hal::summary();
  }();
  py::dict dict;
  py::list devices;
  for (const Device& device : summary.devices) devices.append(py::cast(device));
  dict["devices"] = devices;
  py::list free;
  for (const MemoryFigure& figure : summary.memory_free) free.append(memory_figure(figure));
  dict["memory_free"] = free;
  py::list backends;
  for (const BackendStatus& status : summary.backends) backends.append(backend_dict(status));
  dict["backends"] = backends;
  dict["by_backend"] = count_dict(summary.by_backend);
  dict["by_vendor"] = count_dict(summary.by_vendor);
  dict["by_kind"] = count_dict(summary.by_kind);
  dict["memory_total_bytes"] = summary.memory_total_bytes;
  dict["memory_free_bytes"] = summary.memory_free_bytes;
  return dict;
}

py::list op_support_list(const Device& device) {
  py::list list;
  for (const OpSupport& op : supported_ops(device)) {
    py::dict entry;
    entry["name"] = op.name;
    entry["dtypes"] = dtype_list(op.dtypes);
    entry["kernels"] = op.kernels;
    list.append(entry);
  }
  return list;
}

// `with hal.device_scope(device):` makes `device` this thread's default until the block ends.
class DeviceScopeGuard {
 public:
  explicit DeviceScopeGuard(Device device) : device_(std::move(device)) {}
  Device enter() {
    if (scope_)
      throw Error(ErrorCode::InvalidState, "hal.device_scope(" + device_.id() +
                                               ") is already entered: make a new one per block");
    scope_ = std::make_unique<DeviceScope>(device_);
    return device_;
  }
  void exit() { scope_.reset(); }

 private:
  Device device_;
  std::unique_ptr<DeviceScope> scope_;
};

}  // namespace

void bind_devices(py::module_& m) {
  py::class_<Device> device_class(m, "Device", "A handle to one compute device; cheap to copy.");
  // The first lookup discovers every backend's devices (tens to hundreds of ms): without the GIL.
  device_class
      .def(py::init([](const std::string& id) { return hal::device(id); }), py::arg("id"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("id", &Device::id)
      .def_property_readonly("name", [](const Device& d) { return text(d.info().name); })
      .def_property_readonly("vendor", [](const Device& d) { return text(d.info().vendor); })
      .def_property_readonly("kind",
                             [](const Device& d) { return std::string(to_string(d.info().kind)); })
      .def_property_readonly("backend",
                             [](const Device& d) { return text(std::string(d.info().backend())); })
      .def_property_readonly("uuid", [](const Device& d) { return text(d.info().uuid); })
      .def_property_readonly("memory_total",
                             [](const Device& d) { return memory_figure(d.info().memory_total); })
      .def_property_readonly("dtypes", [](const Device& d) { return dtype_list(d.info().dtypes); })
      .def_property_readonly("features",
                             [](const Device& d) { return text_list(d.info().features); })
      .def_property_readonly("info", &info_dict, "Everything the device says of itself, as a dict.")
      .def(
          "memory_free", [](const Device& d) { return memory_figure(d.memory_free()); },
          "Free memory read now, in bytes; None where the device cannot tell.")
      .def(
          "supports",
          [](const Device& d, py::handle dtype) { return d.info().supports(to_dtype(dtype)); },
          py::arg("dtype"))
      .def(
          "has_feature",
          [](const Device& d, const std::string& name) { return d.info().has_feature(name); },
          py::arg("name"))
      .def("create_stream", &Device::create_stream)
      .def("create_event", &Device::create_event)
      .def(
          "synchronize",
          [](const Device& d) {
            Stream stream = current_stream(d);
            py::gil_scoped_release unlocked;
            stream.synchronize();
          },
          "Waits (without the GIL) for this thread's current stream of the device.")
      .def("supported_ops", &op_support_list,
           "Every op with the dtypes this device runs it in and who computes it.")
      .def(
          "supports_op",
          [](const Device& d, const std::string& op, py::handle dtype) {
            return supports_op(d, op, to_dtype(dtype));
          },
          py::arg("op"), py::arg("dtype"))
      .def("clear_kernel_cache", &Device::clear_kernel_cache)
      // NotImplemented for another type: `device == None` is False, not a TypeError.
      .def("__eq__",
           [](const Device& a, const py::object& b) -> py::object {
             if (!py::isinstance<Device>(b))
               return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(a == b.cast<const Device&>());
           })
      .def("__hash__", [](const Device& d) { return std::hash<const void*>()(d.impl().get()); })
      .def("__str__", &Device::id)
      .def("__repr__", [](const Device& d) { return "hal.device('" + d.id() + "')"; });
  bind_memory(m, device_class);

  m.def(
      "devices",
      [](bool all) {
        py::gil_scoped_release unlocked;
        return all ? Registry::instance().all_devices() : hal::devices();
      },
      py::arg("all") = false,
      "Visible devices (HAL_DEVICES applies), by backend then index; all=True ignores "
      "HAL_DEVICES.");
  m.def(
      "device",
      [](const std::string& id) {
        py::gil_scoped_release unlocked;
        return hal::device(id);
      },
      py::arg("id"), "The device with this id ('opencl:0') or UUID prefix; hal.NotFound else.");
  m.def(
      "backends",
      [] {
        const std::vector<BackendStatus> statuses = [] {
          py::gil_scoped_release unlocked;
          return Registry::instance().backends();
        }();
        py::list list;
        for (const BackendStatus& status : statuses) list.append(backend_dict(status));
        return list;
      },
      "Every backend: compiled in, available, why not, how many devices.");
  m.def("summary", &summary_dict,
        "Devices by backend, vendor and kind, and memory summed, as a dict.");
  m.def(
      "default_device",
      [] {
        py::gil_scoped_release unlocked;
        return hal::default_device();
      },
      "The innermost hal.device_scope of this thread, else the best visible device.");
  m.def(
      "set_devices",
      [](std::optional<std::string> selector) {
        Registry::instance().set_selector(std::move(selector));
      },
      py::arg("selector"), "Overrides HAL_DEVICES for this process; None goes back to it.");

  py::class_<DeviceScopeGuard>(m, "DeviceScope",
                               "`with hal.device_scope(device):`: the thread's default device.")
      .def("__enter__", &DeviceScopeGuard::enter)
      .def("__exit__", [](DeviceScopeGuard& guard, py::args) { guard.exit(); });
  m.def(
      "device_scope", [](py::handle device) { return DeviceScopeGuard(to_device(device)); },
      py::arg("device"));

  m.def(
      "set_log_level",
      [](const std::string& name) {
        const std::optional<LogLevel> level = parse_log_level(name);
        if (!level)
          throw Error(ErrorCode::InvalidArgument,
                      "'" + name + "' is not a log level: silent, error, warn, info, debug, trace");
        set_log_level(*level);
      },
      py::arg("level"), "As HAL_LOG_LEVEL: silent, error, warn, info, debug or trace.");
  m.def("log_level", [] { return std::string(to_string(log_level())); });
  m.def("compiled_backends", &compiled_backends);
  m.attr("__version__") = std::string(version());
}

}  // namespace hal::python

// Choosing a device: hal.select with every candidate's reason, workloads and the cost model's
// estimates, and calibration (its results as the dicts of schema hal.calibration/1).
#include <cmath>

#include "bindings.hpp"
#include "hal/calibration.hpp"
#include "hal/cost_model.hpp"
#include "hal/error.hpp"
#include "hal/select.hpp"
#include "hal/units.hpp"

namespace hal::python {
namespace {

using py::arg;

py::object seconds_or_none(double seconds) {
  if (std::isnan(seconds)) return py::none();
  return py::float_(seconds);
}

// A str (comma-separated) or a sequence of str, as a list.
std::vector<std::string> names(py::handle value) {
  std::vector<std::string> list;
  if (value.is_none()) return list;
  if (py::isinstance<py::str>(value)) {
    const std::string text = value.cast<std::string>();
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = std::min(text.find(',', start), text.size());
      if (comma > start) list.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
    return list;
  }
  for (py::handle item : value) list.push_back(py::str(item).cast<std::string>());
  return list;
}

DeviceKind to_kind(const std::string& name) {
  for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::gpu, DeviceKind::accelerator})
    if (name == to_string(kind)) return kind;
  throw Error(ErrorCode::InvalidArgument,
              "select: '" + name + "' is not a device kind: cpu, gpu or accelerator");
}

uint64_t to_bytes(py::handle value, const char* what) {
  if (value.is_none()) return 0;
  if (py::isinstance<py::str>(value)) {
    const Parsed<uint64_t> parsed = parse_size(what, value.cast<std::string>(), 0, UINT64_MAX);
    if (!parsed.value) throw Error(ErrorCode::InvalidArgument, parsed.error);
    return *parsed.value;
  }
  const std::optional<int64_t> exact = is_integer(value) ? to_int64(value) : std::nullopt;
  if (!exact)
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) + ": " + py::repr(value).cast<std::string>() +
                    " is not a whole number of bytes (an int that int64 holds, or a size such "
                    "as '8G')");
  const int64_t bytes = *exact;
  if (bytes < 0)
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) + ": " + std::to_string(bytes) + " bytes is negative");
  return static_cast<uint64_t>(bytes);
}

py::dict estimate_dict(const Estimate& e) {
  py::dict dict;
  dict["seconds"] = seconds_or_none(e.seconds);
  dict["compute_seconds"] = e.compute_seconds;
  dict["memory_seconds"] = e.memory_seconds;
  dict["transfer_seconds"] = e.transfer_seconds;
  dict["launch_seconds"] = e.launch_seconds;
  dict["bound"] = e.bound;
  dict["provenance"] = std::string(to_string(e.provenance));
  dict["unknown"] = e.unknown;
  return dict;
}

py::dict calibration_dict(const Calibration& calibration) {
  py::dict dict = py::module_::import("json").attr("loads")(to_json(calibration));
  dict["from_cache"] = calibration.from_cache;
  return dict;
}

py::dict candidate_dict(const Candidate& c) {
  py::dict dict;
  dict["id"] = c.device.id();
  dict["device"] = py::cast(c.device);
  dict["eligible"] = c.eligible;
  dict["reason"] = c.reason;
  dict["predicted_s"] = seconds_or_none(c.predicted_seconds);
  dict["figures"] = std::string(to_string(c.figures));
  return dict;
}

}  // namespace

void bind_sched(py::module_& m) {
  py::class_<Workload>(m, "Workload", "What a piece of work costs, for the cost model.")
      .def(py::init([](std::string name, double flops, py::handle dtype, double bytes,
                       double host_to_device_bytes, double device_to_host_bytes, uint64_t launches,
                       uint64_t memory_bytes) {
             Workload w;
             w.name = std::move(name);
             w.flops = flops;
             w.dtype = to_dtype(dtype);
             w.bytes = bytes;
             w.host_to_device_bytes = host_to_device_bytes;
             w.device_to_host_bytes = device_to_host_bytes;
             w.launches = launches;
             w.memory_bytes = memory_bytes;
             return w;
           }),
           arg("name") = "", arg("flops") = 0.0, arg("dtype") = py::cast(DType::f32),
           arg("bytes") = 0.0, arg("host_to_device_bytes") = 0.0, arg("device_to_host_bytes") = 0.0,
           arg("launches") = 0, arg("memory_bytes") = 0)
      .def_static(
          "matmul",
          [](int64_t m_, int64_t n, int64_t k, py::handle dtype) {
            return Workload::matmul(m_, n, k, to_dtype(dtype));
          },
          arg("m"), arg("n"), arg("k"), arg("dtype") = py::cast(DType::f32),
          "C[m x n] = A[m x k] B[k x n].")
      .def_readwrite("name", &Workload::name)
      .def_readwrite("flops", &Workload::flops)
      .def_readwrite("dtype", &Workload::dtype)
      .def_readwrite("bytes", &Workload::bytes)
      .def_readwrite("host_to_device_bytes", &Workload::host_to_device_bytes)
      .def_readwrite("device_to_host_bytes", &Workload::device_to_host_bytes)
      .def_readwrite("launches", &Workload::launches)
      .def_readwrite("memory_bytes", &Workload::memory_bytes)
      .def("__repr__", [](const Workload& w) {
        return "hal.Workload('" + w.name + "', flops=" + std::to_string(w.flops) + ")";
      });

  py::class_<Selection>(m, "Selection", "The device chosen and why every other one lost.")
      .def_property_readonly("device",
                             [](const Selection& s) -> py::object {
                               if (!s.device) return py::none();
                               return py::cast(s.device);
                             })
      .def_property_readonly(
          "candidates",
          [](const Selection& s) {
            py::list list;
            for (const Candidate& c : s.candidates) list.append(candidate_dict(c));
            return list;
          },
          "Every device as a dict (id, device, eligible, reason, "
          "predicted_s, figures): the choice first, then the eligible ones "
          "in rank order, then the others.")
      .def("__str__", &Selection::to_string)
      .def("__repr__", [](const Selection& s) {
        return "hal.Selection(" + (s.device ? s.device.id() : std::string("none")) + ")";
      });

  m.def(
      "select",
      [](py::handle min_memory, double min_tflops, py::handle vendor, py::handle kind,
         py::handle dtype, py::handle feature, std::optional<Workload> workload) {
        Requirements needs;
        needs.min_free_memory = to_bytes(min_memory, "min_memory");
        needs.min_tflops = min_tflops;
        needs.vendors = names(vendor);
        for (const std::string& name : names(kind)) needs.kinds.push_back(to_kind(name));
        if (!dtype.is_none()) {
          if (py::isinstance<py::str>(dtype) || py::isinstance<DType>(dtype) ||
              !py::isinstance<py::sequence>(dtype))
            needs.dtypes.push_back(to_dtype(dtype));
          else
            for (py::handle item : dtype) needs.dtypes.push_back(to_dtype(item));
        }
        needs.features = names(feature);
        needs.workload = std::move(workload);
        py::gil_scoped_release unlocked;
        return select_device(needs);
      },
      arg("min_memory") = py::none(), arg("min_tflops") = 0.0, arg("vendor") = py::none(),
      arg("kind") = py::none(), arg("dtype") = py::none(), arg("feature") = py::none(),
      arg("workload") = py::none(),
      "The best visible device for the needs, with every candidate's reason; hal.NotFound "
      "naming each device and what it failed when none fits. min_memory: bytes or '8G'; "
      "vendor, kind, feature: a name, names or 'a,b'; dtype: one or a list.");
  m.def("reference_workload", &reference_workload,
        "What hal.default_device() ranks by: a 2048^3 f32 matmul.");
  m.def(
      "estimate",
      [](const Workload& workload, py::handle device) {
        const Device target = to_device(device);
        return estimate_dict(estimate(workload, target));
      },
      arg("workload"), arg("device") = py::none(),
      "The cost model's time for the workload on the device, as a dict.");
  m.def(
      "calibrate",
      [](py::handle device, bool quick, bool use_cache) {
        const Device target = to_device(device);
        const Calibration calibration = [&] {
          py::gil_scoped_release unlocked;
          return calibrate(target, {.use_cache = use_cache, .quick = quick});
        }();
        return calibration_dict(calibration);
      },
      arg("device") = py::none(), arg("quick") = false, arg("use_cache") = true,
      "Measures the device (or returns its cached figures): a dict of schema "
      "hal.calibration/1, with from_cache.");
  m.def(
      "cached_calibration",
      [](py::handle device) -> py::object {
        const std::optional<Calibration> found = cached_calibration(to_device(device));
        if (!found) return py::none();
        return calibration_dict(*found);
      },
      arg("device") = py::none(), "The cached calibration of the device as a dict, or None.");
  m.def("reload_calibrations", &reload_calibrations,
        "Forgets calibrations read so far, so that entries another process wrote are read.");
}

}  // namespace hal::python

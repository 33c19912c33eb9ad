// DLPack both ways, without copies: hal.Tensor.__dlpack__ / __dlpack_device__ for consumers
// (numpy.from_dlpack, torch.from_dlpack), and hal.from_dlpack for producers (NumPy arrays,
// PyTorch tensors, capsules). The versioned capsule (DLPack 1.x) goes to consumers that ask with
// max_version >= (1, 0), the 0.x one to the others; hal reads both.
//
// Lifetimes: an exported capsule owns a copy of the hal::Tensor (so its storage) until the
// consumer's deleter call; an imported tensor's buffer calls the producer's deleter when the
// last handle and the last enqueued work using it let go, with the GIL held (NumPy's deleter
// needs it), from whichever thread that is.
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "bindings.hpp"
#include "dlpack_abi.hpp"
#include "hal/error.hpp"
#include "hal/native_memory.hpp"
#include "hal/registry.hpp"

namespace hal::python {
namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";

bool interpreter_finishing() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

// ---- hal's dtypes and devices in DLPack's terms ----

DLDataType dl_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {kDLFloat, 32, 1};
    case DType::f16:
      return {kDLFloat, 16, 1};
    case DType::bf16:
      return {kDLBfloat, 16, 1};
    case DType::f64:
      return {kDLFloat, 64, 1};
    case DType::i8:
      return {kDLInt, 8, 1};
    case DType::u8:
      return {kDLUInt, 8, 1};
    case DType::i32:
      return {kDLInt, 32, 1};
    case DType::i64:
      return {kDLInt, 64, 1};
    case DType::i16:
      return {kDLInt, 16, 1};
    case DType::u16:
      return {kDLUInt, 16, 1};
    case DType::u32:
      return {kDLUInt, 32, 1};
    case DType::u64:
      return {kDLUInt, 64, 1};
    case DType::boolean:
      return {dlpack::kBoolCode, 8, 1};
  }
  throw Error(ErrorCode::Internal, "dl_dtype: a dtype that is not one of hal's");
}

DType hal_dtype(DLDataType type) {
  if (type.lanes == 1) {
    for (DType dtype : kAllDTypes) {
      const DLDataType candidate = dl_dtype(dtype);
      if (candidate.code == type.code && candidate.bits == type.bits) return dtype;
    }
  }
  throw Error(ErrorCode::Unsupported,
              "from_dlpack: DLPack data type (code " + std::to_string(type.code) + ", " +
                  std::to_string(type.bits) + " bits, " + std::to_string(type.lanes) +
                  " lanes) has no hal dtype (hal has float32, float16, bfloat16, float64, int and "
                  "uint of 8, 16, 32 and 64 bits, and bool, one lane each)");
}

int64_t device_index(const Device& device) {
  const std::string& id = device.id();
  return std::stoll(id.substr(id.find(':') + 1));
}

// DLPack's (device type, index) for a hal device; std::nullopt for backends DLPack has no type
// for (plugins).
std::optional<DLDevice> dl_device(const Device& device) {
  const std::string_view backend = device.info().backend();
  if (backend == "cpu") return DLDevice{kDLCPU, 0};
  if (backend == "cuda") return DLDevice{kDLCUDA, static_cast<int>(device_index(device))};
  if (backend == "opencl") return DLDevice{kDLOpenCL, static_cast<int>(device_index(device))};
  return std::nullopt;
}

// The hal device a DLPack device names; NotFound when this process has none such.
Device hal_device(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU:
      // The host is one device, index 0 (as the array API has it): another index is no memory
      // this process knows, and taking it as cpu:0 would hide the producer's mistake.
      if (device.device_id != 0)
        throw Error(ErrorCode::NotFound, "from_dlpack: DLPack device (CPU, index " +
                                             std::to_string(device.device_id) +
                                             ") is not the host: hal's host, cpu:0, is (CPU, 0)");
      return hal::device("cpu:0");
    case kDLCUDAHost:  // pinned host memory: the host addresses it
      return hal::device("cpu:0");
    case kDLCUDA:
      return hal::device("cuda:" + std::to_string(device.device_id));
    case kDLOpenCL:
      return hal::device("opencl:" + std::to_string(device.device_id));
    default:
      throw Error(ErrorCode::Unsupported,
                  "from_dlpack: DLPack device type " + std::to_string(device.device_type) +
                      " (index " + std::to_string(device.device_id) +
                      ") is not one hal maps (CPU 1, CUDA 2, CUDA host 3, OpenCL 4)");
  }
}

// ---- export ----

// What a capsule owns: the tensor (so its storage) and the arrays its DLTensor points into.
template <class Managed>
struct Export {
  Tensor tensor;
  Shape shape;
  Shape strides;
  Managed managed{};
};

// The exports alive, each with the number of the capsule that made it. A consumer that calls
// the deleter and yet leaves the capsule unconsumed (PyTorch 1.13, failing to import OpenCL
// memory) would have the capsule's destructor call it again: the destructor deletes only an
// export still alive and still its own (an address freed and reused is another number).
struct LiveExports {
  std::mutex mutex;
  std::unordered_map<const void*, uint64_t> numbers;  // by managed tensor
  uint64_t made = 0;
};
LiveExports& live_exports() {
  static auto* exports = new LiveExports;  // never destroyed: capsules may outlive statics
  return *exports;
}

template <class Managed>
void delete_export(Managed* self) {
  {
    LiveExports& live = live_exports();
    std::lock_guard lock(live.mutex);
    live.numbers.erase(self);
  }
  delete static_cast<Export<Managed>*>(self->manager_ctx);
}

// A capsule the consumer never took still owns its tensor, unless its deleter ran already.
template <class Managed>
void delete_unconsumed(PyObject* capsule, const char* name) {
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  const auto number = reinterpret_cast<uintptr_t>(PyCapsule_GetContext(capsule));
  {
    LiveExports& live = live_exports();
    std::lock_guard lock(live.mutex);
    const auto it = live.numbers.find(managed);
    if (it == live.numbers.end() || it->second != number) return;
  }
  delete_export(managed);
}

void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kLegacyName))
    delete_unconsumed<DLManagedTensor>(capsule, kLegacyName);
  else if (PyCapsule_IsValid(capsule, kVersionedName))
    delete_unconsumed<DLManagedTensorVersioned>(capsule, kVersionedName);
}

template <class Managed>
py::capsule make_capsule(const Tensor& tensor, DLDevice device, uint64_t flags) {
  auto owned = std::make_unique<Export<Managed>>();
  owned->tensor = tensor;
  owned->shape = tensor.shape();
  owned->strides = tensor.strides();
  DLTensor& dl = owned->managed.dl_tensor;
  const size_t offset = static_cast<size_t>(tensor.offset()) * tensor.element_size();
  const NativeMemory native = native_memory(tensor.storage());
  if (device.device_type == kDLOpenCL) {
    dl.data = native.handle;  // a cl_mem: the offset goes beside it
    dl.byte_offset = native.offset + offset;
  } else {
    // The address of element 0 itself: older consumers (PyTorch 1.x) ignore byte_offset.
    dl.data = static_cast<char*>(native.handle) + native.offset + offset;
    dl.byte_offset = 0;
  }
  dl.device = device;
  dl.ndim = static_cast<int>(owned->shape.size());
  dl.dtype = dl_dtype(tensor.dtype());
  dl.shape = owned->shape.data();
  dl.strides = owned->strides.data();
  owned->managed.manager_ctx = owned.get();
  owned->managed.deleter = &delete_export<Managed>;
  const char* name = kLegacyName;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    owned->managed.version = {dlpack::kMajor, dlpack::kMinor};
    owned->managed.flags = flags;
    name = kVersionedName;
  }
  PyObject* capsule = PyCapsule_New(&owned->managed, name, &capsule_destructor);
  if (!capsule) throw py::error_already_set();
  {
    LiveExports& live = live_exports();
    std::lock_guard lock(live.mutex);
    const uint64_t number = ++live.made;
    live.numbers[&owned->managed] = number;
    PyCapsule_SetContext(capsule, reinterpret_cast<void*>(static_cast<uintptr_t>(number)));
  }
  owned.release();  // the capsule (then its consumer) owns it now
  return py::reinterpret_steal<py::capsule>(capsule);
}

[[noreturn]] void refuse(const std::string& message) { throw py::buffer_error(message); }

// __dlpack__'s argument `name` (dl_device, max_version), `what` (its two ints) as ints. BufferError
// naming the argument and its value for anything else, where pybind11's casts would name neither
// ("Object of type 'int' is not an instance of 'sequence'").
std::pair<int, int> int_pair(py::handle value, const char* name, const char* what) {
  const auto refuse_value = [&] {
    refuse(std::string("__dlpack__: ") + name + " must be " + what + ", two ints, not " +
           py::repr(value).cast<std::string>());
  };
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value)) refuse_value();
  const auto pair = py::reinterpret_borrow<py::sequence>(value);
  if (pair.size() != 2 || !is_integer(pair[0]) || !is_integer(pair[1])) refuse_value();
  const std::optional<int64_t> first = to_int64(pair[0]), second = to_int64(pair[1]);
  constexpr int64_t low = std::numeric_limits<int>::min(), high = std::numeric_limits<int>::max();
  if (!first || !second || *first < low || *first > high || *second < low || *second > high)
    refuse_value();
  return {static_cast<int>(*first), static_cast<int>(*second)};
}

py::capsule export_tensor(const Tensor& self, py::handle stream, py::handle max_version,
                          py::handle dl_device_arg, py::handle copy_arg) {
  (void)stream;  // hal waits for its own work before it hands the memory over (below)
  // copy: None lets hal copy where it must, True always copies, False never does.
  if (!copy_arg.is_none() && !PyBool_Check(copy_arg.ptr()))
    refuse("__dlpack__: copy must be True, False or None, not " +
           py::repr(copy_arg).cast<std::string>());
  const bool copy_forbidden = !copy_arg.is_none() && !copy_arg.cast<bool>();
  const bool copy_required = !copy_arg.is_none() && copy_arg.cast<bool>();
  const bool versioned =
      !max_version.is_none() && int_pair(max_version, "max_version", "(major, minor)").first >= 1;
  std::optional<DLDevice> device = dl_device(self.device());
  if (!device)
    refuse("__dlpack__: " + self.describe() + ": DLPack has no device type for the " +
           std::string(self.device().info().backend()) +
           " backend; copy the tensor to cpu:0 first (t.cpu())");
  Tensor tensor = self;
  bool copied = false;
  if (!dl_device_arg.is_none()) {
    const auto [type, index] = int_pair(dl_device_arg, "dl_device", "(device type, index)");
    if (type != device->device_type || index != device->device_id) {
      if (type != kDLCPU || index != 0)  // the host is (CPU, 0), as from_dlpack reads it
        refuse("__dlpack__: " + self.describe() + " cannot be exported to DLPack device (" +
               std::to_string(type) + ", " + std::to_string(index) +
               "); only to its own or the CPU (1, 0)");
      if (copy_forbidden)
        refuse("__dlpack__: " + self.describe() +
               " is not on the CPU, and copy=False forbids the copy there");
      tensor = tensor.to(hal::device("cpu:0"), current_stream(self.device()));
      device = DLDevice{kDLCPU, 0};
      copied = true;
    }
  }
  if (copy_required && !copied) {
    tensor = tensor.to(tensor.device(), current_stream(tensor.device()));
    copied = true;
  }
  if (!tensor.is_contiguous())
    refuse("__dlpack__: " + tensor.describe() + " is not contiguous (strides " +
           to_string(tensor.strides()) + "); call .contiguous() first");
  {
    // The consumer reads the memory as soon as it has the capsule.
    Stream& work = current_stream(self.device());
    py::gil_scoped_release unlocked;
    work.synchronize();
  }
  const uint64_t flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
  if (versioned) return make_capsule<DLManagedTensorVersioned>(tensor, *device, flags);
  return make_capsule<DLManagedTensor>(tensor, *device, flags);
}

py::tuple dlpack_device(const Tensor& self) {
  const std::optional<DLDevice> device = dl_device(self.device());
  if (!device) refuse("__dlpack_device__: DLPack has no device type for " + self.device().id());
  return py::make_tuple(static_cast<int>(device->device_type), device->device_id);
}

// ---- import ----

// One capsule's managed tensor, whichever version.
struct Managed {
  DLTensor* tensor = nullptr;
  void* context = nullptr;
  bool ours = false;                   // made by export_tensor: context is an Export
  std::function<void()> call_deleter;  // hands the tensor back to its producer
  const char* used_name = nullptr;
};

Managed open_capsule(PyObject* capsule) {
  Managed managed;
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    if (m->version.major > dlpack::kMajor)
      throw Error(ErrorCode::Unsupported, "from_dlpack: the capsule is DLPack " +
                                              std::to_string(m->version.major) + "." +
                                              std::to_string(m->version.minor) + "; hal reads " +
                                              std::to_string(dlpack::kMajor) + ".x and 0.x");
    // hal has no read-only tensors (numpy() of one is a writable view), and read-only memory
    // may be read-only pages, where a write would crash the process.
    if (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
      throw Error(ErrorCode::InvalidArgument,
                  "from_dlpack: the capsule's memory is read-only (DLPACK_FLAG_BITMASK_READ_ONLY), "
                  "and hal's tensors are writable: give a writable copy (numpy: array.copy())");
    managed.tensor = &m->dl_tensor;
    managed.context = m->manager_ctx;
    managed.ours = m->deleter == &delete_export<DLManagedTensorVersioned>;
    managed.call_deleter = [m] {
      if (m->deleter) m->deleter(m);
    };
    managed.used_name = kUsedVersionedName;
    return managed;
  }
  if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    managed.tensor = &m->dl_tensor;
    managed.context = m->manager_ctx;
    managed.ours = m->deleter == &delete_export<DLManagedTensor>;
    managed.call_deleter = [m] {
      if (m->deleter) m->deleter(m);
    };
    managed.used_name = kUsedLegacyName;
    return managed;
  }
  const char* name = PyCapsule_GetName(capsule);
  PyErr_Clear();
  const std::string text = name ? name : "";
  if (text == kUsedLegacyName || text == kUsedVersionedName)
    throw Error(ErrorCode::InvalidArgument,
                "from_dlpack: this DLPack capsule was consumed already ('" + text +
                    "'): a capsule is consumed once; ask the producer for another (__dlpack__)");
  throw Error(ErrorCode::InvalidArgument,
              "from_dlpack: a capsule named '" + text +
                  "' is not a DLPack tensor ('dltensor' or 'dltensor_versioned')");
}

// Hands the producer's tensor back, with the GIL (the producer's deleter may need it), unless
// the interpreter is gone: then the memory is left to the process's end.
std::function<void()> with_gil(std::function<void()> call) {
  return [call = std::move(call)] {
    if (interpreter_finishing()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    {
      const PythonOnHalThread on_hal_thread;
      call();
    }
    PyGILState_Release(state);
  };
}

Tensor consume(PyObject* capsule) {
  Managed managed = open_capsule(capsule);
  const DLTensor& dl = *managed.tensor;
  if (managed.ours) {
    // A capsule of hal's own: the tensor itself, on whichever device.
    const Tensor tensor =
        managed.used_name == kUsedVersionedName
            ? static_cast<Export<DLManagedTensorVersioned>*>(managed.context)->tensor
            : static_cast<Export<DLManagedTensor>*>(managed.context)->tensor;
    PyCapsule_SetName(capsule, managed.used_name);
    managed.call_deleter();
    return tensor;
  }
  // Everything is checked before the capsule is marked consumed: a refusal leaves it to its own
  // destructor, which hands it back to the producer.
  const DType dtype = hal_dtype(dl.dtype);
  const Device device = [&] {  // the process's first lookup discovers every device
    py::gil_scoped_release unlocked;
    return hal_device(dl.device);
  }();
  // Without the GIL, another thread may have consumed the capsule meanwhile: taking it again
  // would hand the producer's memory back twice.
  if (PyCapsule_GetName(capsule) == nullptr ||
      std::string_view(PyCapsule_GetName(capsule)) == managed.used_name) {
    PyErr_Clear();
    throw Error(ErrorCode::InvalidArgument,
                "from_dlpack: this DLPack capsule was consumed already (by another thread while "
                "this one looked up its device): a capsule is consumed once");
  }
  if (dl.ndim < 0)
    throw Error(ErrorCode::InvalidArgument,
                "from_dlpack: negative ndim " + std::to_string(dl.ndim));
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Shape strides;
  const std::string what =
      "from_dlpack of " + std::string(to_string(dtype)) + to_string(shape) + " on " + device.id();
  if (dl.strides) {
    strides.assign(dl.strides, dl.strides + dl.ndim);
    for (int64_t stride : strides)
      if (stride < 0)
        throw Error(ErrorCode::InvalidArgument,
                    what + ": strides " + to_string(strides) +
                        " step backwards (a reversed view); hal's tensors step forward: make it "
                        "contiguous first (numpy.ascontiguousarray, torch's .contiguous())");
  } else {
    strides = contiguous_strides(shape);
  }
  const int64_t count = numel(shape);
  const size_t item = size_of(dtype);
  if (count == 0) {
    PyCapsule_SetName(capsule, managed.used_name);
    managed.call_deleter();
    return empty(shape, dtype, device);
  }
  // The bytes from element 0 to the furthest element the strides reach.
  int64_t furthest = 0;
  for (size_t i = 0; i < shape.size(); ++i) furthest += (shape[i] - 1) * strides[i];
  const size_t bytes = (static_cast<size_t>(furthest) + 1) * item;
  if (dl.device.device_type == kDLOpenCL)
    throw Error(ErrorCode::Unsupported,
                what +
                    ": a cl_mem belongs to the OpenCL context that made it, and hal adopts "
                    "none but its own (copy it to the host first)");
  void* start = static_cast<char*>(dl.data) + dl.byte_offset;
  if (reinterpret_cast<uintptr_t>(start) % item != 0)
    throw Error(ErrorCode::InvalidArgument,
                what + ": element 0 is not aligned to its " + std::to_string(item) + " bytes");
  Buffer buffer = wrap_native_memory(device, start, bytes, with_gil(managed.call_deleter));
  // From here the buffer hands the tensor back: the capsule must not as well.
  PyCapsule_SetName(capsule, managed.used_name);
  return Tensor(buffer, dtype, shape, strides, 0);
}

py::object from_dlpack(py::handle source) {
  // tensor_of refuses a hal.Tensor object that holds no tensor.
  if (tensor_of(source)) return py::reinterpret_borrow<py::object>(source);
  py::object capsule;
  if (PyCapsule_CheckExact(source.ptr())) {
    capsule = py::reinterpret_borrow<py::object>(source);
  } else {
    if (!py::hasattr(source, "__dlpack__"))
      throw Error(
          ErrorCode::InvalidArgument,
          "from_dlpack: " + std::string(py::str(py::type::handle_of(source).attr("__name__"))) +
              " has no __dlpack__: give a NumPy array, a PyTorch tensor, a hal.Tensor, "
              "or a DLPack capsule");
    py::object method = source.attr("__dlpack__");
    try {
      capsule = method(py::arg("max_version") = py::make_tuple(dlpack::kMajor, dlpack::kMinor));
    } catch (const py::error_already_set& error) {
      if (!error.matches(PyExc_TypeError)) throw;
      capsule = method();  // a producer of DLPack 0.x takes no max_version
    }
    if (!PyCapsule_CheckExact(capsule.ptr()))
      throw Error(ErrorCode::InvalidArgument,
                  "from_dlpack: __dlpack__ of " +
                      std::string(py::str(py::type::handle_of(source).attr("__name__"))) +
                      " returned no capsule");
  }
  return wrap(consume(capsule.ptr()));
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<Tensor>& tensor) {
  using py::arg;
  tensor.def("__dlpack__", &export_tensor, py::kw_only(), arg("stream") = py::none(),
             arg("max_version") = py::none(), arg("dl_device") = py::none(),
             arg("copy") = py::none(),
             "A DLPack capsule of this tensor's memory, without a copy (versioned when "
             "max_version >= (1, 0)), once this thread's current stream has finished.");
  tensor.def("__dlpack_device__", &dlpack_device);
  m.def("from_dlpack", &from_dlpack, arg("source"),
        "A hal.Tensor over the memory of a DLPack producer (a NumPy array, a PyTorch tensor, a "
        "capsule), without a copy; the producer's memory lives until the tensor goes.");
}

}  // namespace hal::python

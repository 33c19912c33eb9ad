// hal.Stream and hal.Event, and which stream work goes to when the caller names none: the
// innermost `with stream:` of the thread for that device, else the device's default stream.
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "bindings.hpp"
#include "hal/error.hpp"
#include "hal/event.hpp"

namespace hal::python {
namespace {

using release_gil = py::call_guard<py::gil_scoped_release>;

thread_local int python_on_hal_thread = 0;

// Destroys the streams whose last reference went on one of hal's threads, one after another on
// a thread of its own (made on first use, joined at exit once they are all destroyed).
class StreamReaper {
 public:
  static StreamReaper& instance() {
    static StreamReaper reaper;
    return reaper;
  }
  void destroy_later(Stream* stream) {
    {
      std::lock_guard lock(mutex_);
      forget_a_parents_thread();
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
      streams_.push_back(stream);
    }
    wake_.notify_one();
  }
  ~StreamReaper() {
    {
      std::lock_guard lock(mutex_);
      forget_a_parents_thread();
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || !streams_.empty(); });
      if (streams_.empty()) return;  // stopping, and every stream destroyed
      Stream* stream = streams_.front();
      streams_.pop_front();
      lock.unlock();
      delete stream;  // waits for its work; without the GIL (this thread never holds it)
      lock.lock();
    }
  }
  // After fork() the child has the handle of a thread that is not there (joining it would
  // fail): it starts one of its own when it needs one.
  void forget_a_parents_thread() {
    if (owner_ == ::getpid()) return;
    if (thread_.joinable()) new (&thread_) std::thread();  // no destructor: it would terminate
    owner_ = ::getpid();
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Stream*> streams_;
  bool stopping_ = false;
  std::thread thread_;
  pid_t owner_ = ::getpid();
};

// Destroying a stream waits for its work, and the end of that work may hand DLPack memory back
// to its producer, which takes the GIL: so the GIL is let go while a hal.Stream is destroyed.
// On one of hal's threads it may be the stream's own worker: the reaper destroys it instead.
struct DestroyWithoutGil {
  void operator()(Stream* stream) const {
    if (PythonOnHalThread::active()) {
      StreamReaper::instance().destroy_later(stream);
    } else if (PyGILState_Check() && Py_IsInitialized()) {
      PyThreadState* state = PyEval_SaveThread();
      delete stream;
      PyEval_RestoreThread(state);
    } else {
      delete stream;
    }
  }
};

// One default stream per device, made on first use and kept for the process's life (destroyed
// at exit, after the interpreter, before hal's registry).
struct DefaultStreams {
  std::mutex mutex;
  std::unordered_map<const void*, Stream> streams;  // by DeviceImpl
};
DefaultStreams& default_streams() {
  static DefaultStreams instance;
  return instance;
}

// This thread's `with stream:` blocks, innermost last, and the last lookup's answer.
struct ThreadStreams {
  std::vector<Stream> scoped;
  const void* last_device = nullptr;
  Stream* last_stream = nullptr;
};
thread_local ThreadStreams thread_streams;

Stream& default_stream(const Device& device) {
  DefaultStreams& all = default_streams();
  std::lock_guard lock(all.mutex);
  auto [entry, inserted] = all.streams.try_emplace(device.impl().get());
  if (inserted) {
    try {
      entry->second = device.create_stream();
    } catch (...) {
      all.streams.erase(entry);
      throw;
    }
  }
  return entry->second;  // a node of the map: its address stays
}

void enter(const Stream& stream) {
  thread_streams.scoped.push_back(stream);
  thread_streams.last_device = nullptr;
}

void exit(const Stream& stream) {
  auto& scoped = thread_streams.scoped;
  if (scoped.empty() || scoped.back().impl() != stream.impl())
    throw Error(ErrorCode::InvalidState, "leaving a `with stream:` block of " +
                                             stream.device().id() +
                                             " that is not this thread's innermost one");
  scoped.pop_back();
  thread_streams.last_device = nullptr;
}

// a == b for a Stream or an Event: the same one; NotImplemented for another type, so that
// `stream == None` is False (Python's fallback) instead of a TypeError.
template <class Handle>
py::object same_handle(const Handle& a, const py::object& b) {
  if (!py::isinstance<Handle>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::bool_(a.impl() == b.cast<const Handle&>().impl());
}

}  // namespace

Stream as_stream(py::handle stream, const std::string& what) {
  if (!py::isinstance<Stream>(stream))
    throw py::type_error(what + ": stream must be a hal.Stream or None, not " +
                         py::repr(stream).cast<std::string>());
  return stream.cast<Stream>();
}

PythonOnHalThread::PythonOnHalThread() { ++python_on_hal_thread; }
PythonOnHalThread::~PythonOnHalThread() { --python_on_hal_thread; }
bool PythonOnHalThread::active() { return python_on_hal_thread > 0; }

Stream& current_stream(const Device& device) {
  const void* key = device.impl().get();
  ThreadStreams& mine = thread_streams;
  if (key == mine.last_device) return *mine.last_stream;
  Stream* found = nullptr;
  for (auto it = mine.scoped.rbegin(); it != mine.scoped.rend() && !found; ++it)
    if (it->device().impl().get() == key) found = &*it;
  if (!found) found = &default_stream(device);
  mine.last_device = key;
  mine.last_stream = found;
  return *found;
}

void refuse_stream(const std::string& what, const Stream& stream, const std::string& use) {
  throw Error(ErrorCode::InvalidArgument,
              what + " on a stream of " + stream.device().id() + ": use a stream of " + use);
}

void synchronize_default_streams() {
  std::vector<Stream> streams;
  {
    DefaultStreams& all = default_streams();
    std::lock_guard lock(all.mutex);
    for (auto& [device, stream] : all.streams) streams.push_back(stream);
  }
  for (Stream& stream : streams) stream.synchronize();
}

void bind_streams(py::module_& m) {
  py::class_<Event>(m, "Event",
                    "A point in a stream's work that other streams and the host can wait for.")
      .def(py::init([](py::handle device) { return to_device(device).create_event(); }),
           py::arg("device") = py::none())
      .def_property_readonly("device", &Event::device)
      .def_property_readonly("recorded", &Event::recorded)
      .def("query", &Event::query, release_gil(),
           "True when the work before the latest record has completed.")
      .def("synchronize", &Event::synchronize, release_gil(),
           "Blocks (without the GIL) until the work before the latest record has completed.")
      .def_static("elapsed_ms", &Event::elapsed_ms, py::arg("start"), py::arg("end"), release_gil(),
                  "Milliseconds between two completed records of one device.")
      .def("__eq__", [](const Event& a, const py::object& b) { return same_handle(a, b); })
      .def("__hash__", [](const Event& e) { return std::hash<const void*>()(e.impl().get()); })
      .def("__repr__", [](const Event& e) {
        return "hal.Event(" + e.device().id() + (e.recorded() ? ", recorded)" : ")");
      });

  py::class_<Stream, std::unique_ptr<Stream, DestroyWithoutGil>>(
      m, "Stream",
      "An in-order queue of asynchronous work on one device. `with stream:` makes "
      "it this thread's current stream for its device.")
      .def(py::init([](py::handle device) { return to_device(device).create_stream(); }),
           py::arg("device") = py::none())
      .def_property_readonly("device", &Stream::device)
      .def("synchronize", &Stream::synchronize, release_gil(),
           "Blocks (without the GIL) until the work enqueued so far has completed; raises "
           "hal.AsyncFailure for work that failed.")
      .def("query", &Stream::query, release_gil(),
           "True when all work enqueued so far has completed.")
      .def(
          "record",
          [](Stream& stream, std::optional<Event> event) {
            py::gil_scoped_release unlocked;
            if (!event) return stream.record();
            stream.record(*event);
            return *event;
          },
          py::arg("event") = py::none(),
          "Records `event` (a new one when None) at this point of the stream; returns it.")
      .def("wait", &Stream::wait, py::arg("event"), release_gil(),
           "Later work on this stream waits for the event's latest record.")
      .def("__enter__",
           [](Stream& stream) {
             enter(stream);
             return stream;
           })
      .def("__exit__", [](Stream& stream, py::args) { exit(stream); })
      .def("__eq__", [](const Stream& a, const py::object& b) { return same_handle(a, b); })
      .def("__hash__", [](const Stream& s) { return std::hash<const void*>()(s.impl().get()); })
      .def("__repr__", [](const Stream& s) { return "hal.Stream(" + s.device().id() + ")"; });

  m.def(
      "current_stream", [](py::handle device) { return current_stream(to_device(device)); },
      py::arg("device") = py::none(),
      "The stream work on `device` goes to when none is named: the innermost `with stream:` of "
      "this thread for it, else the device's default stream.");
  m.def(
      "synchronize",
      [](py::handle device) {
        if (device.is_none()) {
          py::gil_scoped_release unlocked;
          synchronize_default_streams();
          return;
        }
        Stream stream = current_stream(to_device(device));
        py::gil_scoped_release unlocked;
        stream.synchronize();
      },
      py::arg("device") = py::none(),
      "Waits (without the GIL) for the current stream of `device`; with None, for every "
      "device's default stream.");
  // Work still queued when Python exits would otherwise run while the default streams above are
  // destroyed among the C++ statics, after what it calls into may be gone (a segfault at exit
  // after an unsynchronized backward): every stream is finished here, while all is alive. A
  // failure of that work is raised, and Python prints it as an atexit callback's.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    py::gil_scoped_release unlocked;
    hal::synchronize_all();
  }));
}

}  // namespace hal::python

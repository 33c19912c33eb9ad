// Event: a point in a stream's work that other streams and the host can wait for.
#pragma once

#include <memory>

namespace hal {

class EventImpl;
class Device;

// Recording an event again moves it to the new point; waits already enqueued keep waiting for
// the point they saw. Waiting on, querying or timing an event never recorded is an
// InvalidState error. Thread-safe.
//
// Failures: when work enqueued on the stream before the record failed (a host callback or host
// kernel that threw, a device error), and the stream's synchronize had not yet reported that
// failure when the record was made, synchronize and elapsed_ms of that record throw
// AsyncFailure naming it, every time (as CUDA's events report a fault), until the event is
// recorded again; query, as Stream::query, only says whether the work has completed. The
// stream's own synchronize still reports the failure, once. A stream that waits for the event
// (Stream::wait) is not failed by it: its work goes on after the record, as the recording
// stream's does (but for a device's error that its driver passes on).
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<EventImpl> impl) : impl_(std::move(impl)) {}

  Device device() const;
  bool recorded() const;
  // True when the work before the latest record has completed, whether or not some of it
  // failed (synchronize says which).
  bool query() const;
  // Blocks until the work before the latest record has completed; AsyncFailure when some of it
  // failed. From a host callback of the stream the record was made on, while the record is
  // queued behind that callback (so it cannot complete until the callback returns):
  // InvalidState instead of waiting for ever; from a deleter of what such a callback captured
  // (which may not throw), it returns at once, as Stream::synchronize does there.
  void synchronize() const;
  // Milliseconds between two completed records of events of the same device; AsyncFailure when
  // the work before either failed.
  static double elapsed_ms(const Event& start, const Event& end);

  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<EventImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<EventImpl> impl_;
};

}  // namespace hal

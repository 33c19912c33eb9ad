// Event: a point in a stream's work that other streams and the host can wait for.
#pragma once

#include <memory>

namespace hal {

class EventImpl;
class Device;

// Recording an event again moves it to the new point; waits already enqueued keep waiting for
// the point they saw. Waiting on, querying or timing an event never recorded is an
// InvalidState error. Thread-safe.
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<EventImpl> impl) : impl_(std::move(impl)) {}

  Device device() const;
  bool recorded() const;
  // True when the work before the latest record has completed.
  bool query() const;
  // Blocks until the work before the latest record has completed.
  void synchronize() const;
  // Milliseconds between two completed records of events of the same device.
  static double elapsed_ms(const Event& start, const Event& end);

  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<EventImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<EventImpl> impl_;
};

}  // namespace hal

// What hal's core knows of an event's record beyond HostFence (hal/backend.hpp): the stream that
// made it, so that a wait for it from that stream's own host callback, which would wait for
// itself, is refused; and whether the work before it failed, which Event::synchronize, query and
// elapsed_ms report. A backend's fence derives from RecordFence as well as HostFence; a fence
// that does not (a backend registered from outside hal) is waited for as before, unchecked.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>

namespace hal::detail {

// The failures of a stream's work, for the records made on it. A stream's synchronize reports the
// first failure of its work once (AsyncFailure) and then starts afresh; a record reports the first
// failure of the work enqueued before it that the stream had not reported when the record was
// made, every time it is asked. Positions number the stream's work that may fail in the order
// it runs, from 1: its host callbacks (Vulkan: its timeline values). Thread-safe.
class StreamFailures {
  struct Epoch;

 public:
  // What one record covers: the work up to a position, in the epoch the record was made in.
  class Mark {
   public:
    Mark() = default;
    // The failure of work at or before the record's position; null when none (asked once the
    // record has completed, null for what has not failed yet).
    std::exception_ptr failure() const;

   private:
    friend class StreamFailures;
    Mark(std::shared_ptr<Epoch> epoch, uint64_t position)
        : epoch_(std::move(epoch)), position_(position) {}
    std::shared_ptr<Epoch> epoch_;
    uint64_t position_ = 0;
  };

  // The work at `position` failed with `error`. Called before any later work can complete, so
  // that a record after it sees the failure as soon as it is complete.
  void failed(uint64_t position, std::exception_ptr error);
  // The stream's synchronize has taken its failure to report: records made from now on start
  // clean, and those made before keep what they saw.
  void reported();
  // For a record made after the work at `position`.
  Mark mark(uint64_t position) const;

 private:
  struct Epoch {
    mutable std::mutex mutex;
    std::exception_ptr error;        // the failure of the lowest position, under mutex
    uint64_t position = UINT64_MAX;  // its position
  };
  mutable std::mutex mutex_;
  std::shared_ptr<Epoch> current_ = std::make_shared<Epoch>();  // under mutex_
};

// Mixed into a backend's fence (the HostFence of one record).
class RecordFence {
 public:
  // `stream`: StreamImpl::serial() of the stream the record was made on (a serial, not the
  // stream's address: the stream may be gone, and another made where it was).
  explicit RecordFence(uint64_t stream) : stream_(stream) {}
  virtual ~RecordFence();  // out of line: the type's one home, which dynamic_cast finds
  uint64_t stream() const { return stream_; }
  // Once the fence is ready: the first failure of the work before the record (see
  // StreamFailures), or null.
  virtual std::exception_ptr failure() const = 0;

 private:
  uint64_t stream_;
};

}  // namespace hal::detail

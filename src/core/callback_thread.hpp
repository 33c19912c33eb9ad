// What a thread is doing for a stream's host callback: running it, or letting go of what it held.
// Each backend runs callbacks on a thread of its own (a CPU stream's worker, OpenCL's and CUDA's
// callback threads, a plugin's), and work enqueued after a callback waits for that thread; a
// synchronize of the stream from there would wait for itself, as would a wait for an event that
// the stream records after the callback (Stream::synchronize and Event::synchronize refuse them).
#pragma once

#include <functional>
#include <utility>

namespace hal {

class StreamImpl;

namespace detail {

// Marks this thread as doing `Phase` for a stream's callback, for the scope of the object
// (nested marks of one phase restore the one before: callbacks of one stream may call into
// another's, and the innermost is enough to catch waiting for oneself).
template <class Phase>
class CallbackMark {
 public:
  explicit CallbackMark(const StreamImpl* stream) : previous_(current_) { current_ = stream; }
  ~CallbackMark() { current_ = previous_; }
  CallbackMark(const CallbackMark&) = delete;
  CallbackMark& operator=(const CallbackMark&) = delete;
  static bool of(const StreamImpl* stream) { return current_ == stream; }
  // The innermost stream marked on this thread, null when none.
  static const StreamImpl* current() { return current_; }

 private:
  static inline thread_local const StreamImpl* current_ = nullptr;
  const StreamImpl* previous_;
};

// The stream whose host callback this thread runs now.
using RunningCallback = CallbackMark<struct RunningPhase>;
// The stream whose callback's captures this thread drops now, after the callback ran. A deleter
// among them (a DLPack producer's, a kept buffer's) cannot be refused the way a callback is,
// since it may not throw: its synchronize of that stream returns at once instead.
using ReleasingCallback = CallbackMark<struct ReleasingPhase>;

// A callback's function, dropped under ReleasingCallback wherever the backend destroys it once
// it has run (on the callback's thread: the backend's task ends there). One that never ran (its
// enqueue failed, its stream went away) is dropped unmarked, on whichever thread that is.
class HeldCallback {
 public:
  HeldCallback(const StreamImpl* stream, std::function<void()> fn)
      : stream_(stream), fn_(std::move(fn)) {}
  HeldCallback(const HeldCallback&) = default;  // std::function asks for a copyable callable
  HeldCallback(HeldCallback&&) = default;
  HeldCallback& operator=(const HeldCallback&) = delete;
  HeldCallback& operator=(HeldCallback&&) = delete;
  ~HeldCallback() {
    if (!ran_) return;
    const ReleasingCallback releasing(stream_);
    fn_ = nullptr;
  }

  void operator()() {
    ran_ = true;  // set first: a callback that throws has run too
    const RunningCallback running(stream_);
    fn_();
  }

 private:
  const StreamImpl* stream_;
  std::function<void()> fn_;
  bool ran_ = false;
};

// Enqueues one of hal's own callbacks that must run even on a device lost before it began
// (StreamImpl::host_callback_even_if_lost), marked as Stream::host_callback marks callbacks.
void host_callback_even_if_lost(StreamImpl& stream, std::function<void()> fn);

}  // namespace detail
}  // namespace hal

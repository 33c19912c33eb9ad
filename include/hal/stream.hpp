// Stream: an in-order queue of asynchronous work on one device.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>

#include "hal/buffer.hpp"
#include "hal/event.hpp"
#include "hal/graph.hpp"
#include "hal/kernel.hpp"

namespace hal {

class StreamImpl;
class Device;

// A value to repeat over a buffer: plain data, not a pointer to it (nor an array, which would
// otherwise be taken for the value instead of the pattern it points to).
template <class T>
concept FillValue = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> &&
                    !std::is_null_pointer_v<T> && !std::is_array_v<T>;

// Every call enqueues and returns at once; work runs in the order it was enqueued, and the
// host sees its results after synchronize() or an Event. Host memory handed to a copy must
// stay valid until the copy has run. Errors in arguments throw at once and enqueue nothing;
// a failure while the work runs (a host kernel that throws, say) is reported as AsyncFailure
// by the next synchronize(), once, and by the events recorded after it (see event.hpp).
// Thread-safe: many threads may enqueue on one stream; the order between their calls is the
// order in which the calls return.
class Stream {
 public:
  Stream() = default;
  explicit Stream(std::shared_ptr<StreamImpl> impl) : impl_(std::move(impl)) {}

  Device device() const;

  // Argument order follows memcpy: destination, source, bytes.
  void copy_from_host(const Buffer& dst, const void* src, size_t bytes, size_t dst_offset = 0);
  void copy_to_host(void* dst, const Buffer& src, size_t bytes, size_t src_offset = 0);
  // Between any two buffers: on one device, between devices of one backend, or between
  // backends, staged through pinned host memory.
  void copy(const Buffer& dst, const Buffer& src, size_t bytes, size_t dst_offset = 0,
            size_t src_offset = 0);

  // Repeats a pattern of 1, 2, 4, 8 or 16 bytes over `bytes` bytes (a multiple of it).
  void fill(const Buffer& dst, const void* pattern, size_t pattern_size, size_t bytes,
            size_t dst_offset = 0);
  // Fills `count` elements from element `first` with `value` (a number or small struct).
  // OutOfRange where count or first in bytes passes SIZE_MAX (they wrapped to a small range).
  template <FillValue T>
  void fill(const Buffer& dst, const T& value, size_t count, size_t first = 0) {
    size_t bytes = 0, offset = 0;
    if (__builtin_mul_overflow(count, sizeof(T), &bytes) ||
        __builtin_mul_overflow(first, sizeof(T), &offset))
      throw_fill_overflow(count, first, sizeof(T));
    fill(dst, &value, sizeof(T), bytes, offset);
  }

  // Runs `fn` on a host thread once the work before it is done; later work waits for it.
  // `fn` may not synchronize this stream, nor an event this stream records after `fn`
  // (InvalidState: it would wait for itself). What it captured is dropped once it ran, on a
  // thread of the backend's; a deleter there that synchronizes this stream, or an event it
  // records after `fn`, returns at once (the work before `fn` is done). On a device lost before
  // `fn` began, `fn` may not run (as CUDA's cudaLaunchHostFunc; plugins of ABI 1.3): what it
  // captured is dropped all the same, and synchronize reports the loss.
  void host_callback(std::function<void()> fn);
  // Holds `value` (the host data an upload reads, a staging buffer) until the work enqueued so
  // far has run, then drops it: what a host callback holding it does, without running one where
  // the backend tracks its commands' references itself (CUDA). InvalidArgument for an empty one.
  void keep_until_done(std::shared_ptr<const void> value);

  void launch(const Kernel& kernel, const LaunchConfig& config, std::span<const KernelArg> args);
  void launch(const Kernel& kernel, const LaunchConfig& config,
              std::initializer_list<KernelArg> args = {}) {
    launch(kernel, config, std::span<const KernelArg>(args.begin(), args.size()));
  }

  // Replays a graph captured on a stream of this device.
  void launch(const Graph& graph);

  // Captures the work enqueued from now on into a Graph instead of running it (see graph.hpp).
  // Unsupported on backends without graphs; InvalidState when already capturing.
  void begin_capture();
  Graph end_capture();

  void record(const Event& event);
  Event record();
  // Later work on this stream waits until `event`'s latest record has completed. The event may
  // belong to any device of any backend. A failure of the work before the record (a callback
  // that threw) is reported by the event and by the stream that recorded it, not by this one;
  // a device's own error may be too, where its driver passes it on (CUDA keeps them).
  void wait(const Event& event);

  void synchronize();
  // True when all work enqueued so far has completed.
  bool query();

  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<StreamImpl>& impl() const { return impl_; }

 private:
  [[noreturn]] static void throw_fill_overflow(size_t count, size_t first, size_t element_size);
  std::shared_ptr<StreamImpl> impl_;
};

// Seconds the work that `enqueue` puts on `stream` takes, between events recorded around it:
// the device's own clock, as cudaEventElapsedTime gives it (a simulated device's modelled
// one). Where the events measure nothing, the host's clock from before the first event to the
// end of the work. Waits for the work; AsyncFailure when it failed.
double timed_on_device(Stream& stream, const std::function<void()>& enqueue);

}  // namespace hal

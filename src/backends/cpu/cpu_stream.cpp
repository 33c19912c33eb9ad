#include "backends/cpu/cpu_stream.hpp"

#include <cstring>

#include "backends/cpu/borrowed_args.hpp"
#include "backends/cpu/cpu_event.hpp"
#include "backends/cpu/kernel_arg_list.hpp"
#include "core/callback_thread.hpp"
#include "core/trace_record.hpp"

namespace hal::cpu {
namespace {

char* address(const BufferPtr& buffer, size_t offset) {
  return static_cast<char*>(buffer->host_pointer()) + offset;
}

// Writes the pattern once, then doubles the filled prefix with memcpy: O(log n) calls.
void fill_pattern(char* dst, size_t bytes, const unsigned char* pattern, size_t pattern_size) {
  if (pattern_size == 1) {
    std::memset(dst, pattern[0], bytes);
    return;
  }
  std::memcpy(dst, pattern, pattern_size);
  size_t filled = pattern_size;
  while (filled < bytes) {
    const size_t chunk = std::min(filled, bytes - filled);
    std::memcpy(dst + filled, dst, chunk);
    filled += chunk;
  }
}

// While a trace records, a task also records when the worker ran it: a span on the stream's
// execution track (trace_record.hpp), the device's time where the stream's own track has the
// host's issue. Out of line, so that the untraced push keeps its one branch.
template <class Task>
[[gnu::noinline]] void push_timed(async::WorkQueue& queue, const StreamImpl& stream,
                                  std::string_view category, std::string_view name,
                                  const trace::detail::SpanArgs& args, Task task) {
  queue.push([track = trace::detail::execution_track(stream), category, name, args,
              task = std::move(task)]() mutable {
    const uint64_t start = trace::detail::now();
    task();
    trace::detail::span(track, category, name, start, trace::detail::now(), args);
  });
}

}  // namespace

template <class Task>
void CpuStream::push(std::string_view name, size_t bytes, Task task) {
  if (trace::enabled()) [[unlikely]]
    push_timed(queue_, *this, "copy", name, trace::detail::transfer_args(bytes), std::move(task));
  else
    queue_.push(std::move(task));
}

void CpuStream::copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                               size_t bytes) {
  push("copy_from_host", bytes,
       [dst, dst_offset, src, bytes] { std::memcpy(address(dst, dst_offset), src, bytes); });
}

void CpuStream::copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  push("copy_to_host", bytes,
       [dst, src, src_offset, bytes] { std::memcpy(dst, address(src, src_offset), bytes); });
}

bool CpuStream::copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                     size_t src_offset, size_t bytes) {
  if (!dst->host_pointer() || !src->host_pointer()) return false;
  push("copy", bytes,
       [=] { std::memmove(address(dst, dst_offset), address(src, src_offset), bytes); });
  return true;
}

void CpuStream::fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                     size_t pattern_size) {
  std::array<unsigned char, 16> value{};
  std::memcpy(value.data(), pattern, pattern_size);
  push("fill", bytes,
       [=] { fill_pattern(address(dst, dst_offset), bytes, value.data(), pattern_size); });
}

void CpuStream::host_callback(std::function<void()> fn) { queue_.push(std::move(fn)); }

void CpuStream::launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
                       std::span<const KernelArg> args) {
  const auto* host = as_host_kernel(*kernel);
  if (!host)
    throw_unsupported(*device_, "kernel '" + kernel->name() + "': only host kernels run here");
  if (args.size() > BorrowedArgs::kMax) {
    // Many arguments: the task holds them itself (and the kernel), as any other task does.
    // `this` outlives the task: the destructor drains the queue before the members go.
    auto task = [this, owned = std::static_pointer_cast<HostKernelImpl>(kernel), config,
                 held = KernelArgList(args)] {
      run_host_kernel(*pool_, *owned, config, held.view());
    };
    if (trace::enabled()) [[unlikely]]
      push_timed(queue_, *this, "kernel", host->name(), trace::detail::launch_args(config),
                 std::move(task));
    else
      queue_.push(std::move(task));
    return;
  }
  // The task sees its buffers by address (no reference count to touch); refs_ holds the
  // kernel and the buffers until it has run.
  auto task = [this, host, config, held = BorrowedArgs(args)] {
    held.with_args(
        [&](std::span<const KernelArg> view) { run_host_kernel(*pool_, *host, config, view); });
  };
  static_assert(async::InlineTask::kFitsInline<decltype(task)>, "a launch should not allocate");
  // Under the queue's lock, right after the push: a sweep takes that lock too, so it cannot
  // drop what this task uses before it is held (the caller holds it until this returns). The
  // room for it is reserved before the push: a hold that failed after it would leave a queued
  // task using buffers nothing keeps.
  const auto reserve = [&] { refs_.reserve(1 + args.size()); };
  const auto hold = [&](uint64_t ticket) noexcept {
    refs_.hold(kernel, ticket);
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].kind() == KernelArg::Kind::buffer) refs_.hold(args[i].buffer().impl(), ticket);
  };
  if (trace::enabled()) [[unlikely]] {
    // The same task timed on the worker: one word more (the track), so that it stays inline
    // too, its name and arguments taken from the kernel and the configuration as it ends.
    auto timed = [this, host, config, held = BorrowedArgs(args),
                  track = trace::detail::execution_track(*this).id] {
      const uint64_t start = trace::detail::now();
      held.with_args(
          [&](std::span<const KernelArg> view) { run_host_kernel(*pool_, *host, config, view); });
      trace::detail::span({track}, "kernel", host->name(), start, trace::detail::now(),
                          trace::detail::launch_args(config));
    };
    static_assert(async::InlineTask::kFitsInline<decltype(timed)>,
                  "a traced launch should not allocate either");
    queue_.push(std::move(timed), reserve, hold);
    return;
  }
  queue_.push(std::move(task), reserve, hold);
}

namespace {
// Whether this thread is dropping launch references. A deleter run by such a drop that
// synchronizes a stream waits for no stream's drops (its own is among them), only for the
// stream's work.
thread_local int dropping_here = 0;
}  // namespace

void CpuStream::release_launch_refs() {
  std::vector<LaunchRefs::Ref> released;
  queue_.locked([&] {
    refs_.sweep(queue_.completed(), released);
    // Counted under the lock: a synchronize that sweeps after this sweep sees the count.
    if (!released.empty()) dropping_.fetch_add(1);
  });
  if (released.empty()) return;
  ++dropping_here;
  // Dropped here, outside the lock (a drop may call an allocator, a deleter). On the worker,
  // marked as a callback's captures are: a deleter that synchronizes this stream or an event it
  // records next, or drops the stream's last handle, must not wait for this thread.
  if (queue_.on_worker_thread()) {
    const detail::ReleasingCallback releasing(this);
    released.clear();
  } else {
    released.clear();
  }
  --dropping_here;
  dropping_.fetch_sub(1);
  dropped_.notify();
}

bool CpuStream::query() {
  if (!queue_.idle()) return false;
  release_launch_refs();
  return true;
}

void CpuStream::record(EventImpl& event) {
  auto fence = static_cast<CpuEvent&>(event).rearm(*this);
  // Launches before it have run: what they held goes first, as if their tasks had held it. A
  // task before it that failed has left its error here, on this thread, for the record to carry.
  try {
    queue_.push([this, fence] {
      release_launch_refs();
      fence->signal(queue_.peek_error());
    });
  } catch (...) {
    // Not queued (no memory for the task): the event is armed already, and nothing else would
    // ever signal it; it carries this failure instead of making its waiters wait for ever.
    fence->signal(std::current_exception());
    throw;
  }
}

void CpuStream::wait(EventImpl& event) {
  auto fence = event.fence();
  if (!fence || fence->ready()) return;
  queue_.push([fence] { fence->wait(); });
}

void CpuStream::synchronize() {
  // From the stream's own worker: a deleter run by a sweep (an event's record, or the worker
  // going idle, drops what finished launches held). What the worker had taken has run, and
  // nothing after it can run until the deleter returns: waiting would wait for itself, so this
  // returns at once, and work the deleter itself enqueues is not waited for. (A host callback
  // doing the same is refused by Stream::synchronize.)
  if (queue_.on_worker_thread()) return;
  // While the worker runs a kernel across the pool, this thread takes chunks of it.
  queue_.wait_all([this] { return pool_->help(); });
  release_launch_refs();  // the worker's last sweep may still be on its way
  // Or it has taken the references already and is dropping them: after synchronize, nothing the
  // work used is held (a DLPack producer's deleter has run; python/tests/test_gil.py).
  if (dropping_here == 0) dropped_.wait([this] { return dropping_.load() == 0; });
  if (auto error = queue_.take_error()) throw_async_failure(*device_, error);
}

}  // namespace hal::cpu

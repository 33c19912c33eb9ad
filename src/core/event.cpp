#include "hal/event.hpp"

#include <optional>

#include "core/callback_thread.hpp"
#include "core/error_context.hpp"
#include "core/event_record.hpp"
#include "core/trace_record.hpp"
#include "hal/backend.hpp"
#include "hal/device.hpp"

namespace hal {
namespace {

const EventImpl& checked(const std::shared_ptr<EventImpl>& impl) {
  if (!impl) throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Event");
  return *impl;
}

std::shared_ptr<HostFence> recorded_fence(const EventImpl& event, std::string_view operation) {
  auto fence = event.fence();
  if (!fence)
    throw Error(ErrorCode::InvalidState,
                std::string(operation) + " on an event of " + event.device().info().id +
                    " that was never recorded; record it on a stream first");
  return fence;
}

// Whether `fence` is a record of `stream` that has not completed.
bool pending_record_of(const StreamImpl* stream, const HostFence& fence) {
  if (!stream) return false;
  const auto* record = dynamic_cast<const detail::RecordFence*>(&fence);
  return record && record->stream() == stream->serial() && !fence.ready();
}

// A host callback that waits for a record queued behind it on its own stream would wait for
// itself: the record completes only once the callback has returned. (A record on that stream
// before the callback has completed: the callback runs after it.) Refused; and from a deleter of
// what such a callback held, which may not throw, true: the caller returns at once, as
// Stream::synchronize does there.
bool waiting_would_wait_for_itself(const EventImpl& event, const HostFence& fence,
                                   std::string_view operation) {
  if (pending_record_of(detail::ReleasingCallback::current(), fence)) return true;
  const StreamImpl* running = detail::RunningCallback::current();
  if (!pending_record_of(running, fence)) return false;
  const std::string& id = event.device().info().id;
  const detail::ErrorContext context(id, operation);
  throw Error(ErrorCode::InvalidState,
              std::string(operation) + " on an event of " + id +
                  " from a host callback of the stream it is recorded on (a stream of " +
                  running->device().info().id +
                  "), where the record is queued behind that callback: the wait would deadlock, "
                  "since the record completes only once the callback has returned; wait for the "
                  "event elsewhere, or record it before the callback");
}

// AsyncFailure when the work before a completed record failed (RecordFence::failure).
void throw_if_failed(const EventImpl& event, const HostFence& fence, std::string_view operation) {
  const auto* record = dynamic_cast<const detail::RecordFence*>(&fence);
  const std::exception_ptr failure = record ? record->failure() : nullptr;
  if (!failure) return;
  const std::string& id = event.device().info().id;
  const detail::ErrorContext context(id, operation);
  const std::string where =
      std::string(operation) + " on an event of " + id + ": work enqueued before its record failed";
  try {
    std::rethrow_exception(failure);
  } catch (const Error& error) {
    throw Error(ErrorCode::AsyncFailure, where + ": " + error.message(), error.native_code());
  } catch (const std::exception& error) {
    throw Error(ErrorCode::AsyncFailure, where + ": " + error.what());
  } catch (...) {
    throw Error(ErrorCode::AsyncFailure, where + " with a non-standard exception");
  }
}

}  // namespace

Device Event::device() const { return Device(checked(impl_).device().shared_from_this()); }
bool Event::recorded() const { return checked(impl_).fence() != nullptr; }

// As Stream::query: whether the work has completed, failed or not; synchronize reports a failure.
bool Event::query() const { return recorded_fence(checked(impl_), "query")->ready(); }

void Event::synchronize() const {
  const auto fence = recorded_fence(checked(impl_), "synchronize");
  if (waiting_would_wait_for_itself(*impl_, *fence, "synchronize")) return;
  {
    std::optional<trace::detail::Span> traced;
    if (trace::enabled()) [[unlikely]]
      traced.emplace(trace::detail::thread_track(), "synchronize",
                     "event of " + impl_->device().info().id);
    fence->wait();
  }
  throw_if_failed(*impl_, *fence, "synchronize");
}

double Event::elapsed_ms(const Event& start, const Event& end) {
  const EventImpl& first = checked(start.impl_);
  const EventImpl& last = checked(end.impl_);
  if (&first.device() != &last.device())
    throw Error(ErrorCode::InvalidArgument, "elapsed_ms between events of different devices (" +
                                                first.device().info().id + " and " +
                                                last.device().info().id + ")");
  for (const EventImpl* event : {&first, &last}) {
    const auto fence = recorded_fence(*event, "elapsed_ms");
    if (!fence->ready())
      throw Error(ErrorCode::InvalidState,
                  "elapsed_ms on an event of " + event->device().info().id +
                      " whose work has not completed; synchronize it first");
    throw_if_failed(*event, *fence, "elapsed_ms");
  }
  return last.elapsed_ms_since(first);
}

namespace detail {

RecordFence::~RecordFence() = default;

std::exception_ptr StreamFailures::Mark::failure() const {
  if (!epoch_) return nullptr;
  std::lock_guard lock(epoch_->mutex);
  return epoch_->position <= position_ ? epoch_->error : nullptr;
}

void StreamFailures::failed(uint64_t position, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  std::lock_guard epoch_lock(current_->mutex);
  // The lowest position: a record reports a failure before it, whichever was found first.
  if (position < current_->position) {
    current_->error = std::move(error);
    current_->position = position;
  }
}

void StreamFailures::reported() {
  std::lock_guard lock(mutex_);
  bool failed = false;
  {
    std::lock_guard epoch_lock(current_->mutex);
    failed = current_->error != nullptr;
  }
  // An epoch without a failure goes on: its marks need no new one.
  if (failed) current_ = std::make_shared<Epoch>();
}

StreamFailures::Mark StreamFailures::mark(uint64_t position) const {
  std::lock_guard lock(mutex_);
  return Mark(current_, position);
}

}  // namespace detail
}  // namespace hal

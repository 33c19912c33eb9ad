#include "hal/event.hpp"

#include <optional>

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

}  // namespace

Device Event::device() const { return Device(checked(impl_).device().shared_from_this()); }
bool Event::recorded() const { return checked(impl_).fence() != nullptr; }
bool Event::query() const { return recorded_fence(checked(impl_), "query")->ready(); }
void Event::synchronize() const {
  const auto fence = recorded_fence(checked(impl_), "synchronize");
  std::optional<trace::detail::Span> traced;
  if (trace::enabled()) [[unlikely]]
    traced.emplace(trace::detail::thread_track(), "synchronize",
                   "event of " + impl_->device().info().id);
  fence->wait();
}

double Event::elapsed_ms(const Event& start, const Event& end) {
  const EventImpl& first = checked(start.impl_);
  const EventImpl& last = checked(end.impl_);
  if (&first.device() != &last.device())
    throw Error(ErrorCode::InvalidArgument, "elapsed_ms between events of different devices (" +
                                                first.device().info().id + " and " +
                                                last.device().info().id + ")");
  for (const EventImpl* event : {&first, &last})
    if (!recorded_fence(*event, "elapsed_ms")->ready())
      throw Error(ErrorCode::InvalidState,
                  "elapsed_ms on an event of " + event->device().info().id +
                      " whose work has not completed; synchronize it first");
  return last.elapsed_ms_since(first);
}

}  // namespace hal

// Streams whose last handle goes on their own callback's thread (a callback that captured its
// stream, a buffer's deleter run there): destroying one there would wait for that thread itself,
// so it is handed to a thread of hal's that destroys it once its work is done.
#pragma once

#include <memory>

namespace hal {

class StreamImpl;

namespace detail {

// The stream handed out by Device::create_stream: `made` (the backend's), whose last handle's
// release destroys it on this thread or, where that is the stream's own callback thread, on the
// reaper's.
std::shared_ptr<StreamImpl> reaped_when_dropped_at_home(std::shared_ptr<StreamImpl> made);

}  // namespace detail
}  // namespace hal

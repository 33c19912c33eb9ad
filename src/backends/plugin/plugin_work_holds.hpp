// What a plugin stream's enqueued work holds (buffers, kernels, staging memory), let go of as
// soon as the plugin says that work completed rather than at the next synchronize: each batch
// waits on an event recorded behind its work, and every later enqueue asks after the oldest.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "backends/plugin/plugin_device.hpp"

namespace hal::plugin {

class WorkHolds {
 public:
  using Hold = std::shared_ptr<const void>;

  explicit WorkHolds(std::shared_ptr<PluginDevice> device) : device_(std::move(device)) {}
  ~WorkHolds();  // the stream's work has completed, or its device is lost
  WorkHolds(const WorkHolds&) = delete;
  WorkHolds& operator=(const WorkHolds&) = delete;

  // Holds `holds` until the work enqueued on `stream` so far completes, then lets go of what
  // earlier work held and no longer needs. Returns the plugin's status for the event's record;
  // on a failure the holds stay until release_all.
  hal_status add(hal_plugin_stream stream, std::vector<Hold> holds);
  // Lets go of the holds of completed work, oldest first.
  void release_completed();
  // Lets go of everything: the stream is idle (synchronised), or its device is lost.
  void release_all();

 private:
  struct Batch {
    hal_plugin_event event;  // nullptr: the record failed; held until release_all
    std::vector<Hold> holds;
  };
  const hal_plugin_api& api() const { return *device_->library().api; }
  void recycle(hal_plugin_event event);

  std::shared_ptr<PluginDevice> device_;
  std::deque<Batch> batches_;
  std::vector<hal_plugin_event> spare_;  // completed events, recorded again by later batches
};

}  // namespace hal::plugin

#include "backends/plugin/plugin_work_holds.hpp"

namespace hal::plugin {

WorkHolds::~WorkHolds() {
  release_all();
  for (hal_plugin_event event : spare_) api().event_destroy(event);
}

hal_status WorkHolds::add(hal_plugin_stream stream, std::vector<Hold> holds) {
  release_completed();
  if (holds.empty()) return HAL_STATUS_OK;
  hal_plugin_event event = nullptr;
  hal_status status = HAL_STATUS_OK;
  if (!spare_.empty()) {
    event = spare_.back();
    spare_.pop_back();
  } else {
    status = api().event_create(device_->handle(), &event);
  }
  if (status == HAL_STATUS_OK) status = api().event_record(event, stream);
  if (status != HAL_STATUS_OK && event != nullptr) {
    api().event_destroy(event);
    event = nullptr;
  }
  batches_.push_back({event, std::move(holds)});
  return status;
}

void WorkHolds::release_completed() {
  while (!batches_.empty() && batches_.front().event != nullptr) {
    int32_t complete = 0;
    if (api().event_query(batches_.front().event, &complete) != HAL_STATUS_OK || !complete)
      return;  // a failure (a lost device, say) is for the stream's next call to report
    recycle(batches_.front().event);
    batches_.pop_front();
  }
}

void WorkHolds::release_all() {
  for (Batch& batch : batches_)
    if (batch.event) recycle(batch.event);
  batches_.clear();
}

void WorkHolds::recycle(hal_plugin_event event) {
  if (spare_.size() < 16)
    spare_.push_back(event);
  else
    api().event_destroy(event);
}

}  // namespace hal::plugin

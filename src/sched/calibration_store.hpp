// The calibration cache's insides, for calibrate() and the cost model.
#pragma once

#include <memory>

#include "hal/calibration.hpp"

namespace hal::detail {

// Writes into the cache (file and memo).
void store_calibration(const Device& device, const Calibration& calibration);
// The cached calibration without a copy (null when there is none); its device_id is whatever
// the device was called when it was measured.
std::shared_ptr<const Calibration> find_calibration(const Device& device);

}  // namespace hal::detail

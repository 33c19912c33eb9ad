// Summaries, calibrations and selections as JSON, for the tool's machine-readable output.
#pragma once

#include <nlohmann/json.hpp>

#include "hal/hal.hpp"

namespace hal::tool {

nlohmann::ordered_json to_json(const Summary& summary);               // hal.summary/1's body
nlohmann::ordered_json calibration_json(const Calibration& figures);  // hal.calibration/1
nlohmann::ordered_json candidates_json(const Selection& selection);
// A number for JSON: null where it is unknown or not finite (NaN, an infinite ratio), said
// plainly where nlohmann would write null for it all the same, but silently.
nlohmann::ordered_json number_or_null(double value);

}  // namespace hal::tool

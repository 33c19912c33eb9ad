// Execution plans for people and for programs: hal.plan/1 and a table.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "hal/execution_plan.hpp"

namespace hal::tool {

// {"schema":"hal.plan/1","model","device","bindings","nodes":[{name, op, device, predicted_us,
// reason}],"transfers":[...],"memory":[{device, peak_bytes, lower_bound_bytes}],"peak_bytes",
// "lower_bound_bytes","predicted_us","unknown_shapes"}; unknown times are null.
nlohmann::ordered_json plan_json(const ExecutionPlan& plan, const std::string& device_choice);
void print_plan(std::ostream& out, const ExecutionPlan& plan);

}  // namespace hal::tool

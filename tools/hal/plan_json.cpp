#include "plan_json.hpp"

#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>

#include "choice_json.hpp"
#include "hal/units.hpp"

namespace hal::tool {

nlohmann::ordered_json plan_json(const ExecutionPlan& plan, const std::string& device_choice) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const PlannedNode& n : plan.nodes)
    nodes.push_back({{"name", n.name},
                     {"op", n.op},
                     {"device", n.device},
                     {"predicted_us", number_or_null(n.predicted_us)},
                     {"reason", n.reason}});
  nlohmann::ordered_json transfers = nlohmann::ordered_json::array();
  for (const PlannedTransfer& t : plan.transfers)
    transfers.push_back({{"value", t.value},
                         {"from", t.from},
                         {"to", t.to},
                         {"bytes", t.bytes},
                         {"predicted_us", number_or_null(t.predicted_us)}});
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (const PlannedMemory& m : plan.memory)
    memory.push_back({{"device", m.device},
                      {"peak_bytes", m.peak_bytes},
                      {"lower_bound_bytes", m.lower_bound_bytes}});
  return {{"schema", "hal.plan/1"},
          {"model", plan.model},
          {"device", device_choice},
          {"bindings", plan.bindings},
          {"nodes", nodes},
          {"transfers", transfers},
          {"memory", memory},
          {"peak_bytes", plan.peak_bytes},
          {"lower_bound_bytes", plan.lower_bound_bytes},
          {"predicted_us", plan.predicted_us},
          {"unknown_shapes", plan.unknown_shapes}};
}

void print_plan(std::ostream& out, const ExecutionPlan& plan) {
  std::map<std::string, size_t> per_device;
  for (const PlannedNode& n : plan.nodes) ++per_device[n.device];
  out << "plan for " << plan.model << ": " << plan.nodes.size() << " nodes";
  for (const auto& [device, count] : per_device) out << ", " << count << " on " << device;
  out << "\n";
  for (const PlannedNode& n : plan.nodes) {
    out << "  " << std::left << std::setw(10) << n.device << std::right << std::setw(10);
    if (std::isnan(n.predicted_us))
      out << "?";
    else
      out << std::fixed << std::setprecision(1) << n.predicted_us << std::defaultfloat;
    out << " us  " << n.op << " " << n.name << ": " << n.reason << "\n";
  }
  for (const PlannedTransfer& t : plan.transfers)
    out << "  move " << t.value << " (" << format_bytes(static_cast<uint64_t>(t.bytes)) << ") "
        << t.from << " -> " << t.to << "\n";
  for (const PlannedMemory& m : plan.memory)
    out << "  memory on " << m.device << ": " << format_bytes(static_cast<uint64_t>(m.peak_bytes))
        << " planned, " << format_bytes(static_cast<uint64_t>(m.lower_bound_bytes))
        << " alive at most at once\n";
  if (!plan.unknown_shapes.empty())
    out << "  " << plan.unknown_shapes.size()
        << " values of unknown shape (not in the memory figures)\n";
  out << "predicted: " << std::setprecision(4) << plan.predicted_us << " us\n";
}

}  // namespace hal::tool

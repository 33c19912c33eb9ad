#include "ops/reduce_params.hpp"

#include <algorithm>
#include <cstdio>

#include "ops/shape_class.hpp"

namespace hal::ops {

std::string ReduceParams::text() const {
  return "group " + std::to_string(group) + " x" + std::to_string(groups_per_unit) +
         (item_runs ? " runs" : "");
}

std::optional<ReduceParams> ReduceParams::parse(const std::string& text) {
  ReduceParams p;
  char tail[8] = {};
  const int read =
      std::sscanf(text.c_str(), "group %u x%u %7s", &p.group, &p.groups_per_unit, tail);
  if (read < 2 || p.group == 0 || p.groups_per_unit == 0) return std::nullopt;
  if (read == 3) {
    if (std::string(tail) != "runs" || text.substr(text.size() - 5) != " runs") return std::nullopt;
    p.item_runs = true;
  }
  return p;
}

ReduceParams default_reduce_params(const DeviceInfo& device) {
  ReduceParams p;
  p.item_runs = device.kind == DeviceKind::cpu;
  return p;
}

uint32_t fitting_group(uint32_t want, const DeviceInfo& device) {
  const uint32_t limit = std::max<uint32_t>(device.limits.max_work_group_size, 1);
  uint32_t size = 1;
  while (size * 2 <= std::min(want, limit)) size *= 2;
  return size;
}

uint64_t split_of(const ReduceParams& params, uint32_t group, uint64_t outputs, uint64_t count,
                  const DeviceInfo& device) {
  const uint64_t target =
      uint64_t{std::max<uint32_t>(device.compute_units, 1)} * params.groups_per_unit;
  if (outputs == 0 || outputs >= target) return 1;
  const uint64_t by_work = count / (uint64_t{group} * 16);  // at least 16 elements per item
  return std::max<uint64_t>(1, std::min((target + outputs - 1) / outputs, by_work));
}

std::string reduce_shape_class(uint64_t outputs, uint64_t count) {
  return "outputs" + std::to_string(class_size(outputs)) + " count" +
         std::to_string(class_size(count));
}

ReduceParams reduce_params_for(const DeviceInfo& device, DType dtype, const ReduceLayout& layout) {
  const auto table = tuning_table(device);
  if (table->entries.empty()) return default_reduce_params(device);
  const std::string dtype_name(to_string(dtype));
  const std::string shape_class = reduce_shape_class(static_cast<uint64_t>(layout.outputs),
                                                     static_cast<uint64_t>(layout.count));
  return remembered<ReduceParams>(table, dtype_name + " " + shape_class, [&] {
    const TuneEntry* entry = nearest_entry(*table, "reduce", dtype_name, shape_class);
    if (!entry) return default_reduce_params(device);
    return ReduceParams::parse(entry->params).value_or(default_reduce_params(device));
  });
}

}  // namespace hal::ops

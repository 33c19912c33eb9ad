#include "bad_input_case.hpp"

namespace hal::test::bad_input {

std::vector<Area> all_areas() {
  return {tensor_cases(), op_cases(),        autograd_cases(), copy_cases(),
          kernel_cases(), allocator_cases(), pipeline_cases()};
}

std::vector<Device> other_devices(const Device& device) {
  std::vector<Device> others;
  for (const Device& candidate : devices())
    if (!(candidate == device)) others.push_back(candidate);
  return others;
}

}  // namespace hal::test::bad_input

// Bad-input tables: each public API area lists named cases of abuse, and the outcome each must
// have: a hal::Error of a given code whose message holds a given word (or success, for abuse
// that hal defines, such as an empty slice). bad_input_main.cpp runs every case on every device
// in a child process of its own, so that a crash, a hang or a leak fails the case by name.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hal/hal.hpp"

namespace hal::test::bad_input {

struct Case {
  std::string name;
  // Runs the abuse. `stream` is a stream of `device`, which the harness synchronizes after the
  // case: bad arguments must throw at once and leave it usable.
  std::function<void(const Device& device, Stream& stream)> run;
  ErrorCode code = ErrorCode::InvalidArgument;  // Ok: the call must succeed
  std::string word;                             // in the message; "" for success
  // Devices the case applies to; empty: every device.
  std::function<bool(const Device& device)> applies = {};
  // Set by with_another_device(): the case uses another_device or another_compiling_device,
  // whose drivers its child then loads too. A child sees only its own device otherwise.
  bool uses_another_device = false;
};

// `c`, marked as using another device than its own.
inline Case with_another_device(Case c) {
  c.uses_another_device = true;
  return c;
}

struct Area {
  std::string name;  // "tensor", "ops", ...: tests are named <area>_<device>
  std::vector<Case> cases;
};

Area tensor_cases();
Area op_cases();
Area autograd_cases();
Area copy_cases();
Area kernel_cases();
Area allocator_cases();
Area pipeline_cases();

// Every area, in the order the tests run.
std::vector<Area> all_areas();

// Devices other than `device`, visible now, of any backend.
std::vector<Device> other_devices(const Device& device);

}  // namespace hal::test::bad_input

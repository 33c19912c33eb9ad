// Every case of gradient_cases.cpp on every device: on cpu:0 in f64, backward's gradients
// against central finite differences; elsewhere, in f32, against cpu:0's (f64) gradients. Ops a
// device does not run (sim has no comparisons) run on cpu:0 by CpuFallback, as a trainer on
// that device would.
#include <gtest/gtest.h>

#include "device_suite.hpp"
#include "gradient_cases.hpp"

namespace hal::test {
namespace {

struct Param {
  Device device;
  size_t index;
  std::string name;
};

// A failure names the case ("GetParam() = opencl:0 pow"), not the struct's bytes.
void PrintTo(const Param& param, std::ostream* out) {
  *out << param.device.id() << ' ' << param.name;
}

std::vector<Param> params() {
  std::vector<Param> out;
  const std::vector<GradCase> cases = gradient_cases();
  for (const Device& d : suite_devices())
    for (size_t i = 0; i < cases.size(); ++i) out.push_back({d, i, cases[i].name});
  return out;
}

class GradientSuite : public ::testing::TestWithParam<Param> {
 protected:
  const Device& device() const { return GetParam().device; }
  GradCase the_case() const { return gradient_cases()[GetParam().index]; }
};

TEST_P(GradientSuite, BackwardMatches) {
  const GradCase c = the_case();
  const Device cpu = hal::device("cpu:0");
  const auto reference = backward_gradients(c, cpu, DType::f64);
  if (device() == cpu) {
    expect_close(c.name + " against finite differences", reference, numeric_gradients(c), 1e-6);
    return;
  }
  const CpuFallback allowed;
  expect_close(c.name + " on " + device().id() + " against cpu:0",
               backward_gradients(c, device(), DType::f32), reference, 2e-4);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, GradientSuite, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& p) {
                           return test_name(p.param.device.id()) + "_" + p.param.name;
                         });

}  // namespace
}  // namespace hal::test

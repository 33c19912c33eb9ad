// The bad-input tests: one GoogleTest test per area and device (tensor_cpu_0, ops_sim_1, ...),
// each running every case of its area in a child process, this binary run again as
//   bad_input_test --case=<area>/<case> --device=<id>
// A case fails on a signal, a hang, an exception that is not hal::Error, another code or
// message than its table says, a stream left failing, or memory left allocated; under ASan,
// LeakSanitizer checks the child at exit too.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string_view>

#include "bad_input_case.hpp"
#include "case_helpers.hpp"
#include "case_runner.hpp"
#include "child_process.hpp"
#include "test_main.hpp"
#include "test_util.hpp"

namespace hal::test::bad_input {
namespace {

// Generous: a child starts hal and its drivers (slowly under the sanitizers); a case that
// takes this long hangs.
constexpr std::chrono::seconds kCaseLimit{90};

// The last 4 000 characters of a child's output, for failure messages.
std::string tail(const std::string& output) {
  return output.size() <= 4000 ? output : "..." + output.substr(output.size() - 4000);
}

class AreaOnDevice : public ::testing::Test {
 public:
  AreaOnDevice(Area area, Device device) : area_(std::move(area)), device_(std::move(device)) {}

  void TestBody() override {
    std::string with_partners;
    for (const Device& touched : devices_a_case_may_touch(device_))
      with_partners += (with_partners.empty() ? "" : ";") + touched.id();
    size_t ran = 0;
    for (const Case& c : area_.cases) {
      if (c.applies && !c.applies(device_)) continue;
      ++ran;
      const std::string name = area_.name + "/" + c.name;
      const std::string visible = c.uses_another_device ? with_partners : device_.id();
      const ChildResult child = run_child(
          "/proc/self/exe", {"bad_input_test", "--case=" + name, "--device=" + device_.id()},
          {"HAL_DEVICES=" + visible}, kCaseLimit);
      if (child.timed_out || child.signal || child.exit_status != 0) {
        ADD_FAILURE() << name << " on " << device_.id() << ": the child "
                      << describe(child, kCaseLimit) << "\n"
                      << tail(child.output);
        continue;
      }
      const std::string problems = judge(c, parse_report(child.output));
      EXPECT_EQ(problems, "") << name << " on " << device_.id() << "\n" << tail(child.output);
    }
    RecordProperty("cases", static_cast<int>(ran));
  }

 private:
  Area area_;
  Device device_;
};

// Child mode: the value of `--name=` among the arguments, or "".
std::string argument(int argc, char** argv, std::string_view name) {
  const std::string prefix = "--" + std::string(name) + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).rfind(prefix, 0) == 0) return argv[i] + prefix.size();
  return "";
}

int run_one_case(const std::string& qualified, const std::string& device_id) {
  const size_t slash = qualified.find('/');
  for (const Area& area : all_areas()) {
    if (area.name != qualified.substr(0, slash)) continue;
    for (const Case& c : area.cases)
      if (c.name == qualified.substr(slash + 1))
        return run_case_in_this_process(c, device(device_id));
  }
  std::cerr << "bad_input_test: no case '" << qualified << "'\n";
  return 2;
}

}  // namespace
}  // namespace hal::test::bad_input

int main(int argc, char** argv) {
  using namespace hal::test::bad_input;
  // Two simulated devices besides the real ones, as in the device suites; the children inherit
  // the setting.
  setenv("HAL_SIM_CONFIG", "devices=2", /*overwrite=*/0);
  if (const std::string name = argument(argc, argv, "case"); !name.empty())
    return run_one_case(name, argument(argc, argv, "device"));

  ::testing::InitGoogleTest(&argc, argv);
  for (const Area& area : all_areas())
    for (const hal::Device& device : hal::devices()) {
      const std::string test = area.name + "_" + hal::test::test_name(device.id());
      ::testing::RegisterTest("BadInput", test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [=]() -> ::testing::Test* { return new AreaOnDevice(area, device); });
    }
  return hal::test::run_all_tests();
}

// The hal command given numbers it cannot honour, on its command line and in the environment:
// each run is a child process with a time limit, and must end with its exit status and a
// message naming the culprit, never a signal, a hang or (under ASan) a leak.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace hal::test {
namespace {

constexpr std::chrono::seconds kLimit{120};

struct CliCase {
  std::vector<std::string> environment;  // NAME=VALUE
  std::vector<std::string> arguments;    // after "hal"
  int status;                            // 1: a hal::Error, 2: a usage error
  std::string message;                   // in what it printed
};

// A 10 000-digit number: past every range, and past any fixed-size buffer a parser might use.
const std::string kHugeNumber(10000, '9');

const std::vector<CliCase> kCases{
    {{}, {"select", "--min-memory", "1e400"}, 1, "--min-memory: '1e400' is not a finite size"},
    {{}, {"select", "--min-memory", "-1K"}, 1, "--min-memory: '-1K'"},
    {{}, {"select", "--min-memory", "0x10"}, 1, "--min-memory: '0x10' is not a size"},
    {{}, {"select", "--min-memory", "1.5.5G"}, 1, "--min-memory: '1.5.5G' is not a size"},
    {{}, {"select", "--min-memory", "nanG"}, 1, "--min-memory: 'nanG'"},
    {{}, {"select", "--min-memory", kHugeNumber}, 1, "--min-memory: '999"},
    {{}, {"select", "--matmul", "-1"}, 1, "--matmul: '-1' is out of range (1 to 1048576)"},
    {{}, {"select", "--matmul", "18446744073709551617"}, 1, "is out of range (1 to 1048576)"},
    {{}, {"select", "--matmul", "1e3"}, 1, "--matmul: '1e3' is not a whole number"},
    {{}, {"select", "--matmul", kHugeNumber}, 1, "is out of range (1 to 1048576)"},
    {{}, {"select", "--matmul"}, 2, "--matmul"},
    {{}, {"select", "--min-tflops", "inf"}, 1, "--min-tflops: 'inf' is not a finite number"},
    {{}, {"select", "--min-tflops", "1e10"}, 1, "--min-tflops: '1e10' is out of range"},
    {{}, {"select", "--min-tflops", "-0x1p3"}, 1, "--min-tflops: '-0x1p3'"},
    {{}, {"select", "--dtype", "f128"}, 1, "--dtype: no dtype 'f128'"},
    {{}, {"select", "--kind", "gpu,,cpu"}, 1, "--kind: an empty name"},
    {{"HAL_DEVICES=cpu:18446744073709551616"}, {"devices"}, 1, "HAL_DEVICES"},
    {{"HAL_DEVICES=cpu:-1"}, {"devices"}, 1, "HAL_DEVICES"},
    // Past 9 digits but not past 2^32 - 1: the value is what counts.
    {{"HAL_DEVICES=cpu:0000000000"}, {"devices"}, 0, "cpu:0"},
    // A backend unknown because its plugin did not load: the error says which plugin and why.
    {{"HAL_PLUGIN_PATH=/nonexistent/libgone.so", "HAL_DEVICES=gone:*"},
     {"devices"},
     1,
     "unknown backend 'gone'; known backends: cpu"},
    {{"HAL_PLUGIN_PATH=/nonexistent/libgone.so", "HAL_DEVICES=gone:*"},
     {"devices"},
     1,
     "plugins that did not load (see `hal plugins`): /nonexistent/libgone.so"},
    {{"HAL_SIM_CONFIG=devices=4294967298"}, {"plugins"}, 0, "'4294967298' is out of range"},
    {{"HAL_SIM_CONFIG=memory=1e400"}, {"plugins"}, 0, "memory: '1e400'"},
    {{"HAL_SIM_CONFIG=fail_alloc_at=18446744073709551616"}, {"plugins"}, 0, "fail_alloc_at"},
    {{"HAL_SIM_CONFIG=lose_device_at=nan"}, {"plugins"}, 0, "lose_device_at: 'nan'"},
    {{"HAL_SIM_CONFIG=devices=1,bandwidth_gbps=-1"}, {"plugins"}, 0, "bandwidth_gbps: '-1'"},
    {{"HAL_SIM_CONFIG=devices=" + kHugeNumber}, {"plugins"}, 0, "devices: '999"},
};

std::string describe_case(const CliCase& c) {
  std::string text;
  for (const std::string& entry : c.environment) text += entry.substr(0, 60) + " ";
  text += "hal";
  for (const std::string& argument : c.arguments) text += " " + argument.substr(0, 60);
  return text;
}

TEST(BadInputCli, NumbersItCannotHonourEndWithAnExitStatusAndAMessage) {
  for (const CliCase& c : kCases) {
    std::vector<std::string> arguments{"hal"};
    arguments.insert(arguments.end(), c.arguments.begin(), c.arguments.end());
    std::vector<std::string> environment = c.environment;
#if defined(__SANITIZE_ADDRESS__)
    // Leak checking on, without the runtime's misfiring dynamic-TLS tracking (cli_test.cpp).
    const char* options = std::getenv("ASAN_OPTIONS");
    environment.push_back("ASAN_OPTIONS=" + std::string(options ? options : "") +
                          ":intercept_tls_get_addr=0");
#endif
    const ChildResult result = run_child(HAL_CLI_PATH, arguments, environment, kLimit);
    const std::string name = describe_case(c);
    if (result.timed_out || result.signal) {
      ADD_FAILURE() << name << ": " << describe(result, kLimit) << "\n" << result.output;
      continue;
    }
    EXPECT_EQ(result.exit_status, c.status) << name << "\n" << result.output;
    EXPECT_NE(result.output.find(c.message), std::string::npos) << name << "\n" << result.output;
  }
}

}  // namespace
}  // namespace hal::test

// hal demo's timing of a workload (tools/hal/timed_passes.hpp): a long first pass is the
// measurement only when it built no kernels; one that compiled is a warm-up, however long.
#include "timed_passes.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "hal/hal.hpp"
#include "test_util.hpp"

namespace hal {
namespace {

using namespace std::chrono_literals;

TEST(TimedPasses, ALongPassThatCompiledIsAWarmUp) {
  const std::vector<Device> opencl_devices = test::backend_devices("opencl");
  if (opencl_devices.empty())
    GTEST_SKIP() << "no opencl:0 to compile on: " << test::backend_reason("opencl");
  const Device opencl = opencl_devices.front();
  Stream stream = opencl.create_stream();
  const Tensor x = full({4}, 1.0, DType::f32, stream);
  // A define no earlier compilation had: neither the memory nor the disk cache holds it.
  static std::atomic<int> serial{0};
  const std::string fresh =
      "HAL_TIMED_PASSES_" + std::to_string(::getpid()) + "_" + std::to_string(serial++);
  int calls = 0;
  double compile_seconds = 0;
  const tool::WorkloadResult result = tool::timed_passes(stream, 3, [&] {
    if (calls++ == 0) {
      const double before = tool::build_seconds();
      opencl.compile({"bump", "KERNEL void bump(GLOBAL float* x) { x[global_id(0)] += 1.0f; }",
                      KernelLanguage::portable},
                     {.defines = {fresh}, .disk_cache = false});
      compile_seconds = tool::build_seconds() - before;
      std::this_thread::sleep_for(1100ms);  // a first pass of more than a second
    }
    return x;
  });
  if (compile_seconds < tool::kBuiltNothing)
    GTEST_SKIP() << "the driver compiled in " << compile_seconds
                 << " s, too quick for the demo to call it building";
  EXPECT_GE(calls, 3) << "the compiling pass, a second untimed one, then timed passes";
  EXPECT_LT(result.seconds, 1.0) << "the compiling pass was taken as the measurement";
  EXPECT_EQ(result.output, std::vector<float>(4, 1.0f));
}

TEST(TimedPasses, ALongPassThatBuiltNothingIsTheMeasurement) {
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = full({2}, 3.0, DType::f32, stream);
  int calls = 0;
  const tool::WorkloadResult result = tool::timed_passes(stream, 5, [&] {
    ++calls;
    std::this_thread::sleep_for(1100ms);
    return x;
  });
  EXPECT_EQ(calls, 1) << "a pass of a second or more is not repeated";
  EXPECT_GE(result.seconds, 1.0);
  EXPECT_EQ(result.output, std::vector<float>(2, 3.0f));
}

}  // namespace
}  // namespace hal
